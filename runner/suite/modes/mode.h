/* A collocation mode is one struct of operations in a file of its own (runner/suite/modes/mode_<name>.c)
 * and one row in the table of modes (runner/suite/modes/modes.c). The orchestrator (runner/suite/run/suite.c)
 * runs every mode the same way and never asks which mode it is:
 *
 *   plan      before anything runs, dry run included: shares, partitions; whatever it decides goes
 *             into its state (suite_mode_state). Returns 0, or -1 with a message (exit 1; a dry
 *             run shows the message and goes on), or EXIT_USAGE when the input is at fault.
 *   fit       can the jobs' footprints share the GPU's memory this way? NULL: the largest job
 *             must fit with MODE_SEQUENTIAL, else their sum (suite_fit). 0 fits, -1 does not
 *             (the numbers in err; refused without --force), SUITE_FIT_REFUSED when a setting of
 *             the mode cannot hold a job (refused, --force or not), SUITE_FIT_OWN when the mode checks
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
 *   sm_target the SMs each job's libraries will be told (the dry run says them).
 *   partition_key  (partitioned modes) what fixes the partition of the mix's job `job`: its SM
 *             count and memory limit. Two jobs with the same key and the same spec run alone at
 *             the same rate, so the isolation pass measures one of them. NULL: every job is
 *             measured (real MIG instances are distinct hardware).
 *   runs_as   the mode that runs in this one's place under the given options (mig under
 *             --mig-emulate: mig-emulate), NULL for this one; run_suite and --mode all follow it.
 * Every operation may be NULL (nothing to do). The state (state_size bytes, zeroed) lives from
 * plan to the end of the whole run, so start resets what an earlier execution of the mode left.
 *
 * A mode's command-line options are its own too (mode_options below): the mode that owns a
 * concept declares its rows of run_suite's option table, into a struct of its own, with their
 * check; every mode names the groups of options it takes (.takes), its own or another's. What a
 * mode sees of the run (the options, the mix, the footprints, the GPU) is mode_run.h.
 *
 * Adding a mode = one mode_<name>.c defining a `const suite_mode mode_<name>` + one row in modes.c. */
#ifndef SUITE_MODE_H
#define SUITE_MODE_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "runner/cli.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/request/run_request.h"

typedef struct suite_ctx suite_ctx;   /* the whole run: options, mix, footprints, GPU (mode_run.h) */
typedef struct mode_run mode_run;     /* one mode's run: its folder, its jobs, its state (mode_run.h) */
typedef struct suite_mode suite_mode;

#define SUITE_ALL "all"          /* --mode all: the table's MODE_IN_ALL modes */
struct mps_daemon;
struct mig_plan;
struct mig_gpu;
struct mig_job;
struct green_gpu;

enum {
    MODE_SEQUENTIAL = 1u << 0,   /* jobs one after another (serial) */
    MODE_PARTITIONED = 1u << 1,  /* each job gets a fixed share of the GPU: the run also measures
                                    each job alone in its own partition (isolation) */
    MODE_IN_ALL = 1u << 2,       /* part of --mode all */
    MODE_NEEDS_MIG = 1u << 3,    /* needs MIG mode on: --mig-gpu only with --dry-run */
    MODE_MIG_EMULATION = 1u << 4,/* realises the MIG plan without MIG: under --mig-emulate it runs
                                    in place of the MODE_NEEDS_MIG modes (their runs_as) */
    MODE_WHERE_POSSIBLE = 1u << 6,/* --mode all runs it where it can: when its plan or its start
                                    fails, it is "skipped" and the other modes stand */
    MODE_FAULTS_SPREAD = 1u << 5,/* one job's fatal fault can end the others (MPS clients of one
                                    server, jobs of one process): their failures are recorded as
                                    its collateral (jobs_classify_collateral) */
    MODE_MPS_CLIENTS = 1u << 7,  /* its jobs are clients of an MPS daemon of the run's: beside them a
                                    data-parallel job can be one too (run_suite --gpus --ddp-under) */
    MODE_PLAIN = 1u << 8,        /* plain processes on the whole GPU: what a data-parallel job
                                    beside the cards runs under outside MPS */
    MODE_IN_STUDY = 1u << 9,     /* one of the study's collocated modes (run_suite --study) */
    MODE_STUDY_ALONE = 1u << 10, /* the study measures it at degree 1 too (its cost to one job) */
    MODE_TIME_SLICED = 1u << 11, /* the jobs' contexts take turns on the whole GPU: kernels of two
                                    jobs never run at once, so a kernel's traced interval can span
                                    another context's slice (the kernel attribution makes no
                                    interference matrix of it; the slices are its waiting) */
};

