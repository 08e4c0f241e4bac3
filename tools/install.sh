#!/usr/bin/env bash
# The Debian packages the build and the tests need (README's two set-up commands, and CI's):
#   tools/install.sh            the build's: compilers, cmake, the libraries, matplotlib for the
#                               report, pip (nvJPEG where the toolkit lacks it), Fashion-MNIST
#   tools/install.sh --tests    also Slurm, which tests/runner/test_slurm_cluster.c runs as a
#                               one-node cluster
#   --dry-run                   print the commands instead of running them
# Run again at any time: apt-get installs only what is missing. Not root: through sudo.
set -euo pipefail
tests=0
dry=0
for arg in "$@"; do
    case $arg in
    --tests) tests=1 ;;
    --dry-run) dry=1 ;;
    *)
        echo "tools/install.sh: unknown argument '$arg' (expected --tests, --dry-run)" >&2
        exit 2
        ;;
    esac
done
packages=(cmake make gcc g++ clang libclang-rt-dev libcjson-dev libcmocka-dev libstb-dev libzip-dev
          zlib1g-dev python3-matplotlib python3-pip dataset-fashion-mnist)
[ "$tests" = 1 ] && packages+=(slurmctld slurmd slurm-client)
sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo)
run() {
    if [ "$dry" = 1 ]; then echo "+ $*"; else "$@"; fi
}
run "${sudo[@]}" apt-get update
run "${sudo[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
