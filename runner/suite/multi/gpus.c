/* run_suite --gpus: a mix over several GPUs, one ordinary run_suite per GPU (see gpus.h). */
#define _GNU_SOURCE
#include "runner/suite/multi/gpus.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/results.h"
#include "runner/cli.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/jobs/spawn.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/modes/mode.h"
#include "runner/suite/gpu/monitor.h"
#include "runner/suite/multi/gpus_summary.h"
#include "runner/suite/plan/placement.h"

extern char **environ;

/* What the command line fills; the options of rows marked .forward, and every option this table
 * does not name, are passed on to every GPU's run_suite as written (its own table checks them). */
typedef struct gpus_args {
    char gpus[256];
    const char *mix, *mode, *results, *train, *data_root, *gpu, *baseline;
    int dry_run, json, quick, epochs, have_epochs, have_steps;
    long steps;
} gpus_args;

#define T gpus_args
static const cli_option OPTIONS[] = {
    {"--gpus", "LIST", "the GPUs to place the mix over (0,1,2,3), by memory and compute", CLI_TEXT(T, gpus)},
    {"--mode", "MODE", "collocation mode, each GPU under it by itself", CLI_STR(T, mode), .values = suite_mode_names,
     .forward = 1},
    {"--mix", "MIX", "jobs, e.g. S+M+M, 4*M+8*S (run_suite --list shows presets)", CLI_STR(T, mix)},
    {"--results", "DIR", "where the run folder goes (each GPU's run under gpu-<index>/)", CLI_STR(T, results),
     .fallback = RESULTS_DEFAULT_DIR},
    {"--dry-run", NULL, "show the placement; run nothing", CLI_FLAG(T, dry_run, 1)},
    {"--json", NULL, "with --dry-run: the placement as JSON", CLI_FLAG(T, json, 1)},
    {"--epochs", "E", "epochs per job (placement weighs the jobs' compute by it)", CLI_INT(T, epochs, 1, 100000),
     CLI_MARK(T, have_epochs), .forward = 1},
    {"--steps-per-epoch", "T", "steps per epoch (likewise)", CLI_INT(T, steps, 1, 1e12), CLI_MARK(T, have_steps),
     .forward = 1},
    {"--quick", NULL, "2 epochs of 10 steps (a smoke test)", CLI_FLAG(T, quick, 1), .forward = 1},
    {"--train", "PATH", "the train program (default: next to run_suite)", CLI_STR(T, train), .forward = 1},
    {"--data-root", "DIR", "data sets' folder, passed to train", CLI_STR(T, data_root), .forward = 1},
    {"--baseline", "DIR", "an earlier run_suite --gpus LIST --mode serial of this mix: each job's reference alone on "
     "its card (each GPU's run_suite is given DIR/gpu-<G>/<run>)", CLI_STR(T, baseline)},
    {"--gpu", "N", "not with --gpus: each GPU's run_suite is given its own", CLI_STR(T, gpu)},
    {0}};
#undef T

static const cli_program PROGRAM = {
    .name = "run_suite --gpus",
    .synopsis = "usage: run_suite --gpus LIST --mode MODE --mix MIX [options]\n"
                "The jobs are placed over the GPUs before anything runs, then every GPU with jobs runs its own\n"
                "run_suite (--gpu G --mix <its jobs>), all at once, into <results>/<run-id>/gpu-<G>/.\n",
    .epilogue = "Every other run_suite option (run_suite --help) is passed on to each GPU's run_suite; the\n"
                "first one is checked with --dry-run before anything is written.\n"
                "exit status: the worst of the GPUs' runs; 2 bad usage or a placement that does not fit\n",
    .options = OPTIONS,
};

/* A GPU's run_suite argv: the program, the options passed on, the 8 words set per GPU, the NULL. */
#define GPUS_MAX_ARGS 256

int gpus_requested(int argc, char *const argv[]) {
    return cli_given(argc, argv, "--gpus");
}

static int usage(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "run_suite: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(run_suite --help lists the options)\n");
    return 2;
}

