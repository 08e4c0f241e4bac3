/* The study's matrix as a sequence of run_suite runs (see study.h). */
#define _GNU_SOURCE
#include "runner/suite/multi/study.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "results/results.h"
#include "runner/cli.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/jobs/spawn.h"
#include "runner/suite/gpu/mig.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/plan/placement.h"
#include "runner/suite/gpu/nvml.h"
#include "runner/suite/run/report_cmd.h"

extern char **environ;

/* run_suite's exit statuses, as its children return them */
enum { RUN_OK = 0, RUN_FAILED = 1, RUN_USAGE = 2, RUN_PARTIAL = 3 };

/* quick_steps: steps per epoch of --quick, chosen so one job alone trains about 0.15 s an epoch
 * on an H100 (README's step times): three samples of the 50 ms GPU sampler that --quick sets
 * alone, more side by side, and the whole matrix (52 runs, most of their time the jobs' set-up)
 * within 10 minutes. */
typedef struct workload {
    const char *set, *name, *job;
    long quick_steps;
} workload;

static const workload UNIFORM[] = {
    {"small", "S", "S", 80},
    {"medium", "M", "M", 30},
    {"medium", "EfficientNetV2-S", "efficientnetv2_s:imagenet64@128", 20},
    {"large", "L", "L", 6},
    {"large", "CaiT-XXS24", "cait_xxs24:imagenet@128", 5},
};

/* Quick mixes carry their steps per job: the small job ends first (Figure 9), the recommender
 * outlasts ResNet-152 (Table 2). The paper ran Table 2's MIG row as compute instances sharing one
 * GPU instance ("MIG (shared)": the recommender fits no smaller GPU instance of its A100-40GB). */
static const struct {
    const char *name, *mix, *quick_mix;
    int share_memory;
} MIXED[] = {
    {"S+M+M+M", "S+M+M+M", "S[steps=50]+M[steps=30]+M[steps=30]+M[steps=30]", 0},
    {"XL+L", "XL+L", "XL[steps=750]+L[steps=8]", 1},
};

static const int DEFAULT_DEGREES[] = {1, 2, 3, 7, 0};
static const char *const COLLOCATED[] = {"naive", "mps", "mig-emulate"};
#define STUDY_SETS "small, medium, large, mixed, all"
#define STUDY_MAX_CELLS 256

static int in_set(const char *set, const char *of) {
    return strcmp(set, "all") == 0 || strcmp(set, of) == 0;
}

