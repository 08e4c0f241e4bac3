#!/usr/bin/env python3
"""bench/mix_windows.py over two made run folders: each run is the sum of its jobs' window rates,
shared against the first folder, with the step a job's rate moves in (batch / window length); a run
where a job has no window rate shows no share; no folder, or one that is no run, exits 2. Exit 0 passed, 1 failed."""
import csv
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks

SCRIPT = os.path.join(HERE, "..", "bench", "mix_windows.py")
check = Checks("test_mix_windows")


def make_run(root, name, mix, rates, steps, cores=True):
    folder = os.path.join(root, name)
    os.makedirs(folder)
    with open(os.path.join(folder, "summary.json"), "w") as f:
        json.dump({"mix": mix, "window_length_s": 10, "windows": 3, "aggregate_samples_per_s": 6000.4}, f)
    with open(os.path.join(folder, "jobs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, ["index", "batch", "peak_bytes", "window_samples_per_s", "window_steps",
                               "timed_cpu_cores"])
        w.writeheader()
        for k, (rate, step) in enumerate(zip(rates, steps)):
            w.writerow({"index": k, "batch": 256, "peak_bytes": 14 << 30, "window_samples_per_s": rate,
                        "window_steps": step, "timed_cpu_cores": 1.5 if cores else ""})
    return folder


with tempfile.TemporaryDirectory() as tmp:
    synthetic = make_run(tmp, "a", "4*M", [1664.0, 1664.0, 1638.4, 1664.0], [65, 65, 64, 65])
    jpeg = make_run(tmp, "b", "4*M[decode=gpu]", [1536.0, 1561.6, 1536.0, 1561.6], [60, 61, 60, 61], cores=False)
    broken = make_run(tmp, "c", "4*M[decode=gpu]", [1536.0, "", 1536.0, 1561.6], [60, "", 60, 61])
    p = subprocess.run([sys.executable, SCRIPT, synthetic, jpeg, broken], capture_output=True, text=True)
    none = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
    empty = subprocess.run([sys.executable, SCRIPT, synthetic, tmp], capture_output=True, text=True)
check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
lines = p.stdout.splitlines()
check(len(lines) == 3, f"a line a run: {lines}")
check(lines and lines[0].startswith("4*M: 6630 samples/s in 3 common windows of 10 s (100.0% of the first; "
                                    "a job's rate moves in steps of 26)"), f"the first run: {lines[:1]}")
check(len(lines) > 1 and "6195 samples/s" in lines[1] and "93.4% of the first" in lines[1], f"the second: {lines[1:2]}")
check(len(lines) > 1 and "steps a window 60, 61, 60, 61" in lines[1], f"steps: {lines[1:2]}")
check(lines and lines[0].endswith("; 6.0 CPU cores in all (the timed epochs)"), f"cores: {lines[:1]}")
check(len(lines) > 1 and "CPU cores" not in lines[1], f"no cores column, no cores: {lines[1:2]}")
check(len(lines) > 2 and "no common window" in lines[2] and lines[2].split(": ", 1)[1].startswith("-"),
      f"a job without a window: {lines[2:]}")
check(none.returncode == 2 and "usage" in none.stderr, f"no folder: {none.returncode} {none.stderr}")
check(empty.returncode == 2 and "not a run_suite run folder" in empty.stderr and not empty.stdout,
      f"a folder that is no run: {empty.returncode} {empty.stderr}")
check.finish()
