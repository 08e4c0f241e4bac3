/* run_suite --slurm: the batch script of a sweep and its submission (see slurm.h). */
#define _GNU_SOURCE
#include "runner/suite/multi/slurm.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/list.h"
#include "base/number.h"
#include "base/output_path.h"
#include "base/quote.h"
#include "kernels/knobs.h"
#include "results/results.h"
#include "runner/cli.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/modes/mode.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/multi/study.h"
#include "runner/suite/run/request_check.h"
#include "runner/suite/run/request_file.h"

/* The --slurm form's own rows: the tasks' mixes and the submission; every run option is the run's,
 * and the tasks get the request whole (each its own mix, or its study cell, and its folder). */
#define T slurm_args
static const cli_option OPTIONS[] = {
    {"--mixes", "'MIX;MIX;...'", "one task per mix (--mix MIX: one task)", CLI_STR(T, mixes)},
    {"--partition", "P", "partition(s) (default: the cluster's default)", CLI_STR(T, o.partition)},
    {"--gres", "G", "generic resources per node, e.g. gpu:4 or gpu:h100:8", CLI_STR(T, o.gres)},
    {"--nodes", "N", "nodes in use at once: at most N array tasks; a data-parallel job alone in a mix (M[gpus=N]): "
     "its nodes", CLI_INT(T, o.max_nodes, 1, 100000)},
    {"--ntasks-per-node", "N", "a data-parallel job alone in a mix: its ranks per node (default: --gpus-per-node, "
     "else every rank on one node)", CLI_INT(T, o.ntasks_per_node, 1, 4096)},
    {"--gpus-per-node", "N", "a data-parallel job alone in a mix: GPUs per node (default: one per rank)",
     CLI_INT(T, o.gpus_per_node, 1, 4096)},
    {"--time", "T", "time limit per task (MINUTES, H:MM:SS, D-HH:MM:SS)", CLI_STR(T, o.time_limit)},
    {"--job-name", "NAME", "Slurm job name (default run_suite)", CLI_STR(T, o.job_name)},
    {0}};
#undef T

static const char *const ADDS[] = {"--study", "--ddp-under", NULL};
#define SLURM_SYNOPSIS                                                                                   \
    "usage: run_suite --slurm (--mix MIX | --mixes 'MIX;MIX;...' | --study SET) [submission options]\n" \
    "                 [run_suite options every task takes: --mode, --quick, --train, ...]\n\n"           \
    "One Slurm array task per mix (or study cell), each alone on a whole node (--exclusive),\n"          \
    "each writing its own run folder; `run_suite report` merges them. A mix that is one\n"               \
    "data-parallel job alone (M[gpus=N]) is instead that job over nodes: srun starts its N\n"            \
    "ranks (train --launcher slurm), from a batch script of its own (ddp-<k>.sbatch).\n"
#define SLURM_EPILOGUE                                                                                   \
    "Every other run_suite option (run_suite --help) is taken too: each task is handed the whole\n"      \
    "request (<sweep>/task-<i>/request.json), its mix or study cell and its folder its own; --results\n" \
    "is where the sweep folder goes and --dry-run writes the scripts without submitting them. Task\n"   \
    "0's request is checked with --dry-run before the script is written.\n"                             \
    "exit status: 0 written or submitted, 1 submission failed, 2 bad input\n"
static int slurm_main(run_args *args);
const run_form slurm_form = {
    .option = "--slurm",
    .help = {.name = "run_suite --slurm", .synopsis = SLURM_SYNOPSIS, .epilogue = SLURM_EPILOGUE},
    .rows = OPTIONS,
    .size = sizeof(slurm_args),
    .adds = ADDS,
    .main = slurm_main,
};

static int all_of(const char *text, const char *extra) {
    if (!text || !*text) return 0;
    for (const char *p = text; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(extra, *p)) return 0;
    return 1;
}

/* One field of Slurm's time grammar: digits (zero-padded or not, as clocks are written), read by the
 * number rule once the padding is off, from lo to hi. */
