#!/usr/bin/env bash
# Issue 51's check on nvidia-h200-x4, one call: the guard on GPU 0 (then gpu_written there, as far as
# the call allows); tools/advise_check.sh on GPUs 1-3 (the fit on the three fit mixes, then the held-out
# mixes in the script's order), cut at ADVISE_S seconds so that the mixes done come back (a mix cut
# short is run again by the next call: the script is resumable). OUT/advise holds lab/results/advise.
REV=${REV:?set REV to the measured revision}; FULL=${FULL:?set FULL to its full hash}
[ -d .devroot ] || mv .devroot_lite .devroot; . .devroot/env.sh; export NCCL_NVLS_ENABLE=0 SUITE_GUARD_REVISION=$REV SUITE_GUARD_COMMIT=$FULL
b=$PWD/build-dev; mkdir -p /tmp/d
t0=$SECONDS
lab/device_run.sh build > /tmp/d/build.txt 2>&1 || { tail -30 /tmp/d/build.txt; exit 1; }
echo "build: $((SECONDS - t0)) s"
if [ "${GUARD:-1}" = 1 ]; then
( timeout 420 lab/device_run.sh guard > /tmp/d/stage_guard.txt 2>&1
  CUDA_VISIBLE_DEVICES=0 timeout $(( ${ADVISE_S:-470} - (SECONDS - t0) )) tests/isolated.sh gpu_written $b/gpu_written > /tmp/d/t-gpu_written.log 2>&1
  echo "gpu_written: rc $?" > /tmp/d/stage_tests.txt ) &
fi
ADVISE_GPUS=${ADVISE_GPUS:-1 2 3} timeout ${ADVISE_S:-470} tools/advise_check.sh $b lab/results/advise > /tmp/d/advise.txt 2>&1
echo "advise_check: rc $? at $((SECONDS - t0)) s"
wait
ps -eo comm= | grep -c '^nvidia-cuda-mps' | sed 's/^/MPS processes left: /'
mkdir -p $OUT/advise && cp -r lab/results/advise/. $OUT/advise/
cp /tmp/guard/latest.json /tmp/guard/guard.md /tmp/d/ 2>/dev/null
cat /tmp/d/advise.txt | grep -v "^ " | head -60
cat /tmp/d/stage_tests.txt 2>/dev/null; grep -E "took|verdict|BELOW|ABOVE|within|in band" /tmp/d/stage_guard.txt 2>/dev/null | tail -5
cd /tmp && tar czf $OUT/call.tgz d
