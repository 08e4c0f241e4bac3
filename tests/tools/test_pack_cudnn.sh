#!/usr/bin/env bash
# bench/pack_cudnn.sh and bench/cudnn_parts.sh without a GPU: a fake cuDNN wheel is packed into
# 1 MiB parts, the parts arrive one call at a time (keep), a corrupted part is refused, and the
# assembled libraries are the wheel's, byte for byte; bad input exits 2.
set -u
src=${1:?usage: test_pack_cudnn.sh SOURCE_DIR}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work" || exit 1
mkdir -p nvidia/cudnn/lib nvidia/cudnn/include
printf '#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 27\n#define CUDNN_PATCHLEVEL 0\n' >nvidia/cudnn/include/cudnn_version.h
head -c 3000000 /dev/urandom >nvidia/cudnn/lib/libcudnn_graph.so.9
head -c 1000 /dev/urandom >nvidia/cudnn/lib/libcudnn.so.9
python3 -c 'import sys, zipfile
with zipfile.ZipFile("fake.whl", "w") as z:
    for f in sys.argv[1:]: z.write(f)' nvidia/cudnn/lib/libcudnn_graph.so.9 nvidia/cudnn/lib/libcudnn.so.9 \
    nvidia/cudnn/include/cudnn_version.h
export PART_MB=1 MEASURE_EACH=0 CUDNN_LIBS="cudnn cudnn_graph" CUDNN_XZ=0
bash "$src/bench/pack_cudnn.sh" fake.whl packed >pack.log 2>&1 || { cat pack.log; fail "pack_cudnn.sh exited $?"; }
grep -q "^version 9.27.0$" packed/MANIFEST || fail "MANIFEST lacks the version: $(cat packed/MANIFEST)"
parts=$(find packed -name "part-*" | wc -l)
[ "$parts" -ge 3 ] || fail "3 MB of random bytes should need 3 parts of 1 MiB, got $parts"
# each call carries the MANIFEST and one part
for p in $(cd packed && ls part-*); do
    mkdir -p call && rm -f call/* && cp packed/MANIFEST "packed/$p" call/
    bash "$src/bench/cudnn_parts.sh" keep call kept >keep.log 2>&1 || { cat keep.log; fail "keep of $p"; }
done
grep -q "every part is in kept" keep.log || fail "after every part: $(cat keep.log)"
# a part damaged on the way is named and not kept
rm -f kept/part-01 call/* && cp packed/MANIFEST call/ && head -c 100 /dev/urandom >call/part-01
bash "$src/bench/cudnn_parts.sh" keep call kept >bad.log 2>&1 && fail "a damaged part was accepted"
grep -q "part-01: arrived but its sha256 is not MANIFEST's" bad.log || fail "damaged part: $(cat bad.log)"
bash "$src/bench/cudnn_parts.sh" assemble call kept out >/dev/null 2>&1 && fail "assembled without part-01"
cp packed/part-01 call/part-01
lib=$(bash "$src/bench/cudnn_parts.sh" assemble call kept out 2>asm.log) || { cat asm.log; fail "assemble"; }
[ "$lib" = out/lib ] || fail "assemble printed '$lib'"
cmp -s out/lib/libcudnn_graph.so.9 nvidia/cudnn/lib/libcudnn_graph.so.9 || fail "libcudnn_graph differs"
cmp -s out/lib/libcudnn.so.9 nvidia/cudnn/lib/libcudnn.so.9 || fail "libcudnn differs"
# bad input
bash "$src/bench/pack_cudnn.sh" no-such.whl >/dev/null 2>&1; [ $? = 2 ] || fail "a missing wheel is not exit 2"
PART_MB=x bash "$src/bench/pack_cudnn.sh" fake.whl packed2 >/dev/null 2>&1; [ $? = 2 ] || fail "PART_MB=x is not exit 2"
CUDNN_LIBS="cudnn_nothing" bash "$src/bench/pack_cudnn.sh" fake.whl packed3 >/dev/null 2>&1
[ $? = 2 ] || fail "a library the wheel lacks is not exit 2"
echo "1 passed, 0 failed"
