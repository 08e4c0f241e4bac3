#!/usr/bin/env python3
"""The sharing guard's records, comparison and tables in docs/results.md (tools/sharing_guard.sh runs
the measurements; docs/measurement.md, "The sharing guard", says what it is for).

A record is one guard run on one GPU: for each cell (a mix in a precision) and each mode, the spread
over the repeats (median, min, max, n; base/spread.h) of STP, ANTT, fairness and of each job's
absolute samples/s, the ranking lines run_suite wrote by results' rule (results/repeats.h), the
suite revision measured and the date. tools/guard/expected/<GPU>.json is the record a GPU is held to.

  sharing_guard.py collect --cell MIX PRECISION RUN_DIR [--cell ...] --revision R --commit C
                           --date D --measurement TEXT [--gpu NAME] -o RECORD
  sharing_guard.py record RECORD EXPECTED_DIR        write EXPECTED_DIR/<GPU>.json
  sharing_guard.py compare RECORD EXPECTED_DIR --out OUT
                           today against EXPECTED_DIR/<GPU>.json: the table (stdout and
                           OUT/guard.md), OUT/latest.json; exit 1 when a value left its band
  sharing_guard.py render EXPECTED.json              the page's markdown for that record
  sharing_guard.py readme docs/results.md [--check] [--expected-dir DIR]
                           write (or check) the page's tables between its sharing-table markers

Exit status: 0 done (compare: every value within its band), 1 a value outside its band (compare) or
a page's table that differs from its rendering (readme --check), 2 bad input: the message names the
file and the field."""
import argparse
import difflib
import json
import math
import os
import re
import sys

FORMAT = "sharing-guard/1"
LATEST_FORMAT = "sharing-guard-latest/1"
HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED_DIR = os.path.join(HERE, "guard", "expected")

# The run metrics kept per mode (repeats.json's keys, results/repeats.c) and how they are printed.
RUN_METRICS = (("stp", "STP"), ("antt", "ANTT"), ("fairness", "fairness"))
JOB_RATE = "timed_samples_per_s"  # repeats.json's key of a job's absolute samples/s

# The margin rule, once. A value measured today (the median of its repeats) passes when it lies in
#   [min - margin, max + margin],  margin = max(MARGIN_RANGES * (max - min), MARGIN_FLOOR * median)
# of the recorded spread.
# - Not the recorded range itself: three repeats underestimate the spread of a launch (a fourth
#   launch falls outside the range of three with probability 2/4), so the band reaches one recorded
#   range beyond each end. A cell whose repeats scattered by 15% gets a band three times as wide, one
#   that scattered by 2% a narrow one, where a fixed percentage would be flaky on the first and
#   blind on the second.
# - A floor of 10% of the median: the recorded repeats share one machine and one session, and a
#   range recorded as nearly zero (serial's STP is 1 in every repeat; three repeats that happened
#   to agree) says nothing of another day or another card of the pool, whose clocks differ by
#   several percent. And one guard run compares about 150 values (each mode's STP, each job's
#   samples/s): a band that a value leaves by chance once in a hundred would fail most runs.
# Today's side is a median of repeats, steadier than one launch. A training-step change that costs
# a mode 2.7x (the regression this guard exists for) is far outside any such band; a drift of a few
# percent is not caught, and is not meant to be: the repeats could not tell it from noise.
MARGIN_RANGES = 1.0
MARGIN_FLOOR = 0.10

MARKER_BEGIN = re.compile(r"^<!-- sharing-table:begin ([A-Za-z0-9._-]+) -->$")
MARKER_END = "<!-- sharing-table:end -->"


class GuardError(Exception):
    """Bad input: the message names the file and the field (exit 2)."""


# --- reading and checking ---------------------------------------------------------------------


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f, parse_constant=lambda c: _reject_constant(path, c))
    except OSError as e:
        raise GuardError(f"{path}: cannot read: {e.strerror}")
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise GuardError(f"{path}: not valid JSON: {e}")


def _reject_constant(path, constant):
    raise GuardError(f"{path}: {constant} is not a number JSON allows")


