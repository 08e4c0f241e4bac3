#!/usr/bin/env python3
"""The report's JSON readers (results/report_data.py: read_json, which reads summary.json, run.json
and study.json, and log_events, which reads the events in a job's log) on hostile documents: a
seeded mutation fuzzer (no coverage guidance: libFuzzer cannot reach Python, and atheris would add
a pip install to CI), bounded by FUZZ_REPORT_JSON_CASES (default 2000) cases.

Each case mutates one document of the report fixtures (tests/fixtures/report*/) or a job's event
lines: bytes flipped, cut short, a value anywhere in the tree replaced by one of another type or
an extreme number, containers nested thousands deep, keys duplicated, invalid UTF-8. read_json
must return a document of the type asked for whose every float is finite and below ABSURD, or
raise ReportError naming the file; log_events must return its dict and number, or raise
ReportError naming the log's line where a value it reads is of the wrong kind (a version or a peak
of 400 digits). Any other exception fails the case, printing its seed and mutation. Exit 1 on any
failure.
  tests/fuzz/fuzz_report_json.py"""
import glob
import json
import os
import random
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/
sys.path.insert(0, os.path.join(HERE, "..", "results"))
from report_data import ABSURD, ReportError, is_num, log_events, read_json  # noqa: E402

ODD = [None, "", "x" * 300, [], {}, -1, 0, 2 ** 70, -(2 ** 70), 1e308, -1e308, 1e15, 5e-324, True, False,
       "NaN", "Infinity", [1, "a"], {"a": None}, "\u0000", "\ud800"]


def documents():
    docs = []
    for path in sorted(glob.glob(os.path.join(HERE, "fixtures", "report*", "**", "*.json"), recursive=True)):
        with open(path, "rb") as f:
            docs.append((os.path.basename(path), f.read()))
    events = [b'{"event":"setup","cuda_runtime_version":13000,"cudnn_version":91000}',
              b'{"event":"epoch","epoch":1,"peak_bytes":123456789}', b'{"event":"ready","t":1.5}']
    return docs, events


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def replace(node, path, value):
    if not path:
        return value
    node[path[0]] = replace(node[path[0]], path[1:], value)
    return node


def mutate(data, rng):
    """The mutated bytes and a description of what was done."""
    kind = rng.choice(["flip", "cut", "value", "nest", "duplicate", "utf8", "number"])
    if kind == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            if b:
                b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b), "bytes flipped"
    if kind == "cut":
        n = rng.randrange(len(data) + 1)
        return data[:n], f"cut at {n}"
    if kind == "nest":
        depth = rng.choice([100, 5000, 100000])
        opener, closer = rng.choice([("[", "]"), ('{"a":', "}")])
        return (opener * depth + "1" + closer * depth).encode(), f"nested {depth} deep"
    if kind == "utf8":
        i = rng.randrange(len(data) + 1)
        return data[:i] + bytes([rng.choice([0x80, 0xC0, 0xFF, 0xED])]) + data[i:], f"invalid UTF-8 at {i}"
    if kind == "number":
        token = rng.choice([b"1e999", b"-1e999", b"NaN", b"Infinity", b"1" * 400, b"1e-400", b"-0"])
        return b'{"a":' + token + b'}', f"number {token[:20]!r}"
    try:
        doc = json.loads(data)
    except ValueError:
        return data[::-1], "reversed"
    if kind == "duplicate" and isinstance(doc, dict) and doc:
        key = rng.choice(sorted(doc))
        text = json.dumps(doc)
        return (text[:-1] + f', {json.dumps(key)}: {json.dumps(rng.choice(ODD[:13]))}}}').encode(), f"duplicate key {key}"
    where = rng.choice(list(paths(doc)))
    value = rng.choice(ODD)
    return json.dumps(replace(doc, where, value), allow_nan=True).encode("utf-8", "surrogatepass"), \
        f"{'/'.join(map(str, where)) or 'document'} := {value!r:.40}"


def all_numbers_sane(node):
    if isinstance(node, dict):
        return all(all_numbers_sane(v) for v in node.values())
    if isinstance(node, list):
        return all(all_numbers_sane(v) for v in node)
    if isinstance(node, float):
        return node == node and abs(node) < ABSURD
    return True


def main():
    cases = int(os.environ.get("FUZZ_REPORT_JSON_CASES", "2000"))
    docs, events = documents()
    if not docs:
        print("fuzz_report_json: no fixture documents found under tests/fixtures/report*")
        return 1
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for case in range(cases):
            rng = random.Random(case)
            name, data = rng.choice(docs)
            mutated, what = mutate(data, rng)
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(mutated)
            want = rng.choice([dict, list])
            try:
                try:
                    doc = read_json(path, want)
                    assert isinstance(doc, want), f"read_json returned a {type(doc).__name__}, not a {want.__name__}"
                    assert all_numbers_sane(doc), "read_json passed a non-finite or absurd number"
                except ReportError as e:
                    assert str(e).startswith(path), f"the message does not name the file: {e}"
                log = os.path.join(tmp, "job.log")
                lines = [rng.choice(events) for _ in range(3)]
                lines[rng.randrange(3)] = mutate(rng.choice(events), rng)[0]
                with open(log, "wb") as f:
                    f.write(b"\n".join(lines) + b"\n")
                try:
                    versions, first_bytes = log_events(log)
                    assert isinstance(versions, dict), "log_events returned no dict"
                    assert first_bytes != first_bytes or is_num(first_bytes), "log_events returned a bad number"
                except ReportError as e:  # a value it reads of the wrong kind: named with the log's line
                    assert str(e).startswith(f"{log}: line "), f"the message does not name the log's line: {e}"
            except Exception:  # noqa: BLE001 (every other exception is the finding)
                failures += 1
                if failures <= 10:
                    print(f"case {case} ({name}, {what}): FAILED")
                    traceback.print_exc(limit=3, file=sys.stdout)
    print(f"fuzz_report_json: {cases} cases, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
