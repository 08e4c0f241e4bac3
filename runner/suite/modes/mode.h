/* A collocation mode is one struct of operations in a file of its own (runner/suite/mode_<name>.c)
 * and one row in the table of modes (runner/suite/modes/modes.c). The orchestrator (runner/suite/run/suite.c)
 * runs every mode the same way and never asks which mode it is:
 *
 *   plan      before anything runs, dry run included: shares, partitions; whatever it decides goes
 *             into its state (suite_mode_state). Returns 0, or -1 with a message (exit 1; a dry
 *             run shows the message and goes on), or EXIT_USAGE when the input is at fault.
 *   fit       can the jobs' footprints share the GPU's memory this way? NULL: the largest job
 *             must fit with MODE_SEQUENTIAL, else their sum (suite_fit). 0 fits, -1 does not
 *             (the numbers in err; refused without --force), SUITE_FIT_OWN when the mode checks
 *             each partition itself (MIG's planner).
 *   describe  the dry run's lines (json NULL: printed to out) or keys (added to json).
 *   start     after the run folder exists: daemons, instances, partitions.
 *   job_env   each job's environment (CUDA_VISIBLE_DEVICES, MPS folders and shares, ...); job is
 *             the run's (r->job_of[job] is its place in the mix). CUDA_DEVICE_ORDER and
 *             SUITE_CONCURRENT_JOBS are set before it.
 *   run_jobs  runs the jobs; NULL means one `train` process per job, all at once behind the
 *             start barrier (or one after another with MODE_SEQUENTIAL).
 *   stop      always after start, also after a failure or a signal; undoes what start did.
 *   report    the mode's own facts for run.json (daemon, instances, partitions).
 *   partition_key  (partitioned modes) what fixes the partition of the mix's job `job`: its SM
 *             count and memory limit. Two jobs with the same key and the same spec run alone at
 *             the same rate, so the isolation pass measures one of them. NULL: every job is
 *             measured (real MIG instances are distinct hardware).
 * Every operation may be NULL (nothing to do). The state (state_size bytes, zeroed) lives from
 * plan to the end of the whole run, so start resets what an earlier execution of the mode left.
 *
 * Adding a mode = one mode_<name>.c defining a `const suite_mode mode_<name>` + one row in modes.c. */
#ifndef SUITE_MODE_H
#define SUITE_MODE_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "runner/suite/jobs/jobs.h"

typedef struct suite_ctx suite_ctx;   /* the whole run: options, mix, footprints, GPU (suite.h) */
typedef struct mode_run mode_run;     /* one mode's run: its folder, its jobs, its state (suite.h) */
struct mps_daemon;
struct mig_plan;
struct mig_gpu;
struct mig_job;

enum {
    MODE_SEQUENTIAL = 1u << 0,   /* jobs one after another (serial) */
    MODE_PARTITIONED = 1u << 1,  /* each job gets a fixed share of the GPU: the run also measures
                                    each job alone in its own partition (isolation) */
    MODE_IN_ALL = 1u << 2,       /* part of --mode all */
    MODE_NEEDS_MIG = 1u << 3,    /* needs MIG mode on (--mig-gpu, --mig-create apply) */
    MODE_MIG_EMULATION = 1u << 4,/* realises the MIG plan without MIG: --mig-emulate puts it in
                                    place of the MODE_NEEDS_MIG modes */
    MODE_WHERE_POSSIBLE = 1u << 6,/* --mode all runs it where it can: when its plan or its start
                                    fails, it is "skipped" and the other modes stand */
    MODE_FAULTS_SPREAD = 1u << 5,/* one job's fatal fault can end the others (MPS clients of one
                                    server, jobs of one process): their failures are recorded as
                                    its collateral (jobs_classify_collateral) */
};

#define SUITE_FIT_OWN 1

typedef struct suite_mode {
    const char *name;            /* "mps", as --mode spells it */
    const char *help;            /* one line: --help, --list and the README's table */
    unsigned flags;
    size_t state_size;           /* bytes of private state: suite_mode_state(c, m), mode_run_state(r) */
    int (*plan)(suite_ctx *c, char *err, size_t err_size);
    int (*fit)(const suite_ctx *c, char *err, size_t err_size);
    void (*describe)(const suite_ctx *c, FILE *out, cJSON *json);
    int (*start)(mode_run *r, char *err, size_t err_size);
    void (*job_env)(const mode_run *r, int job, job_env *env);
    group_result (*run_jobs)(mode_run *r, job_record *jobs, int count, const jobs_settings *settings);
    void (*stop)(mode_run *r);
    void (*report)(const mode_run *r, cJSON *run_json);
    void (*partition_key)(const mode_run *r, int job, char *out, size_t size);
    /* after stop: what the mode itself recorded of a job's fault (the MPS server's log line),
     * evidence for the jobs taken down with it; "" when nothing */
    void (*fault_evidence)(const mode_run *r, char *out, size_t size);
} suite_mode;

/* The table (modes.c). */
const suite_mode *const *suite_modes(int *count);
const suite_mode *suite_mode_find(const char *name);   /* NULL when unknown */
/* The first mode with the flag, NULL when none has it. */
const suite_mode *suite_mode_with(unsigned flag);
/* "serial, naive, mps, ..., all" for messages and --help. */
const char *suite_mode_names(void);

/* Parts modes share. Plain processes (mode_naive.c): an empty private MPS pipe folder, made by
 * start and removed by stop, keeps them off any MPS daemon; visible is their CUDA_VISIBLE_DEVICES. */
int mode_plain_start(mode_run *r, char *err, size_t err_size);
void mode_plain_stop(mode_run *r);
void mode_plain_env(const mode_run *r, const char *visible, job_env *env);
void mode_plain_job_env(const mode_run *r, int job, job_env *env);   /* on the whole GPU */
/* The run's MPS daemon (mode_mps.c): --mps-pipe's, else one of its own; stopped and reported
 * the same way by every mode that runs on it. */
int mode_mps_start(mode_run *r, struct mps_daemon *d, char *err, size_t err_size);
void mode_mps_stop(struct mps_daemon *d);
void mode_mps_report(const struct mps_daemon *d, cJSON *run_json);
/* The MIG layout the mix gets on an empty GPU (mode_mig.c): planned on --mig-gpu's profile
 * table, else the GPU's own. 0, or -1 with a message. */
int mode_mig_plan(const suite_ctx *c, struct mig_plan *plan, char *err, size_t err_size);
/* The profile table plans use: --mig-gpu's, else the GPU's own. 0, or -1 with a message. */
int mode_mig_table(const suite_ctx *c, struct mig_gpu *gpu, char *err, size_t err_size);
/* The planner's view of `count` jobs of the mix (job_of: their places; NULL: all, in order):
 * label, footprint and compute demand (job_demand). */
void mode_mig_jobs(const suite_ctx *c, const int *job_of, int count, struct mig_job *out);
/* The dry run's view of such a layout: "<title> layout (on an empty GPU):" and the plan, or
 * json's "mig_plan". */
void mode_mig_describe(const struct mig_plan *plan, const char *title, FILE *out, cJSON *json);

#endif
