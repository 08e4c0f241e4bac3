"""The report's tables: comparison per workload, the paper's findings next to ours, provenance."""
import html
import math
import os

from report_data import (GIB, METRIC_NAMES, MODEL_NAMES, MODEL_SIZES, NAN, Cell, finite, group_repeats, is_num,
                         mean, mode_key, num, precision_rows, rank_line, short_name, spread_rank)
from report_steps import STEP_P99_MIN

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:1.5em;margin-bottom:0}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:4px;margin-top:2em}
h3{font-size:1.05em;margin-top:1.6em}p.sub{color:#555;margin-top:4px}
table{border-collapse:collapse;font-size:12px;margin:8px 0;display:block;max-width:100%;overflow-x:auto}th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.l,th.l{text-align:left}tr.bad td{background:#fff3f3}
img{max-width:100%;border:1px solid #eee;margin:6px 0}code{font-size:11px;word-break:break-all}
dl.gloss{font-size:12px;display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}dl.gloss dt{font-weight:600}dl.gloss dd{margin:0}
.ok{color:#176f2c}.off{color:#a33}.nw{white-space:nowrap}.note{color:#666;font-size:12px}ul.said{font-size:13px;padding-left:20px}ul.said li{margin:3px 0}nav a{margin-right:12px}
"""


def esc(v):
    return html.escape(str(v), quote=True)


def fmt(v, spec="{:.3g}", none="–"):
    return none if v is None or (isinstance(v, float) and math.isnan(v)) else spec.format(v)


def gib(v):
    return fmt(v / GIB if not math.isnan(v) else NAN, "{:.2f}")


GLOSSARY = [  # results/metrics.h, in a reader's words; one place on the page
    ("normalized throughput NP<sub>i</sub>", "job i's samples/s here over the same job's samples/s alone (the serial run, "
     "or <code>--baseline</code>), both over a common window of the same length where the window measurement was used, "
     "else over the timed (second) epoch"),
    ("STP", "system throughput: the sum of NP<sub>i</sub>, jobs' worth of solo progress per unit time (serial: 1)"),
    ("ANTT", "window: the mean over jobs of 1 / NP<sub>i</sub> (mean slowdown); completion: the mean normalized "
     "turnaround. Lower is better"),
    ("fairness", "min NP<sub>i</sub> / max NP<sub>i</sub>; 1 = every job slowed alike"),
    ("slowdown", "1 / NP<sub>i</sub> for one job"),
    ("interference", "a job's samples/s beside the others over its samples/s alone in a partition of the same size "
     "(MIG instance or emulated share); 1.00 = isolated"),
    ("energy per sample", "the run's GPU energy split by each job's solo-equivalent seconds, per trained sample; "
     "compared per workload only"),
    ("memory after the first epoch", "what each job itself holds on the GPU after its own first epoch (its "
     "weights, activations and workspaces, as it reports them), stacked per job; without each process's CUDA context and libraries' "
     "handles, which nvidia-smi also counts: below the peak GPU memory"),
    ("peak GPU memory", "the most memory in use on the whole GPU during the run (NVML), every process's CUDA context "
     "included"),
    ("overlap", "the share of the common window during which every other job was training; below 0.95 (*) the job's "
     "numbers do not describe collocation"),
    ("step-time CDF", "the share of a job's steps that took at most x ms (each step's time, <code>steps.csv</code>); "
     f"p50 and p99 (p99 from {STEP_P99_MIN} steps on) marked. A tail that moves right under a mode while the median stays is "
     "interference that per-job medians hide"),
    ("median [min-max]", "over repeats of the same cell (<code>--repeat</code>, or several folders of one cell); "
     "a ranking says A &gt; B only where the ranges do not overlap and each side has at least 2 repeats, else A ~ B"),
]


def glossary():
    return "<dl class=gloss>" + "".join(f"<dt>{t}</dt><dd>{d}</dd>" for t, d in GLOSSARY) + "</dl>"


def spread_cell(sp, spec, dagger=False):
    return esc(sp.format(spec)) + ("<sup>†</sup>" if dagger and sp.n else "") if sp.n else "–"


def per_job_cell(g):
    """Each job's samples/s (window or timed epoch) with its label, one line each; in window runs
    the lowest overlap below them, and a job's own overlap where it is below the run's minimum
    (flagged), so that a row of seven jobs stays seven short lines."""
    parts, lowest = [], []
    for i, name in enumerate(g.job_names()):
        rate = g.job_spread(i, lambda r, i: r.job_rate(i))
        text = f"{esc(name)}: {esc(rate.format('{:,.0f}'))}"
        if g.window and g.mode != "serial":  # serial runs one job at a time: nothing overlaps by design
            ov = g.job_spread(i, lambda r, i: r.job_overlap(i))
            if ov.n:
                lowest.append(ov.min)
                if ov.min < g.runs[0].min_overlap():
                    text += f" <span class=off>(overlap {ov.min:.2f}*)</span>"
        parts.append(f"<span class=nw>{text}</span>")
    if lowest:
        parts.append(f"<span class='note nw'>lowest overlap {min(lowest):.2f}</span>")
    return "<br>".join(parts)


def energy_vs_serial(r, runs):
    """The run's own ratio, else this energy over its serial baseline's where both were measured:
    the baseline's energy in summary.json, else the serial run of the same mix beside it (--mode
    all). Completion only: a window run's makespan is its warm-up and windows, not its jobs' work."""
    v = num(r.summary.get("energy_vs_serial"))
    if not math.isnan(v) or r.window or r.mode == "serial":
        return v
    base = r.summary.get("serial_baseline")
    b = num(base.get("energy_j")) if isinstance(base, dict) else NAN
    if math.isnan(b):
        beside = [s for s in runs if s.mode == "serial" and s.mix == r.mix and
                  os.path.dirname(s.path) == os.path.dirname(r.path)]
        b = beside[0].energy() if beside else NAN
    e = r.energy()
    return e / b if b > 0 and not math.isnan(e) else NAN


def peak_memory(r):
    v = num(r.summary.get("peak_gpu_memory_bytes"))
    return v if v > 0 else NAN  # 0: nothing was measured (no NVML memory reading)


def memory_used_by_run(r):
    """The run's peak GPU memory above the GPU's own before its jobs started (the first sample:
    the driver's reservation, about 0.5 GiB on an H100, which nvidia-smi shows with no process)."""
    peak = peak_memory(r)
    tl = r.timeline
    idle = tl.columns.get("mem_used_bytes", [NAN])[0] if tl is not None and tl.has("mem_used_bytes") else NAN
    return peak - idle if idle == idle and peak > idle else NAN


def comparison_table(runs, cells, solo, solo_whole=None):
    derived = {id(r): r.against_alone(solo, solo_whole or {}) for r in runs}
    groups = group_repeats(runs)
    extra = sorted({k for r in runs for k in r.extra_metrics()})
    window = any(g.window for g in groups)
    same = all(r.same_workload() for r in runs)
    head = ["jobs", "mode", "n", "status", "makespan s",
            ("samples/s per job, window" if window else "samples/s per job, timed epoch")] + \
           (["samples/s sum"] if same else []) + \
           ["STP", "ANTT", "fairness", "speed-up vs serial", "energy J, " + (" or ".join(sorted({r.energy_measured()[2] for r in runs if not math.isnan(r.energy_measured()[0])}))
                                                  or "not measured"),
            "energy vs serial", "peak GPU mem GiB"] + \
           [METRIC_NAMES.get(k, k) for k in extra] + ["failures"]
    left = ("mode", "status", "failures", head[5])
    out = ["<table><tr>" + "".join(f"<th{' class=l' if h in left else ''}>{esc(h)}</th>" for h in head) + "</tr>"]
    items = sorted([(g.degree, mode_key(g.mode), g) for g in groups] + [(c.degree, mode_key(c.mode), c) for c in cells],
                   key=lambda x: (x[0], x[1]))
    for _, _, g in items:
        if isinstance(g, Cell):
            out.append(f"<tr class=bad><td>{g.degree}</td><td class=l>{esc(g.mode)}</td><td></td><td class=l>{esc(g.status)}</td>"
                       f"<td colspan={len(head) - 5}></td><td class=l>{esc(g.reason)}</td></tr>")
            continue

        def metric(key):  # the runs' own numbers, else ones against the workload's run alone, marked
            own = g.spread(lambda r: num(r.summary.get(key)))
            if own.n:
                return spread_cell(own, "{:.2f}")
            return spread_cell(g.spread(lambda r: derived[id(r)].get(key, NAN)), "{:.2f}", dagger=True)
        statuses = sorted({str(r.summary.get("status", "?")) for r in g.runs})
        fails = [f for r in g.runs for f in r.failures()]
        mode = esc(g.mode) + (" (shared GPU instance)" if g.mig_shared else "")
        cells_html = [str(g.degree), mode, str(g.n), esc(", ".join(statuses)),
                      spread_cell(g.spread(lambda r: num(r.summary.get("makespan_s"))), "{:.2f}"), per_job_cell(g)] + \
                     ([spread_cell(g.spread(lambda r: r.timed_throughput()), "{:,.0f}")] if same else []) + \
                     [metric("stp"), metric("antt"), metric("fairness"), metric("speedup_vs_serial"),
                      spread_cell(g.spread(lambda r: r.energy_measured()[0]), "{:,.0f}"),
                      spread_cell(g.spread(lambda r: energy_vs_serial(r, runs)), "{:.2f}"),
                      spread_cell(g.spread(lambda r: peak_memory(r) / GIB), "{:.2f}")] + \
                     [spread_cell(g.spread(lambda r: r.extra_metrics().get(k, NAN)), "{:.3g}") for k in extra] + \
                     ["<br>".join(esc(f) for f in fails)]
        cls = " class=bad" if fails else ""
        out.append(f"<tr{cls}>" + "".join(f"<td{' class=l' if i in (1, 3, 5, len(cells_html) - 1) else ''}>{c}</td>"
                                          for i, c in enumerate(cells_html)) + "</tr>")
    out.append("</table>")
    notes = []
    if not same:
        notes.append("The jobs are different workloads: their samples/s are shown per job and never summed.")
    if any(derived.values()):
        notes.append("† against this workload's run alone (serial, one job): each of these runs "
                     "collocated identical jobs without a serial run of its own, so each job's normalized "
                     "progress is its time alone over its time here (per step of the common window where the "
                     "runs used it, else per timed epoch), and the serial makespan of d jobs is d times one job's.")
    for d in sorted({g.degree for g in groups if g.degree > 1}):
        at = [g for g in groups if g.degree == d]
        for key, name, lower in (("stp", "STP", False), ("antt", "ANTT", True)):
            named = [(g.mode, g.spread(lambda r: num(r.summary.get(key)) if is_num(r.summary.get(key))
                                       else derived[id(r)].get(key, NAN))) for g in at]
            line = rank_line(named, lower_better=lower)
            if sum(1 for _, sp in named if sp.n) > 1:
                notes.append(f"{d} jobs, {name}: {esc(line)}")
    out.extend(f"<p class=note>{n}</p>" for n in notes)
    return "\n".join(out)


VERDICT_CLASS = {"holds": "ok", "does not hold": "off"}


def verdict(sp, low, high):
    """Our min-max over the repeats against the paper's range: "holds" inside it, "does not hold"
    wholly outside it, "inconclusive" across an end; "not measured" without values."""
    if not sp.n:
        return "not measured"
    if low <= sp.min and sp.max <= high:
        return "holds"
    if sp.max < low or sp.min > high:
        return "does not hold"
    return "inconclusive"


def paper_mode(mode):
    """The paper's name of one of our modes: its MIG stands for our mig and mig-emulate alike."""
    return "mig" if mode == "mig-emulate" else mode


def order_verdict(named, order):
    """Our modes' spreads [(mode, Spread)], lower better, against the paper's order (best first):
    every pair in its order lower in ours (holds), one the other way round (does not hold), else
    inconclusive (ranges overlap, or fewer than two of its modes measured)."""
    # the paper's names: its MIG is our mig, else mig-emulate (real MIG wins a tie)
    by = {paper_mode(m): sp for m, sp in sorted(named, key=lambda x: x[0] == "mig")}
    ranks = [spread_rank(by[a], by[b]) for i, a in enumerate(order) for b in order[i + 1:]
             if a in by and b in by and by[a].n and by[b].n]
    return ("does not hold" if any(x > 0 for x in ranks) else
            "holds" if ranks and all(x < 0 for x in ranks) else "inconclusive")


def epoch_ratio(groups, sizes, degree, modes, solo):
    """Each repeat's mean job time (Run.job_times: the timed epoch, or the step in the common
    window) at `degree` over the same mode's degree-1 time of the same job (Run.alone_key; the
    median of its repeats; else the job alone, solo_times), per workload of the sizes:
    [(label, Spread)]."""
    rows = []
    for workload, runs in groups:
        model = workload.split(":")[0]
        if MODEL_SIZES.get(model) not in sizes:
            continue
        cells = group_repeats(runs)
        for mode in modes:
            for h in [g for g in cells if paper_mode(g.mode) == mode and g.degree == degree]:
                key = h.runs[0].alone_key
                alone = [g for g in cells if g.mode == h.mode and g.degree == 1 and g.runs[0].alone_key == key]
                base = alone[0].spread(lambda r: mean(r.job_times())).median if alone else solo.get(key, NAN)
                if not math.isnan(base) and base > 0:
                    rows.append((f"{MODEL_NAMES.get(model, model)} x{degree} {h.mode}",
                                 h.spread(lambda r: mean(r.job_times()) / base)))
    return rows


def findings_section(ref, groups, cells, solo, gpu_names):
    out = [f"<p>The paper measured on {esc(ref.get('hardware', '?'))} with {esc(ref.get('software', '?'))}; "
           f"these runs: <b>{esc(', '.join(sorted(gpu_names)) or 'GPU not recorded')}</b> with this suite "
           "(cuDNN/cuBLAS, no framework). Ratios travel between machines better than seconds; a larger GPU "
           "leaves more room for collocation, so our ratios are expected to be lower than the paper's where "
           "a single job fills less of the GPU. The verdict compares our min-max over the repeats with the "
           "paper's range: <i>holds</i> inside it, <i>does not hold</i> wholly outside it, <i>inconclusive</i> "
           "across an end.</p>",
           "<table><tr><th class=l>where</th><th class=l>the paper states</th><th class=l>ours (runs it speaks of)</th>"
           "<th class=l>verdict</th></tr>"]
    uniform = [(w, rs) for w, rs in groups if ":" in w]
    recommender = any(rs and ":" not in w and ("XL" in w.upper() or "dlrm" in w) for w, rs in groups)
    for f in ref.get("findings", []):
        if not isinstance(f, dict):
            continue
        kind, ours, verdicts = f.get("kind"), [], []
        low, high = (num(f.get("low")), num(f.get("high"))) if is_num(f.get("low")) and is_num(f.get("high")) else (NAN, NAN)
        measured = []  # (label, Spread): checked against [low, high]
        if kind == "table2" and not recommender:
            continue  # Table 2 speaks of the recommender mix: only on pages with such a run
        if kind == "epoch_ratio":
            measured = epoch_ratio(uniform, f.get("sizes", []), f.get("degree", 0), f.get("modes", []), solo)
        elif kind == "alone_spread":
            for w, rs in uniform:
                alone = [g for g in group_repeats(rs) if g.degree == 1 and g.mode != "serial"]
                med = [g.spread(lambda r: mean(r.job_times())).median for g in alone]
                lo = min(finite(med), default=NAN)
                if len(finite(med)) > 1 and lo > 0:
                    for g in sorted(alone, key=lambda g: mode_key(g.mode)):
                        measured.append((f"{short_name(w)} x1 {g.mode} / fastest alone",
                                         g.spread(lambda r: mean(r.job_times()) / lo)))
        elif kind == "mode_order":
            order = [m for m in f.get("order", []) if isinstance(m, str)]
            for w, rs in uniform:
                for d in sorted({r.degree for r in rs if r.degree > 1}):
                    at = [g for g in group_repeats(rs) if g.degree == d and g.mode != "serial"]
                    named = [(g.mode, g.spread(lambda r: mean(r.job_times()))) for g in at]
                    if sum(1 for _, sp in named if sp.n) > 1:
                        ours.append(f"{short_name(w)} x{d} ({at[0].runs[0].time_what}, fastest first): {rank_line(named, lower_better=True)}")
                        verdicts.append(order_verdict(named, order))
        elif kind == "naive_vs_sequence":
            for w, rs in uniform:
                if MODEL_SIZES.get(w.split(":")[0]) not in f.get("sizes", []):
                    continue
                for g in group_repeats(rs):
                    if g.mode == "naive" and g.degree > 1 and g.runs[0].alone_key in solo:
                        measured.append((f"{short_name(w)} x{g.degree} naive {g.runs[0].time_what} / (n x alone)",
                                         g.spread(lambda r: mean(r.job_times()) / (r.degree * solo[r.alone_key]))))
        elif kind == "does_not_fit":
            ours = [f"{short_name(c.workload)} x{c.degree} {c.mode}: {c.status}" for c in cells if c.status == "does not fit"]
            if not ours:
                ours = ["every planned cell ran (none refused for memory)"]
        elif kind == "memory_sum":
            # the whole GPU's memory, CUDA contexts included, as nvidia-smi showed the paper (each
            # job's own memory adds up by construction, the GPU's need not), above its idle reading
            for w, rs in uniform:
                alone = [v for v in finite([memory_used_by_run(r) for r in rs if r.degree == 1]) if v > 0]
                if not alone:
                    continue
                for g in group_repeats(rs):
                    if g.degree > 1 and g.mode != "serial":
                        measured.append((f"{short_name(w)} x{g.degree} {g.mode} GPU memory used / (n x alone)",
                                         g.spread(lambda r: memory_used_by_run(r) / (r.degree * min(alone)))))
        elif kind == "energy_order":
            for w, rs in groups:
                for d in sorted({r.degree for r in rs if r.degree > 1}):
                    at = [g for g in group_repeats(rs) if g.degree == d]
                    # the paper's energy is to complete the same work; windows of one length hold
                    # different work, so there it is energy per trained sample
                    if at and all(g.window for g in at):
                        unit, named = "mJ per sample", [(g.mode, g.spread(lambda r: r.energy_measured()[1] * 1000)) for g in at]
                    else:
                        unit, named = "kJ", [(g.mode, g.spread(lambda r: r.energy_measured()[0] / 1000)) for g in at]
                    if sum(1 for _, sp in named if sp.n) > 1:
                        ours.append(f"{short_name(w)} x{d} ({unit}, least first): " + rank_line(named, lower_better=True) +
                                    " (" + ", ".join(f"{m} {sp.format('{:.2f}')}" for m, sp in named if sp.n) + ")")
                        order = [m for m in f.get("order", []) if isinstance(m, str)]
                        if order:
                            verdicts.append(order_verdict([(m, sp) for m, sp in named if m != "serial"], order))
        elif kind == "table2":
            for w, rs in groups:
                if ":" in w or "XL" not in w.upper() and "dlrm" not in w:
                    continue
                for r in sorted(rs, key=lambda r: mode_key(r.mode)):
                    sp = num(r.summary.get("speedup_vs_serial"))
                    ours.append(f"{r.mode}{' (shared GPU instance)' if r.mig_shared else ''}: makespan {fmt(num(r.summary.get('makespan_s')), '{:.1f}')} s"
                                + (f" ({(1 / sp - 1) * 100:+.0f}% vs serial)" if not math.isnan(sp) and sp > 0 else ""))
        elif kind == "timeline_note":
            ours = ["see the timelines of the mixed runs below"] if any(":" not in w for w, _ in groups) else []
        for label, sp in measured:
            ours.append(f"{label}: {sp.format('{:.2f}')}" + (f" (n={sp.n})" if sp.n > 1 else ""))
            verdicts.append(verdict(sp, low, high) if not math.isnan(low) else "")
        rng = f" (range used: {f['low']}-{f['high']})" if is_num(f.get("low")) and is_num(f.get("high")) else ""
        if not ours:
            verdicts = ["not measured"]
        elif not verdicts:
            verdicts = ["no range stated"]
        out.append(f"<tr><td class=l>{esc(f.get('where', ''))}</td><td class=l>{esc(f.get('statement', ''))}"
                   f"<span class=note>{esc(rng)}</span></td><td class=l>"
                   + ("<br>".join(esc(o) for o in ours[:14]) if ours else "<span class=note>not measured in these runs</span>")
                   + (f"<br><span class=note>… {len(ours) - 14} more</span>" if len(ours) > 14 else "") + "</td><td class=l>"
                   + "<br>".join(f"<span class={VERDICT_CLASS.get(v, 'note')}>{esc(v or '–')}</span>" for v in verdicts[:14])
                   + "</td></tr>")
    out.append("</table>")
    t2 = ref.get("table2")
    if isinstance(t2, list) and t2 and recommender:
        out.append(f"<h3>Table 2 as the paper prints it</h3><p class=note>{esc(ref.get('table2_note', ''))}</p>"
                   "<table><tr><th class=l>collocation</th><th>recommender h</th><th>ResNet h</th><th>total h</th>"
                   "<th>change</th><th>GPU util %</th><th>memory GB</th></tr>")
        for row in t2:
            if isinstance(row, dict):
                out.append(f"<tr><td class=l>{esc(row.get('collocation', ''))}</td><td>{fmt(num(row.get('recommender_h')), '{:.2f}')}</td>"
                           f"<td>{fmt(num(row.get('resnet_h')), '{:.2f}')}</td><td>{fmt(num(row.get('total_h')), '{:.2f}')}</td>"
                           f"<td>{fmt(num(row.get('total_change_pct')), '{:+.0f}%')}</td><td>{fmt(num(row.get('gpu_util_pct')), '{:.0f}')}</td>"
                           f"<td>{fmt(num(row.get('memory_gb')), '{:.2f}')}</td></tr>")
        out.append("</table>")
        # a study cell that did not run (refused, failed its fit check) has a group and no runs
        mixed = [(w, rs) for w, rs in groups if rs and ":" not in w and ("XL" in w.upper() or "dlrm" in w)]
        for w, rs in mixed:
            out.append(f"<p>Ours for <b>{esc(w)}</b> (seconds; quick runs time a few steps, so compare the change, "
                       "utilisation and memory, not the hours):</p><table><tr><th class=l>mode</th>"
                       + "".join(f"<th>job {i} timed epoch s</th>" for i in range(max(r.degree for r in rs)))
                       + "<th>makespan s</th><th>change</th><th>GPU util %</th><th>memory GiB</th></tr>")
            for r in sorted(rs, key=lambda r: mode_key(r.mode)):
                sp = num(r.summary.get("speedup_vs_serial"))
                util = r.timeline.mean_between("util_gpu_pct", r.timed_windows()) if r.timeline else NAN
                # the paper's row this one stands beside: its "ours" modes, shared MIG only as "MIG (shared)"
                paper = [row.get("collocation", "") for row in t2 if isinstance(row, dict)
                         and r.mode in row.get("ours", []) and bool(row.get("mig_shared")) == r.mig_shared]
                label = r.mode + (" (shared GPU instance)" if r.mig_shared else "")
                out.append(f"<tr><td class=l>{esc(label)}{' = ' + esc(paper[0]) if paper else ''}</td>" + "".join(f"<td>{fmt(t, '{:.3f}')}</td>" for t in r.timed_seconds())
                           + f"<td>{fmt(num(r.summary.get('makespan_s')), '{:.2f}')}</td>"
                           f"<td>{fmt((1 / sp - 1) * 100 if not math.isnan(sp) and sp > 0 else NAN, '{:+.0f}%')}</td>"
                           f"<td>{fmt(util, '{:.0f}')}</td><td>{gib(r.memory_after_epoch()[0])}</td></tr>")
            out.append("</table>")
    return "\n".join(out)


def precision_table(pairs):
    """The precision figure's numbers, for reading off and copying: one row per tf32/bf16 pair."""
    rows, sm_name, _ = precision_rows(pairs)
    out = ["<table><tr><th class=l rowspan=2>mix</th><th class=l rowspan=2>mode</th><th rowspan=2>jobs</th>"
           f"<th colspan=3>samples/s (timed epoch)</th><th colspan=2>{esc(sm_name or 'SM activity')} %</th>"
           "<th colspan=2>memory GiB</th></tr><tr><th>tf32</th><th>bf16</th><th>bf16 / tf32</th>"
           "<th>tf32</th><th>bf16</th><th>tf32</th><th>bf16</th></tr>"]
    for _, t, b, ((tp_t, tp_b), (sm_t, sm_b), (mem_t, mem_b)) in rows:
        ratio = tp_b / tp_t if tp_t > 0 and not math.isnan(tp_b) else NAN
        out.append(f"<tr><td class=l>{esc(t.mix)}</td><td class=l>{esc(t.mode)}</td><td>{t.degree}</td>"
                   f"<td>{fmt(tp_t, '{:,.0f}')}</td><td>{fmt(tp_b, '{:,.0f}')}</td><td>{fmt(ratio, '{:.2f}x')}</td>"
                   f"<td>{fmt(sm_t, '{:.0f}')}</td><td>{fmt(sm_b, '{:.0f}')}</td><td>{gib(mem_t)}</td><td>{gib(mem_b)}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def study_cards_note(studies):
    """What the page's heading says of a study spread over several cards (run_suite --study --gpus): its
    cells ran beside each other, so they shared the host. "" for studies on one card."""
    for _, st in studies:
        gpus, at_once = st.get("gpus"), st.get("cells_at_once")
        if isinstance(gpus, list) and len(gpus) > 1 and all(type(g) is int for g in gpus):
            return (f"cells over GPUs {','.join(map(str, gpus))}"
                    + (f", up to {at_once} at once" if type(at_once) is int else "")
                    + " (cells beside each other share the host's CPU, PCIe and memory)")
    return ""


def data_named(run_json):
    """What each job of a run trained on, as run.json names it (run_suite: real files and where, or
    synthetic data and why); 'not recorded' for runs from before it did."""
    jobs = run_json.get("jobs") if isinstance(run_json.get("jobs"), list) else []
    said = []
    for i, job in enumerate(jobs):
        detail = job.get("data_detail") if isinstance(job, dict) else None
        if isinstance(detail, str) and detail:
            line = f"{job.get('label', i)}: {detail}"
            if line not in said:
                said.append(line)
    return "; ".join(said) or "not recorded"


def provenance(runs, studies, unfinished=()):
    """Each study, each run's origin and data; and the runs that never wrote their summary, with
    what became of them (run.json's status, "running" resolved by its process)."""
    out = []
    for path, status in unfinished:
        out.append(f"<p class=bad>Run <code>{esc(path)}</code> wrote no summary: {esc(status)}</p>")
    for base, st in studies:
        out.append(f"<p>Study <b>{esc(st.get('study', '?'))}</b> in <code>{esc(base)}</code>: {esc(st.get('status', '?'))}, "
                   f"started {esc(st.get('started', '?'))}, finished {esc(st.get('finished', '') or '–')}, "
                   f"suite revision <code>{esc(st.get('suite_revision') or 'not recorded')}</code>, "
                   f"command <code>{esc(' '.join(map(str, st.get('command', []))))}</code></p>")
    out.append("<table><tr><th class=l>run folder</th><th class=l>command</th><th class=l>GPU</th><th class=l>driver / CUDA</th>"
               "<th class=l>libraries</th><th class=l>suite revision</th><th class=l>started</th>"
               "<th class=l>data (each job's: real files, or synthetic and why)</th></tr>")
    for r in sorted(runs, key=lambda r: r.path):
        j = r.run_json
        g = j.get("gpu") if isinstance(j.get("gpu"), dict) else {}
        cuda = g.get("cuda_driver_version")
        cuda_txt = f"{int(cuda) // 1000}.{int(cuda) % 1000 // 10}" if is_num(cuda) else "–"
        versions = dict(r.versions)
        if isinstance(j.get("versions"), dict):
            versions.update(j["versions"])
        libs = ", ".join(f"{k} {v}" for k, v in versions.items()) or "not recorded"
        rev = j.get("suite_revision") or j.get("git_revision") or versions.get("suite") or "not recorded"
        cmd = j.get("command") if isinstance(j.get("command"), list) else []
        out.append(f"<tr><td class=l><code>{esc(os.path.relpath(r.path, r.root))}</code></td><td class=l><code>{esc(' '.join(map(str, cmd)))}</code></td>"
                   f"<td class=l>{esc(g.get('name') or 'unknown')}</td><td class=l>{esc(g.get('driver_version') or '–')} / {esc(cuda_txt)}</td>"
                   f"<td class=l>{esc(libs)}</td><td class=l><code>{esc(rev)}</code></td><td class=l>{esc(j.get('started', '–'))}</td>"
                   f"<td class=l>{esc(data_named(j))}</td></tr>")
    out.append("</table>")
    return "\n".join(out)
