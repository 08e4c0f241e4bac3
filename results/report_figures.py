"""The report's figures (matplotlib, drawn off-screen into SVG data: URIs, each with its data as CSV)."""
import base64
import csv
import io
import math

from report_data import GIB, MODE_COLOURS, NAN, Cell, RunGroup, Spread, finite, group_repeats, is_num, mode_key, num, precision_rows, short_workload

PRECISION_COLOURS = {"tf32": "#4c72b0", "bf16": "#dd8452"}

class Rendered:
    """A drawn figure: its SVG as a data: URI, and the numbers it draws as CSV."""

    def __init__(self, src, csv_text):
        self.src, self.csv = src, csv_text


def figure_data(fig):
    """The numbers a figure draws, read back from its artists so that no figure can show what its
    CSV lacks: per panel each bar (x, its tick's label, height, bottom), each point drawn with
    whiskers (x, y, the whisker's ends) and each line's points."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["panel", "series", "x", "x_label", "value", "bottom", "min", "max"])
    for n, ax in enumerate(fig.axes):
        panel = ax.get_title(loc="left") or ax.get_title() or ax.get_ylabel() or f"panel {n + 1}"
        panel = f"{panel} [{ax.get_ylabel()}]" if ax.get_ylabel() and ax.get_ylabel() not in panel else panel
        ticks = {round(t, 6): lab.get_text().replace("\n", " ") for t, lab in zip(ax.get_xticks(), ax.get_xticklabels())}
        for c in ax.containers:
            data_line = c.lines[0] if c.__class__.__name__ == "ErrorbarContainer" else None
            if data_line is not None:  # points with whiskers (a bar's whiskers have no points: below)
                _, _, bar_lines = c.lines
                ends = [(seg[0][1], seg[1][1]) for seg in bar_lines[0].get_segments()] if c.has_yerr and bar_lines else []
                for k, (x, y) in enumerate(zip(data_line.get_xdata(), data_line.get_ydata())):
                    lo, hi = ends[k] if k < len(ends) else ("", "")
                    w.writerow([panel, c.get_label(), f"{x:.6g}", "", f"{y:.6g}", "",
                                f"{lo:.6g}" if lo != "" else "", f"{hi:.6g}" if hi != "" else ""])
                continue
            whiskers = []  # a bar's min-max over repeats (spread_bar's yerr): its errorbar segment
            eb = getattr(c, "errorbar", None)
            if eb is not None and eb.lines[2]:
                whiskers = [(seg[0][1], seg[1][1]) for seg in eb.lines[2][0].get_segments()]
            for k, bar in enumerate(getattr(c, "patches", [])):
                x = bar.get_x() + bar.get_width() / 2
                near = min(ticks, key=lambda t: abs(t - x)) if ticks else None
                lo, hi = whiskers[k] if k < len(whiskers) else ("", "")
                w.writerow([panel, c.get_label() if not c.get_label().startswith("_") else "bar", f"{x:.6g}",
                            ticks.get(near, "") if near is not None and abs(near - x) < 0.5 else "",
                            f"{bar.get_height():.6g}", f"{bar.get_y():.6g}",
                            f"{lo:.6g}" if lo != "" else "", f"{hi:.6g}" if hi != "" else ""])
        for line in ax.get_lines():
            label = line.get_label()
            if label.startswith("_"):
                continue  # markers and separators, not data
            for x, y in zip(line.get_xdata(), line.get_ydata()):
                w.writerow([panel, label, f"{x:.6g}", "", f"{y:.6g}", ""])
        for coll in ax.collections:  # stacked areas (memory per job)
            label = coll.get_label()
            if label.startswith("_") or not hasattr(coll, "get_paths"):
                continue
            w.writerow([panel, label, "", "", "(area: see the timeline's CSV columns in timeline.csv)", ""])
    return out.getvalue()


def render(fig):
    """The figure as SVG (text kept as text: smaller, sharp at any zoom, searchable) in a data:
    URI, so the page stays one file; and its data as CSV. """
    buf = io.BytesIO()
    data = figure_data(fig)
    fig.savefig(buf, format="svg", bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return Rendered("data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii"), data)


def plt_module():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
                         "svg.fonttype": "none", "svg.hashsalt": "report"})  # deterministic ids
    return plt


def slots_of(runs, cells):
    """Bars in the study's order: degree, then mode; repeats of a cell share one slot (RunGroup);
    refused cells keep their place."""
    items = [(g.degree, mode_key(g.mode), g.mode, g) for g in group_repeats(runs)] + \
            [(c.degree, mode_key(c.mode), c.mode, c) for c in cells]
    items.sort(key=lambda x: (x[0], x[1]))
    return items


def degree_separators(ax, slots):
    for k in range(1, len(slots)):
        if slots[k][0] != slots[k - 1][0]:
            ax.axvline(k - 0.5, color="#555", linestyle=":", linewidth=1)


def label_slots(ax, slots):
    ax.set_xticks(range(len(slots)))
    ax.set_xticklabels([s[2] + (f"\n(n={s[3].n})" if isinstance(s[3], RunGroup) and s[3].n > 1 else "")
                        for s in slots], rotation=45, ha="right")
    ax.set_xlim(-0.6, len(slots) - 0.4)
    top = ax.get_ylim()[1]
    seen = set()
    for k, s in enumerate(slots):
        if s[0] not in seen:
            seen.add(s[0])
            ax.text(k - 0.45, top, f"{s[0]} job{'s' if s[0] != 1 else ''}", va="bottom", fontsize=8, color="#333")


def spread_bar(ax, x, sp, width, colour, label=None, bottom=0.0):
    """One bar at the median of a Spread, with min-max whiskers where there are repeats, and the
    job's label on it; returns the bar's top."""
    if not sp.n:
        ax.text(x, 0, "x", ha="center", va="bottom", color="#a00", fontsize=7)
        return bottom
    err = [[sp.median - sp.min], [sp.max - sp.median]] if sp.n > 1 else None
    ax.bar(x, sp.median, width=width, bottom=bottom, color=colour, edgecolor="white", linewidth=0.4,
           label=f"{label or 'bar'} (n={sp.n})", yerr=err, ecolor="#222", capsize=2 if err else 0, error_kw={"linewidth": 0.8})
    if label:
        ax.text(x, bottom + sp.median / 2, label, ha="center", va="center", fontsize=6, rotation=90, color="white")
    return bottom + sp.median


def figure_uniform(plt, runs, cells):
    """Figures 2-4: (a) each job's speed past its warm-up, (b) SM activity, (c) memory after each
    job's own first epoch; each bar a cell, at the median of its repeats with min-max whiskers."""
    slots = slots_of(runs, cells)
    groups = [s[3] for s in slots if isinstance(s[3], RunGroup)]
    window = bool(groups) and all(g.window for g in groups)
    fig, axes = plt.subplots(3, 1, figsize=(max(7, 0.55 * len(slots) + 2), 8.6), sharex=False)
    ax_t, ax_sm, ax_mem = axes
    sm_name = None
    for k, (deg, _, mode, item) in enumerate(slots):
        colour = MODE_COLOURS.get(mode, "#444")
        if isinstance(item, Cell):
            for ax in axes:
                ax.text(k, 0, f" {item.status}", rotation=90, ha="center", va="bottom", fontsize=7, color="#a00")
            continue
        names = item.job_names()
        w = 0.8 / max(1, item.degree)
        for i in range(item.degree):
            if window:
                sp = item.job_spread(i, lambda r, i: r.job_rate(i))
            else:
                sp = item.job_spread(i, lambda r, i: r.timed_seconds()[i])
            spread_bar(ax_t, k - 0.4 + w * (i + 0.5), sp, w * 0.9, colour, names[i] if item.degree > 1 else None)
        sm = item.spread(lambda r: r.sm_activity()[0])
        if sm.n:
            spread_bar(ax_sm, k, sm, 0.6, colour)
            sm_name = sm_name or next((r.sm_activity()[1] for r in item.runs if r.sm_activity()[1]), None)
        if mode == "serial":  # one job at a time: the largest alone
            spread_bar(ax_mem, k, item.spread(lambda r: r.memory_after_epoch()[0] / GIB), 0.6, colour)
            continue
        bottom = 0.0
        for i in range(item.degree):
            sp = item.job_spread(i, lambda r, i: r.memory_after_epoch()[1][i] / GIB)
            if sp.n:
                bottom = spread_bar(ax_mem, k, sp, 0.6, colour, names[i] if item.degree > 1 else None, bottom=bottom)
    if window:
        ax_t.set_ylabel("samples/s")
        ax_t.set_title("(a) each job's samples/s over the common window, one labelled bar per job", loc="left",
                       fontsize=9, pad=14)
    else:
        ax_t.set_ylabel("timed epoch (s)")
        ax_t.set_title("(a) time per timed epoch, one labelled bar per job", loc="left", fontsize=9, pad=14)
    ax_sm.set_ylabel("%")
    ax_sm.set_ylim(0, 100)
    if not sm_name:  # an empty panel would read as 0 %
        ax_sm.text(0.5, 0.5, "not measured in these runs (no GPM or NVML utilisation)", transform=ax_sm.transAxes,
                   ha="center", va="center", fontsize=8, color="#777")
    ax_sm.set_title(f"(b) {sm_name or 'SM activity (not measured)'} over the " + ("common window" if window else "timed epochs"),
                    loc="left", fontsize=9, pad=14)
    ax_mem.set_ylabel("GiB")
    ax_mem.set_title("(c) memory after each job's own first epoch, stacked per job (serial: one job at a time, "
                     "the largest)", loc="left", fontsize=9, pad=14)
    for ax in axes:
        label_slots(ax, slots)
        degree_separators(ax, slots)
    fig.text(0.99, 0.003, "bars: median of the repeats, whiskers: min-max, n under the mode", ha="right",
             fontsize=7, color="#555")
    fig.tight_layout()
    return render(fig)


