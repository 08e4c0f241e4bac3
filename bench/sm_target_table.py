#!/usr/bin/env python3
"""Issue 50's tables from bench/sm_target.sh's folders.

  bench/sm_target_table.py ROOT/told      told against not told: for each mix and partitioned mode,
                                          STP, ANTT and each job's window rate (median [min-max]
                                          over the repeats), and the SMs the jobs' setup events
                                          say they told
  bench/sm_target_table.py --memory ROOT/memory
                                          each run's GPU memory: the device above idle, the jobs'
                                          processes (NVML), their footprints and workspaces, and
                                          what each process holds beyond its footprint

The run folders are read through the report's data layer (results/report_data.py), so STP, ANTT
and the rates are the report's; the job logs (<job>.log, JSON lines) give the setup events."""
import csv
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results"))
import report_data as rd  # noqa: E402

GIB = 2.0 ** 30


def spread(values):
    v = [x for x in values if x is not None and not math.isnan(x)]
    if not v:
        return "-"
    med = statistics.median(v)
    return f"{med:.2f} [{min(v):.2f}-{max(v):.2f}]" if len(v) > 1 else f"{med:.2f}"


def setup_events(folder):
    """Every setup event in the job logs under folder (the alone-in-partition runs left out)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames.sort()
        if rd.PARTITION_REFERENCE in dirpath.split(os.sep):
            continue
        for name in sorted(filenames):
            if not name.endswith(".log"):
                continue
            with open(os.path.join(dirpath, name), errors="replace") as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("{") and '"event":"setup"' in line.replace(" ", ""):
                        try:
                            out.append(json.loads(line))
                        except ValueError:
                            pass
    return out


def told_text(events):
    """'56 green x7' and the like: the told counts and where they came from, counted."""
    counts = {}
    for e in events:
        t = e.get("sm_target") or {}
        key = f"{t.get('sms', '?')} {t.get('from', '?')}"
        if t.get("percent"):
            key += f" ({t['percent']}%: device reports {t.get('device_sms')}, driver {t.get('context_sms')})"
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} x{n}" for k, n in sorted(counts.items())) or "-"


def told_table(root):
    rows = {}
    for mix in sorted(os.listdir(root)):
        for setting in ("on", "off"):
            folder = os.path.join(root, mix, setting)
            if not os.path.isdir(folder):
                continue
            runs, _, _, _ = rd.load([folder])
            for r in runs:
                if r.mode == "serial":
                    continue
                key = (mix, r.mode)
                cell = rows.setdefault(key, {}).setdefault(setting, {"stp": [], "antt": [], "rates": {}, "told": []})
                cell["stp"].append(rd.num(r.summary.get("stp")))
                cell["antt"].append(rd.num(r.summary.get("antt")))
                for i, j in enumerate(r.jobs):
                    cell["rates"].setdefault(i, []).append(rd.num(j.get("window_samples_per_s")))
                cell["told"] += setup_events(r.path)
    print("| mix | mode | told | STP | ANTT | window samples/s per job | SMs told (setup events) |")
    print("|---|---|---|---|---|---|---|")
    for (mix, mode), cells in sorted(rows.items()):
        for setting in ("on", "off"):
            c = cells.get(setting)
            if not c:
                continue
            rates = "; ".join(f"{i}: {spread(v)}" for i, v in sorted(c["rates"].items()))
            print(f"| {mix} | {mode} | {setting} | {spread(c['stp'])} | {spread(c['antt'])} | {rates} | "
                  f"{told_text(c['told'])} |")
    print()
    print("| mix | mode | STP told / not told | ANTT told / not told | job rates told / not told (medians) |")
    print("|---|---|---|---|---|")
    for (mix, mode), cells in sorted(rows.items()):
        on, off = cells.get("on"), cells.get("off")
        if not on or not off:
            continue

        def ratio(a, b):
            a = [x for x in a if not math.isnan(x)]
            b = [x for x in b if not math.isnan(x)]
            return f"{statistics.median(a) / statistics.median(b):.3f}" if a and b and statistics.median(b) else "-"

        jobs = " ".join(ratio(on["rates"].get(i, []), off["rates"].get(i, [])) for i in sorted(on["rates"]))
        print(f"| {mix} | {mode} | {ratio(on['stp'], off['stp'])} | {ratio(on['antt'], off['antt'])} | {jobs} |")


def process_peaks(path):
    """{pid: peak MiB} from nvidia-smi's samples, and the MPS server's peak (its own row)."""
    peaks, server = {}, 0.0
    if not os.path.exists(path):
        return peaks, server
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if len(row) < 4:
                continue
            try:
                pid, mib = int(row[1].strip()), float(row[3].strip())
            except ValueError:
                continue
            if "mps-server" in row[2]:
                server = max(server, mib)
            peaks[pid] = max(peaks.get(pid, 0.0), mib)
    return peaks, server


def memory_table(root):
    print("| run | device above idle GiB | jobs' processes GiB (NVML) | MPS server GiB | footprints GiB | "
          "workspaces GiB | per job beyond its footprint GiB | SMs told |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ("alone", "naive", "mps", "mps-share", "mps-limit", "emulate", "emulate-off"):
        folder = os.path.join(root, name)
        if not os.path.isdir(folder):
            continue
        try:
            runs, _, _, _ = rd.load([os.path.join(folder, "run")])
        except rd.ReportError as e:
            print(f"| {name} | {e} | | | | | | |")
            continue
        run = next((r for r in runs if r.mode != "serial"), runs[0] if runs else None)
        above = rd.NAN
        if run is not None:
            peak = rd.num(run.summary.get("peak_gpu_memory_bytes"))
            tl = run.timeline
            idle = tl.columns.get("mem_used_bytes", [rd.NAN])[0] if tl is not None and tl.has("mem_used_bytes") else rd.NAN
            above = (peak - idle) / GIB if peak == peak and idle == idle else rd.NAN
        events = setup_events(run.path) if run is not None else []
        peaks, server = process_peaks(os.path.join(folder, "processes.csv"))
        job_mib = [peaks.get(int(e.get("pid", -1)), rd.NAN) for e in events]
        foot = [rd.num(e.get("footprint_bytes")) for e in events]
        work = [rd.num(e.get("workspace_bytes")) for e in events]
        beyond = [m * 2 ** 20 - f for m, f in zip(job_mib, foot) if m == m and f == f]

        def total(v, scale):
            v = [x for x in v if x == x]
            return f"{sum(v) / scale:.2f}" if v else "-"

        print(f"| {name} | {'-' if above != above else f'{above:.2f}'} | {total(job_mib, 1024)} | "
              f"{server / 1024:.2f} | {total(foot, GIB)} | {total(work, GIB)} | {spread([b / GIB for b in beyond])} | "
              f"{told_text(events)} |")


def main(argv):
    if len(argv) == 2 and argv[0] == "--memory":
        memory_table(argv[1])
    elif len(argv) == 1:
        told_table(argv[0])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except rd.ReportError as e:
        sys.exit(f"sm_target_table.py: {e}")
