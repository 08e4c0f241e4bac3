#!/usr/bin/env python3
"""Reference numbers for the suite's model parity tests, computed with timm/PyTorch.

Why: the suite implements training directly on cuDNN/cuBLAS; the only convincing check is that
one training step on the same weights and input gives the same logits, loss, gradients,
BatchNorm running statistics (and optionally SGD update) as timm does. Every BatchNorm and
LayerNorm is randomised first, and CaiT's LayerScale gammas too: timm zero-initialises the last
BN gamma of each ResNet block and starts LayerScale at 1e-5, which would make those branches
contribute nothing and hide gradient bugs.

Writes, under --out:
  <model>_weights.safetensors  the state_dict before the step, as safetensors.torch.save_file
                               writes it (so also a "weights saved from timm" fixture)
  <model>_ref.safetensors      input (float32 NHWC), labels (int32), logits, loss [1],
                               grad.<param>, running.<bn buffer> after the forward,
                               updated.<param> with --sgd-step; the settings are in __metadata__

With --bf16 1 PyTorch's compared step is the mixed-precision one a user writes, float32 weights
under torch.autocast(dtype=torch.bfloat16); torch_err.<key> is then its error against float64,
the bound the suite's bf16 step is held to (a few times what PyTorch's own bf16 reaches).
"""
import contextlib
import argparse
import os
import sys

import torch
import torch.nn.functional as F
import timm
from safetensors.torch import save_file

MODELS = ("resnet26", "resnet50", "resnet152", "efficientnetv2_s", "cait_xxs24")
TIMM_NAMES = {"cait_xxs24": "cait_xxs24_224"}


def create(args):
    """timm's model for the suite's name; CaiT at the reference's input and patch size."""
    kwargs = {}
    if args.model.startswith("cait"):
        kwargs = {"img_size": args.image_size, "patch_size": args.patch_size}
    return timm.create_model(TIMM_NAMES.get(args.model, args.model), num_classes=args.classes,
                             pretrained=False, **kwargs)


def pick_device(name):
    if name.startswith("cuda") and not torch.cuda.is_available():
        print(f"no CUDA device available: running on cpu instead of {name}", file=sys.stderr)
        return torch.device("cpu")
    return torch.device(name)


