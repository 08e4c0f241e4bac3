#!/usr/bin/env python3
"""Hostile input for the report (results/report.py): the files of a run folder, edited the way a
user's editor, a full disk or a half-copied folder leaves them (cut short, bytes flipped, a JSON
value of another type, a CSV cell or column gone, lines repeated), must give either a page or
ReportError (a message naming the file: `run_suite report` exits 2), never a traceback.

Deterministic (a fixed seed) and bounded: FUZZ_REPORT_CASES cases (default 40), each on a fresh
copy of one of three run folders (tests/fixtures/report's completion and window-measured runs, the
latter with its steps.csv, and tests/fixtures/report_alone's serial run with its set-ups compressed
on the timeline).
Infinities, NaN and 1e308 in numeric CSV cells and JSON numbers, and 1e308 in timeline.csv's power_w,
must be refused naming their place. A failing case prints its mutation and the
traceback, and the exit status is 1. Exit 77 (skipped) without matplotlib.
  tests/fuzz/fuzz_report.py [FIXTURE_RUN_DIR]"""
import json
import os
import random
import shutil
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
sys.path.insert(0, os.path.join(HERE, "..", "results"))
try:
    import matplotlib  # noqa: F401
except ImportError:
    print("fuzz_report: matplotlib is missing: skipped")
    sys.exit(77)
import report  # noqa: E402
from report_data import ReportError  # noqa: E402

FILES = ("summary.json", "jobs.csv", "steps.csv", "timeline.csv", "run.json")
ODD_VALUES = [None, "", "x", [], {}, -1, 0, 1e308, -1e308, True, "NaN", [1, "a"], {"a": None}]


def flip_bytes(data, rng):
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b), "bytes flipped"


def cut_short(data, rng):
    n = rng.randrange(len(data) + 1)
    return data[:n], f"cut at byte {n}"


def json_paths(node, path=None):
    """Every (path, value) of a JSON document, the document itself first (path [])."""
    path = path or []
    yield path, node
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for k, v in items:
        yield from json_paths(v, path + [k])


def json_value(data, rng):
    try:
        doc = json.loads(data)
    except ValueError:
        return flip_bytes(data, rng)
    paths = [p for p, _ in json_paths(doc)]
    path = rng.choice(paths[1:] or paths)
    value = rng.choice(ODD_VALUES)
    if not path:
        doc = value
    else:
        node = doc
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return json.dumps(doc).encode(), f"{'/'.join(map(str, path))} = {value!r}"


def csv_cell(data, rng):
    lines = data.decode("utf-8", "replace").split("\n")
    if len(lines) < 2:
        return cut_short(data, rng)
    i = rng.randrange(len(lines))
    cells = lines[i].split(",")
    how = rng.choice(("drop a cell", "empty a cell", "text in a cell", "drop the line", "repeat the line"))
    if how == "drop the line":
        del lines[i]
    elif how == "repeat the line":
        lines.insert(i, lines[i])
    else:
        k = rng.randrange(len(cells))
        if how == "drop a cell":
            del cells[k]
        else:
            cells[k] = "" if how == "empty a cell" else rng.choice(("abc", "-inf", "1e999", "nan", '"'))
        lines[i] = ",".join(cells)
    return "\n".join(lines).encode(), f"line {i}: {how}"


NON_FINITE = ("inf", "-inf", "nan", "1e308", "-1e308", "1e999")


def csv_non_finite(data, rng):
    """A non-finite or absurd number in a numeric cell (power_w = 1e308 once ended in matplotlib's
    OverflowError): the report must refuse it naming the file, row and column."""
    lines = data.decode("utf-8", "replace").split("\n")
    head = lines[0].split(",")
    places = [(i, k) for i in range(1, len(lines)) for k, c in enumerate(lines[i].split(","))
              if k < len(head) and c.strip() and c.replace(".", "", 1).lstrip("-").isdigit()]
    if not places:
        return csv_cell(data, rng)
    i, k = rng.choice(places)
    cells = lines[i].split(",")
    cells[k] = rng.choice(NON_FINITE)
    lines[i] = ",".join(cells)
    return "\n".join(lines).encode(), f"row {i + 1}, column '{head[k]}' = {cells[k]}"


def json_non_finite(data, rng):
    """The same in a JSON number (Python's json reads Infinity and NaN)."""
    try:
        doc = json.loads(data)
    except ValueError:
        return flip_bytes(data, rng)
    places = [p for p, v in json_paths(doc) if p and isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not places:
        return json_value(data, rng)
    path = rng.choice(places)
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = rng.choice((float("inf"), float("-inf"), float("nan"), 1e308, -1e308))
    return json.dumps(doc).encode(), f"{'/'.join(map(str, path))} = {node[path[-1]]!r}"


def mutate(path, rng):
    with open(path, "rb") as f:
        data = f.read()
    kinds = [flip_bytes, cut_short] + ([json_value] * 3 + [json_non_finite] * 2 if path.endswith(".json")
                                       else [csv_cell] * 3 + [csv_non_finite] * 2)
    data, what = rng.choice(kinds)(data, rng)
    with open(path, "wb") as f:
        f.write(data)
    return what


def main(argv):
    # by default each case mutates one of three runs: a completion-measured one, a heterogeneous
    # window-measured one (its windows, overlaps and power inside the window) and a serial one whose
    # set-ups the timeline compresses; the same case count
    fixtures = [argv[0]] if argv else [os.path.join(HERE, "fixtures", "report", "20261124T152948Z-all-S+M", "mps"),
                                       os.path.join(HERE, "fixtures", "report", "20261125T201949Z-all-S+M+M", "mps"),
                                       os.path.join(HERE, "fixtures", "report_alone", "tf32-serial-2xS")]
    cases = int(os.environ.get("FUZZ_REPORT_CASES", "40"))
    rng = random.Random(20261124)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(cases):
            run = os.path.join(tmp, f"case-{case}")
            shutil.copytree(fixtures[case % len(fixtures)], run)
            name = rng.choice([f for f in FILES if os.path.exists(os.path.join(run, f))])
            what = mutate(os.path.join(run, name), rng)
            try:
                report.build([run], "")
                outcome = "page"
            except ReportError as e:
                outcome = f"refused: {e}"
            except Exception:  # noqa: BLE001 - that is what this test looks for
                failed += 1
                print(f"case {case}: {name}: {what}: the report crashed")
                traceback.print_exc(file=sys.stdout)
                continue
            print(f"case {case}: {name}: {what[:80]}: {outcome[:120]}")
            shutil.rmtree(run)
    # every non-finite or absurd value in timeline.csv's power_w is refused with its place (exit 2)
    for value in NON_FINITE:
        run = os.path.join(tmp_fixed := tempfile.mkdtemp(), "run")
        shutil.copytree(fixtures[0], run)
        path = os.path.join(run, "timeline.csv")
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        k = lines[0].split(",").index("power_w")
        cells = lines[2].split(",")
        cells[k] = value
        lines[2] = ",".join(cells)
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        try:
            report.build([run], "")
            outcome = "page"
        except ReportError as e:
            outcome = str(e)
        except Exception:  # noqa: BLE001
            outcome = "crashed:\n" + traceback.format_exc()
        want = f"{path}: row 3, column 'power_w'"
        if not outcome.startswith(want):
            failed += 1
            print(f"power_w = {value}: expected a refusal starting {want!r}, got {outcome}")
        shutil.rmtree(tmp_fixed)
    print(f"{cases - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
