#!/usr/bin/env python3
"""Side-by-side table of the suite's ResNet training step against PyTorch eager and compiled.

Why: one place that answers "is the suite at least as fast as torch.compile and at most as
memory-hungry as eager PyTorch?" for each (model, input size, batch). Reads JSON lines from the
files given (or stdin, or "-"): {"impl": "suite", ..., "peak_bytes", "flops_per_step"} from the
suite's bench_step, {"impl": "torch-eager"|"torch-compiled", ..., "max_memory_reserved"} from
bench/torch_model.py ("eager steady GiB" is its steady_max_memory_reserved: the timed steps
alone, without cudnn.benchmark's algorithm trials). A line with an "error" key records a failed run. Later lines replace
earlier ones for the same (impl, model, image_size, batch). Exits 1 if a PASS/FAIL check FAILs
(the INFO line comparing against eager's steady footprint does not count).
"""
import json
import sys

IMPLS = ("suite", "torch-eager", "torch-compiled")
GIB = float(1 << 30)
HEADER = ("model", "input", "batch", "suite ms", "torch eager ms", "torch compiled ms",
          "suite/compiled", "suite TFLOP/s", "suite peak GiB", "eager reserved GiB",
          "eager steady GiB", "compiled reserved GiB", "mem suite/eager")


def benchmark_records(paths):
    """Each benchmark record of the files (or stdin, or "-") as (where, (model, image_size, batch),
    record), in order; a "{" line that is not one is named on stderr and skipped, other lines are
    the benchmarks' own output. Shared with bench/compare_precision.py."""
    for path in paths or ["-"]:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8")
        with stream:
            for n, line in enumerate(stream, 1):
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                    key = (str(r["model"]), int(r["image_size"]), int(r["batch"]))
                    if not isinstance(r["impl"], str) or not isinstance(r.get("precision", "tf32"), str):
                        raise TypeError("\"impl\" and \"precision\" are not strings")
                except (ValueError, KeyError, TypeError) as e:
                    print(f"{path}:{n}: skipped, not a benchmark record ({e})", file=sys.stderr)
                    continue
                yield f"{path}:{n}", key, r


def read_records(paths):
    """{(model, image_size, batch): {impl: record}}, in first-seen order."""
    rows = {}
    for where, key, r in benchmark_records(paths):
        if r.get("precision", "tf32") != "tf32":
            continue  # bench/compare_precision.py tables the other precisions
        impl = r["impl"]
        if impl not in IMPLS:
            if impl not in ("torch-max-autotune", "torch-graphed"):  # compare_precision.py's
                print(f"{where}: skipped, unknown impl {impl!r}", file=sys.stderr)
            continue
        rows.setdefault(key, {})[impl] = r
    return rows


def num(record, field):
    """The field as a positive number, or None when the run failed or did not report it."""
    if not record or "error" in record:
        return None
    v = record.get(field)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def ratio(a, b):
    return a / b if a is not None and b is not None else None


def check(name, lhs, rhs, lhs_name, rhs_name):
    if lhs is None or rhs is None:
        missing = [n for n, v in ((lhs_name, lhs), (rhs_name, rhs)) if v is None]
        return "SKIP", f"{name}: no {' or '.join(missing)}"
    return ("PASS" if lhs <= rhs else "FAIL"), f"{name}: {lhs:.4g} vs {rhs:.4g}"


def main():
    rows = read_records(sys.argv[1:])
    if not rows:
        print("no benchmark records found", file=sys.stderr)
        return 1
    table, verdicts = [HEADER], []
    for (model, size, batch), by_impl in rows.items():
        suite, eager, comp = (by_impl.get(i) for i in IMPLS)
        s_ms, e_ms, c_ms = num(suite, "median_ms"), num(eager, "median_ms"), num(comp, "median_ms")
        flops = num(suite, "flops_per_step")
        tflops = flops / (s_ms * 1e-3) / 1e12 if flops and s_ms else None
        s_peak = num(suite, "peak_bytes")
        e_res, c_res = num(eager, "max_memory_reserved"), num(comp, "max_memory_reserved")
        e_steady = num(eager, "steady_max_memory_reserved")
        gib = lambda v: None if v is None else v / GIB
        table.append((model, f"{size}x{size}", str(batch), fmt(s_ms), fmt(e_ms), fmt(c_ms),
                      fmt(ratio(s_ms, c_ms), 3), fmt(tflops, 1), fmt(gib(s_peak)), fmt(gib(e_res)),
                      fmt(gib(e_steady)), fmt(gib(c_res)), fmt(ratio(s_peak, e_res), 3)))
        label = f"{model} {size}x{size} batch {batch}"
        for verdict in (check("suite median <= compiled median (ms)", s_ms, c_ms, "suite", "compiled"),
                        check("suite peak <= eager max_memory_reserved (bytes)", s_peak, e_res,
                              "suite", "eager")):
            verdicts.append((verdict[0], f"{label}: {verdict[1]}"))
        # Stricter, informational: eager's steady footprint leaves out cudnn.benchmark's trials.
        verdict = check("suite peak <= eager steady reserved (bytes)", s_peak, e_steady, "suite",
                        "eager steady")
        verdicts.append(("INFO", f"{label}: {verdict[1]} ({verdict[0]})"))
        for impl, r in by_impl.items():
            if "error" in r:
                verdicts.append(("NOTE", f"{label}: {impl} run failed: {r['error']}"))

    widths = [max(len(row[c]) for row in table) for c in range(len(HEADER))]
    for i, row in enumerate(table):
        print("| " + " | ".join(cell.rjust(w) if i and c > 0 else cell.ljust(w)
                                for c, (cell, w) in enumerate(zip(row, widths))) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    print()
    for verdict, text in verdicts:
        print(f"{verdict} {text}")
    return 1 if any(v == "FAIL" for v, _ in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
