#!/usr/bin/env bash
# A diagnosis call on nvidia-h200-x4, kept as the record of how its results were taken: gpu_lane_sharing
# looped (1 of 8 failed, the log in lab/results/2026-11-28/lane_sharing_capture_failure_h200x4_aefc03b.log);
# its MPS part did not work (the clients found no device: start MPS through run_suite instead).
. .devroot/env.sh; b=$PWD/build-dev; lab/device_run.sh build >/dev/null || { echo build failed; exit 1; }
loop() { # gpu test times
  local f=0; for i in $(seq $3); do CUDA_VISIBLE_DEVICES=$1 SUITE_CONV_LOG=1 tests/isolated.sh $2 $b/$2 >/tmp/$2-$i.log 2>&1 || { f=$((f+1)); cp /tmp/$2-$i.log $OUT/fail-$2-$i.log; }; done
  echo "$2 on GPU $1: $f failed of $3"
}
loop 2 gpu_lane_sharing 8 > /tmp/loop2.txt &
loop 3 gpu_job_host 4 > /tmp/loop3.txt &
export CUDA_VISIBLE_DEVICES=1 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps1 CUDA_MPS_LOG_DIRECTORY=/tmp/mps1log
mkdir -p /tmp/mps1 /tmp/mps1log; nvidia-cuda-mps-control -d; sleep 1
export CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=43
T="$b/train --model efficientnetv2_s --data imagenet64 --batch 128 --precision bf16 --epochs 1 --steps-per-epoch 30"
for v in "" "--no-graph" "--lr 0" "--lr 0 --no-graph"; do
  $T $v > /tmp/t.log 2>&1; echo "train E bf16 43% $v: rc $? $(grep -o 'loss [a-z0-9.]*' /tmp/t.log | head -2 | tr '\n' ' ')"
done
CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100 $T > /tmp/t.log 2>&1; echo "train E bf16 100% via MPS: rc $? $(grep -o 'loss [a-z0-9.]*' /tmp/t.log | head -2 | tr '\n' ' ')"
$b/train --model efficientnetv2_s --data imagenet64 --batch 128 --precision tf32 --epochs 1 --steps-per-epoch 30 > /tmp/t.log 2>&1; echo "train E tf32 43%: rc $? $(grep -o 'loss [a-z0-9.]*' /tmp/t.log | head -1)"
for t in gpu_batchnorm gpu_bf16 gpu_bf16_efficientnet gpu_efficientnet gpu_pool gpu_layers gpu_optim gpu_loss gpu_model_parity; do
  tests/isolated.sh $t $b/$t > $OUT/mps43-$t.log 2>&1; echo "$t at 43%: rc $? $(grep -c FAILED $OUT/mps43-$t.log) FAILED lines"
done
echo quit | nvidia-cuda-mps-control; wait; cat /tmp/loop2.txt /tmp/loop3.txt
cd $OUT && tar czf /tmp/diag.tgz . && find . -mindepth 1 -delete && mv /tmp/diag.tgz .