def need(obj, key, kind, where):
    """obj[key], which must be of kind ("object", "array", "string", "int", "number", "bool")."""
    if not isinstance(obj, dict):
        raise GuardError(f"{where}: expected an object")
    if key not in obj:
        raise GuardError(f"{where}.{key}: missing")
    value = obj[key]
    ok = {"object": isinstance(value, dict), "array": isinstance(value, list),
          "string": isinstance(value, str),
          "int": isinstance(value, int) and not isinstance(value, bool),
          "number": isinstance(value, (int, float)) and not isinstance(value, bool),
          "bool": isinstance(value, bool)}[kind]
    if not ok:
        raise GuardError(f"{where}.{key}: expected {'an' if kind[0] in 'aeiou' else 'a'} {kind}, "
                         f"found {json.dumps(value)[:60]}")
    return value


def check_spread(s, where):
    """A spread as base/spread.h writes it: {"median", "min", "max", "n"}, null numbers when n is 0."""
    n = need(s, "n", "int", where)
    if n < 0:
        raise GuardError(f"{where}.n: expected a count of 0 or more, found {n}")
    for key in ("median", "min", "max"):
        if n == 0:
            if s.get(key) is not None:
                raise GuardError(f"{where}.{key}: expected null where n is 0")
        elif not math.isfinite(need(s, key, "number", where)):
            raise GuardError(f"{where}.{key}: expected a finite number")
    if n and not s["min"] <= s["median"] <= s["max"]:
        raise GuardError(f"{where}: expected min <= median <= max, found {s['min']}, {s['median']}, {s['max']}")
    return {"median": s.get("median"), "min": s.get("min"), "max": s.get("max"), "n": n}


def check_record(record, where):
    """A record (collect's output, an expected file): every field the guard reads, checked."""
    if not isinstance(record, dict):
        raise GuardError(f"{where}: expected an object")
    if need(record, "format", "string", where) != FORMAT:
        raise GuardError(f"{where}.format: expected \"{FORMAT}\", found \"{record['format']}\"")
    for key in ("gpu", "revision", "commit", "date", "measurement"):
        need(record, key, "string", where)
    need(record, "repeats", "int", where)
    cells = need(record, "cells", "array", where)
    seen = set()
    for c, cell in enumerate(cells):
        w = f"{where}.cells[{c}]"
        key = (need(cell, "mix", "string", w), need(cell, "precision", "string", w))
        if key in seen:
            raise GuardError(f"{w}: {key[0]} in {key[1]} is there twice")
        seen.add(key)
        if "min_overlap" in cell:
            need(cell, "min_overlap", "number", w)
        rankings = need(cell, "rankings", "object", w)
        for metric, _ in RUN_METRICS:
            need(rankings, metric, "string", f"{w}.rankings")
        modes = need(cell, "modes", "array", w)
        if not modes:
            raise GuardError(f"{w}.modes: expected at least one mode")
        for m, mode in enumerate(modes):
            wm = f"{w}.modes[{m}]"
            need(mode, "mode", "string", wm)
            if "recorded_again" in mode:  # a mode's values replaced by a later guard run, and why
                again = need(mode, "recorded_again", "object", wm)
                for key in ("revision", "commit", "date", "why"):
                    need(again, key, "string", f"{wm}.recorded_again")
            for metric, _ in RUN_METRICS:
                check_spread(need(mode, metric, "object", wm), f"{wm}.{metric}")
            for j, job in enumerate(need(mode, "jobs", "array", wm)):
                wj = f"{wm}.jobs[{j}]"
                need(job, "index", "int", wj)
                need(job, "label", "string", wj)
                check_spread(need(job, "samples_per_s", "object", wj), f"{wj}.samples_per_s")
                if "overlap" in job:  # window runs of collocated modes (older records have none)
                    need(job, "overlap", "number", wj)
                    need(job, "overlap_flag", "bool", wj)
    return record


def load_record(path):
    return check_record(load_json(path), path)


def file_safe(gpu):
    """The GPU's name as a file name: "NVIDIA H100 80GB HBM3" -> "NVIDIA_H100_80GB_HBM3"."""
    name = re.sub(r"[^A-Za-z0-9.-]+", "_", gpu).strip("_.")
    if not name:
        raise GuardError(f"GPU name \"{gpu}\": nothing of it can name a file")
    return name


def cell_name(cell):
    return cell["mix"] if cell["precision"] == "tf32" else f"{cell['mix']} {cell['precision']}"


