#!/usr/bin/env bash
# The recommender's training step next to PyTorch's on the same GPU, side by side, and the XL
# preset's memory footprint.
#   1. criteo-kaggle shapes, tables capped at 1M rows, batch 2048: BUILD_DIR/bench_dlrm against
#      bench/torch_dlrm.py eager (and torch.compile, best effort: sparse embedding gradients may
#      stop it, which is then recorded as an error). Target: the suite's median step time at most
#      0.5x PyTorch eager's.
#   2. the XL preset (criteo-terabyte, --max-rows 10000000, batch 2048): train --dry-run's planned
#      footprint, and with XL_RUN=1 (default) a short real run whose setup event reports what it
#      holds; both within 10% of the tables' arithmetic (rows x 128 x 4 bytes, 27.68 GB).
# One process per run, so each reports its own memory; a failed run is recorded as
# {"impl":..,"error":..} and the others still run.
#
# usage: bench/run_dlrm_bench.sh BUILD_DIR [OUT_DIR]
#   BUILD_DIR holds bench_dlrm and train;  OUT_DIR defaults to $OUT, else ./runs
#   env: PYTHON (python3), BENCH_TIMEOUT seconds per run (900), STEPS (200), XL_RUN (1)
# Exit status: 1 if a target is missed or nothing ran, else 0.
set -u

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 BUILD_DIR [OUT_DIR]" >&2
    exit 2
fi
build_dir=$1
out_dir=${2:-${OUT:-./runs}}
bench_dir=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
run_timeout=${BENCH_TIMEOUT:-900}
steps=${STEPS:-200}
xl_run=${XL_RUN:-1}

if [ ! -x "$build_dir/bench_dlrm" ] || [ ! -x "$build_dir/train" ]; then
    echo "$0: $build_dir lacks bench_dlrm or train (build them first)" >&2
    exit 2
fi
mkdir -p "$out_dir/logs" || exit 2
jsonl=$out_dir/dlrm_bench.jsonl
: >"$jsonl" || exit 2
export PYTHONUNBUFFERED=1

# run_one NAME -- COMMAND...: appends the command's last JSON line to $jsonl, or an error record.
run_one() {
    local name=$1
    shift 2
    local log=$out_dir/logs/dlrm_$name.log stdout_file=$out_dir/logs/dlrm_$name.out
    echo "== $name" >&2
    timeout "$run_timeout" "$@" >"$stdout_file" 2>"$log"
    local rc=$? line
    line=$(grep '^{' "$stdout_file" | tail -n 1)
    if [ "$rc" -eq 0 ] && [ -n "$line" ]; then
        printf '%s\n' "$line" >>"$jsonl"
        echo "   $line" >&2
        return
    fi
    local why="exit code $rc"
    [ "$rc" -eq 124 ] && why="timed out after ${run_timeout}s"
    [ "$rc" -eq 0 ] && why="printed no JSON line"
    echo "   FAILED: $why (see $log)" >&2
    tail -n 5 "$log" | sed 's/^/   | /' >&2
    printf '{"impl":"%s","error":"%s"}\n' "$name" "$why" >>"$jsonl"
}

shape=(--data criteo-kaggle --max-rows 1000000 --batch 2048)
run_one suite -- "$build_dir/bench_dlrm" "${shape[@]}" --steps "$steps" --json
run_one torch-eager -- "$python" "$bench_dir/torch_dlrm.py" "${shape[@]}" --steps "$steps" --mode eager
run_one torch-compiled -- "$python" "$bench_dir/torch_dlrm.py" "${shape[@]}" --steps "$steps" --mode compiled

# The XL preset's footprint: planned (no GPU needed), and held by a short real run.
xl=(--model dlrm --data criteo-terabyte --max-rows 10000000 --batch 2048)
"$build_dir/train" "${xl[@]}" --dry-run --json >"$out_dir/logs/dlrm_xl_plan.out" 2>"$out_dir/logs/dlrm_xl_plan.log"
if [ "$xl_run" = 1 ]; then
    echo "== XL: 200 steps" >&2
    timeout "$run_timeout" "$build_dir/train" "${xl[@]}" --epochs 1 --steps-per-epoch 200 --block-steps 100 --json \
        >"$out_dir/logs/dlrm_xl_run.out" 2>"$out_dir/logs/dlrm_xl_run.log" ||
        { echo "   XL run failed (see $out_dir/logs/dlrm_xl_run.log)" >&2; tail -n 3 "$out_dir/logs/dlrm_xl_run.log" >&2; }
fi

echo "results: $jsonl" >&2
"$python" - "$jsonl" "$out_dir/logs/dlrm_xl_plan.out" "$out_dir/logs/dlrm_xl_run.out" "$xl_run" <<'EOF'
import json, sys

runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
by = {r["impl"]: r for r in runs}
print("| impl | median ms | p10 ms | p90 ms | samples/s | GiB held | mean loss |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for r in runs:
    if "error" in r:
        print(f"| {r['impl']} | error: {r['error']} | | | | | |")
        continue
    print(f"| {r['impl']} | {r['median_ms']:.3f} | {r['p10_ms']:.3f} | {r['p90_ms']:.3f} | {r['samples_per_s']:.0f} | "
          f"{r['peak_bytes'] / 2**30:.2f} | {r['mean_loss']:.4f} |")
status = 0
suite, eager = by.get("suite"), by.get("torch-eager")
if suite and eager and "error" not in suite and "error" not in eager:
    ratio = suite["median_ms"] / eager["median_ms"]
    verdict = "PASS" if ratio <= 0.5 else "FAIL"
    status |= verdict == "FAIL"
    print(f"{verdict}: suite / torch eager median step time = {ratio:.3f} (target <= 0.5)")
    compiled = by.get("torch-compiled")
    if compiled and "error" not in compiled:
        print(f"INFO: suite / torch compiled = {suite['median_ms'] / compiled['median_ms']:.3f}")
else:
    print("FAIL: the suite or PyTorch eager did not run")
    status = 1

rows = [39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346, 10, 2208, 11938, 155,
        4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36]
tables = sum(min(n, 10_000_000) for n in rows) * 128 * 4
def check(what, held):
    ratio = held / tables
    verdict = "PASS" if 1.0 <= ratio <= 1.10 else "FAIL"
    print(f"{verdict}: XL {what} {held / 1e9:.3f} GB vs tables {tables / 1e9:.3f} GB (x{ratio:.3f}, within 10%)")
    return verdict == "FAIL"
try:
    plan = json.loads(open(sys.argv[2]).read())
    status |= check("planned footprint", plan["footprint"]["total"])
except (OSError, ValueError, KeyError) as e:
    print(f"FAIL: XL dry run gave no footprint ({e})")
    status = 1
if sys.argv[4] == "1":
    setup = None
    try:
        for line in open(sys.argv[3]):
            if line.startswith("{"):
                e = json.loads(line)
                if e.get("event") == "setup":
                    setup = e
                if e.get("event") == "epoch":
                    print(f"INFO: XL 200 steps: median step {e['step_ms_median']:.3f} ms, {e['samples_per_s']:.0f} samples/s, "
                          f"loader waited {e['loader_wait_s']:.2f} s, device used {e['device_used_bytes'] / 1e9:.2f} GB")
    except OSError:
        pass
    if setup:
        status |= check("run's footprint_bytes", setup["footprint_bytes"])
    else:
        print("FAIL: the XL run printed no setup event")
        status = 1
sys.exit(status)
EOF