/* 0 to go on, else the exit status (--help: 0, bad input: 2). */
static int parse(int argc, char *const argv[], gpus_args *a, const char **rest) {
    memset(a, 0, sizeof *a);
    char err[2048];
    int rc = cli_parse_forward(&PROGRAM, a, argc, argv, rest, GPUS_MAX_ARGS - 9, err, sizeof err);
    if (rc == 1) return -1;
    if (rc != 0) {
        fprintf(stderr, "run_suite: %s\n", err);
        return 2;
    }
    if (a->quick) {
        if (!a->have_epochs) a->epochs = 2;
        if (!a->have_steps) a->steps = 10;
    }
    /* each GPU's run folder would hold repeats, not the one summary.json the summary reads */
    if (cli_given(argc, argv, "--repeat"))
        return usage("--repeat does not go with --gpus: repeat the run on one GPU (--gpu N --repeat N)%s%s", "", "");
    if (a->gpu) return usage("--gpu and --gpus exclude each other: --gpus %s names every GPU%s", "LIST", "");
    if (!a->gpus[0]) return usage("--gpus is required: GPU indices, e.g. 0,1,2,3%s%s", "", "");
    if (!a->mix) return usage("--mix is required, e.g. S+M+M (run_suite --list shows the presets)%s%s", "", "");
    if (!a->mode) return usage("--mode is required: one of %s%s", suite_mode_names(), "");
    return 0;
}

/* argv for GPU g's run_suite: what is passed on, then --gpu, --mix, --baseline (reference: its
 * reference run, "" none) and --results, or --dry-run for the check before the run (results NULL). */
static void child_argv(const char **out, const char *self, const char *const *rest, int gpu, char *gpu_text,
                       size_t gpu_size, const char *mix_text, const char *reference, const char *results) {
    int n = 0;
    out[n++] = self;
    for (; *rest; rest++) out[n++] = *rest;
    snprintf(gpu_text, gpu_size, "%d", gpu);
    out[n++] = "--gpu", out[n++] = gpu_text;
    out[n++] = "--mix", out[n++] = mix_text;
    if (reference[0]) out[n++] = "--baseline", out[n++] = reference;
    if (results) out[n++] = "--results", out[n++] = results;
    else out[n++] = "--dry-run";
    out[n] = NULL;
}

/* The first GPU's run_suite as the run would start it, with --dry-run: its own parser judges the
 * options passed on, so one it would refuse is refused once, here, before any folder is made. */
static int check_passed_on(const char *self, const char *const *rest, const gpus_card *cards, int count) {
    int g = 0;
    while (g < count && !cards[g].mix[0]) g++;
    if (g == count) return 0;
    const char *argv[GPUS_MAX_ARGS];
    char gpu_text[16];
    child_argv(argv, self, rest, cards[g].gpu, gpu_text, sizeof gpu_text, cards[g].mix, cards[g].reference, NULL);
    static char out[1 << 16];
    int status = jobs_run_capture((char *const *)argv, NULL, NULL, out, sizeof out, 300.0);
    if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return 0;
    fprintf(stderr, "run_suite: --gpus: the options passed on to each GPU's run_suite are refused (GPU %d's "
            "checked with --dry-run, its message is above)\n", cards[g].gpu);
    return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1;
}

/* The mix of the jobs placed on slot g (data-parallel jobs: on their first GPU only), and which
 * jobs of the whole mix they are. */
static void mix_of_slot(const mix *m, const placement *p, int g, char *out, size_t size, gpus_card *card) {
    out[0] = 0;
    card->job_count = 0;
    for (int j = 0; j < m->count; j++) {
        if (p->gpus_of[j][0] != g) continue;
        char one[256];
        mix_job_format(&m->jobs[j], one, sizeof one);
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", len ? "+" : "", one);
        card->jobs[card->job_count++] = j;
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

/* Where each job's reference (the same job alone on the same card) comes from: --baseline DIR
 * (DIR/gpu-<G>/<its one run folder>, checked here), the serial part of --mode all, the run itself
 * (serial), or nowhere (why, for the summary's null fields). 0, or 2 with the message printed. */
static int find_references(const gpus_args *a, const mix *m, gpus_card *cards, int count, char *source, size_t source_size,
                           char *why, size_t why_size) {
    why[0] = 0;
    if (a->baseline) {
        snprintf(source, source_size, "--baseline %s: each GPU's run of it", a->baseline);
        for (int g = 0; g < count; g++) {
            if (!cards[g].mix[0]) continue;
            char dir[PATH_MAX + 32], summary[PATH_MAX * 2];
            snprintf(dir, sizeof dir, "%s/gpu-%d", a->baseline, cards[g].gpu);
            only_run_folder(dir, cards[g].reference, sizeof cards[g].reference);
            snprintf(summary, sizeof summary, "%s/summary.json", cards[g].reference);
            cJSON *ref = cards[g].reference[0] ? results_read_json(summary) : NULL;
            const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(ref, "jobs");
            int same = cJSON_GetArraySize(jobs) == cards[g].job_count;
            for (int k = 0; same && k < cards[g].job_count; k++) {
                const cJSON *job = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jobs, k), "job");
                char mine[256];
                mix_job_format(&m->jobs[cards[g].jobs[k]], mine, sizeof mine);
                same = cJSON_IsString(job) && !strcmp(job->valuestring, mine);
            }
            cJSON_Delete(ref);
            if (!same)
                return usage("--baseline %s: gpu-%s/<run>/summary.json there is missing or ran other jobs than this "
                             "placement gives that GPU: expected an earlier run_suite --gpus LIST --mode serial of "
                             "this mix", a->baseline, strrchr(dir, '-') + 1);
        }
    } else if (!strcmp(a->mode, "all")) {
        snprintf(source, source_size, "the serial part of --mode all on each GPU");
    } else if (!strcmp(a->mode, "serial")) {
        snprintf(source, source_size, "the run itself (serial: each job alone on its GPU)");
    } else {
        snprintf(source, source_size, "none: STP and ANTT will be null (give --baseline DIR or --mode all)");
        snprintf(why, why_size, "no reference: give --baseline DIR (an earlier run_suite --gpus LIST --mode serial of "
                 "this mix) or run --mode all (each GPU's serial part)");
    }
    return 0;
}

