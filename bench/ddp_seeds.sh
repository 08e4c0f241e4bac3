#!/usr/bin/env bash
# Does data parallelism train like one GPU? ResNet-26 on Fashion-MNIST: for each of 3 seeds, plain
# train at batch 2B against train --gpus 2 at batch B per GPU, loss by epoch. The yardstick is how
# far plain runs of different seeds lie apart at each epoch: a 2-GPU curve inside that spread of
# its own seed's plain curve is the same training (batch norm normalizes over B per GPU instead of
# 2B, as DDP without SyncBatchNorm does: the table shows what that costs).
#   bench/ddp_seeds.sh BUILD_DIR OUT_DIR [B] [EPOCHS] [STEPS]
set -u
build=${1:?build folder}
out=${2:?output folder}
b=${3:-64}
epochs=${4:-4}
steps=${5:-100}
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
status=0
common=(--model resnet26 --data fashion-mnist --epochs "$epochs" --steps-per-epoch "$steps" --json)
for seed in 1 2 3; do
    "$build/train" "${common[@]}" --seed $seed --batch $((2 * b)) >"$out/plain-$seed.jsonl" 2>"$out/plain-$seed.log" ||
        { echo "plain seed $seed failed"; tail -3 "$out/plain-$seed.log"; status=1; }
    timeout -s KILL 180 "$build/train" "${common[@]}" --seed $seed --batch "$b" --gpus 2 >"$out/gpus2-$seed.jsonl" 2>"$out/gpus2-$seed.log" ||
        { echo "--gpus 2 seed $seed failed"; tail -3 "$out/gpus2-$seed.log"; status=1; }
done
python3 - "$out" "$b" <<'PY' || status=1
import json, sys
out, b = sys.argv[1], int(sys.argv[2])
def losses(path):
    return [e["loss"] for e in map(json.loads, open(path)) if e.get("event") == "epoch"]
plain = {s: losses(f"{out}/plain-{s}.jsonl") for s in (1, 2, 3)}
two = {s: losses(f"{out}/gpus2-{s}.jsonl") for s in (1, 2, 3)}
epochs = min(len(v) for v in list(plain.values()) + list(two.values()))
print(f"| epoch | plain batch {2*b}, seeds 1/2/3 | --gpus 2 x {b}, seeds 1/2/3 | largest |2-GPU - plain| (same seed) | spread of plain over seeds | inside | mean 2-GPU - mean plain | 2-GPU mean inside plain's range |")
print("|---|---|---|---|---|---|---|---|")
inside_all = mean_inside_all = True
for k in range(epochs):
    p = [plain[s][k] for s in (1, 2, 3)]
    t = [two[s][k] for s in (1, 2, 3)]
    diff = max(abs(t[i] - p[i]) for i in range(3))
    spread = max(p) - min(p)
    inside = diff <= spread
    inside_all &= inside
    mp, mt = sum(p) / 3, sum(t) / 3
    mean_inside = min(p) <= mt <= max(p)
    mean_inside_all &= mean_inside
    print(f"| {k+1} | {' / '.join(f'{x:.4f}' for x in p)} | {' / '.join(f'{x:.4f}' for x in t)} | {diff:.4f} | {spread:.4f} | "
          f"{'yes' if inside else 'no'} | {mt - mp:+.4f} ({100 * (mt - mp) / mp:+.1f}%) | {'yes' if mean_inside else 'no'} |")
print("every epoch inside the spread of plain runs over seeds" if inside_all else "NOT every epoch inside the spread")
print("the 2-GPU mean inside the plain runs' range at every epoch" if mean_inside_all else
      "the 2-GPU mean NOT inside the plain runs' range at every epoch")
PY
exit $status