# --- collect: run folders to a record ---------------------------------------------------------


def collect_windows_cell(mix, precision, run_dir):
    """One cell from a run_suite --mode all --windows K run folder: each mode's spread over its K
    windows (its summary.json) and the rankings run_suite made of them (rankings.json)."""
    path = os.path.join(run_dir, "comparison.json")
    comparison = load_json(path)
    if not isinstance(comparison, list):
        raise GuardError(f"{path}: expected an array of modes")
    modes, windows, min_overlap = [], 0, None
    for m, row in enumerate(comparison):
        name = need(row, "mode", "string", f"{path}: [{m}]")
        if row.get("status") == "skipped":
            continue
        spath = os.path.join(run_dir, name, "summary.json")
        summary = load_json(spath)
        windows = max(windows, need(summary, "windows", "int", spath))
        if isinstance(summary.get("min_overlap"), (int, float)):
            min_overlap = summary["min_overlap"]
        mode = {"mode": name, "complete": 1 if summary.get("status") == "complete" else 0}
        for metric, _ in RUN_METRICS:
            mode[metric] = check_spread(need(summary, f"{metric}_spread", "object", spath), f"{spath}: {metric}_spread")
        mode["jobs"] = []
        for j, job in enumerate(need(summary, "jobs", "array", spath)):
            wj = f"{spath}: jobs[{j}]"
            entry = {"index": j, "label": need(job, "label", "string", wj),
                     "samples_per_s": check_spread(need(job, "window_samples_per_s_spread", "object", wj),
                                                   f"{wj}.window_samples_per_s_spread")}
            overlap = job.get("window_overlap")
            if name != "serial" and isinstance(overlap, (int, float)) and not isinstance(overlap, bool):
                # the share of the window every other job trained; run_suite flags it below its minimum
                entry["overlap"] = overlap
                entry["overlap_flag"] = job.get("overlap_flag") is True
            mode["jobs"].append(entry)
        modes.append(mode)
    rpath = os.path.join(run_dir, "rankings.json")
    rankings = load_json(rpath)
    cell = {"mix": mix, "precision": precision, "repeats": windows, "modes": modes,
            "rankings": {metric: need(rankings, metric, "string", rpath) for metric, _ in RUN_METRICS}}
    if min_overlap is not None:
        cell["min_overlap"] = min_overlap
    return cell


def collect_cell(mix, precision, run_dir):
    """One cell of a record from a run_suite --repeat run folder (its repeats.json, run.json), or
    from a --windows run (collect_windows_cell)."""
    path = os.path.join(run_dir, "repeats.json")
    if not os.path.exists(path) and os.path.exists(os.path.join(run_dir, "rankings.json")):
        return collect_windows_cell(mix, precision, run_dir)
    repeats = load_json(path)
    need(repeats, "repeats", "int", path)
    modes = []
    for m, entry in enumerate(need(repeats, "modes", "array", path)):
        w = f"{path}: modes[{m}]"
        metrics = need(entry, "metrics", "object", w)
        mode = {"mode": need(entry, "mode", "string", w),
                "complete": sum(1 for s in need(entry, "status", "array", w) if s == "complete")}
        for metric, _ in RUN_METRICS:
            wm = f"{w}.metrics.{metric}"
            mode[metric] = check_spread(need(need(metrics, metric, "object", f"{w}.metrics"), "spread", "object", wm),
                                        f"{wm}.spread")
        mode["jobs"] = []
        for j, job in enumerate(need(entry, "jobs", "array", w)):
            wj = f"{w}.jobs[{j}]"
            rate = need(need(job, "metrics", "object", wj), JOB_RATE, "object", f"{wj}.metrics")
            mode["jobs"].append({"index": need(job, "index", "int", wj), "label": need(job, "label", "string", wj),
                                 "samples_per_s": check_spread(need(rate, "spread", "object", f"{wj}.metrics.{JOB_RATE}"),
                                                               f"{wj}.metrics.{JOB_RATE}.spread")})
        modes.append(mode)
    rankings = need(repeats, "rankings", "object", path)
    return {"mix": mix, "precision": precision, "repeats": repeats["repeats"], "modes": modes,
            "rankings": {metric: need(rankings, metric, "string", f"{path}: rankings") for metric, _ in RUN_METRICS}}