static int known_set(const char *set) {
    static const char *const sets[] = {"small", "medium", "large", "mixed", "all"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        if (strcmp(set, sets[i]) == 0) return 1;
    return 0;
}

static int add_cell(study_cell *out, int n, int max, const char *workload, const char *mode,
                    const char *mix, int degree, long steps) {
    if (out && n < max) {
        study_cell *c = &out[n];
        snprintf(c->workload, sizeof c->workload, "%s", workload);
        snprintf(c->mode, sizeof c->mode, "%s", mode);
        snprintf(c->mix, sizeof c->mix, "%s", mix);
        c->degree = degree;
        c->steps = steps;
        c->share_memory = 0;
    }
    return n + 1;
}

int study_cells(const char *set, int quick, const int *degrees, int with_mig, study_cell *out, int max) {
    if (!degrees) degrees = DEFAULT_DEGREES;
    int n = 0;
    char mix[160];
    for (size_t w = 0; w < sizeof UNIFORM / sizeof UNIFORM[0]; w++) {
        const workload *u = &UNIFORM[w];
        if (!in_set(set, u->set)) continue;
        long steps = quick ? u->quick_steps : 0;
        snprintf(mix, sizeof mix, "1*%s", u->job);
        n = add_cell(out, n, max, u->name, "serial", mix, 1, steps);
        for (const int *d = degrees; *d; d++) {
            snprintf(mix, sizeof mix, "%d*%s", *d, u->job);
            for (size_t m = 0; m < sizeof COLLOCATED / sizeof COLLOCATED[0]; m++)
                /* one job: naive is serial, mig-emulate's 7g is mps; --quick keeps serial alone */
                if (*d > 1 || (!quick && !strcmp(COLLOCATED[m], "mps")))
                    n = add_cell(out, n, max, u->name, COLLOCATED[m], mix, *d, steps);
            if (with_mig) n = add_cell(out, n, max, u->name, "mig", mix, *d, steps);
        }
    }
    if (in_set(set, "mixed")) {
        for (size_t k = 0; k < sizeof MIXED / sizeof MIXED[0]; k++) {
            const char *m = quick ? MIXED[k].quick_mix : MIXED[k].mix;
            int degree = 1;
            for (const char *p = MIXED[k].mix; *p; p++) degree += *p == '+';
            int first = n;
            n = add_cell(out, n, max, MIXED[k].name, "all", m, degree, 0);
            if (with_mig) n = add_cell(out, n, max, MIXED[k].name, "mig", m, degree, 0);
            for (int i = first; out && i < n && i < max; i++) out[i].share_memory = MIXED[k].share_memory;
        }
    }
    return n;
}

int study_requested(int argc, char **argv) {
    return cli_given(argc, argv, "--study");
}

/* --- options ------------------------------------------------------------------------------- */

typedef struct study_options {
    const char *set, *results, *train, *data_root, *degrees_text, *gpus_text;
    int gpu, sample_ms, epochs, have_gpu, have_sample_ms, have_epochs, have_steps;
    long steps;
    int quick, dry_run, degrees[16];
    int gpus[PLACEMENT_MAX_GPUS], gpu_count; /* --gpus: cells at once, one per GPU */
} study_options;

#define STUDY_USAGE                                                                                \
    "usage: run_suite --study SET [--quick] [--degrees 1,2,3,7] [--epochs E] [--steps-per-epoch T]\n" \
    "       [--results DIR] [--train PATH] [--data-root DIR] [--gpu N | --gpus LIST] [--sample-ms MS] [--dry-run]\n" \
    "  SET: " STUDY_SETS "; --quick: a few steps per epoch, the GPU sampled every 50 ms\n"     \
    "  (all: under 10 minutes on an H100); --gpus 0,1: the cells spread over those GPUs, one cell per GPU\n" \
    "  at a time, several at once (they share the host's CPU, PCIe and memory);\n"                        \
    "  --dry-run: the runs and whether each fits, nothing run. Writes <results>/<time>-study-SET/\n"   \
    "  (study.json, one run_suite folder per run, report.html)\n"

/* The rows' help is STUDY_USAGE's (the table's help_text); every row must be named there. */
#define T study_options
static const cli_option OPTIONS[] = {
    {"--study", "SET", NULL, CLI_STR(T, set)},
    {"--quick", NULL, NULL, CLI_FLAG(T, quick, 1)},
    {"--degrees", "D,D...", NULL, CLI_STR(T, degrees_text)},
    {"--epochs", "E", NULL, CLI_INT(T, epochs, 1, 100000), CLI_MARK(T, have_epochs)},
    {"--steps-per-epoch", "T", NULL, CLI_INT(T, steps, 1, 1000000000), CLI_MARK(T, have_steps)},
    {"--results", "DIR", NULL, CLI_STR(T, results), .fallback = RESULTS_DEFAULT_DIR},
    {"--train", "PATH", NULL, CLI_STR(T, train)},
    {"--data-root", "DIR", NULL, CLI_STR(T, data_root)},
    {"--gpu", "N", NULL, CLI_INT(T, gpu, 0, 1023), CLI_MARK(T, have_gpu)},
    {"--gpus", "LIST", NULL, CLI_STR(T, gpus_text)},
    {"--sample-ms", "MS", NULL, CLI_INT(T, sample_ms, 10, 60000), CLI_MARK(T, have_sample_ms)},
    {"--dry-run", NULL, NULL, CLI_FLAG(T, dry_run, 1)},
    {0}};
#undef T

static const cli_program PROGRAM = {.name = "run_suite --study", .options = OPTIONS, .help_text = STUDY_USAGE};

static int usage_error(const char *what, const char *value) {
    fprintf(stderr, "run_suite --study: %s%s\n" STUDY_USAGE, what, value ? value : "");
    return RUN_USAGE;
}

static int whole(const char *text, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || end == text || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_degrees(const char *text, int *out, int max) {
    int n = 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", text);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long v;
        if (n + 1 >= max || whole(tok, 1, MIX_MAX_JOBS, &v) != 0) return -1;
        out[n++] = (int)v;
    }
    out[n] = 0;
    return n ? 0 : -1;
}

/* -1 to go on, else the exit status (--help: 0, bad input: 2). */
static int parse_options(int argc, char **argv, study_options *o) {
    memset(o, 0, sizeof o[0]);
    memcpy(o->degrees, DEFAULT_DEGREES, sizeof DEFAULT_DEGREES);
    /* the words no row names, to name the first: it would be passed on to nothing */
    const char **unknown = calloc((size_t)argc + 1, sizeof *unknown);
    if (!unknown) return RUN_FAILED;
    char err[1024];
    int rc = cli_parse_forward(&PROGRAM, o, argc, argv, unknown, argc + 1, err, sizeof err);
    const char *stray = rc == 0 ? unknown[0] : NULL;
    free(unknown);
    if (rc == 1) return RUN_OK;
    if (rc != 0) return usage_error(err, NULL);
    if (stray) return usage_error("this option does not go with --study: ", stray);
    if (o->degrees_text && parse_degrees(o->degrees_text, o->degrees, 16) != 0)
        return usage_error("--degrees: expected whole numbers 1..64 separated by commas, got ", o->degrees_text);
    if (!o->set) return usage_error("--study needs a set: " STUDY_SETS, NULL);
    if (o->gpus_text && o->have_gpu) return usage_error("--gpu and --gpus exclude each other: --gpus names every GPU", NULL);
    if (o->gpus_text) {
        char why[256];
        o->gpu_count = placement_parse_gpus(o->gpus_text, o->gpus, PLACEMENT_MAX_GPUS, why, sizeof why);
        if (o->gpu_count < 0) return usage_error("--gpus: ", why);
        o->gpu = o->gpus[0], o->have_gpu = 1;
    } else {
        o->gpus[0] = o->gpu, o->gpu_count = 1;
    }
    if (!known_set(o->set)) return usage_error("--study: expected one of " STUDY_SETS ", got ", o->set);
    return -1;
}

/* --- one cell ------------------------------------------------------------------------------ */

typedef struct argv_list {
    char *v[48];
    int n;
    char gpu[16], sample_ms[16], epochs[16], steps[32]; /* the numbers' text */
} argv_list;

static void push(argv_list *a, const char *s) {
    if (a->n < (int)(sizeof a->v / sizeof a->v[0]) - 1) a->v[a->n++] = (char *)s;
    a->v[a->n] = NULL;
}

/* run_suite's argv for a cell; dry: the --dry-run --json fit check. */
static void cell_argv(argv_list *a, const char *self, const study_options *o, const study_cell *c,
                      const char *results, int dry, int gpu) {
    a->n = 0;
    push(a, self);
    push(a, "--mode");
    push(a, c->mode);
    push(a, "--mix");
    push(a, c->mix);
    if (!strcmp(c->mode, "all")) /* the paper's modes; streams and green are ours (run_suite --mode all) */
        push(a, "--mig-emulate"), push(a, "--skip"), push(a, "streams,green");
    if (!strcmp(c->mode, "mig") && !dry) push(a, "--mig-create");
    if (c->share_memory) push(a, "--mig-share-memory");
    if (o->train) push(a, "--train"), push(a, o->train);
    if (o->data_root) push(a, "--data-root"), push(a, o->data_root);
    snprintf(a->gpu, sizeof a->gpu, "%d", gpu);
    if (o->have_gpu) push(a, "--gpu"), push(a, a->gpu);
    if (dry) {
        push(a, "--dry-run");
        push(a, "--json");
        return;
    }
    push(a, "--results");
    push(a, results);
    snprintf(a->sample_ms, sizeof a->sample_ms, "%d", o->sample_ms);
    if (o->have_sample_ms) push(a, "--sample-ms"), push(a, a->sample_ms);
    else if (o->quick) push(a, "--sample-ms"), push(a, "50"); /* short epochs: more samples of each */
    push(a, "--epochs");
    snprintf(a->epochs, sizeof a->epochs, "%d", o->have_epochs ? o->epochs : 2);
    push(a, a->epochs);
    if (o->have_steps || c->steps) {
        snprintf(a->steps, sizeof a->steps, "%ld", o->have_steps ? o->steps : c->steps);
        push(a, "--steps-per-epoch");
        push(a, a->steps);
    }
}

/* run_suite's own fit check for the cell. 1 fits, 0 does not (reason filled), -1 the check
 * itself failed (reason filled). */
static int cell_fits(const char *self, const study_options *o, const study_cell *c, char *reason,
                     size_t size) {
    argv_list a;
    cell_argv(&a, self, o, c, NULL, 1, o->gpu);
    size_t cap = 1 << 20;
    char *out = malloc(cap);
    if (!out) return -1;
    int st = jobs_run_capture(a.v, environ, NULL, out, cap, 600);
    int rc = -1;
    /* exit 2 with the JSON: a plan that cannot be made (its plan_error says why) */
    int shown = st >= 0 && WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 2);
    cJSON *root = shown ? cJSON_Parse(out) : NULL;
    const cJSON *fits = cJSON_GetObjectItemCaseSensitive(root, "fits");
    const cJSON *fit_error = cJSON_GetObjectItemCaseSensitive(root, "fit_error");
    const cJSON *plan_error = cJSON_GetObjectItemCaseSensitive(root, "plan_error");
    int planned = !strcmp(c->mode, "mig-emulate") || !strcmp(c->mode, "all");
    if (!cJSON_IsBool(fits)) {
        snprintf(reason, size, "the fit check (run_suite --dry-run) failed: %s",
                 st < 0 ? "could not run it" : WIFEXITED(st) ? "see its message above" : "it was killed");
    } else if (!cJSON_IsTrue(fits)) {
        snprintf(reason, size, "%s", cJSON_IsString(fit_error) ? fit_error->valuestring : "footprints exceed the GPU");
        rc = 0;
    } else if (planned && cJSON_IsString(plan_error)) {
        snprintf(reason, size, "no MIG layout holds these jobs: %s", plan_error->valuestring);
        rc = 0;
    } else {
        rc = 1;
    }
    cJSON_Delete(root);
    free(out);
    return rc;
}

