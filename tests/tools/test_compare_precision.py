#!/usr/bin/env python3
"""bench/compare_precision.py over records as bench/run_model_bench.sh writes them: the best
compiled PyTorch step is the fastest of the modes that ran, the memory column prefers what
bench_step measured on the device (device_bytes) to its own count, the memory target compares with
the reserved memory of the PyTorch run the speed target took, and a missing run (or memory) is a
SKIP, not a PASS. Exit 0 passed, 1 failed."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks

SCRIPT = os.path.join(HERE, "..", "bench", "compare_precision.py")
GIB = 1 << 30
check = Checks("test_compare_precision")


def suite(precision, batch, ms, peak_gib, device_gib=None):
    r = {"impl": "suite", "model": "resnet50", "image_size": 224, "batch": batch, "classes": 1000,
         "median_ms": ms, "p10_ms": ms - 0.1, "p90_ms": ms + 0.1, "peak_bytes": int(peak_gib * GIB),
         "precision": precision}
    if device_gib is not None:
        r["device_bytes"] = int(device_gib * GIB)
    return r


def torch(mode, ms, reserved_gib):
    return {"impl": f"torch-{mode}", "model": "resnet50", "image_size": 224, "batch": 256, "classes": 1000,
            "precision": "bf16", "median_ms": ms, "p10_ms": ms - 0.05, "p90_ms": ms + 0.05,
            "max_memory_reserved": int(reserved_gib * GIB)}


def run(records):
    text = "".join(json.dumps(r) + "\n" for r in records) + "not json\n"
    p = subprocess.run([sys.executable, SCRIPT], input=text, capture_output=True, text=True)
    return p.returncode, p.stdout


records = [suite("bf16", 256, 35.0, 12.5, 12.6), suite("tf32", 256, 77.0, 24.0),
           torch("compiled", 44.58, 12.99), torch("graphed", 44.53, 13.51),
           suite("bf16", 128, 20.9, 7.0)]
rc, out = run(records)
check(rc == 0, f"all targets met, yet exit {rc}:\n{out}")
check("PASS resnet50 224x224/256: suite bf16 35.000 ms = 0.79x torch compiled bf16 44.530 ms (graphed)" in out,
      "the ratio is against the fastest compiled run (graphed)")
check("suite bf16 12.60 GiB vs torch compiled bf16 reserved 13.51 GiB (graphed)" in out,
      "memory: the measured device bytes against that run's reserved memory")
check("| 7314 |" in out, f"images/s of 256 in 35 ms:\n{out}")
check("SKIP resnet50 224x224/128: suite bf16 <= 0.8x torch compiled bf16: a run is missing" in out,
      "a configuration without PyTorch runs is skipped")

records[0] = suite("bf16", 256, 39.72, 13.47, 13.52)
rc, out = run(records)
check(rc == 1, f"slower and larger than PyTorch, yet exit {rc}")
check("FAIL resnet50 224x224/256: suite bf16 39.720 ms = 0.89x" in out, "the speed target fails")
check("FAIL resnet50 224x224/256: suite bf16 13.52 GiB vs torch compiled bf16 reserved 13.51 GiB" in out,
      "the memory target fails by 0.01 GiB")

rc, out = run([])
check(rc == 1, "no records: exit 1")

# a record without its memory or spread, and one whose impl is not a name: a SKIP and a named line,
# never a traceback (the reader is bench/compare_models.py's)
bare = {k: v for k, v in suite("bf16", 64, 10.0, 1.0).items() if k not in ("peak_bytes", "p10_ms", "p90_ms")}
text = json.dumps(bare) + "\n" + json.dumps(dict(bare, impl=["suite"])) + "\n"
p = subprocess.run([sys.executable, SCRIPT], input=text, capture_output=True, text=True)
check(p.returncode == 0 and "Traceback" not in p.stderr, f"exit {p.returncode}: {p.stderr}")
check("bf16 memory <= tf32 memory: a suite run, or its memory, is missing" in p.stdout, p.stdout)
check("-:2: skipped, not a benchmark record" in p.stderr, f"the malformed line named: {p.stderr}")

check.finish()
