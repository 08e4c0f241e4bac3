#!/usr/bin/env python3
"""One self-contained HTML page from run_suite's run folders (run_suite report RUN_DIR... -o F).

Reads what run_suite writes (summary.json, jobs.csv, steps.csv, timeline.csv, run.json,
comparison.json, a study's study.json, and run_suite advise's advice.json, check.json and
check.csv) from any folders given, in any nesting, and draws the advisor's predictions against
what its check measured (report_advice.py) and the study's figures: epoch time, SM activity and
memory per mode and collocation degree (Figures 2-4), each job's step-time distribution per mode,
where its step goes by kernel class (traced, run_suite --kernels: kernels.csv, interference.csv),
timelines with job phase markers (Figures 5 and 9), energy per run and per sample (Figure 6), the
comparison table, the paper's own findings next to ours, and each run's provenance.

Python with matplotlib because that is what the field plots with: the study's authors, timm and
PyTorch users already have it, and a researcher can change a figure here without learning a
new tool. Figures are SVG embedded as data: URIs, each with its data as an embedded CSV download
(and written beside the page as PAGE.FIGURE.csv), so the page needs no network and no files.

Exit status: 0 written; 2 bad input (a folder without runs, an unreadable or malformed file:
the message names it); 1 the page could not be written; 128+N stopped by signal N.
"""
import argparse
import base64
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report_data import MODEL_SIZES, ReportError, group_repeats, load, mode_key, precision_pairs, read_json, run_kind, short_workload, solo_makespans, solo_times, unfinished_runs, workload_title  # noqa: E402
from report_figures import figure_energy, figure_mix_progress, figure_precision, figure_throughput, figure_timeline, figure_uniform, plt_module, timeline_limits  # noqa: E402
from report_steps import CDF_POINTS, STEP_P99_MIN, figure_step_cdf  # noqa: E402
from report_kernels import kernels_section  # noqa: E402
from report_advice import advice_section, find_advised  # noqa: E402
from report_html import (CSS, comparison_table, esc, findings_section, glossary, precision_table,  # noqa: E402
                         provenance, study_cards_note)


STEP_CDF_CAPTION = (
    "Each job's step times as an empirical CDF: the share of its steps that took at most x ms, over the common "
    "window(s), or its timed epoch where the run measured to completion (steps.csv). &#9679; p50; &#9650; p99, "
    f"only for a job with at least {STEP_P99_MIN} steps (below that it is the slowest few steps). n: the steps in the "
    "legend with p50 and p99 in ms, to compare panels: each panel has its own x range; a cell's repeats are pooled "
    "(n counts them all). Under the window measurement a serial run measures a "
    "repeated job spec once: the repeats have no curve of their own. "
    f"Each curve is drawn through at most {CDF_POINTS} points evenly spaced in rank (the slowest step included), as "
    "in the CSV with each p50 and p99.")


