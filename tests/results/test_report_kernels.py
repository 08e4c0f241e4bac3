#!/usr/bin/env python3
"""The report's kernel attribution (results/report_kernels.py) over a copy of tests/fixtures/report's
S+M+M run (--mode all) given kernels.csv and interference.csv as run_suite --kernels writes them
(results/kernel_attribution.h): the stacked bars of each job's step by class, alone next to each
mode, hold the files' ms per step (read back from the figure's CSV); the heat map holds the matrix's
"all" cells; the sentence names the job whose step grew most, its largest class with what that class
does alone, and says traced; a run without the files has no such figure; a bad value (negative time,
nan) in kernels.csv is refused naming the file, row and column (exit 2), while a negative difference
is read. Exit 0 passed, 1 failed, 77 without matplotlib."""
import contextlib
import csv
import io
import os
import sys
import shutil
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks, require_matplotlib
require_matplotlib("test_report_kernels")
import report  # noqa: E402
import report_figures  # noqa: E402
import report_kernels  # noqa: E402
from report_data import load  # noqa: E402

MIX = os.path.join(HERE, "fixtures", "report", "20261125T201949Z-all-S+M+M")
check = Checks("test_report_kernels")
HEADER = ["mode", "job", "label", "level", "class", "layer", "pass", "alone_ms", "shared_ms", "delta_ms",
          "share_of_slowdown", "alone_gflop", "alone_mbytes", "intensity", "ridge", "bound", "alone_dram_fraction",
          "alone_flop_fraction", "alone_source", "measurement"]
# (class, alone ms, shared ms, alone DRAM share, bound) per job: S, M, M
CLASSES = {0: [("conv_fwd", 1.5, 2.0, 0.3, "compute"), ("batchnorm", 0.8, 1.9, 0.8, "memory"),
               ("waiting_others", 0.0, 0.9, "", ""), ("waiting_idle", 0.7, 0.2, "", "")],
           1: [("conv_fwd", 6.0, 7.0, 0.25, "compute"), ("batchnorm", 3.0, 3.6, 0.78, "memory"),
               ("waiting_idle", 1.0, 0.8, "", "")],
           2: [("conv_fwd", 6.0, 7.1, 0.25, "compute"), ("batchnorm", 3.0, 3.5, 0.78, "memory"),
               ("waiting_idle", 1.0, 0.9, "", "")]}
LABELS = ["S", "M", "M"]


