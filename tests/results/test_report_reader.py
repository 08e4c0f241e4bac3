#!/usr/bin/env python3
"""The report's reader against values of the wrong kind (issue 46, items 3 and 1): each case edits
one file of a copy of a fixture run (an integer of 400 digits, 10**26 samples, 100,000 '[' or 40
nested lists, text or a list where a number belongs, a negative rate, a share above 1, 'abc' in
jobs.csv, a version of 400 digits in a job's log, text for a study cell's degree, a job that is no
object), and the report must exit 2 naming the file, the place and what was expected, with no
traceback. A run folder whose run.json still says "running" with its process gone, and no summary,
is named as failed. Then the untouched copy still makes its page (exit 0). Exit 0 passed, 1 failed."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks, require_matplotlib

require_matplotlib("test_report_reader")
check = Checks("test_report_reader")
STUDY = os.path.join(HERE, "fixtures", "report", "20261124T152934Z-study-small")
RUN = os.path.join(STUDY, "S-x1-naive", "20261124T152936Z-naive-1xS")
REPORT = os.path.join(HERE, "..", "results", "report.py")


def report(folder, page):
    p = subprocess.run([sys.executable, REPORT, folder, "-o", page], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stderr


def edit_json(path, change):
    with open(path) as f:
        data = json.load(f)
    text = change(data)
    with open(path, "w") as f:
        f.write(text if isinstance(text, str) else json.dumps(data))


def set_key(key, value_text):
    """summary.json's top-level key set to a raw JSON text (which json cannot produce, 10**400)."""
    def change(data):
        data[key] = "@@VALUE@@"
        return json.dumps(data).replace('"@@VALUE@@"', value_text)
    return change


def set_job_key(key, value_text):
    def change(data):
        data["jobs"][0][key] = "@@VALUE@@"
        return json.dumps(data).replace('"@@VALUE@@"', value_text)
    return change


def edit_text(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text, (path, old)
    with open(path, "w") as f:
        f.write(text.replace(old, new, 1))


def edit_csv_cell(path, column, value):
    with open(path) as f:
        lines = f.read().splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index(column)] = value
    lines[1] = ",".join(cells)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def deep(n):
    return "[" * n + "]" * n


# (what, file under the run, how to edit it, the words the refusal must hold)
CASES = [
    ("an integer of 400 digits", "summary.json", set_key("makespan_s", "1" + "0" * 400),
     ["summary.json: makespan_s is an integer of 401 digits: expected a finite number below 1e+15"]),
    ("10**26 samples", "summary.json", set_key("total_samples", "1" + "0" * 26),
     ["summary.json: total_samples is an integer of 27 digits"]),
    ("a float beyond 1e15", "summary.json", set_key("total_samples", "3e20"),
     ["summary.json: total_samples is 3e+20: expected a finite number below 1e+15"]),
    ("100,000 '['", "summary.json", set_key("faults", deep(100000)), ["summary.json: nested too deeply"]),
    ("40 nested lists", "summary.json", set_key("faults", deep(40)), ["summary.json: faults", "nested more than 32"]),
    ("text for a time", "summary.json", set_key("makespan_s", '"fast"'),
     ["summary.json: makespan_s is 'fast': expected a number of 0 or more"]),
    ("a list for a rate", "summary.json", set_job_key("window_samples_per_s", "[1, 2]"),
     ["summary.json: jobs[0].window_samples_per_s is a list: expected a number of 0 or more"]),
    ("a negative rate", "summary.json", set_job_key("window_samples_per_s", "-1.5"),
     ["jobs[0].window_samples_per_s is -1.5: expected a number of 0 or more"]),
    ("a share above 1", "summary.json", set_job_key("window_overlap", "1.5"),
     ["jobs[0].window_overlap is 1.5: expected a share from 0 to 1"]),
    ("text for a flag", "summary.json", set_key("same_workload", '"yes"'),
     ["summary.json: same_workload is 'yes': expected true or false"]),
    ("a fraction of a count", "summary.json", set_job_key("epochs", "2.5"),
     ["jobs[0].epochs is 2.5: expected a whole number of 0 or more"]),
    ("a job that is no object", "summary.json", lambda d: json.dumps({**d, "jobs": [3] + d["jobs"][1:]}),
     ["summary.json: jobs[0] is 3: expected an object"]),
    ("a version of 400 digits in run.json", "run.json",
     lambda d: json.dumps({**d, "gpu": {**d["gpu"], "cuda_driver_version": "@@"}}).replace('"@@"', "1" + "0" * 399),
     ["run.json: gpu.cuda_driver_version is an integer of 400 digits"]),
    ("text for the GPU's version", "run.json", lambda d: json.dumps({**d, "gpu": {**d["gpu"], "cuda_driver_version": "12"}}),
     ["run.json: gpu.cuda_driver_version is '12': expected a version number"]),
]


