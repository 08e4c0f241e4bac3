#!/usr/bin/env python3
"""What a run_suite run folder shows at a glance: for each mode, every job's timed window relative
to the first go (so overlap is visible), and the timeline downsampled to about --rows rows (SM
activity, memory, power, per-job memory, phase markers).
  bench/show_run.py RUN_DIR [--rows 25]"""
import argparse
import csv
import glob
import json
import os


def windows(summary_path):
    with open(summary_path) as f:
        s = json.load(f)
    jobs = s["jobs"]
    t0 = min((j["go_t"] for j in jobs if j.get("go_t")), default=None)
    print(f"[{s['mode']}] status {s['status']}, makespan {s.get('makespan_s')}, "
          f"aggregate samples/s {s.get('aggregate_samples_per_s')}")
    for j in jobs:
        mps = j.get("mps")
        if t0 is None or j.get("go_t") is None:
            print(f"  job {j['index']} {j['label']}: {j['status']} ({j['reason']})")
            continue
        print(f"  job {j['index']} {j['label']:<4} go +{j['go_t'] - t0:7.3f} s  end +{j['end_t'] - t0:7.3f} s  "
              f"timed {j.get('timed_seconds')} s  {j['status']}  mps={mps}")


def timeline(path, rows):
    with open(path) as f:
        data = list(csv.DictReader(f))
    if not data:
        return
    step = max(1, len(data) // rows)
    keep = [r for i, r in enumerate(data) if i % step == 0 or r["markers"]]
    jobs = [k for k in data[0] if k.startswith("job") and k.endswith("_mem_bytes")]
    print(f"  timeline {path}: {len(data)} samples; every {step}th and every marked one")
    print("    t(s)   sm_act%  occ%  dram%  util%   mem GiB  power W  " + "  ".join(j[:4] for j in jobs) + "  markers")
    t0 = float(data[0]["t"])

    def num(r, k, scale=1.0):
        return f"{float(r[k]) / scale:.1f}" if r.get(k) not in (None, "") else "-"

    for r in keep:
        print(f"  {float(r['t']) - t0:6.2f}  {num(r, 'sm_active_pct'):>7}  {num(r, 'sm_occupancy_pct'):>4}  "
              f"{num(r, 'dram_active_pct'):>5}  {num(r, 'util_gpu_pct'):>5}  {num(r, 'mem_used_bytes', 2**30):>8}  "
              f"{num(r, 'power_w'):>7}  " + "  ".join(f"{num(r, j, 2**30):>4}" for j in jobs) + f"  {r['markers']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--rows", type=int, default=25)
    ap.add_argument("--timeline", default="", help="comma-separated modes whose timeline to print")
    args = ap.parse_args()
    for path in sorted(glob.glob(os.path.join(args.run, "**", "summary.json"), recursive=True)):
        windows(path)
        mode_dir = os.path.dirname(path)
        tl = os.path.join(mode_dir, "timeline.csv")
        with open(path) as f:
            mode = json.load(f)["mode"]
        if os.path.exists(tl) and mode in args.timeline.split(","):
            timeline(tl, args.rows)


if __name__ == "__main__":
    main()
