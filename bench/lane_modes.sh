#!/usr/bin/env bash
# The weight-gradient lane (models/core/wgrad_lane.h) under each sharing mode: the same mix with
# the lane asked for and with SUITE_WGRAD_LANE=0, alternating, optionally under several
# CUDA_DEVICE_MAX_CONNECTIONS values (the hardware work queues a process's streams share), then one
# table of aggregate samples/s (the timed epochs' sum: the mix is one workload) and lane on / off.
#   bench/lane_modes.sh BUILD_DIR OUT_DIR [MIX] [STEPS] [MODES] [CONNECTIONS]
#   defaults: '7*S' 300 'naive mps streams green' 'default'
set -u
build=${1:?build folder}
out=${2:?output folder}
mix=${3:-7*S}
steps=${4:-300}
modes=${5:-naive mps streams green}
conns=${6:-default}
mkdir -p "$out"
table="$out/lane.tsv"
printf 'mode\tconnections\tlane\tsamples_per_s\tlane_in_effect\n' >"$table"
for mode in $modes; do
    for conn in $conns; do
        for lane in 1 0; do
            dir="$out/$mode-c$conn-lane$lane"
            envs=(SUITE_WGRAD_LANE=$lane)
            [ "$conn" != default ] && envs+=(CUDA_DEVICE_MAX_CONNECTIONS=$conn)
            env "${envs[@]}" "$build/run_suite" --mode "$mode" --mix "$mix" --steps-per-epoch "$steps" \
                --results "$dir" >"$dir.log" 2>&1 || { echo "$mode $conn lane=$lane failed:"; tail -5 "$dir.log"; }
            csv=$(ls "$dir"/*/jobs.csv 2>/dev/null | head -1)
            rate=$(awk -F, 'NR == 1 {for (i = 1; i <= NF; i++) if ($i == "timed_samples_per_s") c = i; next}
                            {s += $c} END {printf "%.0f", s}' "$csv" 2>/dev/null)
            effect=$(grep -ho '"wgrad_lane":[a-z0-9]*' "$dir"/*/job-*.log 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')
            printf '%s\t%s\t%s\t%s\t%s\n' "$mode" "$conn" "$lane" "${rate:-nan}" "${effect:--}" >>"$table"
        done
    done
done
python3 - "$table" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
print("| mode | CUDA_DEVICE_MAX_CONNECTIONS | lane on, samples/s | lane off, samples/s | on / off |")
print("|---|---|---|---|---|")
for r in rows:
    if r["lane"] != "1":
        continue
    off = next((o for o in rows if o["mode"] == r["mode"] and o["connections"] == r["connections"] and o["lane"] == "0"), None)
    on_v, off_v = float(r["samples_per_s"]), float(off["samples_per_s"]) if off else float("nan")
    print(f"| {r['mode']} | {r['connections']} | {on_v:,.0f} | {off_v:,.0f} | {on_v / off_v:.3f} |")
PY
