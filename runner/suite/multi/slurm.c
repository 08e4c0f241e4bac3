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

#include "results/results.h"
#include "runner/cli.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/multi/study.h"

#define T slurm_args
static const cli_option OPTIONS[] = {
    {"--slurm", NULL, "the tasks as one Slurm job array", CLI_FLAG(T, slurm, 1)},
    {"--mix", "MIX", "one task: this mix", CLI_STR(T, mix)},
    {"--mixes", "'MIX;MIX;...'", "one task per mix", CLI_STR(T, mixes)},
    {"--study", "SET", "one task per cell of the study's set (run_suite --study --help)", CLI_STR(T, study)},
    {"--partition", "P", "partition(s) (default: the cluster's default)", CLI_STR(T, o.partition)},
    {"--gres", "G", "generic resources per node, e.g. gpu:4 or gpu:h100:8", CLI_STR(T, o.gres)},
    {"--nodes", "N", "at most N nodes (array tasks) at once", CLI_INT(T, o.max_nodes, 1, 100000)},
    {"--time", "T", "time limit per task (MINUTES, H:MM:SS, D-HH:MM:SS)", CLI_STR(T, o.time_limit)},
    {"--job-name", "NAME", "Slurm job name (default run_suite)", CLI_STR(T, o.job_name)},
    {"--results", "DIR", "where the sweep folder goes", CLI_STR(T, results), .fallback = RESULTS_DEFAULT_DIR},
    {"--dry-run", NULL, "write the batch script only; submit nothing", CLI_FLAG(T, dry_run, 1)},
    {"--quick", NULL, "every task's run a smoke test; with --study, the quick matrix", CLI_FLAG(T, quick, 1),
     .forward = 1},
    {0}};
#undef T

static const cli_program PROGRAM = {
    .name = "run_suite --slurm",
    .synopsis = "usage: run_suite --slurm (--mix MIX | --mixes 'MIX;MIX;...' | --study SET) [submission options]\n"
                "                 [run_suite options every task repeats: --mode, --quick, --train, ...]\n\n"
                "One Slurm array task per mix (or study cell), each alone on a whole node (--exclusive),\n"
                "each writing its own run folder; `run_suite report` merges them.\n",
    .epilogue = "Every other option is passed on to each task's run_suite (run_suite --help lists them); task 0's\n"
                "are checked with --dry-run before the script is written.\n"
                "exit status: 0 written or submitted, 1 submission failed, 2 bad input\n",
    .options = OPTIONS,
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
    put(&t, "# Written by run_suite --slurm: array task i runs its own mix alone on a whole node and\n"
            "# writes its run folder under task-i/ next to this script; `run_suite report` merges them.\n");
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
    put(&t, "  *) echo \"no task $SLURM_ARRAY_TASK_ID in this sweep\" >&2; exit 2 ;;\nesac\n");
    put(&t, "results=");
    put_quoted(&t, s->sweep_dir);
    put(&t, "/task-$SLURM_ARRAY_TASK_ID\nmkdir -p \"$results\"\nexec ");
    put_quoted(&t, s->run_suite);
    for (const char *const *a = s->common_args; a && *a; a++) {
        put(&t, " ");
        put_quoted(&t, *a);
    }
    put(&t, " \"$@\" --results \"$results\"\n");
    if (t.overflow) {
        snprintf(err, err_size, "the batch script of %d tasks exceeds %zu bytes", s->task_count, size);
        return -1;
    }
    return (int)t.len;
}

int slurm_parse(int argc, char *const argv[], slurm_args *a, const char **common, int max, char *err,
                size_t err_size) {
    memset(a, 0, sizeof *a);
    return cli_parse_forward(&PROGRAM, a, argc, argv, common, max, err, err_size);
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

int slurm_requested(int argc, char *const argv[]) {
    return cli_given(argc, argv, "--slurm");
}

static int usage_error(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "run_suite: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(run_suite --slurm --help lists the options)\n");
    return 2;
}