def build(paths, reference_path):
    runs, cells, studies, alls = load(paths)
    ref = read_json(reference_path, dict) if reference_path else {}
    plt = plt_module()
    solo = solo_times(runs)
    solo_whole = solo_makespans(runs)
    groups = {}
    for r in runs:
        groups.setdefault(r.workload, []).append(r)
    cell_groups = {}
    for c in cells:
        cell_groups.setdefault(c.workload, []).append(c)
        groups.setdefault(c.workload, [])
    order = sorted(groups, key=lambda w: (":" not in w, ["small", "medium", "large", "very large", None].index(MODEL_SIZES.get(w.split(":")[0])), w))
    groups = [(w, groups[w]) for w in order]
    figures = []  # (id, title, its data as CSV) for the test, the contents and the CSV files
    body = []

    def emit(fig_id, title, alt, fig, caption=""):
        """The figure inline, its caption (HTML), and its data as a download embedded in the page (and
        a file beside it)."""
        figures.append((fig_id, title, fig.csv))
        data = base64.b64encode(fig.csv.encode("utf-8")).decode("ascii")
        body.append(f"<figure><img id={fig_id} alt='{esc(alt)}' src='{fig.src}'><figcaption class=note>{caption}"
                    f"{' ' if caption else ''}<a download='{fig_id}.csv' href='data:text/csv;base64,{data}'>this figure's data (CSV)</a>"
                    f"</figcaption></figure>")
    gpu_names = {r.run_json.get("gpu", {}).get("name") for r in runs if isinstance(r.run_json.get("gpu"), dict)}
    gpu_names = {g for g in gpu_names if g}

    body.append("<h2 id=metrics>The metrics</h2><p class=note>Defined once here, as run_suite computes them "
                "(results/metrics.h). Where a run used the window measurement (every job measured over one common "
                "window after all warm-ups) its numbers are the ones shown; else the timed (second) epoch's.</p>")
    body.append(glossary())
    advised = find_advised(paths)
    if advised:
        advice_section(plt, advised, emit, body, esc)
    body.append("<h2 id=modes>Per mode and collocation degree (the study's Figures 2-4)</h2>"
                "<p class=note>Bars grouped by collocated run, runs ordered by degree (dotted lines) and mode; "
                "a run measured over a common window shows each job's samples/s in it, else each job's timed "
                "(second) epoch. SM activity is the GPU's own (GPM) where it has it, else NVML utilisation, "
                "over the jobs' timed spans (the window, or the timed epochs).</p>")
    for w, rs in groups:
        wc = cell_groups.get(w, [])
        anchor = f"w{len(figures)}"
        body.append(f"<h3 id={anchor}>{esc(workload_title(w))}</h3>")
        if rs or wc:
            emit(f"fig-modes-{anchor}", workload_title(w), f"per job speed, SM activity and memory per mode and degree: {w}",
                 figure_uniform(plt, rs, wc))
        fig = figure_throughput(plt, rs, solo) if ":" in w and any(r.degree > 1 for r in rs) else None
        if fig:
            emit(f"fig-throughput-{anchor}", workload_title(w), "throughput against one job alone", fig)
        fig = figure_mix_progress(plt, rs) if ":" not in w else None
        if fig:
            emit(f"fig-progress-{anchor}", workload_title(w), "each job's progress against alone, per mode", fig)
        fig = figure_step_cdf(plt, rs)
        if fig:
            emit(f"fig-steps-{anchor}", workload_title(w), "each job's step-time distribution, per mode", fig,
                 STEP_CDF_CAPTION)
        elif rs:
            body.append("<p class=note>No step-time distributions: these run folders have no steps.csv (written "
                        "before run_suite kept each step's time).</p>")
        kernels_section(plt, rs, emit, body, esc)
        body.append(comparison_table(rs, wc, solo, solo_whole))

    pairs = precision_pairs(runs)
    if pairs:
        body.append("<h2 id=precision>bf16 against tf32</h2><p class=note>Each pair is one mix under one mode, run "
                    "once in tf32 and once in bf16, compared over the timed epoch (the second) as above: the sum of "
                    "the jobs' samples/s, SM activity and memory; the bf16 bars carry their ratio to tf32.</p>")
        emit("fig-precision", "bf16 against tf32", "bf16 against tf32: throughput, SM activity and memory",
             figure_precision(plt, pairs))
        body.append(precision_table(pairs))

    body.append("<h2 id=timelines>Timelines (Figures 5 and 9)</h2><p class=note>Dotted lines: a job's go and the "
                "start of its timed epoch; dashed: its end. Memory is stacked per job (NVML's per-process "
                "accounting); the black line is the whole GPU. Hatched: a stretch where no job trained (set-up "
                "before go, a serial job's set-up), drawn compressed with its length in it, so that the timed "
                "part is wide.</p>")
    chosen = []  # (run, its cell's repeats): one timeline per cell, the first repeat's
    n_cells = sum(len(group_repeats(rs)) for _, rs in groups)
    for w, rs in groups:
        cells_here = [(g, next((r for r in g.runs if r.timeline), None)) for g in group_repeats(rs)]
        cells_here = sorted([(g, r) for g, r in cells_here if r], key=lambda x: (x[0].degree, mode_key(x[0].mode)))
        if ":" in w and n_cells > 16:  # many uniform cells: the highest degree's collocated modes only
            top = max((g.degree for g, _ in cells_here if g.mode != "serial"), default=0)
            cells_here = [(g, r) for g, r in cells_here if g.degree == top and g.mode != "serial"]
        chosen.extend(cells_here)
    n_tl = 0
    limits = {}  # a workload's timelines share their y-axes
    for w, rs in groups:
        tops = timeline_limits([r for _, r in chosen if r.workload == w])
        for r in rs:
            limits[id(r)] = tops
    for g, r in chosen:
        fig = figure_timeline(plt, r, limits.get(id(r)))
        if fig:
            n_tl += 1
            more = f" <span class=note>(the first of {g.n} repeats: {esc(os.path.relpath(r.path, r.root))})</span>" if g.n > 1 else ""
            body.append(f"<h3>{esc(short_workload(r))} x{r.degree}, {esc(r.mode)} <span class=note>{esc(run_kind(r))}</span>{more}</h3>")
            emit(f"fig-timeline-{n_tl}", r.path, f"timeline {r.mode}", fig)
    if not n_tl:
        body.append("<p class=note>No timeline in these runs (run_suite samples the GPU through NVML; it was absent or --no-monitor).</p>")

    body.append("<h2 id=energy>Energy (Figure 6)</h2><p class=note>GPU energy from first go to last end (serial: the sum "
                "of each job's own window), and per trained sample.</p>")
    fig = figure_energy(plt, groups)
    if fig:
        emit("fig-energy", "energy", "energy per run and per sample", fig)
    else:
        body.append("<p class=note>No energy was measured in these runs (no NVML energy counter).</p>")

    if ref:
        body.append("<h2 id=paper>The study's findings next to ours</h2>")
        body.append(findings_section(ref, groups, cells, solo, gpu_names))

    body.append("<h2 id=provenance>Provenance</h2>")
    body.append(provenance(runs, studies, unfinished_runs(paths)))

    cards = study_cards_note(studies)
    title = "Collocation report"
    if studies:
        title = f"Collocation study: {', '.join(str(st.get('study', '?')) for _, st in studies)}"
    head = (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>{esc(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{esc(title)}</h1>"
            f"<p class=sub>{len(runs)} run(s) from {esc(', '.join(paths))}; GPU: {esc(', '.join(sorted(gpu_names)) or 'not recorded')}"
            f"{esc('; ' + cards if cards else '')}; {len(figures)} figure(s)</p><nav><a href='#metrics'>metrics</a>"
            f"{'<a href=#advice>advised runs</a>' if advised else ''}<a href='#modes'>modes and degrees</a>"
            f"{'<a href=#precision>bf16 against tf32</a>' if pairs else ''}<a href='#timelines'>timelines</a>"
            f"<a href='#energy'>energy</a>{'<a href=#paper>the paper</a>' if ref else ''}<a href='#provenance'>provenance</a></nav>")
    page = head + "\n".join(body) + f"\n<!-- figures: {' '.join(f[0] for f in figures)} -->\n</body></html>\n"
    return page, figures


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(prog="run_suite report", description="Turn run folders into one self-contained HTML page.")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run, --mode all or study folders of run_suite")
    p.add_argument("-o", "--output", help="the page (default: RUN_DIR/report.html for one folder, else report.html)")
    p.add_argument("--reference", default=os.path.join(here, "study_reference.json"),
                   help="the paper's findings (default: study_reference.json beside this script; '' for none)")
    a = p.parse_args(argv)
    # where the page may go was decided by run_suite report (runner/suite/run/report_cmd.c), by the
    # rule of every output of the suite (base/output_path.h), before this started
    out = a.output or (os.path.join(a.run_dirs[0], "report.html") if len(a.run_dirs) == 1 else "report.html")
    try:
        page, figures = build(a.run_dirs, a.reference)
    except ReportError as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    # the page, and beside it each figure's data (PAGE_STEM.FIGURE_ID.csv), the same the page embeds
    stem = os.path.splitext(out)[0]
    for path, text in [(out, page)] + [(f"{stem}.{fig_id}.csv", data) for fig_id, _, data in figures]:
        tmp = f"{path}.tmp.{os.getpid()}"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException as e:  # a write that failed, or a stop signal (stopped below) meanwhile
            try:
                os.remove(tmp)  # nothing half-written is left behind
            except OSError:
                pass
            if not isinstance(e, OSError):
                raise
            print(f"report: cannot write {path}: {e.strerror}", file=sys.stderr)
            return 1
    print(f"report: {out} ({len(page) / 1024:.0f} KiB, {len(figures)} figures)")
    return 0


def stopped(signum, frame):
    """A stop signal (run_suite report passes its own on; Ctrl-C reaches the whole group) ends the
    report quietly with 128+N, as every program of the suite, not with a traceback."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stopped)
    sys.exit(main(sys.argv[1:]))
