"""The report's section for advised runs (run_suite advise; runner/suite/multi/advise*.c): per advise
folder, the candidates as the advisor ranked them with their predictions and, where advise --check
measured them (check.json, check.csv), predicted against measured per mode (STP, ANTT, energy per
sample, each job's progress) with the error, the rank correlation and the regret (energy's too); and a figure of predicted against
measured STP, a point per mode. Whether the model's constants were fitted is said plainly: unfitted
defaults predict from guesses, not from this GPU's runs."""
import math
import os

from report_checks import (ADVICE, ADVICE_JOB, ADVICE_PREDICTION, CHECK, CHECK_ENERGY, CHECK_JOB, CHECK_MODE,
                           CHECK_SPREAD, CHECK_SUMMARY, check_fields, check_list, check_object, read_csv, read_json)
from report_data import MODE_COLOURS, NAN, num
from report_figures import render

OBJECTIVE_WORDS = {"stp": "STP (higher is better)", "antt": "ANTT (lower is better)",
                   "fairness": "fairness (higher is better)", "energy": "energy per sample (lower is better)"}


class Advised:
    """One advise folder: advice.json, and check.json with check.csv where --check ran."""

    def __init__(self, path, root):
        self.path, self.root = path, root
        where = os.path.join(path, "advice.json")
        self.advice = read_json(where, dict)
        check_fields(self.advice, ADVICE, where)
        check_list(self.advice, "predictions", ADVICE_PREDICTION, where)
        for i, p in enumerate(self.advice.get("predictions", [])):
            check_list(p, "jobs", ADVICE_JOB, where, f"predictions[{i}]")
        self.check, self.check_rows = None, []
        where = os.path.join(path, "check.json")
        if os.path.exists(where):
            self.check = read_json(where, dict)
            check_fields(self.check, CHECK, where)
            check_object(self.check, "summary", CHECK_SUMMARY, where, "")
            check_object(self.check.get("summary", {}), "energy", CHECK_ENERGY, where, "summary")
            check_list(self.check, "modes", CHECK_MODE, where)
            for i, m in enumerate(self.check.get("modes", [])):
                for key in ("stp", "antt", "fairness", "energy_per_sample_j"):
                    check_object(m, key, CHECK_SPREAD, where, f"modes[{i}]")
                check_list(m, "jobs", CHECK_JOB, where, f"modes[{i}]")
        if os.path.exists(os.path.join(path, "check.csv")):
            self.check_rows = read_csv(os.path.join(path, "check.csv"))  # its values refused by their rule

    def predictions(self):
        return [p for p in self.advice.get("predictions", []) if isinstance(p, dict)]

    def checked(self):
        """label -> check.json's entry for that mode, measured ones only."""
        modes = self.check.get("modes", []) if self.check else []
        return {m.get("label"): m for m in modes if isinstance(m, dict) and m.get("measured") is True}

    def summary(self):
        s = self.check.get("summary") if self.check else None
        return s if isinstance(s, dict) else {}

    def unfitted(self):
        """advice.json's constants_source starts "defaults" where no advise --fit was read."""
        return str(self.advice.get("constants_source", "")).startswith("defaults")


def find_advised(paths):
    """Every advise folder (one holding advice.json) under the given folders, in path order, links
    followed: tools/advise_check.sh names each mix's advice folder by a link beside its log."""
    out = []
    for root in paths:
        for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
            dirnames.sort()
            if "advice.json" in filenames:
                out.append(Advised(dirpath, root))
    return out


def spread_of(entry):
    """check.json's {median, min, max, n} as a Spread-like triple (NaN where absent)."""
    e = entry if isinstance(entry, dict) else {}
    n = num(e.get("n"))
    return num(e.get("median")), num(e.get("min")), num(e.get("max")), 0 if math.isnan(n) else int(n)


def pct(v):
    return "–" if math.isnan(v) else f"{100 * v:+.1f}%"


def f3(v):
    return "–" if math.isnan(v) else f"{v:.3f}"


def measured_cell(entry):
    med, lo, hi, n = spread_of(entry)
    if math.isnan(med):
        return "–"
    if n < 2 or f"{lo:.3f}" == f"{hi:.3f}":  # repeats that agree to the digits shown: one number
        return f"{med:.3f}"
    return f"{med:.3f} <span class='note nw'>[{lo:.3f}-{hi:.3f}]</span>"