/* The run folder run_suite made under base (the only folder there). */
static int find_run_dir(const char *base, char *out, size_t size) {
    DIR *d = opendir(base);
    if (!d) return -1;
    int found = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            snprintf(out, size, "%s", e->d_name);
            found++;
        }
    }
    closedir(d);
    return found == 1 ? 0 : -1;
}

/* Runs argv with this terminal (live progress) and waits. A stop signal is passed on at once: the
 * child stops its jobs and writes what they measured, and the study stops after it. A study that
 * dies any other way takes it along (SIGTERM on the study's death: the same stop). */
static int run_child(char *const *argv) {
    pid_t pid;
    int rc = spawn_child(&pid, argv, environ, -1, -1, -1, SIGTERM);
    if (rc != 0) {
        fprintf(stderr, "run_suite --study: cannot start %s: %s\n", argv[0], strerror(rc));
        return -1;
    }
    return jobs_wait_child(pid);
}

static const char *status_of(int st) {
    if (st < 0 || !WIFEXITED(st)) return "failed";
    switch (WEXITSTATUS(st)) {
    case RUN_OK: return "complete";
    case RUN_PARTIAL: return "partial";
    case RUN_USAGE: return "refused";
    default: return WEXITSTATUS(st) > 128 ? "interrupted" : "failed";
    }
}

