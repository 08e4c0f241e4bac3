#!/usr/bin/env python3
"""Reference numbers for the suite's DLRM parity test (tests/models/gpu_dlrm_parity.c), from PyTorch.

Why: the suite's recommender is written directly on cuBLASLt and its own kernels; the check that
matters is that one training step from the same weights and batch gives what facebookresearch/dlrm
(dlrm_s_pytorch.py, DLRM_Net) gives: the same output, loss, dense gradients, and the same updated
embedding rows after a sparse SGD step. The module below is that architecture with the reference's
parameter names (emb_l.<t>.weight, bot_l/top_l as nn.Sequential with Linear at even indices),
nn.EmbeddingBag(mode="sum", sparse=True) and torch.optim.SGD, initialised as the reference does.

Writes, under --out:
  dlrm_weights.safetensors  the state_dict before the step (what the suite loads)
  dlrm_ref.safetensors      dense [B,13] f32, indices [B,26] i32, labels [B] f32; probs [B] (the
                            sigmoid output), loss [1] (BCELoss, mean); grad.<dense param>;
                            updated.<dense param> after the SGD step; for each table t, the rows
                            the batch touched: rows.emb_l.<t>.weight i32 [u] (ascending),
                            grad_rows.emb_l.<t>.weight [u, dim] (the coalesced sparse gradient) and
                            updated_rows.emb_l.<t>.weight [u, dim].
The reference is the step in float64; PyTorch's own float32 step is measured against it and its
error per tensor stored as torch_err.<key> (and its values as torch32.<key>), so the suite is held
to the precision PyTorch itself reaches, as tests/parity/timm_reference.py does for ResNet.
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
from safetensors.torch import save_file

KAGGLE_ROWS = [1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194, 27,
               14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572]
TERABYTE_ROWS = [39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346, 10,
                 2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36]
CONFIGS = {
    "criteo-kaggle": dict(dim=16, bottom=[13, 512, 256, 64, 16], top=[512, 256, 1], rows=KAGGLE_ROWS),
    "criteo-terabyte": dict(dim=128, bottom=[13, 512, 256, 128], top=[1024, 1024, 512, 256, 1],
                            rows=TERABYTE_ROWS),
}


def create_mlp(ln, sigmoid_layer):
    """DLRM_Net.create_mlp: Linear, then Sigmoid at sigmoid_layer and ReLU elsewhere."""
    layers = []
    for i in range(len(ln) - 1):
        n, m = ln[i], ln[i + 1]
        linear = nn.Linear(n, m, bias=True)
        with torch.no_grad():
            w = np.random.normal(0.0, np.sqrt(2 / (m + n)), size=(m, n)).astype(np.float32)
            b = np.random.normal(0.0, np.sqrt(1 / m), size=m).astype(np.float32)
            linear.weight.copy_(torch.from_numpy(w))
            linear.bias.copy_(torch.from_numpy(b))
        layers.append(linear)
        layers.append(nn.Sigmoid() if i == sigmoid_layer else nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    """DLRM_Net on one device, dot interaction without self-interaction."""

    def __init__(self, rows, dim, bottom, top):
        super().__init__()
        emb = []
        for n in rows:
            w = np.random.uniform(-np.sqrt(1 / n), np.sqrt(1 / n), size=(n, dim)).astype(np.float32)
            emb.append(nn.EmbeddingBag(n, dim, mode="sum", sparse=True, _weight=torch.from_numpy(w)))
        self.emb_l = nn.ModuleList(emb)
        self.bot_l = create_mlp(bottom, -1)
        features = len(rows) + 1
        top_in = dim + features * (features - 1) // 2
        self.top_l = create_mlp([top_in] + top, len(top) - 1)
        # The reference rebuilds these index lists on every forward; made once here (a plain
        # attribute, so the state_dict stays the reference's).
        self.pairs = None

    def forward(self, dense, offsets, indices):
        x = self.bot_l(dense)
        ly = [e(indices[k], offsets[k]) for k, e in enumerate(self.emb_l)]
        batch, d = x.shape
        t = torch.cat([x] + ly, dim=1).view((batch, -1, d))
        z = torch.bmm(t, torch.transpose(t, 1, 2))
        _, ni, nj = z.shape
        if self.pairs is None or self.pairs[0].device != x.device:
            li = torch.tensor([i for i in range(ni) for j in range(i)], device=x.device)
            lj = torch.tensor([j for i in range(nj) for j in range(i)], device=x.device)
            self.pairs = (li, lj)
        li, lj = self.pairs
        r = torch.cat([x, z[:, li, lj]], dim=1)
        return self.top_l(r)


def pick_device(name):
    if name.startswith("cuda") and not torch.cuda.is_available():
        print(f"no CUDA device available: running on cpu instead of {name}", file=sys.stderr)
        return torch.device("cpu")
    return torch.device(name)


def run_step(args, cfg, base_state, dense, indices, labels, dtype, device):
    """One step in dtype from base_state: every result as a float64 CPU tensor."""
    model = DLRM(cfg["rows_capped"], cfg["dim"], cfg["bottom"], cfg["top"])
    model.load_state_dict(base_state)
    model = model.to(device=device, dtype=dtype).train()
    batch = dense.shape[0]
    offsets = [torch.arange(batch, device=device) for _ in model.emb_l]
    lookups = [indices[:, t].to(device=device, dtype=torch.int64) for t in range(indices.shape[1])]
    out = model(dense.to(device=device, dtype=dtype), offsets, lookups)
    loss = nn.BCELoss(reduction="mean")(out, labels.to(device=device, dtype=dtype).view(-1, 1))
    loss.backward()
    res = {"probs": out.view(-1), "loss": loss.reshape(1)}
    for name, p in model.named_parameters():
        if p.grad is None:
            sys.exit(f"parameter {name} got no gradient")
        if p.grad.is_sparse:
            g = p.grad.coalesce()
            res[f"rows.{name}"] = g.indices()[0].to(torch.int32)
            res[f"grad_rows.{name}"] = g.values()
        else:
            res[f"grad.{name}"] = p.grad
    torch.optim.SGD(model.parameters(), lr=args.lr).step()
    for name, p in model.named_parameters():
        if f"rows.{name}" in res:
            res[f"updated_rows.{name}"] = p.detach()[res[f"rows.{name}"].long()]
        else:
            res[f"updated.{name}"] = p
    return {k: v.detach().to("cpu", torch.int32 if k.startswith("rows.") else torch.float64) for k, v in res.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", choices=sorted(CONFIGS), default="criteo-kaggle")
    ap.add_argument("--max-rows", type=int, default=1000, help="cap on every table's rows (0: uncapped)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1.0, help="SGD learning rate of the step (the reference's "
                    "Terabyte run uses 1.0)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tf32", type=int, choices=(0, 1), default=0)
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    if args.batch < 1 or args.max_rows < 0 or not args.lr > 0:
        ap.error("--batch must be >= 1, --max-rows >= 0 and --lr > 0")

    device = pick_device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = bool(args.tf32)
    torch.backends.cudnn.allow_tf32 = bool(args.tf32)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    cfg = dict(CONFIGS[args.config])
    cfg["rows_capped"] = [min(n, args.max_rows) if args.max_rows else n for n in cfg["rows"]]

    model = DLRM(cfg["rows_capped"], cfg["dim"], cfg["bottom"], cfg["top"])
    base_state = {k: v.clone() for k, v in model.state_dict().items()}
    os.makedirs(args.out, exist_ok=True)
    weights_path = os.path.join(args.out, "dlrm_weights.safetensors")
    save_file({k: v.contiguous() for k, v in base_state.items()}, weights_path)

    # A Criteo-like batch: log(1 + count) dense features, indices skewed towards small values (so
    # rows repeat within the batch), clicks at a 25% rate.
    rng = np.random.default_rng(args.seed + 1)
    counts = np.floor(np.expm1(6 * rng.random((args.batch, 13))))
    counts[rng.random((args.batch, 13)) < 0.1] = 0
    dense = torch.from_numpy(np.log1p(counts).astype(np.float32))
    u = rng.random((args.batch, len(cfg["rows_capped"])))
    sizes = np.array(cfg["rows_capped"], dtype=np.float64)
    indices = torch.from_numpy(np.minimum(np.floor(sizes * u ** 4), sizes - 1).astype(np.int32))
    labels = torch.from_numpy((rng.random(args.batch) < 0.25).astype(np.float32))

    truth = run_step(args, cfg, base_state, dense, indices, labels, torch.float64, device)
    torch32 = run_step(args, cfg, base_state, dense, indices, labels, torch.float32, device)
    ref = {"dense": dense, "indices": indices, "labels": labels}
    for key, value in truth.items():
        if key.startswith("rows."):
            if not torch.equal(value, torch32[key]):
                sys.exit(f"{key}: float32 and float64 touched different rows")
            ref[key] = value.contiguous()
            continue
        ref[key] = value.to(torch.float32).contiguous()
        err = (torch32[key] - value).norm() / value.norm().clamp_min(1e-30)
        ref[f"torch_err.{key}"] = err.to(torch.float32).reshape(1)
        ref[f"torch32.{key}"] = torch32[key].to(torch.float32).contiguous()

    meta = {"config": args.config, "max_rows": str(args.max_rows), "batch": str(args.batch), "lr": repr(args.lr),
            "seed": str(args.seed), "tf32": str(args.tf32), "reference": "float64", "loss": "BCELoss(mean)",
            "optimizer": "SGD", "torch": torch.__version__, "device": str(device)}
    ref_path = os.path.join(args.out, "dlrm_ref.safetensors")
    save_file(ref, ref_path, metadata=meta)
    params = sum(v.numel() for v in base_state.values())
    touched = sum(ref[k].numel() for k in ref if k.startswith("rows."))
    print(f"dlrm {args.config} max_rows={args.max_rows} batch={args.batch} lr={args.lr} seed={args.seed} "
          f"device={device} params={params} loss={truth['loss'].item():.6f} touched_rows={touched} "
          f"torch-fp32 err probs={ref['torch_err.probs'].item():.2e} "
          f"grad.bot_l.0.weight={ref['torch_err.grad.bot_l.0.weight'].item():.2e} "
          f"tensors={len(ref)} -> {weights_path}, {ref_path}", flush=True)


if __name__ == "__main__":
    main()