def randomise_norms(model):
    """Non-trivial BN parameters and statistics so every branch affects the result."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
            elif isinstance(m, torch.nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0.0, 0.1)
        for name, p in model.named_parameters():
            if name.endswith("gamma_1") or name.endswith("gamma_2"):
                p.uniform_(0.2, 0.6)


def cpu_copy(t):
    return t.detach().to("cpu").contiguous()


def sgd_param_groups(model, weight_decay):
    """Weight decay on conv and linear weights only (ndim > 1), none on norms, biases and what the
    model lists in no_weight_decay() (CaiT's pos_embed and cls_token), as timm's optimizer
    factory does."""
    skip = model.no_weight_decay() if hasattr(model, "no_weight_decay") else set()
    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and n not in skip]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1 or n in skip]
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0}]


def run_step(args, base_state, x, labels, dtype, device, autocast_bf16=False):
    """One training step (forward, cross-entropy, backward, optional SGD) from base_state in dtype
    (with autocast_bf16: float32 weights, forward under bfloat16 autocast, loss in float32 as
    autocast makes cross_entropy); every result as a float64 CPU tensor keyed as in the
    reference file."""
    model = create(args)
    model.load_state_dict(base_state)
    model = model.to(device=device, dtype=dtype).train()
    margins = {}

    def record_margin(name):
        # How close the nearest pre-activation sits to ReLU's kink, relative to the spread: a
        # float32 forward cannot decide elements closer than its own rounding, and one flipped
        # element changes every gradient below it by about 1/sqrt(elements).
        def hook(module, inputs):
            v = inputs[0].detach()
            margins[name] = (v.abs().min() / v.std().clamp_min(1e-30)).reshape(1)
        return hook

    for name, module in model.named_modules():
        if isinstance(module, torch.nn.ReLU):
            module.register_forward_pre_hook(record_margin(name))
    cast = torch.autocast(device.type, dtype=torch.bfloat16) if autocast_bf16 else contextlib.nullcontext()
    with cast:
        logits = model(x.to(dtype))
        loss = F.cross_entropy(logits, labels)
    logits = logits.float()
    loss.backward()
    out = {"logits": logits, "loss": loss.reshape(1)}
    out.update({f"relu_margin.{name}": m for name, m in margins.items()})
    for name, p in model.named_parameters():
        if p.grad is None:
            sys.exit(f"parameter {name} got no gradient")
        out[f"grad.{name}"] = p.grad
    for name, b in model.named_buffers():
        if name.endswith("running_mean") or name.endswith("running_var"):
            out[f"running.{name}"] = b
    if args.sgd_step is not None:
        opt = torch.optim.SGD(sgd_param_groups(model, 5e-4), lr=args.sgd_step, momentum=0.9)
        opt.step()
        for name, p in model.named_parameters():
            out[f"updated.{name}"] = p
    return {k: v.detach().to("cpu", torch.float64) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, choices=MODELS)
    ap.add_argument("--classes", type=int, required=True)
    ap.add_argument("--image-size", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--tf32", type=int, choices=(0, 1), default=0)
    ap.add_argument("--sgd-step", type=float, metavar="LR", default=None,
                    help="also apply one SGD step (momentum 0.9, weight decay 5e-4) and store updated.*")
    ap.add_argument("--bf16", type=int, choices=(0, 1), default=0,
                    help="compare PyTorch's bfloat16 autocast step (not float32) with float64")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--patch-size", type=int, default=16, help="CaiT: patch side")
    args = ap.parse_args()
    for name in ("classes", "image_size", "batch"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.batch < 2:
        ap.error("--batch must be >= 2: train-mode BatchNorm needs more than one value per channel")

    device = pick_device(args.device)
    torch.backends.cudnn.allow_tf32 = bool(args.tf32)
    torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(args.seed)

    model = create(args)
    randomise_norms(model)
    base_state = {k: v.clone() for k, v in model.state_dict().items()}

    os.makedirs(args.out, exist_ok=True)
    weights_path = os.path.join(args.out, f"{args.model}_weights.safetensors")
    save_file({k: cpu_copy(v) for k, v in base_state.items()}, weights_path)

    gen = torch.Generator().manual_seed(args.seed + 1)  # input independent of the model's RNG use
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=gen)
    labels = torch.randint(0, args.classes, (args.batch,), generator=gen)
    x, labels = x.to(device), labels.to(device)

    # The reference is the step in float64; PyTorch's own float32 (or TF32) step is measured
    # against it too, and its error per tensor is stored as torch_err.<key>, so the suite is held
    # to the precision the framework itself reaches rather than to the framework's rounding.
    truth = run_step(args, base_state, x, labels, torch.float64, device)
    torch32 = run_step(args, base_state, x, labels, torch.float32, device, autocast_bf16=bool(args.bf16))
    ref = {"input": cpu_copy(x.permute(0, 2, 3, 1)), "labels": cpu_copy(labels).to(torch.int32)}
    if args.model.startswith("cait"):
        ref["patch_size"] = torch.tensor([float(args.patch_size)])
    for key, value in truth.items():
        ref[key] = value.to(torch.float32).contiguous()
        if key.startswith("relu_margin."):
            continue
        err = (torch32[key] - value).norm() / value.norm().clamp_min(1e-30)
        ref[f"torch_err.{key}"] = err.to(torch.float32).reshape(1)
        ref[f"torch32.{key}"] = torch32[key].to(torch.float32).contiguous()
    loss, logits = truth["loss"], truth["logits"]

    meta = {"model": args.model, "classes": str(args.classes), "image_size": str(args.image_size),
            "batch": str(args.batch), "seed": str(args.seed), "tf32": str(args.tf32), "bf16": str(args.bf16), "reference": "float64",
            "bn_momentum": "0.1", "bn_eps": "1e-5", "torch": torch.__version__,
            "timm": timm.__version__, "device": str(device)}
    if args.sgd_step is not None:
        meta.update(sgd_lr=repr(args.sgd_step), sgd_momentum="0.9", sgd_weight_decay="5e-4")
    ref_path = os.path.join(args.out, f"{args.model}_ref.safetensors")
    save_file(ref, ref_path, metadata=meta)

    n_params = sum(v.numel() for k, v in base_state.items() if "running" not in k and "num_batches" not in k)
    print(f"{args.model} classes={args.classes} image={args.image_size} batch={args.batch} "
          f"seed={args.seed} tf32={args.tf32} bf16={args.bf16} device={device} params={n_params} "
          f"loss={loss.item():.6f} logits_l2={logits.norm().item():.6f} "
          f"torch-{'bf16' if args.bf16 else 'fp32'} err logits={ref['torch_err.logits'].item():.2e} "
          f"first grad={next(v for k, v in ref.items() if k.startswith('torch_err.grad.')).item():.2e} "
          f"tensors={len(ref)} -> {weights_path}, {ref_path}", flush=True)


if __name__ == "__main__":
    main()
