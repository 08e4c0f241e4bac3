/* run_suite --gpus: a mix over several GPUs, one ordinary run_suite per GPU (see gpus.h). */
#define _GNU_SOURCE
#include "runner/suite/multi/gpus.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/results.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/modes/mode.h"
#include "runner/suite/gpu/monitor.h"
#include "runner/suite/plan/placement.h"

extern char **environ;

/* Options this file reads; the rest go to every GPU's run_suite as they are. */
typedef struct gpus_args {
    const char *gpus, *mix, *mode, *results, *train, *data_root;
    int dry_run, json, epochs;
    long steps;
} gpus_args;

static const struct { const char *name; int value, passed_on; } OWN[] = {
    {"--gpus", 1, 0}, {"--mix", 1, 0}, {"--results", 1, 0}, {"--gpu", 1, 0}, {"--dry-run", 0, 0},
    {"--json", 0, 0}, {"--mode", 1, 1}, {"--train", 1, 1}, {"--data-root", 1, 1}, {"--epochs", 1, 1},
    {"--steps-per-epoch", 1, 1}, {"--quick", 0, 1},
};

int gpus_requested(int argc, char *const argv[]) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--gpus") == 0) return 1;
    return 0;
}

static int usage(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "run_suite: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(run_suite --help lists the options)\n");
    return 2;
}

static int parse(int argc, char *const argv[], gpus_args *a) {
    memset(a, 0, sizeof *a);
    a->results = RESULTS_DEFAULT_DIR;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **dest = !strcmp(argv[i], "--gpus") ? &a->gpus : !strcmp(argv[i], "--mix") ? &a->mix
                          : !strcmp(argv[i], "--mode") ? &a->mode : !strcmp(argv[i], "--results") ? &a->results
                          : !strcmp(argv[i], "--train") ? &a->train : !strcmp(argv[i], "--data-root") ? &a->data_root : NULL;
        if (!strcmp(argv[i], "--dry-run")) a->dry_run = 1;
        else if (!strcmp(argv[i], "--json")) a->json = 1;
        else if (!strcmp(argv[i], "--quick")) a->epochs = a->epochs ? a->epochs : 2, a->steps = a->steps ? a->steps : 10;
        else if (!strcmp(argv[i], "--gpu")) return usage("--gpu and --gpus exclude each other: --gpus %s names every GPU%s", "LIST", "");
        else if (!strcmp(argv[i], "--epochs") || !strcmp(argv[i], "--steps-per-epoch")) {
            if (!v) return usage("%s: missing its value%s", argv[i], "");
            if (!strcmp(argv[i], "--epochs")) a->epochs = atoi(v);
            else a->steps = atol(v);
            i++;
        } else if (dest) {
            if (!v || !strncmp(v, "--", 2)) return usage("%s: missing its value%s", argv[i], "");
            *dest = v;
            i++;
        }
    }
    if (!a->mix) return usage("--mix is required, e.g. S+M+M (run_suite --list shows the presets)%s%s", "", "");
    if (!a->mode) return usage("--mode is required: one of %s%s", suite_mode_names(), "");
    return 0;
}

/* argv for GPU g's run_suite: what is passed on, then --gpu, --mix, --results. */
static char **child_argv(const char *self, int argc, char *const argv[], int gpu, const char *mix_text,
                         const char *results) {
    char **out = calloc((size_t)argc + 8, sizeof *out);
    if (!out) return NULL;
    int n = 0;
    out[n++] = strdup(self);
    for (int i = 1; i < argc; i++) {
        int k = -1;
        for (size_t o = 0; o < sizeof OWN / sizeof OWN[0]; o++)
            if (!strcmp(argv[i], OWN[o].name)) k = (int)o;
        if (k >= 0 && !OWN[k].passed_on) {
            i += OWN[k].value;
            continue;
        }
        out[n++] = strdup(argv[i]);
    }
    char g[16];
    snprintf(g, sizeof g, "%d", gpu);
    out[n++] = strdup("--gpu"), out[n++] = strdup(g);
    out[n++] = strdup("--mix"), out[n++] = strdup(mix_text);
    out[n++] = strdup("--results"), out[n++] = strdup(results);
    return out;
}