#define SUITE_FIT_OWN 1
#define SUITE_FIT_REFUSED 2 /* a mode's setting contradicts a job (a limit below its footprint): exit 2, --force or not */

/* What an options check knows: the mode as given (--mode's text; "all"), and the modes it runs
 * as, the given one first (none for --mode all), under the options as parsed. */
typedef struct mode_check {
    const char *given;
    const suite_mode *chain[SUITE_MODES_MAX];
    int chain_count;
    const run_request *o;      /* the mix is parsed; the modes' options are as given */
} mode_check;

/* The mode that runs (the chain's last; NULL: --mode all), and whether any mode of the chain
 * has one of the flags. */
const suite_mode *mode_check_runs(const mode_check *ck);
int mode_check_any(const mode_check *ck, unsigned flags);

/* Options of run_suite that one module declares and owns: its rows of run_suite's option table
 * (runner/cli.h) into a struct of `size` bytes of its own (suite_mode_options finds it), where
 * --help shows them: after the rows of the modes before it in the table. groups: the rows' names
 * as modes take them, options that go with the same modes together ("--mps-sm --mps-mem"); one
 * given under a mode that takes none of its group is refused, the message made from the modes'
 * .takes ("--mps-sm and --mps-mem go with --mode mps or all, not naive"). A row in no group
 * (one that picks a stand-in, or a sweep) is the check's own to refuse. */
typedef struct mode_options {
    const cli_option *rows;       /* ending with {0} */
    size_t size;
    const char *const *groups;    /* ending with NULL */
    /* after the groups: the values, checked and converted for the mix (0, or -1 with err: the
     * input is at fault, exit 2). options: the struct the rows filled. */
    int (*check)(const mode_check *ck, void *options, char *err, size_t err_size);
    /* run.json's "settings" keys of these options; NULL: none */
    void (*settings)(const void *options, cJSON *settings);
} mode_options;

struct suite_mode {
    const char *name;            /* "mps", as --mode spells it */
    const char *help;            /* one line: --help, --list and the README's table */
    unsigned flags;
    /* why a data-parallel job over several cards cannot run under this mode beside the cards' runs
     * (run_suite --gpus); NULL: it can (each card's run is one group of job processes, and the go
     * relay joins the groups under one start barrier and one window) */
    const char *no_data_parallel;
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
    /* after plan: the SMs the mix's job `job` will tell its libraries (base/sm_target.h, issue 50)
     * as the rule predicts them; 0: none (the whole device, or a MIG instance, which is its own
     * device); -1: a share whose count needs the device's SMs, its percentage in *percent. NULL:
     * none for every job. The job asks the driver and its setup event says what it told. */
    int (*sm_target)(const suite_ctx *c, int job, int *percent);
    /* after stop: what the mode itself recorded of a job's fault (the MPS server's log line),
     * evidence for the jobs taken down with it; "" when nothing */
    void (*fault_evidence)(const mode_run *r, char *out, size_t size);
    const suite_mode *(*runs_as)(const run_request *o);
    const mode_options *options;  /* the options this mode declares; NULL: none */
    const char *const *takes;     /* groups of options (any mode's) it takes, ending with NULL */
};

/* The table (modes.c). */
const suite_mode *const *suite_modes(int *count);
const suite_mode *suite_mode_find(const char *name);   /* NULL when unknown */
/* The first mode with the flag, NULL when none has it. */
const suite_mode *suite_mode_with(unsigned flag);
/* 1 when name is a mode of the table with every bit of flags, else 0 (--mode all's name too). */
int suite_mode_is(const char *name, unsigned flags);
/* "serial, naive, mps, ..., all" for messages and --help. */
const char *suite_mode_names(void);
/* The mode that runs for m under o: m's runs_as followed to the end. */
const suite_mode *suite_mode_resolve(const suite_mode *m, const run_request *o);

/* The modes' rows as parts of run_suite's one option table (runner/cli.h's cli_table_join): out[i]
 * the rows and struct size of the i-th mode, in table order, that declares options, place[i] its
 * place in the table (the request's mode_options[place[i]] is its struct). Returns how many, or -1
 * with a message (a mode takes a group of options no mode declares). */
