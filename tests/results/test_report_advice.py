#!/usr/bin/env python3
"""The report's section for advised runs (results/report_advice.py) over tests/fixtures/advise: an
advise folder as run_suite advise --check wrote it on fake jobs (advice.json, check.json, check.csv;
its probes and check runs left out, one repeat spread widened by hand): the table holds each ranked
mode's predictions and, where checked, the measured median with the error; the words hold the
check's median errors and regret; the figure's CSV holds a point per checked mode (predicted,
measured median, the repeats' min and max), the recommended and the best measured; the unfitted
constants are said, fitted ones named instead; an unchecked folder has no figure; a value that is
not a finite number (or not a number) in check.json, advice.json or check.csv is refused naming the
file and the key (exit 2). Exit 0 passed, 1 failed, 77 without matplotlib."""
import contextlib
import csv
import io
import json
import os
import sys
import shutil
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import HERE, Checks, require_matplotlib
require_matplotlib("test_report_advice")
import report  # noqa: E402

ADVISED = os.path.join(HERE, "fixtures", "advise")
FOLDER = "20261128T112914Z-advise-S+M"
check = Checks("test_report_advice")


def refused(root, tmp):
    """report's exit status and what it said on stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = report.main([root, "-o", os.path.join(tmp, "page.html"), "--reference", ""])
    return status, err.getvalue()


def edit_json(path, change):
    with open(path) as f:
        data = json.load(f)
    change(data)
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


with tempfile.TemporaryDirectory() as tmp:
    root = os.path.join(tmp, "results")
    shutil.copytree(ADVISED, root)
    folder = os.path.join(root, FOLDER)
    page, figures = report.build([root], "")
    # the table: ranked predictions, the measured median [min-max] and the error beside each
    check("<a href=#advice>advised runs</a>" in page, "the contents link the section")
    check("S+M on NVIDIA H100 80GB HBM3, by STP (higher is better)" in page, "the advice's heading")
    row = page[page.index("<td>1</td>"):page.index("<td>2</td>")]
    for want in ("mps 50%", "recommended", "best measured", "<td>1.714</td>",
                 "1.786 <span class='note nw'>[1.750-1.820]</span>", ">-4.0%<", "<td>1.200</td>", ">+2.9%<",
                 "S: 0.714 / 0.714 (+0.0%)", "M: 1.000 / 1.071 (-6.7%)"):
        check(want in row, f"rank 1's row has {want!r}: {row}")
    row = page[page.index("<td>2</td>"):page.index("<td>3</td>")]
    for want in ("green 64,64", "<td class=nw>1.214</td>", "<td class=off>+41.2%</td>", "<td class=off>-29.4%</td>",
                 "S: 0.714 / 0.500 (+42.9%)", "M: 1.000 / 0.714 (+40.0%)"):
        check(want in row, f"rank 2's row has {want!r}: {row}")
    row = page[page.index("<td>5</td>"):page.index("<td>6</td>")]
    check("not checked" in row and "<td>1.643</td>" in row and "S: 0.643<" in row, f"an unchecked candidate keeps its prediction: {row}")
    check("median |error| of STP 4.0%, of ANTT 2.9%, of a job&#x27;s progress 6.7%" in page, "the median errors")
    check("Spearman&#x27;s rank correlation of predicted against measured STP: undefined" in page,
          "a Spearman without spread is said undefined, not drawn as a number")
    check("Regret: none: the recommended mps 50% is the best measured." in page, "the regret")
    # the unfitted constants, said plainly
    check("<b>The model's constants are unfitted defaults</b>" in page, "unfitted constants are said")
    # the figure: a point per checked mode with the repeats' spread, the marks, the diagonal
    fig = [f for f in figures if f[0] == "fig-advice-1"]
    check(len(fig) == 1, f"one advice figure: {[f[0] for f in figures]}")
    rows = list(csv.DictReader(io.StringIO(fig[0][2]))) if fig else []
    points = {r["series"]: r for r in rows}
    want = {"mps 50%": (1.71429, 1.78572, 1.75, 1.82), "green 64,64": (1.71429, 1.21429, 1.21429, 1.21429),
            "mig-emulate 3g.40gb,4g.40gb": (1.71429, 1.78572, 1.78572, 1.78572)}
    for series, (x, value, lo, hi) in want.items():
        r = points.get(series, {})
        got = tuple(float(r.get(k) or "nan") for k in ("x", "value", "min", "max"))
        check(all(abs(a - b) < 1e-4 for a, b in zip(got, (x, value, lo, hi))), f"{series}: {got}, expected {x, value, lo, hi}")
    check(sum(r["series"] not in ("recommended", "best measured", "predicted = measured") for r in rows) == 4,
          f"a point per checked mode: {[r['series'] for r in rows]}")
    check(points.get("recommended", {}).get("value") == "1.78572" and "best measured" in points,
          "the recommended and the best measured are marked")
    check(len([r for r in rows if r["series"] == "predicted = measured"]) == 2, "the diagonal")
    check(any("measured STP (median, min-max of 3 repeats)" in r["panel"] for r in rows), "the axis says what is drawn")
    # a check before energy was measured says nothing of it; one that measured it gives the measured
    # J/sample with its error per mode and the energy's regret in words
    check("Energy per sample" not in page, "no energy words without check.json's energy")

    def with_energy(c):
        for m in c["modes"]:
            m.update(predicted_energy_per_sample_j=0.02, energy_per_sample_j={"median": 0.025, "min": 0.024,
                     "max": 0.026, "n": 3}, energy_error=-0.2)
        c["summary"].update(median_abs_energy_error=0.2, energy={"recommended": "mps 50%", "best_measured": "green 64,64",
                            "spearman": 0.5, "regret": 0.04, "tie": True})
    edit_json(os.path.join(folder, "check.json"), with_energy)
    page, _ = report.build([root], "")
    row = page[page.index("<td>1</td>"):page.index("<td>2</td>")]
    check("0.025 <span class='note nw'>[0.024-0.026]</span>" in row and ">-20.0%<" in row, f"the energy cells: {row}")
    check("Energy per sample over the window: median |error| 20.0%" in page and "measured 4.0% above green 64,64" in page
          and "a tie: inside the repeats" in page, "the energy's regret in words")
    # fitted constants are named, not warned about
    edit_json(os.path.join(folder, "advice.json"),
              lambda a: a.update(constants_source="results/advise-constants.json (fitted on 6 runs)"))
    page, _ = report.build([root], "")
    check("unfitted" not in page and "The model's constants: results/advise-constants.json (fitted on 6 runs)." in page,
          "fitted constants are named")
    # no check: the predictions alone, no figure
    bare = os.path.join(tmp, "bare")
    os.makedirs(bare)
    shutil.copy(os.path.join(folder, "advice.json"), bare)
    page, figures = report.build([bare], "")
    check(not [f for f in figures if f[0].startswith("fig-advice")] and "no check (run advise --check" in page
          and "<td>1.643</td>" in page, "an unchecked advice: its table, no figure")
    # bad values: refused naming the file and the key, exit 2
    keep = os.path.join(tmp, "keep")
    shutil.copytree(folder, keep)
    cases = [("check.json", lambda c: c["modes"][1].update(stp_error=float("nan")), "check.json: modes[1].stp_error is nan"),
             ("check.json", lambda c: c["modes"][0]["stp"].update(max=float("inf")), "check.json: modes[0].stp.max is inf"),
             ("check.json", lambda c: c["modes"][0]["jobs"][1].update(measured="fast"),
              "check.json: modes[0].jobs[1].measured is 'fast'"),
             ("check.json", lambda c: c["summary"].update(spearman=1.5), "check.json: summary.spearman is 1.5"),
             ("advice.json", lambda a: a["predictions"][2].update(stp=-1), "advice.json: predictions[2].stp is -1"),
             ("advice.json", lambda a: a["predictions"][0]["jobs"][0].update(progress=float("-inf")),
              "advice.json: predictions[0].jobs[0].progress is -inf")]
    for name, change, said in cases:
        shutil.rmtree(folder)
        shutil.copytree(keep, folder)
        edit_json(os.path.join(folder, name), change)
        status, err = refused(root, tmp)
        check(status == 2 and said in err, f"{said}: exit {status}, {err}")
    shutil.rmtree(folder)
    shutil.copytree(keep, folder)
    with open(os.path.join(folder, "check.csv")) as f:
        lines = f.read().splitlines()
    lines[3] = lines[3].replace(",0.714286,", ",nan,", 1)
    with open(os.path.join(folder, "check.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")
    status, err = refused(root, tmp)
    check(status == 2 and "check.csv: row 4, column 'predicted'" in err, f"nan in check.csv: exit {status}, {err}")
    # a negative error is a value, not a refusal
    shutil.rmtree(folder)
    shutil.copytree(keep, folder)
    status, err = refused(root, tmp)
    check(status == 0, f"the folder as written: exit {status}, {err}")
check.finish()
