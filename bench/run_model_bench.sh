#!/usr/bin/env bash
# Runs the suite's training-step benchmark next to PyTorch (timm) eager and torch.compile on the
# same GPU, and prints the side-by-side table (bench/compare_models.py).
# Why one process per run: each reports its own peak memory, which a shared process would mix.
# A failed run is recorded as {"impl":..,"error":..} and the others still run.
#
# usage: bench/run_model_bench.sh BUILD_DIR [OUT_DIR]
#   BUILD_DIR  holds bench_step;  OUT_DIR defaults to $OUT, else ./runs
#   env: BENCH_CONFIGS "model:size:batch[:optimizer] ..." (default: the three ResNets, SGD);
#        both sides use the same optimizer (sgd: momentum 0.9, wd 5e-4; adamw: wd 0.05)
#   env: PYTHON (python3), BENCH_TIMEOUT seconds per run (900), TORCH_STEPS (50)
#   env: BENCH_PRECISIONS "tf32 bf16" (default tf32): each configuration in each precision, on both
#        sides (PyTorch bf16 = autocast); with more than tf32, bench/compare_precision.py's table
#   env: TORCH_MODES (default "eager compiled"; "max-autotune" adds mode="max-autotune", "graphed" the
#        whole step, optimizer included, in one CUDA graph: bench/torch_model.py)
# Exit status: compare_models.py's (1 if a check FAILs or nothing ran).
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
torch_steps=${TORCH_STEPS:-50}

if [ ! -d "$build_dir" ]; then
    echo "$0: BUILD_DIR '$build_dir' is not a directory" >&2
    exit 2
fi
mkdir -p "$out_dir/logs" || exit 2
jsonl=$out_dir/model_bench.jsonl
: >"$jsonl" || exit 2
export PYTHONUNBUFFERED=1

# run_one IMPL MODEL SIZE BATCH -- COMMAND...: appends the command's last JSON line to $jsonl,
# or an error record when it fails or prints none; its stderr goes to logs/.
run_one() {
    local impl=$1 model=$2 size=$3 batch=$4
    shift 5
    local log=$out_dir/logs/${impl}_${model}_${size}_${batch}_${precision}.log
    local stdout_file=$out_dir/logs/${impl}_${model}_${size}_${batch}_${precision}.out
    echo "== $impl $model ${size}x${size} batch $batch" >&2
    timeout "$run_timeout" "$@" >"$stdout_file" 2>"$log"
    local rc=$?
    local line
    line=$(grep '^{' "$stdout_file" | tail -n 1)
    if [ "$rc" -eq 0 ] && [ -n "$line" ]; then
        printf '%s\n' "$line" >>"$jsonl"
        echo "   $line" >&2
        return
    fi
    local why="exit code $rc"
    [ "$rc" -eq 124 ] && why="timed out after ${run_timeout}s"
    [ "$rc" -eq 126 ] || [ "$rc" -eq 127 ] && why="could not start $1 (exit code $rc)"
    [ "$rc" -eq 0 ] && why="printed no JSON line"
    echo "   FAILED: $why (see $log)" >&2
    tail -n 5 "$log" | sed 's/^/   | /' >&2
    printf '{"impl":"%s","model":"%s","image_size":%d,"batch":%d,"classes":1000,"precision":"%s","error":"%s"}\n' \
        "$impl" "$model" "$size" "$batch" "$precision" "$why" >>"$jsonl"
}

for config in ${BENCH_CONFIGS:-resnet26:32:128 resnet50:64:128 resnet152:224:32}; do
    IFS=: read -r model size batch optimizer <<<"$config"
    optimizer=${optimizer:-sgd}
    for precision in ${BENCH_PRECISIONS:-tf32}; do
        run_one suite "$model" "$size" "$batch" -- \
            "$build_dir/bench_step" --model "$model" --image-size "$size" --batch "$batch" \
            --classes 1000 --optimizer "$optimizer" --precision "$precision" --json
        for mode in ${TORCH_MODES:-eager compiled}; do
            run_one "torch-$mode" "$model" "$size" "$batch" -- \
                "$python" "$bench_dir/torch_model.py" --model "$model" --image-size "$size" \
                --batch "$batch" --classes 1000 --mode "$mode" --steps "$torch_steps" --optimizer "$optimizer" \
                --precision "$precision"
        done
    done
done

echo "results: $jsonl" >&2
status=0
# the float32/TF32 table only when that precision ran (with BENCH_PRECISIONS=bf16 it has no rows)
case " ${BENCH_PRECISIONS:-tf32} " in
*" tf32 "*) "$python" "$bench_dir/compare_models.py" "$jsonl" || status=$? ;;
esac
if [ "${BENCH_PRECISIONS:-tf32}" != tf32 ]; then
    "$python" "$bench_dir/compare_precision.py" "$jsonl" || status=$?
fi
exit $status
