/* run_suite --gpus: a mix over several GPUs, one ordinary run_suite per GPU (see gpus.h). */
#define _GNU_SOURCE
#include "runner/suite/multi/gpus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "base/line_reader.h"
#include "results/results.h"
#include "kernels/knobs.h"
#include "runner/cli.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/jobs/spawn.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/modes/mode.h"
#include "runner/suite/gpu/monitor.h"
#include "runner/suite/multi/gpus_summary.h"
#include "runner/suite/plan/placement.h"
#include "runner/suite/run/request_check.h"
#include "runner/suite/run/request_file.h"
#include "runner/suite/run/suite.h"
#include "runner/train/step_window.h"

extern char **environ;

/* The runs one --gpus starts: one per card and one per data-parallel job. */
#define GPUS_MAX_RUNS (PLACEMENT_MAX_GPUS + MIX_MAX_JOBS)

/* The --gpus form's own: run_suite's rows, and how a data-parallel job runs beside MPS cards. */
static const char *const ADDS[] = {"--ddp-under", NULL};
static int gpus_main(run_args *args);
#define GPUS_SYNOPSIS                                                                                  \
    "usage: run_suite --gpus LIST --mode MODE --mix MIX [options]\n"                                   \
    "The jobs are placed over the GPUs before anything runs, then every GPU with jobs runs its own\n"  \
    "run_suite (handed the request with its jobs and its GPU), all at once, into\n"                   \
    "<results>/<run-id>/gpu-<G>/.\n"
#define GPUS_EPILOGUE                                                                                  \
    "Every other run_suite option (run_suite --help) is taken too, and each GPU's run gets the whole\n" \
    "request (request.json in its folder); the first one is checked with --dry-run before anything is\n" \
    "written.\n"                                                                                        \
    "exit status: the worst of the GPUs' runs; 2 bad usage or a placement that does not fit\n"
const run_form gpus_form = {
    .option = "--gpus",
    .help = {.name = "run_suite --gpus", .synopsis = GPUS_SYNOPSIS, .epilogue = GPUS_EPILOGUE},
    .adds = ADDS,
    .main = gpus_main,
};

int gpus_run_request(const run_request *whole, const gpus_card *c, const char *mode, const char *dir, int dry_run,
                     run_request *out) {
    *out = *whole;
    out->memory = NULL;
    if (suite_mode_options_own(out) != 0) return -1; /* its own check derives into its own copy */
    out->mix.count = c->job_count;
    for (int k = 0; k < c->job_count; k++) out->mix.jobs[k] = whole->mix.jobs[c->jobs[k]];
    out->mix_text = c->mix;
    out->gpu = c->gpu;
    out->gpus_text = NULL;
    out->baseline_dir = c->reference[0] ? c->reference : NULL;
    out->results_dir = dir;
    if (mode) out->mode_name = mode, out->skip_modes = NULL;
    out->no_monitor |= c->ddp;
    out->dry_run = dry_run;
    out->json = 0;
    return 0;
}


/* The mix of the single-card jobs placed on slot g (a data-parallel job has a run of its own: ddp_run
 * below), and which jobs of the whole mix they are. */
static void mix_of_slot(const mix *m, const placement *p, int g, char *out, size_t size, gpus_card *card) {
    out[0] = 0;
    card->job_count = 0;
    for (int j = 0; j < m->count; j++) {
        if (p->gpus_of[j][0] != g || m->jobs[j].gpus > 1) continue;
        char one[256];
        mix_job_format(&m->jobs[j], one, sizeof one);
        size_t len = strlen(out);
        snprintf(out + len, size - len, "%s%s", len ? "+" : "", one);
        card->jobs[card->job_count++] = j;
    }
}

/* A run's folder under the run: gpu-<G> for a card's, ddp-<J> for data-parallel job J's. */
static void run_dir_name(const gpus_card *c, char *out, size_t size) {
    if (c->ddp) snprintf(out, size, "ddp-%d", c->jobs[0]);
    else snprintf(out, size, "gpu-%d", c->gpu);
}


/* The run of data-parallel job j, after the cards: its one job, on its first card's index, with
 * CUDA_VISIBLE_DEVICES naming its cards in placement order (rank r on the r-th). 0, or 2 with the
 * message printed when the list does not fit (never cut: a rank would find no card). */
