/* mig: each job alone on its own MIG instance: existing idle instances matched to the jobs, or
 * the missing ones created with --mig-create (destroyed at the end). MIG mode itself is never
 * changed: with it off, the run is refused before a run folder exists (--mode all skips mig). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/run/run_json.h"
#include "runner/suite/gpu/mig.h"
#include "runner/suite/run/suite.h"

extern const suite_mode mode_mig;

typedef struct mig_state {
    mig_plan plan;                  /* the dry run's layout on an empty GPU */
    int have_plan;
    nvml *nv;
    mig_session *session;
    mig_device devices[MIX_MAX_JOBS]; /* each job's, kept for run.json after stop */
    int device_count;
} mig_state;

void mode_mig_jobs(const suite_ctx *c, const int *job_of, int count, mig_job *out) {
    memset(out, 0, sizeof *out * (size_t)count);
    for (int k = 0; k < count; k++) {
        int i = job_of ? job_of[k] : k;
        out[k].label = c->o->mix.jobs[i].label;
        out[k].footprint_bytes = (unsigned long long)c->fp[i].total;
        out[k].demand = job_demand(&c->fp[i], &c->o->mix.jobs[i], c->epochs, c->steps);
    }
}

/* The table to plan on: --mig-gpu NAME, else the GPU's own (NVML, or shipped for its name). */
int mode_mig_table(const suite_ctx *c, mig_gpu *gpu, char *err, size_t err_size) {
    if (c->o->mig_gpu) {
        const mig_gpu *known = mig_known_gpu(c->o->mig_gpu);
        if (known) *gpu = *known;
        else snprintf(err, err_size, "--mig-gpu %s: unknown; expected %s", c->o->mig_gpu, mig_known_gpu_names());
        return known ? 0 : -1;
    }
    char why[512];
    nvml *nv = nvml_open(NULL, why, sizeof why);
    if (!nv) {
        snprintf(err, err_size, "%s; to plan without the GPU give --mig-gpu %s", why, mig_known_gpu_names());
        return -1;
    }
    mig_session *s = calloc(1, sizeof *s);
    int rc = s ? mig_open(s, nv, (unsigned)c->o->gpu, err, err_size) : -1;
    if (rc == 0 && s->gpu.profile_count == 0) {
        snprintf(err, err_size, "no MIG profile table for %s; give --mig-gpu %s", s->device_name,
                 mig_known_gpu_names());
        rc = -1;
    }
    if (rc == 0) *gpu = s->gpu;
    free(s);
    nvml_close(nv);
    return rc;
}

/* With a table, a plan that cannot be made is the input's fault (the mix, the layout): exit 2. */
int mode_mig_plan(const suite_ctx *c, mig_plan *plan, char *err, size_t err_size) {
    mig_gpu gpu;
    mig_job jobs[MIX_MAX_JOBS];
    if (mode_mig_table(c, &gpu, err, err_size) != 0) return -1;
    mode_mig_jobs(c, NULL, c->count, jobs);
    return mig_plan_objective(plan, &gpu, jobs, c->count, c->o->mig_layout, (mig_objective)c->o->mig_objective,
                              0, 0, err, err_size) == 0 ? 0 : EXIT_USAGE;
}

/* NVML present and MIG mode on, checked before a run folder exists. */
static int usable(const suite_ctx *c, char *err, size_t err_size) {
    nvml *nv = nvml_open(NULL, err, err_size);
    mig_session *s = nv ? calloc(1, sizeof *s) : NULL;
    int rc = s && mig_open(s, nv, (unsigned)c->o->gpu, err, err_size) == 0 &&
                     mig_require_enabled(s, err, err_size) == 0 ? 0 : -1;
    free(s);
    nvml_close(nv);
    return rc;
}

/* A dry run shows the layout; a run needs MIG on (the session plans on the GPU as it is). */
static int plan(suite_ctx *c, char *err, size_t err_size) {
    mig_state *st = suite_mode_state(c, &mode_mig);
    if (!c->o->dry_run) return usable(c, err, err_size);
    int rc = mode_mig_plan(c, &st->plan, err, err_size);
    st->have_plan = rc == 0;
    return rc;
}

/* MIG's planner and assignment check each instance's memory themselves. */
static int fit(const suite_ctx *c, char *err, size_t err_size) {
    (void)c, (void)err, (void)err_size;
    return SUITE_FIT_OWN;
}

void mode_mig_describe(const mig_plan *plan, const char *title, FILE *out, cJSON *json) {
    if (json) {
        cJSON_AddItemToObject(json, "mig_plan", run_json_mig_plan(plan));
        return;
    }
    fprintf(out, "%s layout (on an empty GPU):\n", title);
    mig_plan_print(plan, out);
}

