#!/usr/bin/env python3
"""The report's step-time distributions (results/report_steps.py, figure_step_cdf): each job's
empirical CDF of its step times (steps.csv) per mode, p50 marked, p99 only from 500 steps on, n in
the legend, a cell's repeats pooled. Over tests/fixtures/report's S+M+M run (--mode all, window
measurement, a steps.csv per mode) and copies of its naive run: the figure's CSV holds points of
each job's own CDF and its quantiles; a job of 499 steps gets no p99, one of 1200 does; a folder
without steps.csv still renders (no figure, one note); a bad step time (nan, inf, 1e308, negative)
is refused naming the file, row and column (exit 2). Exit 0 passed, 1 failed, 77 without
matplotlib."""
import contextlib
import csv
import io
import os
import sys
import shutil
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks, require_matplotlib
require_matplotlib("test_report_step_cdf")
import report  # noqa: E402
import report_figures  # noqa: E402
import report_steps  # noqa: E402
from report_data import load  # noqa: E402

MIX = os.path.join(HERE, "fixtures", "report", "20261125T201949Z-all-S+M+M")
check = Checks("test_report_step_cdf")


def steps_of(folder):
    """steps.csv's times per job, as written."""
    out = {}
    with open(os.path.join(folder, "steps.csv"), encoding="utf-8") as f:
        for row in csv.DictReader(f):
            out.setdefault(int(row["job"]), []).append(float(row["ms"]))
    return out


def figure_rows(folders):
    runs, _, _, _ = load(folders)
    fig = report_steps.figure_step_cdf(plt, runs)
    return list(csv.DictReader(io.StringIO(fig.csv))) if fig else None


def check_job(rows, panel, name, times, what):
    """The CSV's curve, p50 and p99 of one job against its step times."""
    ordered, n = sorted(times), len(times)
    curve = [r for r in rows if r["panel"] == panel and r["series"] == f"{name} (n={n})"]
    check(0 < len(curve) <= report_steps.CDF_POINTS, f"{what}: {len(curve)} curve points for {n} steps")
    for r in curve:  # each point is the CDF's: the step at rank i has i + 1 of n steps at or below it
        i = round(float(r["value"]) * n) - 1
        check(0 <= i < n and abs(ordered[i] - float(r["x"])) < 1e-6 * ordered[i] + 1e-9,
              f"{what}: point {r['x']}, {r['value']} is not on the CDF")
    check(bool(curve) and float(curve[-1]["x"]) == ordered[-1] and float(curve[-1]["value"]) == 1.0,
          f"{what}: the slowest step is not drawn")
    p50 = [float(r["x"]) for r in rows if r["panel"] == panel and r["series"] == f"{name} p50"]
    check(p50 == [ordered[n // 2]], f"{what}: p50 {p50}, expected {ordered[n // 2]}")
    p99 = [float(r["x"]) for r in rows if r["panel"] == panel and r["series"] == f"{name} p99"]
    want = [ordered[n * 99 // 100]] if n >= report_steps.STEP_P99_MIN else []
    check(p99 == want, f"{what}: p99 {p99}, expected {want} ({n} steps)")


def write_steps(folder, jobs):
    """A steps.csv of one window with these times per job."""
    with open(os.path.join(folder, "steps.csv"), "w", encoding="utf-8") as f:
        f.write("job,label,window,epoch,step,ms\n")
        for job, times in jobs.items():
            f.writelines(f"{job},X,0,,{k + 1},{v:.3f}\n" for k, v in enumerate(times))


plt = report_figures.plt_module()
# the fixture: one panel per mode, each job's curve and p50, no p99 (a 1 s window: 15 to 33 steps)
rows = figure_rows([MIX])
check(rows is not None, "no step-time figure for S+M+M")
for mode in ("serial", "naive", "mps", "mig-emulate"):
    for job, times in steps_of(os.path.join(MIX, mode)).items():
        check_job(rows or [], mode, ["S", "M#1", "M#2"][job], times, f"{mode} job {job}")

with tempfile.TemporaryDirectory() as tmp:
    # a job of 1200 steps (with a slow tail) gets its p99, one of 499 does not, one without steps no curve
    run = os.path.join(tmp, "big")
    shutil.copytree(os.path.join(MIX, "naive"), run)
    big = [30.0 + (k % 97) / 10 for k in range(1188)] + [300.0 + k for k in range(12)]
    small = [round(60.0 + (k % 13) / 7, 3) for k in range(499)]  # as steps.csv holds them
    write_steps(run, {0: big, 1: small})
    rows = figure_rows([run])
    check_job(rows, "naive", "S", big, "1200 steps")
    check_job(rows, "naive", "M#1", small, "499 steps")
    check(not any(r["series"].startswith("M#2") for r in rows), "a job without steps has a curve")
    # repeats of one cell: pooled, and said so
    for k in (1, 2):
        shutil.copytree(run, os.path.join(tmp, "repeats", f"repeat-{k}"))
    rows = figure_rows([os.path.join(tmp, "repeats")])
    check_job(rows, "naive (2 repeats pooled)", "S", big + big, "two repeats")
    # a folder from before steps.csv: the page renders, without the figure, with one note
    os.remove(os.path.join(run, "steps.csv"))
    page, figures = report.build([run], "")
    check(not any(f[0].startswith("fig-steps") for f in figures), "a step-time figure without steps.csv")
    check("no steps.csv" in page, "no note that the folder has no steps.csv")
    page, figures = report.build([MIX], "")
    check(sum(f[0].startswith("fig-steps") for f in figures) == 1, "the page has no step-time figure")
    check("step-time CDF" in page, "no glossary line for the step-time CDF")
    # a bad time is refused naming its place: exit 2
    for value in ("nan", "inf", "1e308", "-1.5", ""):
        write_steps(run, {0: big[:3]})
        path = os.path.join(run, "steps.csv")
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        lines[2] = lines[2].rsplit(",", 1)[0] + "," + value
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            rc = report.main([run, "-o", os.path.join(tmp, "page.html")])
        want = f"{path}: row 3, column 'ms'"
        check(rc == 2 and want in err.getvalue(), f"ms = {value!r}: exit {rc}, {err.getvalue().strip()!r}")
check.finish()
