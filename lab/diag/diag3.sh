#!/usr/bin/env bash
# A diagnosis call on nvidia-h200-x4, kept as the record of how its results were taken: the guard on GPU 0,
# the GPU tests on 1, the set-up turn looped on 2, EfficientNetV2-S bf16 on shares on 3 (its table in
# lab/results/2026-11-28/efficientnet_bf16_share_nan_h200x4.md). The loops outran the call: their counts did not come back.
. .devroot/env.sh; export NCCL_NVLS_ENABLE=0 SUITE_GUARD_REVISION=c757644 SUITE_GUARD_COMMIT=c75764486b6f97d38358260984493a2370f4d14f; b=$PWD/build-dev
lab/device_run.sh build || exit 1
( timeout 400 lab/device_run.sh guard > $OUT/stage_guard.txt 2>&1 ) &
( CUDA_VISIBLE_DEVICES=1 timeout 400 lab/device_run.sh tests > $OUT/stage_tests.txt 2>&1 ) &
loop() { local f=0; for i in $(seq $3); do CUDA_VISIBLE_DEVICES=$1 tests/isolated.sh $2 $b/$2 >/tmp/$2-$i.log 2>&1 || { f=$((f+1)); cp /tmp/$2-$i.log $OUT/fail-$2-$i.log; }; done; echo "$2 on GPU $1: $f failed of $3"; }
( loop 2 gpu_lane_sharing 12; loop 2 gpu_job_host 5 ) > $OUT/stage_loops.txt 2>&1 &
printf '#!/bin/sh\nexec %s/train "$@" --no-graph\n' $b > /tmp/train_nograph; printf '#!/bin/sh\nexec %s/train "$@" --lr 0\n' $b > /tmp/train_lr0; chmod +x /tmp/train_*
E="efficientnetv2_s:imagenet64@128"
run() { local name=$1; shift; env $ENVS $b/run_suite --mix "$E" --precision ${PREC:-bf16} --window 1 --warmup-steps 20 --gpu 3 --results /tmp/e-$name "$@" >/tmp/e-$name.log 2>&1
  echo "$name ($ENVS $*): rc $? $(grep -ho 'diverged: [^(]*\|: ok$' /tmp/e-$name.log | head -1)"; }
( ENVS="SUITE_PDL=0" run pdl0 --mode mps --mps-sm 43
  run nograph --mode mps --mps-sm 43 --train /tmp/train_nograph
  run lr0 --mode mps --mps-sm 43 --train /tmp/train_lr0
  run s80 --mode mps --mps-sm 80
  run s25 --mode mps --mps-sm 25
  run s60 --mode mps --mps-sm 60
  run green43 --mode green --green-share 43
  ENVS="SUITE_SM_TARGET=0" run told0 --mode mps --mps-sm 43 ) > $OUT/stage_e.txt 2>&1
wait; cat $OUT/stage_tests.txt $OUT/stage_loops.txt $OUT/stage_e.txt $OUT/stage_guard.txt
mkdir -p $OUT/e; cp /tmp/e-*.log $OUT/e/; cp /tmp/guard/guard-runs/*.log $OUT/ 2>/dev/null
cd $OUT && tar czf /tmp/call.tgz . && find . -mindepth 1 -delete && mv /tmp/call.tgz .
