"""Reading run_suite's folders for the report: summary.json, jobs.csv, steps.csv, timeline.csv,
run.json, the jobs' setup events in their logs, and a study's study.json. Every file is read by the
rules of report_checks.py, each value of the type and range it must have: a malformed one raises
ReportError naming the file, the place and what was expected (the report then exits 2)."""
import json
import math
import os
import re
from collections import namedtuple

from report_checks import (ABSURD, COUNT, RUN_JSON, RUN_JSON_GPU, RUN_JSON_JOB, STUDY_CELL, SUMMARY, SUMMARY_JOB,  # noqa: F401
                           SUMMARY_WINDOW, VERSION, AMOUNT, ReportError, check_fields, check_list, is_num, parse_int,
                           read_csv, read_json, run_status, shown)

NAN = float("nan")
MODE_ORDER = ["serial", "naive", "mps", "mig", "mig-emulate", "streams", "green"]
MODE_COLOURS = {"serial": "#7f7f7f", "naive": "#d62728", "mps": "#1f77b4", "mig": "#2ca02c",
                "mig-emulate": "#98df8a", "streams": "#9467bd", "green": "#8c564b"}
MODEL_NAMES = {"resnet26": "ResNet-26", "resnet50": "ResNet-50", "resnet152": "ResNet-152",
               "efficientnetv2_s": "EfficientNetV2-S", "cait_xxs24": "CaiT-XXS24",
               "dlrm": "DLRM recommender"}
MODEL_SIZES = {"resnet26": "small", "resnet50": "medium", "efficientnetv2_s": "medium",
               "resnet152": "large", "cait_xxs24": "large", "dlrm": "very large"}
# summary.json keys shown in their own columns; any other number there (e.g. the normalized
# metrics) is shown too, under its own name, so new metrics appear without a change here.
KNOWN_SUMMARY = {"jobs_ok", "jobs_failed", "jobs_diverged", "makespan_s", "total_samples",
                 "aggregate_samples_per_s", "timed_samples_per_s_sum", "energy_j",
                 "peak_gpu_memory_bytes", "speedup_vs_serial", "energy_vs_serial",
                 "window_length_s", "windows", "min_overlap", "stp", "antt", "fairness",
                 # the energy column's own figure (energy_measured), and the count behind the per-sample one
                 "window_energy_j", "window_samples"}
METRIC_NAMES = {"stp": "STP", "antt": "ANTT", "fairness": "fairness",
                "interference_ratio": "interference ratio",
                "interference_ratio_mean": "interference (mean)",
                "interference_ratio_min": "interference (lowest)",
                "energy_per_sample_j": "energy / sample (J)",
                "window_energy_per_sample_j": "energy / sample (J), window"}
GIB = 1024.0 ** 3
# where a partitioned mode keeps each job's run alone in its partition (runner/suite/modes/isolation.c)
PARTITION_REFERENCE = "alone-in-partition"


def num(v):
    return float(v) if is_num(v) else NAN


