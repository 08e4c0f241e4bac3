#!/usr/bin/env bash
# Is cuDNN's engine 58 with workspace knob (25) = 0 wrong on its own, or only on an MPS share? The advisor's
# convolution choices (lab/results/advise/conv-choices.tsv) pick eng58_k25=0 for EfficientNetV2-S's 1x1 convolutions
# at 56 SMs, where the hunt (diag6.sh) saw the first tensor diverge (block 2's conv_pwl, 96->48 at 16x16).
#   GPU 0: the whole GPU, every forward eng58 choice of the 132-SM lines forced to k25=0, through the hunt's magnitudes
#   GPU 1: a 43% share, every eng58_k25=0 of the 56-SM lines replaced by k25=2: does it train?
#   GPU 2: a 43% share with the file as it is, SUITE_CONV_PATH=legacy but every engine choice dropped: does it train?
#   GPU 3: the kernel and convolution GPU tests as clients of our own MPS daemon at 43% and 80%
[ -d .devroot ] || mv .devroot_lite .devroot; . .devroot/env.sh; b=$PWD/build-dev
mkdir -p /tmp/hunt /tmp/d
tar --exclude=./.devroot --exclude=./build-dev --exclude=./.git -cf - . | tar -xf - -C /tmp/hunt
( cd /tmp/hunt && patch -p1 -s < lab/diag/nan_hunt.patch && cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSUITE_FUZZ=OFF >/tmp/d/hunt_build.log 2>&1 && cmake --build b --target train -j24 >>/tmp/d/hunt_build.log 2>&1; echo "hunt build rc $?" >>/tmp/d/hunt_build.log ) &
lab/device_run.sh build || exit 1
wait; tail -1 /tmp/d/hunt_build.log
python3 - <<'PY'
import re
src = open('lab/results/advise/conv-choices.tsv').read().splitlines()
a, b, c = [], [], []
for l in src:
    k, v = l.split('\t')
    if 'bf16' not in k: continue
    if '/132sm ' in k:
        a.append(k + '\t' + re.sub(r'(fwd=[^ ]*eng58)_k25=\d', r'\1_k25=0', v))
    if '/56sm ' in k:
        v2 = re.sub(r'eng58_k25=0', 'eng58_k25=2', v)
        v2 = re.sub(r'^ws=\d+', 'ws=67108864', v2) if v2 != v else v2
        b.append(k + '\t' + v2)
        c.append(k + '\t' + re.sub(r'/eng[^/ ]*/[0-9.]+', '/-/0', v))
open('/tmp/choices_a.tsv', 'w').write('\n'.join(a) + '\n')
open('/tmp/choices_b.tsv', 'w').write('\n'.join(b) + '\n')
open('/tmp/choices_c.tsv', 'w').write('\n'.join(c) + '\n')
print(len(a), len(b), len(c), 'lines;', sum('eng58_k25=0' in x for x in a), 'forced k25=0 in a')
PY
cp /tmp/choices_*.tsv /tmp/d/
printf '#!/bin/sh\nLAB_NAN_HUNT=2 exec /tmp/hunt/b/train "$@" --no-graph\n' > /tmp/train_hunt; chmod +x /tmp/train_hunt
E="efficientnetv2_s:imagenet64@128"
run() { local name=$1 t=$2; shift 2; timeout $t $b/run_suite --mix "$E" --precision bf16 --window 1 --warmup-steps 20 --results /tmp/e-$name "$@" >/tmp/d/e-$name.log 2>&1
  echo "$name ($*): rc $? $(grep -rhoa 'diverged: [^(]*\|HUNT check.*' /tmp/d/e-$name.log /tmp/e-$name | head -1)"; grep -rha "HUNTSTAT" /tmp/e-$name > /tmp/d/stat-$name.txt; }
( SUITE_CONV_CHOICES=/tmp/choices_a.tsv run a_whole_k0 150 --gpu 0 --mode serial --train /tmp/train_hunt ) > /tmp/d/stage_a.txt 2>&1 &
( SUITE_CONV_CHOICES=/tmp/choices_b.tsv run b_43_k2 200 --gpu 1 --mode mps --mps-sm 43 ) > /tmp/d/stage_b.txt 2>&1 &
( SUITE_CONV_CHOICES=/tmp/choices_c.tsv SUITE_CONV_PATH=legacy run c_43_legacy 200 --gpu 2 --mode mps --mps-sm 43 ) > /tmp/d/stage_c.txt 2>&1 &
( export CUDA_VISIBLE_DEVICES=3 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps3 CUDA_MPS_LOG_DIRECTORY=/tmp/mps3log; mkdir -p /tmp/mps3 /tmp/mps3log
  nvidia-cuda-mps-control -d && echo "mps daemon on GPU 3"; unset CUDA_VISIBLE_DEVICES
  for p in 43 80; do for t in gpu_conv_engine gpu_batchnorm gpu_bf16 gpu_layers gpu_bf16_efficientnet; do
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$p timeout 120 $b/$t > /tmp/d/mps$p-$t.log 2>&1; echo "$t at $p%: rc $?"; done; done
  echo quit | CUDA_MPS_PIPE_DIRECTORY=/tmp/mps3 nvidia-cuda-mps-control ) > /tmp/d/stage_mps_tests.txt 2>&1 &
wait; cat /tmp/d/stage_*.txt
cd /tmp && tar czf $OUT/call.tgz d
