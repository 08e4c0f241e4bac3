#!/usr/bin/env bash
# The sharing guard: the mixes whose numbers README publishes, under every mode, repeated, held to
# the spread recorded for this GPU in tools/guard/expected/<GPU>.json, so that a change to the training
# step that makes a mode slower is seen the day it is made (README, "The sharing guard").
#   tools/sharing_guard.sh BUILD_DIR OUT [--record]
# 7*S, 3*M and S+M+M in tf32 and 7*S in bf16, each `run_suite --mode all --mig-emulate --windows 3`
# (serial, naive, mps, mig-emulate, streams, green) into OUT/guard-runs/. Then, with --record,
# tools/guard/expected/<GPU>.json from them; without, today's spreads against that file: the table on
# stdout and in OUT/guard.md, OUT/latest.json (commit it as tools/guard/latest.json), exit 1 when a
# mode's STP or a job's samples/s left its recorded band (tools/sharing_guard.py says how wide).
# Exit 2: bad usage, no expected file, a run refused.
# Environment (for tests and other machines):
#   SUITE_GUARD_TRAIN         the train program given to run_suite --train (BUILD_DIR/train)
#   SUITE_GUARD_GPU           the GPU's name (default: NVML's, as run_suite's run.json records it)
#   SUITE_GUARD_EXPECTED_DIR  where expected files are (tools/guard/expected of this tree)
#   SUITE_PYTHON              the Python that runs tools/sharing_guard.py (python3)
#   SUITE_GUARD_CELLS         the cells, "MIX PRECISION;..." (the four above; the CPU test runs fewer)
#   SUITE_GUARD_WINDOW        the window's seconds (1.5; 2 with SUITE_GUARD_REPEAT)
#   SUITE_GUARD_WINDOWS       the windows per launch (3)
#   SUITE_GUARD_REPEAT        N > 1: N launches of one window each (--repeat N) instead
#   SUITE_CONV_CHOICES        the convolution choices' file (OUT/guard-runs/conv-choices.tsv)
#   SUITE_GUARD_REVISION, SUITE_GUARD_COMMIT  the revision measured (git describe, git rev-parse)
set -u
usage() { echo "usage: tools/sharing_guard.sh BUILD_DIR OUT [--record]" >&2; exit 2; }
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
expected_dir=${SUITE_GUARD_EXPECTED_DIR:-$here/guard/expected}
python=${SUITE_PYTHON:-python3}
guard_py="$here/sharing_guard.py"
[ -x "$build/run_suite" ] || { echo "sharing_guard.sh: $build/run_suite: not found (BUILD_DIR: the build folder)" >&2; exit 2; }
[ -x "$train" ] || { echo "sharing_guard.sh: $train: no train program there (SUITE_GUARD_TRAIN)" >&2; exit 2; }

# The measurement, in one place. Each cell is one launch of every mode with 3 consecutive common
# windows of 1.5 s after a 20-step warm-up (--windows: the spread a launch shows over its windows),
# not 3 launches (--repeat, which adds what differs between launches: placement, memory, the MPS
# daemon). A launch costs 1-2 s of start-up and warm-up besides its windows, and the guard's 4
# cells x 6 modes, the serial references and the partitioned modes' alone-in-partition runs (about
# 40 launches) then fit in 5 minutes on an H100; as 3 launches each they took 13. The margin
# (tools/sharing_guard.py) reaches at least 10% beyond the windows' spread for what they miss.
# SUITE_GUARD_REPEAT=N measures N launches instead (--repeat N, one window each).
repeats=${SUITE_GUARD_REPEAT:-1}
if [ "$repeats" -gt 1 ]; then
    measure=(--window "${SUITE_GUARD_WINDOW:-2}" --repeat "$repeats")
elif "$build/run_suite" --help 2>/dev/null | grep -q -- '--warmup-steps'; then
    measure=(--window "${SUITE_GUARD_WINDOW:-1.5}" --windows "${SUITE_GUARD_WINDOWS:-3}" --warmup-steps 20)
else
    echo "sharing_guard.sh: $build/run_suite has no --warmup-steps: build it from this tree" >&2
    exit 2
fi
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
    echo "sharing guard: $mix $precision (${measure[*]}), at $((SECONDS - guard_start)) s"
    "$build/run_suite" --mode all --mig-emulate --mix "$mix" --precision "$precision" \
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
# A machine whose copy of the tree has no current git metadata is told the revision it measures.
revision=${SUITE_GUARD_REVISION:-$(git -C "$repo" describe --always --dirty --tags 2>/dev/null || echo unknown)}
commit=${SUITE_GUARD_COMMIT:-$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)}
gpu_args=()
[ -n "${SUITE_GUARD_GPU:-}" ] && gpu_args=(--gpu "$SUITE_GUARD_GPU")
"$python" "$guard_py" collect "${collect_args[@]}" "${gpu_args[@]}" --revision "$revision" --commit "$commit" \
    --date "$(date -u +%Y-%m-%dT%H:%M:%SZ)" --measurement "${measure[*]}" -o "$out/today.json" || exit 2
if [ $record -eq 1 ]; then
    exec "$python" "$guard_py" record "$out/today.json" "$expected_dir" --out "$out"
fi
exec "$python" "$guard_py" compare "$out/today.json" "$expected_dir" --out "$out"
