#!/usr/bin/env python3
"""The report's timelines draw the timed part wide (results/report_figures.py, figure_timeline):
where set-up (process start, cuDNN's search) or a serial job's set-up takes most of the run, it is
drawn compressed, hatched and labelled with its length, and the jobs' go to end (the common window,
the timed epoch) takes most of the width; where set-up is short the axis stays linear. Over
tests/fixtures/report_alone (3 s of set-up before about 1 s of training) and the short set-up of
tests/fixtures/report. Exit 0 passed, 1 failed (each failure printed), 77 without matplotlib."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks, require_matplotlib
require_matplotlib("test_report_timeline")
import report_figures  # noqa: E402
from report_data import Run  # noqa: E402

ALONE = os.path.join(HERE, "fixtures", "report_alone")
STUDY_RUN = os.path.join(HERE, "fixtures", "report", "20261124T152934Z-study-small", "S-x2-mps",
                         "20261124T152943Z-mps-2xS")
check = Checks("test_report_timeline")


def drawn(folder):
    """The run and its timeline figure, not rendered: its axes and their x transform."""
    run = Run(folder)
    report_figures.render = lambda fig: fig  # keep the figure to look at
    fig = report_figures.figure_timeline(report_figures.plt_module(), run)
    return run, fig


def share(ax, a, b):
    """The share of the axis' width that [a, b] (seconds since go) is drawn over."""
    f = ax.xaxis.get_transform().transform
    lo, hi = ax.get_xlim()
    return (f([b])[0] - f([a])[0]) / (f([hi])[0] - f([lo])[0])


def go_of(run):
    return min(j["go_t"] for j in run.jobs)


# the window measurement: 3 s of set-up, a 1 s common window
run, fig = drawn(os.path.join(ALONE, "tf32-serial-1xS-window"))
ax = fig.axes[0]
t0 = go_of(run)
(w0, w1), = run.windows()
check(share(ax, w0 - t0, w1 - t0) > 0.6, f"the common window is drawn over {share(ax, w0 - t0, w1 - t0):.2f} of the width")
# the stretch hidden: from the first sample to two samples (0.2 s) before go
check(any(t.get_text() == "set-up 2.8 s" for t in ax.texts), f"no 'set-up 2.8 s' in {[t.get_text() for t in ax.texts]}")
check(any(p.get_hatch() for p in ax.patches), "the compressed stretch is not hatched")
check(all(t >= -0.1 for t in fig.axes[-1].get_xticks()), f"a tick inside the set-up: {list(fig.axes[-1].get_xticks())}")
check("compressed" in fig.axes[-1].get_xlabel(), "the x label does not say what is compressed")
for a in fig.axes:  # every panel the same axis
    check(abs(share(a, w0 - t0, w1 - t0) - share(ax, w0 - t0, w1 - t0)) < 1e-9, "the panels' x axes differ")

# the completion measurement: the timed (second) epoch wide
run, fig = drawn(os.path.join(ALONE, "tf32-serial-1xS"))
t0, j = go_of(run), run.jobs[0]
timed = share(fig.axes[0], j["end_t"] - j["timed_seconds"] - t0, j["end_t"] - t0)
check(timed > 0.4, f"the timed epoch is drawn over {timed:.2f} of the width")

# serial: the second job's set-up, between the first one's end and its go, compressed too
run, fig = drawn(os.path.join(ALONE, "tf32-serial-2xS"))
t0, ax = go_of(run), fig.axes[0]
trained = sum(share(ax, j["go_t"] - t0, j["end_t"] - t0) for j in run.jobs)
check(trained > 0.7, f"the two jobs' go to end are drawn over {trained:.2f} of the width")
check(sum(t.get_text().startswith("set-up") for t in ax.texts) == 2, "not two set-up stretches labelled")

# a short set-up (the study's fixture): nothing compressed, the axis linear
run, fig = drawn(STUDY_RUN)
check(fig.axes[0].get_xscale() == "linear", f"a short set-up compressed: {fig.axes[0].get_xscale()} scale")
check(not any(p.get_hatch() for p in fig.axes[0].patches), "a short set-up hatched")

check.finish()