def gpu_of(run_dir):
    """The GPU's name as NVML gave it to run_suite (run.json's gpu.name); None without NVML."""
    path = os.path.join(run_dir, "run.json")
    gpu = load_json(path).get("gpu")
    name = gpu.get("name") if isinstance(gpu, dict) else None
    return name if isinstance(name, str) and name else None


def collect(args):
    cells = [collect_cell(mix, precision, run_dir) for mix, precision, run_dir in args.cell]
    gpu = args.gpu
    if not gpu:
        names = {gpu_of(run_dir) for _, _, run_dir in args.cell}
        if None in names or len(names) != 1:
            raise GuardError("the GPU's name: the runs' run.json name "
                             + (" and ".join(sorted(n for n in names if n)) or "none") +
                             " (NVML); give one with SUITE_GUARD_GPU (sharing_guard.sh) or --gpu")
        gpu = names.pop()
    record = {"format": FORMAT, "gpu": gpu, "revision": args.revision, "commit": args.commit, "date": args.date,
              "measurement": args.measurement, "repeats": max(c["repeats"] for c in cells), "cells": cells}
    for c in cells:
        del c["repeats"]
    check_record(record, "collected record")
    write_json(args.output, record)
    return 0


def write_json(path, obj):
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        raise GuardError(f"{path}: cannot write: {e.strerror}")


# --- compare ----------------------------------------------------------------------------------


def band(s):
    """The band a value measured today must lie in (the margin rule above)."""
    margin = max(MARGIN_RANGES * (s["max"] - s["min"]), MARGIN_FLOOR * abs(s["median"]))
    return s["min"] - margin, s["max"] + margin


def fmt_spread(s, fmt):
    """base/spread.h's "median [min-max]"; one value alone; "-" for none."""
    if not s or s["n"] == 0:
        return "-"
    if s["n"] == 1:
        return fmt % s["median"]
    return f"{fmt % s['median']} [{fmt % s['min']}-{fmt % s['max']}]"


def comparisons(expected, today):
    """One row per guarded value: each mode's STP and each job's samples/s of every recorded cell."""
    rows = []
    found = {(c["mix"], c["precision"]): c for c in today["cells"]}
    for cell in expected["cells"]:
        now = found.get((cell["mix"], cell["precision"]))
        now_modes = {m["mode"]: m for m in now["modes"]} if now else {}
        for mode in cell["modes"]:
            now_mode = now_modes.get(mode["mode"])
            now_jobs = {j["index"]: j for j in now_mode["jobs"]} if now_mode else {}
            values = [("STP", None, mode["stp"], now_mode["stp"] if now_mode else None, "%.3f")]
            for job in mode["jobs"]:
                got = now_jobs.get(job["index"])
                values.append((f"job {job['index']} {job['label']} samples/s", job, job["samples_per_s"],
                               got["samples_per_s"] if got else None, "%.0f"))
            for value, job, rec, got, fmt in values:
                if rec["n"] == 0:  # not measured when recorded (a mode this GPU could not run)
                    continue
                lo, hi = band(rec)
                row = {"mix": cell["mix"], "precision": cell["precision"], "mode": mode["mode"], "value": value,
                       "job": job["index"] if job else None, "recorded": rec, "today": got,
                       "band": [lo, hi], "format": fmt}
                if not got or got["n"] == 0:
                    row.update(ratio=None, verdict="not measured today")
                else:
                    row["ratio"] = got["median"] / rec["median"] if rec["median"] else None
                    row["verdict"] = "ok" if lo <= got["median"] <= hi else ("below" if got["median"] < lo else "above")
                rows.append(row)
            for got in now_jobs.values():  # a job whose window others did not fill measured no sharing
                if got.get("overlap_flag"):
                    ov = got["overlap"]
                    rows.append({"mix": cell["mix"], "precision": cell["precision"], "mode": mode["mode"],
                                 "value": f"job {got['index']} {got['label']} overlap", "job": got["index"],
                                 "recorded": None, "today": {"median": ov, "min": ov, "max": ov, "n": 1},
                                 "band": [now.get("min_overlap", 0.95), 1.0], "format": "%.2f", "ratio": None,
                                 "verdict": "overlap below minimum"})
    return rows