def measured_energy_cell(m, esc):
    """The measured energy per sample over the window, median [min-max], or why it is missing."""
    if not m:
        return ""
    med, lo, hi, n = spread_of(m.get("energy_per_sample_j"))
    if math.isnan(med):
        return f"<span class=note>{esc(m.get('energy_note', 'not measured'))}</span>"
    if n < 2 or f"{lo:.4g}" == f"{hi:.4g}":
        return f"{med:.4g}"
    return f"{med:.4g} <span class='note nw'>[{lo:.4g}-{hi:.4g}]</span>"


def error_cell(e, esc):
    """A relative error, red from 10% off (the issue's target for STP)."""
    return "<td>–</td>" if math.isnan(e) else f"<td class={'off' if abs(e) > 0.10 else 'ok'}>{esc(pct(e))}</td>"


def advice_table(a, esc):
    """The candidates as ranked: predicted STP, ANTT, fairness, energy, fits and each job's progress;
    where checked, the measured median [min-max] of the repeats and the error beside each."""
    preds = a.predictions()
    checked = a.checked()
    labels = [j.get("label", f"job {i}") for i, j in enumerate(preds[0].get("jobs", []))] if preds else []
    best = a.summary().get("best_measured")
    any_check = bool(checked)
    head = "<tr><th>rank</th><th class=l>mode</th><th>STP</th>" + \
        ("<th>measured</th><th>error</th>" if any_check else "") + "<th>ANTT</th>" + \
        ("<th>measured</th><th>error</th>" if any_check else "") + "<th>fairness</th><th>J/sample</th>" + \
        ("<th>measured</th><th>error</th>" if any_check else "") + "<th>fits</th>" + \
        ("<th class=l>each job's progress" + ("<br>predicted / measured (error)" if any_check else "") + "</th>"
         if labels else "") + "</tr>"
    rows = []
    for k, p in enumerate(preds):
        m = checked.get(p.get("label"))
        fits = p.get("fits")
        marks = []
        if k == 0:
            marks.append("<b>recommended</b>")
        if m is not None and p.get("label") == best:
            marks.append("<b>best measured</b>")
        label = esc(p.get("label", "?")) + (f"<br><span class=note>{', '.join(marks)}</span>" if marks else "")
        cells = [f"<td>{k + 1}</td>", f"<td class='l nw'>{label}</td>", f"<td>{esc(f3(num(p.get('stp'))))}</td>"]
        if any_check:
            cells += [f"<td class=nw>{measured_cell(m.get('stp')) if m else '<span class=note>not checked</span>'}</td>",
                      error_cell(num(m.get("stp_error")) if m else NAN, esc)]
        cells.append(f"<td>{esc(f3(num(p.get('antt'))))}</td>")
        if any_check:
            cells += [f"<td class=nw>{measured_cell(m.get('antt')) if m else ''}</td>",
                      error_cell(num(m.get("antt_error")) if m else NAN, esc)]
        energy = num(p.get("energy_per_sample_j"))
        cells += [f"<td>{esc(f3(num(p.get('fairness'))))}</td>", f"<td>{'–' if math.isnan(energy) else f'{energy:.4g}'}</td>"]
        if any_check:
            cells += [f"<td class=nw>{measured_energy_cell(m, esc)}</td>",
                      error_cell(num(m.get("energy_error")) if m else NAN, esc)]
        cells.append(f"<td>{'yes' if fits is True else 'no' if fits is False else 'unknown'}</td>")
        jobs = p.get("jobs", [])
        mjobs = m.get("jobs", []) if m else []
        lines = []  # one line a job, so that a mix of seven stays one column
        for i, name in enumerate(labels):
            text = f"{name}: {f3(num(jobs[i].get('progress')) if i < len(jobs) else NAN)}"
            if m and i < len(mjobs):
                text += f" / {f3(num(mjobs[i].get('measured')))} ({pct(num(mjobs[i].get('error')))})"
            lines.append(f"<span class=nw>{esc(text)}</span>")
        if labels:
            cells.append("<td class=l>" + "<br>".join(lines) + "</td>")
        cls = " class=bad" if fits is False else ""
        rows.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    return "<table>" + head + "".join(rows) + "</table>"