def figure_throughput(plt, runs, solo):
    """Aggregate throughput against the job alone (sum over jobs of solo/shared timed epoch)."""
    by_mode = {}
    for g in group_repeats(runs):  # one point per cell: the median of its repeats
        v = g.spread(lambda r: r.normalized_throughput(solo))
        if v.n:
            by_mode.setdefault(g.mode, []).append((g.degree, v.median))
    if len({d for pts in by_mode.values() for d, _ in pts}) < 2:
        return None  # one degree: a line of one point says no more than the table's STP
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    degrees = sorted({d for pts in by_mode.values() for d, _ in pts})
    for mode in sorted(by_mode, key=mode_key):
        pts = sorted(by_mode[mode])
        ax.plot([d for d, _ in pts], [v for _, v in pts], marker="o", color=MODE_COLOURS.get(mode, "#444"), label=mode)
    ax.plot(degrees, degrees, linestyle=":", color="#999", label="ideal (n x alone)")
    ax.set_xticks(degrees)
    ax.ticklabel_format(axis="y", useOffset=False)
    ax.set_xlabel("collocated jobs")
    ax.set_ylabel("throughput / one job alone")
    ax.legend(fontsize=8, frameon=False)
    fig.tight_layout()
    return render(fig)


def job_progress(r, i):
    """Job i's normalized progress as run_suite wrote it (its rate here over its rate alone: over
    the common window, or the timed epochs); NaN where the run has no alone reference."""
    return num(r.jobs[i].get("normalized_throughput")) if i < r.degree else NAN


