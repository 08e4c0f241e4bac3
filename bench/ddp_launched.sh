#!/usr/bin/env bash
# Ranks started by hand against train's own launcher, on one 4-GPU machine over the loopback address:
#   1. train --gpus 4, then four processes `train --launcher env` with RANK, WORLD_SIZE, LOCAL_RANK,
#      MASTER_ADDR=127.0.0.1 and MASTER_PORT (one per GPU), the same ResNet-50 224 job and seed (the
#      convolution choices of the first run kept for the second: SUITE_CONV_CHOICES): the loss by
#      epoch, the replica hash (FNV-1a of every rank's parameters and buffers at the end, which the
#      ranks check equal among themselves) and images/s side by side (the first epoch warms up; the
#      others within 2%);
#   2. the four launched again with --inject-fault sigkill@20 (the last rank, 3, kills itself after
#      step 20): every other rank's exit status, its time after rank 3's death (bound: 30 s) and its
#      message.
# Every process runs under `timeout -s KILL`, and the script's end (or its own stop) ends the ranks it
# started, by pid.
#   bench/ddp_launched.sh BUILD_DIR OUT_DIR [STEPS]   (RESNET="--precision tf32 --batch 128")
set -u
build=${1:?build folder}
out=${2:?output folder}
steps=${3:-60}
export NCCL_NVLS_ENABLE=0
mkdir -p "$out"
rm -f "$out"/*.jsonl "$out"/*.log "$out"/rc-*
export SUITE_CONV_CHOICES=$out/conv-choices.tsv
rm -f "$SUITE_CONV_CHOICES"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$gpus" -lt 4 ]; then echo "ddp-launched needs 4 GPUs, this machine has $gpus: skipped"; exit 0; fi
# shellcheck disable=SC2206
job=(--model resnet50 --data imagenet --image-size 224 ${RESNET:---precision tf32 --batch 128} --epochs 3
     --steps-per-epoch "$steps" --seed 7)
limit=180 # seconds any one process may run
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done; }
trap cleanup EXIT INT TERM
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }

# Four ranks started here with the env convention; each one's exit status and time go to rc-<tag>-<r>.
launch_four() {
    local tag=$1; shift
    local port; port=$(free_port)
    for r in 0 1 2 3; do
        # the wrapper passes a stop on to timeout, which passes it on to the rank
        ( RANK=$r WORLD_SIZE=4 LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
              timeout -s KILL $limit "$build/train" --launcher env "${job[@]}" --json "$@" \
              >"$out/$tag-$r.jsonl" 2>"$out/$tag-$r.log" &
          rank=$!
          trap 'kill -TERM $rank 2>/dev/null' TERM
          wait $rank
          echo "$? $(now)" >"$out/rc-$tag-$r" ) &
        pids+=($!)
    done
    wait
    pids=()
}

status=0
t0=$(now)
timeout -s KILL $limit "$build/train" --gpus 4 "${job[@]}" --json >"$out/gpus.jsonl" 2>"$out/gpus.log"
echo "train --gpus 4: exit $? in $(python3 -c "print(round($(now) - $t0))") s"
t0=$(now)
launch_four launched
echo "four ranks, train --launcher env: exits $(cut -d' ' -f1 "$out"/rc-launched-* | tr '\n' ' ')in $(python3 -c "print(round($(now) - $t0))") s"
python3 - "$out" <<'EOF' || status=1
import json, re, sys
out = sys.argv[1]
def epochs(path):
    rows = {}
    for line in open(path):
        if '"event":"epoch"' in line:
            e = json.loads(line)
            rows[e["epoch"]] = e
    return rows
def replica(path):
    m = re.findall(r"parameters and buffers at the end (identical|NOT identical) on every rank \(FNV-1a ([0-9a-f]+)\)",
                   open(path).read())
    return m[0] if m else ("?", "-")
a, b = epochs(f"{out}/gpus.jsonl"), epochs(f"{out}/launched-0.jsonl")
print("| epoch | loss, train --gpus 4 | loss, 4 x train --launcher env | difference | images/s, --gpus 4 | images/s, launched | launched / --gpus |")
print("|---|---|---|---|---|---|---|")
ok = bool(a) and sorted(a) == sorted(b)
for k in sorted(set(a) | set(b)):
    x, y = a.get(k, {}), b.get(k, {})
    lx, ly, rx, ry = x.get("loss"), y.get("loss"), x.get("samples_per_s"), y.get("samples_per_s")
    diff = abs(lx - ly) if lx is not None and ly is not None else None
    ratio = ry / rx if rx and ry else None
    print(f"| {k}{' (warm-up)' if k == 1 else ''} | {lx} | {ly} | {diff if diff is not None else '-'} | "
          f"{rx and round(rx)} | {ry and round(ry)} | {f'{ratio:.3f}' if ratio else '-'} |")
    if k > 1 and (ratio is None or abs(ratio - 1) > 0.02): ok = False
ha, hb = replica(f"{out}/gpus.log"), replica(f"{out}/launched-0.log")
print(f"\nreplicas at the end: --gpus 4 {ha[0]} on every rank, FNV-1a {ha[1]}; launched {hb[0]}, FNV-1a {hb[1]}; "
      f"{'the same hash' if ha[1] == hb[1] else 'DIFFERENT hashes'}")
print(f"images/s after the warm-up within 2%: {'yes' if ok else 'NO'}")
sys.exit(0 if ok and ha[1] == hb[1] and ha[0] == "identical" else 1)
EOF

echo
echo "--- the four launched again, rank 3 killed after step 20 (--inject-fault sigkill@20)"
launch_four killed --inject-fault sigkill@20
python3 - "$out" <<'EOF' || status=1
import sys
out = sys.argv[1]
rc = {r: open(f"{out}/rc-killed-{r}").read().split() for r in range(4)}
died = float(rc[3][1])
print("| rank | exit status | exit after rank 3's death | its last line on stderr |")
print("|---|---|---|---|")
ok = int(rc[3][0]) == 137  # SIGKILL through timeout
for r in range(4):
    code, t = int(rc[r][0]), float(rc[r][1])
    lines = [l.strip() for l in open(f"{out}/killed-{r}.log") if l.startswith("train:")]
    last = lines[-1] if lines else "-"
    print(f"| {r} | {code}{' (SIGKILL)' if code == 137 else ''} | {t - died:+.2f} s | {last} |")
    if r != 3 and (code == 0 or code == 137 or t - died > 30 or "rank 3 of 4" not in last): ok = False
print(f"every other rank non-zero within 30 s, naming rank 3: {'yes' if ok else 'NO'}")
sys.exit(0 if ok else 1)
EOF
exit $status
