#!/usr/bin/env bash
# What tracing every kernel costs (train --kernels, issue 49), for S, M and L alone: each repeat runs
# the job twice through the window protocol, driven here as run_suite drives it:
#   plain   no --kernels: one measured window                         (no tracer in the process)
#   traced  --kernels: one measured window (the tracer subscribed, collection off), then the
#           traced window ("trace T0 T1" sent after the measured window closed)
# and prints, side by side, the median step of each: plain, subscribed but not collecting, traced,
# with the cost of each against plain in %. The jobs train on synthetic data of their preset's
# shape (S: resnet26 32x32/128, M: resnet50 64x64/128, L: resnet152 224x224/32).
#   bench/trace_cost.sh BUILD_DIR OUT_DIR [SIZES] [REPEATS] [WINDOW_S]
#   defaults: 'S M L' 3 5
set -u
build=${1:?build folder}
out=${2:?output folder}
sizes=${3:-S M L}
repeats=${4:-3}
window=${5:-5}
mkdir -p "$out"
python3 - "$build/train" "$out" "$repeats" "$window" $sizes <<'PY'
import json, os, subprocess, sys, time

train, out, repeats, window, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5:]
PRESETS = {"S": ("resnet26", 32, 128, 10), "M": ("resnet50", 64, 128, 1000), "L": ("resnet152", 224, 32, 1000)}


def run(size, repeat, traced):
    model, image, batch, classes = PRESETS[size]
    prefix = os.path.join(out, f"{size}-r{repeat}")
    args = [train, "--model", model, "--data", "synthetic", "--image-size", str(image), "--batch", str(batch),
            "--classes", str(classes), "--epochs", "2", "--warmup-steps", "30", "--json", "--wait-go",
            "--window-protocol"] + (["--kernels", prefix] if traced else [])
    log = open(prefix + (".traced" if traced else ".plain") + ".log", "w")
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1)
    got = {}

    def until(name):
        for line in p.stdout:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            got.setdefault(e.get("event"), e)
            if e.get("event") in (name, "error"):
                return e
        raise SystemExit(f"{size}: train ended before its {name} event (see {log.name})")

    def say(text):
        p.stdin.write(text + "\n")
        p.stdin.flush()

    until("ready")
    say("go")
    until("epoch")  # the warm-up's end
    t0 = time.time() + 0.5
    t1 = t0 + window
    say(f"window {t0:.6f} {t1:.6f}")
    measured = until("window")
    traced_e = None
    if traced:
        time.sleep(max(0.0, t1 - time.time()) + 0.2)
        t2 = time.time() + 0.5  # collection starts when the line is read, before T2
        say(f"trace {t2:.6f} {t2 + window:.6f}")
        traced_e = until("kernels")
    say("stop")
    p.stdin.close()
    for _ in p.stdout:
        pass
    p.wait()
    if traced_e and "error" in traced_e:
        raise SystemExit(f"{size}: the trace failed: {traced_e['error']}")
    return measured["step_ms_median"], (traced_e["step_ms"] if traced_e else None), traced_e


rows = []
for size in sizes:
    for r in range(repeats):
        plain, _, _ = run(size, r, False)
        subscribed, traced, e = run(size, r, True)
        rows.append((size, r, plain, subscribed, traced, e["kernels"], e["dropped"]))
        print(f"{size} repeat {r}: plain {plain:.3f} ms, subscribed {subscribed:.3f} ms, traced {traced:.3f} ms "
              f"({e['kernels']} kernels, {e['dropped']} dropped)", flush=True)


def median(v):
    v = sorted(v)
    return v[len(v) // 2]


print()
print("| job | step ms, no tracer | subscribed, not collecting | traced | subscribed cost | traced cost | kernels a step |")
print("|---|---|---|---|---|---|---|")
for size in sizes:
    mine = [r for r in rows if r[0] == size]
    plain, sub, tr = (median([r[k] for r in mine]) for k in (2, 3, 4))
    spread = lambda k: f"{min(r[k] for r in mine):.3f}-{max(r[k] for r in mine):.3f}"
    print(f"| {size} ({PRESETS[size][0]}) | {plain:.3f} ({spread(2)}) | {sub:.3f} ({spread(3)}) | {tr:.3f} ({spread(4)}) "
          f"| {100 * (sub / plain - 1):+.1f}% | {100 * (tr / plain - 1):+.1f}% | "
          f"{median([r[5] for r in mine]) / max(1.0, window * 1000.0 / tr):.0f} |")
PY
