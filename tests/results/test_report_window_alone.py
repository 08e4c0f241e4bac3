#!/usr/bin/env python3
"""A study cell under the window measurement is compared with its workload's run alone by the jobs'
window rates (results/report_data.py, Run.job_times), not by their "epochs": there an epoch is cut
at stop, as long as the window whether the job ran alone or beside others, so a ratio of epochs
says every job kept its full speed. tests/fixtures/report_window_alone holds three cells of a real
`--study all --quick` on an H200 (session 14): ResNet-50 (M) alone, and 2*M under mps and naive,
whose pages printed STP 1.99 and ANTT 1.00 for jobs that ran at 0.45-0.56 of their speed alone.
Checks STP, ANTT and fairness against the rates in summary.json, the findings' ratios, and the
page's own cells, and the headings' words. Exit 0 passed, 1 failed (each failure printed)."""
import os
import sys
import re

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks
from report_data import group_repeats, load, solo_makespans, solo_times  # noqa: E402
from report_data import mix_title, read_json, run_kind  # noqa: E402
from report_html import comparison_table, epoch_ratio, findings_section  # noqa: E402

FIXTURE = os.path.join(HERE, "fixtures", "report_window_alone")
check = Checks("test_report_window_alone")


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b))


runs, cells, _, _ = load([FIXTURE])
solo, whole = solo_times(runs), solo_makespans(runs)
alone = [r for r in runs if r.mode == "serial"][0]
alone_rate = alone.jobs[0]["window_samples_per_s"]
for r in runs:
    if r.mode == "serial":
        continue
    rates = [j["window_samples_per_s"] for j in r.jobs]
    progress = [x / alone_rate for x in rates]
    d = r.against_alone(solo, whole)
    check(close(d.get("stp", 0), sum(progress)), f"{r.mode}: STP {d.get('stp')} != sum of rate/alone {sum(progress)}")
    check(close(d.get("antt", 0), sum(1 / p for p in progress) / len(progress)),
          f"{r.mode}: ANTT {d.get('antt')} is not the mean slowdown of the rates")
    check(close(d.get("fairness", 0), min(progress) / max(progress)), f"{r.mode}: fairness {d.get('fairness')}")
    check(d.get("stp", 9) < 1.2, f"{r.mode}: STP {d.get('stp')}: two jobs at about half speed each cannot sum to ~2")
    # the epochs are as long as the window alone and beside: the old ratio of them said ~1 per job
    epochs = [j["timed_seconds"] for j in r.jobs]
    check(all(abs(e - alone.jobs[0]["timed_seconds"]) < 0.1 for e in epochs),
          f"{r.mode}: the fixture's cut epochs {epochs} are no longer as long as the window")
    check(r.time_what == "step in the common window", f"{r.mode}: time_what {r.time_what!r}")

# the findings' "time per epoch at degree 2 over degree 1" is the slowdown of the rates
rows = dict(epoch_ratio([("resnet50:imagenet64@128", runs)], ["medium"], 2, ["mps", "naive"], solo))
for r in runs:
    if r.mode == "serial":
        continue
    label = f"ResNet-50 x2 {r.mode}"
    want = sum(alone_rate / j["window_samples_per_s"] for j in r.jobs) / r.degree
    got = rows.get(label)
    check(got is not None and close(got.median, want, 1e-6),
          f"{label}: epoch_ratio {got.median if got else None} != mean slowdown {want}")

# the page's table shows the derived STP of each cell
text = " ".join(re.sub(r"<[^>]+>", " ", comparison_table(runs, cells, solo, whole)).split())
for r in runs:
    if r.mode != "serial":
        d = r.against_alone(solo, whole)
        check(f"{d['stp']:.2f} † {d['antt']:.2f} †" in text, f"{r.mode}: STP {d['stp']:.2f} † and ANTT not on the page")
        # both runs last their warm-up and window: no speed-up from their makespans
        check("speedup_vs_serial" not in d, f"{r.mode}: a speed-up vs serial from window-bound makespans")
check(len(group_repeats(runs)) == 3, "three cells")

# the paper's energy is to complete the same work: over windows of one length, energy per sample
ref = read_json(os.path.join(HERE, "..", "results", "study_reference.json"), dict)
found = " ".join(re.sub(r"<[^>]+>", " ", findings_section(ref, [("resnet50:imagenet64@128", runs)], cells, solo,
                                                          {"NVIDIA H200"})).split())
per = {r.mode: r.energy_measured()[1] * 1000 for r in runs}
check("ResNet-50 x2 (mJ per sample, least first): mps" in found and per["mps"] < per["naive"],
      f"energy per sample not ranked: {per}")
check("ResNet-50 x2 mps: 1.8" in found, "the 2-way epoch ratio (the mean slowdown, 1.80) not in the findings")
# headings that stand apart from their tables say what they show
check(all(run_kind(r) == "tf32 · common window" for r in runs), f"run_kind: {[run_kind(r) for r in runs]}")
check(mix_title("S[steps=50]+M[steps=30]+M[steps=30]") == "mix S+M+M (S: steps=50; M: steps=30)",
      f"mix_title: {mix_title('S[steps=50]+M[steps=30]+M[steps=30]')}")
check(mix_title("S+M+M") == "mix S+M+M", "a mix without overrides keeps its name")

# a run's window energy fields: the total is the energy column's, the per-sample figure its own
# column in words, and no raw field name heads a column
for r in runs:
    r.summary.update(window_energy_j=480.0, window_samples=20000, window_energy_per_sample_j=0.024)
table = comparison_table(runs, cells, solo, whole)
heads = re.findall(r"<th[^>]*>([^<]*)</th>", table)
check("energy / sample (J), window" in heads and not [h for h in heads if "_" in h], f"the table's heads: {heads}")

check.finish()
