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

/* The serial numbers a collocated run is compared with: from the serial part of --mode all or
 * from a previous serial run of the same mix (--baseline DIR). */
typedef struct serial_baseline {
    int known;
    char source[PATH_MAX];
    double makespan_s, energy_j;                /* NaN when unknown */
    int job_count;
    double solo_timed_s[MIX_MAX_JOBS];          /* each job's timed epoch, alone */
    double solo_rate[MIX_MAX_JOBS];             /* ... its samples/s */
    double solo_window_s[MIX_MAX_JOBS];         /* each job's go-to-end, alone */
} serial_baseline;

typedef struct run_summary {
    char mode[32];                              /* "naive", "mig-emulate", ... */
    const char *status;                         /* "complete", "partial", "interrupted" */
    int job_count, ok, failed, diverged;
    double first_go, last_end;                  /* unix seconds */
    double makespan_s;                          /* see results_summarize */
    double total_samples, aggregate_samples_per_s, timed_samples_per_s_sum;
    double energy_j, peak_gpu_memory;           /* NaN without the monitor */
    double speedup, energy_vs_serial;           /* NaN without a baseline */
    int timed_epoch[MIX_MAX_JOBS];              /* 1-based; 0 when the job has no epoch */
    double timed_s[MIX_MAX_JOBS], timed_rate[MIX_MAX_JOBS], peak_bytes[MIX_MAX_JOBS];
    double solo_s[MIX_MAX_JOBS], slowdown[MIX_MAX_JOBS];
    double window_start[MIX_MAX_JOBS], window_end[MIX_MAX_JOBS]; /* job i's go .. end */
    long monitor_ticks;
    double monitor_mean_ms, monitor_busy_fraction;
    int monitor_on;
    int sequential;                             /* jobs ran one after another */
    int same_workload;                          /* metrics_same_workload of the jobs */
    double samples[MIX_MAX_JOBS];               /* each job's samples, all epochs */
    double turnaround_s[MIX_MAX_JOBS];          /* run's first go to the job's end (sequential: the
                                                   windows before it included) */
    /* Partitioned modes: each job alone in a partition of its own size (NaN: not measured),
     * filled by the orchestrator's isolation pass before results_compare. */
    double partition_rate[MIX_MAX_JOBS];
    /* the job whose solo run stands for this one (the same job in the same partition: measured
     * once), -1 when it was measured itself or not at all */
    int partition_from[MIX_MAX_JOBS];
    char partition_source[PATH_MAX];            /* where those solo runs are */
    run_metrics metrics;                        /* results_compare; see metrics.h */
    /* The window measurement (metrics.h): the window's length and count, set by the caller before
     * results_summarize (which keeps them, as partition_rate); length 0: the completion
     * measurement, and nothing below applies. */
    double window_length_s;
    int window_count;
    double window_rate[MIX_MAX_JOBS];           /* median over the job's windows of its samples/s */
    double overlap[MIX_MAX_JOBS];               /* lowest over its windows (results_window_overlap) */
    double rate_in_window[MIX_MAX_JOBS][JOB_MAX_WINDOWS]; /* job i's samples/s in window w; NaN: none */
    int windows_measured;                       /* windows with per-window metrics below */
    double window_stp[JOB_MAX_WINDOWS], window_antt[JOB_MAX_WINDOWS], window_fairness[JOB_MAX_WINDOWS];
} run_summary;

/* Below this share of the window with every other job training, a job's window is flagged: it
 * did not measure collocation (a `*` in the tables, "overlap_flag" in the files). */
#define RESULTS_MIN_OVERLAP 0.95
/* Whether job i's window carries that flag: only in a run whose jobs ran together, since a serial
 * run's jobs never overlap by design (what serial means, not a failed measurement). */
int results_overlap_flagged(const run_summary *s, int i);

/* The share of window w (0-based) of job i during which every other job of the group was training
 * (from their window events' training intervals; a job without one: its go to its end). 1 for a
 * job alone; NaN when job i has no such window. */
double results_window_overlap(const job_record *jobs, int count, int i, int w);
/* The window measurement's part of the summary (results_summarize calls it when window_length_s
 * > 0): rate_in_window, window_rate and overlap from the jobs' window events. */
void results_window_summarize(const job_record *jobs, int count, run_summary *s);
/* The per-window STP, ANTT and fairness (results_compare calls it after the metrics of the median
 * rates): each window's metrics over the jobs' rates in it; the run's headline STP, ANTT and
 * fairness become their medians (results/spread.h). */
void results_window_compare(run_summary *s, const metrics_input *in);
/* The window measurement's columns of jobs.csv (header, then job i's row) and fields of
 * summary.json (the run's and job i's). */
void results_window_csv_header(FILE *f);
void results_window_csv_row(FILE *f, const job_record *job, const run_summary *s, int i);
void results_window_json_run(cJSON *root, const run_summary *s);
void results_window_json_job(cJSON *o, const job_record *jobs, const run_summary *s, int i);

/* Index of the timed epoch: the second (the first is warm-up), or the only one of a job planned
 * with one epoch; -1 when there is none (e.g. the job failed during its first epoch). */
int results_timed_epoch(const job_record *job);
/* When the job's training ended: its done event, else its last epoch's end, else its exit. */
double results_job_end(const job_record *job);

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
/* Reads <dir>/summary.json of an earlier serial run and checks it ran this mix
 * (same jobs in the same order, same epochs and steps). 0, or -1 with a message. */
int results_load_baseline(const char *dir, const job_record *jobs, int count, serial_baseline *b,
                          char *err, size_t err_size);

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
/* RFC 4180 field: quoted when it holds a comma, quote or line break. */
void results_csv_field(FILE *f, const char *text);
/* A number with that many decimals; nothing for NaN (an empty field). */
void results_csv_number(FILE *f, double v, int decimals);
/* key: v, or null for NaN and infinities. */
void results_json_number(cJSON *o, const char *key, double v);
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
