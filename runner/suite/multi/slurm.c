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
    {"--nodes", "N", "at most N nodes (array tasks) at once", CLI_INT(T, o.max_nodes, 1, 100000)},
    {"--time", "T", "time limit per task (MINUTES, H:MM:SS, D-HH:MM:SS)", CLI_STR(T, o.time_limit)},
    {"--job-name", "NAME", "Slurm job name (default run_suite)", CLI_STR(T, o.job_name)},
    {0}};
#undef T

static const char *const ADDS[] = {"--study", "--ddp-under", NULL};
static int slurm_main(run_args *args);
const run_form slurm_form = {
    .option = "--slurm",
    .help = {.name = "run_suite --slurm",
             .synopsis = "usage: run_suite --slurm (--mix MIX | --mixes 'MIX;MIX;...' | --study SET) [submission options]\n"
                         "                 [run_suite options every task takes: --mode, --quick, --train, ...]\n\n"
                         "One Slurm array task per mix (or study cell), each alone on a whole node (--exclusive),\n"
                         "each writing its own run folder; `run_suite report` merges them.\n",
             .epilogue = "Every other run_suite option (run_suite --help) is taken too: each task is handed the whole\n"
                         "request (<sweep>/task-<i>/request.json), its mix or study cell and its folder its own; --results\n"
                         "is where the sweep folder goes and --dry-run writes the script without submitting it. Task 0's\n"
                         "request is checked with --dry-run before the script is written.\n"
                         "exit status: 0 written or submitted, 1 submission failed, 2 bad input\n"},
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
            char *end;
            ok = count && count != g && strtol(count + 1, &end, 10) > 0 && !*end;
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
    int time_ok = o->time_limit && all_of(o->time_limit, ":-");
    for (const char *p = o->time_limit; time_ok && *p; p++) time_ok = !isalpha((unsigned char)*p);
    if (o->time_limit && !time_ok) {
        snprintf(err, err_size, "--time %s: expected Slurm's time syntax (MINUTES, H:MM:SS, D-HH:MM:SS)", o->time_limit);
        return -1;
    }
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

int slurm_submit(const slurm_options *o, const slurm_sweep *s, int dry_run, char *job_id,
                 size_t job_id_size, char *err, size_t err_size) {
    size_t size = 65536 + (size_t)s->task_count * 1024;
    char *script = malloc(size);
    if (!script) {
        snprintf(err, err_size, "out of memory for the batch script");
        return -1;
    }
    int len = slurm_script(o, s, script, size, err, err_size);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/sweep.sbatch", s->sweep_dir);
    int rc = len < 0 || results_make_dirs(s->sweep_dir, err, err_size) != 0 ||
             results_write_atomic(path, script, (size_t)len, err, err_size) != 0 ? -1 : 0;
    free(script);
    if (rc != 0 || dry_run) return rc;
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

static int usage_error(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "run_suite: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(run_suite --slurm --help lists the options)\n");
    return 2;
}

int slurm_task_request(const run_request *sweep, const char *mix_text, const char *dir, run_request *out, char *err,
                       size_t err_size) {
    *out = *sweep;
    out->memory = NULL;
    out->mix.count = 0;
    out->results_dir = dir;
    out->dry_run = out->json = 0; /* the sweep's --dry-run writes the script; the tasks run */
    const char *kept = run_request_keep(out, mix_text);
    if (!kept || suite_mode_options_own(out) != 0) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    return run_request_set_mix(out, kept, err, err_size);
}

/* Task 0's request as its run_suite will judge it (request_file_dry_check): what no task would
 * accept is refused before the script is written. */
static int check_first_task(const char *self, const run_request *task) {
    char err[2048];
    int rc = request_file_dry_check(self, task, err, sizeof err);
    if (rc < 0) return usage_error("%s%s", err, "");
    if (rc > 0)
        fprintf(stderr, "run_suite: --slurm: the tasks' request is refused (array task 0's checked with --dry-run, "
                "its message is above)\n");
    return rc;
}

/* Each task's request, into <sweep>/task-<i>/request.json; the task's arguments name it. */
static int write_requests(const run_request *sweep, const study_cell *cells, char *const *mixes, int count,
                          const char *sweep_dir, slurm_task *tasks, char paths[][PATH_MAX + 32], const char *self) {
    char err[2048], dir[PATH_MAX + 16];
    for (int i = 0; i < count; i++) {
        run_request one;
        snprintf(dir, sizeof dir, "%s/task-%d", sweep_dir, i);
        int rc = cells ? study_cell_request(sweep, &cells[i], sweep->gpu, NULL, 0, &one, err, sizeof err)
                       : slurm_task_request(sweep, mixes[i], NULL, &one, err, sizeof err);
        const char *kept = rc == 0 ? run_request_keep(&one, dir) : NULL;
        one.results_dir = kept;
        if (rc == 0 && i == 0 && (rc = check_first_task(self, &one)) != 0) {
            run_request_free(&one);
            return rc;
        }
        if (rc == 0 && (!kept || results_make_dirs(dir, err, sizeof err) != 0 ||
                        request_file_write(&one, dir, err, sizeof err) != 0))
            rc = -1;
        run_request_free(&one);
        if (rc != 0) {
            fprintf(stderr, "run_suite: task %d: %s\n", i, err);
            return rc < 0 ? 1 : rc;
        }
        snprintf(paths[i], sizeof paths[i], "%s/%s", dir, REQUEST_FILE_NAME);
        memset(&tasks[i], 0, sizeof tasks[i]);
        tasks[i].args[0] = "--request", tasks[i].args[1] = paths[i];
    }
    return 0;
}

static int slurm_main(run_args *args) {
    const run_request *sweep = &args->req;
    slurm_args *own = args->form_options;
    char err[2048];
    slurm_options o = own->o;
    const char *mix_text = sweep->mix_text, *mixes_text = own->mixes, *study = args->study;
    if (slurm_check_options(&o, err, sizeof err) != 0) return usage_error("%s%s", err, "");
    if (!!mix_text + !!mixes_text + !!study != 1)
        return usage_error("--slurm runs one of --mix MIX, --mixes 'MIX;MIX;...' or --study SET%s%s", "", "");

    static slurm_task tasks[SLURM_MAX_TASKS];
    static study_cell cells[SLURM_MAX_TASKS];
    static char *mixes[SLURM_MAX_TASKS];
    static char mixes_copy[65536], paths[SLURM_MAX_TASKS][PATH_MAX + 32];
    int count = 0;
    if (study) { /* each cell runs under its own mode */
        count = study_cells(study, sweep->quick, NULL, 0, cells, SLURM_MAX_TASKS);
        if (count <= 0) return usage_error("--study %s: unknown set (run_suite --study --help lists them)%s", study, "");
    } else {
        snprintf(mixes_copy, sizeof mixes_copy, "%s", mixes_text ? mixes_text : mix_text);
        char *save = NULL;
        for (char *m = strtok_r(mixes_copy, mixes_text ? ";" : "", &save); m; m = strtok_r(NULL, ";", &save)) {
            while (*m == ' ' || *m == '\t') m++;
            if (!*m) continue;
            static mix parsed;
            if (count == SLURM_MAX_TASKS) return usage_error("--mixes: at most %d mixes%s", "1000", "");
            if (mix_parse(&parsed, m, err, sizeof err) != 0) return usage_error("--mix %s: %s", m, err);
            mixes[count++] = m;
        }
        if (count == 0) return usage_error("--mixes '%s': expected mixes separated by ';', e.g. 'S+M;7*S'%s", mixes_text, "");
    }

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
    int rc = write_requests(sweep, study ? cells : NULL, mixes, count, sweep_dir, tasks, paths, self);
    if (rc != 0) return rc;
    slurm_sweep s = {self, NULL, tasks, count, sweep_dir, workdir};
    char job_id[64] = "";
    if (slurm_submit(&o, &s, sweep->dry_run, job_id, sizeof job_id, err, sizeof err) != 0) {
        fprintf(stderr, "run_suite: %s\n", err);
        return 1;
    }
    if (sweep->dry_run) printf("wrote %s/sweep.sbatch (%d array task(s)); submit it with: sbatch %s/sweep.sbatch\n",
                               sweep_dir, count, sweep_dir);
    else printf("submitted job array %s: %d task(s), one node each; logs %s/task-<i>.out\n", job_id, count, sweep_dir);
    printf("results: %s/task-<i>/<run-id>/; merge them with: run_suite report %s/task-*/*/\n", sweep_dir, sweep_dir);
    return 0;
}