static int ddp_run(const mix *m, const placement *p, const int *index, const monitor_gpu *probes, int j,
                   char *mix_text, size_t size, gpus_card *card) {
    memset(card, 0, sizeof *card);
    card->ddp = 1, card->gpu = index[p->gpus_of[j][0]], card->mix = mix_text;
    card->jobs[card->job_count++] = j;
    mix_job_format(&m->jobs[j], mix_text, size);
    size_t len = 0;
    for (int r = 0; r < m->jobs[j].gpus; r++) {
        int n = snprintf(card->devices + len, sizeof card->devices - len, "%s%s", r ? "," : "",
                         probes[p->gpus_of[j][r]].visible);
        if (n < 0 || (size_t)n >= sizeof card->devices - len) {
            fprintf(stderr, "error: job %d (%s): the CUDA_VISIBLE_DEVICES of its %d cards does not fit in %zu "
                    "characters\n", j, m->jobs[j].label, m->jobs[j].gpus, sizeof card->devices - 1);
            return 2;
        }
        len += (size_t)n;
    }
    return 0;
}

/* How a data-parallel job's run goes in a pass of mode: alone (serial); beside the cards as an MPS
 * client where their jobs are and --ddp-under mps says so; else beside them outside MPS (naive). */
static int mode_has(const char *mode, unsigned flag) {
    const suite_mode *m = suite_mode_find(mode);
    return m && (m->flags & flag);
}
static int sequential(const char *mode) { return mode_has(mode, MODE_SEQUENTIAL); }
static int ddp_as_client(const run_request *a, const char *mode) {
    return a->ddp_under == DDP_UNDER_MPS && mode_has(mode, MODE_MPS_CLIENTS);
}
static const char *ddp_mode(const run_request *a, const char *mode) {
    if (sequential(mode)) return mode;
    return suite_mode_with(ddp_as_client(a, mode) ? MODE_MPS_CLIENTS : MODE_PLAIN)->name;
}
static const char *ddp_how(const run_request *a, const char *mode) {
    if (sequential(mode)) return "alone, before the cards' runs (serial)";
    if (ddp_as_client(a, mode))
        return "beside the cards' jobs, as the client of an MPS daemon over its cards (--ddp-under mps), one start "
               "barrier (and one window, under the window measurement) with them";
    if (!mode_has(mode, MODE_MPS_CLIENTS))
        return "beside the cards' jobs, outside MPS as they are, one start barrier (and one window, under the window "
               "measurement) with them";
    return "beside the cards' jobs, outside MPS (--ddp-under none), one start barrier (and one window, under the "
           "window measurement) with them";
}

/* The one run folder under dir (a GPU's run_suite makes exactly one, beside the request it was
 * handed), or "". */
static void only_run_folder(const char *dir, char *out, size_t size) {
    out[0] = 0;
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && !out[0] && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            snprintf(out, size, "%s", path);
        free(names[i]);
    }
    free(names);
}

/* The modes a run goes through: one pass under the request's --mode, unless --mode all meets a
 * data-parallel job. Each card's run_suite would then run every mode by itself, with no go relay
 * between the cards' groups and the job's; so this run makes one pass per mode of --mode all that can
 * hold the job (serial first: the others' references), and names each mode it leaves out and why. */
typedef struct gpus_passes {
    int count;
    const char *mode[SUITE_MODES_MAX];
    int left_count;
    const char *left[SUITE_MODES_MAX], *left_why[SUITE_MODES_MAX];
} gpus_passes;

static int listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == 0)) return 1;
    return 0;
}

static void plan_passes(const char *mode, int ddp_jobs, const char *skip, gpus_passes *out) {
    memset(out, 0, sizeof *out);
    if (strcmp(mode, SUITE_ALL) != 0 || ddp_jobs == 0) {
        out->count = 1;
        return;
    }
    int n;
    const suite_mode *const *modes = suite_modes(&n);
    for (int k = 0; k < n; k++) {
        if (!(modes[k]->flags & MODE_IN_ALL)) continue;
        const char *why = listed(skip, modes[k]->name) ? "left out by --skip" : modes[k]->no_data_parallel;
        if (why) out->left[out->left_count] = modes[k]->name, out->left_why[out->left_count++] = why;
        else out->mode[out->count++] = modes[k]->name;
    }
}

/* The folder of pass k's runs: the run folder itself, or <run>/<mode>/ when there are several. */
static void pass_dir(const gpus_passes *ps, int k, const char *run_dir, char *out, size_t size) {
    if (ps->count > 1) snprintf(out, size, "%s/%s", run_dir, ps->mode[k]);
    else snprintf(out, size, "%s", run_dir);
}