def comparison_table(rows):
    lines = ["| mix | mode | value | recorded | today | today / recorded | allowed | verdict |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        f = r["format"]
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3f}"
        verdict = "ok" if r["verdict"] == "ok" else f"**{r['verdict'].upper()}**"
        lines.append(f"| {cell_name(r)} | {r['mode']} | {r['value']} | {fmt_spread(r['recorded'], f)} | "
                     f"{fmt_spread(r['today'], f)} | {ratio} | {f % r['band'][0]}-{f % r['band'][1]} | {verdict} |")
    return "\n".join(lines) + "\n"


def failure_line(r):
    f = r["format"]
    head = f"{cell_name(r)}, mode {r['mode']}, {r['value']}"
    if r["verdict"] == "not measured today":
        return f"{head}: recorded {fmt_spread(r['recorded'], f)}, not measured today"
    if r["verdict"] == "overlap below minimum":
        return (f"{head}: {f % r['today']['median']} of the window had every other job training (at least "
                f"{f % r['band'][0]} wanted): not a measurement of sharing")
    ratio = "" if r["ratio"] is None else f"{r['ratio']:.3f}x; "
    return (f"{head}: {f % r['today']['median']} today against {fmt_spread(r['recorded'], f)} recorded "
            f"({ratio}allowed {f % r['band'][0]}-{f % r['band'][1]})")


def expected_path(expected_dir, gpu):
    return os.path.join(expected_dir, file_safe(gpu) + ".json")


def latest(today, **extra):
    """OUT/latest.json: today's record with the revision it measured and what it was held to."""
    out = {"format": LATEST_FORMAT}
    out.update(extra)
    out["record"] = today
    return out


def compare(args):
    today = load_record(args.record)
    path = expected_path(args.expected_dir, today["gpu"])
    if not os.path.exists(path):
        raise GuardError(f"{path}: no expected file for {today['gpu']}: record one with "
                         "tools/sharing_guard.sh BUILD_DIR OUT --record")
    expected = load_record(path)
    rows = comparisons(expected, today)
    failures = [failure_line(r) for r in rows if r["verdict"] != "ok"]
    table = (f"Sharing guard on {today['gpu']}: {today['revision']} ({today['date']}) against "
             f"{os.path.relpath(path)} ({expected['revision']}, {expected['date']}); a value passes inside "
             f"[min - m, max + m] of its recorded spread, m = max({MARGIN_RANGES:g} x (max - min), "
             f"{MARGIN_FLOOR:g} x median)\n\n" + comparison_table(rows))
    sys.stdout.write(table)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "guard.md"), "w", encoding="utf-8") as f:
        f.write(table)
    for r in rows:
        del r["format"]
    write_json(os.path.join(args.out, "latest.json"),
               latest(today, verdict="fail" if failures else "pass", revision=today["revision"],
                      commit=today["commit"], date=today["date"], gpu=today["gpu"],
                      expected=os.path.relpath(path, os.path.dirname(HERE)), expected_revision=expected["revision"],
                      margin={"ranges": MARGIN_RANGES, "floor": MARGIN_FLOOR}, failures=failures, comparisons=rows))
    if failures:
        sys.stderr.write("sharing guard: outside the recorded spread:\n" + "".join(f"  {f}\n" for f in failures))
        return 1
    print(f"sharing guard: all {len(rows)} values within their recorded spread")
    return 0


def record(args):
    today = load_record(args.record)
    os.makedirs(args.expected_dir, exist_ok=True)
    path = expected_path(args.expected_dir, today["gpu"])
    write_json(path, today)
    sys.stdout.write(render(today))
    print(f"\nrecorded {path}")
    if args.out:
        write_json(os.path.join(args.out, "latest.json"),
                   latest(today, verdict="recorded", revision=today["revision"], commit=today["commit"],
                          date=today["date"], gpu=today["gpu"], expected=os.path.relpath(path, os.path.dirname(HERE))))
    return 0


# --- render: the page's tables ------------------------------------------------------------------


def samples_kind(rec):
    """What the record's samples are: consecutive windows of one launch (--windows) or launches
    (--repeat)."""
    return "windows" if "--windows" in rec["measurement"] else "repeats"


