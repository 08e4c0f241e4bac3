#!/usr/bin/env python3
"""One job's kernel times traced in place (train --kernels) against ncu's (bench/kernel_breakdown.py).

Both sides' kernels are sorted into kernel_breakdown.py's kinds by their names, so the comparison
does not rest on the trace's own classes; per kind, ms a step from the trace (its kernels' total
over its steps) and from ncu (one profiled step, kernels serialised), and the difference. Then the
trace's own classes (ms a step, share) and its step against the sum of its kernels.

usage: trace_check.py PREFIX.kernels.csv NCU.csv [--step-ms X]
"""
import argparse
import csv
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_breakdown  # noqa: E402


def read_trace(path):
    header, rows = {}, []
    with open(path, newline="") as f:
        lines = []
        for line in f:
            if line.startswith("# "):
                key, _, value = line[2:].rstrip("\n").partition("=")
                header[key] = value
            else:
                lines.append(line)
    rows = list(csv.DictReader(lines))
    if not rows or "total_ns" not in rows[0]:
        kernel_breakdown.fail(f"{path}: no kernel rows (expected train --kernels' PREFIX.kernels.csv)")
    return header, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("ncu")
    ap.add_argument("--step-ms", type=float, help="the untraced job's median step")
    args = ap.parse_args()
    header, rows = read_trace(args.trace)
    steps = int(header.get("steps", "0") or 0)
    if steps < 1:
        kernel_breakdown.fail(f"{args.trace}: no steps in its window")
    traced = defaultdict(float)
    classes = defaultdict(float)
    for r in rows:
        ms = float(r["total_ns"]) / 1e6 / steps
        traced[kernel_breakdown.kind_of(r["kernel"])] += ms
        classes[r["class"]] += ms
    ncu = defaultdict(float)
    for name, ms in kernel_breakdown.read_rows(args.ncu):
        ncu[kernel_breakdown.kind_of(name)] += ms
    kinds = sorted(set(traced) | set(ncu), key=lambda k: -max(traced[k], ncu[k]))
    print(f"{'kind (kernel_breakdown.py)':<32} {'traced ms':>10} {'ncu ms':>10} {'traced-ncu':>11}")
    for k in kinds:
        print(f"{k:<32} {traced[k]:>10.3f} {ncu[k]:>10.3f} {traced[k] - ncu[k]:>+11.3f}")
    t_all, n_all = sum(traced.values()), sum(ncu.values())
    print(f"{'all kernels':<32} {t_all:>10.3f} {n_all:>10.3f} {t_all - n_all:>+11.3f} "
          f"({100 * (t_all / n_all - 1) if n_all else float('nan'):+.1f}%)")
    print()
    print(f"{'class (trace)':<14} {'ms a step':>10} {'share':>7}")
    for c, ms in sorted(classes.items(), key=lambda kv: -kv[1]):
        print(f"{c:<14} {ms:>10.3f} {100 * ms / t_all:>6.1f}%")
    step = float(header.get("step_ms", "0") or 0)
    print(f"traced step median {step:.3f} ms, its kernels {t_all:.3f} ms (overlapping kernels count each)"
          + (f"; untraced step {args.step_ms:.3f} ms ({100 * (step / args.step_ms - 1):+.1f}%)" if args.step_ms else ""))


if __name__ == "__main__":
    main()
