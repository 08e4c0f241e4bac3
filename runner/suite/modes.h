/* Collocation modes of run_suite and the run around them. A run resolves the jobs of a mix,
 * asks `train --dry-run` for each footprint, refuses a mix that cannot fit (unless --force),
 * then executes its mode(s):
 *   serial       jobs one after another, each alone (also each job's solo time)
 *   naive        all jobs at once as plain processes: the driver time-slices them
 *   mps          all at once as clients of the run's own MPS daemon (optional SM share and
 *                memory limit per job)
 *   mig          each job on its own MIG instance (existing, or created with --mig-create and
 *                destroyed at the end)
 *   mig-emulate  the MIG plan realised through MPS: each job's SM share and memory limit are its
 *                planned instance's
 *   all          serial, naive, mps and, where possible, mig (or mig-emulate), then one table
 * Whatever ends a run (done, a failed job, Ctrl-C, SIGTERM), the jobs are stopped, the MPS
 * daemon quit, created MIG instances destroyed and the results written. */
#ifndef SUITE_MODES_H
#define SUITE_MODES_H

#include "runner/suite/jobs.h"
#include "runner/suite/mix.h"

typedef enum { MODE_SERIAL, MODE_NAIVE, MODE_MPS, MODE_MIG, MODE_MIG_EMULATE, MODE_ALL } suite_mode;

/* Exit statuses of run_suite. An interrupted run exits 128 + the signal. */
enum { EXIT_OK = 0, EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_PARTIAL = 3 };

typedef struct suite_options {
    suite_mode mode;
    const char *mix_text;
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
    int mig_create, mig_emulate;  /* mig_emulate: with --mode all, emulate instead of real MIG */
    int force, dry_run, json;
    double ready_timeout_s, grace_s;
    int argc;
    char **argv;
} suite_options;

const char *mode_name(suite_mode mode);
/* "serial", "naive", "mps", "mig", "mig-emulate", "all"; -1 when unknown. */
int mode_parse(const char *text, suite_mode *mode);
#define MODE_NAMES "serial, naive, mps, mig, mig-emulate, all"

/* Runs everything; returns the process exit status (see above). */
int suite_run(const suite_options *options);

/* Footprint check (pure, for tests): can the jobs' footprints share memory_bytes under mode?
 * serial needs the largest to fit, the collocated modes the sum; with per-job limits (MPS
 * memory limits) each job must also fit its own. 0 when it fits, else -1 with the numbers. */
int mode_check_fit(suite_mode mode, const double *footprints, const long long *limits, int count,
                   double memory_bytes, char *err, size_t err_size);

#endif
