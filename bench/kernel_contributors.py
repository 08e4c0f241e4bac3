#!/usr/bin/env python3
"""The largest contributors to each job's slowdown, in words, from a run's kernel attribution
(run_suite --kernels writes kernels.csv; results/kernel_attribution.h defines its columns):

    bench/kernel_contributors.py RUN_DIR_OR_KERNELS_CSV [...] [--top 5]

For each mode but serial: every job's step alone and shared, then the TOP (job, class) pairs whose
time a step grew most, each with what the class does alone (its share of the DRAM bandwidth and
whether it is bound). The words are the report's (results/report_kernels.py); every figure is a
traced one, and says so."""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results"))
from report_checks import ReportError, read_csv  # noqa: E402
from report_kernels import CLASS_WORDS, MODE_WORDS, alone_words, num  # noqa: E402


def kernels_csv(path):
    """The kernels.csv a path names: the file itself or the one in a run folder (exit 2 otherwise)."""
    csv_path = os.path.join(path, "kernels.csv") if os.path.isdir(path) else path
    if os.path.basename(csv_path) != "kernels.csv" or not os.path.isfile(csv_path):
        print(f"kernel_contributors: {path}: expected a run folder with kernels.csv, or a file named kernels.csv",
              file=sys.stderr)
        sys.exit(2)
    return csv_path


def contributors(rows, top):
    """{mode: (steps, largest)}: steps [(label, alone, shared)] per job, largest the top (row, delta)
    class rows of any job with a positive delta, largest first."""
    out = {}
    for mode in dict.fromkeys(r["mode"] for r in rows):
        if mode == "serial":
            continue
        mine = [r for r in rows if r["mode"] == mode]
        steps = [(r["label"], num(r["alone_ms"]), num(r["shared_ms"])) for r in mine if r["level"] == "step"]
        grew = [(r, num(r["delta_ms"])) for r in mine if r["level"] == "class" and num(r["delta_ms"]) > 0]
        out[mode] = (steps, sorted(grew, key=lambda p: -p[1])[:top])
    return out


def describe(mode, steps, largest):
    """One line for a mode: the steps, then the contributors."""
    step_words = ", ".join(f"{label} {alone:.2f} -> {shared:.2f} ms" for label, alone, shared in steps
                           if not (math.isnan(alone) or math.isnan(shared)))
    parts = [f"{row['label']} (job {row['job']}) {CLASS_WORDS.get(row['class'], row['class'])} +{delta:.2f} ms"
             + alone_words(row) for row, delta in largest]
    return (f"- under {MODE_WORDS.get(mode, mode)}: steps {step_words or 'unknown'}; largest contributors: "
            + ("; ".join(parts) if parts else "none grew") + " (traced).")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="run folders (with kernels.csv) or kernels.csv files")
    ap.add_argument("--top", type=int, default=5, help="how many contributors a mode names (default 5)")
    args = ap.parse_args(argv)
    if args.top < 1:
        ap.error(f"--top: expected a whole number of at least 1, got {args.top}")
    for path in args.runs:
        csv_path = kernels_csv(path)
        try:
            rows = read_csv(csv_path)
        except ReportError as e:
            print(f"kernel_contributors: {e}", file=sys.stderr)
            return 2
        print(f"{csv_path}:")
        for mode, (steps, largest) in contributors(rows, args.top).items():
            print(describe(mode, steps, largest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
