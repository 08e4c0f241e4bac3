#!/usr/bin/env python3
"""PyTorch/timm reference training step for the suite's model benchmark.

Why: the suite's step time and memory only mean something next to what a well-tuned framework
does on the same GPU. This times timm's model with SGD (lr 0.1, momentum 0.9, weight decay 5e-4)
or AdamW (lr 1e-3, weight decay 0.05), both fused (one kernel over all parameters), as the suite's
step does, and cross-entropy on synthetic batches already on the GPU, cudnn.benchmark on, either
eager (NCHW) or compiled with channels_last: torch.compile(mode="reduce-overhead") ("compiled") or
mode="max-autotune" (Triton autotuning, CUDA graphs; minutes of compile time), or "graphed": compiled
(default mode) with the whole step, optimizer included, captured in one CUDA graph. --precision: tf32
(TF32 tensor cores for float32, the default), fp32 (strict), or bf16 (float32 weights, forward
and loss under torch.autocast(dtype=torch.bfloat16), as a mixed-precision user writes it; no
GradScaler, which bfloat16 does not need). Compilation is done in the warm-up and not timed. Prints ONE JSON line on stdout; everything else goes to stderr.
max_memory_reserved/allocated are the process's peaks over the whole run (what it held: run each
mode in its own process). They include cudnn.benchmark's algorithm trials, which can need far more
than a training step does, so steady_max_memory_reserved/allocated give the peaks of the timed
steps alone, after the allocator's cache is emptied and a few more warm-up steps.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import timm

# the suite's model names where timm's differ
TIMM_NAMES = {"cait_xxs24": "cait_xxs24_224"}
N_BATCHES = 4  # distinct synthetic batches, rotated, so no step sees a constant input
STEADY_WARMUP = 3  # steps between emptying the allocator's cache and timing


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def percentile(sorted_values, q):
    """Nearest-rank percentile of an already sorted list."""
    i = min(len(sorted_values) - 1, max(0, round(q / 100 * (len(sorted_values) - 1))))
    return sorted_values[i]


def graph_whole_step(eager_step, step_loss, opt, inputs, labels, log):
    """The whole step (compiled forward and loss, backward, fused optimizer) as one CUDA graph, as
    PyTorch's CUDA Graphs notes show for whole-network capture. Why: at these sizes a compiled
    step's host work (autograd, the optimizer's launches, zero_grad) can take longer than its GPU
    work, and mode="reduce-overhead" graphs only the forward and the backward; a user after the
    last microsecond captures everything and replays it. Returns step(i): copy batch i into the
    captured inputs, replay."""
    static_x, static_y = inputs[0].clone(), labels[0].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # compiles, and creates the optimizer state, off the capture
        for i in range(3):
            eager_step(i)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # so backward allocates .grad from the graph's pool
    with torch.cuda.graph(graph):
        static_loss = step_loss(static_x, static_y)
        static_loss.backward()
        opt.step()
    log("whole step captured in one CUDA graph")

    def step(i):
        static_x.copy_(inputs[i % len(inputs)])
        static_y.copy_(labels[i % len(labels)])
        graph.replay()
        return static_loss
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--image-size", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--mode", choices=("eager", "compiled", "max-autotune", "graphed"), required=True)
    ap.add_argument("--precision", choices=("tf32", "fp32", "bf16"), default="tf32")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=15)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd")
    args = ap.parse_args()
    for name in ("image_size", "batch", "classes", "steps"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")

    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        log(f"no CUDA device available: running on cpu instead of {args.device} (timings are not comparable)")
        device = torch.device("cpu")
    cuda = device.type == "cuda"
    tf32 = args.precision != "fp32"
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.set_float32_matmul_precision("high" if tf32 else "highest")
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)

    compiled = args.mode != "eager"
    fmt = torch.channels_last if compiled else torch.contiguous_format
    model = timm.create_model(TIMM_NAMES.get(args.model, args.model), num_classes=args.classes,
                              pretrained=False, **({"img_size": args.image_size} if args.model.startswith("cait") else {}))
    model = model.to(device=device, memory_format=fmt).train()
    if args.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, fused=cuda,
                                capturable=args.mode == "graphed")
    else:
        try:
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, fused=cuda)
        except (TypeError, RuntimeError) as e:  # fused SGD arrived in PyTorch 2.4
            log(f"fused SGD unavailable ({e}): foreach SGD instead")
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4, foreach=True)
    shape = (args.batch, 3, args.image_size, args.image_size)
    inputs = [torch.randn(shape, device=device).contiguous(memory_format=fmt) for _ in range(N_BATCHES)]
    labels = [torch.randint(0, args.classes, (args.batch,), device=device) for _ in range(N_BATCHES)]
    compile_mode = {"compiled": "reduce-overhead", "max-autotune": "max-autotune", "graphed": "default"}.get(args.mode)
    bf16 = args.precision == "bf16"

    def forward_loss(x, y):
        # autocast inside what is compiled, so Inductor sees the weight casts and the loss too
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            return F.cross_entropy(model(x), y)

    step_loss = torch.compile(forward_loss, mode=None if args.mode == "graphed" else compile_mode) \
        if compiled else forward_loss

    def step(i):
        opt.zero_grad(set_to_none=True)
        loss = step_loss(inputs[i % N_BATCHES], labels[i % N_BATCHES])
        loss.backward()
        opt.step()
        return loss

    if args.mode == "graphed":
        step = graph_whole_step(step, step_loss, opt, inputs, labels, log)

    warmup = max(args.warmup, 20) if compiled else args.warmup
    t0 = time.perf_counter()
    for i in range(warmup):
        loss = step(i)
    if cuda:
        torch.cuda.synchronize()
    log(f"{args.model} {args.mode}: {warmup} warm-up steps in {time.perf_counter() - t0:.1f} s, "
        f"loss {loss.item():.4f}")
    if cuda:
        warmup_reserved, warmup_allocated = torch.cuda.max_memory_reserved(), torch.cuda.max_memory_allocated()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        for i in range(STEADY_WARMUP):  # the allocator refills its cache outside the timed steps
            step(warmup + i)
        warmup += STEADY_WARMUP

    times_ms = []
    if cuda:
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(args.steps)]
        for i, (start, end) in enumerate(events):
            start.record()
            loss = step(warmup + i)
            end.record()
        torch.cuda.synchronize()
        times_ms = [s.elapsed_time(e) for s, e in events]
    else:
        for i in range(args.steps):
            t = time.perf_counter()
            loss = step(warmup + i)
            times_ms.append((time.perf_counter() - t) * 1e3)
    final_loss = loss.item()
    log(f"{args.steps} timed steps, last loss {final_loss:.4f}"
        + ("" if final_loss == final_loss else " (NaN: timings of a diverged run may not be representative)"))

    times_ms.sort()
    result = {
        "impl": f"torch-{args.mode}", "model": args.model, "image_size": args.image_size,
        "batch": args.batch, "classes": args.classes, "precision": args.precision,
        "compile_mode": compile_mode, "optimizer": f"{args.optimizer} {'fused' if opt.defaults.get('fused') else 'foreach'}",
        "median_ms": round(statistics.median(times_ms), 4),
        "p10_ms": round(percentile(times_ms, 10), 4), "p90_ms": round(percentile(times_ms, 90), 4),
        "max_memory_reserved": max(warmup_reserved, torch.cuda.max_memory_reserved()) if cuda else None,
        "max_memory_allocated": max(warmup_allocated, torch.cuda.max_memory_allocated()) if cuda else None,
        "steady_max_memory_reserved": torch.cuda.max_memory_reserved() if cuda else None,
        "steady_max_memory_allocated": torch.cuda.max_memory_allocated() if cuda else None,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(device) if cuda else "cpu",
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
