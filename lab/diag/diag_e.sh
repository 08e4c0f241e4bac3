#!/usr/bin/env bash
# A diagnosis call on nvidia-h200-x4, kept as the record of how its results were taken
# (lab/results/2026-11-28/efficientnet_bf16_share_nan_h200x4.md): EfficientNetV2-S bf16 on MPS shares.
. .devroot/env.sh; b=build-dev; lab/device_run.sh build >/dev/null || { echo build failed; exit 1; }
E="efficientnetv2_s:imagenet64@128"
run() { # name gpu share env...
  local name=$1 gpu=$2 share=$3; shift 3
  env "$@" $b/run_suite --mode mps --mix "$E" --precision ${PREC:-bf16} --mps-sm $share --window 1 --warmup-steps 20 --gpu $gpu --results /tmp/e-$name >/tmp/e-$name.log 2>&1
  echo "$name (gpu $gpu, share $share, $*): rc $? $(grep -ho 'diverged: [^(]*\|ok$' /tmp/e-$name.log | head -1) $(grep -ho 'epoch 1:.*' /tmp/e-$name.log | head -1)"
}
C=lab/results/advise/conv-choices.tsv
run whole 0 100 SUITE_CONV_CHOICES=/tmp/f0.tsv &
run repro 1 43 SUITE_CONV_CHOICES=$C &
run fresh 2 43 SUITE_CONV_CHOICES=/tmp/f2.tsv &
run legacy 3 43 SUITE_CONV_CHOICES=/tmp/f3.tsv SUITE_CONV_PATH=legacy &
wait
run repro2 1 43 SUITE_CONV_CHOICES=$C &
run dwcudnn 2 43 SUITE_CONV_CHOICES=$C SUITE_DEPTHWISE_PATH=cudnn &
run engine 3 43 SUITE_CONV_CHOICES=/tmp/f4.tsv SUITE_CONV_PATH=engine &
PREC=tf32 run tf32 0 43 SUITE_CONV_CHOICES=/tmp/f5.tsv &
wait
for f in /tmp/e-repro.log; do grep -B2 -A3 "diverged" $f | head -20; done
grep -h "setup" /tmp/e-repro/*/job-0*.log | head -2 | cut -c1-400
mkdir -p $OUT/e; for n in whole repro fresh legacy repro2 dwcudnn engine tf32; do cp /tmp/e-$n.log $OUT/e/; done
cp /tmp/f2.tsv $OUT/e/fresh-choices.tsv 2>/dev/null; tar czf $OUT/e.tgz -C $OUT e; rm -rf $OUT/e
