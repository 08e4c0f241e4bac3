#!/usr/bin/env python3
"""Where one training step's GPU time goes, by kind of kernel.

Reads the CSV of
    ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv --page raw  bench_step ... --profile
(one step, the GPU's own clocks, caches as the step leaves them) and prints, per kind, the kernels,
their summed time and share, and the longest kernel names (--top, 3). The kernels run one at a time under
ncu, so the sum leaves out the gaps between launches, but each kernel is also timed alone, which can
make the sum exceed the real step (--step-ms, bench_step's median, says which it is).

usage: kernel_breakdown.py NCU.csv [--step-ms X] [--top N]
"""
import argparse
import csv
import re
import sys
from collections import defaultdict

# First match wins; patterns are matched against the demangled kernel name.
KINDS = [
    ("depthwise", r"depthwise"),
    ("convolution (cuDNN)", r"xmma|cutlass|cudnn|implicit_convolve|conv2d|wgrad|dgrad|fprop|sm90_|sm80_|nhwc"),
    ("GEMM (cuBLAS)", r"gemm|cublas|Kernel2"),
    ("batch norm: statistics", r"bn_stats"),
    ("batch norm: apply", r"bn_apply"),
    ("batch norm: backward reduce", r"bn_backward_reduce|bn_reduce"),
    ("batch norm: backward dx", r"bn_backward_dx|bn_dx"),
    ("optimizer", r"sgd|adam|optim"),
    ("bf16/float casts", r"cast|convert|to_bf16|to_float"),
    ("pooling", r"pool"),
    ("loss", r"loss|softmax|cross_entropy"),
    ("attention / layer norm / GELU", r"attention|layernorm|layer_norm|gelu"),
    ("fill / copy", r"fill|memset|copy|zero"),
]


def kind_of(name):
    for kind, pattern in KINDS:
        if re.search(pattern, name, re.IGNORECASE):
            return kind
    return "other"


def fail(message):
    print(f"kernel_breakdown: {message}", file=sys.stderr)
    sys.exit(2)


def read_rows(path):
    try:
        with open(path, newline="") as f:
            lines = [line for line in f if line.startswith('"')]  # ncu prints its own notes first
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    rows = list(csv.DictReader(lines))
    out = []
    for row in rows:
        value = row.get("gpu__time_duration.sum", "")
        name = row.get("Kernel Name", "")
        try:
            out.append((name, float(value.replace(",", ""))))
        except ValueError:
            continue  # the units row
    unit = rows[0].get("gpu__time_duration.sum", "nsecond") if rows else "nsecond"
    scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0}.get(unit, 1e-6)
    return [(name, t * scale) for name, t in out]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--step-ms", type=float, help="bench_step's median step, to show the launch gaps")
    ap.add_argument("--top", type=int, default=3, help="longest kernels named per kind")
    args = ap.parse_args()
    rows = read_rows(args.csv)
    if not rows:
        fail(f"{args.csv}: no gpu__time_duration.sum rows (expected the CSV of ncu --csv --page raw)")
    total = sum(t for _, t in rows)
    by_kind = defaultdict(list)
    for name, t in rows:
        by_kind[kind_of(name)].append((t, name))
    print(f"{'kind':<32} {'kernels':>7} {'ms':>8} {'share':>6}  longest")
    for kind, items in sorted(by_kind.items(), key=lambda kv: -sum(t for t, _ in kv[1])):
        ms = sum(t for t, _ in items)
        names = defaultdict(float)
        for t, name in items:
            names[name.split("(")[0][:48]] += t
        top = ", ".join(f"{n} {v:.3f}" for n, v in sorted(names.items(), key=lambda kv: -kv[1])[: args.top])
        print(f"{kind:<32} {len(items):>7} {ms:>8.3f} {100 * ms / total:>5.1f}%  {top}")
    print(f"{'all kernels':<32} {len(rows):>7} {total:>8.3f}")
    if args.step_ms and args.step_ms >= total:
        print(f"step median {args.step_ms:.3f} ms: {args.step_ms - total:.3f} ms between kernels "
              f"({100 * (args.step_ms - total) / args.step_ms:.1f}%)")
    elif args.step_ms:
        # Kernels replayed one at a time (cold starts, no overlap) sum to more than the real step.
        print(f"step median {args.step_ms:.3f} ms, less than the kernels' sum under ncu: only the shares "
              f"above are comparable, not the times")


if __name__ == "__main__":
    main()