def fnum(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return NAN
    return v if math.isfinite(v) else NAN


def finite(values):
    return [v for v in values if not math.isnan(v)]


def mean(values):
    v = finite(values)
    return sum(v) / len(v) if v else NAN


def read_steps(path, degree):
    """steps.csv (results/step_times.c): each job's step times in ms, {job index: [ms, ...]}, its
    windows' (or its timed epoch's) in file order. A row without a job of this run or without a
    time of 0 ms or more is refused naming its place, as read_csv refuses non-finite numbers."""
    rows = read_csv(path)
    if rows and not {"job", "ms"} <= set(k for k in rows[0] if isinstance(k, str)):
        raise ReportError(f"{path}: expected the columns 'job' and 'ms' (run_suite's steps.csv)")
    out = {}
    for n, row in enumerate(rows, start=2):  # the header is row 1
        job, ms = row.get("job"), row.get("ms")
        if not isinstance(job, str) or not job.strip().isdigit() or int(job) >= degree:
            jobs = f"0 to {degree - 1}" if degree > 0 else "it has none"
            raise ReportError(f"{path}: row {n}, column 'job': {job!r} is not a job of this run ({jobs})")
        v = fnum(ms)
        if not v >= 0:  # NaN (empty, text) fails this too
            raise ReportError(f"{path}: row {n}, column 'ms': {ms!r} is not a step time (milliseconds, 0 or more)")
        out.setdefault(int(job), []).append(v)
    return out


# --- the spread over repeats: base/spread.h's rule, once in Python ----------------------

SPREAD_MIN_RANKED = 2  # base/spread.h: one run ranks nothing


class Spread:
    """Median, minimum and maximum of the finite values (NaN and infinities left out), as
    base/spread.c's spread_of: the median of an even count is the mean of the middle two."""

    def __init__(self, values):
        v = sorted(x for x in values if is_num(x))
        self.n = len(v)
        self.min = v[0] if v else NAN
        self.max = v[-1] if v else NAN
        self.median = (v[self.n // 2] if self.n % 2 else (v[self.n // 2 - 1] + v[self.n // 2]) / 2) if v else NAN

    def format(self, spec="{:.2f}"):
        """"1.42 [1.38-1.47]"; "1.42" for one value; "-" for none (spread_format)."""
        if self.n == 0:
            return "-"
        if self.n == 1:
            return spec.format(self.median)
        return f"{spec.format(self.median)} [{spec.format(self.min)}-{spec.format(self.max)}]"


def spread_rank(a, b):
    """1 when a lies wholly above b, -1 wholly below, 0 when the ranges overlap or either side has
    fewer than SPREAD_MIN_RANKED values (spread_rank)."""
    if a.n < SPREAD_MIN_RANKED or b.n < SPREAD_MIN_RANKED:
        return 0
    return 1 if a.min > b.max else -1 if a.max < b.min else 0


def spread_rank_sign(rank):
    return ">" if rank > 0 else "<" if rank < 0 else "~"


def rank_line(named, lower_better=False):
    """[(name, Spread)] -> "a > b ~ c", best median first (highest; lowest with lower_better, then
    joined by "<"), each neighbour pair ranked by the rule (results/repeats.h's rank line)."""
    named = sorted([(k, s) for k, s in named if s.n], key=lambda x: x[1].median if lower_better else -x[1].median)
    out = named[0][0] if named else ""
    for (_, a), (name, b) in zip(named, named[1:]):
        out += f" {spread_rank_sign(spread_rank(a, b))} {name}"
    return out


# --- reading ---------------------------------------------------------------------------------

class Timeline:
    """The whole-GPU rows of timeline.csv as columns, and the phase markers."""

    def __init__(self, path):
        rows = read_csv(path)
        if rows and "t" not in rows[0]:
            raise ReportError(f"{path}: expected a column 't' (run_suite's timeline.csv)")
        unit = rows[0].get("unit") if rows else None
        rows = [r for r in rows if r.get("unit") == unit]
        self.t = [fnum(r.get("t")) for r in rows]
        if any(math.isnan(t) for t in self.t):
            raise ReportError(f"{path}: a row's time 't' is not a number")
        self.columns = {}
        # a row longer than the header has its extra cells under the key None: not a column
        names = [k for k in (rows[0].keys() if rows else []) if isinstance(k, str) and k not in ("t", "unit", "markers")]
        for name in names:
            self.columns[name] = [fnum(r.get(name)) for r in rows]
        self.markers = []
        for t, r in zip(self.t, rows):
            for m in (r.get("markers") or "").split():
                job, _, phase = m.partition(":")
                if job.startswith("job") and job[3:].isdigit():
                    self.markers.append((t, int(job[3:]), phase))
        self.job_mem = sorted((int(k[3:-10]), k) for k in self.columns
                              if k.startswith("job") and k.endswith("_mem_bytes") and k[3:-10].isdigit())

    def has(self, name):
        return name in self.columns and bool(finite(self.columns[name]))

    def mean_between(self, name, windows):
        if not self.has(name):
            return NAN
        col = self.columns[name]
        return mean([col[i] for i, t in enumerate(self.t) if any(a <= t <= b for a, b in windows)])

    def index_at(self, t):
        for i, ti in enumerate(self.t):
            if ti >= t:
                return i
        return len(self.t) - 1 if self.t else -1

    def energy_between(self, a, b):
        if not self.has("energy_j"):
            return NAN
        col = self.columns["energy_j"]
        pts = [(t, e) for t, e in zip(self.t, col) if not math.isnan(e)]
        before = [e for t, e in pts if t <= a] or [pts[0][1]]
        after = [e for t, e in pts if t <= b] or [pts[-1][1]]
        return after[-1] - before[-1]


def log_events(log):
    """The setup event's library versions and the first epoch's peak memory a job's log reports
    (its log holds its events); a log is free text, so a line that does not parse is skipped, but a
    value the report takes from an event must be of its kind (ReportError naming the line)."""
    out, first_epoch_bytes = {}, NAN
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, start=1):
                if not line.startswith('{"event":') or line.startswith('{"event":"steps"'):
                    continue  # not an event, or the longest ones: step times (steps.csv has them)
                try:
                    e = json.loads(line, parse_int=parse_int)
                except (ValueError, RecursionError):
                    continue
                if not isinstance(e, dict):
                    continue
                where = f"{log}: line {n}"
                if e.get("event") == "setup":
                    check_fields(e, {"cuda_runtime_version": VERSION, "cudnn_version": VERSION}, where)
                    for key, name in (("cuda_runtime_version", "CUDA runtime"), ("cudnn_version", "cuDNN")):
                        if is_num(e.get(key)):
                            out[name] = version_text(int(e[key]), key)
                elif e.get("event") == "epoch" and e.get("epoch") == 1 and math.isnan(first_epoch_bytes):
                    check_fields(e, {"peak_bytes": AMOUNT}, where)
                    v = e.get("peak_bytes")
                    if is_num(v) and v > 0:
                        first_epoch_bytes = float(v)
    except OSError:
        pass
    return out, first_epoch_bytes


def version_text(v, key):
    if key == "cudnn_version":  # 90100 = 9.1.0
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    return f"{v // 1000}.{v % 1000 // 10}"  # 12080 = 12.8


# What makes a job a workload of its own. Its canonical name (results/job_record.h: model, data
# set, batch, image size and the mix's overrides) carries its precision only where one was given,
# and not the run's --steps-per-epoch or --epochs, nor the measurement: runs of one model that
# differ in any of these are measured against different alone references.
JobKey = namedtuple("JobKey", "name precision steps_per_epoch epochs window window_length_s")


def job_key(name, job, window, window_length):
    base, precision = split_precision(name)
    scalar = [v if is_num(v) else None for v in (job.get("steps_per_epoch"), job.get("epochs"), window_length)]
    return JobKey(base, precision, scalar[0], scalar[1], window, scalar[2])


class Run:
    """One mode's run folder: summary.json (required), jobs.csv, timeline.csv, run.json."""

    def __init__(self, path):
        self.path = path
        s = read_json(os.path.join(path, "summary.json"), dict)
        where = os.path.join(path, "summary.json")
        if not isinstance(s.get("mode"), str) or not isinstance(s.get("jobs"), list):
            raise ReportError(f"{where}: expected run_suite's summary (a 'mode' string and a 'jobs' list)")
        check_fields(s, SUMMARY, where)
        check_list(s, "jobs", SUMMARY_JOB, where)
        if not s["jobs"]:  # run_suite never writes a run without jobs: (0 to -1) would be shown
            raise ReportError(f"{where}: 'jobs' is empty; a run has at least one job")
        for i, j in enumerate(s["jobs"]):
            check_list(j, "windows", SUMMARY_WINDOW, where, f"jobs[{i}]")
        self.summary = s
        self.mode = s["mode"]
        self.mix = s.get("mix") if isinstance(s.get("mix"), str) else "?"
        self.jobs = s["jobs"]
        self.degree = len(self.jobs)
        self.csv_rows = []
        p = os.path.join(path, "jobs.csv")
        if os.path.exists(p):
            self.csv_rows = read_csv(p)
        p = os.path.join(path, "run.json")
        self.run_json = read_json(p, dict) if os.path.exists(p) else {}
        check_fields(self.run_json, RUN_JSON, p)
        check_fields(self.run_json.get("gpu") or {}, RUN_JSON_GPU, p, "gpu")
        check_list(self.run_json, "jobs", RUN_JSON_JOB, p)
        p = os.path.join(path, "timeline.csv")
        self.timeline = Timeline(p) if os.path.exists(p) else None
        p = os.path.join(path, "steps.csv")
        # each job's step times; None in a folder written before run_suite kept them
        self.steps = read_steps(p, len(s["jobs"])) if os.path.exists(p) else None
        names = [j.get("job") if isinstance(j.get("job"), str) else str(j.get("label")) for j in self.jobs]
        self.job_names = names
        self.uniform = len(set(names)) == 1
        self.workload = names[0] if self.uniform and names else self.mix
        self.model = self.workload.split(":")[0] if self.uniform else ""
        # MIG as compute instances sharing one GPU instance (the study's "MIG (shared)")
        plan = self.run_json.get("mig_emulated_layout") or self.run_json.get("mig_devices")
        self.mig_shared = isinstance(plan, list) and any(isinstance(e, dict) and e.get("shared") is True for e in plan)
        self.cell = None  # the study's record of this run, when it is part of a study
        self.root = path  # the folder given on the command line that holds it (set by load)
        self.versions = {}
        self.first_epoch_bytes = [NAN] * self.degree  # each job's own peak after its first epoch
        for name in sorted(os.listdir(path)):
            if name.startswith("job-") and name.endswith(".log"):
                versions, peak = log_events(os.path.join(path, name))
                self.versions.update(versions)
                index = name[4:].partition("-")[0]
                if index.isdigit() and int(index) < self.degree:
                    self.first_epoch_bytes[int(index)] = peak
        self.labels = [str(j.get("label", i)) for i, j in enumerate(self.jobs)]
        # the window measurement (results/metrics.h): one common window for every job
        self.window = s.get("measurement") == "window"
        self.job_keys = [job_key(n, j, self.window, s.get("window_length_s")) for n, j in zip(names, self.jobs)]
        # a uniform run's job: the key of its alone references (solo_times, solo_makespans)
        self.alone_key = self.job_keys[0] if self.uniform and self.job_keys else None
        # runs of the same cell (--repeat, or several folders of one cell) are grouped as repeats
        # (same jobs, mode, partition sharing, length and measurement: a study's quick cell and a
        # --repeat of the same workload at another length are different cells)
        self.key = (self.workload, self.mode, self.mig_shared, tuple(names), tuple(self.job_keys))

    def job_csv(self, i, key):
        return fnum(self.csv_rows[i].get(key)) if i < len(self.csv_rows) else NAN

    def timed_seconds(self):
        out = []
        for i, j in enumerate(self.jobs):
            v = num(j.get("timed_seconds"))
            out.append(v if not math.isnan(v) else self.job_csv(i, "timed_s"))
        return out

    def job_times(self):
        """Each job's time for one unit of its work, so that the same job's time here over its time
        alone is its slowdown: under the window measurement its mean step in the common windows
        (batch / window samples/s; its "epoch" there is cut at stop, as long as the window, alone or
        not), else its timed epoch. Runs of one job are compared only within one measurement
        (JobKey)."""
        if not self.window:
            return self.timed_seconds()
        out = []
        for i in range(self.degree):
            rate, batch = self.job_rate(i), self.job_csv(i, "batch")
            out.append((batch if batch > 0 else 1.0) / rate if rate > 0 else NAN)
        return out

    @property
    def time_what(self):
        """What job_times measures, for labels."""
        return "step in the common window" if self.window else "timed epoch"

    def timed_windows(self):
        w = []
        for i in range(self.degree):
            a, b = self.job_csv(i, "timed_t_start"), self.job_csv(i, "timed_t_end")
            if not math.isnan(a) and not math.isnan(b):
                w.append((a, b))
        if not w:
            a, b = self.go_end()
            if not math.isnan(a):
                w.append((a, b))
        return w

    def go_end(self):
        go = finite([num(j.get("go_t")) for j in self.jobs])
        end = finite([num(j.get("end_t")) for j in self.jobs])
        return (min(go), max(end)) if go and end else (NAN, NAN)

    def timed_throughput(self):
        """Sum over jobs of samples/s past the warm-up (the common window's where measured, else
        the timed epoch's): what the collocated jobs did together. NaN unless every job is the
        same workload: a sum of unlike samples (32 px CIFAR and 64 px ImageNet images, recommender
        rows) means nothing (results/metrics.h)."""
        if not self.same_workload():
            return NAN
        if not self.window:
            v = num(self.summary.get("timed_samples_per_s_sum"))
            if not math.isnan(v):
                return v
        per = [self.job_rate(i) for i in range(self.degree)]
        return sum(per) if per and len(finite(per)) == len(per) else NAN

    def same_workload(self):
        """run_suite's own word where it wrote one, else the jobs' workload names alike."""
        v = self.summary.get("same_workload")
        return v if isinstance(v, bool) else self.uniform

    def sm_activity(self):
        """Mean over the timed epochs: SM activity (GPM), else NVML utilisation; and its name."""
        if not self.timeline:
            return NAN, None
        for col, name in (("sm_active_pct", "SM activity"), ("util_gpu_pct", "GPU utilisation")):
            v = self.timeline.mean_between(col, self.timed_windows())
            if not math.isnan(v):
                return v, name
        return NAN, None

    def memory_after_epoch(self):
        """Each job's memory after its own first epoch (its epoch event's peak, in its log; else
        its peak in summary.json), as the study read nvidia-smi after an epoch: the total is their
        sum, or under serial (one job at a time) the largest. Returns (total, per job, name)."""
        per_job = []
        for i, j in enumerate(self.jobs):
            v = self.first_epoch_bytes[i] if i < len(self.first_epoch_bytes) else NAN
            if math.isnan(v):
                v = num(j.get("peak_bytes"))
            per_job.append(v if v > 0 else NAN)
        known = finite(per_job)
        if not known:
            return NAN, per_job, "memory after each job's first epoch (not measured)"
        total = max(known) if self.mode == "serial" else sum(known)
        return total, per_job, "memory after each job's own first epoch"

    def job_rate(self, i):
        """Job i's samples/s: over the common window where the run used it, else its timed epoch."""
        j = self.jobs[i]
        key = "window_samples_per_s" if self.window else "timed_samples_per_s"
        v = num(j.get(key))
        return v if not math.isnan(v) else self.job_csv(i, key)

    def job_overlap(self, i):
        """The share of the window during which every other job trained (window runs only)."""
        v = num(self.jobs[i].get("window_overlap"))
        return v if not math.isnan(v) else self.job_csv(i, "window_overlap")

    def min_overlap(self):
        v = num(self.summary.get("min_overlap"))
        return v if not math.isnan(v) else 0.95

    def windows(self):
        """The common windows [T0, T1] of a window-measured run (the jobs' window events share them)."""
        out = []
        for j in self.jobs:
            for w in j.get("windows") if isinstance(j.get("windows"), list) else []:
                t0, t1 = num(w.get("t0")) if isinstance(w, dict) else NAN, num(w.get("t1")) if isinstance(w, dict) else NAN
                if t1 > t0 and (t0, t1) not in out:
                    out.append((t0, t1))
        return sorted(out) if self.window else []

    def window_energy(self):
        """GPU energy over the common windows only (warm-up and set-up left out): timeline.csv's
        power samples inside each [T0, T1], integrated (trapezoids; the window's ends
        interpolated). NaN without power samples covering every window."""
        tl = self.timeline
        if not self.windows() or not tl or not tl.has("power_w"):
            return NAN
        pts = [(t, p) for t, p in zip(tl.t, tl.columns["power_w"]) if not math.isnan(p)]
        total = 0.0
        for t0, t1 in self.windows():
            if not pts or pts[0][0] > t0 or pts[-1][0] < t1:
                return NAN  # the samples do not cover the window

            def at(t):
                for (ta, pa), (tb, pb) in zip(pts, pts[1:]):
                    if ta <= t <= tb:
                        return pa if tb == ta else pa + (pb - pa) * (t - ta) / (tb - ta)
                return pts[-1][1]
            inside = [(t0, at(t0))] + [(t, p) for t, p in pts if t0 < t < t1] + [(t1, at(t1))]
            total += sum((tb - ta) * (pa + pb) / 2 for (ta, pa), (tb, pb) in zip(inside, inside[1:]))
        return total

    def window_samples(self):
        """Samples the jobs trained inside the common windows."""
        v = [num(w.get("samples")) for j in self.jobs for w in (j.get("windows") if isinstance(j.get("windows"), list) else [])
             if isinstance(w, dict)]
        return sum(finite(v)) if finite(v) else NAN

    def energy_measured(self):
        """(energy, per sample, what it covers): over the common window where the run used the
        window measurement and its power was sampled, else from go to end (warm-up included). The run's
        own figure first (summary.json's window_energy_j and window_energy_per_sample_j, from NVML's energy
        counter); the power samples integrated stand in for runs that do not state it."""
        stated = num(self.summary.get("window_energy_per_sample_j"))
        if not math.isnan(stated):
            return num(self.summary.get("window_energy_j")), stated, "over the common window"
        e = self.window_energy()
        if not math.isnan(e):
            n = self.window_samples()
            return e, (e / n if n > 0 else NAN), "over the common window"
        return self.energy(), self.energy_per_sample(), "go to end"

    def energy(self):
        v = num(self.summary.get("energy_j"))
        if math.isnan(v) and self.timeline:
            a, b = self.go_end()
            if not math.isnan(a):
                v = self.timeline.energy_between(a, b)
        return v

    def samples(self):
        return num(self.summary.get("total_samples"))

    def energy_per_sample(self):
        v = num(self.summary.get("energy_per_sample_j"))
        if not math.isnan(v):
            return v
        e, n = self.energy(), self.samples()
        return e / n if n and not math.isnan(e) and not math.isnan(n) else NAN

    def extra_metrics(self):
        out = {}
        for k, v in self.summary.items():
            if k not in KNOWN_SUMMARY and is_num(v):
                out[k] = float(v)
        for holder in ("metrics", "normalized"):
            m = self.summary.get(holder)
            if isinstance(m, dict):
                for k, v in m.items():
                    if is_num(v):
                        out[k] = float(v)
        return out

    def normalized_throughput(self, solo):
        """Sum over jobs of (job alone / job here), from job_times; solo: solo_times."""
        base = solo.get(self.alone_key)
        if self.uniform and base:
            return sum(base / t for t in self.job_times() if t and not math.isnan(t)) if self.mode != "serial" else 1.0
        vals = [num(j.get("solo_timed_seconds")) / num(j.get("timed_seconds")) for j in self.jobs
                if num(j.get("timed_seconds")) > 0]
        vals = finite(vals)
        return sum(vals) if len(vals) == self.degree and self.mode != "serial" else NAN

    def against_alone(self, solo, solo_makespan):
        """A uniform run without a serial baseline of its own (a study cell: d*S beside the cell
        running S alone): STP, ANTT, fairness and speed-up from the same workload's run alone.
        Each job's normalized progress is its time alone / here (job_times: per step of the common
        window, or per timed epoch); the serial makespan of d identical jobs is d times one's. {}
        where the run has its own numbers or none apply."""
        base, whole = solo.get(self.alone_key), solo_makespan.get(self.alone_key)
        if not self.uniform or self.mode == "serial" or not base or is_num(self.summary.get("stp")):
            return {}
        times = self.job_times()
        if len(finite(times)) != self.degree or any(t <= 0 for t in times):
            return {}
        progress = [base / t for t in times]
        out = {"stp": sum(progress), "antt": sum(1 / p for p in progress) / len(progress),
               "fairness": min(progress) / max(progress)}
        makespan = num(self.summary.get("makespan_s"))
        # under the window measurement a run lasts its warm-up and window, alone or beside others:
        # a ratio of such makespans is no speed-up (STP is the window's)
        if whole and makespan > 0 and not self.window and not is_num(self.summary.get("speedup_vs_serial")):
            out["speedup_vs_serial"] = self.degree * whole / makespan
        return out

    def failures(self):
        out = []
        for i, j in enumerate(self.jobs):
            if j.get("status") not in (None, "ok"):
                out.append(f"job {i} {j.get('label', '?')}: {j.get('status')}"
                           + (f": {j.get('reason')}" if j.get("reason") else ""))
        return out


class RunGroup:
    """The runs of one cell (workload, mode, degree, partition sharing, jobs): a --repeat's
    repeat-<r> folders or several run folders of the same cell. Figures draw it as one bar
    (median, min-max whiskers, n) and tables print `median [min-max]` (Spread)."""

    def __init__(self, runs):
        self.runs = runs
        first = runs[0]
        self.mode, self.degree, self.workload, self.mix = first.mode, first.degree, first.workload, first.mix
        self.uniform, self.labels, self.mig_shared = first.uniform, first.labels, first.mig_shared
        self.window = all(r.window for r in runs)
        self.n = len(runs)

    def spread(self, f):
        return Spread([f(r) for r in self.runs])

    def job_spread(self, i, f):
        return Spread([f(r, i) for r in self.runs if i < r.degree])

    def job_names(self):
        """Each job's label, with its index where labels repeat (S, M#1, M#2 in S+M+M)."""
        return [f"{lab}#{i}" if self.labels.count(lab) > 1 else lab for i, lab in enumerate(self.labels)]


def group_repeats(runs):
    """The runs grouped by cell, in the order of each cell's first run."""
    groups = {}
    for r in runs:
        groups.setdefault(r.key, []).append(r)
    return [RunGroup(rs) for rs in groups.values()]


class Cell:
    """A study cell that has no run folder: refused (does not fit), failed to start, skipped."""

    def __init__(self, d, where):
        self.mode = str(d.get("mode", "?"))
        self.degree = int(num(d.get("degree"))) if is_num(d.get("degree")) else 0
        self.workload = str(d.get("job") or d.get("mix") or "?")
        self.status = str(d.get("status", "?"))
        self.reason = str(d.get("reason", ""))
        self.mix = str(d.get("mix", ""))
        self.where = where


def unfinished_runs(paths):
    """The run folders under paths that have run.json but never wrote summary.json (nor hold runs of
    their own, as --mode all's and --repeat's top folders do), each with its status as run.json
    records it, "running" resolved by its process (report_checks.run_status): [(folder, status)]."""
    out = []
    for root in paths:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            if "run.json" in filenames and "summary.json" not in filenames and not dirnames:
                out.append((dirpath, run_status(read_json(os.path.join(dirpath, "run.json"), dict))))
    return out


def load(paths):
    runs, cells, studies, alls = [], [], [], []
    for root in paths:
        if not os.path.isdir(root):
            raise ReportError(f"{root}: not a folder (expected a run folder of run_suite)")
        found = 0
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            if "study.json" in filenames:
                p = os.path.join(dirpath, "study.json")
                st = read_json(p, dict)
                if not isinstance(st.get("cells", []), list):
                    raise ReportError(f"{p}: 'cells' is not a list")
                studies.append((dirpath, st))
                found += 1
            if "comparison.json" in filenames:
                alls.append((dirpath, read_json(os.path.join(dirpath, "comparison.json"), list)))
            if "advice.json" in filenames:
                found += 1  # run_suite advise's folder: the report's advice section (report_advice.py)
            if "summary.json" in filenames:
                if PARTITION_REFERENCE in os.path.relpath(dirpath, root).split(os.sep):
                    continue  # a job alone in its partition: the interference ratio's reference, not a run of the mix
                runs.append(Run(dirpath))
                runs[-1].root = root
                found += 1
        if not found:
            ended = "; ".join(f"{path}: {status}" for path, status in unfinished_runs([root]))
            raise ReportError(f"{root}: no run folder in it (expected summary.json, as run_suite writes)"
                              + (f"; runs without one: {ended}" if ended else ""))
    by_path = {os.path.realpath(r.path): r for r in runs}
    for base, st in studies:
        check_list(st, "cells", STUDY_CELL, os.path.join(base, "study.json"))
        for k, c in enumerate(st.get("cells", [])):
            folder = c.get("folder")
            run = by_path.get(os.path.realpath(os.path.join(base, folder))) if isinstance(folder, str) and folder else None
            if run:
                run.cell = c
            elif c.get("status") not in ("complete", "partial"):
                cells.append(Cell(c, base))
    return runs, cells, studies, alls


# --- figures ---------------------------------------------------------------------------------

def mode_key(mode):
    return MODE_ORDER.index(mode) if mode in MODE_ORDER else len(MODE_ORDER)


def workload_title(w):
    if ":" not in w:
        return mix_title(w)
    model, _, rest = w.partition(":")
    data, _, batch = rest.partition("@")
    size = MODEL_SIZES.get(model)
    return f"{MODEL_NAMES.get(model, model)} · {data} · batch {batch}" + (f" ({size})" if size else "")


def mix_title(mix):
    """A mix's heading: its jobs' labels, then each distinct label's overrides once, so that
    "S[steps=50]+M[steps=30]+M[steps=30]" reads "mix S+M+M (S: steps=50; M: steps=30)"."""
    parts = re.findall(r"([^+\[]+)(?:\[([^\]]*)\])?", mix)
    labels = [label for label, _ in parts]
    said = []
    for label, overrides in parts:
        if overrides and f"{label}: {overrides}" not in said:
            said.append(f"{label}: {overrides}")
    return f"mix {'+'.join(labels)}" + (f" ({'; '.join(said)})" if said else "")


def run_kind(r):
    """A run's precision(s) and measurement, for headings that stand apart from its table."""
    precisions = ",".join(sorted({k.precision for k in r.job_keys}))
    return f"{precisions} · {'common window' if r.window else 'whole epochs'}"


def short_workload(r):
    """A run's jobs in a few words: the model, or a mix's labels (its overrides are in its section's title)."""
    return MODEL_NAMES.get(r.model, r.model) if r.uniform else "+".join(re.findall(r"([^+\[]+)(?:\[[^\]]*\])?", r.mix))


def split_precision(name):
    """A canonical job name without its precision override, and that precision (tf32, train's
    default, where it has none): runs of one mix in two precisions must find each other."""
    head, bracket, rest = name.rpartition("[")  # overrides come last, one bracket
    if not bracket or not rest.endswith("]") or "]" in rest[:-1]:
        return name, "tf32"
    overrides = rest[:-1].split(",")
    precision = ([o[10:] for o in overrides if o.startswith("precision=")] or ["tf32"])[-1]
    kept = [o for o in overrides if not o.startswith("precision=")]
    return head + (f"[{','.join(kept)}]" if kept else ""), precision


def precision_pairs(runs):
    """(tf32 run, bf16 run) of the same jobs but for their precision (same length and measurement),
    mode and degree; the last loaded of each where there are several. A run whose jobs differ in
    precision pairs with none."""
    found = {}
    for r in runs:
        precisions = {k.precision for k in r.job_keys}
        if len(precisions) == 1 and precisions <= {"tf32", "bf16"}:
            jobs = tuple(k._replace(precision=None) for k in r.job_keys)
            found.setdefault((jobs, r.mode, r.degree), {})[precisions.pop()] = r
    pairs = [(k["tf32"], k["bf16"]) for k in found.values() if len(k) == 2]
    return sorted(pairs, key=lambda p: (p[0].degree, mode_key(p[0].mode), p[0].mix))


def precision_rows(pairs):
    """Per pair its label and (tf32, bf16) of throughput, SM activity and memory; and the names of
    the SM and memory measures, which depend on what each run could read."""
    rows, sm_names, mem_names = [], set(), set()
    for t, b in pairs:
        sm, mem = [r.sm_activity() for r in (t, b)], [r.memory_after_epoch() for r in (t, b)]
        sm_names.update(n for _, n in sm if n)
        mem_names.update(m[2] for m in mem)
        rows.append((f"{t.mix} {t.mode}", t, b, [(t.timed_throughput(), b.timed_throughput()),
                                                 (sm[0][0], sm[1][0]), (mem[0][0], mem[1][0])]))
    return rows, " or ".join(sorted(sm_names)) or None, " or ".join(sorted(mem_names))


def solo_makespans(runs):
    """Each uniform job's makespan alone (its one-job serial run), by its key (Run.alone_key), for
    the study's cells."""
    out = {}
    for r in runs:
        v = num(r.summary.get("makespan_s"))
        if r.uniform and r.mode == "serial" and r.degree == 1 and v > 0:
            out.setdefault(r.alone_key, []).append(v)
    return {k: sum(v) / len(v) for k, v in out.items()}


def solo_times(runs):
    """Each uniform job's time alone (Run.job_times), by its key (Run.alone_key): its serial runs'
    mean (any degree), else the mean of its degree-1 runs."""
    serial, alone = {}, {}
    for r in runs:
        if r.uniform and (r.mode == "serial" or r.degree == 1):
            (serial if r.mode == "serial" else alone).setdefault(r.alone_key, []).extend(finite(r.job_times()))
    out = {k: mean(v) for k, v in alone.items() if v}
    out.update({k: mean(v) for k, v in serial.items() if v})
    return out


# --- HTML ------------------------------------------------------------------------------------

def short_name(w):
    return MODEL_NAMES.get(w.split(":")[0], w) if ":" in w else w
