"""What the report accepts from a run folder's files, value by value: every file is parsed with
integers kept short enough to be numbers (a 400-digit one is refused, not overflowed later), nesting
kept shallow (100,000 '[' is refused, not a RecursionError), every number finite and below ABSURD,
and every field the report reads of the type and range it must have (a rate of 0 or more, a share
from 0 to 1, a whole count, text, true or false). What fails is a ReportError naming the file, the
place (field, or row and column) and what was expected: the report exits 2, never with a traceback,
and never draws or silently drops a value of the wrong kind.

Also here: whether a run folder's run.json that still says "running" has a process behind it
(results/results.h's rule, the same in Python)."""
import csv
import json
import math
import os

# No quantity run_suite writes comes near this (timestamps ~2e9 s, bytes ~1e12, energy counters
# ~1e10 J, a recommender's 2.4e10 parameters): a number beyond it, integers included, or an
# infinity or NaN, is an edited or broken file, refused with its place rather than drawn.
ABSURD = 1e15
# run_suite's files nest a few levels (summary.json: jobs[i].windows[w].field); far deeper is not theirs.
MAX_DEPTH = 32


class ReportError(Exception):
    """Bad input: the message names the file and what was expected."""


class TooLong:
    """An integer of more digits than ABSURD has, kept as its text so that the check can name it."""

    def __init__(self, text):
        self.text = text


def parse_int(text):
    return TooLong(text) if len(text.lstrip("-")) > len(str(int(ABSURD))) else int(text)