static int time_field(const char *name, const char *p, size_t n, double lo, double hi, long long *out, char *why,
                      size_t why_size) {
    while (n > 1 && *p == '0' && p[1] >= '0' && p[1] <= '9') p++, n--;
    return number_parse(NUMBER_WHOLE, lo, hi, name, p, n, out, NULL, why, why_size);
}

/* --time: MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, DAYS-HOURS, DAYS-HOURS:MINUTES or
 * DAYS-HOURS:MINUTES:SECONDS (sbatch(1)), each field in its range and the whole more than nothing
 * (Slurm reads 0 as no limit: leave --time out for that). */
static int time_limit_check(const char *text, char *err, size_t err_size) {
    char shown[QUOTE_SHOWN * 4 + 48], why[512] = "";
    const char *dash = strchr(text, '-'), *clock = dash ? dash + 1 : text;
    list_entry f[3];
    long long days = 0, v[3] = {0, 0, 0};
    int n = -1, ok = 1;
    if (dash) ok = time_field("days", text, (size_t)(dash - text), 0, 365, &days, why, sizeof why) == 0;
    if (ok) n = list_split("fields", clock, ':', f, 3, why, sizeof why);
    ok = ok && n > 0;
    /* without days: M, M:S or H:M:S; with them: H, H:M or H:M:S */
    static const char *const names[2][3][3] = {{{"minutes"}, {"minutes", "seconds"}, {"hours", "minutes", "seconds"}},
                                               {{"hours"}, {"hours", "minutes"}, {"hours", "minutes", "seconds"}}};
    for (int i = 0; ok && i < n; i++) {
        const char *name = names[dash != NULL][n - 1][i];
        double hi = i == 0 && !dash ? (n == 3 ? 87600 : 5256000) : name[0] == 'h' ? 23 : 59;
        ok = time_field(name, f[i].at, f[i].len, 0, hi, &v[i], why, sizeof why) == 0;
    }
    if (ok && days + v[0] + v[1] + v[2] > 0) return 0;
    snprintf(err, err_size, "--time %s: expected Slurm's time limit (MINUTES, MINUTES:SECONDS, HOURS:MINUTES:SECONDS, "
             "DAYS-HOURS[:MINUTES[:SECONDS]]) of more than nothing%s%s",
             quote_text(shown, sizeof shown, '\'', text, strlen(text)), why[0] ? "; " : "", why);
    return -1;
}

int slurm_check_options(const slurm_options *o, char *err, size_t err_size) {
    if (o->partition && !all_of(o->partition, "_-.,")) {
        snprintf(err, err_size, "--partition %s: expected partition names (letters, digits, _-. and commas)", o->partition);
        return -1;
    }
    /* name[:type]:count, e.g. gpu:4 or gpu:h100:4; several joined by commas */
    if (o->gres) {
        int ok = all_of(o->gres, "_-.,:");
        char *copy = strdup(o->gres), *save = NULL;
        for (char *g = copy ? strtok_r(copy, ",", &save) : NULL; ok && g; g = strtok_r(NULL, ",", &save)) {
            char *count = strrchr(g, ':');
            long long n;
            ok = count && count != g && number_whole("count", count + 1, 1, 4096, &n, NULL, 0) == 0;
        }
        free(copy);
        if (!ok) {
            snprintf(err, err_size, "--gres %s: expected NAME[:TYPE]:COUNT per node, e.g. gpu:4 or gpu:h100:8", o->gres);
            return -1;
        }
    }
    if (o->max_nodes < 0) {
        snprintf(err, err_size, "--nodes %d: expected a positive number of nodes", o->max_nodes);
        return -1;
    }
    if (o->ntasks_per_node < 0 || o->gpus_per_node < 0) {
        snprintf(err, err_size, "%s %d: expected a positive number per node",
                 o->ntasks_per_node < 0 ? "--ntasks-per-node" : "--gpus-per-node",
                 o->ntasks_per_node < 0 ? o->ntasks_per_node : o->gpus_per_node);
        return -1;
    }
    if (o->time_limit && time_limit_check(o->time_limit, err, err_size) != 0) return -1;
    if (o->job_name && !all_of(o->job_name, "_-.+")) {
        snprintf(err, err_size, "--job-name %s: expected letters, digits and _-.+", o->job_name);
        return -1;
    }
    return 0;
}

