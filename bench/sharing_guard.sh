#!/usr/bin/env bash
# The sharing guard: the mixes whose numbers README publishes, under every mode, repeated, held to
# the spread recorded for this GPU in bench/expected/<GPU>.json, so that a change to the training
# step that makes a mode slower is seen the day it is made (README, "The sharing guard").
#   bench/sharing_guard.sh BUILD_DIR OUT [--record]
# 7*S, 3*M and S+M+M in tf32 and 7*S in bf16, each `run_suite --mode all --mig-emulate --repeat 3`
# (serial, naive, mps, mig-emulate, streams, green) into OUT/guard-runs/. Then, with --record,
# bench/expected/<GPU>.json from them; without, today's spreads against that file: the table on
# stdout and in OUT/guard.md, OUT/latest.json (commit it as bench/guard/latest.json), exit 1 when a
# mode's STP or a job's samples/s left its recorded band (bench/sharing_guard.py says how wide).
# Exit 2: bad usage, no expected file, a run refused.
# Environment (for tests and other machines):
#   SUITE_GUARD_TRAIN         the train program given to run_suite --train (BUILD_DIR/train)
#   SUITE_GUARD_GPU           the GPU's name (default: NVML's, as run_suite's run.json records it)
#   SUITE_GUARD_EXPECTED_DIR  where expected files are (bench/expected of this tree)
#   SUITE_PYTHON              the Python that runs bench/sharing_guard.py (python3)
#   SUITE_GUARD_CELLS         the cells, "MIX PRECISION;..." (the four above; the CPU test runs fewer)
#   SUITE_GUARD_WINDOW        the window's seconds (2)
set -u
usage() { echo "usage: bench/sharing_guard.sh BUILD_DIR OUT [--record]" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
build=$1
out=$2
record=0
case "${3:-}" in
    --record) record=1 ;;
    "") ;;
    *) usage ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
train=${SUITE_GUARD_TRAIN:-$build/train}
expected_dir=${SUITE_GUARD_EXPECTED_DIR:-$here/expected}
python=${SUITE_PYTHON:-python3}
guard_py="$here/sharing_guard.py"
[ -x "$build/run_suite" ] || { echo "sharing_guard.sh: $build/run_suite: not found (BUILD_DIR: the build folder)" >&2; exit 2; }
[ -x "$train" ] || { echo "sharing_guard.sh: $train: no train program there (SUITE_GUARD_TRAIN)" >&2; exit 2; }

# The measurement length, in one place. The window protocol (--window SECONDS: each job's rate
# over the same seconds of overlap) where this run_suite has it; else a fixed epoch of 50 steps,
# about 0.3 s of M's timed epoch alone and 0.1 s of S's on an H100, several times that shared.
# Either way a cell's time is mostly its jobs' set-up (cuDNN's algorithm search), and the guard's
# 4 cells x 3 repeats x 6 modes are meant to fit in 5 minutes on an H100.
if "$build/run_suite" --help 2>/dev/null | grep -q -- '--window'; then
    measure=(--window "${SUITE_GUARD_WINDOW:-2}")
else
    measure=(--steps-per-epoch 50)
fi
repeats=3
cells=("7*S tf32" "3*M tf32" "S+M+M tf32" "7*S bf16")
if [ -n "${SUITE_GUARD_CELLS:-}" ]; then
    IFS=';' read -r -a cells <<<"$SUITE_GUARD_CELLS"
fi

runs="$out/guard-runs"
rm -rf "$runs"
mkdir -p "$runs" || exit 2
# One search per convolution for the whole guard, made before any job trained: every cell, mode
# and repeat then runs the same algorithms, and a run's set-up is a fraction of a second.
export SUITE_CONV_CHOICES="${SUITE_CONV_CHOICES:-$runs/conv-choices.tsv}"
guard_start=$SECONDS
collect_args=()
for cell in "${cells[@]}"; do
    read -r mix precision <<<"$cell"
    name="${mix//\*/x}-$precision"
    echo "sharing guard: $mix $precision (${measure[*]}, --repeat $repeats), at $((SECONDS - guard_start)) s"
    "$build/run_suite" --mode all --mig-emulate --mix "$mix" --precision "$precision" --repeat "$repeats" \
        "${measure[@]}" --train "$train" --results "$runs/$name" >"$runs/$name.log" 2>&1
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "sharing_guard.sh: $mix $precision: run_suite exited $rc; the end of $runs/$name.log:" >&2
        tail -15 "$runs/$name.log" >&2
        [ $rc -eq 2 ] && exit 2
        exit 1
    fi
    dirs=("$runs/$name"/*/)
    collect_args+=(--cell "$mix" "$precision" "${dirs[0]%/}")
done

echo "sharing guard: the runs took $((SECONDS - guard_start)) s"
repo=$(dirname "$here")
revision=$(git -C "$repo" describe --always --dirty --tags 2>/dev/null || echo unknown)
commit=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
gpu_args=()
[ -n "${SUITE_GUARD_GPU:-}" ] && gpu_args=(--gpu "$SUITE_GUARD_GPU")
"$python" "$guard_py" collect "${collect_args[@]}" "${gpu_args[@]}" --revision "$revision" --commit "$commit" \
    --date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --measurement "${measure[*]}" -o "$out/today.json" || exit 2
if [ $record -eq 1 ]; then
    exec "$python" "$guard_py" record "$out/today.json" "$expected_dir" --out "$out"
fi
exec "$python" "$guard_py" compare "$out/today.json" "$expected_dir" --out "$out"
