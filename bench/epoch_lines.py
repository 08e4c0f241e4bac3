#!/usr/bin/env python3
"""train --json's events on stdin as one line per epoch: steps, samples/s, median step time and
what the loader did (how long the GPU waited for data, how fast the workers produced it)."""
import json
import sys

for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "epoch":
        print(f"epoch {e['epoch']}: {e['steps']} steps, {e['samples_per_s']:.0f} samples/s, step median "
              f"{e['step_ms_median']:.2f} ms (p90 {e['step_ms_p90']:.2f}), loader wait {e['loader_wait_s']:.3f} s, "
              f"loader {e['loader_samples_per_s']:.0f} samples/s")
    elif e.get("event") == "error":
        print("error:", e.get("message"))
