#!/usr/bin/env bash
# What README's first two commands run once apt-get has installed the packages:
#   tests/ci.sh build   pip's nvidia-nvjpeg where pip and the network allow, then the build (build/)
#   tests/ci.sh test    the build, then every test side by side (ctest -j), failing where a test
#                       outside the gpu label reports itself skipped (a missing clang, matplotlib,
#                       Slurm or root must not pass as green); then the CPU tests again under ASan
#                       and UBSan (build-sanitize/, -DSUITE_SANITIZE=ON, built with clang, whose
#                       sanitizers write every report, a child process's too, where log_path says;
#                       reusing build/'s CUDA kernels), failing on any report.
# Extra arguments go to the first build's cmake (e.g. -DCMAKE_C_COMPILER_LAUNCHER=ccache).
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-}
shift || true
jobs=$(nproc)
# Most tests wait on child processes (fake jobs, their barriers and windows) rather than compute, and
# each has its own state folders (tests/isolated.sh): twice as many at once as there are cores.
tests_at_once=$((jobs * 2))

build() {
    python3 -m pip install -q --retries 1 --timeout 30 --break-system-packages nvidia-nvjpeg ||
        echo "nvidia-nvjpeg not installed: building without GPU JPEG decoding"
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
    cmake --build build -j"$jobs"
}

# Fails naming every test of build folder $1 that was skipped but carries no gpu label (ctest's
# JUnit file against its test list with labels).
no_skips_outside_gpu() {
    python3 - "$1" <<'EOF'
import json, subprocess, sys, xml.etree.ElementTree as ET
build = sys.argv[1]
listing = json.loads(subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                                    check=True, capture_output=True, text=True).stdout)
labels = {}
for test in listing["tests"]:
    for prop in test.get("properties", []):
        if prop["name"] == "LABELS":
            labels[test["name"]] = prop["value"]
skipped = [case.get("name") for case in ET.parse(f"{build}/junit.xml").iter("testcase")
           if case.find("skipped") is not None or case.get("status") in ("notrun", "disabled")]
bad = [name for name in skipped if "gpu" not in labels.get(name, [])]
print(f"{build}: {len(skipped)} tests skipped, {len(skipped) - len(bad)} of them gpu tests")
if bad:
    print(f"{build}: skipped outside the gpu label (each needs what tests/ci.sh's README command "
          f"installs, or root): {', '.join(bad)}", file=sys.stderr)
    sys.exit(1)
EOF
}

case $what in
build)
    build "$@"
    ;;
test)
    start=$SECONDS
    build "$@"
    ctest --test-dir build -j"$tests_at_once" --output-on-failure --output-junit junit.xml
    no_skips_outside_gpu build
    echo "tests/ci.sh: build and tests took $((SECONDS - start)) s"

    start=$SECONDS
    cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DSUITE_SANITIZE=ON -DSUITE_FUZZ=OFF \
        -DSUITE_KERNELS_LIBRARY="$PWD/build/libsuite_kernels.a" >build-sanitize.log 2>&1 ||
        { cat build-sanitize.log; exit 1; }
    cmake --build build-sanitize -j"$jobs" >>build-sanitize.log 2>&1 || { tail -50 build-sanitize.log; exit 1; }
    rm -rf build-sanitize/sanitizer-logs && mkdir -p build-sanitize/sanitizer-logs
    ctest --test-dir build-sanitize -LE gpu -j"$tests_at_once" --output-on-failure --output-junit junit.xml
    no_skips_outside_gpu build-sanitize
    if [ -n "$(ls -A build-sanitize/sanitizer-logs)" ]; then
        for log in build-sanitize/sanitizer-logs/*; do echo "--- $log"; head -60 "$log"; done
        echo "tests/ci.sh: the sanitizers reported the findings above" >&2
        exit 1
    fi
    echo "tests/ci.sh: the sanitizer pass (build and CPU tests under ASan and UBSan) took $((SECONDS - start)) s, no finding"
    ;;
*)
    echo "usage: tests/ci.sh build|test [cmake arguments]" >&2
    exit 2
    ;;
esac