def recorded_again_words(rec):
    """The modes whose values a later guard run replaced (tools/guard/expected: "recorded_again"), each
    group by the revision it came from and why; "" where none was."""
    groups = {}
    for cell in rec["cells"]:
        for m in cell["modes"]:
            again = m.get("recorded_again")
            if again:
                key = (m["mode"], again["revision"], again["date"], again["why"])
                groups.setdefault(key, []).append(cell_name(cell))
    if not groups:
        return ""
    said = [f"{mode} of {', '.join(cells)} at {rev} ({date}): {why}"
            for (mode, rev, date, why), cells in groups.items()]
    return " Recorded again since, from that revision's guard run: " + "; ".join(said) + "."


def render(rec):
    """The page's markdown for a record: STP / ANTT / fairness per mix and mode, the ranking lines,
    each job's samples/s; every number median [min-max] over the repeats."""
    modes = []
    for cell in rec["cells"]:
        modes += [m["mode"] for m in cell["modes"] if m["mode"] not in modes]
    head = "| mix | metric | " + " | ".join(modes) + " |\n| --- | --- |" + " --- |" * len(modes) + "\n"
    kind = samples_kind(rec)
    what = (f"one launch of `--mode all --mig-emulate` per mix with {rec['repeats']} consecutive common windows"
            if kind == "windows" else f"{rec['repeats']} launches (repeats) of `--mode all --mig-emulate`")
    out = [f"Measured by `tools/sharing_guard.sh` on {rec['gpu']} at {rec['revision']} ({rec['date']}): "
           f"{what}, `{rec['measurement']}`; median [min-max] over the {kind}.{recorded_again_words(rec)}\n\n", head]
    for cell in rec["cells"]:
        by_mode = {m["mode"]: m for m in cell["modes"]}
        for i, (metric, label) in enumerate(RUN_METRICS):
            cells = [fmt_spread(by_mode[m][metric], "%.2f") if m in by_mode else "-" for m in modes]
            out.append(f"| {cell_name(cell) if i == 0 else ''} | {label} | " + " | ".join(cells) + " |\n")
    out.append(f"\nRankings (`A > B` only where the {kind}' ranges do not overlap, else `A ~ B`):\n\n")
    for cell in rec["cells"]:
        out.append(f"- {cell_name(cell)}: " + "; ".join(cell["rankings"][m] for m, _ in RUN_METRICS) + "\n")
    overlaps = [(j["overlap"], cell_name(cell), m["mode"], j) for cell in rec["cells"] for m in cell["modes"]
                for j in m["jobs"] if "overlap" in j]
    if overlaps:
        low, where, mode, job = min(overlaps, key=lambda o: o[0])
        out.append(f"\nEvery collocated job trained beside all the others for at least {low:.3f} of each window "
                   f"(the lowest: {where}, {mode}, job {job['index']} {job['label']}).\n")
    out.append("\nEach job's samples/s (absolute; different workloads are never summed):\n\n")
    out.append("| mix | job | " + " | ".join(modes) + " |\n| --- | --- |" + " --- |" * len(modes) + "\n")
    for cell in rec["cells"]:
        jobs = {}
        for m in cell["modes"]:
            for j in m["jobs"]:
                jobs.setdefault(j["index"], j["label"])
        for n, (index, label) in enumerate(sorted(jobs.items())):
            rates = []
            for m in modes:
                job = next((j for j in by_mode_jobs(cell, m) if j["index"] == index), None)
                rates.append(fmt_spread(job["samples_per_s"], "%.0f") if job else "-")
            out.append(f"| {cell_name(cell) if n == 0 else ''} | {index} {label} | " + " | ".join(rates) + " |\n")
    return "".join(out)


def by_mode_jobs(cell, mode):
    return next((m["jobs"] for m in cell["modes"] if m["mode"] == mode), [])


def placeholder(name):
    """What the page's markers hold for a GPU whose expected file is not recorded yet."""
    return (f"The table is rendered here from `tools/guard/expected/{name}.json` once it is recorded on that GPU "
            "(`tools/sharing_guard.sh BUILD_DIR OUT --record`, then `python3 tools/sharing_guard.py readme docs/results.md`).\n")