static void set_text(cJSON *o, const char *key, const char *value) {
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    cJSON_AddStringToObject(o, key, value);
}

/* --- the cells, over one GPU or several at once -------------------------------------------- */

/* What the workers share; lock guards next, worst, stopped, the JSON and study.json. */
typedef struct study_run {
    const study_options *o;
    const char *self, *dir;
    study_cell *cells;
    int count, next, worst, stopped;
    double t0;                                   /* the study's start, jobs_monotonic */
    cJSON *root, *list;
    pthread_mutex_t lock;
} study_run;

typedef struct study_slot {
    study_run *run;
    int gpu;
} study_slot;

/* One cell on gpu: the fit check, then the run (or the dry run's line). */
static void study_cell_on(study_run *r, int i, int gpu) {
    const study_options *o = r->o;
    study_cell *c = &r->cells[i];
    char reason[2048], err[1024];
    int fits = cell_fits(r->self, o, c, reason, sizeof reason);
    if (jobs_stop_signal()) return;
    if (o->dry_run) {
        printf("%-18s %-12s x%-3d %-60s %s%s\n", c->workload, c->mode, c->degree, c->mix,
               fits > 0 ? "fits" : fits == 0 ? "does not fit: " : "check failed: ", fits > 0 ? "" : reason);
        return;
    }
    pthread_mutex_lock(&r->lock);
    cJSON *cj = cJSON_GetArrayItem(r->list, i);
    cJSON_AddNumberToObject(cj, "gpu", gpu);
    pthread_mutex_unlock(&r->lock);
    if (fits <= 0) {
        pthread_mutex_lock(&r->lock);
        set_text(cj, "status", fits == 0 ? "does not fit" : "failed");
        set_text(cj, "reason", reason);
        if (fits < 0) r->worst = RUN_PARTIAL;
        pthread_mutex_unlock(&r->lock);
        fprintf(stderr, "[study] %d/%d %s x%d %s: %s: %s\n", i + 1, r->count, c->workload, c->degree,
                c->mode, fits == 0 ? "does not fit" : "not run", reason);
    } else {
        char base[PATH_MAX], name[96], safe[96], run[256];
        snprintf(name, sizeof name, "%s-x%d-%s", c->workload, c->degree, c->mode);
        job_safe_name(safe, sizeof safe, name);
        snprintf(base, sizeof base, "%s/%s", r->dir, safe);
        fprintf(stderr, "[study] %d/%d %s x%d %s on GPU %d: run_suite --mode %s --mix %s\n", i + 1, r->count,
                c->workload, c->degree, c->mode, gpu, c->mode, c->mix);
        argv_list a;
        cell_argv(&a, r->self, o, c, base, 0, gpu);
        double t0 = jobs_monotonic();
        int st = run_child(a.v);
        pthread_mutex_lock(&r->lock);
        const char *status = status_of(st);
        set_text(cj, "status", status);
        cJSON_AddNumberToObject(cj, "start_s", t0 - r->t0); /* since the study's start: overlaps show */
        cJSON_AddNumberToObject(cj, "wall_s", jobs_monotonic() - t0); /* set-up included */
        cJSON_AddNumberToObject(cj, "exit_status", st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        if (find_run_dir(base, run, sizeof run) == 0) {
            char rel[PATH_MAX];
            snprintf(rel, sizeof rel, "%s/%s", safe, run);
            set_text(cj, "folder", rel);
        }
        if (strcmp(status, "complete") != 0) {
            snprintf(reason, sizeof reason, "run_suite exited %d (its messages above; results in %s)",
                     st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1, base);
            set_text(cj, "reason", reason);
            if (r->worst == RUN_OK) r->worst = RUN_PARTIAL;
        }
        if (jobs_stop_signal() != 0 || !strcmp(status, "interrupted")) r->stopped = 1;
        pthread_mutex_unlock(&r->lock);
    }
    pthread_mutex_lock(&r->lock);
    if (results_write_json(r->dir, "study.json", r->root, err, sizeof err) != 0)
        fprintf(stderr, "run_suite --study: %s\n", err);
    pthread_mutex_unlock(&r->lock);
}

/* Takes the next cell until none is left or the study is stopped (the cells not started stay
 * "planned"). */
static void study_worker_gpu(study_run *r, int gpu) {
    for (;;) {
        pthread_mutex_lock(&r->lock);
        if (jobs_stop_signal()) r->stopped = 1;
        int i = r->stopped || r->next >= r->count ? -1 : r->next++;
        pthread_mutex_unlock(&r->lock);
        if (i < 0) return;
        study_cell_on(r, i, gpu);
        if (jobs_stop_signal()) {
            pthread_mutex_lock(&r->lock);
            r->stopped = 1;
            pthread_mutex_unlock(&r->lock);
        }
    }
}

static void *study_worker(void *arg) {
    study_slot *s = arg;
    study_worker_gpu(s->run, s->gpu);
    return NULL;
}

/* --- the study ----------------------------------------------------------------------------- */

static int mig_enabled(int gpu) {
    char err[512];
    nvml *nv = nvml_open(NULL, err, sizeof err);
    mig_session *s = nv ? calloc(1, sizeof *s) : NULL;
    int on = s && mig_open(s, nv, (unsigned)gpu, err, sizeof err) == 0 &&
             mig_require_enabled(s, err, sizeof err) == 0;
    free(s);
    nvml_close(nv);
    return on;
}

static void iso_now(char *out, size_t size) {
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

/* The suite's git revision, when run_suite runs from a checkout that git can read. */
static void suite_revision(char *out, size_t size) {
    char *argv[] = {"git", "-C", SUITE_SOURCE_DIR, "rev-parse", "HEAD", NULL};
    out[0] = 0;
    char text[128] = "";
    int st = jobs_run_capture(argv, environ, NULL, text, sizeof text, 10);
    if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        text[strcspn(text, "\r\n")] = 0;
        snprintf(out, size, "%s", text);
    }
}

static cJSON *cell_json(const study_cell *c) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "workload", c->workload);
    cJSON_AddStringToObject(j, "mode", c->mode);
    cJSON_AddStringToObject(j, "mix", c->mix);
    cJSON_AddNumberToObject(j, "degree", c->degree);
    cJSON_AddNumberToObject(j, "steps_per_epoch", (double)c->steps);
    mix m;
    char err[256], canonical[256];
    if (mix_parse(&m, c->mix, err, sizeof err) == 0 && m.count > 0 &&
        mix_job_format(&m.jobs[0], canonical, sizeof canonical) >= 0 && c->degree == m.count &&
        strcmp(c->mode, "all") != 0 && strchr(c->mix, '+') == NULL)
        cJSON_AddStringToObject(j, "job", canonical);
    cJSON_AddStringToObject(j, "status", "planned");
    return j;
}


