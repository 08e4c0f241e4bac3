"""The report's kernel attribution (run_suite --kernels; results/kernel_attribution.h): each job's step
by class alone and under each mode as stacked bars, the class-by-class interference matrix of each
mode as a heat map, and a sentence per mix and mode naming the largest contributors. Every number
here comes from the traced window after the measured ones, and is labelled traced."""
import math
import os

from report_checks import read_csv
from report_data import group_repeats, mode_key
from report_figures import render

# The classes in the order the bars stack them, with the words the sentences use.
CLASS_WORDS = {"conv_fwd": "convolution forward", "conv_dgrad": "convolution data gradient",
               "conv_wgrad": "convolution weight gradient", "gemm": "GEMM", "batchnorm": "batch norm",
               "elementwise": "elementwise and activation", "pooling": "pooling", "attention": "attention",
               "embedding": "embedding", "optimizer": "optimizer", "loss": "loss", "copy": "copies",
               "collective": "collectives", "other": "other kernels",
               "waiting_others": "waiting while other jobs' kernels ran", "waiting_idle": "waiting (idle)"}
CLASSES = list(CLASS_WORDS)
MODE_WORDS = {"mps": "MPS", "naive": "naive time-slicing", "mig": "MIG", "mig-emulate": "emulated MIG",
              "streams": "streams", "green": "green contexts", "serial": "serial"}


def num(cell):
    try:
        v = float(cell)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def attribution(run):
    """A run folder's kernels.csv and interference.csv rows ([], [] where it has none)."""
    out = []
    for name in ("kernels.csv", "interference.csv"):
        path = os.path.join(run.path, name)
        out.append(read_csv(path) if os.path.exists(path) else [])
    return out


def traced_cells(runs):
    """The cells (RunGroup) whose first traced repeat has kernels.csv: [(group, run, kernel rows,
    interference rows)], by mode."""
    out = []
    for g in group_repeats(runs):
        for r in g.runs:
            rows, matrix = attribution(r)
            if rows:
                out.append((g, r, rows, matrix))
                break
    return sorted(out, key=lambda c: mode_key(c[0].mode))


def class_ms(rows, job, column):
    """{class: ms per step} of a job's class rows, from column (alone_ms or shared_ms)."""
    return {row["class"]: num(row[column]) for row in rows
            if row["level"] == "class" and row["job"] == str(job) and not math.isnan(num(row[column]))}


def alone_source(rows, job):
    """Where a job's alone times in a mode's rows come from (its step row's alone_source: self,
    serial, baseline, partition)."""
    return next((row.get("alone_source", "") for row in rows if row["level"] == "step" and row["job"] == str(job)), "")


def figure_steps_by_class(plt, cells):
    """Per job a group of stacked bars: its step by class alone (the first mode whose rows have it),
    then under each mode, a partitioned mode's preceded by the job alone in that partition (what its
    slowdown there is measured against). None where no cell has class rows."""
    jobs = sorted({(int(row["job"]), row["label"]) for _, _, rows, _ in cells for row in rows if row["level"] == "class"})
    if not jobs:
        return None
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 + 0.55 * len(jobs) * (len(cells) + 1)), 3.6))
    colours = plt.get_cmap("tab20").colors
    x, ticks, labels = 0.0, [], []
    bars = []  # (x, {class: ms})
    for job, label in jobs:
        alone = next((class_ms(rows, job, "alone_ms") for _, _, rows, _ in cells if class_ms(rows, job, "alone_ms")), {})
        if alone:
            bars.append((x, alone))
            ticks.append(x), labels.append(f"{label}#{job} alone")
            x += 1
        for g, _, rows, _ in cells:
            shared = class_ms(rows, job, "shared_ms")
            in_partition = class_ms(rows, job, "alone_ms") if alone_source(rows, job) == "partition" else {}
            if shared and in_partition and g.mode != "serial":
                bars.append((x, in_partition))
                ticks.append(x), labels.append(f"{label}#{job} {g.mode} alone")
                x += 1
            if shared and g.mode != "serial":
                bars.append((x, shared))
                ticks.append(x), labels.append(f"{label}#{job} {g.mode}")
                x += 1
        x += 0.6
    for k, cls in enumerate(CLASSES):
        heights = [b.get(cls, 0.0) for _, b in bars]
        if not any(heights):
            continue
        bottoms = [sum(b.get(c, 0.0) for c in CLASSES[:k]) for _, b in bars]
        ax.bar([p for p, _ in bars], heights, 0.8, bottom=bottoms, label=CLASS_WORDS[cls],
               color=colours[k % len(colours)], hatch="//" if cls.startswith("waiting") else None)
    ax.set_xticks(ticks)
    # one line a bar, turned upright: a mode's name is as wide as several bars (mig-emulate)
    ax.set_xticklabels(labels, fontsize=7, rotation=90)
    ax.set_ylabel("ms per step (traced)")
    ax.set_title("each job's step by class, alone (and alone in its partition) and under each mode (traced window)",
                 loc="left")
    ax.legend(fontsize=7, ncol=2, frameon=False, bbox_to_anchor=(1.0, 1.0), loc="upper left")
    return render(fig)


def matrix_of(matrix, mode_rows=None):
    """{(class, beside): slowdown} of the matrix's "all" rows, else of its one job's."""
    rows = [r for r in matrix if r["job"] == "all"] or matrix
    return {(r["class"], r["beside"]): num(r["slowdown"]) for r in rows}