def figure_mix_progress(plt, runs):
    """A heterogeneous mix, each mode: every job's normalized progress (1 = its speed alone), one
    labelled bar per job with min-max whiskers over repeats, and the mode's fairness (min / max
    progress) and STP above it: who pays for the sharing, which the sums hide. None where no
    collocated run has per-job references."""
    groups = [g for g in group_repeats(runs) if g.mode != "serial" and not g.uniform
              and any(not math.isnan(job_progress(r, 0)) for r in g.runs)]
    if not groups:
        return None
    groups.sort(key=lambda g: mode_key(g.mode))
    degree = max(g.degree for g in groups)
    fig, ax = plt.subplots(figsize=(max(6.5, 0.45 * degree * len(groups) + 2), 3.4))
    w = 0.8 / degree
    top = 1.0
    for k, g in enumerate(groups):
        names = g.job_names()
        for i in range(g.degree):
            sp = g.job_spread(i, job_progress)
            if sp.n:
                spread_bar(ax, k - 0.4 + w * (i + 0.5), sp, w * 0.9, MODE_COLOURS.get(g.mode, "#444"), names[i])
                top = max(top, sp.max)
        # over every job or not at all: a failed job's missing progress must not raise fairness
        every = lambda r: [job_progress(r, i) for i in range(r.degree)]  # noqa: E731
        fair = g.spread(lambda r: min(every(r)) / max(every(r)) if len(finite(every(r))) == r.degree else NAN)
        stp = g.spread(lambda r: sum(every(r)) if len(finite(every(r))) == r.degree else NAN)
        ax.text(k, top * 1.04, f"fairness {fair.format('{:.2f}')}\nSTP {stp.format('{:.2f}')}", ha="center",
                va="bottom", fontsize=7)
    ax.axhline(1.0, linestyle=":", color="#999", linewidth=1, label="alone")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g.mode for g in groups])
    ax.set_ylim(0, top * 1.3)
    ax.set_ylabel("progress / alone")
    ax.set_title("each job's normalized progress (its samples/s here over alone)", loc="left", fontsize=9)
    fig.tight_layout()
    return render(fig)