static void describe(const suite_ctx *c, FILE *out, cJSON *json) {
    const mig_state *st = suite_mode_state(c, &mode_mig);
    if (st->have_plan) mode_mig_describe(&st->plan, "mig", out, json);
}

static int start(mode_run *r, char *err, size_t err_size) {
    const suite_ctx *c = r->ctx;
    mig_state *st = mode_run_state(r);
    st->nv = NULL, st->session = NULL, st->device_count = 0;
    mode_plain_start(r, err, err_size);
    st->nv = nvml_open(NULL, err, err_size);
    st->session = calloc(1, sizeof *st->session);
    if (!st->nv || !st->session) return -1;
    if (mig_open(st->session, st->nv, (unsigned)c->o->gpu, err, err_size) != 0) return -1;
    if (mig_require_enabled(st->session, err, err_size) != 0) return -1;
    /* The whole mix's layout on this GPU's table (the objective's, or --mig-layout's); a run of
     * part of the jobs (each alone in its partition) gets those jobs' profiles. */
    mig_job all[MIX_MAX_JOBS], jobs[MIX_MAX_JOBS];
    mode_mig_jobs(c, NULL, c->count, all);
    mode_mig_jobs(c, r->job_of, r->count, jobs);
    mig_plan *whole = calloc(1, sizeof *whole);
    char layout[512];
    int rc = whole ? mig_plan_objective(whole, &st->session->gpu, all, c->count, c->o->mig_layout,
                                        (mig_objective)c->o->mig_objective, 0, 0, err, err_size) : -1;
    if (rc == 0) mig_plan_layout_for(whole, r->job_of, r->count, layout, sizeof layout);
    free(whole);
    if (rc == 0) rc = mig_assign(st->session, jobs, r->count, layout, c->o->mig_create, err, err_size);
    for (int k = 0; rc == 0 && k < r->count; k++) {
        const mig_device *d = mig_job_device(st->session, k);
        if (d) st->devices[k] = *d;
        st->device_count = k + 1;
        r->gpu_instances[r->gpu_instance_count++] = st->devices[k].gpu_instance_id;
    }
    size_t n = strlen(err);
    if (rc != 0 && !c->o->mig_create && n + 1 < err_size)
        snprintf(err + n, err_size - n, "\n(run_suite creates and afterwards destroys "
                 "the missing instances with --mig-create, as root)");
    return rc;
}

static void environment(const mode_run *r, int job, job_env *env) {
    const mig_state *st = mode_run_state(r);
    mode_plain_env(r, mig_job_uuid(st->session, job), env);
}

static void stop(mode_run *r) {
    mig_state *st = mode_run_state(r);
    char err[1024];
    if (st->session) {
        if (mig_destroy_created(st->session, err, sizeof err) != 0) fprintf(stderr, "warning: %s\n", err);
        free(st->session);
        st->session = NULL;
    }
    nvml_close(st->nv);
    st->nv = NULL;
    mode_plain_stop(r);
}

static void report(const mode_run *r, cJSON *run_json) {
    const mig_state *st = mode_run_state(r);
    if (!st->device_count) return;
    cJSON *a = cJSON_AddArrayToObject(run_json, "mig_devices");
    for (int i = 0; i < st->device_count; i++) {
        const mig_device *d = &st->devices[i];
        cJSON *m = cJSON_CreateObject();
        cJSON_AddNumberToObject(m, "job", r->job_of[i]);
        cJSON_AddStringToObject(m, "uuid", d->uuid);
        cJSON_AddNumberToObject(m, "gpu_instance_id", d->gpu_instance_id);
        cJSON_AddNumberToObject(m, "sm_count", d->sm_count);
        cJSON_AddNumberToObject(m, "memory_bytes", (double)d->memory_bytes);
        cJSON_AddBoolToObject(m, "created_by_run", d->created);
        cJSON_AddItemToArray(a, m);
    }
}

const suite_mode mode_mig = {
    .name = "mig",
    .help = "one job per MIG instance: existing ones matched to the jobs, or planned and created with --mig-create",
    .flags = MODE_PARTITIONED | MODE_IN_ALL | MODE_NEEDS_MIG | MODE_WHERE_POSSIBLE,
    .state_size = sizeof(mig_state),
    .plan = plan,
    .fit = fit,
    .describe = describe,
    .start = start,
    .job_env = environment,
    .stop = stop,
    .report = report,
};