/* The mix of the jobs placed on slot g (data-parallel jobs: on their first GPU only). */
static void mix_of_slot(const mix *m, const placement *p, int g, char *out, size_t size) {
    out[0] = 0;
    for (int j = 0; j < m->count; j++) {
        if (p->gpus_of[j][0] != g) continue;
        char one[256];
        mix_job_format(&m->jobs[j], one, sizeof one);
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", len ? "+" : "", one);
    }
}

static cJSON *plan_json(const mix *m, const placement *p, const placement_gpu *gpus, const char (*mixes)[4096]) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "method", p->method);
    cJSON *list = cJSON_AddArrayToObject(root, "gpus");
    for (int g = 0; g < p->gpu_count; g++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "gpu", gpus[g].index);
        if (isnan(gpus[g].memory_bytes)) cJSON_AddNullToObject(o, "memory_bytes");
        else cJSON_AddNumberToObject(o, "memory_bytes", gpus[g].memory_bytes);
        cJSON_AddNumberToObject(o, "footprint_bytes", p->memory[g]);
        cJSON_AddNumberToObject(o, "demand", p->demand[g]);
        cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
        for (int j = 0; j < m->count; j++)
            if (placement_uses(p, j, g)) cJSON_AddItemToArray(jobs, cJSON_CreateNumber(j));
        cJSON_AddStringToObject(o, "mix", mixes[g]);
        cJSON_AddItemToArray(list, o);
    }
    return root;
}

static void print_plan(const mix *m, const placement *p, const placement_gpu *gpus, const char (*mixes)[4096]) {
    printf("placement over %d GPUs (%s):\n", p->gpu_count, p->method);
    for (int g = 0; g < p->gpu_count; g++) {
        char used[32], total[32];
        results_format_bytes(used, sizeof used, p->memory[g]);
        results_format_bytes(total, sizeof total, gpus[g].memory_bytes);
        printf("  GPU %d: %d job(s), %s of %s, demand %.3g:", gpus[g].index, p->jobs_on[g], used, total, p->demand[g]);
        for (int j = 0; j < m->count; j++)
            if (placement_uses(p, j, g)) printf(" %d:%s", j, m->jobs[j].label);
        printf("%s%s\n", mixes[g][0] ? "  -> --mix " : "", mixes[g]);
    }
}

/* The one run folder under dir (a GPU's run_suite makes exactly one), or "". */
static void only_run_folder(const char *dir, char *out, size_t size) {
    out[0] = 0;
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.' && !out[0]) snprintf(out, size, "%s/%s", dir, names[i]->d_name);
        free(names[i]);
    }
    free(names);
}