static cJSON *plan_json(const mix *m, const placement *p, const placement_gpu *gpus, const gpus_card *cards,
                        const char *references) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "method", p->method);
    cJSON_AddStringToObject(root, "references", references);
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
        cJSON_AddStringToObject(o, "mix", cards[g].mix);
        if (cards[g].reference[0]) cJSON_AddStringToObject(o, "reference", cards[g].reference);
        cJSON_AddItemToArray(list, o);
    }
    return root;
}

static void print_plan(const mix *m, const placement *p, const placement_gpu *gpus, const gpus_card *cards,
                       const char *references) {
    printf("placement over %d GPUs (%s):\n", p->gpu_count, p->method);
    for (int g = 0; g < p->gpu_count; g++) {
        char used[32], total[32];
        results_format_bytes(used, sizeof used, p->memory[g]);
        results_format_bytes(total, sizeof total, gpus[g].memory_bytes);
        printf("  GPU %d: %d job(s), %s of %s, demand %.3g:", gpus[g].index, p->jobs_on[g], used, total, p->demand[g]);
        for (int j = 0; j < m->count; j++)
            if (placement_uses(p, j, g)) printf(" %d:%s", j, m->jobs[j].label);
        printf("%s%s\n", cards[g].mix[0] ? "  -> --mix " : "", cards[g].mix);
    }
    printf("references (each job alone on its GPU, for STP and ANTT): %s\n", references);
}

/* summary.json of the whole run (gpus_summary.h); --mode all: one per mode that ran, each against
 * its GPU's serial part. */