/* The script is built in one buffer; an overflow is remembered and reported once at the end. */
typedef struct text {
    char *out;
    size_t size, len;
    int overflow;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
    if (t->overflow) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->out + t->len, t->size - t->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= t->size - t->len) t->overflow = 1;
    else t->len += (size_t)n;
}

/* One word for the shell: single quotes, a quote inside as '\''. */
static void put_quoted(text *t, const char *word) {
    put(t, "'");
    for (const char *p = word; *p; p++) {
        if (*p == '\'') put(t, "'\\''");
        else put(t, "%c", *p);
    }
    put(t, "'");
}

int slurm_script(const slurm_options *o, const slurm_sweep *s, char *out, size_t size, char *err,
                 size_t err_size) {
    if (s->task_count < 1 || s->task_count > SLURM_MAX_TASKS) {
        snprintf(err, err_size, "a sweep holds 1 to %d tasks, not %d", SLURM_MAX_TASKS, s->task_count);
        return -1;
    }
    text t = {out, size, 0, 0};
    if (size) out[0] = 0;
    put(&t, "#!/bin/bash\n");
    put(&t, "#SBATCH --job-name=%s\n", o->job_name ? o->job_name : "run_suite");
    put(&t, "#SBATCH --array=0-%d", s->task_count - 1);
    if (o->max_nodes > 0) put(&t, "%%%d", o->max_nodes);
    put(&t, "\n#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --exclusive\n");
    if (o->partition) put(&t, "#SBATCH --partition=%s\n", o->partition);
    if (o->gres) put(&t, "#SBATCH --gres=%s\n", o->gres);
    if (o->time_limit) put(&t, "#SBATCH --time=%s\n", o->time_limit);
    /* #SBATCH lines are not read by a shell: paths go unquoted, so they must hold no blank */
    put(&t, "#SBATCH --chdir=%s\n#SBATCH --output=%s/task-%%a.out\n", s->workdir, s->sweep_dir);
    put(&t, "# Written by run_suite --slurm: array task i runs its own mix alone on a whole node, handed its\n"
            "# request (task-i/request.json next to this script), and writes its run folder under task-i/;\n"
            "# `run_suite report` merges them.\n");
    put(&t, "set -euo pipefail\nexport NCCL_NVLS_ENABLE=0\n");
    put(&t, "case \"${SLURM_ARRAY_TASK_ID:?not run as a Slurm array task}\" in\n");
    for (int i = 0; i < s->task_count; i++) {
        put(&t, "  %d) set --", i);
        for (int k = 0; k < SLURM_TASK_ARGS && s->tasks[i].args[k]; k++) {
            put(&t, " ");
            put_quoted(&t, s->tasks[i].args[k]);
        }
        put(&t, " ;;\n");
    }
    put(&t, "  *) echo \"no task $SLURM_ARRAY_TASK_ID in this sweep\" >&2; exit 2 ;;\nesac\nexec ");
    put_quoted(&t, s->run_suite);
    for (const char *const *a = s->common_args; a && *a; a++) {
        put(&t, " ");
        put_quoted(&t, *a);
    }
    put(&t, " \"$@\"\n");
    if (t.overflow) {
        snprintf(err, err_size, "the batch script of %d tasks exceeds %zu bytes", s->task_count, size);
        return -1;
    }
    return (int)t.len;
}

