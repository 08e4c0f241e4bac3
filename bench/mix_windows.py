#!/usr/bin/env python3
"""Several run_suite runs of the same shape side by side, each as the sum of its jobs' common-window
rates (jobs.csv's window_samples_per_s: the median over the windows) against the first run given,
with the CPU cores its jobs' processes used in their timed epochs where jobs.csv has them.
A job's window rate moves in whole steps (batch / window length), so the table says that step too:
two runs closer than it are not ranked.
usage: bench/mix_windows.py RUN_DIR [RUN_DIR ...]"""
import csv
import json
import os
import sys


def run_of(folder):
    with open(os.path.join(folder, "jobs.csv")) as f:
        jobs = list(csv.DictReader(f))
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    rates = [float(j["window_samples_per_s"]) for j in jobs if j.get("window_samples_per_s")]
    one_step = max((int(j["batch"]) / summary["window_length_s"] for j in jobs), default=0)
    cores = [float(j["timed_cpu_cores"]) for j in jobs if j.get("timed_cpu_cores")]
    return {"mix": summary["mix"], "window": sum(rates) if len(rates) == len(jobs) else None,
            "steps": [j.get("window_steps", "") for j in jobs], "one_step": one_step,
            "aggregate": summary.get("aggregate_samples_per_s"), "windows": summary.get("windows"),
            "length": summary["window_length_s"], "cores": sum(cores) if len(cores) == len(jobs) else None,
            "peak_gib": [round(int(j["peak_bytes"]) / 2**30, 2) for j in jobs if j.get("peak_bytes")]}


def main(folders):
    for f in folders:
        if not (os.path.isfile(os.path.join(f, "jobs.csv")) and os.path.isfile(os.path.join(f, "summary.json"))):
            print(f"mix_windows: {f}: not a run_suite run folder (expected jobs.csv and summary.json in it)",
                  file=sys.stderr)
            sys.exit(2)
    runs = [run_of(f) for f in folders]
    base = runs[0]["window"]
    for r in runs:
        share = f"{r['window'] / base:.1%} of the first" if r["window"] and base else "no common window"
        window = f"{r['window']:.0f}" if r["window"] else "-"
        print(f"{r['mix']}: {window} samples/s in {r['windows']} common windows of {r['length']:g} s ({share}; "
              f"a job's rate moves in steps of {r['one_step']:.0f}); steps a window {', '.join(r['steps'])}; "
              f"first go to last end {r['aggregate']:.0f}; peak a job {', '.join(map(str, r['peak_gib']))} GiB"
              + (f"; {r['cores']:.1f} CPU cores in all (the timed epochs)" if r["cores"] is not None else ""))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
