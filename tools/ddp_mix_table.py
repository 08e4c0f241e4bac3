#!/usr/bin/env python3
"""Launches of one `run_suite --gpus LIST --mode all` mix with a data-parallel job, side by side: per
mode (each pass of the launch), every card's STP and ANTT and the whole run's, as the median [min-max]
over the launches, against each launch's own serial pass; whether every job trained in every pass
(a window rate above zero); and, for the collocated passes, the lowest share of the window any job
trained beside all the others (its overlap).
usage: tools/ddp_mix_table.py RUN_DIR [RUN_DIR ...]   (each a --gpus run folder)"""
import json
import os
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def spread(values, fmt="{:.2f}"):
    values = [v for v in values if isinstance(v, (int, float))]
    if not values:
        return "-"
    med = statistics.median(values)
    return f"{fmt.format(med)} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def card_name(card):
    if "data_parallel_job" in card:
        return f"data-parallel job {card['data_parallel_job']}"
    return f"GPU {card['gpu']}"


def jobs_of(card):
    """Each job's window rate and overlap, from the card's own run folder."""
    folder = card.get("run_folder") or ""
    path = os.path.join(folder, "summary.json")
    if not os.path.isfile(path):
        return None
    return [(j.get("window_samples_per_s"), j.get("window_overlap")) for j in load(path).get("jobs", [])]


def main(folders):
    launches = []
    for folder in folders:
        path = os.path.join(folder, "summary.json")
        if not os.path.isfile(path) or "modes" not in load(path):
            print(f"ddp_mix_table: {folder}: not a --gpus --mode all run folder (no summary.json with modes)",
                  file=sys.stderr)
            sys.exit(2)
        launches.append(load(path))
    mix = load(os.path.join(folders[0], "placement.json"))
    left = ", ".join(f"{m['mode']} ({m['why']})" for m in launches[0].get("modes_left_out", []))
    print(f"\n{len(launches)} launches of {os.path.basename(os.path.dirname(os.path.dirname(folders[0].rstrip('/'))))}"
          f" over {len(mix['gpus'])} cards; left out: {left or 'none'}\n")
    print("| mode | run | STP | ANTT | every job trained | lowest overlap |")
    print("|---|---|---|---|---|---|")
    for k, first in enumerate(launches[0]["modes"]):
        mode = first["mode"]
        passes = [launch["modes"][k] for launch in launches if len(launch["modes"]) > k]
        names = [card_name(c) for c in first["gpus"]]
        for i, name in enumerate(names):
            cards = [p["gpus"][i] for p in passes if len(p["gpus"]) > i]
            jobs = [jobs_of(c) for c in cards]
            trained = all(j is not None and j and all(isinstance(r, (int, float)) and r > 0 for r, _ in j)
                          for j in jobs)
            overlaps = [o for j in jobs if j for _, o in j if isinstance(o, (int, float))]
            low = f"{min(overlaps):.3f}" if overlaps and mode != "serial" else "-"
            print(f"| {mode} | {name} | {spread([c.get('stp') for c in cards])} | "
                  f"{spread([c.get('antt') for c in cards])} | {'yes' if trained else 'NO'} | {low} |")
        totals = [p["total"] for p in passes]
        print(f"| {mode} | whole run | {spread([t.get('stp') for t in totals])} | "
              f"{spread([t.get('antt') for t in totals])} | "
              f"{'yes' if all(t.get('status') == 'complete' for t in totals) else 'NO'} | |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
