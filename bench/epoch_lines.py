#!/usr/bin/env python3
"""train --json's events on stdin as one line per epoch: steps, samples/s, median step time,
what the loader did (how long the GPU waited for data, how fast the workers produced it), the CPU
cores the process used, and with the GPU decoder the images left to the host; before them the
decoder in effect (setup)."""
import json
import sys

for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "setup" and "decode" in e:
        print(f"decode {e['decode']} ({e['decode_why']})" +
              (f", nvJPEG {e['decode_backend']} backend" if "decode_backend" in e else ""))
    elif e.get("event") == "epoch":
        print(f"epoch {e['epoch']}: {e['steps']} steps, {e['samples_per_s']:.0f} samples/s, step median "
              f"{e['step_ms_median']:.2f} ms (p90 {e['step_ms_p90']:.2f}), loader wait {e['loader_wait_s']:.3f} s, "
              f"loader {e['loader_samples_per_s']:.0f} samples/s, {e.get('cpu_cores', float('nan')):.1f} CPU cores" +
              (f", {e['host_decoded']:.0f} decoded on the host" if "host_decoded" in e else ""))
    elif e.get("event") == "error":
        print("error:", e.get("message"))