static double number_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* summary.json of the whole run: each GPU's figures and the totals. */
static void merge(const char *run_dir, const placement *p, const placement_gpu *gpus, const char (*mixes)[4096],
                  const int *status) {
    cJSON *root = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(root, "gpus");
    double makespan = 0, samples = 0, energy = 0, stp = 0;
    int complete = 1, energy_known = 1, stp_known = 1;
    printf("\n%-5s %-9s %10s %14s %12s %8s  %s\n", "GPU", "status", "makespan", "samples", "energy J", "STP", "mix");
    for (int g = 0; g < p->gpu_count; g++) {
        if (!mixes[g][0]) continue;
        char dir[PATH_MAX + 32], run[PATH_MAX + 300], path[PATH_MAX + 400];
        snprintf(dir, sizeof dir, "%s/gpu-%d", run_dir, gpus[g].index);
        only_run_folder(dir, run, sizeof run);
        snprintf(path, sizeof path, "%s/summary.json", run);
        cJSON *s = run[0] ? results_read_json(path) : NULL;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(s, "status");
        const char *state = cJSON_IsString(st) ? st->valuestring : status[g] == 0 ? "complete" : "failed";
        double m = number_of(s, "makespan_s"), t = number_of(s, "total_samples"), e = number_of(s, "energy_j"),
               k = number_of(s, "stp");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "gpu", gpus[g].index);
        cJSON_AddStringToObject(o, "mix", mixes[g]);
        cJSON_AddStringToObject(o, "run_folder", run);
        cJSON_AddStringToObject(o, "status", state);
        cJSON_AddNumberToObject(o, "exit_status", status[g]);
        const char *keys[] = {"makespan_s", "total_samples", "energy_j", "stp"};
        double vals[] = {m, t, e, k};
        for (int i = 0; i < 4; i++) {
            if (isnan(vals[i])) cJSON_AddNullToObject(o, keys[i]);
            else cJSON_AddNumberToObject(o, keys[i], vals[i]);
        }
        cJSON_AddItemToArray(list, o);
        complete &= strcmp(state, "complete") == 0;
        if (!isnan(m) && m > makespan) makespan = m;
        if (!isnan(t)) samples += t;
        if (isnan(e)) energy_known = 0;
        else energy += e;
        if (isnan(k)) stp_known = 0;
        else stp += k;
        printf("%-5d %-9s %9.2fs %14.0f %12.1f %8.2f  %s\n", gpus[g].index, state, m, t, e, k, mixes[g]);
        cJSON_Delete(s);
    }
    cJSON *total = cJSON_AddObjectToObject(root, "total");
    cJSON_AddStringToObject(total, "status", complete ? "complete" : "partial");
    cJSON_AddNumberToObject(total, "makespan_s", makespan);
    cJSON_AddNumberToObject(total, "total_samples", samples);
    if (energy_known) cJSON_AddNumberToObject(total, "energy_j", energy);
    else cJSON_AddNullToObject(total, "energy_j");
    if (stp_known) cJSON_AddNumberToObject(total, "stp", stp);
    else cJSON_AddNullToObject(total, "stp");
    cJSON_AddStringToObject(root, "definitions", "makespan: the longest GPU's; samples, energy and STP: sums over the GPUs");
    printf("%-5s %-9s %9.2fs %14.0f %12.1f %8.2f\n", "all", complete ? "complete" : "partial", makespan, samples,
           energy_known ? energy : NAN, stp_known ? stp : NAN);
    char err[512];
    if (results_write_json(run_dir, "summary.json", root, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    cJSON_Delete(root);
}

/* A stop signal for the whole run is passed on to every GPU's run_suite, which stops its jobs
 * and writes what it measured; this one then merges as usual. */
static pid_t running[PLACEMENT_MAX_GPUS];
static volatile sig_atomic_t stop_signal;

static void pass_on(int signo) {
    stop_signal = signo;
    for (int g = 0; g < PLACEMENT_MAX_GPUS; g++)
        if (running[g] > 0 && signo != SIGINT) kill(running[g], signo); /* Ctrl-C reaches them itself */
}

int gpus_main(int argc, char *const argv[]) {
    gpus_args a;
    if (parse(argc, argv, &a) != 0) return 2;
    char err[2048];
    int index[PLACEMENT_MAX_GPUS];
    int count = placement_parse_gpus(a.gpus, index, PLACEMENT_MAX_GPUS, err, sizeof err);
    if (count < 0) return usage("%s%s", err, "");
    static mix m;
    if (mix_parse(&m, a.mix, err, sizeof err) != 0) return usage("--mix: %s%s", err, "");
    const suite_mode *mode = strcmp(a.mode, "all") == 0 ? NULL : suite_mode_find(a.mode);
    if (!mode && strcmp(a.mode, "all") != 0) return usage("--mode %s: expected one of %s", a.mode, suite_mode_names());

    char self[PATH_MAX], train[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    if (a.train) snprintf(train, sizeof train, "%s", a.train);
    else {
        char copy[PATH_MAX];
        snprintf(copy, sizeof copy, "%s", self);
        snprintf(train, sizeof train, "%s/train", dirname(copy));
    }
    if (access(train, X_OK) != 0) return usage("cannot run the train program at %s (build it, or give --train PATH)%s", train, "");

    placement_gpu gpus[PLACEMENT_MAX_GPUS];
    for (int g = 0; g < count; g++) {
        monitor_gpu probe;
        monitor_probe_gpu(index[g], &probe);
        gpus[g] = (placement_gpu){index[g], probe.memory_bytes};
    }
    placement_job jobs[MIX_MAX_JOBS];
    job_footprint fp[MIX_MAX_JOBS];
    for (int j = 0; j < m.count; j++) {
        if (job_query_footprint(train, &m.jobs[j], a.data_root, &fp[j], err, sizeof err) != 0) {
            fprintf(stderr, "error: job %d (%s): %s\n", j, m.jobs[j].label, err);
            return 2;
        }
        jobs[j] = (placement_job){fp[j].total, job_demand(&fp[j], &m.jobs[j], a.epochs, a.steps), m.jobs[j].gpus};
    }
    static placement p;
    int sequential = mode && (mode->flags & MODE_SEQUENTIAL);
    if (placement_plan(gpus, count, jobs, m.count, sequential, &p, err, sizeof err) != 0) {
        fprintf(stderr, "error: refused: %s\n", err);
        return 2;
    }
    static char mixes[PLACEMENT_MAX_GPUS][4096];
    for (int g = 0; g < count; g++) mix_of_slot(&m, &p, g, mixes[g], sizeof mixes[g]);
    if (a.dry_run) {
        if (a.json) {
            cJSON *root = plan_json(&m, &p, gpus, (const char (*)[4096])mixes);
            char *text = cJSON_Print(root);
            if (text) printf("%s\n", text);
            free(text);
            cJSON_Delete(root);
        } else {
            print_plan(&m, &p, gpus, (const char (*)[4096])mixes);
        }
        return 0;
    }
    for (int j = 0; j < m.count; j++)
        if (m.jobs[j].gpus > 1) {
            char which[16];
            snprintf(which, sizeof which, "%d", j);
            return usage("job %s is data-parallel: each GPU's mode holds that GPU only, so a job over several "
                         "cannot run inside --gpus; run it alone (train --gpus N)%s", which, "");
        }

    char run_dir[PATH_MAX], run_id[256];
    if (results_make_run_dir(a.results, "gpus", a.mix, run_dir, sizeof run_dir, run_id, sizeof run_id, err,
                             sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    print_plan(&m, &p, gpus, (const char (*)[4096])mixes);
    cJSON *plan = plan_json(&m, &p, gpus, (const char (*)[4096])mixes);
    if (results_write_json(run_dir, "placement.json", plan, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    cJSON_Delete(plan);

    /* Every GPU's run_suite at once; each stops its own jobs and daemon on Ctrl-C (same
     * process group as this one) or on the SIGTERM passed on below. */
    pid_t *pids = running;
    int status[PLACEMENT_MAX_GPUS] = {0}, worst = 0;
    struct sigaction sa = {.sa_handler = pass_on};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL), sigaction(SIGTERM, &sa, NULL), sigaction(SIGHUP, &sa, NULL);
    for (int g = 0; g < count; g++) {
        if (!mixes[g][0]) continue;
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s/gpu-%d", run_dir, index[g]);
        if (results_make_dirs(dir, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            status[g] = worst = 1;
            continue;
        }
        char **child = child_argv(self, argc, argv, index[g], mixes[g], dir);
        if (!child || posix_spawn(&pids[g], self, NULL, NULL, child, environ) != 0) {
            fprintf(stderr, "error: cannot start the run_suite of GPU %d: %s\n", index[g], strerror(errno));
            status[g] = worst = 1;
            pids[g] = 0;
        }
        job_free_strv(child);
    }
    for (int g = 0; g < count; g++) {
        if (pids[g] <= 0) continue;
        int st;
        while (waitpid(pids[g], &st, 0) < 0 && errno == EINTR) continue;
        status[g] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (status[g] > worst) worst = status[g]; /* 1 failed < 2 refused < 3 partial < 128+N stopped */
        pids[g] = 0;
    }
    merge(run_dir, &p, gpus, (const char (*)[4096])mixes, status);
    printf("results: %s (per GPU under gpu-<index>/)\n", run_dir);
    return stop_signal && worst < 128 ? 128 + stop_signal : worst;
}
