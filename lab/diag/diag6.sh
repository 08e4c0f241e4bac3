#!/usr/bin/env bash
# The NaN hunt's magnitudes (lab/diag/nan_hunt.patch, LAB_NAN_HUNT=2): EfficientNetV2-S bf16 on a 43% MPS share
# (GPU 3) against the same job alone on the whole GPU (GPU 2), every tensor's largest and mean magnitude
# through the first steps; on GPU 1 the kernel and EfficientNet GPU tests under our own MPS daemon at 43%.
[ -d .devroot ] || mv .devroot_lite .devroot; . .devroot/env.sh; b=$PWD/build-dev
mkdir -p /tmp/hunt /tmp/d
tar --exclude=./.devroot --exclude=./build-dev --exclude=./.git -cf - . | tar -xf - -C /tmp/hunt
( cd /tmp/hunt && patch -p1 -s < lab/diag/nan_hunt.patch && cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSUITE_FUZZ=OFF >/tmp/d/hunt_build.log 2>&1 && cmake --build b --target train -j24 >>/tmp/d/hunt_build.log 2>&1; echo "hunt build rc $?" >>/tmp/d/hunt_build.log ) &
lab/device_run.sh build || exit 1
wait; tail -1 /tmp/d/hunt_build.log
( export CUDA_VISIBLE_DEVICES=1 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps1 CUDA_MPS_LOG_DIRECTORY=/tmp/mps1log; mkdir -p /tmp/mps1 /tmp/mps1log
  nvidia-cuda-mps-control -d && echo "mps daemon on GPU 1"
  for p in 43 80; do for t in gpu_batchnorm gpu_bf16 gpu_layers gpu_pool gpu_bf16_efficientnet; do
    CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$p timeout 120 $b/$t > /tmp/d/mps$p-$t.log 2>&1; echo "$t at $p%: rc $?"; done; done
  echo quit | nvidia-cuda-mps-control ) > /tmp/d/stage_mps_tests.txt 2>&1 &
printf '#!/bin/sh\nLAB_NAN_HUNT=2 exec /tmp/hunt/b/train "$@" --no-graph\n' > /tmp/train_hunt; chmod +x /tmp/train_hunt
E="efficientnetv2_s:imagenet64@128"
run() { local name=$1 t=$2; shift 2; timeout $t $b/run_suite --mix "$E" --precision bf16 --window 1 --warmup-steps 20 --results /tmp/e-$name "$@" >/tmp/d/e-$name.log 2>&1
  echo "$name ($*): rc $?"; grep -rha "HUNTSTAT\|HUNT check" /tmp/d/e-$name.log /tmp/e-$name > /tmp/d/stat-$name.txt; grep -a "HUNT check" /tmp/d/stat-$name.txt | head -2; }
( run s43 200 --gpu 3 --mode mps --mps-sm 43 --train /tmp/train_hunt ) > /tmp/d/stage_43.txt 2>&1 &
( run s100 200 --gpu 2 --mode serial --train /tmp/train_hunt ) > /tmp/d/stage_100.txt 2>&1 &
wait; cat /tmp/d/stage_*.txt; wc -l /tmp/d/stat-*.txt
cd /tmp && tar czf $OUT/call.tgz d
