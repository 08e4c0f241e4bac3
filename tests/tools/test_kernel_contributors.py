#!/usr/bin/env python3
"""bench/kernel_contributors.py over a made kernels.csv: serial is left out, each other mode names
every job's step alone and shared and its largest (job, class) growths, largest first, with what the
class does alone; --top cuts them; a path that is no kernels.csv, a row that is not a number and a
--top below 1 exit 2. Exit 0 passed, 1 failed."""
import csv
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks

SCRIPT = os.path.join(HERE, "..", "bench", "kernel_contributors.py")
check = Checks("test_kernel_contributors")
COLUMNS = ["mode", "job", "label", "level", "class", "layer", "pass", "alone_ms", "shared_ms", "delta_ms",
           "share_of_slowdown", "alone_gflop", "alone_mbytes", "intensity", "ridge", "bound",
           "alone_dram_fraction", "alone_flop_fraction", "alone_source", "measurement"]


def row(mode, job, label, level, cls, alone, shared, dram="", bound=""):
    return {"mode": mode, "job": job, "label": label, "level": level, "class": cls, "alone_ms": alone,
            "shared_ms": shared, "delta_ms": f"{shared - alone:.4f}", "alone_dram_fraction": dram, "bound": bound,
            "alone_source": "self", "measurement": "traced"}


def write(folder, rows):
    os.makedirs(folder)
    with open(os.path.join(folder, "kernels.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return folder


with tempfile.TemporaryDirectory() as tmp:
    run = write(os.path.join(tmp, "run"), [
        row("serial", 0, "S", "step", "step", 1.5, 1.5),
        row("mps", 0, "S", "step", "step", 1.5, 5.0),
        row("mps", 0, "S", "class", "batchnorm", 0.5, 1.7, "0.8", "memory"),
        row("mps", 0, "S", "class", "waiting_others", 0.0, 1.5),
        row("mps", 0, "S", "class", "optimizer", 0.2, 0.1, "1.2", "neither"),
        row("mps", 1, "M", "step", "step", 4.5, 10.0),
        row("mps", 1, "M", "class", "conv_wgrad", 1.0, 3.0, "0.1", "neither"),
        row("mps", 1, "M", "class", "gemm", 0.1, 0.2, "1.3", "memory"),
    ])
    p = subprocess.run([sys.executable, SCRIPT, run], capture_output=True, text=True)
    top2 = subprocess.run([sys.executable, SCRIPT, os.path.join(run, "kernels.csv"), "--top", "2"],
                          capture_output=True, text=True)
    bad_row = write(os.path.join(tmp, "bad"), [row("mps", 0, "S", "step", "step", 1.5, float("inf"))])
    bad = subprocess.run([sys.executable, SCRIPT, bad_row], capture_output=True, text=True)
    none = subprocess.run([sys.executable, SCRIPT, tmp], capture_output=True, text=True)
    zero = subprocess.run([sys.executable, SCRIPT, run, "--top", "0"], capture_output=True, text=True)

check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
lines = p.stdout.splitlines()
check(len(lines) == 2 and lines[0].endswith("kernels.csv:") and "serial" not in p.stdout, f"one mode, serial out: {lines}")
mps = lines[1] if len(lines) > 1 else ""
check(mps.startswith("- under MPS: steps S 1.50 -> 5.00 ms, M 4.50 -> 10.00 ms; largest contributors: "), mps)
# largest first: M's weight gradient +2.00, S's batch norm +1.20, S's waiting +1.50 between them
order = [mps.find(w) for w in ("convolution weight gradient +2.00", "waiting while other jobs' kernels ran +1.50",
                               "batch norm +1.20", "GEMM +0.10")]
check(all(i > 0 for i in order) and order == sorted(order), f"largest first: {order} in {mps}")
check("optimizer" not in mps, f"a class that shrank is no contributor: {mps}")
check("batch norm +1.20 ms, which alone moves its bytes at 80% of the DRAM bandwidth (memory-bound)" in mps, mps)
check("weight gradient +2.00 ms, which alone moves its bytes at 10% of the DRAM bandwidth (below both roofs: "
      "neither compute- nor memory-bound)" in mps, mps)
check("GEMM +0.10 ms, which alone moves its bytes at 130% of the DRAM bandwidth (more than DRAM could: part of "
      "them came from L2) (memory-bound)" in mps, mps)
check(mps.endswith("(traced)."), mps)
two = top2.stdout.splitlines()[1] if len(top2.stdout.splitlines()) > 1 else ""
check(top2.returncode == 0 and "weight gradient" in two and "waiting" in two and "batch norm" not in two,
      f"--top 2: {top2.returncode} {two}")
check(bad.returncode == 2 and "is not a finite number" in bad.stderr and not bad.stdout, f"a bad row: {bad.returncode} {bad.stderr}")
check(none.returncode == 2 and "expected a run folder with kernels.csv" in none.stderr, f"no kernels.csv: {none.stderr}")
check(zero.returncode == 2 and "--top" in zero.stderr, f"--top 0: {zero.returncode} {zero.stderr}")
check.finish()