def readme_blocks(text, path):
    """[(name, first line, end line)] of the page's sharing-table blocks (content lines between)."""
    lines, blocks, open_at = text.split("\n"), [], None
    for i, line in enumerate(lines):
        begin = MARKER_BEGIN.match(line)
        if begin:
            if open_at is not None:
                raise GuardError(f"{path}:{i + 1}: sharing-table:begin inside the block begun at line {open_at[1] + 1}")
            open_at = (begin.group(1), i)
        elif line.startswith("<!-- sharing-table:") and line != MARKER_END:
            raise GuardError(f"{path}:{i + 1}: expected \"<!-- sharing-table:begin GPU_NAME -->\" or \"{MARKER_END}\"")
        elif line == MARKER_END:
            if open_at is None:
                raise GuardError(f"{path}:{i + 1}: {MARKER_END} without a begin")
            blocks.append((open_at[0], open_at[1] + 1, i))
            open_at = None
    if open_at is not None:
        raise GuardError(f"{path}:{open_at[1] + 1}: sharing-table:begin {open_at[0]} has no {MARKER_END}")
    return lines, blocks


def readme(args):
    with open(args.readme, encoding="utf-8") as f:
        text = f.read()
    lines, blocks = readme_blocks(text, args.readme)
    names = [b[0] for b in blocks]
    recorded = sorted(n[:-5] for n in os.listdir(args.expected_dir) if n.endswith(".json")) \
        if os.path.isdir(args.expected_dir) else []
    missing = [n for n in recorded if n not in names]
    wanted = {}
    for name in names:
        path = os.path.join(args.expected_dir, name + ".json")
        wanted[name] = render(load_record(path)) if os.path.exists(path) else placeholder(name)
    differ = []
    for name, first, end in reversed(blocks):
        have = "\n".join(lines[first:end]) + "\n" if end > first else ""
        if have != wanted[name]:
            differ.append((name, have))
            lines[first:end] = wanted[name].rstrip("\n").split("\n")
    if args.check:
        for name, have in differ:
            sys.stderr.write(f"{args.readme}: the sharing table of {name} is not what `tools/sharing_guard.py render "
                             f"tools/guard/expected/{name}.json` prints (or, unrecorded, its placeholder); run "
                             f"`python3 tools/sharing_guard.py readme {args.readme}`:\n")
            sys.stderr.writelines(difflib.unified_diff(have.splitlines(True), wanted[name].splitlines(True),
                                                       "page", "rendered"))
        for name in missing:
            sys.stderr.write(f"{args.readme}: no sharing-table block for {args.expected_dir}/{name}.json: add "
                             f"<!-- sharing-table:begin {name} --> and {MARKER_END}\n")
        return 1 if differ or missing else 0
    if differ:
        with open(args.readme, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
    for name in missing:
        sys.stderr.write(f"{args.readme}: no sharing-table block for {name}; add one where its table belongs\n")
    return 1 if missing else 0


def main(argv):
    p = argparse.ArgumentParser(prog="sharing_guard.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--cell", nargs=3, action="append", required=True, metavar=("MIX", "PRECISION", "RUN_DIR"))
    for key in ("revision", "commit", "date", "measurement"):
        c.add_argument(f"--{key}", required=True)
    c.add_argument("--gpu")
    c.add_argument("-o", "--output", required=True)
    r = sub.add_parser("record")
    r.add_argument("record")
    r.add_argument("expected_dir")
    r.add_argument("--out")
    k = sub.add_parser("compare")
    k.add_argument("record")
    k.add_argument("expected_dir")
    k.add_argument("--out", required=True)
    d = sub.add_parser("render")
    d.add_argument("expected")
    m = sub.add_parser("readme")
    m.add_argument("readme")
    m.add_argument("--check", action="store_true")
    m.add_argument("--expected-dir", default=EXPECTED_DIR)
    args = p.parse_args(argv)
    try:
        if args.command == "render":
            sys.stdout.write(render(load_record(args.expected)))
            return 0
        return {"collect": collect, "record": record, "compare": compare, "readme": readme}[args.command](args)
    except GuardError as e:
        sys.stderr.write(f"sharing_guard.py: {e}\n")
        return 2
    except OSError as e:
        sys.stderr.write(f"sharing_guard.py: {e.filename or ''}: {e.strerror}\n")
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
