#!/usr/bin/env python3
"""Scores the advisor's check on the held-out mixes (issue 51's targets): python3 tools/advise_score.py OUT

OUT is tools/advise_check.sh's folder: OUT/mixes.txt (name|mix|precision|role) and each mix's
OUT/<name>/<time>-advise-<mix>/{advice.json,check.json}; OUT/<name>/mode_all_wall_s where the
--mode all wall time of that mix was measured. Over the held-out mixes that have a check.json:
  - median |STP error| per mode (mode: the candidate's --mode), median |ANTT error|;
  - the Spearman rank correlation of the modes on the objective (median over mixes, and each mix's);
  - the share of mixes whose recommendation is the best measured, inside its spread (the check's
    tie) or within 3% of it;
  - the recommendation's measured objective against the best single fixed candidate chosen for all
    held-out mixes (the label with the best mean measured objective over the mixes that measured it);
  - the probes' wall time against --mode all's where known;
  - energy per sample (no target in the issue, reported beside the others): the median |error| of the
    measured modes, and over the mixes the regret of the mode predicted lowest against the lowest
    measured (check.json's summary.energy, whatever objective the check ranked by): its median and
    the share of mixes within the lowest's spread or 3% of it.
Targets (H100): STP within 10%, ANTT within 15%, rank correlation at least 0.8, recommendation within
the best's spread or 3% in at least 90% of mixes, better than the best fixed mode; probing at most a
fifth of --mode all. Prints the figures and writes OUT/score.json."""
import glob
import json
import os
import statistics
import sys


def load(out):
    rows = []
    with open(os.path.join(out, "mixes.txt")) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            name, mix, precision, role = line.split("|")
            found = sorted(glob.glob(os.path.join(out, name, "*-advise-*", "check.json")))
            entry = {"name": name, "mix": mix, "precision": precision, "role": role, "check": None}
            if found:
                folder = os.path.dirname(found[-1])
                with open(found[-1]) as c:
                    entry["check"] = json.load(c)
                advice = os.path.join(folder, "advice.json")
                if os.path.exists(advice):
                    with open(advice) as a:
                        entry["advice"] = json.load(a)
                wall = os.path.join(out, name, "mode_all_wall_s")
                if os.path.exists(wall):
                    with open(wall) as w:
                        entry["mode_all_wall_s"] = float(w.read().strip())
            rows.append(entry)
    return rows


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def score(rows):
    held = [r for r in rows if r["role"] == "held-out" and r["check"]]
    stp_by_mode, antt_by_mode, spearman, within, by_label, recommended = {}, {}, [], [], {}, []
    wall, energy_error, energy_regret, energy_within = [], [], [], []
    for r in held:
        check = r["check"]
        summary = check["summary"]
        for m in check["modes"]:
            if not m.get("measured"):
                continue
            if m.get("stp_error") is not None:
                stp_by_mode.setdefault(m["mode"], []).append(abs(m["stp_error"]))
            if m.get("antt_error") is not None:
                antt_by_mode.setdefault(m["mode"], []).append(abs(m["antt_error"]))
            if m.get("energy_error") is not None:
                energy_error.append(abs(m["energy_error"]))
            if m.get("measured_objective") is not None:
                by_label.setdefault(m["label"], {})[r["name"]] = m["measured_objective"]
        if summary.get("spearman") is not None:
            spearman.append(summary["spearman"])
        regret = summary.get("regret")
        if regret is not None:
            within.append(bool(summary.get("tie")) or regret <= 0.03)
            rec = next(m for m in check["modes"] if m["label"] == summary["recommended"])
            recommended.append((r["name"], rec["measured_objective"]))
        energy = summary.get("energy") if isinstance(summary.get("energy"), dict) else {}
        if energy.get("regret") is not None:
            energy_regret.append(energy["regret"])
            energy_within.append(bool(energy.get("tie")) or energy["regret"] <= 0.03)
        probe = r.get("advice", {}).get("probe_wall_s")
        if probe is not None and r.get("mode_all_wall_s"):
            wall.append(probe / r["mode_all_wall_s"])
    per_mix = []
    for r in held:
        summary = r["check"]["summary"]
        per_mix.append({"name": r["name"], "mix": r["mix"], "precision": r["precision"],
                        "modes": summary.get("measured"), "recommended": summary.get("recommended"),
                        "best_measured": summary.get("best_measured"), "regret": summary.get("regret"),
                        "tie": bool(summary.get("tie")), "median_abs_stp_error": summary.get("median_abs_stp_error"),
                        "median_abs_antt_error": summary.get("median_abs_antt_error"),
                        "spearman": summary.get("spearman")})
    names = {n for n, _ in recommended}
    fixed = None
    for label, values in by_label.items():
        if names and names <= set(values):  # measured on every mix with a recommendation
            mean = statistics.mean(values[n] for n in names)
            if fixed is None or mean > fixed[1]:
                fixed = (label, mean)
    rec_mean = statistics.mean(v for _, v in recommended) if recommended else None
    return {
        "held_out_checked": [r["name"] for r in held],
        "per_mix": per_mix,
        "median_abs_stp_error_by_mode": {m: median(v) for m, v in sorted(stp_by_mode.items())},
        "median_abs_antt_error": median([x for v in antt_by_mode.values() for x in v]),
        "median_abs_antt_error_by_mode": {m: median(v) for m, v in sorted(antt_by_mode.items())},
        "spearman_median": median(spearman),
        "spearman": spearman,
        "recommendation_within_share": (sum(within) / len(within)) if within else None,
        "recommended_mean_objective": rec_mean,
        "best_fixed": {"label": fixed[0], "mean_objective": fixed[1]} if fixed else None,
        "probe_over_mode_all_median": median(wall),
        "median_abs_energy_error": median(energy_error),
        "energy_regret_median": median(energy_regret),
        "energy_within_share": (sum(energy_within) / len(energy_within)) if energy_within else None,
    }