def check_sentence(a):
    """The check in words: the median errors, Spearman, the regret and whether it is a tie."""
    s = a.summary()
    if not s:
        return ""
    objective = str(a.check.get("objective", a.advice.get("objective", "?")))
    objective = objective if objective == "fairness" else objective.upper()
    spearman = num(s.get("spearman"))
    text = (f"Over the {int(num(s.get('measured')) or 0)} modes measured ({a.check.get('repeats', '?')} repeats each): "
            f"median |error| of STP {pct(num(s.get('median_abs_stp_error'))).lstrip('+')}, of ANTT "
            f"{pct(num(s.get('median_abs_antt_error'))).lstrip('+')}, of a job's progress "
            f"{pct(num(s.get('median_abs_progress_error'))).lstrip('+')}; Spearman's rank correlation of predicted "
            f"against measured {objective}: "
            + (f"{spearman:.2f}" if not math.isnan(spearman) else "undefined (no spread in one of the two rankings)")
            + ". ")
    rec, best, regret = s.get("recommended"), s.get("best_measured"), num(s.get("regret"))
    if not best or math.isnan(regret):
        return text + "Regret: unknown (the recommended mode was not measured)."
    if rec == best:
        return text + f"Regret: none: the recommended {rec} is the best measured."
    text += f"Regret: the recommended {rec} measured {100 * regret:.1f}% behind {best}, the best measured"
    return text + (", a tie: inside the repeats' spread." if s.get("tie") is True else ".")


def energy_sentence(a):
    """The energy per sample's check in words, whatever the check's objective: its median error and
    the regret of the mode predicted lowest against the lowest measured; "" where check.json has none."""
    s = a.summary()
    e = s.get("energy")
    if not isinstance(e, dict):
        return ""
    err = num(s.get("median_abs_energy_error"))
    if math.isnan(err):
        notes = sorted({m.get("energy_note") for m in a.checked().values() if m.get("energy_note")})
        return "Energy per sample: not measured" + (f" ({'; '.join(notes)})." if notes else ".")
    spearman = num(e.get("spearman"))
    text = (f"Energy per sample over the window: median |error| {pct(err).lstrip('+')}; Spearman's rank correlation "
            f"{f'{spearman:.2f}' if not math.isnan(spearman) else 'undefined'}. ")
    choice, lowest, regret = e.get("recommended"), e.get("best_measured"), num(e.get("regret"))
    if not choice or not lowest or math.isnan(regret):
        return text + "Its regret: unknown (the mode predicted lowest was not measured)."
    if choice == lowest:
        return text + f"Its regret: none: {choice}, predicted lowest, measured lowest."
    return text + (f"Its regret: {choice}, predicted lowest, measured {100 * regret:.1f}% above {lowest}, the lowest "
                   "measured" + (", a tie: inside the repeats' spread." if e.get("tie") is True else "."))


def figure_advice(plt, a):
    """Measured STP (median, min-max whiskers over the repeats) against predicted, a point per
    checked mode, the diagonal where they agree, the recommended and the best measured marked. None
    where nothing was checked."""
    checked = a.checked()
    points = []
    for m in (a.check.get("modes", []) if a.check else []):
        if m.get("label") not in checked:
            continue
        med, lo, hi, n = spread_of(m.get("stp"))
        pred = num(m.get("predicted_stp"))
        if not (math.isnan(med) or math.isnan(pred)):
            points.append((m, pred, med, lo if not math.isnan(lo) else med, hi if not math.isnan(hi) else med))
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(6.8, 5.0))
    seen = {}
    for m, pred, med, lo, hi in points:
        ax.errorbar([pred], [med], yerr=[[med - lo], [hi - med]], fmt="o", color=MODE_COLOURS.get(m.get("mode"), "#444"),
                    ecolor="#222", elinewidth=0.8, capsize=3, markersize=6, label=m.get("label", "?"))
        key = (round(pred, 3), round(med, 3))  # modes that land on one point: their names stacked, not overprinted
        ax.annotate(m.get("label", "?"), (pred, med), xytext=(12, -4 - 10 * seen.get(key, 0)), textcoords="offset points",
                    fontsize=7, color="#333")
        seen[key] = seen.get(key, 0) + 1
    s = a.summary()
    rec = next((p for p in points if p[0].get("label") == s.get("recommended")), None)
    best = next((p for p in points if p[0].get("label") == s.get("best_measured")), None)
    if rec:
        ax.plot([rec[1]], [rec[2]], linestyle="none", marker="o", markersize=15, markerfacecolor="none",
                markeredgecolor="#d62728", markeredgewidth=1.5, label="recommended")
    if best:
        ax.plot([best[1]], [best[2]], linestyle="none", marker="s", markersize=19, markerfacecolor="none",
                markeredgecolor="#2ca02c", markeredgewidth=1.5, label="best measured")
    values = [v for _, pred, med, lo, hi in points for v in (pred, lo, hi)]
    low, high = min(values), max(values)
    pad = max(0.05, 0.08 * (high - low))
    ends = [max(0.0, low - pad), high + pad]
    ax.plot(ends, ends, linestyle=":", color="#888", label="predicted = measured")
    ax.set_xlim(ends)
    ax.set_ylim(ends)
    ax.set_aspect("equal")
    ax.set_xlabel("predicted STP")
    ax.set_ylabel(f"measured STP (median, min-max of {a.check.get('repeats', '?')} repeats)")
    ax.set_title(f"STP per mode: measured against predicted, {a.advice.get('mix', '?')}", loc="left", fontsize=9)
    handles = [h for h, l in zip(*ax.get_legend_handles_labels()) if l in ("recommended", "best measured",
                                                                           "predicted = measured")]
    ax.legend(handles=handles, fontsize=7, frameon=False, loc="upper left", markerscale=0.6)
    fig.tight_layout()
    return render(fig)


