#!/usr/bin/env python3
"""The report's per-mix progress figure (results/report_figures.py, figure_mix_progress): for a
heterogeneous mix, every job's normalized progress per mode as run_suite wrote it, one labelled
bar each, and each mode's fairness and STP over it, so that a reader sees who pays for the
sharing. Over tests/fixtures/report's S+M+M run (--mode all, window measurement): the figure's
data (its CSV) holds each job's value from summary.json, the texts the summary's fairness and STP;
a uniform run gets no such figure. Exit 0 passed, 1 failed, 77 without matplotlib."""
import csv
import io
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks, require_matplotlib
require_matplotlib("test_report_mix_progress")
import report_figures  # noqa: E402
from report_data import load  # noqa: E402

MIX = os.path.join(HERE, "fixtures", "report", "20261125T201949Z-all-S+M+M")
UNIFORM = os.path.join(HERE, "fixtures", "report_window_alone")
check = Checks("test_report_mix_progress")


plt = report_figures.plt_module()
texts = []
keep = report_figures.render
report_figures.render = lambda fig: (texts.extend(t.get_text() for ax in fig.axes for t in ax.texts), keep(fig))[1]
runs, _, _, _ = load([MIX])
fig = report_figures.figure_mix_progress(plt, runs)
check(fig is not None, "no progress figure for S+M+M")
rows = list(csv.DictReader(io.StringIO(fig.csv))) if fig else []
bars = [r for r in rows if r["series"] != "alone"]
for mode in ("naive", "mps", "mig-emulate"):
    s = json.load(open(os.path.join(MIX, mode, "summary.json")))
    want = [j["normalized_throughput"] for j in s["jobs"]]
    got = [float(r["value"]) for r in bars if r["x_label"] == mode]
    check(len(got) == 3 and all(abs(a - b) < 1e-5 for a, b in zip(got, want)), f"{mode}: bars {got} != {want}")
    names = [r["series"].split(" (")[0] for r in bars if r["x_label"] == mode]
    check(names == ["S", "M#1", "M#2"], f"{mode}: jobs labelled {names}")
    check(f"fairness {s['fairness']:.2f}\nSTP {s['stp']:.2f}" in texts, f"{mode}: fairness/STP text not in {texts}")
check(not any(r["x_label"] == "serial" for r in bars), "serial drawn: it is the reference")
check(any(r["series"] == "alone" and float(r["value"]) == 1.0 for r in rows), "no line at 1 (alone)")
runs, _, _, _ = load([UNIFORM])
check(report_figures.figure_mix_progress(plt, runs) is None, "a uniform run got a per-mix figure")
check.finish()
