#!/usr/bin/env bash
# What each sharing mode does when a job fails, on this GPU: every injected fault kind
# (runner/train/fault.h) in job 0 of S+S under each mode, then one table (bench/faults_table.py):
# the faulty job's record, the other job's outcome, run_suite's exit status, and what was left
# behind after the run (train processes, MPS daemons and servers, compute processes on the GPU).
# Then the hard kill: run_suite --mode mps with 7*S is killed with SIGKILL while the jobs train;
# 5 s later no train process may remain (each asked for SIGKILL on its parent's death), and the
# next run_suite must find and stop the MPS daemon the killed one left, saying so.
#   bench/faults.sh BUILD_DIR OUT_DIR
#   TRAIN=PATH runs another train (tests/support/fake_train checks the script without a GPU);
#   KINDS="illegal-address oom ..." MODES="naive mps ..." choose a part (defaults: all kinds under
#   naive, mps and mig-emulate); KILL=0 leaves out the hard kill.
# Epochs are cut to 40 steps; the fault comes at step 60 (the second epoch), after the watchdog
# has measured the job's pace; hang is stopped by --stall-timeout 10 (the derived default would be
# at least 30 s).
set -u
build=${1:?build folder}
out=${2:?output folder}
kinds=${KINDS:-illegal-address oom nan exit hang sigkill}
modes=${MODES:-naive mps mig-emulate}
mkdir -p "$out"
here=$(dirname "$0")

leftovers() { # "train=N mps=N gpu_procs=N"
    local train mps gpu
    train=$(ps -eo comm= | grep -cx train)
    mps=$(ps -eo comm= | grep -c '^nvidia-cuda-mps')
    gpu=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | grep -c .)
    echo "train=$train mps=$mps gpu_procs=$gpu"
}

for mode in $modes; do
    for kind in $kinds; do
        dir="$out/$mode-$kind"
        rm -rf "$dir"
        mkdir -p "$dir"
        start=$(date +%s%N)
        "$build/run_suite" ${TRAIN:+--train "$TRAIN"} --mode "$mode" --mix "S[fault=$kind@60]+S" --epochs 2 --steps-per-epoch 40 \
            --stall-timeout 10 --grace 3 --results "$dir" >"$dir/stdout.log" 2>"$dir/stderr.log"
        rc=$?
        sleep 1 # a daemon's server leaves shortly after quit
        printf '{"mode":"%s","kind":"%s","exit":%d,"seconds":%.1f,"leftovers":"%s"}\n' "$mode" "$kind" "$rc" \
            "$(awk "BEGIN { print ($(date +%s%N) - $start) / 1e9 }")" "$(leftovers)" >"$dir/outcome.json"
        echo "$mode $kind: exit $rc, $(leftovers)"
    done
done
python3 "$here/faults_table.py" "$out" | tee "$out/faults.md"

[ "${KILL:-1}" = 0 ] && exit 0
echo
echo "--- kill -9 of run_suite during a 7*S MPS run"
dir="$out/kill9"
rm -rf "$dir"
mkdir -p "$dir"
echo "before: $(leftovers)"
"$build/run_suite" ${TRAIN:+--train "$TRAIN"} --mode mps --mix "7*S" --epochs 2 --steps-per-epoch 3000 --results "$dir" \
    >"$dir/stdout.log" 2>"$dir/stderr.log" &
runner=$!
for _ in $(seq 120); do # until all seven train (or 60 s)
    [ "$(grep -c ': go$' "$dir/stderr.log")" -ge 7 ] && break
    sleep 0.5
done
sleep 2
echo "training: $(grep -c ': go$' "$dir/stderr.log") jobs past go; $(leftovers)"
kill -9 $runner
wait $runner 2>/dev/null
sleep 5
echo "5 s after kill -9: $(leftovers)"
"$build/run_suite" ${TRAIN:+--train "$TRAIN"} --mode naive --mix S --epochs 1 --steps-per-epoch 5 --results "$dir/next" \
    >"$dir/next.log" 2>&1
echo "next run_suite: exit $?; it said: $(grep -m1 'stale MPS' "$dir/next.log" || echo 'nothing about a stale daemon')"
sleep 1
echo "after the next run: $(leftovers)"
