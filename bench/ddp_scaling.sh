#!/usr/bin/env bash
# Data-parallel scaling on this machine: ResNet-50 at 224x224, batch 128 per GPU, synthetic data,
# train --gpus N for N = 1, 2, 4, ... up to the GPUs present (and plain train as the reference),
# the second epoch timed. Prints samples/s and scaling efficiency = samples/s(N) / (N x samples/s(1)).
#   bench/ddp_scaling.sh BUILD_DIR OUT_DIR [STEPS]
set -u
build=${1:?build folder}
out=${2:?output folder}
steps=${3:-60}
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
gpus=$(nvidia-smi -L | wc -l)
common=(--model resnet50 --data imagenet --image-size 224 --batch 128 --epochs 2 --steps-per-epoch "$steps" --json)
"$build/train" "${common[@]}" >"$out/plain.jsonl" 2>"$out/plain.log" || { echo "plain train failed"; tail -3 "$out/plain.log"; exit 1; }
rate() { grep '"event":"epoch"' "$1" | tail -1 | sed 's/.*"samples_per_s":\([0-9.e+]*\).*/\1/'; }
printf '%-6s %14s %11s\n' gpus samples/s efficiency
printf '%-6s %14.0f %11s\n' plain "$(rate "$out/plain.jsonl")" -
n=1
one=
status=0
while [ "$n" -le "$gpus" ]; do
    if "$build/train" --gpus "$n" "${common[@]}" >"$out/gpus-$n.jsonl" 2>"$out/gpus-$n.log"; then
        r=$(rate "$out/gpus-$n.jsonl")
        [ -z "$one" ] && one=$r
        printf '%-6s %14.0f %10.1f%%\n' "$n" "$r" "$(awk -v r="$r" -v n="$n" -v one="$one" 'BEGIN { print 100 * r / (n * one) }')"
    else
        status=1
        echo "--gpus $n failed:"; tail -3 "$out/gpus-$n.log"
    fi
    n=$((n * 2))
done
exit $status