static void summarize(const char *run_dir, const mix *m, gpus_card *cards, int count, const char *mode,
                      const char *no_reference) {
    cJSON *root;
    if (!strcmp(mode, "serial")) /* each job alone on its GPU: its own reference */
        for (int g = 0; g < count; g++) snprintf(cards[g].reference, sizeof cards[g].reference, "%s", cards[g].run_folder);
    if (strcmp(mode, "all") != 0) {
        const suite_mode *sm = suite_mode_find(mode);
        root = gpus_summary_mode(m, cards, count, NULL, sm && (sm->flags & MODE_SEQUENTIAL), no_reference, stdout);
        cJSON_AddStringToObject(root, "mode", mode);
    } else {
        for (int g = 0; g < count; g++)
            if (cards[g].run_folder[0] && !cards[g].reference[0]) snprintf(cards[g].reference, sizeof cards[g].reference, "%s/serial", cards[g].run_folder);
        root = cJSON_CreateObject();
        cJSON *list = cJSON_AddArrayToObject(root, "modes");
        int n;
        const suite_mode *const *modes = suite_modes(&n);
        for (int k = 0; k < n; k++) {
            int ran = 0;
            for (int g = 0; g < count && !ran; g++) {
                char path[PATH_MAX * 2];
                snprintf(path, sizeof path, "%s/%s/summary.json", cards[g].run_folder, modes[k]->name);
                ran = cards[g].run_folder[0] && access(path, R_OK) == 0;
            }
            if (!ran) continue;
            printf("\n[%s]", modes[k]->name);
            cJSON *one = gpus_summary_mode(m, cards, count, modes[k]->name, (modes[k]->flags & MODE_SEQUENTIAL) != 0,
                                           "this GPU's serial part wrote no summary", stdout);
            cJSON_AddStringToObject(one, "mode", modes[k]->name);
            cJSON_AddItemToArray(list, one);
        }
    }
    char err[512];
    if (results_write_json(run_dir, "summary.json", root, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    cJSON_Delete(root);
}

/* A stop signal for the whole run (Ctrl-C included: each GPU's run_suite is in a process group of
 * its own) is passed on at once to every GPU's run_suite, which stops its jobs and writes what it
 * measured; this one then merges as usual. */
static pid_t running[PLACEMENT_MAX_GPUS];
static volatile sig_atomic_t stop_signal;

static void pass_on(int signo) {
    stop_signal = signo;
    for (int g = 0; g < PLACEMENT_MAX_GPUS; g++)
        if (running[g] > 0) kill(running[g], signo);
}

int gpus_main(int argc, char *const argv[]) {
    gpus_args a;
    const char *rest[GPUS_MAX_ARGS];
    int parsed = parse(argc, argv, &a, rest);
    if (parsed != 0) return parsed < 0 ? 0 : parsed;
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
    static gpus_card cards[PLACEMENT_MAX_GPUS];
    for (int g = 0; g < count; g++) {
        memset(&cards[g], 0, sizeof cards[g]);
        cards[g].gpu = index[g], cards[g].mix = mixes[g];
        mix_of_slot(&m, &p, g, mixes[g], sizeof mixes[g], &cards[g]);
    }
    char references[PATH_MAX + 128], no_reference[512];
    int bad = find_references(&a, &m, cards, count, references, sizeof references, no_reference, sizeof no_reference);
    if (bad) return bad;
    int refused = check_passed_on(self, rest, cards, count);
    if (refused) return refused;
    if (a.dry_run) {
        if (a.json) {
            cJSON *root = plan_json(&m, &p, gpus, cards, references);
            char *text = cJSON_Print(root);
            if (text) printf("%s\n", text);
            free(text);
            cJSON_Delete(root);
        } else {
            print_plan(&m, &p, gpus, cards, references);
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
    print_plan(&m, &p, gpus, cards, references);
    cJSON *plan = plan_json(&m, &p, gpus, cards, references);
    if (results_write_json(run_dir, "placement.json", plan, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    cJSON_Delete(plan);
    /* NVLink multicast stays off in everything a run over several GPUs starts */
    setenv("NCCL_NVLS_ENABLE", "0", 1);

    /* Every GPU's run_suite at once; each stops its own jobs and daemon on the signal passed on
     * (pass_on), or on the SIGTERM it gets when this one dies. */
    pid_t *pids = running;
    int status[PLACEMENT_MAX_GPUS] = {0}, worst = 0;
    struct sigaction sa = {.sa_handler = pass_on};
    sigset_t stops, unblocked;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL), sigaction(SIGTERM, &sa, NULL), sigaction(SIGHUP, &sa, NULL);
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT), sigaddset(&stops, SIGTERM), sigaddset(&stops, SIGHUP);
    for (int g = 0; g < count; g++) {
        if (!mixes[g][0]) continue;
        if (stop_signal) { /* stopped before this GPU's run began */
            status[g] = 128 + stop_signal;
            continue;
        }
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s/gpu-%d", run_dir, index[g]);
        if (results_make_dirs(dir, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            status[g] = worst = 1;
            continue;
        }
        const char *child[GPUS_MAX_ARGS];
        char gpu_text[16];
        child_argv(child, self, rest, index[g], gpu_text, sizeof gpu_text, mixes[g], cards[g].reference, dir);
        sigprocmask(SIG_BLOCK, &stops, &unblocked); /* a stop now waits until pids[g] is known */
        int rc = spawn_child(&pids[g], (char *const *)child, environ, -1, -1, -1, SIGTERM);
        sigprocmask(SIG_SETMASK, &unblocked, NULL);
        if (rc != 0) {
            fprintf(stderr, "error: cannot start the run_suite of GPU %d: %s\n", index[g], strerror(rc));
            status[g] = worst = 1;
            pids[g] = 0;
        }
    }
    for (int g = 0; g < count; g++) {
        if (pids[g] <= 0) continue;
        int st;
        while (waitpid(pids[g], &st, 0) < 0 && errno == EINTR) continue;
        status[g] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (status[g] > worst) worst = status[g]; /* 1 failed < 2 refused < 3 partial < 128+N stopped */
        pids[g] = 0;
    }
    for (int g = 0; g < count; g++) {
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s/gpu-%d", run_dir, index[g]);
        cards[g].exit_status = status[g];
        if (mixes[g][0]) only_run_folder(dir, cards[g].run_folder, sizeof cards[g].run_folder);
    }
    summarize(run_dir, &m, cards, count, a.mode, no_reference);
    printf("results: %s (per GPU under gpu-<index>/)\n", run_dir);
    return stop_signal && worst < 128 ? 128 + stop_signal : worst;
}