int study_main(int argc, char **argv) {
    study_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc >= 0) return rc;
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) {
        fprintf(stderr, "run_suite --study: cannot find this program's path: %s\n", strerror(errno));
        return RUN_FAILED;
    }
    self[len] = 0;
    int with_mig = !o.dry_run && mig_enabled(o.gpu);
    study_cell *cells = calloc(STUDY_MAX_CELLS, sizeof *cells);
    if (!cells) return RUN_FAILED;
    int count = study_cells(o.set, o.quick, o.degrees, with_mig, cells, STUDY_MAX_CELLS);
    if (count > STUDY_MAX_CELLS) count = STUDY_MAX_CELLS;
    jobs_install_stop_signals(); /* Ctrl-C: passed on to the running cell; the study then ends */

    char dir[PATH_MAX], id[256], err[1024], started[32];
    if (!o.dry_run && results_make_run_dir(o.results, "study", o.set, dir, sizeof dir, id, sizeof id,
                                           err, sizeof err) != 0) {
        fprintf(stderr, "run_suite --study: %s\n", err);
        free(cells);
        return RUN_FAILED;
    }
    iso_now(started, sizeof started);
    cJSON *root = cJSON_CreateObject(), *list = NULL;
    cJSON_AddStringToObject(root, "study", o.set);
    cJSON_AddBoolToObject(root, "quick", o.quick);
    cJSON_AddStringToObject(root, "started", started);
    char rev[64];
    suite_revision(rev, sizeof rev);
    cJSON_AddStringToObject(root, "suite_revision", rev);
    cJSON_AddBoolToObject(root, "real_mig", with_mig);
    cJSON *used = cJSON_AddArrayToObject(root, "gpus");
    for (int g = 0; g < o.gpu_count; g++) cJSON_AddItemToArray(used, cJSON_CreateNumber(o.gpus[g]));
    cJSON_AddNumberToObject(root, "cells_at_once", o.gpu_count);
    if (o.gpu_count > 1)
        cJSON_AddStringToObject(root, "cells_at_once_note", "one cell per GPU at a time, several GPUs at once: cells "
                                "beside each other share the host's CPU, PCIe and memory");
    cJSON *cmd = cJSON_AddArrayToObject(root, "command");
    for (int i = 0; i < argc; i++) cJSON_AddItemToArray(cmd, cJSON_CreateString(argv[i]));
    list = cJSON_AddArrayToObject(root, "cells");
    for (int i = 0; i < count; i++) cJSON_AddItemToArray(list, cell_json(&cells[i]));
    if (!o.dry_run)
        fprintf(stderr, "[study] %s%s: %d runs into %s\n", o.set, o.quick ? " (quick)" : "", count, dir);

    study_run run = {.o = &o, .self = self, .dir = dir, .cells = cells, .count = count, .root = root, .list = list,
                     .worst = RUN_OK};
    pthread_mutex_init(&run.lock, NULL);
    double t_study = run.t0 = jobs_monotonic();
    if (o.dry_run && o.gpu_count > 1)
        printf("cells at once: %d, one per GPU (%s), each GPU taking the next cell when its last ends; they share "
               "the host's CPU, PCIe and memory\n", o.gpu_count, o.gpus_text);
    if (o.dry_run || o.gpu_count == 1) {
        study_worker_gpu(&run, o.gpus[0]);
    } else {
        pthread_t workers[PLACEMENT_MAX_GPUS];
        study_slot slots[PLACEMENT_MAX_GPUS];
        for (int g = 0; g < o.gpu_count; g++) {
            slots[g] = (study_slot){&run, o.gpus[g]};
            if (pthread_create(&workers[g], NULL, study_worker, &slots[g]) != 0) slots[g].run = NULL;
        }
        for (int g = 0; g < o.gpu_count; g++)
            if (slots[g].run) pthread_join(workers[g], NULL);
    }
    pthread_mutex_destroy(&run.lock);
    int worst = run.worst, stopped = run.stopped;
    if (o.dry_run) {
        printf("%d runs (%s%s); real MIG is checked when the study runs\n", count, o.set, o.quick ? ", quick" : "");
        cJSON_Delete(root);
        free(cells);
        return stopped ? 128 + jobs_stop_signal() : RUN_OK;
    }
    char finished[32];
    iso_now(finished, sizeof finished);
    fprintf(stderr, "[study] %d runs in %.0f s\n", count, jobs_monotonic() - t_study);
    cJSON_AddStringToObject(root, "finished", finished);
    cJSON_AddStringToObject(root, "status", stopped ? "interrupted" : worst == RUN_OK ? "complete" : "partial");
    if (results_write_json(dir, "study.json", root, err, sizeof err) != 0)
        fprintf(stderr, "run_suite --study: %s\n", err);
    cJSON_Delete(root);
    free(cells);
    char page[PATH_MAX + 16];
    snprintf(page, sizeof page, "%s/report.html", dir);
    char *report_args[] = {dir, "-o", page};
    if (report_run(report_args, 3) != 0)
        fprintf(stderr, "[study] the report was not written; the runs are in %s (run_suite report %s)\n", dir, dir);
    else
        fprintf(stderr, "[study] report: %s\n", page);
    if (stopped) return 128 + (jobs_stop_signal() ? jobs_stop_signal() : 2);
    return worst;
}