static void passes_json(const run_request *a, const gpus_passes *ps, cJSON *root) {
    if (ps->count < 2 && !ps->left_count) return;
    cJSON *list = cJSON_AddArrayToObject(root, "modes_run");
    for (int k = 0; k < ps->count; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "mode", ps->mode[k]);
        cJSON_AddStringToObject(o, "data_parallel_mode", ddp_mode(a, ps->mode[k]));
        cJSON_AddStringToObject(o, "how", ddp_how(a, ps->mode[k]));
        cJSON_AddItemToArray(list, o);
    }
    list = cJSON_AddArrayToObject(root, "modes_left_out");
    for (int k = 0; k < ps->left_count; k++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "mode", ps->left[k]);
        cJSON_AddStringToObject(o, "why", ps->left_why[k]);
        cJSON_AddItemToArray(list, o);
    }
}

static void print_passes(const run_request *a, const gpus_passes *ps) {
    if (ps->count < 2 && !ps->left_count) return;
    printf("--mode all with a data-parallel job: one pass per mode that can hold it, each into <run>/<mode>/:\n");
    for (int k = 0; k < ps->count; k++)
        printf("  %s: the data-parallel job %s\n", ps->mode[k], ddp_how(a, ps->mode[k]));
    for (int k = 0; k < ps->left_count; k++) printf("  left out: %s (%s)\n", ps->left[k], ps->left_why[k]);
}

/* Where each job's reference (the same job alone on the same card) comes from: --baseline DIR
 * (DIR/gpu-<G>/<its one run folder>, checked here), the serial part of --mode all, the run itself
 * (serial), or nowhere (why, for the summary's null fields). 0, or 2 with the message printed. */
static int find_references(const run_request *a, const gpus_passes *ps, const mix *m, gpus_card *cards, int count,
                           char *source, size_t source_size, char *why, size_t why_size) {
    int serial_pass = 0;
    for (int k = 0; k < ps->count; k++) serial_pass |= sequential(ps->mode[k]);
    why[0] = 0;
    if (a->baseline_dir) {
        snprintf(source, source_size, "--baseline %s: each GPU's run of it", a->baseline_dir);
        for (int g = 0; g < count; g++) {
            if (!cards[g].mix[0]) continue;
            char dir[PATH_MAX + 32], summary[PATH_MAX * 2], name[32];
            run_dir_name(&cards[g], name, sizeof name);
            snprintf(dir, sizeof dir, "%s/%s", a->baseline_dir, name);
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
                return run_args_usage("--baseline %s: %s/<run>/summary.json there is missing or ran other jobs than "
                                      "this placement gives that GPU: expected an earlier run_suite --gpus LIST --mode "
                                      "serial of this mix", a->baseline_dir, name);
        }
    } else if (!strcmp(a->mode_name, SUITE_ALL) && (ps->count == 1 || serial_pass)) {
        snprintf(source, source_size, "the serial part of --mode all on each GPU");
    } else if (sequential(a->mode_name)) {
        snprintf(source, source_size, "the run itself (serial: each job alone on its GPU)");
    } else {
        snprintf(source, source_size, "none: STP and ANTT will be null (give --baseline DIR or --mode all)");
        snprintf(why, why_size, "no reference: give --baseline DIR (an earlier run_suite --gpus LIST --mode serial of "
                 "this mix) or run --mode all (each GPU's serial part)");
    }
    return 0;
}

static cJSON *plan_json(const run_request *a, const gpus_passes *ps, const mix *m, const placement *p,
                        const placement_gpu *gpus, const gpus_card *cards, int runs, const char *references) {
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
    passes_json(a, ps, root);
    if (runs == p->gpu_count) return root;
    cJSON_AddStringToObject(root, "ddp_under", ddp_under_name(a->ddp_under));
    list = cJSON_AddArrayToObject(root, "data_parallel");
    for (int g = p->gpu_count; g < runs; g++) {
        const gpus_card *c = &cards[g];
        cJSON *o = cJSON_CreateObject(), *on = cJSON_CreateArray();
        cJSON_AddNumberToObject(o, "job", c->jobs[0]);
        for (int r = 0; r < m->jobs[c->jobs[0]].gpus; r++)
            cJSON_AddItemToArray(on, cJSON_CreateNumber(gpus[p->gpus_of[c->jobs[0]][r]].index));
        cJSON_AddItemToObject(o, "gpus", on);
        cJSON_AddStringToObject(o, "cuda_visible_devices", c->devices);
        if (ps->count == 1) { /* several passes: modes_run says each pass's */
            cJSON_AddStringToObject(o, "mode", ddp_mode(a, a->mode_name));
            cJSON_AddStringToObject(o, "how", ddp_how(a, a->mode_name));
        }
        cJSON_AddStringToObject(o, "mix", c->mix);
        if (c->reference[0]) cJSON_AddStringToObject(o, "reference", c->reference);
        cJSON_AddItemToArray(list, o);
    }
    return root;
}