int slurm_ddp_shape(const slurm_options *o, int ranks, const char *label, slurm_shape *shape, char *err,
                    size_t err_size) {
    int nodes = o->max_nodes, per_node = o->ntasks_per_node;
    if (nodes > 0 && per_node > 0 && nodes * per_node != ranks) {
        snprintf(err, err_size, "%s: --nodes %d x --ntasks-per-node %d is %d ranks, but the job has %d (gpus=%d)", label,
                 nodes, per_node, nodes * per_node, ranks, ranks);
        return -1;
    }
    const char *by = nodes > 0 ? "--nodes" : per_node > 0 ? "--ntasks-per-node" : "--gpus-per-node";
    int divisor = nodes > 0 ? nodes : per_node > 0 ? per_node : o->gpus_per_node > 0 ? o->gpus_per_node : ranks;
    if (ranks % divisor) {
        snprintf(err, err_size, "%s: its %d ranks (gpus=%d) do not divide evenly by %s %d", label, ranks, ranks, by,
                 divisor);
        return -1;
    }
    if (nodes > 0) per_node = ranks / nodes;
    else if (per_node <= 0) per_node = divisor;
    nodes = ranks / per_node;
    int gpus = o->gpus_per_node > 0 ? o->gpus_per_node : per_node;
    if (gpus < per_node) {
        snprintf(err, err_size, "%s: --gpus-per-node %d is fewer than its %d ranks per node: each rank trains on a GPU of "
                 "its own", label, gpus, per_node);
        return -1;
    }
    *shape = (slurm_shape){nodes, per_node, gpus};
    return 0;
}

int slurm_ddp_script(const slurm_options *o, const slurm_shape *shape, const char *const *train_argv,
                     const char *label, int index, const char *sweep_dir, const char *workdir, char *out, size_t size,
                     char *err, size_t err_size) {
    text t = {out, size, 0, 0};
    if (size) out[0] = 0;
    int ranks = shape->nodes * shape->tasks_per_node;
    put(&t, "#!/bin/bash\n#SBATCH --job-name=%s\n", o->job_name ? o->job_name : "run_suite-ddp");
    put(&t, "#SBATCH --nodes=%d\n#SBATCH --ntasks-per-node=%d\n#SBATCH --gpus-per-node=%d\n#SBATCH --exclusive\n",
        shape->nodes, shape->tasks_per_node, shape->gpus_per_node);
    if (o->partition) put(&t, "#SBATCH --partition=%s\n", o->partition);
    if (o->time_limit) put(&t, "#SBATCH --time=%s\n", o->time_limit);
    put(&t, "#SBATCH --chdir=%s\n#SBATCH --output=%s/ddp-%d.out\n", workdir, sweep_dir, index);
    put(&t, "# Written by run_suite --slurm: the data-parallel job %s as %d ranks over %d node(s), %d per node,\n"
            "# one process per GPU started by srun (train --launcher slurm: each on GPU SLURM_LOCALID of its node).\n"
            "# Rank 0 runs on the first node and hands NCCL's id to the others over TCP (port MASTER_PORT, else\n"
            "# derived from SLURM_JOB_ID); its lines in this job's log are the job's, the other ranks speak only to\n"
            "# fail; a rank that dies ends every other one, naming it.\n",
        label, ranks, shape->nodes, shape->tasks_per_node);
    put(&t, "set -euo pipefail\nexport NCCL_NVLS_ENABLE=0\nexec srun");
    for (const char *const *a = train_argv; *a; a++) {
        put(&t, " ");
        put_quoted(&t, *a);
    }
    put(&t, "\n");
    if (t.overflow) {
        snprintf(err, err_size, "the batch script of %s exceeds %zu bytes", label, size);
        return -1;
    }
    return (int)t.len;
}

/* Writes the script (len bytes; len < 0: its making failed, err says why) to dir/name and, unless
 * dry_run, submits it with `sbatch --parsable`. 0, or -1 with a message. */
