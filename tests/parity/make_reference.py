#!/usr/bin/env python3
"""The parity references committed in tests/parity/reference/, which gpu_model_parity and
gpu_dlrm_parity read by default: one training step of ResNet-26, EfficientNetV2-S and CaiT-XXS24
(timm) and of the DLRM (tests/parity/dlrm_reference.py's module) at small shapes, computed in
float64 on the CPU, with PyTorch's own float32 step (and, for the vision models, its bfloat16
autocast step) measured against it.

Why it is small: the models' weights are tens of MB, so they are not stored. Every weight, running
statistic and the images are drawn from a rule both sides compute bit for bit (parity_rule below,
tests/support/parity_rule.c in C): splitmix64 over each tensor's name and element index. The logits and
loss are stored whole; each gradient, running statistic and updated parameter is stored as a count
sketch of SKETCH_BUCKETS buckets (each element added, with a sign, into a bucket its name and
index choose) with its exact L2 norm and PyTorch's own error against float64. The sketch is linear
and keeps the L2 norm in expectation, so ||sketch(suite) - sketch(reference)|| / ||reference||
estimates the suite's relative error (within about sqrt(2/16), 35%, of it: inside the tests'
factor of 10 for float32 and 4 for bf16).

File layout (safetensors): logits, loss, torch_err.logits, torch_err.loss (as timm_reference.py
writes them); input_shape i32 [N,S,S,3] and labels i32 [N] (drawn by the rule); patch_size (CaiT);
relu_margin.<layer> (ResNet); table.sketch f32 [M,16], table.norm f32 [M], table.torch_err f32 [M]
for the M keys grad.<param>, running.<buffer>, updated.<param> in byte order, table.digest i64 [1]
(FNV-1a of the keys joined by newlines, so both sides agree on the rows). The DLRM's file keeps
dense, indices, labels, rows.<table> and grad_rows.<table> whole and max_rows i32 [1].

Run where torch and timm are (CPU is enough; a few minutes):
    python3 tests/parity/make_reference.py --out tests/parity/reference
"""
import argparse
import math
import os
import sys
import types

import numpy as np
import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import timm_reference  # noqa: E402
import dlrm_reference  # noqa: E402

SKETCH_BUCKETS = 16
GOLDEN = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1
# model, classes, image size, batch, patch (CaiT): at least 8 values per channel in the last stage
VISION = (("resnet26", 10, 32, 8, 16), ("efficientnetv2_s", 10, 64, 4, 16), ("cait_xxs24", 10, 32, 4, 4))
DLRM = dict(config="criteo-kaggle", max_rows=8, batch=16, lr=1.0, seed=0)


# --- the rule both sides compute (tests/support/parity_rule.c) ----------------------------------------
def fnv1a(text):
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001B3) & MASK
    return h


