#!/usr/bin/env python3
"""One line per mode run found under the folders given (run_suite --mode all, layout sweeps,
single runs): STP, ANTT, fairness, speed-up against serial, SM activity over the timed epochs,
each job's slowdown against its solo run and, for partitioned modes, its interference ratio.
It reads the folders through the report's own data layer (results/report_data.py), so the numbers
are the report's.
  tools/sharing_table.py RUN_DIR [RUN_DIR...]"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results"))
import report_data as rd  # noqa: E402


def cell(v, fmt):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt % v


def main(paths):
    runs, _, _, _ = rd.load(paths)
    print("| run | mode | STP | ANTT | fairness | speed-up | SM activity % | slowdown per job | interference per job |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        if os.sep + "alone-in-partition" + os.sep in r.path + os.sep:
            continue
        s = r.summary
        sm, _ = r.sm_activity()
        slow = " ".join(cell(rd.num(j.get("slowdown")), "%.2fx") for j in r.jobs)
        inter = " ".join(cell(rd.num(j.get("interference_ratio")), "%.2f") for j in r.jobs)
        name = os.path.relpath(r.path, os.path.commonpath(paths) if len(paths) > 1 else paths[0])
        print(f"| {name} | {r.mode} | {cell(rd.num(s.get('stp')), '%.2f')} | {cell(rd.num(s.get('antt')), '%.2f')} | "
              f"{cell(rd.num(s.get('fairness')), '%.2f')} | {cell(rd.num(s.get('speedup_vs_serial')), '%.2fx')} | "
              f"{cell(sm, '%.1f')} | {slow} | {inter if r.mode in ('mig', 'mig-emulate', 'green') else '-'} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    try:
        main(sys.argv[1:])
    except rd.ReportError as e:
        sys.exit(f"sharing_table.py: {e}")
