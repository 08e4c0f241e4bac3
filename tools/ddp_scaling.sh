#!/usr/bin/env bash
# Data-parallel on this machine: ResNet-50 at 224x224, synthetic data, tf32 and bf16 at batch 128
# and 256 per GPU; plain train (one GPU) against train --gpus N for N = 2, 4, ... up to the GPUs
# present, the last epoch timed. Per row: samples/s, scaling efficiency = samples/s(N) /
# (N x samples/s(plain)), the step's median and its cost over the plain step, the all-reduce of
# the whole gradient alone (each rank times it at set-up with CUDA events: train_rank.c), the
# communication left exposed after the backward pass (CUDA events in the step's graph: from the end
# of the pass to the end of the compute stream's wait for the all-reduces; the median over epoch
# ends, of the rank that waits least: the rank whose pass ends last waits for the communication
# alone, the others for that rank as well) and the share of the all-reduce hidden = 1 - exposed / alone. The step's
# cost over plain minus the exposed part is what running beside the all-reduce costs the
# computation (NCCL's kernels take SMs and memory bandwidth while the pass runs).
#   tools/ddp_scaling.sh BUILD_DIR OUT_DIR [STEPS]   (DDP_CONFIGS="tf32:128 bf16:256 ...")
set -u
build=${1:?build folder}
out=${2:?output folder}
steps=${3:-40}
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
gpus=$(nvidia-smi -L | wc -l)
status=0
field() { grep '"event":"epoch"' "$1" | tail -1 | sed "s/.*\"$2\":\([0-9.e+-]*\).*/\1/"; }
echo "| precision | batch per GPU | GPUs | samples/s | efficiency | step ms (median) | over plain ms | all-reduce alone ms | exposed ms | hidden |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for cfg in ${DDP_CONFIGS:-tf32:128 tf32:256 bf16:128 bf16:256}; do
    IFS=: read -r precision batch <<<"$cfg"
    common=(--model resnet50 --data imagenet --image-size 224 --batch "$batch" --precision "$precision" --epochs 4
            --steps-per-epoch "$steps" --json)
    tag=$precision-$batch
    if ! "$build/train" "${common[@]}" >"$out/plain-$tag.jsonl" 2>"$out/plain-$tag.log"; then
        echo "plain train $tag failed:"; tail -3 "$out/plain-$tag.log"; status=1; continue
    fi
    one=$(field "$out/plain-$tag.jsonl" samples_per_s); step1=$(field "$out/plain-$tag.jsonl" step_ms_median)
    printf '| %s | %s | 1 (plain) | %.0f | - | %.2f | - | - | - | - |\n' "$precision" "$batch" "$one" "$step1"
    n=2
    while [ "$n" -le "$gpus" ]; do
        f=$out/gpus-$n-$tag
        if timeout -s KILL 300 "$build/train" --gpus "$n" "${common[@]}" >"$f.jsonl" 2>"$f.log"; then
            r=$(field "$f.jsonl" samples_per_s); step=$(field "$f.jsonl" step_ms_median)
            ar=$(grep -o 'alone: [0-9.]* ms' "$f.log" | awk '{ if ($2 > m) m = $2 } END { print m }')
            # the rank whose pass ends last waits only for the communication; the others wait for it too (skew)
            ex=$(grep -o 'backward pass: [0-9.]* ms' "$f.log" | awk 'NR == 1 || $3 < m { m = $3 } END { print m + 0 }')
            awk -v p="$precision" -v b="$batch" -v n="$n" -v r="$r" -v one="$one" -v s="$step" -v s1="$step1" -v ar="$ar" -v ex="$ex" \
                'BEGIN { h = ar > 0 ? 1 - ex / ar : 0; if (h < 0) h = 0; if (h > 1) h = 1;
                         printf "| %s | %s | %d | %.0f | %.1f%% | %.2f | %.2f | %.3f | %.3f | %.0f%% |\n", p, b, n, r, 100 * r / (n * one), s, s - s1, ar, ex, 100 * h }'
            grep -h "all-reduced during\|identical\|exposed" "$f.log" | sed 's/^/    /' >&2
        else
            status=1
            echo "--gpus $n $tag failed:"; tail -3 "$f.log"
        fi
        n=$((n * 2))
    done
done
exit $status