static int write_and_submit(const char *dir, const char *name, const char *script, int len, int dry_run,
                            char *job_id, size_t job_id_size, char *err, size_t err_size) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (len < 0 || results_make_dirs(dir, err, err_size) != 0 ||
        results_write_atomic(path, script, (size_t)len, err, err_size) != 0)
        return -1;
    if (dry_run) return 0;
    char sbatch[PATH_MAX], out[256];
    if (jobs_find_program("sbatch", sbatch, sizeof sbatch) != 0) {
        snprintf(err, err_size, "sbatch is not on PATH (install Slurm's client, e.g. apt-get install "
                 "slurm-client); the script is written: %s", path);
        return -1;
    }
    char *const argv[] = {sbatch, "--parsable", path, NULL};
    int status = jobs_run_capture(argv, NULL, NULL, out, sizeof out, 120.0);
    if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        snprintf(err, err_size, "%s --parsable %s %s (its message is above)", sbatch, path,
                 status == -2 ? "took over 120 s" : status < 0 ? strerror(errno) : "failed");
        return -1;
    }
    /* "12345" or "12345;cluster" */
    out[strcspn(out, ";\r\n")] = 0;
    if (!out[0] || !all_of(out, "_")) {
        snprintf(err, err_size, "sbatch printed no job id (got '%s')", out);
        return -1;
    }
    snprintf(job_id, job_id_size, "%s", out);
    return 0;
}

int slurm_submit(const slurm_options *o, const slurm_sweep *s, int dry_run, char *job_id,
                 size_t job_id_size, char *err, size_t err_size) {
    size_t size = 65536 + (size_t)s->task_count * 1024;
    char *script = malloc(size);
    if (!script) {
        snprintf(err, err_size, "out of memory for the batch script");
        return -1;
    }
    int len = slurm_script(o, s, script, size, err, err_size);
    int rc = write_and_submit(s->sweep_dir, "sweep.sbatch", script, len, dry_run, job_id, job_id_size, err, err_size);
    free(script);
    return rc;
}

static int usage_error(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "run_suite: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(run_suite --slurm --help lists the options)\n");
    return 2;
}

/* What the login node checks of each task, and what it leaves to the compute node (said with every
 * script written or submitted). */
#define SLURM_CHECKED_HERE                                                                                   \
    "checked here, for every task: the options, its mix, the plans, the paths, --baseline; left to each node: " \
    "that its GPUs exist and the footprints fit their memory (unless SUITE_GPU_MEMORY says it here), MIG mode, " \
    "an --mps-pipe daemon"

int slurm_task_request(const run_request *sweep, const char *mix_text, const char *dir, run_request *out, char *err,
                       size_t err_size) {
    *out = *sweep;
    out->memory = NULL;
    out->mix.count = 0;
    if (dir) out->results_dir = dir;
    out->dry_run = out->json = 0; /* the sweep's --dry-run writes the script; the tasks run */
    const char *kept = run_request_keep(out, mix_text);
    if (!kept || suite_mode_options_own(out) != 0) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    return run_request_set_mix(out, kept, err, err_size);
}