int suite_mode_option_parts(cli_part *out, int *place, int max, char *err, size_t err_size);
/* Gives o its own copy of every mode's options (zeroed where it held none), in its memory
 * (run_request_alloc): a request read from a file, or a hop's, which then changes its own. 0, or
 * -1 when out of memory. */
int suite_mode_options_own(run_request *o);
/* The modes' options o sets, as request.json's "mode_options": an object per declaring mode, keyed
 * by its name, of its rows that are set (cli_values_json); and back into o's own copy (its
 * fallbacks first; an unknown mode or option is an error naming it). */
cJSON *suite_mode_options_json(const run_request *o);
int suite_mode_options_from_json(run_request *o, const cJSON *object, char *err, size_t err_size);
/* After the mix: refuses options the mode given (o->mode_name; "all") does not take, runs each
 * mode's check and sets o->mode to the mode that runs (suite_mode_resolve; NULL: all). 0, or -1
 * with the message in err (exit 2). */
int suite_mode_check_options(run_request *o, char *err, size_t err_size);
/* The struct of the options `declarer` declares, for this run; NULL when it declares none. */
void *suite_mode_options(const run_request *o, const suite_mode *declarer);

/* Parts modes share. Plain processes (mode_naive.c): an empty private MPS pipe folder, made by
 * start and removed by stop, keeps them off any MPS daemon; visible is their CUDA_VISIBLE_DEVICES. */
int mode_plain_start(mode_run *r, char *err, size_t err_size);
void mode_plain_stop(mode_run *r);
void mode_plain_env(const mode_run *r, const char *visible, job_env *env);
void mode_plain_job_env(const mode_run *r, int job, job_env *env);   /* on the whole GPU */
/* A mode's run_jobs in the job host (mode_streams.c): its program beside the run's train, its
 * log in the mode's folder; green_sms: each job's partition, or NULL for the whole device. */
group_result mode_host_run(mode_run *r, job_record *jobs, int count, const jobs_settings *settings,
                           const int *green_sms);
/* The run's MPS daemon (mode_mps.c): --mps-pipe's, else one of its own; stopped and reported
 * the same way by every mode that runs on it. */
int mode_mps_start(mode_run *r, struct mps_daemon *d, char *err, size_t err_size);
void mode_mps_stop(struct mps_daemon *d);
void mode_mps_report(const struct mps_daemon *d, cJSON *run_json);
/* The MIG planning options (mode_mig.c; taken by mig, mig-emulate, green): the layout, the table
 * to plan on, the objective, the sweep's layouts, instance creation, emulation. */
typedef struct mode_mig_options {
    const char *layout;           /* --mig-layout: profiles in mix order, or NULL */
    const char *gpu;              /* --mig-gpu: a known GPU's table, or NULL: the GPU's own */
    int objective;                /* mig_objective (mig_plan.h): fill (default) or compact */
    const char *layouts;          /* --mig-layouts: "all" or "L1;L2": the layout sweep (sweep.h) */
    int create;                   /* --mig-create */
    int emulate;                  /* --mig-emulate: mig runs as the MODE_MIG_EMULATION mode */
    int share_memory;             /* --mig-share-memory: the jobs on compute instances of one GPU instance */
} mode_mig_options;
const mode_mig_options *mode_mig_options_of(const run_request *o);
/* *one = o with --mig-layout `layout` (its MIG options in *storage): how a sweep gives a layout. */
void mode_mig_with_layout(const run_request *o, const char *layout, run_request *one,
                          mode_mig_options *storage);
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
/* A MIG plan as run.json and the dry run show it: one object per instance (job, profile,
 * placement, SMs, memory). */
cJSON *mode_mig_plan_json(const struct mig_plan *plan);
/* mig-emulate's runs_as (mode_green.c): green, realising the layout as green contexts, under
 * --via green; else NULL. */
const suite_mode *mode_green_via(const run_request *o);
/* The green-context split the green mode plans with (mode_green.c): `job_host --probe`, the one
 * beside train_path, on the GPU whose CUDA_VISIBLE_DEVICES value is visible. The advisor asks it too,
 * so that it proposes only the splits the mode accepts. 0, or -1 with a message naming the GPU. */
int green_probe_gpu(const char *train_path, const char *visible, struct green_gpu *gpu, char *err, size_t err_size);

#endif
