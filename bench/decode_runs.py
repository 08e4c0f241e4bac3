#!/usr/bin/env python3
"""The GPU decoder's experiment runs (session 18, branch decode-probe) as one table.

usage: decode_runs.py RUNS.tgz

RUNS.tgz holds callN/x_NAME.jsonl (train --json) and callN/x_NAME.err (its stderr, with the
decode-probe branch's "decode profile" lines under XPROF=1) for each run of each device call. Each
call ran the synthetic-data baseline first; a run's share is of its own call's synthetic rate.
Names say the experiment's settings: dN decoder slots (XDEPTH, default 3), lock (XLOCK: one decode
at a time across slots), sNN_first/last (XCUDA_SHARE: NN% of each batch to nvJPEG's CUDA backend,
decoded before/after the engines' group), alloc (XALLOC: nvJPEG's buffers from a never-freeing
cache), handles (XHANDLES: an engines handle per slot), nochroma (XCHROMA=0), p0 (XMAINPRIO=0: the
job's chain at the least stream priority), ctx (XCTX: nvJPEG in a driver context of its own, the
job trained on zeros: timing only), r26 (ResNet-26 instead of ResNet-50; its own synthetic run).
"""
import json
import re
import sys
import tarfile


def rate_of(lines):
    events = [json.loads(line) for line in lines if line.startswith("{")]
    epochs = [e for e in events if e.get("event") == "epoch" and not e.get("warmup")]
    if not epochs:
        return None, None
    seconds = sum(e["seconds"] for e in epochs)
    return (sum(e["samples"] for e in epochs) / seconds,
            sum(e["cpu_cores"] * e["seconds"] for e in epochs) / seconds)


def profile_of(text):
    engines = re.search(r"engines \(nvjpegDecodeBatched\)(?: \(\+cuda if XORDER=0\))? ([0-9.]+)", text)
    at_once = re.search(r"([0-9.]+) batches on the engines at once", text)
    images = re.search(r"([0-9.]+) images on the engines each", text)
    return tuple(float(m.group(1)) if m else None for m in (engines, at_once, images))


def main():
    runs = {}
    with tarfile.open(sys.argv[1]) as tar:
        for member in tar.getmembers():
            match = re.match(r"(call\d+)/x_(\w+)\.(jsonl|err)$", member.name)
            if match:
                text = tar.extractfile(member).read().decode()
                runs.setdefault((match.group(1), match.group(2)), {})[match.group(3)] = text
    print(f"{'call':6} {'run':18} {'images/s':>9} {'share':>7} {'cores':>6} {'engines ms':>11} "
          f"{'at once':>8} {'ms/batch':>9} {'on engines':>11}")
    for call in sorted({c for c, _ in runs}, key=lambda c: int(c[4:])):
        names = [n for c, n in runs if c == call]
        names.sort(key=lambda n: (n.startswith("r26"), "synthetic" not in n, n))
        base = {}
        for name in names:
            run = runs[(call, name)]
            rate, cores = rate_of(run.get("jsonl", "").splitlines())
            model = "r26" if name.startswith("r26") else "r50"
            if "synthetic" in name and rate and model not in base:
                base[model] = rate
            engines, at_once, images = profile_of(run.get("err", ""))
            share = f"{rate / base[model]:.1%}" if rate and model in base else "-"
            serial = f"{engines / at_once:.1f}" if engines and at_once else "-"
            print(f"{call:6} {name:18} {rate or 0:9.0f} {share:>7} {cores or 0:6.1f} "
                  f"{engines if engines is not None else '-':>11} {at_once if at_once else '-':>8} {serial:>9} "
                  f"{images if images is not None else '-':>11}")


if __name__ == "__main__":
    main()
