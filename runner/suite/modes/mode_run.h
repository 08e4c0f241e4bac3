/* What a collocation mode sees of the run it is part of: the run's request (run_request.h), the run as
 * a whole (mix, footprints, GPU, the modes it executes with their state) and one mode's run (its
 * folder, its jobs). The orchestrator (runner/suite/run/suite.c) fills them and calls the modes'
 * operations (mode.h) with them; what a mode needs of the orchestrator comes in here too: the
 * footprint check, a job's command, and `execute`, its seam for running a subset of the jobs. */
#ifndef SUITE_MODE_RUN_H
#define SUITE_MODE_RUN_H

#include <limits.h>

#include "results/results.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/modes/mode.h"
#include "runner/suite/gpu/monitor.h"

/* Exit statuses of run_suite. An interrupted run exits 128 + the signal. */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_PARTIAL = 3 };

/* A mode the run executes, with what its plan left. */
typedef struct suite_planned {
    const suite_mode *mode;
    void *state;                  /* mode->state_size bytes */
    int skipped;                  /* --mode all: a MODE_WHERE_POSSIBLE mode that cannot run here */
    char error[1024];             /* why its plan failed */
} suite_planned;

/* Runs mode (one this run planned) on `count` jobs of the mix (job_of: their places; NULL: all of
 * them, in order) into dir, fills summary. Returns 0, or -1 when the mode could not be set up
 * (summary: "failed"). */
typedef int suite_execute_fn(suite_ctx *c, const suite_mode *mode, const int *job_of, int count,
                             const char *dir, const serial_baseline *base, run_summary *summary);

struct suite_ctx {
    const run_request *o;         /* what the run is asked to do */
    int count;                    /* jobs in the mix */
    monitor_gpu gpu;
    job_footprint fp[MIX_MAX_JOBS];
    serial_baseline baseline;
    char run_dir[PATH_MAX], run_id[256], started[32];
    int mode_count;
    suite_planned modes[SUITE_MODES_MAX];
    suite_execute_fn *execute;    /* the orchestrator's (suite_execute): passes over part of the jobs */
};

struct mode_run {
    suite_ctx *ctx;
    const suite_mode *mode;
    void *state;                  /* mode_run_state */
    char dir[PATH_MAX];
    int count;                    /* jobs in this run */
    int job_of[MIX_MAX_JOBS];     /* the run's job k is the mix's job job_of[k] */
    job_record *jobs;                /* count of them, once prepared */
    int started;                  /* start was called: stop and report apply */
    unsigned gpu_instances[MIX_MAX_JOBS]; /* MIG GPU instances the monitor samples (start) */
    int gpu_instance_count;
    monitor mon;
    int mon_on;
    char mon_why[512];            /* why the monitor is off (summary.json's window_energy_note) */
    int stopped;                  /* a stop signal ended the run */
    char error[2048];
    run_summary summary;
};

/* The run's entry for mode, NULL when it does not run. */
const suite_planned *suite_mode_planned(const suite_ctx *c, const suite_mode *mode);
/* The mode's private state for this run (zeroed when the run began), NULL when it does not run. */
void *suite_mode_state(const suite_ctx *c, const suite_mode *mode);
static inline void *mode_run_state(const mode_run *r) { return r->state; }

/* The footprint check (pure, for tests): can the jobs' footprints share memory_bytes? With
 * MODE_SEQUENTIAL in mode_flags the largest must fit, else the sum; with per-job limits (MPS
 * memory limits, partitions) each job must also fit its own. 0 when it fits, else -1 with the
 * numbers. Unknown memory (NaN) checks the limits only. */
int suite_check_fit(unsigned mode_flags, const double *footprints, const long long *limits,
                    int count, double memory_bytes, char *err, size_t err_size);
/* 1 in a dry run on a login node (run_suite --slurm's check of a task, SUITE_NODE_CHECKS=later):
 * what needs the compute node (its GPUs, a running MPS daemon) is left to it, and said so. */
int suite_node_checks_later(void);
/* The same for the run's mix and GPU (limits NULL: none); a mode's fit calls it. */
int suite_fit(const suite_ctx *c, unsigned mode_flags, const long long *limits, char *err,
              size_t err_size);

/* `train`'s argv for the mix's job i under the run's request (job_build_argv; job_free_strv). */
char **suite_job_argv(const suite_ctx *c, int i);

#endif
