/* The run of run_suite around its collocation modes (mode.h). A run resolves the jobs of a mix,
 * asks `train --dry-run` for each footprint, lets every mode it runs plan, refuses a mix that
 * cannot fit (unless --force), then executes its mode, or with --mode all every mode of the table
 * marked MODE_IN_ALL into sub-folders and one comparison. Whatever ends a run (done, a failed job,
 * Ctrl-C, SIGTERM), each mode's stop undoes its start and the results are written. */
#ifndef SUITE_SUITE_H
#define SUITE_SUITE_H

#include <limits.h>

#include "results/results.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/modes/mode.h"
#include "runner/suite/gpu/monitor.h"

/* Exit statuses of run_suite. An interrupted run exits 128 + the signal. */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_PARTIAL = 3 };

#define SUITE_ALL "all"          /* --mode all: the table's MODE_IN_ALL modes */
#define SUITE_MODES_MAX 16

typedef struct suite_options {
    const suite_mode *mode;       /* NULL: --mode all */
    const char *mix_text;
    const char *skip_modes;       /* --mode all without these: "streams,green" (checked names) */
    mix mix;
    int epochs;                   /* default 2 (the second is timed) */
    long steps_per_epoch;         /* 0: whole epochs */
    int quick;
    const char *data_root;        /* NULL: train's default */
    const char *results_dir;
    const char *train_path;       /* resolved, absolute */
    const char *baseline_dir;     /* earlier serial run of the same mix, or NULL */
    int sample_ms, no_monitor;
    int gpu;                      /* NVML index of the GPU to use */
    int have_mps_sm, have_mps_mem;
    int mps_sm[MIX_MAX_JOBS];
    long long mps_mem[MIX_MAX_JOBS];
    const char *mps_pipe;         /* use this running daemon instead of starting one */
    const char *mig_layout, *mig_gpu;
    int mig_objective;            /* mig_objective (mig_plan.h): fill (default) or compact */
    const char *mig_layouts;      /* --mig-layouts: "all" or "L1;L2": the layout sweep (sweep.h) */
    int mig_create, mig_emulate;  /* mig_emulate: MODE_MIG_EMULATION in place of MODE_NEEDS_MIG */
    const char *green_sm;         /* --green-sm "64,64" (mode green), parsed by its plan */
    const char *green_share;      /* --green-share "50,50" */
    int via_green;                /* mig-emulate --via green: the layout's SMs as green contexts */
    int force, dry_run, json;
    double ready_timeout_s, grace_s;
    double stall_timeout_s;       /* watchdog; 0: derived from each job's pace (jobs_stall_limit) */
    int argc;
    char **argv;
} suite_options;

/* A mode the run executes, with what its plan left. */
typedef struct suite_planned {
    const suite_mode *mode;
    void *state;                  /* mode->state_size bytes */
    int skipped;                  /* --mode all: a MODE_WHERE_POSSIBLE mode that cannot run here */
    char error[1024];             /* why its plan failed */
} suite_planned;

struct suite_ctx {
    const suite_options *o;
    int count;                    /* jobs in the mix */
    int epochs;
    long steps;
    monitor_gpu gpu;
    job_footprint fp[MIX_MAX_JOBS];
    serial_baseline baseline;
    char run_dir[PATH_MAX], run_id[256], started[32];
    int mode_count;
    suite_planned modes[SUITE_MODES_MAX];
};

struct mode_run {
    suite_ctx *ctx;
    const suite_mode *mode;
    void *state;                  /* mode_run_state */
    char dir[PATH_MAX];
    int count;                    /* jobs in this run */
    int job_of[MIX_MAX_JOBS];     /* the run's job k is the mix's job job_of[k] */
    job_record *jobs;             /* count of them, once prepared */
    int started;                  /* start was called: stop and report apply */
    unsigned gpu_instances[MIX_MAX_JOBS]; /* MIG GPU instances the monitor samples (start) */
    int gpu_instance_count;
    monitor mon;
    int mon_on;
    int stopped;                  /* a stop signal ended the run */
    char error[2048];
    run_summary summary;
};

/* Runs everything; returns the process exit status (see above). */
int suite_run(const suite_options *options);

/* The mode's private state for this run (zeroed when the run began), NULL when it does not run. */
void *suite_mode_state(const suite_ctx *c, const suite_mode *mode);
static inline void *mode_run_state(const mode_run *r) { return r->state; }

/* Runs mode (one this run planned) on `count` jobs of the mix (job_of: their places; NULL: all of them, in order) into
 * dir, fills summary. The seam for passes over a subset of the jobs (each job alone in its
 * partition). Returns 0, or -1 when the mode could not be set up (summary: "failed"). */
int suite_execute(suite_ctx *c, const suite_mode *mode, const int *job_of, int count,
                  const char *dir, const serial_baseline *base, run_summary *summary);

/* The footprint check (pure, for tests): can the jobs' footprints share memory_bytes? With
 * MODE_SEQUENTIAL in mode_flags the largest must fit, else the sum; with per-job limits (MPS
 * memory limits, partitions) each job must also fit its own. 0 when it fits, else -1 with the
 * numbers. Unknown memory (NaN) checks the limits only. */
int suite_check_fit(unsigned mode_flags, const double *footprints, const long long *limits,
                    int count, double memory_bytes, char *err, size_t err_size);
/* The same for the run's mix and GPU (limits NULL: none); a mode's fit calls it. */
int suite_fit(const suite_ctx *c, unsigned mode_flags, const long long *limits, char *err,
              size_t err_size);

/* `train`'s argv for the mix's job i under the run's settings (job_free_strv). */
char **suite_job_argv(const suite_ctx *c, int i);

#endif