/* Task i's request: the sweep's with its mix or study cell, its folder <sweep>/task-<i>. */
static int task_request(const run_request *sweep, const study_cell *cells, char *const *mixes, int i,
                        const char *sweep_dir, run_request *one, char *err, size_t err_size) {
    char dir[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/task-%d", sweep_dir, i);
    int rc = cells ? study_cell_request(sweep, &cells[i], sweep->gpu, NULL, 0, one, err, err_size)
                   : slurm_task_request(sweep, mixes[i], NULL, one, err, err_size);
    const char *kept = rc == 0 ? run_request_keep(one, dir) : NULL;
    one->results_dir = kept;
    if (rc == 0 && !kept) {
        snprintf(err, err_size, "out of memory");
        rc = -1;
    }
    return rc;
}

/* Every task's request as its run_suite will judge it (request_file_dry_check), on this login node:
 * what needs the compute node is left to it (SUITE_NODE_CHECKS=later). No script is written, and no
 * request, while any task would be refused. */
static int check_tasks(const run_request *sweep, const study_cell *cells, char *const *mixes, int count,
                       const char *sweep_dir, const char *self) {
    char err[2048];
    setenv(knob_name(KNOB_NODE_CHECKS), "later", 1);
    int rc = 0, t = 0;
    for (; rc == 0 && t < count; t++) {
        run_request one;
        rc = task_request(sweep, cells, mixes, t, sweep_dir, &one, err, sizeof err);
        if (rc == 0) rc = request_file_dry_check(self, &one, err, sizeof err);
        run_request_free(&one);
    }
    unsetenv(knob_name(KNOB_NODE_CHECKS));
    if (rc < 0) return usage_error("%s%s", err, "");
    if (rc > 0)
        fprintf(stderr, "run_suite: --slurm: array task %d is refused (checked with --dry-run, its message is above)\n",
                t - 1);
    return rc;
}

/* Each task's request, into <sweep>/task-<i>/request.json; the task's arguments name it. */
static int write_requests(const run_request *sweep, const study_cell *cells, char *const *mixes, int count,
                          const char *sweep_dir, slurm_task *tasks, char paths[][PATH_MAX + 32]) {
    char err[2048];
    for (int i = 0; i < count; i++) {
        run_request one;
        int rc = task_request(sweep, cells, mixes, i, sweep_dir, &one, err, sizeof err);
        if (rc == 0 && (results_make_dirs(one.results_dir, err, sizeof err) != 0 ||
                        request_file_write(&one, one.results_dir, err, sizeof err) != 0))
            rc = -1;
        if (rc == 0) snprintf(paths[i], sizeof paths[i], "%s/%s", one.results_dir, REQUEST_FILE_NAME);
        run_request_free(&one);
        if (rc != 0) {
            fprintf(stderr, "run_suite: task %d: %s\n", i, err);
            return 1;
        }
        memset(&tasks[i], 0, sizeof tasks[i]);
        tasks[i].args[0] = "--request", tasks[i].args[1] = paths[i];
    }
    return 0;
}

/* A mix that is one data-parallel job alone, and that job's command under srun. */
typedef struct ddp_job {
    const char *mix;
    int ranks;
    slurm_shape shape;
    char **argv;            /* one rank's command (malloc'd, NULL-terminated) */
} ddp_job;

static void free_argv(char **argv) {
    for (char **a = argv; a && *a; a++) free(*a);
    free(argv);
}

/* The job's train command as srun's tasks run it: made from its request (the sweep's with its mix,
 * run to completion: run_request_settle again for the measurement it changes, then request_check)
 * by job_build_argv, less the runner's protocol (--json, --wait-go: no runner reads the events or
 * opens the barrier under srun), with --launcher slurm in place of --gpus N (srun starts the N
 * ranks); then the train program's own dry run of it. 0, or the exit status after a message. */
static int ddp_command(const run_args *args, ddp_job *j) {
    run_request one;
    char err[2048];
    if (run_args_window_given(args))
        return usage_error("the data-parallel job %s runs to completion: --window, --windows and --warmup-steps are "
                           "the window measurement's%s", j->mix, "");
    if (args->req.kernels)
        return usage_error("the data-parallel job %s runs to completion: --kernels traces a window after the window "
                           "measurement's%s", j->mix, "");
    int rc = slurm_task_request(&args->req, j->mix, NULL, &one, err, sizeof err);
    if (rc == 0) {
        one.completion = 1;
        run_request_settle(&one, &args->given, 0);
        rc = request_check(&one, err, sizeof err);
    }
    char **words = rc == 0 ? job_build_argv(&one, &one.mix.jobs[0], JOB_ARGV_RUN, NULL) : NULL;
    run_request_free(&one);
    if (rc != 0) {
        fprintf(stderr, "run_suite: --slurm: the data-parallel job %s: %s\n", j->mix, err);
        return 2;
    }
    int count = 0, k = 0, ok = words != NULL;
    while (words && words[count]) count++;
    j->argv = calloc((size_t)count + 2, sizeof *j->argv);
    for (int i = 0; ok && j->argv && i < count; i++) {
        if (!strcmp(words[i], "--json") || !strcmp(words[i], "--wait-go")) continue;
        if (!strcmp(words[i], "--gpus") && i + 1 < count) {
            j->argv[k++] = strdup("--launcher"), j->argv[k++] = strdup("slurm");
            i++;
        } else {
            j->argv[k++] = strdup(words[i]);
        }
    }
    job_free_strv(words);
    for (int i = 0; i < k; i++) ok &= j->argv[i] != NULL;
    if (!ok || !j->argv) {
        fprintf(stderr, "run_suite: --slurm: out of memory for the command of %s\n", j->mix);
        return 1;
    }
    /* the train program judges the command as each rank will run it */
    const char *check[300];
    int n;
    static char out[1 << 16];
    for (n = 0; j->argv[n] && n < 296; n++) check[n] = j->argv[n];
    check[n++] = "--dry-run", check[n++] = "--json", check[n] = NULL;
    int status = jobs_run_capture((char *const *)check, NULL, NULL, out, sizeof out, 300.0);
    if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    fprintf(stderr, "run_suite: --slurm: %s refuses the data-parallel job %s as srun would start it (its message is "
            "above)\n", j->argv[0], j->mix);
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static int slurm_main(run_args *args) {
    const run_request *sweep = &args->req;
    slurm_args *own = args->form_options;
    char err[2048];
    slurm_options o = own->o;
    const char *mix_text = sweep->mix_text, *mixes_text = own->mixes, *study = args->study;
    int dry_run = sweep->dry_run;
    if (slurm_check_options(&o, err, sizeof err) != 0) return usage_error("%s%s", err, "");
    /* the rule of every output (base/output_path.h), before any script: bad input, exit 2 */
    const output_path_rule rule = {"--results", OUTPUT_PATH_FOLDER, NULL, NULL};
    if (output_path_check(&rule, sweep->results_dir, err, sizeof err) != 0) return usage_error("%s%s", err, "");
    if (!!mix_text + !!mixes_text + !!study != 1)
        return usage_error("--slurm runs one of --mix MIX, --mixes 'MIX;MIX;...' or --study SET%s%s", "", "");

    static slurm_task tasks[SLURM_MAX_TASKS];
    static study_cell cells[SLURM_MAX_TASKS];
    static ddp_job ddp[SLURM_MAX_TASKS];
    static char *mixes[SLURM_MAX_TASKS];
    static char mixes_copy[65536], paths[SLURM_MAX_TASKS][PATH_MAX + 32];
    int count = 0, ddp_count = 0;
    if (study) { /* each cell runs under its own mode */
        count = study_cells(study, sweep->quick, NULL, 0, cells, SLURM_MAX_TASKS);
        if (count <= 0) return usage_error("--study %s: unknown set (run_suite --study --help lists them)%s", study, "");
    } else {
        snprintf(mixes_copy, sizeof mixes_copy, "%s", mixes_text ? mixes_text : mix_text);
        /* the list rule of every grammar (base/list.h): an empty mix is refused, never dropped */
        static list_entry entries[SLURM_MAX_TASKS];
        int listed = mixes_text ? list_split("--mixes", mixes_copy, ';', entries, SLURM_MAX_TASKS, err, sizeof err)
                                : (entries[0] = (list_entry){mixes_copy, strlen(mixes_copy)}, 1);
        if (listed < 0) return usage_error("%s%s", err, "");
        for (int e = 0; e < listed; e++) {
            char *m = (char *)entries[e].at;
            m[entries[e].len] = 0; /* the entries lie in mixes_copy, which outlives the tasks */
            while (*m == ' ' || *m == '\t') m++; /* the task's --mix as the mix reads it */
            for (char *end = m + strlen(m); end > m && (end[-1] == ' ' || end[-1] == '\t');) *--end = 0;
            static mix parsed;
            if (mix_parse(&parsed, m, err, sizeof err) != 0) return usage_error("%s%s", err, ""); /* it names the mix */
            if (parsed.count == 1 && parsed.jobs[0].gpus > 1) { /* a data-parallel job alone: over nodes */
                ddp_job *j = &ddp[ddp_count++];
                *j = (ddp_job){.mix = m, .ranks = parsed.jobs[0].gpus};
                if (slurm_ddp_shape(&o, j->ranks, m, &j->shape, err, sizeof err) != 0) return usage_error("%s%s", err, "");
                continue;
            }
            mixes[count++] = m;
        }

    }
    if (!ddp_count && (o.ntasks_per_node || o.gpus_per_node))
        return usage_error("%s shapes a data-parallel job's nodes: give a mix that is one data-parallel job alone, "
                           "e.g. --mix 'M[gpus=8]'%s", o.ntasks_per_node ? "--ntasks-per-node" : "--gpus-per-node", "");

    char workdir[PATH_MAX], base[PATH_MAX], sweep_dir[PATH_MAX + 64], stamp[32];
    const char *self = args->self;
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
    if (!self[0] || !getcwd(workdir, sizeof workdir)) {
        fprintf(stderr, "run_suite: cannot resolve the program's or the working folder's path: %s\n", strerror(errno));
        return 1;
    }
    const char *results = sweep->results_dir;
    if (results[0] == '/') snprintf(base, sizeof base, "%s", results);
    else snprintf(base, sizeof base, "%s/%s", workdir, results);
    snprintf(sweep_dir, sizeof sweep_dir, "%s/slurm-%s-%d", base, stamp, (int)getpid());
    /* #SBATCH lines cannot quote: a blank in a path would cut the option */
    if (strpbrk(sweep_dir, " \t\n'\"") || strpbrk(workdir, " \t\n'\""))
        return usage_error("--slurm needs folders without blanks or quotes: %s, %s", workdir, sweep_dir);
    int rc = 0;
    for (int k = 0; rc == 0 && k < ddp_count; k++) rc = ddp_command(args, &ddp[k]);
    if (rc == 0 && count) rc = check_tasks(sweep, study ? cells : NULL, mixes, count, sweep_dir, self);
    if (rc == 0 && count) rc = write_requests(sweep, study ? cells : NULL, mixes, count, sweep_dir, tasks, paths);
    if (rc == 0 && count) {
        slurm_sweep s = {self, NULL, tasks, count, sweep_dir, workdir};
        char job_id[64] = "";
        if (slurm_submit(&o, &s, dry_run, job_id, sizeof job_id, err, sizeof err) != 0) {
            fprintf(stderr, "run_suite: %s\n", err);
            rc = 1;
        } else if (dry_run) {
            printf("wrote %s/sweep.sbatch (%d array task(s)); submit it with: sbatch %s/sweep.sbatch\n", sweep_dir, count,
                   sweep_dir);
        } else {
            printf("submitted job array %s: %d task(s), one node each; logs %s/task-<i>.out\n", job_id, count, sweep_dir);
        }
        if (rc == 0)
            printf("results: %s/task-<i>/<run-id>/; merge them with: run_suite report %s/task-*/*/\n", sweep_dir,
                   sweep_dir);
    }
    static char script[65536];
    for (int k = 0; rc == 0 && k < ddp_count; k++) {
        ddp_job *j = &ddp[k];
        char name[32], job_id[64] = "";
        snprintf(name, sizeof name, "ddp-%d.sbatch", k);
        int len = slurm_ddp_script(&o, &j->shape, (const char *const *)j->argv, j->mix, k, sweep_dir, workdir, script,
                                   sizeof script, err, sizeof err);
        if (write_and_submit(sweep_dir, name, script, len, dry_run, job_id, sizeof job_id, err, sizeof err) != 0) {
            fprintf(stderr, "run_suite: %s\n", err);
            rc = 1;
        } else if (dry_run) {
            printf("wrote %s/%s (%s: %d ranks over %d node(s)); submit it with: sbatch %s/%s\n", sweep_dir, name, j->mix,
                   j->ranks, j->shape.nodes, sweep_dir, name);
        } else {
            printf("submitted data-parallel job %s: %s as %d ranks over %d node(s); log %s/ddp-%d.out\n", job_id,
                   j->mix, j->ranks, j->shape.nodes, sweep_dir, k);
        }
    }
    for (int k = 0; k < ddp_count; k++) free_argv(ddp[k].argv);
    if (rc == 0) printf("%s\n", SLURM_CHECKED_HERE);
    return rc;
}
