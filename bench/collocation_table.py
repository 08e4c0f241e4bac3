#!/usr/bin/env python3
"""Table of a collocation sweep (bench/collocation.sh): per mode and mix, the aggregate samples/s
of the jobs' overlapping timed epochs (sum of each job's timed-epoch rate, and total timed samples
over the span from the first job's timed start to the last one's end) against one job alone."""
import glob
import json
import os
import sys


def load(out):
    runs = {}
    for path in glob.glob(os.path.join(out, "*", "**", "summary.json"), recursive=True):
        name = os.path.relpath(path, out).split(os.sep)[0]
        mode, mix = name.split("-", 1)
        with open(path) as f:
            runs[(mode, mix.replace("x", "*"))] = json.load(f)
    return runs


def main():
    out = sys.argv[1]
    runs = load(out)
    print("| mode | mix | jobs ok | per-job samples/s (median) | aggregate samples/s (sum of rates) "
          "| vs one job | timed span samples/s | peak GPU memory GiB |")
    print("|---|---|---|---|---|---|---|---|")
    for mode in ("naive", "mps"):
        for family in ("S", "M"):
            solo = runs.get((mode, family))
            solo_rate = solo["timed_samples_per_s_sum"] if solo else None
            for n in (1, 2, 3, 4, 7):
                mix = family if n == 1 else f"{n}*{family}"
                s = runs.get((mode, mix))
                if not s:
                    continue
                rates = sorted(j["timed_samples_per_s"] for j in s["jobs"] if j.get("timed_samples_per_s"))
                agg = s.get("timed_samples_per_s_sum")
                ratio = agg / solo_rate if agg and solo_rate else float("nan")
                span = s.get("aggregate_samples_per_s") or float("nan")
                mem = (s.get("peak_gpu_memory_bytes") or float("nan")) / 2**30
                med = rates[len(rates) // 2] if rates else float("nan")
                print(f"| {mode} | {mix} | {s['jobs_ok']}/{len(s['jobs'])} | {med:.0f} | {agg or float('nan'):.0f} "
                      f"| {ratio:.2f}x | {span:.0f} | {mem:.1f} |")


if __name__ == "__main__":
    main()