def show_mixes(s):
    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}%"
    print("| mix | precision | modes measured | recommended | best measured | regret | STP median error | "
          "ANTT median error | Spearman |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for m in s.get("per_mix", []):
        regret = "-" if m["regret"] is None else pct(m["regret"]) + (" (a tie)" if m["tie"] else "")
        sp = "-" if m["spearman"] is None else f"{m['spearman']:.2f}"
        print(f"| {m['mix']} | {m['precision']} | {m['modes']} | {m['recommended']} | {m['best_measured']} | {regret} | "
              f"{pct(m['median_abs_stp_error'])} | {pct(m['median_abs_antt_error'])} | {sp} |")


def show(s):
    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}%"
    print(f"held-out mixes checked: {len(s['held_out_checked'])} ({', '.join(s['held_out_checked']) or 'none'})")
    for mode, v in s["median_abs_stp_error_by_mode"].items():
        print(f"  STP median |error| {mode:12s} {pct(v)}   (target 10%)")
    print(f"  ANTT median |error| {pct(s['median_abs_antt_error'])}   (target 15%)")
    sp = s["spearman_median"]
    print(f"  Spearman (median over mixes) {'-' if sp is None else f'{sp:.2f}'}   (target 0.8)")
    print(f"  recommendation within the best's spread or 3%: {pct(s['recommendation_within_share'])}   (target 90%)")
    fixed, rec = s["best_fixed"], s["recommended_mean_objective"]
    if fixed and rec is not None:
        print(f"  recommended mean objective {rec:.3f} against the best fixed candidate "
              f"({fixed['label']}) {fixed['mean_objective']:.3f}   (target: above; ANTT negated)")
    w = s["probe_over_mode_all_median"]
    print(f"  probing wall time over --mode all's: {'-' if w is None else f'{w:.2f}'}   (target 0.2)")
    print(f"  energy per sample median |error| {pct(s['median_abs_energy_error'])}; the mode predicted lowest "
          f"measured {pct(s['energy_regret_median'])} above the lowest (median regret), within its spread or 3% in "
          f"{pct(s['energy_within_share'])} of mixes   (no target)")


def main():
    if len(sys.argv) != 2:
        print("usage: advise_score.py OUT", file=sys.stderr)
        return 2
    out = sys.argv[1]
    if not os.path.exists(os.path.join(out, "mixes.txt")):
        print(f"advise_score.py: {out}/mixes.txt: not found (tools/advise_check.sh writes it)", file=sys.stderr)
        return 2
    s = score(load(out))
    show(s)
    if s["per_mix"]:
        print()
        show_mixes(s)
    with open(os.path.join(out, "score.json"), "w") as f:
        json.dump(s, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