def measured(tl, col):
    """A column with a reading other than zero (the NVML stand-in and absent sensors write 0s)."""
    return tl.has(col) and any(v for v in finite(tl.columns[col]))


TIMELINE_PANELS = {  # panel -> the columns it draws: a panel is drawn where one of them was measured
    "sm": ("sm_active_pct", "util_gpu_pct", "sm_occupancy_pct", "dram_active_pct"),
    "mem": ("mem_used_bytes",), "power": ("power_w",), "pcie": ("pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s"),
    "clock": ("sm_clock_mhz",)}


def timeline_limits(runs):
    """Each panel's top over several runs (a workload's timelines share their y-axes)."""
    tops = {}
    for r in runs:
        tl = r.timeline
        if not tl:
            continue
        for panel, cols in TIMELINE_PANELS.items():
            vals = [v for c in cols if tl.has(c) for v in finite(tl.columns[c])]
            if panel == "mem" and tl.job_mem:
                vals += [sum(v for v in (tl.columns[k][i] for _, k in tl.job_mem) if not math.isnan(v)) for i in range(len(tl.t))]
            if vals:
                tops[panel] = max(tops.get(panel, 0.0), max(vals))
    return tops


# Set-up (process start, cuDNN's search) can take most of a run: a stretch where no job trains is
# drawn compressed, so that the jobs' go to end (warm-up, timed epochs, the common windows) spans
# most of the width. Shares of the time the jobs trained (the union of their go-to-end):
SETUP_PAD = 0.03    # kept uncompressed before a go and after an end, so no marker sits on a break
SETUP_MIN = 0.15    # a shorter stretch is drawn as it is (compressing it gains nothing)
SETUP_WIDTH = 0.06  # the width a compressed stretch is drawn at


