#!/usr/bin/env python3
"""bench/decode_runs.py over an archive as the decode-probe runs left it: each call's share is of
its own synthetic run (ResNet-26's of its own), the engines' time is read from both profile
wordings, the time per batch divides by the decodes at once, and a run without a baseline shows no
share. Exit 0 passed, 1 failed."""
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks

SCRIPT = os.path.join(HERE, "..", "bench", "decode_runs.py")
check = Checks("test_decode_runs")


def epochs(rate, cores):
    lines = [{"event": "setup"}, {"event": "epoch", "warmup": True, "samples": 10240, "seconds": 9.0,
                                  "cpu_cores": 9.0}]
    lines += [{"event": "epoch", "samples": 10240, "seconds": 10240 / rate, "cpu_cores": cores}] * 3
    return "".join(json.dumps(e) + "\n" for e in lines)


OLD = ("decode profile: 160 batches, 256.0 images on the engines each; per batch (ms): slot wait 0.02, "
       "parse+classify 3.10, engines (nvjpegDecodeBatched) 105.80, cuda backend 0.00\n"
       "decode profile: 2.48 batches on the engines at once (mean at entry)\n")
NEW = ("decode profile: 160 batches, 128.0 images on the engines each; per batch (ms): slot wait 0.02, "
       "parse+classify 2.54, cuda backend (XORDER=1) 52.25, engines (nvjpegDecodeBatched) (+cuda if XORDER=0) "
       "112.75, crop enqueue 0.32\ndecode profile: 2.50 batches on the engines at once (mean at entry)\n")
files = {"call1/x_synthetic.jsonl": epochs(6400, 2.0), "call1/x_synthetic.err": "",
         "call1/x_gpu.jsonl": epochs(5600, 2.8), "call1/x_gpu.err": OLD,
         "call2/x_gpu_d2.jsonl": epochs(5760, 2.1), "call2/x_gpu_d2.err": NEW,
         "call2/x_r26_synthetic.jsonl": epochs(9600, 2.5), "call2/x_r26_synthetic.err": "",
         "call2/x_r26_gpu.jsonl": epochs(8160, 2.9), "call2/x_r26_gpu.err": OLD}
with tempfile.TemporaryDirectory() as tmp:
    archive = os.path.join(tmp, "runs.tgz")
    with tarfile.open(archive, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    p = subprocess.run([sys.executable, SCRIPT, archive], capture_output=True, text=True)
check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
rows = {tuple(line.split()[:2]): line.split() for line in p.stdout.splitlines()[1:]}
gpu = rows.get(("call1", "gpu"), [])
check(gpu[2:5] == ["5600", "87.5%", "2.8"], f"call1 gpu: {gpu}")
check(gpu[5:9] == ["105.8", "2.48", "42.7", "256.0"], f"call1 gpu's profile: {gpu}")
d2 = rows.get(("call2", "gpu_d2"), [])
check(d2[3] == "-", f"no ResNet-50 baseline in call2, yet a share: {d2}")
check(d2[5:9] == ["112.75", "2.5", "45.1", "128.0"], f"the newer wording: {d2}")
r26 = rows.get(("call2", "r26_gpu"), [])
check(r26[3] == "85.0%", f"ResNet-26 against its own baseline: {r26}")
check(list(rows)[0] == ("call1", "synthetic"), f"the baseline first: {list(rows)}")
check.finish()