def run_cases(tmp):
    for n, (what, name, change, words) in enumerate(CASES):
        folder = os.path.join(tmp, f"case{n}")
        shutil.copytree(RUN, folder)
        edit_json(os.path.join(folder, name), change)
        rc, err = report(folder, os.path.join(tmp, f"case{n}.html"))
        ok = rc == 2 and "Traceback" not in err and all(w in err for w in words)
        check(ok, f"{what}: exit {rc}, expected 2 with {words}; stderr: {err[-600:]}")
    # CSV cells and a job's log, edited as text
    text_cases = [
        ("'abc' in jobs.csv", "jobs.csv", lambda p: edit_csv_cell(p, "timed_s", "abc"),
         ["jobs.csv: row 2, column 'timed_s': 'abc' is not a finite number"]),
        ("a negative rate in jobs.csv", "jobs.csv", lambda p: edit_csv_cell(p, "timed_samples_per_s", "-5"),
         ["jobs.csv: row 2, column 'timed_samples_per_s': '-5' is not a finite number (expected 0 or more"]),
        ("a peak of 400 digits in a job's log", "job-0-S.log",
         lambda p: edit_text(p, '"peak_bytes":12884901888', '"peak_bytes":1' + "0" * 399),
         ["job-0-S.log: line 4: peak_bytes is an integer of 400 digits: expected a number of 0 or more"]),
        ("a CUDA version of 400 digits in a job's log", "job-0-S.log",
         lambda p: edit_text(p, '{"event":"epoch","epoch":1,',
                             '{"event":"setup","cuda_runtime_version":1' + "0" * 399 + '}\n{"event":"epoch","epoch":1,'),
         ["job-0-S.log: line 4: cuda_runtime_version is an integer of 400 digits: expected a version number"]),
    ]
    for n, (what, name, change, words) in enumerate(text_cases):
        folder = os.path.join(tmp, f"text{n}")
        shutil.copytree(RUN, folder)
        change(os.path.join(folder, name))
        rc, err = report(folder, os.path.join(tmp, f"text{n}.html"))
        ok = rc == 2 and "Traceback" not in err and all(w in err for w in words)
        check(ok, f"{what}: exit {rc}, expected 2 with {words}; stderr: {err[-600:]}")


def study_cell_case(tmp):
    folder = os.path.join(tmp, "study")
    shutil.copytree(STUDY, folder)
    def change(d):
        d["cells"][0]["degree"] = "two"
        return json.dumps(d)
    edit_json(os.path.join(folder, "study.json"), change)
    rc, err = report(folder, os.path.join(tmp, "study.html"))
    ok = rc == 2 and "Traceback" not in err and "study.json: cells[0].degree is 'two': expected a whole number" in err
    check(ok, f"study cell: exit {rc}; stderr: {err[-600:]}")


def unfinished_case(tmp):
    """A run killed (or whose disk filled) after writing "running": no summary, its process gone."""
    folder = os.path.join(tmp, "killed")
    os.makedirs(folder)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    with open(os.path.join(folder, "run.json"), "w") as f:
        json.dump({"status": "running", "mode": "naive", "process": {"pid": gone.pid, "boot_id": boot, "start_ticks": 1}}, f)
    rc, err = report(folder, os.path.join(tmp, "killed.html"))
    ok = rc == 2 and re.search(r"runs without one: .*killed: failed: its run_suite \(process \d+\) ended", err)
    check(ok, f"a run that never wrote its end: exit {rc}; stderr: {err[-600:]}")


with tempfile.TemporaryDirectory() as tmp:
    run_cases(tmp)
    study_cell_case(tmp)
    unfinished_case(tmp)
    rc, err = report(RUN, os.path.join(tmp, "fixture.html"))  # the rules refuse nothing run_suite writes
    check(rc == 0, f"the fixture itself: exit {rc}: {err[-600:]}")
check.finish()
