#!/usr/bin/env bash
# Issue 51's held-out mixes on nvidia-h200-x4, one a GPU (ADVISE_MIXES, four at most), cut at ADVISE_S
# seconds; lab/results/advise comes back whole as OUT/advise.tgz (its folder names hold '+', which a
# device call's files may not). MPS daemons left by a cut run are stopped by their process ids.
[ -d .devroot ] || mv .devroot_lite .devroot; . .devroot/env.sh; export NCCL_NVLS_ENABLE=0
b=$PWD/build-dev; mkdir -p /tmp/d
t0=$SECONDS
lab/device_run.sh build > /tmp/d/build.txt 2>&1 || { tail -30 /tmp/d/build.txt; exit 1; }
echo "build: $((SECONDS - t0)) s"
ADVISE_GPUS=${ADVISE_GPUS:-0 1 2 3} timeout ${ADVISE_S:-500} tools/advise_check.sh $b lab/results/advise > /tmp/d/advise.txt 2>&1
echo "advise_check: rc $? at $((SECONDS - t0)) s"
left=$(ps -eo pid=,comm= | awk '$2 ~ /^nvidia-cuda-mps/ {print $1}')
echo "MPS processes left: $(echo $left | wc -w)"; [ -z "$left" ] || kill $left
tar czf $OUT/advise.tgz lab/results/advise
grep -v "^\[advise\] 0 probe" /tmp/d/advise.txt | head -120
cd /tmp && tar czf $OUT/call.tgz d
