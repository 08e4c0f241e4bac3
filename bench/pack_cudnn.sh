#!/usr/bin/env bash
# Packs a cuDNN 9 wheel's libraries (pip nvidia-cudnn-cu13) into parts small enough to travel to
# the device machine, one part a call (a call carries at most 64 MiB with the working tree):
#   bench/pack_cudnn.sh WHEEL [OUT_DIR]
#   OUT_DIR (.cudnn927 by default, git-ignored): part-00, part-01, ... and MANIFEST
# CUDNN_LIBS: which libraries (short names). The default is what a graph-API program can load
# except libcudnn_engines_precompiled (its kernels compress to 195 of 273 MB, which alone needs
# four more calls), libcudnn_adv (RNN, attention) and libcudnn_ext: whether the fused graph runs
# without the precompiled engines is what conv-bn-probe-927 tells (lab/conv_bn_roads.md).
# PART_MB: a part's size (40: the tree, some 20 MiB, travels beside it); CUDNN_XZ=0: zstd -19 --long, not xz -9e.
# MANIFEST lists each library's size, each part's sha256 and the whole archive's, so that
# lab/device_run.sh's cudnn-part stage can say which parts arrived intact and conv-bn-probe-927
# can assemble them. It also prints each library's compressed size, the measurement that says
# whether the set can travel (lab/conv_bn_roads.md, road 1).
set -eu
wheel=${1:?usage: bench/pack_cudnn.sh WHEEL [OUT_DIR]}
out=${2:-.cudnn927}
part_mb=${PART_MB:-40}
libs=${CUDNN_LIBS:-"cudnn cudnn_graph cudnn_engines_runtime_compiled cudnn_engines_tensor_ir cudnn_heuristic cudnn_ops cudnn_cnn"}
[ -f "$wheel" ] || { echo "pack_cudnn: $wheel is not a file (expected the nvidia-cudnn-cu13 wheel)" >&2; exit 2; }
case $part_mb in '' | *[!0-9]*) echo "pack_cudnn: PART_MB must be a whole number of MiB (got '$part_mb')" >&2; exit 2 ;; esac
if [ "$part_mb" -lt 1 ] || [ "$part_mb" -gt 60 ]; then echo "pack_cudnn: PART_MB must be 1..60 (got $part_mb)" >&2; exit 2; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
members=() files=()
for lib in $libs; do members+=("nvidia/cudnn/lib/lib$lib.so.9"); files+=("lib$lib.so.9"); done
unzip -q -o "$wheel" "${members[@]}" 'nvidia/cudnn/include/cudnn_version.h' -d "$work" ||
    { echo "pack_cudnn: $wheel lacks one of: ${members[*]}" >&2; exit 2; }
version=$(awk '/define CUDNN_(MAJOR|MINOR|PATCHLEVEL) /{printf "%s%s", sep, $3; sep="."}' \
    "$work/nvidia/cudnn/include/cudnn_version.h")
echo "cuDNN $version from $(basename "$wheel"): each library alone (bytes: raw, xz -9e, zstd -19 --long)"
lib_dir="$work/nvidia/cudnn/lib"
total_raw=0
for lib in $libs; do
    f="$lib_dir/lib$lib.so.9"
    raw=$(stat -c %s "$f")
    total_raw=$((total_raw + raw))
    if [ "${MEASURE_EACH:-1}" = 1 ]; then
        printf '  %-40s %11d %11d %11d\n' "lib$lib.so.9" "$raw" "$(xz -9e -T0 -c "$f" | wc -c)" \
            "$(zstd -19 --long=27 -T0 -q -c "$f" | wc -c)"
    fi
done
archive="$work/cudnn.tar"
tar -C "$lib_dir" -cf "$archive" "${files[@]}"
if [ "${CUDNN_XZ:-1}" = 1 ]; then
    xz -9e -T0 -c "$archive" >"$archive.x"; codec=xz
else
    zstd -19 --long=27 -T0 -q -c "$archive" >"$archive.x"; codec=zstd
fi
rm -rf "$out"
mkdir -p "$out"
split -b "${part_mb}M" -d -a 2 "$archive.x" "$out/part-"
parts=$(find "$out" -name 'part-*' | wc -l)
{
    echo "version $version"
    echo "codec $codec"
    echo "archive $(sha256sum <"$archive.x" | cut -d' ' -f1) $(stat -c %s "$archive.x")"
    for lib in $libs; do echo "library lib$lib.so.9 $(stat -c %s "$lib_dir/lib$lib.so.9")"; done
    (cd "$out" && for p in part-*; do echo "part $p $(sha256sum <"$p" | cut -d' ' -f1)"; done)
} >"$out/MANIFEST"
echo "the set: $total_raw bytes raw, $(stat -c %s "$archive.x") as one $codec archive, $parts part(s) of at most" \
    "$part_mb MiB in $out/ (one call each: carry $out/MANIFEST and $out/part-NN)"
