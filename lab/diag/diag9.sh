#!/usr/bin/env bash
# The written-output rule with its plain matmul (kernels/matmul_plain.cu) on nvidia-h200-x4: the guard on GPU 0;
# on 1 gpu_written (the bf16 layer and model tests as MPS clients at 43% and 80%);
# on 2 EfficientNetV2-S bf16 on 43% and 80% MPS shares with fresh choices (it turned NaN there before), then the tracer looped;
# on 3 every GPU test (ctest -L gpu) as far as the guard's time allows.
# As it ran: loop() is defined below its first use, so the tracer loop on GPU 2 did not run (ctest -L gpu ran gpu_kernel_trace once, passed).
REV=${REV:?set REV to the measured revision}; FULL=${FULL:?set FULL to its full hash}
[ -d .devroot ] || mv .devroot_lite .devroot; . .devroot/env.sh; export NCCL_NVLS_ENABLE=0 SUITE_GUARD_REVISION=$REV SUITE_GUARD_COMMIT=$FULL
b=$PWD/build-dev; mkdir -p /tmp/d /tmp/fails
lab/device_run.sh build || exit 1
( timeout 400 lab/device_run.sh guard > /tmp/d/stage_guard.txt 2>&1 ) & gpid=$!
( for t in gpu_written; do
    CUDA_VISIBLE_DEVICES=1 timeout 300 tests/isolated.sh $t $b/$t > /tmp/d/t-$t.log 2>&1; echo "$t: rc $?"; done ) > /tmp/d/stage_tests1.txt 2>&1 &
E="efficientnetv2_s:imagenet64@128"
run() { local name=$1 t=$2; shift 2; timeout $t $b/run_suite --mix "$E" --precision bf16 --window 1 --warmup-steps 20 --results /tmp/e-$name "$@" >/tmp/d/e-$name.log 2>&1
  echo "$name ($*): rc $? $(grep -rhoa 'diverged: [^(]*\|: ok$' /tmp/d/e-$name.log | head -1) $(grep -rhoa 'outputs unwritten' /tmp/e-$name | wc -l) unwritten lines"; }
( run s43 200 --gpu 2 --mode mps --mps-sm 43; run s80 150 --gpu 2 --mode mps --mps-sm 80 ) > /tmp/d/stage_e.txt 2>&1 && loop 2 gpu_kernel_trace 3 &
loop() { local f=0 n=0; for i in $(seq $3); do n=$i; CUDA_VISIBLE_DEVICES=$1 tests/isolated.sh $2 $b/$2 >/tmp/$2-$i.log 2>&1 || { f=$((f+1)); cp /tmp/$2-$i.log /tmp/fails/; }; echo "$2 on GPU $1: $f failed of $n" > /tmp/d/count-$2; done; }
( CUDA_VISIBLE_DEVICES=3 timeout 390 ctest --test-dir $b -L gpu -E "gpu_written|sharing_guard" --output-on-failure -j1 > /tmp/d/gpu_tests.log 2>&1; echo "ctest rc $?" >> /tmp/d/gpu_tests.log ) &
wait $gpid; wait; cat /tmp/d/count-* /tmp/d/stage_tests1.txt /tmp/d/stage_e.txt; grep -E "tests passed|Test +#|ctest rc" /tmp/d/gpu_tests.log | grep -v " Passed" | tail -15; grep -E "^ *[0-9]+/[0-9]+ Test" /tmp/d/gpu_tests.log | grep -c Passed; grep -E "took|verdict|BELOW|ABOVE|within" /tmp/d/stage_guard.txt
grep -h "MPS client\|skipped\|FAILED\|matmul_plain\|plain kernel runs" /tmp/d/t-gpu_written.log | sort | uniq -c | head -30
grep -rha "outputs unwritten" /tmp/e-s43 | sort | uniq -c | sort -rn | head -8
cp /tmp/fails/* /tmp/d/ 2>/dev/null; cp /tmp/guard/latest.json /tmp/guard/guard.md /tmp/d/ 2>/dev/null
find /tmp/e-s43 /tmp/e-s80 -name "*.log" -exec cp --parents {} /tmp/d/ \; 2>/dev/null
cd /tmp && tar czf $OUT/call.tgz d
