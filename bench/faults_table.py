#!/usr/bin/env python3
"""The fault x mode table of bench/faults.sh: one row per run folder holding outcome.json (mode,
kind, run_suite's exit status, leftovers) and the run's summary.json (each job's status, reason,
collateral_of; the run's "faults" object)."""
import glob
import json
import os
import sys


def short(text, width=90):
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def job_outcome(job):
    if job.get("status") == "ok":
        return "ok"
    if job.get("collateral_of") is not None:
        return "collateral of job %d" % job["collateral_of"]
    return "%s: %s" % (job.get("status"), short(job.get("reason", ""), 60))


def main(root):
    rows = []
    for path in sorted(glob.glob(os.path.join(root, "*", "outcome.json"))):
        outcome = json.load(open(path))
        summaries = glob.glob(os.path.join(os.path.dirname(path), "*", "summary.json"))
        summary = json.load(open(summaries[0])) if summaries else {}
        jobs = summary.get("jobs", [])
        faulty = short(jobs[0].get("status", "") + ": " + jobs[0].get("reason", "")) if jobs else "no summary"
        others = "; ".join(job_outcome(j) for j in jobs[1:]) or "-"
        faults = summary.get("faults", {})
        contained = {True: "yes", False: "NO", None: "-"}.get(faults.get("contained"), "-")
        rows.append((outcome["kind"], outcome["mode"], faulty, others, contained, outcome["exit"],
                     outcome["leftovers"], outcome.get("seconds", 0)))
    print("| fault | mode | faulty job's record | other job | contained | exit | leftovers after | s |")
    print("|---|---|---|---|---|---|---|---|")
    for r in sorted(rows):
        print("| %s | %s | %s | %s | %s | %d | %s | %.0f |" % r)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
