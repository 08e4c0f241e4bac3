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
 * process per GPU; runner/train/train_launched.h). The job's command is run_suite's own for it, to
 * completion (its dry run with --completion: epochs, steps, data root and train program resolved
 * there), less the runner's protocol, with --launcher slurm in place of --gpus N.
 *
 * Script generation is pure (text in a buffer, tested on the CPU); submission runs `sbatch
 * --parsable` without a shell. */
#ifndef SUITE_SLURM_H
#define SUITE_SLURM_H

#include <stddef.h>

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

/* One array task's own arguments: "--mix S+M", or a study cell's "--mode mps --mix 2*S
 * --steps-per-epoch 40" (NULL-terminated). */
#define SLURM_TASK_ARGS 8
typedef struct slurm_task {
    const char *args[SLURM_TASK_ARGS];
    char text[3][192];               /* storage for args built from a study cell */
} slurm_task;

/* What every array task runs: task i execs `run_suite` with common_args, then tasks[i].args and
 * --results <sweep>/task-<i>. workdir: where relative paths in common_args are meant from. */
typedef struct slurm_sweep {
    const char *run_suite;           /* absolute path of the program the tasks run */
    const char *const *common_args;  /* options passed on to every task (NULL-terminated) */
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

/* What `run_suite --slurm` reads itself: the submission's options and where the tasks come from. */
typedef struct slurm_args {
    slurm_options o;
    const char *mix, *mixes, *study, *results;
    int slurm, dry_run, quick;
} slurm_args;

/* Reads a --slurm command line: the submission's options (--slurm, --partition, --gres, --nodes,
 * --ntasks-per-node, --gpus-per-node, --time, --job-name, --dry-run, --mix, --mixes, --study,
 * --results, --quick) into a, and the
 * options every task repeats (all others, and --quick, as written) into common, NULL-terminated,
 * at most max-1. 0; 1 after --help (printed to stdout); -1 with a message in err. */
int slurm_parse(int argc, char *const argv[], slurm_args *a, const char **common, int max, char *err,
                size_t err_size);

/* Writes <sweep_dir>/sweep.sbatch and, unless dry_run, submits it with `sbatch --parsable`
 * (job id in job_id). 0, or -1 with a message (sbatch missing or refusing: its own words). */
int slurm_submit(const slurm_options *o, const slurm_sweep *s, int dry_run, char *job_id,
                 size_t job_id_size, char *err, size_t err_size);

/* `run_suite --slurm ...` (dispatched before run_suite's own options, as --study is; slurm_requested:
 * argv holds --slurm): the tasks
 * are --mix MIX (one), --mixes 'MIX;MIX;...' (one each) or --study SET (one per study cell); a mix
 * that is one data-parallel job alone is its own multi-node job instead. Every mix is checked, and
 * task 0 and each data-parallel job's command are checked by this run_suite itself and the train
 * program with --dry-run, so an option they would not accept is refused here. Makes
 * <results>/slurm-<time>-<pid>/, writes (--dry-run) or submits the sweep and the data-parallel
 * jobs and prints how to merge. Returns run_suite's exit status: 0, 1 when submission fails, 2 for
 * bad input. */
int slurm_requested(int argc, char *const argv[]);
int slurm_main(int argc, char *const argv[]);

#endif
