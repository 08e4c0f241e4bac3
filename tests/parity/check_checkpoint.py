#!/usr/bin/env python3
"""Check that a checkpoint written by the suite loads into timm unchanged.

Why: the suite promises that its safetensors checkpoints use timm's state_dict names, dtypes and
shapes, so weights move both ways. This loads FILE with load_state_dict(strict=True) after
comparing every entry itself (so a mismatch is named, not buried in a long PyTorch message),
then runs an eval-mode forward. With --expect-logits it also compares the eval logits on that
file's input with the ones the suite computed (relative L2 error < 1e-3).

Prints "checkpoint OK <n tensors>" and exits 0, or the problems found and exits 1.
"""
import argparse
import sys

import torch
import timm
from safetensors import SafetensorError
from safetensors.torch import load_file

MAX_LISTED = 20


def fail(problems):
    for p in problems[:MAX_LISTED]:
        print(p)
    if len(problems) > MAX_LISTED:
        print(f"... and {len(problems) - MAX_LISTED} more")
    sys.exit(1)


def load(path, what):
    try:
        return load_file(path)
    except (OSError, SafetensorError) as e:
        fail([f"cannot read {what} {path} as safetensors: {e}"])


def compare_entries(expected, got):
    """Names, dtypes, shapes and finiteness; the model's own state_dict is the expectation."""
    problems = [f"missing tensor {k} (expected {expected[k].dtype} {list(expected[k].shape)})"
                for k in expected if k not in got]
    problems += [f"unexpected tensor {k} {got[k].dtype} {list(got[k].shape)}"
                 for k in got if k not in expected]
    for k in expected:
        if k not in got:
            continue
        e, g = expected[k], got[k]
        if g.dtype != e.dtype:
            problems.append(f"{k}: dtype {g.dtype}, expected {e.dtype}")
        elif g.shape != e.shape:
            problems.append(f"{k}: shape {list(g.shape)}, expected {list(e.shape)}")
        elif g.is_floating_point() and not torch.isfinite(g).all():
            problems.append(f"{k}: holds NaN or Inf")
        elif k.endswith("num_batches_tracked") and g.item() < 0:
            problems.append(f"{k}: negative count {g.item()}")
        elif k.endswith("running_var") and (g < 0).any():
            problems.append(f"{k}: negative variance")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", help="safetensors checkpoint written by the suite")
    ap.add_argument("--model", required=True)
    ap.add_argument("--classes", type=int, required=True)
    ap.add_argument("--image-size", type=int, default=64,
                    help="input size of the fixed test input (ignored with --expect-logits)")
    ap.add_argument("--expect-logits", metavar="FILE2",
                    help='safetensors holding "input" (NHWC float32) and "logits" to compare')
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()

    device = torch.device(args.device)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"no CUDA device available: running on cpu instead of {args.device}", file=sys.stderr)
        device = torch.device("cpu")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False

    try:
        model = timm.create_model(args.model, num_classes=args.classes, pretrained=False)
    except RuntimeError as e:  # timm's "Unknown model"
        fail([f"--model {args.model}: {e}"])
    state = load(args.file, "checkpoint")
    problems = compare_entries(model.state_dict(), state)
    if problems:
        fail(problems)
    model.load_state_dict(state, strict=True)
    model = model.to(device).eval()

    if args.expect_logits:
        ref = load(args.expect_logits, "--expect-logits file")
        for key in ("input", "logits"):
            if key not in ref:
                fail([f'--expect-logits file {args.expect_logits} has no "{key}" tensor'])
        x, want = ref["input"], ref["logits"].float()
        if x.ndim != 4 or x.shape[3] != 3:
            fail([f'"input" in {args.expect_logits} has shape {list(x.shape)}, expected [N,H,W,3]'])
        x = x.float().permute(0, 3, 1, 2).contiguous()
    else:
        gen = torch.Generator().manual_seed(0)
        x, want = torch.randn(2, 3, args.image_size, args.image_size, generator=gen), None

    with torch.no_grad():
        logits = model(x.to(device)).float().cpu()
    if not torch.isfinite(logits).all():
        fail(["eval logits hold NaN or Inf"])
    if want is not None:
        if want.shape != logits.shape:
            fail([f"expected logits shape {list(want.shape)}, timm gives {list(logits.shape)}"])
        rel = ((logits - want).norm() / want.norm().clamp_min(1e-30)).item()
        if not rel < 1e-3:
            fail([f"eval logits differ: relative L2 error {rel:.3e} (limit 1e-3)"])
        print(f"eval logits match: relative L2 error {rel:.3e}", file=sys.stderr)
    print(f"checkpoint OK {len(state)}")


if __name__ == "__main__":
    main()
