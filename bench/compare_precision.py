#!/usr/bin/env python3
"""Per model: the suite's step in bf16 and tf32 next to PyTorch's strongest compiled step in each.

Why: the targets in one table: suite bf16 at most 0.8x PyTorch's compiled bf16 step (the best of
mode="reduce-overhead", "max-autotune" and the whole step in one CUDA graph ("graphed",
bench/torch_model.py) where they ran; the column says which), the suite's bf16 memory at most its
tf32 footprint and at most what that PyTorch run reserved (max_memory_reserved). The suite's
memory is what bench_step measured the job taking from the device (device_bytes: arena,
workspaces, and the libraries' and the graph's own allocations), else its arena and workspaces. Reads the JSON lines of
bench/run_model_bench.sh (run with BENCH_PRECISIONS="tf32 bf16"); records without "precision"
are tf32. Prints a Markdown table and PASS/FAIL/SKIP lines; exits 1 if a check FAILs or nothing
was found.
"""
import sys

from compare_models import benchmark_records

GIB = float(1 << 30)
TARGET = 0.8
COMPILED = ("torch-compiled", "torch-max-autotune", "torch-graphed")


def read(paths):
    """{(model, size, batch): {(impl, precision): record}} in first-seen order."""
    rows = {}
    for _, key, r in benchmark_records(paths):
        rows.setdefault(key, {})[(r["impl"], r.get("precision", "tf32"))] = r
    return rows


def ms(record):
    if not record or "error" in record:
        return None
    v = record.get("median_ms")
    return float(v) if isinstance(v, (int, float)) and v > 0 else None


def best_compiled(by_slot, precision):
    """(ms, which) of the fastest compiled PyTorch run in that precision, or (None, '-')."""
    runs = [(ms(by_slot.get((impl, precision))), impl[len("torch-"):]) for impl in COMPILED]
    runs = [r for r in runs if r[0] is not None]
    return min(runs) if runs else (None, "-")


def spread(by_slot, precision, mode):
    """', p10-p90 A-B' of that compiled run. Why: PyTorch's step at these sizes is bound by its host
    work, so its spread (and its median from one machine to the next) is wide where the suite's,
    a single graph launch, is not; a reader should see how far one median can be trusted."""
    r = by_slot.get((f"torch-{mode}", precision)) or {}
    lo, hi = r.get("p10_ms"), r.get("p90_ms")
    return f", p10-p90 {lo:.2f}-{hi:.2f}" if isinstance(lo, (int, float)) and isinstance(hi, (int, float)) else ""


def positive(record, field):
    v = record.get(field)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def suite_gib(record):
    """The suite's memory in GiB: measured on the device where the record has it; None when the run
    failed or reported neither."""
    if not ms(record):
        return None
    v = positive(record, "device_bytes") or positive(record, "peak_bytes")
    return v / GIB if v else None


def p10_p90(record):
    lo, hi = positive(record, "p10_ms"), positive(record, "p90_ms")
    return f" (p10-p90 {lo:.2f}-{hi:.2f})" if lo and hi else ""


def reserved_gib(by_slot, precision, mode):
    v = positive(by_slot.get((f"torch-{mode}", precision)) or {}, "max_memory_reserved")
    return v / GIB if v else None


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def main():
    rows = read(sys.argv[1:])
    if not rows:
        print("no benchmark records found", file=sys.stderr)
        return 1
    header = ("model", "input", "batch", "suite bf16 ms", "suite tf32 ms", "torch compiled bf16 ms",
              "torch compiled tf32 ms", "suite bf16 / torch bf16", "suite bf16 images/s", "suite bf16 GiB",
              "suite tf32 GiB", "torch bf16 reserved GiB")
    table, verdicts = [header], []
    for (model, size, batch), by_slot in rows.items():
        s_bf, s_tf = by_slot.get(("suite", "bf16")), by_slot.get(("suite", "tf32"))
        t_bf, t_bf_mode = best_compiled(by_slot, "bf16")
        t_tf, t_tf_mode = best_compiled(by_slot, "tf32")
        ratio = ms(s_bf) / t_bf if ms(s_bf) and t_bf else None
        mem_bf, mem_tf = suite_gib(s_bf), suite_gib(s_tf)
        torch_mem = reserved_gib(by_slot, "bf16", t_bf_mode)
        rate = batch / (ms(s_bf) * 1e-3) if ms(s_bf) else None
        table.append((model, f"{size}x{size}", str(batch),
                      fmt(ms(s_bf)) + (p10_p90(s_bf) if ms(s_bf) else ""),
                      fmt(ms(s_tf)),
                      f"{fmt(t_bf)} ({t_bf_mode}{spread(by_slot, 'bf16', t_bf_mode)})",
                      f"{fmt(t_tf)} ({t_tf_mode}{spread(by_slot, 'tf32', t_tf_mode)})", fmt(ratio), fmt(rate, 0),
                      fmt(mem_bf), fmt(mem_tf), fmt(torch_mem)))
        name = f"{model} {size}x{size}/{batch}"
        if ratio is None:
            verdicts.append(("SKIP", f"{name}: suite bf16 <= {TARGET}x torch compiled bf16: a run is missing"))
        else:
            verdicts.append(("PASS" if ratio <= TARGET else "FAIL",
                             f"{name}: suite bf16 {ms(s_bf):.3f} ms = {ratio:.2f}x torch compiled bf16 "
                             f"{t_bf:.3f} ms ({t_bf_mode}); target <= {TARGET}"))
        if mem_bf is None or mem_tf is None:
            verdicts.append(("SKIP", f"{name}: bf16 memory <= tf32 memory: a suite run, or its memory, is missing"))
        else:
            verdicts.append(("PASS" if mem_bf <= mem_tf else "FAIL",
                             f"{name}: suite bf16 {mem_bf:.2f} GiB vs tf32 {mem_tf:.2f} GiB"))
        if mem_bf is None or torch_mem is None:
            verdicts.append(("SKIP", f"{name}: bf16 memory <= torch's reserved: a run, or its memory, is missing"))
        else:
            verdicts.append(("PASS" if mem_bf <= torch_mem else "FAIL",
                             f"{name}: suite bf16 {mem_bf:.2f} GiB vs torch compiled bf16 reserved "
                             f"{torch_mem:.2f} GiB ({t_bf_mode})"))
    print("| " + " | ".join(table[0]) + " |")
    print("|" + " --- |" * len(table[0]))
    for row in table[1:]:
        print("| " + " | ".join(row) + " |")
    for verdict, text in verdicts:
        print(f"{verdict} {text}")
    return 1 if any(v == "FAIL" for v, _ in verdicts) else 0


if __name__ == "__main__":
    sys.exit(main())