def write_kernels(folder, mode, shared=True, in_partition=None):
    """in_partition: the factor by which each job is slower alone in its partition than on the whole
    GPU (a partitioned mode's alone_source), None for a mode compared with the serial run."""
    with open(os.path.join(folder, "kernels.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, HEADER)
        w.writeheader()
        for job, rows in CLASSES.items():
            if in_partition:
                rows = [(cls, a * in_partition, s * in_partition, dram, bound) for cls, a, s, dram, bound in rows]
            alone = sum(a for _, a, _, _, _ in rows)
            here = sum(s for _, _, s, _, _ in rows) if shared else alone
            base = {"mode": mode, "job": job, "label": LABELS[job], "alone_source": "partition" if in_partition else "serial",
                    "measurement": "traced"}
            w.writerow({**base, "level": "step", "class": "step", "alone_ms": alone, "shared_ms": here,
                        "delta_ms": f"{here - alone:.4f}", "share_of_slowdown": 1})
            for cls, a, s, dram, bound in rows:
                s = s if shared else a
                w.writerow({**base, "level": "class", "class": cls, "alone_ms": a, "shared_ms": s,
                            "delta_ms": f"{s - a:.4f}", "alone_dram_fraction": dram, "bound": bound,
                            "share_of_slowdown": f"{(s - a) / (here - alone):.4f}" if here != alone else ""})
    with open(os.path.join(folder, "interference.csv"), "w") as f:
        f.write("mode,job,label,class,beside,slowdown,overlap_ms,measurement\n")
        if shared:
            f.write(f"{mode},0,S,batchnorm,conv_fwd,2.3,10.5,traced\n{mode},all,,batchnorm,conv_fwd,1.9,30.5,traced\n"
                    f"{mode},all,,conv_fwd,batchnorm,1.2,20.0,traced\n{mode},all,,conv_fwd,none,1.01,5.0,traced\n")


plt = report_figures.plt_module()
with tempfile.TemporaryDirectory() as tmp:
    run = os.path.join(tmp, "all")
    shutil.copytree(MIX, run)
    write_kernels(os.path.join(run, "serial"), "serial", shared=False)
    write_kernels(os.path.join(run, "mps"), "mps")
    write_kernels(os.path.join(run, "mig-emulate"), "mig-emulate", in_partition=2.0)
    runs, _, _, _ = load([run])
    cells = report_kernels.traced_cells(runs)
    check([g.mode for g, _, _, _ in cells] == ["serial", "mps", "mig-emulate"],
          f"traced cells: {[g.mode for g, _, _, _ in cells]}")
    fig = report_kernels.figure_steps_by_class(plt, cells)
    rows = list(csv.DictReader(io.StringIO(fig.csv))) if fig else []
    for job, label in enumerate(LABELS):
        for cls, a, s, _, _ in CLASSES[job]:
            series = report_kernels.CLASS_WORDS[cls]
            # a partitioned mode next to the job alone in its partition, the reference of its slowdown there
            name = f"{label}#{job}"  # the job as the other figures name it
            for where, want in ((f"{name} alone", a), (f"{name} mps", s), (f"{name} mig-emulate alone", 2 * a),
                                (f"{name} mig-emulate", 2 * s)):
                got = [float(r["value"]) for r in rows if r["series"] == series and r["x_label"] == where]
                check(want in got, f"{where}, {cls}: bars {got}, expected {want}")
    check(not [r for r in rows if r["x_label"].endswith(" serial")], "a serial run is the alone bar, not a mode's")
    check(not [r for r in rows if r["x_label"].endswith(" mps alone")], "a mode compared with serial has no alone bar")
    check(any("(traced)" in r["panel"] for r in rows), "the figure's axis says traced")
    heat = report_kernels.figure_interference(plt, cells)
    check(heat is not None and "mps,batchnorm,conv_fwd,1.9000" in heat.csv and "mps,conv_fwd,none,1.0100" in heat.csv,
          f"the heat map's cells are the 'all' rows: {heat.csv if heat else None}")
    said = report_kernels.sentence("mps", cells[1][2])
    check(said == "under MPS, S's step grows 2.00 ms; 1.10 ms of it is batch norm, which alone moves its bytes at 80% of the DRAM "
                  "bandwidth (memory-bound), then 0.90 ms of waiting while other jobs' kernels ran (traced).", said)
    page, figures = report.build([run], "")
    ids = [f[0] for f in figures]
    check(sum(i.startswith("fig-kernels-") for i in ids) == 1 and sum(i.startswith("fig-interference-") for i in ids) == 1,
          f"one stacked bar and one heat map: {ids}")
    check("Under MPS, S&#x27;s step grows 2.00 ms" in page, "the sentence is on the page")
    # no files, no figure
    bare = os.path.join(tmp, "bare")
    shutil.copytree(MIX, bare)
    _, figures = report.build([bare], "")
    check(not [f for f in figures if f[0].startswith(("fig-kernels-", "fig-interference-"))], "no files, no figure")
    # bad values are refused with their place; a negative difference is read
    for bad, where in (("-0.5", "alone_ms"), ("nan", "shared_ms")):
        write_kernels(os.path.join(run, "mps"), "mps")
        with open(os.path.join(run, "mps", "kernels.csv"), newline="") as f:
            table = list(csv.DictReader(f))
        table[1][where] = bad
        with open(os.path.join(run, "mps", "kernels.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, HEADER)
            w.writeheader()
            w.writerows(table)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status = report.main([run, "-o", os.path.join(tmp, "page.html")])
        check(status == 2 and "kernels.csv: row 3, column '" + where + "'" in err.getvalue(),
              f"{bad} in {where}: exit {status}, {err.getvalue()}")
check.finish()
