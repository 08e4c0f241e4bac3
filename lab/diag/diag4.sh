#!/usr/bin/env bash
# Prepared, not run (the device time ended): the guard on GPU 0, gpu_kernel_trace and the set-up turn
# looped on 1 and 2, compute-sanitizer initcheck of EfficientNetV2-S bf16 on 3. Its guard revision is
# that of lab/diag/tracer_owner.patch applied (branch tracer-owner); set SUITE_GUARD_REVISION/COMMIT to the revision measured.
. .devroot/env.sh; export NCCL_NVLS_ENABLE=0 SUITE_GUARD_REVISION=8fe867b SUITE_GUARD_COMMIT=8fe867bb5ca4ba3a96370f08fc306e5d1c6a293e; b=$PWD/build-dev
lab/device_run.sh build || exit 1
( timeout 360 lab/device_run.sh guard > /tmp/stage_guard.txt 2>&1 ) & gpid=$!
loop() { local f=0 n=0; for i in $(seq $3); do n=$i; CUDA_VISIBLE_DEVICES=$1 tests/isolated.sh $2 $b/$2 >/tmp/$2-$i.log 2>&1 || { f=$((f+1)); cp /tmp/$2-$i.log /tmp/fails/; }; echo "$2 on GPU $1: $f failed of $n" > /tmp/count-$2; done; }
mkdir -p /tmp/fails
( loop 1 gpu_kernel_trace 4; loop 1 gpu_job_host 4 ) &
( loop 2 gpu_lane_sharing 9 ) &
( CUDA_VISIBLE_DEVICES=3 SUITE_CONV_CHOICES=lab/results/advise/conv-choices.tsv timeout 300 compute-sanitizer --tool initcheck --print-limit 30 --log-file /tmp/initcheck.log $b/train --model efficientnetv2_s --data imagenet64 --batch 128 --precision bf16 --epochs 1 --steps-per-epoch 2 --no-graph > /tmp/initcheck_train.log 2>&1; echo "initcheck rc $?" >> /tmp/initcheck_train.log ) &
wait $gpid; sleep 3; cat /tmp/count-* ; tail -3 /tmp/initcheck_train.log; grep -E "took|verdict|BELOW|ABOVE|within" /tmp/stage_guard.txt; head -40 /tmp/initcheck.log
mkdir -p $OUT/d; cp /tmp/count-* /tmp/initcheck*.log /tmp/stage_guard.txt $OUT/d/; cp /tmp/fails/* $OUT/d/ 2>/dev/null; cp /tmp/guard/latest.json /tmp/guard/guard.md $OUT/d/ 2>/dev/null
cd $OUT && tar czf /tmp/call.tgz d && rm -rf d && mv /tmp/call.tgz .