def job_spans(run):
    """Each job's [go, end]: summary.json's go_t and end_t, else its timeline markers; a job that
    never ended runs to the timeline's last sample."""
    tl, out = run.timeline, []
    for i, j in enumerate(run.jobs):
        go, end = num(j.get("go_t")), num(j.get("end_t"))
        mark = {phase: t for t, job, phase in tl.markers if job == i and phase in ("start", "end")}
        go = go if not math.isnan(go) else mark.get("start", math.nan)
        end = end if not math.isnan(end) else mark.get("end", max(tl.t))
        if not math.isnan(go) and end > go:
            out.append((go, end))
    return sorted(out)


def setup_gaps(run, t0):
    """The stretches of the timeline where no job trained, long enough to compress, as (a, b, what)
    in seconds since t0: before the first go (set-up), between one job's end and the next one's
    go (serial: the next job's set-up), after the last end; and the seconds some job trained."""
    tl = run.timeline
    busy = []
    for a, b in job_spans(run):
        if busy and a <= busy[-1][1]:
            busy[-1][1] = max(busy[-1][1], b)
        else:
            busy.append([a, b])
    trained = sum(b - a for a, b in busy)
    if trained <= 0:
        return [], 0.0
    steps = sorted(b - a for a, b in zip(tl.t, tl.t[1:]))
    sample = steps[len(steps) // 2] if steps else 0.0  # the monitor's period
    pad = max(SETUP_PAD * trained, 2 * sample)  # a marker sits on the first sample after its event
    stretches = [(min(tl.t), busy[0][0] - pad, "set-up")] + \
                [(x[1] + pad, y[0] - pad, "set-up") for x, y in zip(busy, busy[1:])] + \
                [(busy[-1][1] + pad, max(tl.t), "after the end")]
    return [(a - t0, b - t0, what) for a, b, what in stretches if b - a > SETUP_MIN * trained], trained


def compress_setup(ax, gaps, width):
    """Draw each gap (a, b, what) over `width` seconds' worth of the axis, hatched: a piecewise
    linear x scale, slope 1 elsewhere, so that every panel, marker and window keeps its place in
    seconds (figure_timeline labels the gaps and keeps ticks out of them)."""
    import numpy as np
    shown, shift = [], 0.0  # each gap's start on the drawn axis, and its squeeze
    for a, b, _ in gaps:
        shown.append((a - shift, (b - a) / width - 1))
        shift += (b - a) - width

    def forward(v):  # each gap passed takes `width` instead of its length
        v = np.asarray(v, dtype=float)
        return v - sum((np.clip(v, a, b) - a) * (1 - width / (b - a)) for a, b, _ in gaps)

    def inverse(u):
        u = np.asarray(u, dtype=float)
        return u + sum((np.clip(u, a, a + width) - a) * squeeze for a, squeeze in shown)
    ax.set_xscale("function", functions=(forward, inverse))
    for a, b, _ in gaps:
        ax.axvspan(a, b, facecolor="#f2f2f2", edgecolor="#bbbbbb", hatch="////", linewidth=0)


def setup_ticks(ax, gaps, lo, hi, plt):
    """Ticks at one step, spaced for the width drawn uncompressed, in each stretch between the gaps
    (none inside a gap, where they would crowd)."""
    edges = [lo] + [v for a, b, _ in gaps for v in (a, b)] + [hi]
    spans = [(a, b) for a, b in zip(edges[::2], edges[1::2]) if b > a]
    ticks = plt.MaxNLocator(nbins=8, steps=[1, 2, 2.5, 5, 10]).tick_values(0, sum(b - a for a, b in spans))
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 0
    if step <= 0:
        return  # nothing drawn uncompressed: matplotlib's own ticks
    ax.set_xticks([round(k * step, 9) for a, b in spans for k in range(math.ceil(a / step), math.floor(b / step) + 1)])


def figure_timeline(plt, run, limits=None):
    """Figures 5 and 9: SM activity (with occupancy and DRAM activity where measured), memory per
    job, power, PCIe and SM clock over the run, with markers; the common windows shaded; y-axes
    shared with the other timelines of the workload (limits: timeline_limits)."""
    tl = run.timeline
    limits = limits or {}
    if not tl or not tl.t:
        return None
    t0 = min(finite([num(j.get("go_t")) for j in run.jobs]) or [tl.t[0]])
    x = [t - t0 for t in tl.t]
    panels = [p for p, cols in TIMELINE_PANELS.items()
              if any(measured(tl, c) for c in cols) or (p == "mem" and any(measured(tl, k) for _, k in tl.job_mem))]
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.5, 1.7 * len(panels) + 0.6), sharex=True, squeeze=False)
    axes = [a[0] for a in axes]
    cmap = plt.get_cmap("tab10")
    names = RunGroup([run]).job_names()

    def who(j):  # the job's label (S, M#1, ...), as in the tables
        return names[j] if j < len(names) else f"job {j}"
    gaps, trained = setup_gaps(run, t0)
    for ax in axes if gaps else []:
        compress_setup(ax, gaps, SETUP_WIDTH * trained)
    for ax, p in zip(axes, panels):
        if p == "sm":
            for col, name, style, colour in (("sm_active_pct", "SM activity", "-", "#1f77b4"),
                                             ("util_gpu_pct", "GPU utilisation", "--", "#999"),
                                             ("sm_occupancy_pct", "SM occupancy", "-.", "#17becf"),
                                             ("dram_active_pct", "DRAM activity", ":", "#8c564b")):
                if measured(tl, col):
                    ax.plot(x, tl.columns[col], style, linewidth=1, label=name, color=colour)
            shares = {}
            for job, profile, share in partition_layout(run):  # each partition's share of the SMs, for comparison
                shares.setdefault(round(share, 4), []).append(who(job))
                ax.axhline(100 * share, color=cmap(job % 10), linestyle=(0, (1, 3)), linewidth=0.8)
            for share, jobs in shares.items():
                ax.text(x[-1], 100 * share, f" {', '.join(jobs)}: {100 * share:.0f}% of SMs", fontsize=6, va="center")
            ax.set_ylabel("%")
            ax.set_ylim(0, 105)
        elif p == "mem":
            if tl.job_mem:
                ys = [[0.0 if math.isnan(v) else v / GIB for v in tl.columns[k]] for _, k in tl.job_mem]
                ax.stackplot(x, ys, labels=[who(j) for j, _ in tl.job_mem],
                             colors=[cmap(j % 10) for j, _ in tl.job_mem], alpha=0.8)
            if tl.has("mem_used_bytes"):
                ax.plot(x, [v / GIB for v in tl.columns["mem_used_bytes"]], color="k", linewidth=1, label="GPU total")
            ax.set_ylabel("GiB")
        elif p == "power":
            ax.plot(x, tl.columns["power_w"], color="#d62728", linewidth=1, label="power")
            ax.set_ylabel("W")
        elif p == "clock":
            ax.plot(x, tl.columns["sm_clock_mhz"], color="#7f7f7f", linewidth=1, label="SM clock")
            ax.set_ylabel("MHz")
        else:
            for col, name, c in (("pcie_rx_bytes_per_s", "PCIe rx (to GPU)", "#2ca02c"), ("pcie_tx_bytes_per_s", "PCIe tx", "#ff7f0e")):
                if tl.has(col):
                    ax.plot(x, [v / 1e6 for v in tl.columns[col]], color=c, linewidth=1, label=name)
            ax.set_ylabel("MB/s")
        if p in limits and p != "sm" and limits[p] > 0:
            scale = {"mem": 1 / GIB, "pcie": 1e-6}.get(p, 1.0)
            ax.set_ylim(0, limits[p] * scale * 1.08)
        for k, (a, b) in enumerate(run.windows()):
            ax.axvspan(a - t0, b - t0, color="#ffe08a", alpha=0.45, linewidth=0, label="common window" if k == 0 else None)
        for t, job, phase in tl.markers:
            if phase in ("start", "end") or phase == "epoch1":
                ax.axvline(t - t0, color=cmap(job % 10), linestyle="--" if phase == "end" else ":", linewidth=0.8)
        ax.legend(fontsize=7, frameon=False, loc="upper right", ncol=4)
    top = axes[0]
    for t, job, phase in tl.markers:
        if phase in ("start", "end", "epoch1"):
            label = {"start": "go", "end": "end", "epoch1": "timed"}[phase]
            top.annotate(f"{who(job)} {label}", (t - t0, 1.0), xycoords=("data", "axes fraction"), fontsize=6,
                         rotation=90, va="bottom", ha="center", color=cmap(job % 10))
    if gaps:
        for a, b, what in gaps:  # what the hatched gap hides, inside it
            top.text((a + b) / 2, 0.5, f"{what} {b - a:.1f} s", transform=top.get_xaxis_transform(), rotation=90,
                     ha="center", va="center", fontsize=6, color="#444",
                     bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
        axes[-1].set_xlim(min(x), max(x))
        setup_ticks(axes[-1], gaps, min(x), max(x), plt)
    axes[-1].set_xlabel("seconds since go" + ("; shaded: the common window(s)" if run.windows() else "") +
                        ("; hatched: no job training, compressed (length inside)" if gaps else ""))
    layout = partition_layout(run)
    if layout:
        fig.text(0.01, -0.01, "partitions as realised (run.json): " +
                 "; ".join(f"{who(job)} {profile} {100 * sh:.0f}% of the SMs" for job, profile, sh in layout),
                 fontsize=7, color="#333", va="top")
    fig.tight_layout()
    return render(fig)


def partition_layout(run):
    """The partition each job held, as the runner realised it (run.json's MIG layout): (job index,
    profile, share of the SMs); a compute instance sharing its GPU instance is marked."""
    plan = run.run_json.get("mig_emulated_layout") or run.run_json.get("mig_devices") or []
    out = []
    for k, e in enumerate(plan if isinstance(plan, list) else []):
        if isinstance(e, dict) and is_num(e.get("sm_fraction")):
            job = int(e["job"]) if is_num(e.get("job")) and 0 <= e["job"] < run.degree else k
            out.append((job, str(e.get("profile", "")) + (" (shared)" if e.get("shared") is True else ""),
                        float(e["sm_fraction"])))
    return out


def figure_energy(plt, groups):
    """Figure 6: energy of each cell (over the common window where the run used the window
    measurement, else go to end) and, for uniform workloads only, energy per sample: samples of
    unlike workloads are not one unit. One bar per cell at the median of its repeats."""
    bars = []
    for title, runs in groups:
        for g in sorted(group_repeats(runs), key=lambda g: (g.degree, mode_key(g.mode))):
            e = g.spread(lambda r: r.energy_measured()[0])
            if e.n:
                eps = g.spread(lambda r: r.energy_measured()[1]) if g.uniform else Spread([])
                what = sorted({r.energy_measured()[2] for r in g.runs})
                bars.append((f"{short_workload(g.runs[0])} x{g.degree}", g.mode, e, eps, ", ".join(what)))
    if not bars:
        return None
    fig, (a, b) = plt.subplots(2, 1, figsize=(max(6.5, 0.45 * len(bars) + 2), 5.8), sharex=True)
    for k, (grp, mode, e, eps, what) in enumerate(bars):
        c = MODE_COLOURS.get(mode, "#444")
        spread_bar(a, k, scaled(e, 1 / 1000.0), 0.8, c)
        if eps.n:
            spread_bar(b, k, scaled(eps, 1000.0), 0.8, c)
        else:
            b.text(k, 0, "mix", ha="center", va="bottom", fontsize=6, color="#777", rotation=90)
    for k in range(1, len(bars)):
        if bars[k][0] != bars[k - 1][0]:
            a.axvline(k - 0.5, color="#555", linestyle=":", linewidth=1)
            b.axvline(k - 0.5, color="#555", linestyle=":", linewidth=1)
    covers = sorted({what for *_, what in bars})
    a.set_ylabel("energy (kJ)")
    a.set_title(f"(a) GPU energy, {' or '.join(covers)} (each bar's span under it)", loc="left", fontsize=9)
    b.set_ylabel("energy / sample (mJ)")
    b.set_title("(b) energy per sample, uniform workloads only (a mix's samples are not one unit)", loc="left", fontsize=9)
    b.set_xticks(range(len(bars)))
    b.set_xticklabels([f"{g} {m} ({w})" for g, m, _, _, w in bars], rotation=60, ha="right", fontsize=7)
    modes = sorted({m for _, m, *_ in bars}, key=mode_key)
    handles = [plt.Rectangle((0, 0), 1, 1, color=MODE_COLOURS.get(m, "#444")) for m in modes]
    a.legend(handles, modes, fontsize=8, frameon=False, ncol=5)
    fig.tight_layout()
    return render(fig)


def scaled(sp, factor):
    """A Spread in other units (J as kJ)."""
    out = Spread([])
    out.n, out.median, out.min, out.max = sp.n, sp.median * factor, sp.min * factor, sp.max * factor
    return out


def figure_precision(plt, pairs):
    """The same mix, mode and degree in tf32 and bf16 side by side: what the lower precision buys
    in throughput, and what it does to SM activity and memory, with bf16's ratio on its bar."""
    rows, sm_name, mem_name = precision_rows(pairs)
    panels = [("(a) aggregate throughput, samples/s\n(sum over jobs, timed epoch)", 1.0),
              (f"(b) {sm_name or 'SM activity (not measured)'}, %\n(mean over the timed epochs)", 1.0),
              (f"(c) memory, GiB\n({mem_name})", 1.0 / GIB)]
    wide = len(rows) > 4  # side by side the page would shrink them past reading: one above another
    fig, axes = plt.subplots(3 if wide else 1, 1 if wide else 3, squeeze=False,
                             figsize=(0.75 * len(rows) + 2, 9.6) if wide else (max(10.5, 3 * (0.75 * len(rows) + 1.2)), 3.6))
    axes = axes.flat
    for m, (ax, (title, scale)) in enumerate(zip(axes, panels)):
        vals = [tuple(v * scale for v in row[3][m]) for row in rows]
        top = max(finite([v for pair in vals for v in pair]) + ([100.0] if m == 1 else []), default=0) or 1.0
        for k, (a, b) in enumerate(vals):
            for x, v, prec in ((k - 0.2, a, "tf32"), (k + 0.2, b, "bf16")):
                if math.isnan(v):
                    ax.text(x, top * 0.01, "n/a", ha="center", va="bottom", fontsize=8, color="#a00")
                else:
                    ax.bar(x, v, width=0.38, color=PRECISION_COLOURS[prec])
            if not math.isnan(a) and not math.isnan(b) and a > 0:
                ax.text(k + 0.2, b + top * 0.01, f"{b / a:.2f}x", ha="center", va="bottom", fontsize=8)
        ax.set_ylim(0, top * 1.12)
        ax.set_xlim(-0.6, len(rows) - 0.4)
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels([r[0] for r in rows], rotation=30 if len(rows) > 2 else 0,
                           ha="right" if len(rows) > 2 else "center")
        ax.set_title(title, loc="left", fontsize=9)
        if m == 0:
            ax.ticklabel_format(axis="y", style="plain", useOffset=False)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in PRECISION_COLOURS.values()]
    fig.legend(handles, list(PRECISION_COLOURS), loc="upper center", ncol=2, frameon=False, fontsize=8,
               bbox_to_anchor=(0.5, 1 + 0.22 / fig.get_figheight()))
    fig.tight_layout()
    return render(fig)
