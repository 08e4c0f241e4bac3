#!/usr/bin/env bash
# The study's collocation sweep on this GPU: S x {1,2,4,7} and M x {1,2,3} under naive time-slicing
# and MPS, each run's second epoch timed, then one table of aggregate samples/s against one job
# alone (bench/collocation_table.py). Epochs are cut to a fixed number of steps so that a sweep
# takes minutes: S (resnet26, 32x32, batch 128) 1000 steps, M (resnet50, 64x64, batch 128) 400.
#   bench/collocation.sh BUILD_DIR OUT_DIR [S_STEPS M_STEPS]
set -u
build=${1:?build folder}
out=${2:?output folder}
s_steps=${3:-1000}
m_steps=${4:-400}
mkdir -p "$out"
status=0
for mode in naive mps; do
    for mix in S 2*S 4*S 7*S M 2*M 3*M; do
        steps=$s_steps
        case $mix in *M) steps=$m_steps ;; esac
        dir="$out/$mode-${mix/\*/x}"
        "$build/run_suite" --mode "$mode" --mix "$mix" --steps-per-epoch "$steps" --results "$dir" \
            >"$dir.log" 2>&1 || { status=1; echo "$mode $mix failed:"; tail -5 "$dir.log"; }
    done
done
python3 "$(dirname "$0")/collocation_table.py" "$out"
exit $status