def figure_interference(plt, cells):
    """The interference matrix of each mode whose jobs ran together, a heat map each: rows the class
    slowed, columns the class of another job beside it (none: beside none). None where no mode has one."""
    maps = [(g.mode, matrix_of(m)) for g, _, _, m in cells if m and g.mode != "serial"]
    maps = [(mode, cells_) for mode, cells_ in maps if cells_]
    if not maps:
        return None
    # one colour scale for every mode, so that a colour means the same slowdown in each panel
    finite = [v for _, cells_ in maps for v in cells_.values() if not math.isnan(v)]
    top = max([1.0 + 1e-6] + finite)
    fig, axes = plt.subplots(1, len(maps), figsize=(4.2 * len(maps) + 0.8, 3.8), squeeze=False)
    fig.subplots_adjust(wspace=0.35)
    for ax, (mode, cells_) in zip(axes[0], maps):
        slowed = [c for c in CLASSES if any(k[0] == c for k in cells_)]
        beside = [c for c in CLASSES if any(k[1] == c for k in cells_)] + ["none"]
        grid = [[cells_.get((a, b), math.nan) for b in beside] for a in slowed]
        image = ax.imshow(grid, cmap="Reds", vmin=1.0, vmax=top, aspect="auto")
        ax.set_xticks(range(len(beside)))
        ax.set_xticklabels(beside, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(slowed)))
        ax.set_yticklabels(slowed, fontsize=7)
        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if not math.isnan(v):
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6)
        ax.set_title(mode, loc="left", fontsize=9)
        ax.set_xlabel("beside (another job's class)")
    fig.colorbar(image, ax=list(axes[0]), fraction=0.02, pad=0.02, label="slowdown (shared / alone)")
    # said once above the panels: a title per panel as long as this ran into its neighbour's
    fig.suptitle("slowdown of a job's class (row) while another job's class (column) ran beside it (traced)",
                 x=0.02, ha="left", fontsize=9)
    render_data = render(fig)
    lines = ["mode,class,beside,slowdown"]
    for mode, cells_ in maps:
        lines += [f"{mode},{a},{b},{v:.4f}" for (a, b), v in sorted(cells_.items())]
    render_data.csv = "\n".join(lines) + "\n"  # an image's numbers are the matrix itself
    return render_data


def alone_words(row):
    """What a class row does alone, in the sentences' words: its share of the DRAM bandwidth and its
    bound ("" where the share is unknown)."""
    dram, bound = num(row.get("alone_dram_fraction")), row.get("bound", "")
    if math.isnan(dram):
        return ""
    text = f", which alone moves its bytes at {100 * dram:.0f}% of the DRAM bandwidth"
    text += " (more than DRAM could: part of them came from L2)" if dram > 1 else ""
    return text + (" (below both roofs: neither compute- nor memory-bound)" if bound == "neither" else
                   f" ({bound}-bound)" if bound else "")


def sentence(mode, rows):
    """Under a mode: the job whose step grew most, by how much, and its largest contributing classes
    with what the first does alone. None where no job has both alone and shared."""
    steps = [r for r in rows if r["level"] == "step" and not math.isnan(num(r["delta_ms"]))]
    if not steps:
        return None
    worst = max(steps, key=lambda r: num(r["delta_ms"]))
    delta = num(worst["delta_ms"])
    parts = sorted([r for r in rows if r["level"] == "class" and r["job"] == worst["job"]
                    and num(r["delta_ms"]) > 0], key=lambda r: -num(r["delta_ms"]))
    words = MODE_WORDS.get(mode, mode)
    text = f"under {words}, {worst['label']}'s step {'grows' if delta >= 0 else 'shrinks'} {abs(delta):.2f} ms"
    if delta > 0 and parts:
        top = parts[0]
        text += f"; {num(top['delta_ms']):.2f} ms of it is {CLASS_WORDS.get(top['class'], top['class'])}"
        text += alone_words(top)
        if len(parts) > 1:
            text += f", then {num(parts[1]['delta_ms']):.2f} ms of {CLASS_WORDS.get(parts[1]['class'], parts[1]['class'])}"
    return text + " (traced)."


def kernels_section(plt, runs, emit, body, esc):
    """The section of a workload's runs, through the report's emit; nothing where none was traced."""
    cells = traced_cells(runs)
    if not cells:
        return
    body.append("<p class=note>Where the step goes (run_suite --kernels): every kernel traced over a window of its "
                "own after the measured ones, so these numbers are <b>traced</b> (tracing slows short kernels), "
                "attributed by class against the same job alone (results/kernel_attribution.h).</p>")
    said = [s for s in (sentence(g.mode, rows) for g, _, rows, _ in cells if g.mode != "serial") if s]
    if said:
        # a mode a line: the sentences are read mode by mode, against the figures below
        body.append("<ul class=said>" + "".join(f"<li>{esc(s[0].upper() + s[1:])}</li>" for s in said) + "</ul>")
    fig = figure_steps_by_class(plt, cells)
    if fig:
        emit(f"fig-kernels-{len(body)}", "step by class", "each job's step by class, alone and per mode (traced)", fig)
    fig = figure_interference(plt, cells)
    if fig:
        emit(f"fig-interference-{len(body)}", "interference matrix", "class-by-class interference per mode (traced)",
             fig, "Cell (a, b): how much slower a job's class-a kernels ran while another job's class-b kernel "
             "ran beside them, against the same kernels alone (time-weighted); none: beside no other kernel.")
