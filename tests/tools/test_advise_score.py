#!/usr/bin/env python3
"""tools/advise_score.py over a hand-made OUT folder: two held-out mixes and one fit mix (left out of
the scores); the median |STP error| per mode, the ANTT error, the Spearman median, the share of
recommendations within the best's spread or 3%, the best fixed candidate, the probing wall time
against --mode all's and energy per sample's median |error| and regret, each computed by hand; no
mixes.txt exits 2. Exit 0 passed, 1 failed."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks

SCRIPT = os.path.join(HERE, "..", "tools", "advise_score.py")
check = Checks("test_advise_score")


def mode(label, mode_name, stp_error, antt_error, objective, energy_error=None):
    return {"label": label, "mode": mode_name, "measured": True, "stp_error": stp_error, "antt_error": antt_error,
            "measured_objective": objective, "energy_error": energy_error}


def make_mix(out, name, modes, summary, probe_wall=None, mode_all=None):
    folder = os.path.join(out, name, "20260101T000000Z-advise-X")
    os.makedirs(folder)
    with open(os.path.join(folder, "check.json"), "w") as f:
        json.dump({"objective": "stp", "modes": modes, "summary": summary}, f)
    with open(os.path.join(folder, "advice.json"), "w") as f:
        json.dump({"probe_wall_s": probe_wall} if probe_wall is not None else {}, f)
    if mode_all is not None:
        with open(os.path.join(out, name, "mode_all_wall_s"), "w") as f:
            f.write(f"{mode_all}\n")


with tempfile.TemporaryDirectory() as out:
    with open(os.path.join(out, "mixes.txt"), "w") as f:
        f.write("a|2*S|tf32|held-out\nb|3*M|bf16|held-out\nc|S+M|tf32|fit\nd|7*S|tf32|held-out\n")
    # a: recommends mps (1.40), the best is green (1.50), no tie: regret 6.7%, outside
    make_mix(out, "a", [mode("mps", "mps", 0.10, -0.20, 1.40, 0.04), mode("green 64,64", "green", -0.02, 0.05, 1.50, -0.10),
                        mode("naive", "naive", 0.30, 0.10, 1.00, 0.20)],
             {"recommended": "mps", "regret": 0.0667, "tie": False, "spearman": 0.5,
              "energy": {"recommended": "green 64,64", "regret": 0.05, "tie": False}}, probe_wall=20, mode_all=200)
    # b: recommends green (1.20), the best, and the mps tie
    make_mix(out, "b", [mode("green 64,64", "green", 0.04, 0.02, 1.20), mode("mps", "mps", -0.06, 0.08, 1.18),
                        mode("naive", "naive", 0.20, -0.30, 0.90)],
             {"recommended": "green 64,64", "regret": 0.0, "tie": True, "spearman": 1.0,
              "energy": {"recommended": "mps", "regret": 0.08, "tie": True}}, probe_wall=30, mode_all=100)
    # c: a fit mix: its huge errors must not count
    make_mix(out, "c", [mode("mps", "mps", 5.0, 5.0, 1.0)], {"recommended": "mps", "regret": 0.5, "tie": False,
                                                             "spearman": -1.0})
    # d: not checked yet (no folder)
    p = subprocess.run([sys.executable, SCRIPT, out], capture_output=True, text=True)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    with open(os.path.join(out, "score.json")) as f:
        s = json.load(f)
    check(s["held_out_checked"] == ["a", "b"], f"held out: {s['held_out_checked']}")
    by = s["median_abs_stp_error_by_mode"]
    check(abs(by["mps"] - 0.08) < 1e-9 and abs(by["green"] - 0.03) < 1e-9 and abs(by["naive"] - 0.25) < 1e-9,
          f"STP per mode: {by}")
    check(abs(s["median_abs_antt_error"] - 0.09) < 1e-9, f"ANTT: {s['median_abs_antt_error']}")  # of .2 .05 .1 .02 .08 .3
    check(abs(s["spearman_median"] - 0.75) < 1e-9, f"Spearman: {s['spearman_median']}")
    check(abs(s["recommendation_within_share"] - 0.5) < 1e-9, f"within: {s['recommendation_within_share']}")
    check(abs(s["recommended_mean_objective"] - 1.30) < 1e-9, f"recommended: {s['recommended_mean_objective']}")
    check(s["best_fixed"]["label"] == "green 64,64" and abs(s["best_fixed"]["mean_objective"] - 1.35) < 1e-9,
          f"best fixed: {s['best_fixed']}")
    check(abs(s["probe_over_mode_all_median"] - 0.2) < 1e-9, f"wall: {s['probe_over_mode_all_median']}")  # .1 and .3
    check("STP median |error| mps" in p.stdout and "(target 10%)" in p.stdout, f"printed: {p.stdout}")
    # energy: |.04| |-.10| |.20| from a (b's modes state none): median 10%; regrets .05 and .08 (a tie)
    check(abs(s["median_abs_energy_error"] - 0.10) < 1e-9, f"energy error: {s['median_abs_energy_error']}")
    check(abs(s["energy_regret_median"] - 0.065) < 1e-9, f"energy regret: {s['energy_regret_median']}")
    check(abs(s["energy_within_share"] - 0.5) < 1e-9, f"energy within: {s['energy_within_share']}")
    check("energy per sample median |error| 10.0%" in p.stdout, f"printed: {p.stdout}")
with tempfile.TemporaryDirectory() as empty:
    p = subprocess.run([sys.executable, SCRIPT, empty], capture_output=True, text=True)
    check(p.returncode == 2 and "mixes.txt" in p.stderr, f"no mixes.txt: {p.returncode} {p.stderr}")
check.finish()
