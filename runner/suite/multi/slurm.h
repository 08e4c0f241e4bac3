/* run_suite --slurm: a sweep of mixes as one Slurm job array. The sweep folder holds the batch
 * script (sweep.sbatch), each array task's Slurm log (task-<i>.out) and each task's results
 * (task-<i>/<run-id>/, written by the run_suite the task runs). One array task = one mix = one
 * whole GPU node (--exclusive), so collocation measurements are never disturbed by a neighbour;
 * `run_suite report` merges the tasks' run folders (SWEEP/task-N/RUN-ID) afterwards.
 *
 * A mix that is one data-parallel job alone (M[gpus=N]) is no collocation: it is that job trained,
 * spread over nodes as the field's engines run one, and gets a batch script of its own beside the
 * array's (ddp-<k>.sbatch, its log ddp-<k>.out): --nodes nodes of --ntasks-per-node ranks with
 * --gpus-per-node GPUs each, whose N ranks srun starts (`srun train ... --launcher slurm`, one
 * process per GPU; runner/train/train_launched.h). The job's command is made from its request (the
 * sweep's with its mix, run to completion: epochs, steps, data root and train program resolved there)
 * by job_build_argv, less the runner's protocol, with --launcher slurm in place of --gpus N.
 *
 * Script generation is pure (text in a buffer, tested on the CPU); submission runs `sbatch
 * --parsable` without a shell. */
#ifndef SUITE_SLURM_H
#define SUITE_SLURM_H

#include <stddef.h>

#include "runner/suite/run/run_args.h"

#define SLURM_MAX_TASKS 1000

typedef struct slurm_options {
    const char *partition;   /* NULL: the cluster's default partition */
    const char *gres;        /* generic resources per node, "gpu:4" or "gpu:h100:4"; NULL: none */
    int max_nodes;           /* --nodes: nodes in use at once: the array's %N throttle (0: any), and the
                                nodes a data-parallel job spreads over (0: from the options below) */
    int ntasks_per_node;     /* a data-parallel job's ranks per node; 0: from --nodes or --gpus-per-node */
    int gpus_per_node;       /* its GPUs per node; 0: one per rank */
    const char *time_limit;  /* per task, Slurm's syntax ("30", "2:00:00", "1-00:00:00"); NULL: default */
    const char *job_name;    /* NULL: "run_suite" */
} slurm_options;

/* One array task's own arguments (NULL-terminated): "--request <sweep>/task-<i>/request.json". */
#define SLURM_TASK_ARGS 8
typedef struct slurm_task {
    const char *args[SLURM_TASK_ARGS];
} slurm_task;

/* What every array task runs: task i execs `run_suite` with common_args, then tasks[i].args
 * (--request <sweep>/task-<i>/request.json). workdir: where relative paths are meant from. */
typedef struct slurm_sweep {
    const char *run_suite;           /* absolute path of the program the tasks run */
    const char *const *common_args;  /* words every task's run_suite gets before its own (NULL-terminated; NULL:
                                        none, as run_suite --slurm hands each task its whole request) */
    const slurm_task *tasks;
    int task_count;
    const char *sweep_dir;           /* absolute */
    const char *workdir;             /* absolute */
} slurm_sweep;

/* Checks the options' syntax: 0, or -1 with a message naming the option and what is expected. */
int slurm_check_options(const slurm_options *o, char *err, size_t err_size);

/* The batch script. Returns its length, or -1 with a message (too many tasks, buffer too small). */
int slurm_script(const slurm_options *o, const slurm_sweep *s, char *out, size_t size, char *err,
                 size_t err_size);

/* A data-parallel job over nodes: nodes x tasks_per_node ranks, gpus_per_node GPUs per node. */
typedef struct slurm_shape {
    int nodes, tasks_per_node, gpus_per_node;
} slurm_shape;

/* The shape of a job of `ranks` ranks (its gpus=N; label names it in messages) from the options:
 * --nodes and --ntasks-per-node, or either with the other following from the ranks, else
 * --gpus-per-node ranks per node, else every rank on one node; --gpus-per-node defaults to the
 * ranks per node and may not be fewer (each rank trains on a GPU of its own). Pure. 0, or -1 with
 * a message naming the options and the job. */
int slurm_ddp_shape(const slurm_options *o, int ranks, const char *label, slurm_shape *shape, char *err,
                    size_t err_size);

/* One data-parallel job's batch script: train_argv is one rank's command (the program first,
 * NULL-terminated; srun starts every rank with it), label the mix in the comment, index k its
 * ddp-<k> name in sweep_dir. Pure. Returns its length, or -1 with a message (buffer too small). */
int slurm_ddp_script(const slurm_options *o, const slurm_shape *shape, const char *const *train_argv,
                     const char *label, int index, const char *sweep_dir, const char *workdir, char *out, size_t size,
                     char *err, size_t err_size);

/* What the --slurm form's own rows fill: the submission's options and the tasks' mixes (--mixes;
 * --mix and --study are the run's, every other option the tasks' request). */
typedef struct slurm_args {
    slurm_options o;
    const char *mixes;
} slurm_args;

/* Writes <sweep_dir>/sweep.sbatch and, unless dry_run, submits it with `sbatch --parsable`
 * (job id in job_id). 0, or -1 with a message (sbatch missing or refusing: its own words). */
int slurm_submit(const slurm_options *o, const slurm_sweep *s, int dry_run, char *job_id,
                 size_t job_id_size, char *err, size_t err_size);

/* The program form `run_suite --slurm ...` (run_args.h): the tasks are --mix MIX (one), --mixes
 * 'MIX;MIX;...' (one each) or --study SET (one per study cell); a mix that is one data-parallel job
 * alone is its own multi-node job instead, its command made from its request run to completion
 * and checked by the train program with --dry-run. Every mix is checked, and task 0's request here
 * and by this run_suite's dry run of it, so a request no task would accept is refused before the
 * script is written. Makes <results>/slurm-<time>-<pid>/ with each task's request
 * (task-<i>/request.json: the whole request, its mix or cell and its folder its own), writes
 * (--dry-run) or submits the sweep and prints how to merge. Its main returns run_suite's exit
 * status: 0, 1 when submission fails, 2 for bad input. */
extern const run_form slurm_form;

/* The hop to a task of mixes: the sweep's request with the task's jobs (mix_text, kept in out) and
 * folder (dir; NULL: the sweep's), run rather than written as a script (no --dry-run). out owns its memory
 * (run_request_free). 0, or -1 with the mix's message. */
int slurm_task_request(const run_request *sweep, const char *mix_text, const char *dir, run_request *out, char *err,
                       size_t err_size);

#endif