def advice_section(plt, advised, emit, body, esc):
    """The section, through the report's emit: per advise folder its heading, the constants' note,
    the advisor's reason, the table, the check in words and the figure."""
    body.append("<h2 id=advice>Advised runs (run_suite advise)</h2><p class=note>The advisor predicts each "
                "candidate mode from short probes of each job alone and ranks them by the objective; "
                "<code>advise --check</code> then runs the ranked modes (window measurement, repeats against one "
                "serial run) and measures what it predicted. Error: (predicted - measured) / measured, green within "
                "10%. A ranking or regret inside the repeats' spread is a tie.</p>")
    for n, a in enumerate(advised):
        adv = a.advice
        where = os.path.relpath(a.path, a.root) if a.path != a.root else os.path.basename(a.path.rstrip("/"))
        body.append(f"<h3>{esc(adv.get('mix', '?'))} on {esc(adv.get('gpu', '?'))}, by "
                    f"{esc(OBJECTIVE_WORDS.get(adv.get('objective'), adv.get('objective', '?')))} "
                    f"<span class=note>{esc(where)}</span></h3>")
        source = str(adv.get("constants_source", "not recorded"))
        if a.unfitted():
            body.append("<p class=off><b>The model's constants are unfitted defaults</b> (advice.json: "
                        f"<code>constants_source</code> \"{esc(source)}\"): these predictions rest on guessed "
                        "constants, not on measured runs of this GPU. <code>run_suite advise --fit RUN_DIR...</code> "
                        "fits them to measured runs.</p>")
        else:
            body.append(f"<p class=note>The model's constants: {esc(source)}.</p>")
        if adv.get("why"):
            body.append(f"<p>Recommended: {esc(adv['why'])}</p>")
        wall = num(adv.get("probe_wall_s"))
        probes = adv.get("probes", [])
        cached = sum(1 for p in probes if isinstance(p, dict) and p.get("cached") is True)
        setting = adv.get("probes_setting")
        body.append(f"<p class=note>{len(probes)} probe(s)"
                    + (f" (--probes {esc(setting)})" if isinstance(setting, str) else "")
                    + f", {cached} from the cache"
                    + (f", {wall:.0f} s of probing" if not math.isnan(wall) else "")
                    + ("; no check (run advise --check to measure the ranked modes)" if a.check is None else "")
                    + ".</p>")
        body.append(advice_table(a, esc))
        if a.check is not None:
            body.append(f"<p>{esc(check_sentence(a))}</p>")
            if energy_sentence(a):
                body.append(f"<p>{esc(energy_sentence(a))}</p>")
            fig = figure_advice(plt, a)
            if fig:
                emit(f"fig-advice-{n + 1}", f"advice {adv.get('mix', '?')}", "measured against predicted STP per mode",
                     fig, "A point per mode checked: its predicted STP across, the median of its repeats up with their "
                     "min-max as whiskers; on the dotted diagonal prediction and measurement agree. Red ring: the "
                     "recommended mode; green square: the best measured.")
