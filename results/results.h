/* Results of a run under runs/<run-id>/: run.json (configuration and machine, built in
 * run_json.c), jobs.csv (one row per job: every epoch's seconds, the timed epoch, status), steps.csv
 * (every measured step's time, step_times.c), summary.json
 * (makespan, the normalized metrics of metrics.h: each job's throughput against running alone,
 * slow-down, energy per sample and interference; STP, ANTT, fairness, speed-up and energy against
 * serial; a samples/s sum only when every job is the same workload) and, for --mode all,
 * comparison.csv/.json across the modes. Every file
 * is written to a temporary name and renamed, so a reader never sees half a file and a run that
 * fails midway still leaves complete files for what it measured. */
#ifndef SUITE_RESULTS_H
#define SUITE_RESULTS_H

#include <limits.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "results/metrics.h"
#include "results/job_record.h"
#include "results/fields.h"
#include "results/run_summary.h"
#include "results/window_results.h"

/* Where run folders go without --results: a folder of its own (git-ignored), not the source's
 * results/, which holds this code and the report. */
#define RESULTS_DEFAULT_DIR "runs"

/* Creates <base>/<UTC time>-<mode>-<mix> (filesystem-safe; "-2", "-3"... when taken), with
 * base created as needed. 0, or -1 with a message. */
int results_make_run_dir(const char *base, const char *mode, const char *mix_text, char *dir,
                         size_t dir_size, char *run_id, size_t run_id_size, char *err,
                         size_t err_size);
/* mkdir -p */
int results_make_dirs(const char *path, char *err, size_t err_size);
/* data -> <path>.tmp.<pid>, fsync, rename to path. 0, or -1 with the step that failed and its own
 * reason (a short write says so rather than quoting a stale errno) and the temporary file removed.
 * Every results file goes through it, or through results_commit_stream for one written as it grows. */
int results_write_atomic(const char *path, const char *data, size_t size, char *err, size_t err_size);
/* A file written as it grows into `partial` (the GPU timeline): flushed, synced, closed (f is closed
 * either way) and renamed to path; -1 with the reason, `partial` then kept with what it holds. */
int results_commit_stream(FILE *f, const char *partial, const char *path, char *err, size_t err_size);
/* Every failed write of a results file counts (the writers above; results_note_write_failure for
 * another file of the run, a job's log): run_suite exits 1 when any failed, whatever its jobs did.
 * SUITE_WRITE_FAULT names files to fail as on a full disk (the tests' full disk). */
void results_note_write_failure(void);
int results_write_failures(void);
/* A file of the run written as it grows and not renamed (a job's log): opened (-1 when it cannot
 * be), then appended to whole; the first failure of either is said on stderr with the file and its
 * reason and counted as above, and *fd is closed to -1: the run goes on, since a job's events are
 * read from its pipe, not from its log. */
int results_open_log(const char *path);
void results_append(int *fd, const char *path, const void *data, size_t n);
int results_write_json(const char *dir, const char *name, const cJSON *json, char *err, size_t err_size);
/* The JSON in the file at path; NULL (errno set where the file could not be read) otherwise. */
cJSON *results_read_json(const char *path);

/* A run record says "running" until its end is written; on a full disk (or after kill -9) that
 * never comes. So run.json keeps the process that writes it ("process": pid, this boot's id and the
 * process's start time), and a reader takes "running" whose process is gone (another boot, no such
 * process, or its pid reused by a later one) as failed. */
cJSON *results_process_json(void);
/* 1: the process of that record runs; 0: it has ended; -1: the record says too little. */
int results_process_alive(const cJSON *process);
/* The status <dir>/run.json records, "running" resolved by its process as above; out. */
const char *results_run_status(const char *dir, char *out, size_t size);


/* Index of the timed epoch: the second (the first is warm-up), or the only one of a job planned
 * with one epoch; -1 when there is none (e.g. the job failed during its first epoch). */
int results_timed_epoch(const job_record *job);

/* Fills s from the jobs (energy, memory and monitor fields are left NaN/0 for the caller;
 * partition_rate and partition_source, set before by an isolation pass, are kept).
 * makespan: serial runs one job at a time, so it is the sum of each job's go-to-end; the
 * collocated modes take first go to last end. Setup and warm-up before "go" are not counted. */
void results_summarize(const job_record *jobs, int count, const char *mode, int serial, int stopped,
                       const serial_baseline *baseline, run_summary *s);
/* The normalized metrics against a baseline (again, once energy or partition rates are known). */
void results_compare(run_summary *s, const serial_baseline *baseline);
/* The baseline a serial run provides. */
void results_baseline_from(const run_summary *serial, const char *source, serial_baseline *b);
/* Reads <dir>/summary.json of an earlier run of baseline_mode (the runner names the table's
 * sequential mode) and checks it ran this mix (same jobs in the same order, same epochs and
 * steps). 0, or -1 with a message. */
int results_load_baseline(const char *dir, const char *baseline_mode, const job_record *jobs, int count,
                          serial_baseline *b, char *err, size_t err_size);

int results_write_jobs_csv(const char *dir, const job_record *jobs, int count, const run_summary *s,
                           char *err, size_t err_size);
int results_write_summary(const char *dir, const char *mix_text, const job_record *jobs, int count,
                          const run_summary *s, const serial_baseline *baseline, char *err,
                          size_t err_size);
/* steps.csv: one row per measured step: job (index), label, window (0-based; empty in the
 * completion measurement) or epoch (the timed epoch's number; empty under the window
 * measurement), step (1-based there, in completion order) and ms, its time. The steps of every
 * window, or of the timed epoch; no file when no job reported step times (a job from before they
 * were reported, a data-parallel job). */
int results_write_steps_csv(const char *dir, const job_record *jobs, int count, const run_summary *s,
                            char *err, size_t err_size);
const char *results_status_name(job_status status);   /* "ok", "failed", "diverged" */
/* In-memory text for a file written whole (CSV): open, write to t->f, commit writes
 * <dir>/<name> atomically and frees the text. */
typedef struct results_text { char *data; size_t size; FILE *f; } results_text;
FILE *results_text_open(results_text *t);
int results_text_commit(results_text *t, const char *dir, const char *name, char *err, size_t err_size);

/* One row per job and a total row. */
void results_print_table(FILE *out, const job_record *jobs, int count, const run_summary *s);
/* --mode all: one row per mode; also written as comparison.csv and comparison.json in dir. */
void results_print_comparison(FILE *out, const run_summary *runs, int count);
int results_write_comparison(const char *dir, const run_summary *runs, int count, char *err,
                             size_t err_size);
/* --mig-layouts: one row per layout (its profiles in job order, the SMs it uses) with STP, ANTT,
 * fairness, speed-up and interference ratios; also written as layouts.csv and layouts.json. */
void results_print_layouts(FILE *out, const char *const *layouts, const int *sms, const run_summary *runs,
                           int count);
int results_write_layouts(const char *dir, const char *const *layouts, const int *sms,
                          const run_summary *runs, int count, char *err, size_t err_size);
/* "1.5 GiB", "512 MiB", "-" for NaN. */
void results_format_bytes(char *out, size_t size, double bytes);

#endif
