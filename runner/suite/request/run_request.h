/* The run request: everything one run of run_suite is asked to do, typed, in one structure: the
 * jobs with their settings, the mode and its options, how long the jobs train and what is measured,
 * where it runs and what it writes. The command line's one parser makes it and decides every
 * default there (runner/suite/run/run_args.h); between run_suite processes (a study's cells, each
 * card's run under --gpus, Slurm's tasks) it travels whole, as request.json in the run folder
 * (runner/suite/run/request_file.h), each hop changing only its own part: the jobs, the GPU, the
 * folder, the reference, a pass's mode. `train` gets its command line from it once, at the last hop
 * (job_build_argv, runner/suite/jobs/jobs.h): a setting stays typed until then. */
#ifndef SUITE_RUN_REQUEST_H
#define SUITE_RUN_REQUEST_H

#include <stddef.h>

#include "runner/suite/plan/mix.h"

/* The most modes the table of modes holds, and so the most whose options a request carries. */
#define SUITE_MODES_MAX 16

/* How a data-parallel job runs beside cards whose jobs are MPS clients (run_suite --gpus
 * --ddp-under): outside MPS, or as the client of an MPS daemon of its own over its cards. X(kind,
 * name) in the order of their values: the enum, the option's choices and the names come from it. */
#define DDP_UNDER_TABLE(X) X(DDP_UNDER_NONE, "none") X(DDP_UNDER_MPS, "mps")
#define DDP_UNDER_ENUM_(kind, name) kind,
typedef enum { DDP_UNDER_TABLE(DDP_UNDER_ENUM_) } ddp_under;
#undef DDP_UNDER_ENUM_
const char *ddp_under_name(ddp_under d);

struct suite_mode;
typedef struct run_request_memory run_request_memory;

typedef struct run_request {
    /* the jobs */
    const char *mix_text;         /* the mix as written: it names the run and its folder */
    mix mix;                      /* its jobs, typed: each one's precision, decoder, length, fault */
    int precision;                /* --precision: a precision_kind + 1, given to every job that names
                                     none (run_request_set_mix); 0: none */
    /* the mode */
    const char *mode_name;        /* --mode as given: a mode of the table, or "all" */
    const struct suite_mode *mode;/* the mode that runs (its runs_as followed), once the request is
                                     checked; NULL: --mode all */
    const char *skip_modes;       /* --mode all without these: "streams,green" (checked names) */
    void *mode_options[SUITE_MODES_MAX]; /* each mode's own options, by table place (suite_mode_options) */
    /* how long each job trains, and what is measured */
    int epochs;                   /* 2 unless given: the first warms up (window), the second is timed (completion) */
    long steps_per_epoch;         /* 0: whole epochs */
    int quick;                    /* --quick asked for the smoke test's lengths (decided by the parser) */
    int completion;               /* the completion measurement: whole epochs timed, jobs run to completion */
    double window_s;              /* the window measurement's window length; 0 with completion */
    int windows;                  /* consecutive windows per launch */
    long warmup_steps;            /* the window measurement's warm-up, where shorter than an epoch */
    int kernels;                  /* --kernels: every job's kernels traced over one window of their own after
                                     the measured ones (runner/suite/jobs/job_window.h), then attributed */
    double kernels_window_s;      /* that window's length; the measured window's unless given */
    /* where it runs */
    int gpu;                      /* the GPU's NVML index */
    const char *gpus_text;        /* run_suite --gpus: the cards the jobs are placed over; NULL: one GPU */
    ddp_under ddp_under;          /* --gpus: how a data-parallel job runs beside cards of MPS clients */
    int sample_ms, no_monitor;
    const char *train_path;       /* the train program, resolved */
    const char *data_root;        /* NULL: train's default */
    /* what it writes */
    const char *results_dir;      /* where the run folder goes */
    const char *baseline_dir;     /* an earlier serial run of the same jobs (a reference), or NULL */
    /* how it is run */
    int force, dry_run, json;
    int repeat;                   /* launches of the run (1: one) */
    double ready_timeout_s, grace_s;
    double stall_timeout_s;       /* the watchdog; 0: from each job's pace (jobs_stall_limit) */
    /* the command line a person gave for it (run.json's "command"): every hop carries it down */
    int argc;
    char **argv;
    /* what the request owns (read from a file, or a hop's own copies); NULL: it owns nothing */
    run_request_memory *memory;
} run_request;

/* Which options the command line gave of those whose defaults follow from others (run_request_settle). */
typedef struct run_request_given {
    int epochs, steps, window, warmup, sample_ms, kernels_window;
} run_request_given;

/* Every default that follows from other settings, decided here once (an option's own default is its
 * row's fallback, runner/suite/run/run_args.c): --quick's lengths (a 10-step warm-up and a 2 s
 * window; with --completion 2 epochs of 10 steps) and sampling (quick_sample_ms where a program form
 * has its own: the study's), the window's 10 s, the run's 2 epochs, the traced window's length (the
 * measured window's); the completion measurement has no window. */
void run_request_settle(run_request *r, const run_request_given *given, int quick_sample_ms);

/* Memory the request owns and run_request_free releases: a zeroed block, a copy of a string. NULL
 * when out of memory. */
void *run_request_alloc(run_request *r, size_t size);
const char *run_request_keep(run_request *r, const char *text);
void run_request_free(run_request *r);

/* The jobs: text parsed by the mix grammar (mix.h), each job that names no precision given the
 * request's where train's rule allows it (runner/train/train_rules.h). 0, or -1 with "--mix:
 * <the grammar's message>" or "job <label>: <the rule's>" (the request's jobs are then none). text
 * must outlive the request (argv, or run_request_keep). */
int run_request_set_mix(run_request *r, const char *text, char *err, size_t err_size);
/* A job's epochs and steps per epoch: its own where the mix gives them, else the request's. */
static inline int run_request_job_epochs(const run_request *r, const job_spec *job) {
    return job->epochs > 0 ? job->epochs : r->epochs;
}
static inline long run_request_job_steps(const run_request *r, const job_spec *job) {
    return job->steps_per_epoch > 0 ? job->steps_per_epoch : r->steps_per_epoch;
}

#endif
