/* The record of a run's jobs, shared by the runner that fills it and the results that read it:
 * what each job was asked to do (job_spec, its injected fault included) and what was measured of
 * it (job_record: setup, epochs, times, outcome and the failure record). runner/suite/jobs fills
 * records from its processes' events; results/ turns arrays of them into jobs.csv, summary.json
 * and the tables. The process behind a record (pid, pipes, deadlines, the watchdog's clock) is
 * runner/suite/jobs' struct job_process: a record only points to it, so this layer knows nothing
 * of processes.
 */
#ifndef SUITE_RESULTS_JOB_RECORD_H
#define SUITE_RESULTS_JOB_RECORD_H

#include <limits.h>
#include <stddef.h>

#include "base/job_spec.h"

/* --- what was measured ------------------------------------------------------------------- */

#define JOB_MAX_EPOCHS 512

typedef enum { JOB_OK, JOB_FAILED, JOB_DIVERGED } job_status;

/* One "epoch" event. Unknown numbers are NaN (e.g. "accuracy":null). */
typedef struct job_epoch {
    int epoch;                   /* 1-based */
    int warmup, diverged;
    double samples, seconds, samples_per_s, loss, accuracy, peak_bytes;
    double t_start, t_end;       /* unix seconds, the job's clock (same host as the runner) */
    double step_ms_median, step_ms_p90;
    double cpu_cores;            /* the job's process: CPU seconds per second over the epoch */
    double host_decoded;         /* GPU decoding: samples its fallback decoded on the host */
} job_epoch;

/* One "window" event (the window measurement, runner/train/step_window.h): the steps that
 * completed inside the runner's window [t0, t1] and the job's training interval then. */
#define JOB_MAX_WINDOWS 64
typedef struct job_window {
    int window;                  /* 0-based */
    double t0, t1, steps, samples, samples_per_s;
    double step_ms_median, step_ms_p10, step_ms_p90, step_ms_p99, step_ms_count;
    double train_start, train_end;  /* the job's first step's start after go, latest step's end */
} job_window;

/* The "kernels" event (run_suite --kernels; the format in results/kernel_attribution.h): the job's
 * traced window and where its files are, or why it could not trace. */
typedef struct job_kernels {
    int reported;                /* 1: the event came (with files, or with error) */
    char file[PATH_MAX];         /* PREFIX.kernels.csv as the job named it; "" when none */
    char intervals[PATH_MAX];    /* PREFIX.intervals.csv */
    char error[256];             /* why the job could not trace; "" when it did */
    double kernels, dropped, steps, t0, t1, step_ms; /* NaN when the event did not say */
} job_kernels;

/* One step's time ("steps" events, runner/train/step_window.h): the window (0-based) or epoch
 * (1-based) it belongs to, -1 for the other, and its place there (1-based, completion order). */
typedef struct job_step {
    int window, epoch, step;
    float ms;
} job_step;
/* Step times one job's record keeps at most (64 MiB): a fast job's windows hold thousands of steps
 * each; beyond this they are counted, not kept. */
#define JOB_MAX_STEP_TIMES (1L << 22)

struct job_process;

typedef struct job_record {
    int index;
    job_spec spec;
    int epochs_planned;          /* resolved: the spec's, else the run's */
    long steps_per_epoch;        /* resolved; 0 = whole epochs */
    char canonical[256];         /* the spec in explicit form (mix_job_format), as jobs.csv,
                                    summary.json and a --baseline check name the job */
    char name[96];               /* "job-<i>-<label>", filesystem-safe */
    char log_path[PATH_MAX];
    char **argv, **envp;         /* the command and environment it ran with; owned, NULL-terminated */
    struct job_process *proc;    /* its process while it runs (runner/suite/jobs: job_prepare
                                    allocates it, job_release frees it); NULL in a record built
                                    from numbers alone */

    /* from the events */
    int have_setup;
    char device[128];
    double params, footprint_bytes;
    int mps, mig;                /* as the job reported in its setup event; -1 unknown */
    long child_pid;
    double t_spawn, t_ready, t_go, t_done, t_exit; /* unix seconds; NaN when it never happened */
    job_epoch epochs[JOB_MAX_EPOCHS];
    int epoch_count, epochs_dropped;
    job_window windows[JOB_MAX_WINDOWS];
    int window_count;
    job_kernels kernels;         /* the traced window (run_suite --kernels) */
    int saw_done;
    char error_message[512];

    /* faults (the failure record) */
    long last_step;              /* latest step a progress or fault event named; 0 unknown */
    char fault_kind[24];         /* a fault the job announced it injects ("fault" event), or "" */
    long fault_step;
    double t_fault;              /* unix seconds of that event; NaN when none */
    int stalled;                 /* stopped by the watchdog */
    int collateral_of;           /* the job whose fault took this one down; -1 when none */
    char evidence[1024];         /* a collateral failure's evidence: the mode's log line, its own error */

    /* outcome */
    job_status status;
    char reason[768];

    /* every step's time (from the "steps" events; not copied with the numbers above) */
    job_step *steps;             /* owned: job_release frees it; NULL when none came */
    long step_count, step_cap;
    long steps_lost;             /* beyond JOB_MAX_STEP_TIMES, or out of memory */
} job_record;

/* When the job's training ended: its done event, else its last epoch's end, else its exit. */
double job_end_time(const job_record *job);

#endif
