"""The step-time figure of the report: each job's empirical CDF of step times per mode (steps.csv),
the interference signal a per-job median hides."""
import math

from report_data import group_repeats, mode_key
from report_figures import render

STEP_P99_MIN = 500  # a p99 of fewer steps is the slowest few steps' time, not a tail
CDF_POINTS = 500    # a curve is drawn through this many points at most (a window holds thousands)


def rank_quantile(ordered, num, den):
    """The jobs' own quantile rule (runner/train/step_window.c): the value at rank n * num / den."""
    return ordered[len(ordered) * num // den]


def cdf_points(ordered):
    """The empirical CDF of sorted values through at most CDF_POINTS points evenly spaced in rank,
    the fastest and the slowest included: ([x], [share of the values <= x])."""
    n = len(ordered)
    ranks = range(n) if n <= CDF_POINTS else sorted({round(k * (n - 1) / (CDF_POINTS - 1)) for k in range(CDF_POINTS)})
    return [ordered[i] for i in ranks], [(i + 1) / n for i in ranks]


def pooled_steps(g, i):
    """Job i's step times over the cell's repeats (RunGroup), pooled."""
    return [v for r in g.runs if r.steps for v in r.steps.get(i, [])]


def figure_step_cdf(plt, runs):
    """Each job's step-time distribution per cell (mode and degree), one panel each: its empirical
    CDF, p50 marked, p99 where it has STEP_P99_MIN steps or more, n in the legend; the steps of a
    cell's repeats pooled. The tail a median hides: one job's steps slowed by another's. None
    where no run has steps.csv."""
    cells = sorted([g for g in group_repeats(runs) if any(r.steps for r in g.runs)],
                   key=lambda g: (g.degree, mode_key(g.mode)))
    if not cells:
        return None
    steps = [[sorted(pooled_steps(g, i)) for i in range(g.degree)] for g in cells]
    cols = 2 if len(cells) == 4 else min(3, len(cells))
    rows = math.ceil(len(cells) / cols)
    # each panel its own x range: on one axis for all, a cell's curves are vertical lines and the
    # tails, what the figure is for, vanish (p50 and p99 are in each legend to compare across)
    fig, axes = plt.subplots(rows, cols, figsize=(3.9 * cols + 0.6, 2.9 * rows + 0.5), sharey=True, squeeze=False)
    cmap = plt.get_cmap("tab10")
    several = len({g.degree for g in cells}) > 1
    any_log = False
    for k, ax in enumerate(axes.flat):
        if k >= len(cells):
            fig.delaxes(ax)
            continue
        g = cells[k]
        ax.set_title(g.mode + (f" x{g.degree}" if several else "") + (f" ({g.n} repeats pooled)" if g.n > 1 else ""),
                     loc="left", fontsize=9)
        for y in (0.5, 0.99):
            ax.axhline(y, color="#ddd", linewidth=0.6, zorder=0)
        handles, texts = [], []  # the lines keep their CSV names; the legend says n, p50 and p99
        for i, (name, ordered) in enumerate(zip(g.job_names(), steps[k])):
            if not ordered:
                continue
            colour = cmap(i % 10)
            xs, ys = cdf_points(ordered)
            handles += ax.plot(xs, ys, drawstyle="steps-post", color=colour, linewidth=1.1,
                               label=f"{name} (n={len(ordered)})")
            p50 = rank_quantile(ordered, 1, 2)
            text = f"{name} n={len(ordered)} p50 {p50:.2f}"
            ax.plot([p50], [0.5], marker="o", markersize=4, color=colour, linestyle="none", label=f"{name} p50")
            if len(ordered) >= STEP_P99_MIN:
                p99 = rank_quantile(ordered, 99, 100)
                text += f" p99 {p99:.2f}"
                ax.plot([p99], [0.99], marker="^", markersize=5, color=colour, linestyle="none", label=f"{name} p99")
            texts.append(text + " ms")
        ax.legend(handles, texts, fontsize=6.5, frameon=False, loc="lower right")
        times = [v for job in steps[k] for v in job if v > 0]
        if times and max(times) > 10 * min(times):  # a tail an order of magnitude out: 1, 2, 5 per decade
            any_log = True
            ax.set_xscale("log")
            ax.xaxis.set_major_locator(plt.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(plt.FormatStrFormatter("%g"))
            ax.xaxis.set_minor_formatter(plt.NullFormatter())
        elif times:
            pad = 0.05 * (max(times) - min(times)) or 0.05 * max(times)
            ax.set_xlim(min(times) - pad, max(times) + pad)
    axes.flat[0].set_ylim(0, 1.02)
    fig.supxlabel("step time (ms; each panel its own range" + (", log where a tail is 10x out)" if any_log else ")"),
                  fontsize=9)
    fig.supylabel("share of the job's steps", fontsize=9)
    fig.tight_layout()
    return render(fig)