def is_num(v):
    """A number the report can use: an int or float, not a bool, finite and below ABSURD (compared
    as it is: an int is never turned into a float that could overflow; a TooLong is none)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return abs(v) < ABSURD if isinstance(v, int) else math.isfinite(v) and abs(v) < ABSURD


def shown(v):
    if isinstance(v, TooLong):
        return f"an integer of {len(v.text.lstrip('-'))} digits"
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def check_json_numbers(node, path):
    """Refuse, naming its place, a number that is not finite or not below ABSURD anywhere in a JSON
    document, and nesting deeper than MAX_DEPTH (walked without recursion)."""
    stack = [(node, "", 0)]
    while stack:
        v, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ReportError(f"{path}: {where} is nested more than {MAX_DEPTH} levels deep: expected run_suite's file")
        if isinstance(v, dict):
            stack.extend((x, f"{where}.{k}" if where else str(k), depth + 1) for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v))
        elif isinstance(v, TooLong) or (isinstance(v, (int, float)) and not isinstance(v, bool) and not is_num(v)):
            raise ReportError(f"{path}: {where or 'the document'} is {shown(v)}: expected a finite number below "
                              f"{ABSURD:g}")


def parse_json_text(text, path):
    """A JSON text parsed by the rules above; ReportError naming path otherwise."""
    try:
        data = json.loads(text, parse_int=parse_int)
    except RecursionError:
        raise ReportError(f"{path}: nested too deeply to be JSON run_suite wrote")
    except ValueError as e:
        raise ReportError(f"{path}: not valid JSON ({e})")
    check_json_numbers(data, path)
    return data


def read_json(path, want):
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror}")
    except UnicodeDecodeError as e:
        raise ReportError(f"{path}: not valid JSON ({e})")
    data = parse_json_text(text, path)
    if not isinstance(data, want):
        raise ReportError(f"{path}: expected a JSON {'object' if want is dict else 'array'}")
    return data


# --- the kinds of the fields the report reads --------------------------------------------------

class Number:
    """A number (null: not measured) from low to high; whole: a count."""

    def __init__(self, what, low=0.0, high=ABSURD, whole=False):
        self.what, self.low, self.high, self.whole = what, low, high, whole

    def accepts(self, v):
        return v is None or (is_num(v) and self.low <= v <= self.high and (not self.whole or float(v).is_integer()))


AMOUNT = Number("a number of 0 or more (or null)")          # rates, seconds, bytes, samples, ratios
COUNT = Number("a whole number of 0 or more", whole=True)
SHARE = Number("a share from 0 to 1", high=1.0 + 1e-9)
VERSION = Number("a version number (e.g. 12080)", low=1, high=1e7, whole=True)
SIGNED = Number("a number (or null)", low=-ABSURD)           # differences, relative errors
CORRELATION = Number("a correlation from -1 to 1 (or null)", low=-1.0 - 1e-9, high=1.0 + 1e-9)
TEXT, FLAG, LIST, OBJECT = "text", "true or false", "a list", "an object"
TEXT_OR_NULL, FLAG_OR_NULL = "text or null", "true, false or null"
_TYPES = {TEXT: str, FLAG: bool, LIST: list, OBJECT: dict, TEXT_OR_NULL: (str, type(None)),
          FLAG_OR_NULL: (bool, type(None))}

# summary.json (results/results.c): the fields the report reads, and each job's and window's
SUMMARY = {"mode": TEXT, "mix": TEXT, "status": TEXT, "measurement": TEXT, "jobs": LIST, "jobs_ok": COUNT,
           "jobs_failed": COUNT, "jobs_diverged": COUNT, "makespan_s": AMOUNT, "total_samples": AMOUNT,
           "same_workload": FLAG, "aggregate_samples_per_s": AMOUNT, "timed_samples_per_s_sum": AMOUNT,
           "energy_j": AMOUNT, "energy_per_sample_j": AMOUNT, "peak_gpu_memory_bytes": AMOUNT,
           "speedup_vs_serial": AMOUNT, "energy_vs_serial": AMOUNT, "stp": AMOUNT, "antt": AMOUNT,
           "fairness": AMOUNT, "interference_ratio_min": AMOUNT, "interference_ratio_mean": AMOUNT,
           "window_length_s": AMOUNT, "windows": COUNT, "min_overlap": SHARE, "window_energy_j": AMOUNT,
           "window_samples": AMOUNT, "window_energy_per_sample_j": AMOUNT, "window_energy_note": TEXT,
           "metrics": OBJECT, "normalized": OBJECT}
SUMMARY_JOB = {"index": COUNT, "label": TEXT, "job": TEXT, "epochs": COUNT, "steps_per_epoch": COUNT, "status": TEXT,
               "reason": TEXT, "timed_epoch": COUNT, "timed_seconds": AMOUNT, "timed_samples_per_s": AMOUNT,
               "peak_bytes": AMOUNT, "solo_timed_seconds": AMOUNT, "slowdown": AMOUNT,
               "normalized_throughput": AMOUNT, "normalized_turnaround": AMOUNT, "energy_per_sample_j": AMOUNT,
               "solo_in_partition_samples_per_s": AMOUNT, "interference_ratio": AMOUNT, "samples": AMOUNT,
               "go_t": AMOUNT, "end_t": AMOUNT, "window_samples_per_s": AMOUNT, "window_overlap": SHARE,
               "overlap_flag": FLAG, "windows": LIST}
SUMMARY_WINDOW = {"window": COUNT, "t0": AMOUNT, "t1": AMOUNT, "samples": AMOUNT, "samples_per_s": AMOUNT,
                  "steps": COUNT}
# run.json (runner/suite/run/run_json.c)
RUN_JSON = {"status": TEXT, "mode": TEXT, "started": TEXT, "command": LIST, "gpu": OBJECT, "jobs": LIST,
            "suite_revision": TEXT, "versions": OBJECT, "process": OBJECT}
RUN_JSON_GPU = {"name": TEXT, "driver_version": TEXT, "cuda_driver_version": VERSION, "memory_bytes": AMOUNT}
RUN_JSON_JOB = {"label": TEXT, "data_source": TEXT, "data_detail": TEXT}
# study.json's cells (runner/suite/multi/study.c)
STUDY_CELL = {"mode": TEXT, "degree": COUNT, "status": TEXT, "reason": TEXT, "folder": TEXT, "mix": TEXT, "job": TEXT}
# advice.json (runner/suite/multi/advise.c): the advice, each ranked prediction and its jobs
ADVICE = {"mix": TEXT, "gpu": TEXT, "total_sms": COUNT, "suite_revision": TEXT, "objective": TEXT,
          "constants_source": TEXT, "probes": LIST, "probe_wall_s": AMOUNT, "predictions": LIST, "recommended": TEXT,
          "why": TEXT, "probes_setting": TEXT, "read_off_law": LIST}
ADVICE_PREDICTION = {"mode": TEXT, "label": TEXT, "option": TEXT, "value": TEXT, "stp": AMOUNT, "antt": AMOUNT,
                     "fairness": AMOUNT, "energy_per_sample_j": AMOUNT, "fits": FLAG_OR_NULL, "jobs": LIST}
ADVICE_JOB = {"label": TEXT, "progress": AMOUNT, "sms": COUNT, "read_off_law": FLAG}
# check.json (runner/suite/multi/advise_check.c): predicted against measured per ranked mode
CHECK = {"objective": TEXT, "repeats": COUNT, "modes": LIST, "summary": OBJECT, "probes": TEXT}
CHECK_MODE = {"rank": COUNT, "label": TEXT, "mode": TEXT, "measured": FLAG, "predicted_stp": AMOUNT,
              "predicted_antt": AMOUNT, "predicted_fairness": AMOUNT, "stp": OBJECT, "antt": OBJECT,
              "fairness": OBJECT, "stp_error": SIGNED, "antt_error": SIGNED, "fairness_error": SIGNED,
              "measured_objective": SIGNED, "jobs": LIST, "predicted_energy_per_sample_j": AMOUNT,
              "energy_per_sample_j": OBJECT, "energy_error": SIGNED, "energy_note": TEXT, "read_off_law": LIST}
CHECK_SPREAD = {"median": AMOUNT, "min": AMOUNT, "max": AMOUNT, "n": COUNT}
CHECK_JOB = {"label": TEXT, "predicted": AMOUNT, "measured": AMOUNT, "error": SIGNED}
CHECK_SUMMARY = {"measured": COUNT, "spearman": CORRELATION, "recommended": TEXT, "best_measured": TEXT_OR_NULL,
                 "regret": SIGNED, "tie": FLAG, "median_abs_stp_error": AMOUNT, "median_abs_antt_error": AMOUNT,
                 "median_abs_progress_error": AMOUNT, "median_abs_energy_error": AMOUNT, "energy": OBJECT}
# check.json's summary.energy: the energy objective over the same modes, whatever the check's objective
CHECK_ENERGY = {"recommended": TEXT_OR_NULL, "best_measured": TEXT_OR_NULL, "spearman": CORRELATION, "regret": SIGNED,
                "tie": FLAG}


def check_fields(obj, spec, path, where=""):
    """Each field of spec that obj has, of its kind; ReportError naming the first that is not."""
    for key, kind in spec.items():
        if key not in obj:
            continue  # older files lack newer fields: not measured
        v, place = obj[key], f"{where}.{key}" if where else key
        ok = kind.accepts(v) if isinstance(kind, Number) else isinstance(v, _TYPES[kind])
        if not ok:
            raise ReportError(f"{path}: {place} is {shown(v)}: expected {kind.what if isinstance(kind, Number) else kind}")


def check_object(obj, key, spec, path, where):
    """check_fields over the object obj[key] where it has one (a value there that is no object is refused)."""
    if key not in obj or obj[key] is None:
        return
    place = f"{where}.{key}" if where else key
    if not isinstance(obj[key], dict):
        raise ReportError(f"{path}: {place} is {shown(obj[key])}: expected an object")
    check_fields(obj[key], spec, path, place)


def check_list(obj, key, spec, path, where=""):
    """check_fields over each object of the list obj[key] (an entry that is no object is refused)."""
    for i, item in enumerate(obj.get(key) if isinstance(obj.get(key), list) else []):
        place = f"{where}.{key}[{i}]" if where else f"{key}[{i}]"
        if not isinstance(item, dict):
            raise ReportError(f"{path}: {place} is {shown(item)}: expected an object")
        check_fields(item, spec, path, place)


# --- CSV ---------------------------------------------------------------------------------------

# The columns of run_suite's CSV files that hold text; every other column holds numbers, all of
# them 0 or more (times, rates, bytes, counts, 0/1 flags) but the differences below, or nothing
# (not measured).
TEXT_COLUMNS = {"jobs.csv": {"label", "model", "data", "status", "reason", "device", "kernels_file", "kernels_error"},
                "timeline.csv": {"unit", "markers"}, "steps.csv": {"label"},
                "kernels.csv": {"mode", "label", "level", "class", "layer", "pass", "bound", "alone_source",
                                "measurement"},
                "interference.csv": {"mode", "job", "label", "class", "beside", "measurement"},
                "check.csv": {"label", "mode", "label_job"}}
# Columns that hold differences, which may be below 0 (a class that ran faster shared than alone).
SIGNED_COLUMNS = {"kernels.csv": {"delta_ms", "share_of_slowdown"}, "check.csv": {"error"}}


def read_csv(path):
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror}")
    except (csv.Error, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not a CSV file ({e})")
    text = TEXT_COLUMNS.get(os.path.basename(path), set())
    signed = SIGNED_COLUMNS.get(os.path.basename(path), set())
    for n, row in enumerate(rows, start=2):  # the header is row 1
        for col, cell in row.items():
            if not isinstance(col, str) or col in text or not isinstance(cell, str) or not cell.strip():
                continue  # extra cells (key None), text columns and empty cells (not measured)
            try:
                v = float(cell)
            except ValueError:
                v = None
            if v is None or not (math.isfinite(v) and (0 <= v or col in signed) and abs(v) < ABSURD):
                raise ReportError(f"{path}: row {n}, column '{col}': {cell.strip()[:60]!r} is not a finite number "
                                  f"(expected {'one' if col in signed else '0 or more'}, below {ABSURD:g})")
    return rows


# --- a run that never wrote its end -----------------------------------------------------------

def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def _process_start(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
        return int(text[text.rindex(")") + 2:].split()[19])  # starttime, the 22nd field
    except (OSError, ValueError, IndexError):
        return -1


def run_status(run_json):
    """The status run.json records, "running" resolved by its process as run_suite does
    (results_run_status): a process that is gone (another boot, no such process, its pid reused)
    left the run failed without its end recorded."""
    status = run_json.get("status")
    if status != "running":
        return status if isinstance(status, str) else "unknown"
    p = run_json.get("process") if isinstance(run_json.get("process"), dict) else {}
    pid, boot, start = p.get("pid"), p.get("boot_id"), p.get("start_ticks")
    if not (isinstance(pid, int) and pid > 0 and isinstance(boot, str) and boot and isinstance(start, int)):
        return "running, or ended without recording an end (run.json names no process)"
    if boot == _boot_id() and _process_start(pid) == start:
        return f"running (run_suite {pid})"
    return f"failed: its run_suite (process {pid}) ended without recording an end (killed, or its disk full)"
