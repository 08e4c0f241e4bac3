#!/usr/bin/env bash
# Installs CUTLASS's C++ headers from PyPI's nvidia-cutlass (which bundles them) into the git-ignored
# third_party/cutlass/: include/ (cutlass, cute) and util/include/ (the tools' helpers). CMake builds
# bench/gemm_bn_cutlass when third_party/cutlass/include/cutlass/cutlass.h is there; the device
# machine gets it by carrying third_party/cutlass.tgz (the same headers packed, a few MB).
#   bench/install_cutlass.sh [VERSION]   (4.2.0.0 by default)
set -eu
version=${1:-4.2.0.0}
case $version in *[!0-9.]* | '') echo "install_cutlass: VERSION must look like 4.2.0.0 (got '$version')" >&2; exit 2 ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
dest=$root/third_party/cutlass
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: -d "$work" "nvidia-cutlass==$version"
wheel=$(find "$work" -name 'nvidia_cutlass-*.whl' | head -1)
[ -n "$wheel" ] || { echo "install_cutlass: pip gave no nvidia_cutlass wheel" >&2; exit 1; }
unzip -q "$wheel" 'cutlass_library/source/include/*' 'cutlass_library/source/tools/util/include/*' -d "$work/x"
rm -rf "$dest"
mkdir -p "$dest/util"
mv "$work/x/cutlass_library/source/include" "$dest/include"
mv "$work/x/cutlass_library/source/tools/util/include" "$dest/util/include"
echo "$version" >"$dest/VERSION"
# the same, compressed, for the device machine: a call carries 64 MiB with the tree and .devroot, which
# the headers themselves would pass; lab/device_run.sh's build stage unpacks it
tar czf "$root/third_party/cutlass.tgz" -C "$root/third_party" cutlass
echo "CUTLASS $version headers in $dest ($(du -sm "$dest" | cut -f1) MB), packed in third_party/cutlass.tgz ($(du -sm "$root/third_party/cutlass.tgz" | cut -f1) MB)"