/* Task 0 as this run_suite would run it, with --dry-run: the real parser judges the options. */
static int check_first_task(const char *self, const char *const *common, const slurm_task *task) {
    const char *argv[300];
    int n = 0;
    argv[n++] = self;
    for (const char *const *a = common; *a && n < 280; a++) argv[n++] = *a;
    for (int k = 0; k < SLURM_TASK_ARGS && task->args[k]; k++) argv[n++] = task->args[k];
    argv[n++] = "--dry-run";
    argv[n] = NULL;
    static char out[1 << 16];
    int status = jobs_run_capture((char *const *)argv, NULL, NULL, out, sizeof out, 300.0);
    if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    fprintf(stderr, "run_suite: --slurm: the tasks' options are refused (array task 0 checked with --dry-run, "
            "its message is above)\n");
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int slurm_main(int argc, char *const argv[]) {
    slurm_args args;
    static const char *common[256];
    char err[2048];
    int parsed = slurm_parse(argc, argv, &args, common, 256, err, sizeof err);
    if (parsed == 1) return 0;
    if (parsed != 0) return usage_error("%s%s", err, "");
    slurm_options o = args.o;
    const char *mix_text = args.mix, *mixes_text = args.mixes, *study = args.study, *results = args.results;
    int dry_run = args.dry_run, quick = args.quick;
    if (slurm_check_options(&o, err, sizeof err) != 0) return usage_error("%s%s", err, "");
    if (!!mix_text + !!mixes_text + !!study != 1)
        return usage_error("--slurm runs one of --mix MIX, --mixes 'MIX;MIX;...' or --study SET%s%s", "", "");

    static slurm_task tasks[SLURM_MAX_TASKS];
    static study_cell cells[SLURM_MAX_TASKS];
    static char mixes_copy[65536];
    int count = 0;
    if (study) {
        /* each cell runs under its own mode, which a --mode passed on would contradict (given twice) */
        int kept = 0;
        for (int i = 0; common[i]; i++) {
            if (!strncmp(common[i], "--mode=", 7)) continue;
            if (!strcmp(common[i], "--mode")) {
                i += common[i + 1] && strncmp(common[i + 1], "--", 2) != 0;
                continue;
            }
            common[kept++] = common[i];
        }
        common[kept] = NULL;
        count = study_cells(study, quick, NULL, 0, cells, SLURM_MAX_TASKS);
        if (count <= 0) return usage_error("--study %s: unknown set (run_suite --study --help lists them)%s", study, "");
        for (int i = 0; i < count; i++) {
            slurm_task *t = &tasks[i];
            memset(t, 0, sizeof *t);
            int k = 0;
            t->args[k++] = "--mode", t->args[k++] = cells[i].mode, t->args[k++] = "--mix", t->args[k++] = cells[i].mix;
            if (cells[i].steps > 0) {
                snprintf(t->text[0], sizeof t->text[0], "%ld", cells[i].steps);
                t->args[k++] = "--steps-per-epoch", t->args[k++] = t->text[0];
            }
        }
    } else {
        snprintf(mixes_copy, sizeof mixes_copy, "%s", mixes_text ? mixes_text : mix_text);
        char *save = NULL;
        for (char *m = strtok_r(mixes_copy, mixes_text ? ";" : "", &save); m; m = strtok_r(NULL, ";", &save)) {
            while (*m == ' ' || *m == '\t') m++;
            if (!*m) continue;
            static mix parsed;
            if (count == SLURM_MAX_TASKS) return usage_error("--mixes: at most %d mixes%s", "1000", "");
            if (mix_parse(&parsed, m, err, sizeof err) != 0) return usage_error("--mix %s: %s", m, err);
            memset(&tasks[count], 0, sizeof tasks[count]);
            tasks[count].args[0] = "--mix", tasks[count].args[1] = m;
            count++;
        }
        if (count == 0) return usage_error("--mixes '%s': expected mixes separated by ';', e.g. 'S+M;7*S'%s", mixes_text, "");
    }

    char self[PATH_MAX], workdir[PATH_MAX], base[PATH_MAX], sweep_dir[PATH_MAX + 64], stamp[32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &utc);
    if (n <= 0 || !getcwd(workdir, sizeof workdir)) {
        fprintf(stderr, "run_suite: cannot resolve the program's or the working folder's path: %s\n", strerror(errno));
        return 1;
    }
    if (results[0] == '/') snprintf(base, sizeof base, "%s", results);
    else snprintf(base, sizeof base, "%s/%s", workdir, results);
    snprintf(sweep_dir, sizeof sweep_dir, "%s/slurm-%s-%d", base, stamp, (int)getpid());
    /* #SBATCH lines cannot quote: a blank in a path would cut the option */
    if (strpbrk(sweep_dir, " \t\n'\"") || strpbrk(workdir, " \t\n'\""))
        return usage_error("--slurm needs folders without blanks or quotes: %s, %s", workdir, sweep_dir);
    int rc = check_first_task(self, common, &tasks[0]);
    if (rc != 0) return rc;
    slurm_sweep s = {self, common, tasks, count, sweep_dir, workdir};
    char job_id[64] = "";
    if (slurm_submit(&o, &s, dry_run, job_id, sizeof job_id, err, sizeof err) != 0) {
        fprintf(stderr, "run_suite: %s\n", err);
        return 1;
    }
    if (dry_run) printf("wrote %s/sweep.sbatch (%d array task(s)); submit it with: sbatch %s/sweep.sbatch\n",
                        sweep_dir, count, sweep_dir);
    else printf("submitted job array %s: %d task(s), one node each; logs %s/task-<i>.out\n", job_id, count, sweep_dir);
    printf("results: %s/task-<i>/<run-id>/; merge them with: run_suite report %s/task-*/*/\n", sweep_dir, sweep_dir);
    return 0;
}
