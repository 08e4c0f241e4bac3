#!/usr/bin/env python3
"""PyTorch reference training step for the suite's DLRM benchmark (bench/run_dlrm_bench.sh).

Why: the suite's step time means something only next to what PyTorch does with the same model on
the same GPU. This times facebookresearch/dlrm's architecture (tests/parity/dlrm_reference.py's
module: nn.EmbeddingBag(mode="sum", sparse=True) per table, the dot interaction, the MLPs) with
torch.optim.SGD (sparse updates of the embedding rows, as the reference) and BCELoss, on synthetic
Criteo-like batches already on the GPU, TF32 on. The interaction's pair indices are built once (the
reference rebuilds them every step), which only helps PyTorch. Modes: eager, or compiled
(torch.compile of the module; the sparse gradients of nn.EmbeddingBag may stop it, in which case
the run reports an error instead of a time). Warm-up, then every step timed with CUDA events.
Prints ONE JSON line on stdout; everything else goes to stderr.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "parity"))
from dlrm_reference import CONFIGS, DLRM  # noqa: E402  (the parity reference's module)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def percentile(sorted_values, q):
    i = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[i]


def make_batches(rows, batch, count, device, seed):
    """Criteo-like batches: log(1 + count) dense features, indices skewed to small values."""
    rng = np.random.default_rng(seed)
    sizes = np.array(rows, dtype=np.float64)
    out = []
    for _ in range(count):
        counts = np.floor(np.expm1(6 * rng.random((batch, 13))))
        counts[rng.random((batch, 13)) < 0.1] = 0
        dense = torch.from_numpy(np.log1p(counts).astype(np.float32)).to(device)
        idx = np.minimum(np.floor(sizes * rng.random((batch, len(rows))) ** 4), sizes - 1).astype(np.int64)
        lookups = [torch.from_numpy(np.ascontiguousarray(idx[:, t])).to(device) for t in range(len(rows))]
        labels = torch.from_numpy((rng.random((batch, 1)) < 0.25).astype(np.float32)).to(device)
        out.append((dense, lookups, labels))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", choices=sorted(CONFIGS), default="criteo-kaggle")
    ap.add_argument("--max-rows", type=int, default=1000000, help="cap on every table (0: uncapped)")
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--mode", choices=("eager", "compiled"), default="eager")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--batches", type=int, default=8, help="distinct batches, rotated")
    ap.add_argument("--lr", type=float, default=1.0)
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    if args.batch < 1 or args.steps < 1 or args.batches < 1 or args.max_rows < 0:
        ap.error("--batch, --steps and --batches must be >= 1 and --max-rows >= 0")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        log(f"no CUDA device available: running on cpu instead of {args.device} (timings are not comparable)")
        device = torch.device("cpu")
    cuda = device.type == "cuda"
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.set_float32_matmul_precision("high")
    np.random.seed(0)
    torch.manual_seed(0)

    cfg = CONFIGS[args.data]
    rows = [min(n, args.max_rows) if args.max_rows else n for n in cfg["rows"]]
    model = DLRM(rows, cfg["dim"], cfg["bottom"], cfg["top"]).to(device).train()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    loss_fn = nn.BCELoss(reduction="mean")
    batches = make_batches(rows, args.batch, args.batches, device, 7)
    offsets = [torch.arange(args.batch, device=device) for _ in rows]
    step_model = torch.compile(model) if args.mode == "compiled" else model
    losses = []

    def step(i):
        dense, lookups, labels = batches[i % len(batches)]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(step_model(dense, offsets, lookups), labels)
        loss.backward()
        opt.step()
        return loss

    log(f"{args.data} rows<= {args.max_rows} batch {args.batch} {args.mode}: warm-up {args.warmup} steps")
    for i in range(args.warmup):
        losses.append(step(i))
    if cuda:
        torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps)] if cuda else None
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(args.steps)] if cuda else None
    wall = []
    for i in range(args.steps):
        if cuda:
            starts[i].record()
        else:
            t0 = time.perf_counter()
        losses.append(step(args.warmup + i))
        if cuda:
            ends[i].record()
        else:
            wall.append((time.perf_counter() - t0) * 1e3)
    if cuda:
        torch.cuda.synchronize()
        ms = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    else:
        ms = sorted(wall)
    median = statistics.median(ms)
    emb_bytes = sum(n * cfg["dim"] * 4 for n in rows)
    result = {"impl": f"torch-{args.mode}", "data": args.data, "max_rows": args.max_rows, "batch": args.batch,
              "batches": args.batches, "median_ms": round(median, 4), "p10_ms": round(percentile(ms, 10), 4),
              "p90_ms": round(percentile(ms, 90), 4), "samples_per_s": round(args.batch / (median * 1e-3), 1),
              "params": sum(p.numel() for p in model.parameters()), "embedding_bytes": emb_bytes,
              "peak_bytes": torch.cuda.max_memory_allocated() if cuda else 0,
              "peak_reserved_bytes": torch.cuda.max_memory_reserved() if cuda else 0,
              "mean_loss": round(float(torch.stack(losses).mean()), 5), "torch": torch.__version__,
              "device": torch.cuda.get_device_name() if cuda else "cpu"}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
