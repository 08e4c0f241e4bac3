#!/usr/bin/env bash
# A diagnosis call on nvidia-h200-x4 at f18d4c4 (the tracer's context rule): the guard on GPU 0,
# gpu_kernel_trace and gpu_job_host looped on 1, gpu_lane_sharing looped on 2, and on 3 EfficientNetV2-S
# bf16 on a 43% MPS share through lab/diag/nan_hunt.patch (every tensor checked after each layer, the
# first non-finite one named) and then under compute-sanitizer's initcheck.
[ -d .devroot ] || mv .devroot_lite .devroot; . .devroot/env.sh; export NCCL_NVLS_ENABLE=0 SUITE_GUARD_REVISION=f18d4c4 SUITE_GUARD_COMMIT=f18d4c45280599595708cddba40a650375f2fa68; b=$PWD/build-dev
mkdir -p /tmp/hunt /tmp/fails /tmp/d
tar --exclude=./.devroot --exclude=./build-dev --exclude=./.git -cf - . | tar -xf - -C /tmp/hunt
( cd /tmp/hunt && patch -p1 -s < lab/diag/nan_hunt.patch && cmake -S . -B b -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSUITE_FUZZ=OFF >/tmp/d/hunt_build.log 2>&1 && cmake --build b --target train -j24 >>/tmp/d/hunt_build.log 2>&1; echo "hunt build rc $?" >>/tmp/d/hunt_build.log ) &
lab/device_run.sh build || exit 1
wait; tail -1 /tmp/d/hunt_build.log
( timeout 380 lab/device_run.sh guard > /tmp/d/stage_guard.txt 2>&1 ) & gpid=$!
loop() { local f=0 n=0; for i in $(seq $3); do n=$i; CUDA_VISIBLE_DEVICES=$1 tests/isolated.sh $2 $b/$2 >/tmp/$2-$i.log 2>&1 || { f=$((f+1)); cp /tmp/$2-$i.log /tmp/fails/; }; echo "$2 on GPU $1: $f failed of $n" > /tmp/d/count-$2; done; }
( loop 1 gpu_kernel_trace 4; loop 1 gpu_job_host 3 ) &
( loop 2 gpu_lane_sharing 8 ) &
printf '#!/bin/sh\nLAB_NAN_HUNT=1 exec /tmp/hunt/b/train "$@" --no-graph\n' > /tmp/train_hunt
printf '#!/bin/sh\nexec compute-sanitizer --tool initcheck --print-limit 20 --log-file /tmp/d/initcheck.log %s/train "$@" --no-graph\n' $b > /tmp/train_initcheck
chmod +x /tmp/train_*
E="efficientnetv2_s:imagenet64@128"
run() { local name=$1 t=$2; shift 2; timeout $t $b/run_suite --mix "$E" --precision bf16 --window 1 --warmup-steps 20 --gpu 3 --results /tmp/e-$name "$@" >/tmp/d/e-$name.log 2>&1
  echo "$name ($*): rc $? $(grep -rhoa "HUNT.*\|diverged: [^(]*\|: ok$" /tmp/d/e-$name.log /tmp/e-$name 2>/dev/null | head -2)"; }
( run hunt43 200 --mode mps --mps-sm 43 --train /tmp/train_hunt
  run initcheck43 150 --mode mps --mps-sm 43 --train /tmp/train_initcheck ) > /tmp/d/stage_e.txt 2>&1
wait $gpid; wait; cat /tmp/d/count-* /tmp/d/stage_e.txt; grep -E "took|verdict|BELOW|ABOVE|within" /tmp/d/stage_guard.txt; head -30 /tmp/d/initcheck.log
find /tmp/e-* -name "*.log" -newer /tmp/train_hunt -exec cp --parents {} /tmp/d/ \; 2>/dev/null
cp /tmp/fails/* /tmp/d/ 2>/dev/null; cp /tmp/guard/latest.json /tmp/guard/guard.md /tmp/d/ 2>/dev/null
cd /tmp && tar czf $OUT/call.tgz d