static void print_plan(const run_request *a, const gpus_passes *ps, const mix *m, const placement *p,
                       const placement_gpu *gpus, const gpus_card *cards, int runs, const char *references) {
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
    for (int g = p->gpu_count; g < runs; g++) {
        if (ps->count == 1)
            printf("  data-parallel job %d:%s: its own run, --mode %s, CUDA_VISIBLE_DEVICES=%s NCCL_NVLS_ENABLE=0, %s -> "
                   "--mix %s\n", cards[g].jobs[0], m->jobs[cards[g].jobs[0]].label,
                   ddp_mode(a, a->mode_name), cards[g].devices, ddp_how(a, a->mode_name), cards[g].mix);
        else
            printf("  data-parallel job %d:%s: its own run in each pass, CUDA_VISIBLE_DEVICES=%s NCCL_NVLS_ENABLE=0 -> "
                   "--mix %s\n", cards[g].jobs[0], m->jobs[cards[g].jobs[0]].label, cards[g].devices, cards[g].mix);
    }
    print_passes(a, ps);
    printf("references (each job alone on its GPU, for STP and ANTT): %s\n", references);
}

/* summary.json of the whole run (gpus_summary.h); --mode all: one per mode that ran, each against
 * its GPU's serial part. */
static void summarize(const char *run_dir, const mix *m, gpus_card *cards, int count, const char *mode,
                      const char *no_reference) {
    cJSON *root;
    if (sequential(mode)) /* each job alone on its GPU: its own reference */
        for (int g = 0; g < count; g++) snprintf(cards[g].reference, sizeof cards[g].reference, "%s", cards[g].run_folder);
    if (strcmp(mode, SUITE_ALL) != 0) {
        root = gpus_summary_mode(m, cards, count, NULL, sequential(mode), no_reference, stdout);
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

/* A stop signal for the whole run (Ctrl-C included: each run_suite is in a process group of its
 * own) is passed on at once to every run_suite, which stops its jobs and writes what it measured;
 * this one then merges as usual. */
static pid_t running[GPUS_MAX_RUNS];
static volatile sig_atomic_t stop_signal;

static void pass_on(int signo) {
    stop_signal = signo;
    for (int g = 0; g < GPUS_MAX_RUNS; g++)
        if (running[g] > 0) kill(running[g], signo);
}

/* This end of one run's go relay (the protocol is jobs.h's jobs_relay): go, the write end that says
 * go and window-start; ready, the read end it says ready and warm on, and what came on it. -1: none,
 * or closed (the run ended, or the relay is done). */
typedef struct run_relay {
    int go, ready;
    line_reader said;
} run_relay;

static void close_relay(run_relay *r) {
    if (r->go >= 0) close(r->go);
    if (r->ready >= 0) close(r->ready);
    r->go = r->ready = -1;
}

/* Starts one run's run_suite into dir, its pid in *pid (an entry of running[]): its request
 * (gpus_run_request: mode, NULL for the whole run's) written to dir/request.json and handed to it.
 * relayed: its barrier and window join the others' (SUITE_GO_RELAY): *relay is this end of its
 * relay. 0, or 1 with the message printed. */
static int start_run(const gpus_card *c, const run_request *whole, const char *self, const char *mode,
                     const char *dir, int relayed, pid_t *pid, run_relay *relay) {
    run_request one;
    char err[1024], path[PATH_MAX + 32];
    *pid = 0;
    int written = gpus_run_request(whole, c, mode, dir, 0, &one) == 0 && request_file_write(&one, dir, err, sizeof err) == 0;
    run_request_free(&one);
    if (!written) {
        fprintf(stderr, "error: the request of the run_suite of %s: %s\n", dir, err);
        return 1;
    }
    snprintf(path, sizeof path, "%s/%s", dir, REQUEST_FILE_NAME);
    char *child[] = {(char *)self, "--request", path, NULL};
    job_env env = {0};
    if (c->ddp) job_env_set(&env, knob_name(KNOB_JOB_DEVICES), "%s", c->devices);
    int go_pipe[2] = {-1, -1}, ready_pipe[2] = {-1, -1}, rc = 0;
    if (relayed) {
        if (pipe2(go_pipe, O_CLOEXEC) != 0 || pipe2(ready_pipe, O_CLOEXEC) != 0) rc = errno;
        /* only this child inherits its ends: the other runs' hold none, so its end of file is its end */
        else fcntl(go_pipe[0], F_SETFD, 0), fcntl(ready_pipe[1], F_SETFD, 0),
             job_env_set(&env, knob_name(KNOB_GO_RELAY), "%d,%d", go_pipe[0], ready_pipe[1]);
    }
    char **envp = job_build_env(environ, &env);
    if (!envp && !rc) {
        if (env.refused[0]) {
            fprintf(stderr, "error: cannot start the run_suite of %s: its environment: %s\n", dir, env.refused);
            if (go_pipe[0] >= 0) close(go_pipe[0]), close(go_pipe[1]), close(ready_pipe[0]), close(ready_pipe[1]);
            return 2;
        }
        rc = ENOMEM;
    }
    sigset_t stops, unblocked;
    sigemptyset(&stops);
    sigaddset(&stops, SIGINT), sigaddset(&stops, SIGTERM), sigaddset(&stops, SIGHUP);
    *pid = 0;
    sigprocmask(SIG_BLOCK, &stops, &unblocked); /* a stop now waits until the pid is known */
    if (!rc && !stop_signal) rc = spawn_child(pid, child, envp, -1, -1, -1, SIGTERM);
    if (rc) *pid = 0;
    sigprocmask(SIG_SETMASK, &unblocked, NULL);
    job_free_strv(envp);
    if (go_pipe[0] >= 0) close(go_pipe[0]);
    if (ready_pipe[1] >= 0) close(ready_pipe[1]);
    if (rc || *pid <= 0) {
        if (go_pipe[1] >= 0) close(go_pipe[1]);
        if (ready_pipe[0] >= 0) close(ready_pipe[0]);
        if (rc) fprintf(stderr, "error: cannot start the run_suite of %s: %s\n", dir, strerror(rc));
        return rc ? 1 : 128 + stop_signal;
    }
    *relay = (run_relay){.go = go_pipe[1], .ready = ready_pipe[0], .said = {.fd = ready_pipe[0]}};
    return 0;
}

/* Waits until every run still on its relay has said word (a line) or ended (the end of file: its
 * relay is closed). 0, or -1 when a stop came or the runs cannot be heard (the message printed). */
static int hear_from_all(run_relay *r, int n, const char *word) {
    int heard[GPUS_MAX_RUNS] = {0};
    for (;;) {
        struct pollfd fds[GPUS_MAX_RUNS];
        int at[GPUS_MAX_RUNS], waiting = 0;
        for (int g = 0; g < n; g++)
            if (r[g].ready >= 0 && !heard[g])
                fds[waiting] = (struct pollfd){r[g].ready, POLLIN, 0}, at[waiting++] = g;
        if (!waiting) return 0;
        if (stop_signal) return -1;
        if (poll(fds, (nfds_t)waiting, 1000) < 0 && errno != EINTR) {
            fprintf(stderr, "error: --gpus: poll over the runs' go relays: %s (each run goes on by itself)\n",
                    strerror(errno));
            return -1;
        }
        for (int k = 0; k < waiting; k++) {
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) continue;
            run_relay *one = &r[at[k]];
            char line[64];
            int got;
            while (!heard[at[k]] && (got = line_reader_next(&one->said, 0, line, sizeof line)) != 0) {
                if (got < 0) close_relay(one); /* it ended */
                if (got < 0 || strcmp(line, word) == 0) heard[at[k]] = 1;
            }
        }
    }
}

/* line to every run still on its relay, back to back; a run that cannot take it has ended. */
static void say_to_all(run_relay *r, int n, const char *line) {
    for (int g = 0; g < n; g++) {
        if (r[g].go < 0) continue;
        ssize_t w;
        do w = write(r[g].go, line, strlen(line));
        while (w < 0 && errno == EINTR);
        if (w != (ssize_t)strlen(line)) close_relay(&r[g]);
    }
}

/* The go relays of runs started together (jobs.h has the protocol). One start barrier: once every
 * run has said ready (or ended), go to all at once, each run then releasing its jobs. Then, under
 * the window measurement (window), one window: once every run has said warm (or ended),
 * "window-start T0" to all, T0 = now on the window lines' clock, and every run's first window opens
 * at that T0. A stop (or a failed poll) closes the relays instead: the end of file releases
 * whatever still waits, each run going on by itself (jobs.h). */
static void relay_runs(run_relay *r, int n, int window) {
    if (hear_from_all(r, n, "ready") == 0) {
        say_to_all(r, n, "go\n");
        if (window && hear_from_all(r, n, "warm") == 0) {
            char line[64];
            snprintf(line, sizeof line, "window-start %.6f\n", clock_unix());
            say_to_all(r, n, line);
        }
    }
    for (int g = 0; g < n; g++) close_relay(&r[g]);
}

/* What every pass of one --gpus run shares. */
typedef struct pass_args {
    const run_request *a;   /* the whole run's request */
    const char *self;
    int window;             /* the window measurement: one window across the runs */
    int ddp_jobs, runs, cards;
} pass_args;

/* One pass: every run at once into dir (serial: the data-parallel jobs' alone first); with a
 * data-parallel job beside the cards, under one start barrier and one window (relay_runs). Each run
 * stops its own jobs and daemon on the signal passed on (pass_on), or on the SIGTERM it gets when
 * this one dies. mode: the pass's mode; override: what the cards' runs get in place of the whole
 * run's --mode (NULL: that one). Fills each card's run_folder and exit_status; the worst status. */
static int run_pass(const pass_args *pa, gpus_card *cards, const char *mode, const char *override, const char *dir) {
    int status[GPUS_MAX_RUNS] = {0}, worst = 0, count = pa->cards, runs = pa->runs;
    int relayed = pa->ddp_jobs > 0 && !sequential(mode);
    char err[512];
    /* serial: each data-parallel job alone, one after another, then the cards' runs at once */
    int phases = relayed ? 1 : 1 + pa->ddp_jobs;
    for (int phase = 0; phase < phases; phase++) {
        int last = phase == phases - 1;
        int from = last ? 0 : count + phase, to = !last ? count + phase + 1 : relayed ? runs : count;
        run_relay relays[GPUS_MAX_RUNS];
        for (int g = from; g < to; g++) {
            relays[g] = (run_relay){.go = -1, .ready = -1};
            if (!cards[g].mix[0]) continue;
            char name[32], one[PATH_MAX + 96];
            run_dir_name(&cards[g], name, sizeof name);
            snprintf(one, sizeof one, "%s/%s", dir, name);
            if (results_make_dirs(one, err, sizeof err) != 0) {
                fprintf(stderr, "error: %s\n", err);
                status[g] = worst = 1;
                continue;
            }
            status[g] = start_run(&cards[g], pa->a, pa->self, cards[g].ddp ? ddp_mode(pa->a, mode) : override, one,
                                  relayed, &running[g], &relays[g]);
            if (status[g] > worst) worst = status[g];
        }
        /* every run is handed the same request but its part: one measurement, the same --window and --windows */
        if (relayed) relay_runs(relays + from, to - from, pa->window);
        for (int g = from; g < to; g++) {
            if (running[g] <= 0) continue;
            int st;
            while (waitpid(running[g], &st, 0) < 0 && errno == EINTR) continue;
            status[g] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            if (status[g] > worst) worst = status[g]; /* 1 failed < 2 refused < 3 partial < 128+N stopped */
            running[g] = 0;
        }
    }
    for (int g = 0; g < runs; g++) {
        char name[32], one[PATH_MAX + 96];
        run_dir_name(&cards[g], name, sizeof name);
        snprintf(one, sizeof one, "%s/%s", dir, name);
        cards[g].exit_status = status[g];
        cards[g].run_folder[0] = 0;
        if (cards[g].mix[0]) only_run_folder(one, cards[g].run_folder, sizeof cards[g].run_folder);
    }
    return worst;
}

/* Every run as the run would start it (each card's and each data-parallel job's, under each pass's
 * mode, with its environment), with --dry-run: the request is checked here as that run_suite will
 * check it, then that run_suite judges its plans, its fit and its reference, so whatever a run would
 * refuse before its jobs start is refused once, here, before any folder is made, in the dry run as in
 * the run (exit 2 as the run's). */
static int check_runs(const run_request *whole, const char *self, const gpus_passes *ps, const gpus_card *cards,
                      int runs) {
    for (int k = 0; k < ps->count; k++)
        for (int g = 0; g < runs; g++) {
            const gpus_card *c = &cards[g];
            if (!c->mix[0]) continue;
            const char *pass = ps->count == 1 ? NULL : ps->mode[k];
            const char *mode = c->ddp ? ddp_mode(whole, pass ? pass : whole->mode_name) : pass;
            run_request one;
            char err[2048];
            if (gpus_run_request(whole, c, mode, whole->results_dir, 0, &one) != 0) return 1;
            /* a data-parallel job's run sees its cards as its run will (start_run's environment) */
            if (c->ddp) setenv(knob_name(KNOB_JOB_DEVICES), c->devices, 1);
            int rc = request_file_dry_check(self, &one, err, sizeof err);
            if (c->ddp) unsetenv(knob_name(KNOB_JOB_DEVICES));
            run_request_free(&one);
            if (rc < 0) return run_args_usage("%s", err);
            if (rc == 0) continue;
            char which[96];
            if (c->ddp) snprintf(which, sizeof which, "data-parallel job %d's run", c->jobs[0]);
            else snprintf(which, sizeof which, "GPU %d's run", c->gpu);
            fprintf(stderr, "run_suite: --gpus: %s%s%s is refused (checked with --dry-run before anything is written, "
                    "its message is above)\n", which, mode ? " under --mode " : "", mode ? mode : "");
            return rc;
        }
    return 0;
}

/* What --gpus asks beside the run's own checks; 0 to go on, else the exit status (message printed). */
static int check_whole(const run_args *args, const suite_mode **mode) {
    const run_request *a = &args->req;
    /* each GPU's run folder would hold repeats, not the one summary.json the summary reads */
    if (a->repeat > 1)
        return run_args_usage("--repeat does not go with --gpus: repeat the run on one GPU (--gpu N --repeat N)");
    if (args->have_gpu) return run_args_usage("--gpu and --gpus exclude each other: --gpus LIST names every GPU");
    if (!a->mix_text) return run_args_usage("--mix is required, e.g. S+M+M (run_suite --list shows the presets)");
    if (!a->mode_name) return run_args_usage("--mode is required: one of %s", suite_mode_names());
    const suite_mode *m = suite_mode_find(a->mode_name);
    if (a->ddp_under == DDP_UNDER_MPS && m && !(m->flags & MODE_MPS_CLIENTS))
        return run_args_usage("--ddp-under mps goes with the modes whose jobs are MPS clients (mps, or mps's pass of "
                              "--mode all), not --mode %s: there the data-parallel job runs %s", a->mode_name,
                              m->flags & MODE_SEQUENTIAL ? "alone" : "outside MPS");
    *mode = m;
    return 0;
}

static int gpus_main(run_args *args) {
    run_request *a = &args->req;
    const suite_mode *mode = NULL;
    int bad = check_whole(args, &mode);
    if (bad) return bad;
    char err[2048];
    int index[PLACEMENT_MAX_GPUS];
    int count = placement_parse_gpus(a->gpus_text, index, PLACEMENT_MAX_GPUS, err, sizeof err);
    if (count < 0) return run_args_usage("%s", err);
    if (run_request_set_mix(a, a->mix_text, err, sizeof err) != 0) return run_args_usage("%s", err);
    const mix *m = &a->mix;
    if (!mode && strcmp(a->mode_name, SUITE_ALL) != 0)
        return run_args_usage("--mode %s: expected one of %s", a->mode_name, suite_mode_names());
    if (access(a->train_path, X_OK) != 0)
        return run_args_usage("cannot run the train program at %s (build it, or give --train PATH)", a->train_path);
    const char *self = args->self;

    placement_gpu gpus[PLACEMENT_MAX_GPUS];
    static monitor_gpu probes[PLACEMENT_MAX_GPUS];
    for (int g = 0; g < count; g++) {
        monitor_probe_gpu(index[g], &probes[g]);
        gpus[g] = (placement_gpu){index[g], probes[g].memory_bytes};
    }
    /* every card against what NVML counts, before anything is placed or written (the dry run too); where
       NVML cannot tell, or on a login node (run_suite --slurm's check), what is not checked is said */
    int exist = suite_node_checks_later() ? 0 : monitor_gpus_exist(index, count, err, sizeof err);
    if (exist < 0) return run_args_usage("--gpus %s: %s", a->gpus_text, err);
    if (exist > 0) fprintf(stderr, "warning: not checked: that GPUs %s exist (%s)\n", a->gpus_text, err);
    placement_job jobs[MIX_MAX_JOBS];
    job_footprint fp[MIX_MAX_JOBS];
    for (int j = 0; j < m->count; j++) {
        if (job_query_footprint(a, &m->jobs[j], &fp[j], err, sizeof err) != 0) {
            fprintf(stderr, "error: job %d (%s): %s\n", j, m->jobs[j].label, err);
            return 2;
        }
        jobs[j] = (placement_job){fp[j].total, job_demand(&fp[j], &m->jobs[j], a), m->jobs[j].gpus};
    }
    static placement p;
    if (placement_plan(gpus, count, jobs, m->count, mode && (mode->flags & MODE_SEQUENTIAL), &p, err, sizeof err) != 0) {
        fprintf(stderr, "error: refused: %s\n", err);
        return 2;
    }
    int ddp_jobs = 0;
    for (int j = 0; j < m->count; j++) {
        if (m->jobs[j].gpus <= 1) continue;
        char which[16];
        snprintf(which, sizeof which, "%d", j);
        ddp_jobs++;
        if (mode && mode->no_data_parallel) {
            fprintf(stderr, "run_suite: job %s is data-parallel: --mode %s cannot hold it beside the cards' runs: %s "
                    "(naive, mps or serial can; --mode " SUITE_ALL " runs every mode that can)\n"
                    "(run_suite --help lists the options)\n", which, a->mode_name, mode->no_data_parallel);
            return 2;
        }
    }
    gpus_passes passes;
    plan_passes(a->mode_name, ddp_jobs, a->skip_modes, &passes);
    if (!passes.count)
        return run_args_usage("--mode %s with a data-parallel job: every mode that can hold it is left out (%s)",
                              a->mode_name, passes.left_count ? passes.left_why[0] : "");
    static char mixes[GPUS_MAX_RUNS][4096];
    static gpus_card cards[GPUS_MAX_RUNS];
    int runs = count;
    for (int g = 0; g < count; g++) {
        memset(&cards[g], 0, sizeof cards[g]);
        cards[g].gpu = index[g], cards[g].mix = mixes[g];
        mix_of_slot(m, &p, g, mixes[g], sizeof mixes[g], &cards[g]);
    }
    for (int j = 0; j < m->count; j++)
        if (m->jobs[j].gpus > 1) {
            if (ddp_run(m, &p, index, probes, j, mixes[runs], sizeof mixes[runs], &cards[runs]) != 0) return 2;
            runs++;
        }
    char references[PATH_MAX + 128], no_reference[512];
    bad = find_references(a, &passes, m, cards, runs, references, sizeof references, no_reference,
                              sizeof no_reference);
    if (bad) return bad;
    int refused = check_runs(a, self, &passes, cards, runs);
    if (refused) return refused;
    if (a->dry_run) {
        if (a->json) {
            cJSON *root = plan_json(a, &passes, m, &p, gpus, cards, runs, references);
            char *text = cJSON_Print(root);
            if (text) printf("%s\n", text);
            free(text);
            cJSON_Delete(root);
        } else {
            print_plan(a, &passes, m, &p, gpus, cards, runs, references);
        }
        return 0;
    }
    char run_dir[PATH_MAX], run_id[256];
    if (results_make_run_dir(a->results_dir, "gpus", a->mix_text, run_dir, sizeof run_dir, run_id, sizeof run_id, err,
                             sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return 1;
    }
    suite_keep_choices_in(run_dir); /* every card's run: the same choices */
    print_plan(a, &passes, m, &p, gpus, cards, runs, references);
    cJSON *plan = plan_json(a, &passes, m, &p, gpus, cards, runs, references);
    if (results_write_json(run_dir, "placement.json", plan, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    cJSON_Delete(plan);
    /* NVLink multicast stays off in everything a run over several GPUs starts */
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    struct sigaction sa = {.sa_handler = pass_on};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL), sigaction(SIGTERM, &sa, NULL), sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a run that ended early must not end this one when told go */

    int worst = 0;
    pass_args pa = {a, self, !a->completion, ddp_jobs, runs, count};
    if (passes.count == 1) {
        worst = run_pass(&pa, cards, a->mode_name, NULL, run_dir);
        summarize(run_dir, m, cards, runs, a->mode_name, no_reference);
    } else {
        /* each pass against the serial pass's runs, as --mode all's modes against its serial part */
        static char serial_folders[GPUS_MAX_RUNS][PATH_MAX];
        cJSON *root = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(root, "modes");
        for (int k = 0; k < passes.count && !stop_signal; k++) {
            char dir[PATH_MAX + 64];
            pass_dir(&passes, k, run_dir, dir, sizeof dir);
            if (results_make_dirs(dir, err, sizeof err) != 0) {
                fprintf(stderr, "error: %s\n", err);
                worst = worst > 1 ? worst : 1;
                break;
            }
            int serial = sequential(passes.mode[k]);
            for (int g = 0; g < runs; g++)
                if (!serial && serial_folders[g][0])
                    snprintf(cards[g].reference, sizeof cards[g].reference, "%s", serial_folders[g]);
            int status = run_pass(&pa, cards, passes.mode[k], passes.mode[k], dir);
            if (status > worst) worst = status;
            if (serial) /* each job alone on its GPU: the reference of the passes after it */
                for (int g = 0; g < runs; g++) {
                    snprintf(serial_folders[g], sizeof serial_folders[g], "%s", cards[g].run_folder);
                    snprintf(cards[g].reference, sizeof cards[g].reference, "%s", cards[g].run_folder);
                }
            printf("\n[%s]", passes.mode[k]);
            cJSON *one = gpus_summary_mode(m, cards, runs, NULL, serial, no_reference, stdout);
            cJSON_AddStringToObject(one, "mode", passes.mode[k]);
            cJSON_AddItemToArray(list, one);
        }
        passes_json(a, &passes, root);
        print_passes(a, &passes);
        if (results_write_json(run_dir, "summary.json", root, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
        cJSON_Delete(root);
    }
    printf("results: %s (per GPU under %sgpu-<index>/%s)\n", run_dir, passes.count > 1 ? "<mode>/" : "",
           ddp_jobs ? ", a data-parallel job's under ddp-<job>/" : "");
    return stop_signal && worst < 128 ? 128 + stop_signal : worst;
}
