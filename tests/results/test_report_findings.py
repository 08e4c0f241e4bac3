#!/usr/bin/env python3
"""The paper's findings next to ours (results/report_html.py): an ordering claim against our modes'
spreads (the paper's MIG is our mig-emulate where no real MIG ran: a page once said "MPS > MIG >
naive holds" while mig-emulate was the fastest, because mig-emulate matched no name of the claim),
and the memory claim over the whole GPU's memory above its idle reading (each job's own memory
adds up by construction). Exit 0 passed, 1 failed."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))  # testlib
from testlib import Checks
import report_html  # noqa: E402
from report_data import Spread  # noqa: E402

check = Checks("test_report_findings")


def spreads(**modes):
    return [(m.replace("_", "-"), Spread(v)) for m, v in modes.items()]


paper = ["mps", "mig", "naive"]  # best first
check(report_html.order_verdict(spreads(mig_emulate=[2.3, 2.31, 2.32], mps=[2.38, 2.39, 2.4], naive=[3.2, 3.21, 3.22]),
                                paper) == "does not hold", "mig-emulate faster than mps: MPS > MIG does not hold")
check(report_html.order_verdict(spreads(mig_emulate=[2.5, 2.51, 2.52], mps=[2.38, 2.39, 2.4], naive=[3.2, 3.21, 3.22]),
                                paper) == "holds", "mps < mig-emulate < naive: holds")
check(report_html.order_verdict(spreads(mig_emulate=[2.35, 2.39, 2.45], mps=[2.38, 2.39, 2.4], naive=[3.2, 3.21, 3.22]),
                                paper) == "inconclusive", "overlapping mps and mig-emulate: inconclusive")
check(report_html.order_verdict(spreads(mig=[2.5, 2.5, 2.5], mig_emulate=[2.0, 2.0, 2.0], mps=[2.38, 2.39, 2.4]),
                                paper) == "holds", "real MIG speaks for the paper's MIG where it ran")
check(report_html.order_verdict(spreads(mps=[2.38], naive=[3.2]), paper) == "inconclusive",
      "one repeat a side ranks nothing")


class FakeTimeline:
    def __init__(self, first):
        self.columns = {"mem_used_bytes": [first, first + 1e9]}

    def has(self, name):
        return name in self.columns


class FakeRun:
    def __init__(self, peak, idle):
        self.summary = {"peak_gpu_memory_bytes": peak}
        self.timeline = FakeTimeline(idle) if idle is not None else None


check(report_html.memory_used_by_run(FakeRun(1.43e9, 0.5e9)) == 0.93e9, "peak above the idle reading")
check(report_html.memory_used_by_run(FakeRun(1.43e9, None)) != report_html.memory_used_by_run(FakeRun(1.43e9, None)),
      "no timeline: not measured (NaN)")
check(report_html.memory_used_by_run(FakeRun(0, 0.5e9)) != report_html.memory_used_by_run(FakeRun(0, 0.5e9)),
      "no peak: not measured (NaN)")

# a study spread over several cards says so in the page's heading; one on a single card does not
note = report_html.study_cards_note([("s", {"gpus": [0, 1, 2, 3], "cells_at_once": 4})])
check(note.startswith("cells over GPUs 0,1,2,3, up to 4 at once"), f"several cards: {note!r}")
check(report_html.study_cards_note([("s", {"gpus": [0], "cells_at_once": 1})]) == "", "one card: no note")
check(report_html.study_cards_note([("s", {"gpus": "0,1"})]) == "", "a malformed gpus list: no note")

check.finish()
