/* green: every job of the mix in one process (job_host), each in a CUDA green context that holds
 * its own SMs: static SM partitions, MIG-like compute isolation on any Hopper or Ampere GPU
 * without MIG mode, MPS or administrator rights (memory and bandwidth stay shared, and so does
 * the fault domain: a CUDA fault in one partition fails the others, measured on the H100). The SMs
 * per job: --green-sm, --green-share, or by compute demand over the whole GPU (green_plan.h);
 * with mig-emulate --via green, the SM counts of the MIG layout the mix would get. The device's
 * split (its SMs and group size) comes from `job_host --probe` on the run's GPU, or for a plan
 * without it from --mig-gpu's table. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/plan/green_plan.h"
#include "runner/suite/jobs/host_group.h"
#include "runner/suite/plan/mig_plan.h"
#include "runner/suite/modes/mode_run.h"

extern const suite_mode mode_green;
extern char **environ;

enum { VIA_MPS = 1, VIA_GREEN = 2 };

typedef struct green_options {
    const char *sm_text;          /* --green-sm "64,64", parsed by the plan */
    const char *share_text;       /* --green-share "50,50" */
    int via;                      /* mig-emulate --via: VIA_GREEN runs green in its place; 0: not given */
} green_options;

static const cli_choice VIAS[] = {{"mps", VIA_MPS}, {"green", VIA_GREEN}, {0}};

#define T green_options
static const cli_option ROWS[] = {
    {"--green-sm", "N[,N...]", "green: SMs per job, rounded to the GPU's partition size (one value: all jobs)",
     CLI_STR(T, sm_text)},
    {"--green-share", "P[,P...]", "green: percent of the SMs per job, at most 100 in all (one value: all jobs)",
     CLI_STR(T, share_text)},
    {"--via", "HOW", "mig-emulate: the layout's SM shares through MPS (default) or as green contexts",
     CLI_CHOICE(T, via, VIAS)},
    {0}};
#undef T

/* --via is mig-emulate's (it picks the mode that runs): the check refuses it elsewhere itself. */
static const char *const GROUPS[] = {"--green-sm --green-share", NULL};

static int check(const mode_check *ck, void *options, char *err, size_t err_size) {
    const green_options *g = options;
    if (g->via && !mode_check_any(ck, MODE_MIG_EMULATION))
        snprintf(err, err_size, "--via goes with --mode %s (or %s --mig-emulate), not %s",
                 suite_mode_with(MODE_MIG_EMULATION)->name, suite_mode_with(MODE_NEEDS_MIG)->name, ck->given);
    else if (g->via == VIA_GREEN && (g->sm_text || g->share_text))
        snprintf(err, err_size, "--via green takes the SMs from the MIG layout: no --green-sm or --green-share");
    else
        return 0;
    return -1;
}

static const mode_options OPTIONS = {.rows = ROWS, .size = sizeof(green_options), .groups = GROUPS, .check = check};

static const green_options *options_of(const run_request *o) { return suite_mode_options(o, &mode_green); }

const suite_mode *mode_green_via(const run_request *o) {
    return options_of(o)->via == VIA_GREEN ? &mode_green : NULL;
}

typedef struct green_state {
    green_plan plan;
    int have_plan;
    int from_mig;                 /* the SM counts are the MIG layout's (--via green) */
    mig_plan mig;
} green_state;