def stream(name, n):
    """splitmix64's output function over fnv1a(name) + k * golden for k < n (uint64)."""
    with np.errstate(over="ignore"):
        z = np.uint64(fnv1a(name)) + np.arange(n, dtype=np.uint64) * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def uniform(name, n):
    """[-1, 1) in float64, exactly as the C side computes it."""
    return (stream(name, n) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 * 2.0 - 1.0


def rule_values(name, shape):
    """A tensor's values by its name and PyTorch shape (float32, PyTorch's layout)."""
    n = int(np.prod(shape)) if len(shape) else 1
    u = uniform(name, n)
    if name.endswith("running_var"):
        v = 1.0 + 0.5 * u
    elif name.endswith("running_mean"):
        v = 0.1 * u
    elif len(shape) >= 2:
        v = math.sqrt(3.0 / (n // shape[0])) * u
    elif name.endswith("gamma_1") or name.endswith("gamma_2"):
        v = 0.4 + 0.2 * u
    elif name.endswith("weight"):
        v = 1.0 + 0.5 * u
    else:
        v = 0.1 * u
    return torch.from_numpy(v.astype(np.float32).reshape(shape))


def rule_state(model):
    """Every float tensor of the state_dict by the rule (num_batches_tracked stays as it is)."""
    state = {}
    for k, v in model.state_dict().items():
        state[k] = rule_values(k, tuple(v.shape)) if v.is_floating_point() else v.clone()
    return state


def rule_labels(n, classes):
    return torch.from_numpy((stream("labels", n) % np.uint64(classes)).astype(np.int64))


def sketch(key, values):
    v = values.reshape(-1).to(torch.float64).numpy()
    bits = stream("sketch." + key, v.size)
    bucket = (bits % np.uint64(SKETCH_BUCKETS)).astype(np.int64)
    sign = np.where((bits >> np.uint64(63)) == 1, 1.0, -1.0)
    return np.bincount(bucket, weights=sign * v, minlength=SKETCH_BUCKETS)


def table(ref, truth, approx, keys):
    """table.* for the keys (sorted here), from the float64 truth and PyTorch's own approximation."""
    keys = sorted(keys)
    rows, norms, errs = [], [], []
    for key in keys:
        t, a = truth[key], approx[key]
        rows.append(sketch(key, t))
        norm = t.norm().item()
        norms.append(norm)
        errs.append((a - t).norm().item() / max(norm, 1e-30))
    ref["table.sketch"] = torch.tensor(np.array(rows), dtype=torch.float32)
    ref["table.norm"] = torch.tensor(norms, dtype=torch.float32)
    ref["table.torch_err"] = torch.tensor(errs, dtype=torch.float32)
    digest = fnv1a("\n".join(keys))
    ref["table.digest"] = torch.tensor([digest - (1 << 64) if digest >= 1 << 63 else digest], dtype=torch.int64)
    # the estimate reproduces PyTorch's own error from the sketches alone (a check of the sketch)
    est = [np.linalg.norm(sketch(k, approx[k]) - sketch(k, truth[k])) / max(n, 1e-30) for k, n in zip(keys, norms)]
    ratio = np.array(est) / np.maximum(np.array(errs), 1e-30)
    return len(keys), float(np.median(ratio))


def vision(model_name, classes, size, batch, patch, bf16, out):
    args = types.SimpleNamespace(model=model_name, classes=classes, image_size=size, batch=batch, patch_size=patch,
                                 sgd_step=0.1)
    model = timm_reference.create(args)
    base_state = rule_state(model)
    x_nhwc = torch.from_numpy((math.sqrt(3.0) * uniform("input", batch * size * size * 3))
                              .astype(np.float32).reshape(batch, size, size, 3))
    x = x_nhwc.permute(0, 3, 1, 2).contiguous()
    labels = rule_labels(batch, classes)
    device = torch.device("cpu")
    truth = timm_reference.run_step(args, base_state, x, labels, torch.float64, device)
    approx = timm_reference.run_step(args, base_state, x, labels, torch.float32, device, autocast_bf16=bf16)
    ref = {"input_shape": torch.tensor([batch, size, size, 3], dtype=torch.int32),
           "labels": labels.to(torch.int32)}
    if model_name.startswith("cait"):
        ref["patch_size"] = torch.tensor([float(patch)])
    for key in ("logits", "loss"):
        ref[key] = truth[key].to(torch.float32).contiguous()
        err = (approx[key] - truth[key]).norm() / truth[key].norm().clamp_min(1e-30)
        ref[f"torch_err.{key}"] = err.to(torch.float32).reshape(1)
    for key, value in truth.items():
        if key.startswith("relu_margin."):
            ref[key] = value.to(torch.float32).reshape(1)
    keys = [k for k in truth if k.split(".")[0] in ("grad", "running", "updated")]
    rows, ratio = table(ref, truth, approx, keys)
    meta = {"model": model_name, "classes": str(classes), "image_size": str(size), "batch": str(batch),
            "patch_size": str(patch), "bf16": str(int(bf16)), "reference": "float64", "weights": "parity_rule",
            "sketch_buckets": str(SKETCH_BUCKETS), "sgd_lr": "0.1", "sgd_momentum": "0.9", "sgd_weight_decay": "5e-4",
            "torch": torch.__version__, "timm": timm_reference.timm.__version__, "device": "cpu"}
    path = os.path.join(out, "bf16" if bf16 else "fp32", f"{model_name}_ref.safetensors")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save_file(ref, path, metadata=meta)
    print(f"{path}: {os.path.getsize(path)} bytes, {rows} sketched tensors (sketch/exact error median {ratio:.2f}), "
          f"loss {truth['loss'].item():.6f}, torch-{'bf16' if bf16 else 'fp32'} logits err "
          f"{ref['torch_err.logits'].item():.2e}", flush=True)


def dlrm(out):
    c = DLRM
    args = types.SimpleNamespace(lr=c["lr"])
    cfg = dict(dlrm_reference.CONFIGS[c["config"]])
    cfg["rows_capped"] = [min(n, c["max_rows"]) for n in cfg["rows"]]
    np.random.seed(c["seed"])
    model = dlrm_reference.DLRM(cfg["rows_capped"], cfg["dim"], cfg["bottom"], cfg["top"])
    base_state = rule_state(model)
    # the batch as dlrm_reference.py draws it (stored whole: it is small)
    rng = np.random.default_rng(c["seed"] + 1)
    b = c["batch"]
    counts = np.floor(np.expm1(6 * rng.random((b, 13))))
    counts[rng.random((b, 13)) < 0.1] = 0
    dense = torch.from_numpy(np.log1p(counts).astype(np.float32))
    u = rng.random((b, len(cfg["rows_capped"])))
    sizes = np.array(cfg["rows_capped"], dtype=np.float64)
    indices = torch.from_numpy(np.minimum(np.floor(sizes * u ** 4), sizes - 1).astype(np.int32))
    labels = torch.from_numpy((rng.random(b) < 0.25).astype(np.float32))
    device = torch.device("cpu")
    truth = dlrm_reference.run_step(args, cfg, base_state, dense, indices, labels, torch.float64, device)
    approx = dlrm_reference.run_step(args, cfg, base_state, dense, indices, labels, torch.float32, device)
    ref = {"dense": dense, "indices": indices, "labels": labels,
           "max_rows": torch.tensor([c["max_rows"]], dtype=torch.int32)}
    for key, value in truth.items():
        if key.startswith("rows."):
            ref[key] = value.contiguous()
        elif key.startswith("grad_rows.") or key in ("probs", "loss"):
            ref[key] = value.to(torch.float32).contiguous()
            err = (approx[key] - value).norm() / value.norm().clamp_min(1e-30)
            ref[f"torch_err.{key}"] = err.to(torch.float32).reshape(1)
    keys = [k for k in truth if k.startswith("grad.") or k.startswith("updated.")]
    rows, ratio = table(ref, truth, approx, keys)
    meta = {"config": c["config"], "max_rows": str(c["max_rows"]), "batch": str(b), "lr": repr(c["lr"]),
            "seed": str(c["seed"]), "reference": "float64", "weights": "parity_rule",
            "sketch_buckets": str(SKETCH_BUCKETS), "torch": torch.__version__, "device": "cpu"}
    path = os.path.join(out, "fp32", "dlrm_ref.safetensors")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    save_file(ref, path, metadata=meta)
    print(f"{path}: {os.path.getsize(path)} bytes, {rows} sketched tensors (sketch/exact error median {ratio:.2f}), "
          f"loss {truth['loss'].item():.6f}", flush=True)


RULE_CHECK = (("a.running_var", (5,)), ("b.running_mean", (5,)), ("c.weight", (3, 4, 1, 2)), ("d.gamma_1", (5,)),
              ("e.weight", (5,)), ("f.bias", (5,)))


def rule_check(out):
    """rule_check.safetensors: the rule's values for one name of each kind, images, labels and a
    sketch, which tests/models/test_parity_rule.c recomputes in C and must match bit for bit."""
    ref = {f"values.{name}": rule_values(name, shape) for name, shape in RULE_CHECK}
    ref["input"] = torch.from_numpy((math.sqrt(3.0) * uniform("input", 48)).astype(np.float32))
    ref["labels"] = rule_labels(16, 10).to(torch.int32)
    ref["sketch"] = torch.from_numpy(sketch("grad.c.weight", ref["values.c.weight"]))
    path = os.path.join(out, "rule_check.safetensors")
    os.makedirs(out, exist_ok=True)
    save_file(ref, path)
    print(f"{path}: {os.path.getsize(path)} bytes", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "reference"))
    ap.add_argument("--only", default="", help="comma-separated: resnet26,efficientnetv2_s,cait_xxs24,dlrm")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    torch.manual_seed(0)
    rule_check(args.out)
    for model_name, classes, size, batch, patch in VISION:
        if not only or model_name in only:
            for bf16 in (False, True):
                vision(model_name, classes, size, batch, patch, bf16, args.out)
    if not only or "dlrm" in only:
        dlrm(args.out)


if __name__ == "__main__":
    main()