int green_probe_gpu(const char *train_path, const char *visible, green_gpu *gpu, char *err, size_t err_size) {
    char host[PATH_MAX], out[512] = "";
    host_group_program(train_path, host, sizeof host);
    char *argv[] = {host, "--probe", NULL};
    job_env env = {0};
    job_env_set(&env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    job_env_set(&env, "CUDA_VISIBLE_DEVICES", "%s", visible);
    char **envp = job_build_env(environ, &env);
    if (!envp) {
        snprintf(err, err_size, "%s --probe: %s", host, env.refused[0] ? env.refused : "out of memory");
        return -1;
    }
    int st = jobs_run_capture(argv, envp, NULL, out, sizeof out, 60);
    job_free_strv(envp);
    if (st != 0) {
        snprintf(err, err_size, "%s --probe could not read the SM split of GPU %s (%s; its message is above)", host,
                 visible, st == -2 ? "timed out" : "failed");
        return -1;
    }
    return green_parse_probe(out, gpu, err, err_size);
}

/* The split the plan takes: --mig-gpu's estimate on a dry run, else the run's GPU's own. */
static int gpu_of(const suite_ctx *c, green_gpu *gpu, char *err, size_t err_size) {
    const char *name = mode_mig_options_of(c->o)->gpu;
    if (name && c->o->dry_run) {
        green_estimate_gpu(mig_known_gpu(name), gpu);
        return 0;
    }
    if (green_probe_gpu(c->o->train_path, c->gpu.visible, gpu, err, err_size) == 0) return 0;
    size_t at = strlen(err);
    snprintf(err + at, err_size - at, "; to plan without the GPU give --mig-gpu %s", mig_known_gpu_names());
    return -1;
}

static int plan(suite_ctx *c, char *err, size_t err_size) {
    green_state *st = suite_mode_state(c, &mode_green);
    const run_request *o = c->o;
    const green_options *g = options_of(o);
    int sm[GREEN_MAX_PARTITIONS];
    double share[GREEN_MAX_PARTITIONS];
    green_request req = {c->count, NULL, NULL, NULL};
    if (c->count > GREEN_MAX_PARTITIONS) {
        snprintf(err, err_size, "green: %d jobs; one process holds at most %d partitions", c->count,
                 GREEN_MAX_PARTITIONS);
        return EXIT_USAGE;
    }
    if (g->sm_text && g->share_text) {
        snprintf(err, err_size, "--green-sm and --green-share: give one of them");
        return EXIT_USAGE;
    }
    if (g->sm_text && green_parse_sms(g->sm_text, c->count, sm, err, err_size) != 0) return EXIT_USAGE;
    if (g->share_text && green_parse_shares(g->share_text, c->count, share, err, err_size) != 0) return EXIT_USAGE;
    if (g->sm_text) req.sm = sm;
    if (g->share_text) req.share = share;
    st->from_mig = g->via == VIA_GREEN;
    if (st->from_mig) {
        int rc = mode_mig_plan(c, &st->mig, err, err_size); /* its refusal keeps its kind: bad input is exit 2 */
        if (rc != 0) return rc;
        for (int k = 0; k < st->mig.count; k++)
            if (st->mig.instances[k].job >= 0 && st->mig.instances[k].job < c->count)
                sm[st->mig.instances[k].job] = st->mig.instances[k].sm_count;
        req.sm = sm;
    }
    green_gpu gpu;
    if (gpu_of(c, &gpu, err, err_size) != 0) return -1;
    if (green_plan_make(&st->plan, &gpu, &req, err, err_size) != 0) return EXIT_USAGE;
    if (st->from_mig) st->plan.basis = "the MIG layout's SM counts (mig-emulate --via green)";
    st->have_plan = 1;
    return 0;
}

static cJSON *plan_json(const green_plan *p) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "basis", p->basis);
    cJSON_AddNumberToObject(o, "device_sms", p->gpu.device_sms);
    cJSON_AddNumberToObject(o, "unit", p->gpu.unit);
    cJSON_AddNumberToObject(o, "groups", p->gpu.groups);
    cJSON *a = cJSON_AddArrayToObject(o, "partitions");
    for (int i = 0; i < p->count; i++) {
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "job", i);
        cJSON_AddNumberToObject(j, "sm_count", p->sm[i]);
        if (isnan(p->demand_share[i])) cJSON_AddNullToObject(j, "demand_share");
        else cJSON_AddNumberToObject(j, "demand_share", p->demand_share[i]);
        cJSON_AddItemToArray(a, j);
    }
    return o;
}

static void describe(const suite_ctx *c, FILE *out, cJSON *json) {
    const green_state *st = suite_mode_state(c, &mode_green);
    if (!st->have_plan) return;
    if (json) {
        cJSON_AddItemToObject(json, "green_plan", plan_json(&st->plan));
        return;
    }
    const char *labels[GREEN_MAX_PARTITIONS];
    for (int i = 0; i < c->count && i < GREEN_MAX_PARTITIONS; i++) labels[i] = c->o->mix.jobs[i].label;
    fprintf(out, "green: %d jobs in one process, each in a green context of its own SMs\n", c->count);
    green_plan_print(&st->plan, labels, out);
}

static group_result run_jobs(mode_run *r, job_record *jobs, int count, const jobs_settings *s) {
    const green_state *st = mode_run_state(r);
    int sms[GREEN_MAX_PARTITIONS];
    for (int k = 0; k < count && k < GREEN_MAX_PARTITIONS; k++) sms[k] = st->plan.sm[r->job_of[k]];
    return mode_host_run(r, jobs, count, s, sms);
}

static void report(const mode_run *r, cJSON *run_json) {
    const green_state *st = mode_run_state(r);
    if (st->have_plan) cJSON_AddItemToObject(run_json, "green_plan", plan_json(&st->plan));
}

static int sm_target(const suite_ctx *c, int job, int *percent) {
    const green_state *st = suite_mode_state(c, &mode_green);
    (void)percent;
    return st->have_plan && job < st->plan.count ? st->plan.sm[job] : 0;
}

static void partition_key(const mode_run *r, int job, char *out, size_t size) {
    const green_state *st = mode_run_state(r);
    snprintf(out, size, "%d SMs", st->plan.sm[job]);
}

/* MIG's planning options (mode_mig.c): the table and the objective its plan shares */
static const char *const TAKES[] = {"--mig-objective", "--mig-gpu", "--green-sm --green-share", NULL};

const suite_mode mode_green = {
    .name = "green",
    .help = "all jobs in one process, each in a green context with its own SMs (static partitions, no MIG, no MPS)",
    .flags = MODE_PARTITIONED | MODE_IN_ALL | MODE_FAULTS_SPREAD,
    .no_data_parallel = "runs a card's jobs in one process, each in an SM partition of that card; a data-parallel "
                        "job's ranks are processes of their own",
    .state_size = sizeof(green_state),
    .plan = plan,
    .describe = describe,
    .start = mode_plain_start,
    .job_env = mode_plain_job_env,
    .run_jobs = run_jobs,
    .stop = mode_plain_stop,
    .report = report,
    .partition_key = partition_key,
    .sm_target = sm_target,
    .options = &OPTIONS,
    .takes = TAKES,
};
