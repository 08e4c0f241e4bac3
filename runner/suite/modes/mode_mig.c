/* mig: each job alone on its own MIG instance: existing idle instances matched to the jobs, or
 * the missing ones created with --mig-create (destroyed at the end). MIG mode itself is never
 * changed: with it off, the run is refused before a run folder exists (--mode all skips mig).
 * The MIG planning every MIG-like mode shares is here too, with its options (mode_mig_options):
 * the layout, the table to plan on, the objective, the sweep's layouts, creation, emulation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/gpu/mig.h"
#include "runner/suite/modes/mode_run.h"

extern const suite_mode mode_mig;

/* --- the MIG planning options ---------------------------------------------------------------- */

static const cli_choice OBJECTIVES[] = {{"fill", MIG_OBJECTIVE_FILL}, {"compact", MIG_OBJECTIVE_COMPACT}, {0}};

#define T mode_mig_options
static const cli_option ROWS[] = {
    {"--mig-layout", "L", "MIG profiles, one per job in mix order (1g.10gb,2g.20gb,...)", CLI_STR(T, layout)},
    {"--mig-gpu", "NAME", "plan for this GPU's MIG table", CLI_STR(T, gpu), .values = mig_known_gpu_names},
    {"--mig-objective", NULL, "MIG plan: fill (the whole GPU, shared by compute demand) or compact (each job's "
     "smallest fit)", CLI_CHOICE(T, objective, OBJECTIVES), .fallback = "fill"},
    {"--mig-share-memory", NULL, "MIG plan: the jobs on compute instances of one GPU instance, sharing its memory "
     "(7g.40gb:3c+4c; chosen without it where no layout of separate instances holds the jobs)",
     CLI_FLAG(T, share_memory, 1)},
    {"--mig-layouts", "all|L;L...", "sweep: the mix under every valid MIG layout, or each one listed "
     "(1g.10gb+3g.40gb;2g.20gb+2g.20gb)", CLI_STR(T, layouts)},
    {"--mig-create", NULL, "create the MIG instances the plan needs (destroyed at the end)", CLI_FLAG(T, create, 1)},
    {"--mig-emulate", NULL, "realise the MIG plan through MPS (SM share and memory per instance)",
     CLI_FLAG(T, emulate, 1)},
    {0}};
#undef T

/* --mig-emulate picks the mode that runs and --mig-layouts a sweep: the check refuses them itself. */
static const char *const GROUPS[] = {"--mig-layout --mig-create", "--mig-objective", "--mig-share-memory",
                                     "--mig-gpu", NULL};

/* A list of layouts with no empty one ("", "A;;B", "A;" each hold one): a sweep runs only what was asked. */
static int layouts_whole(const char *list) {
    for (const char *p = list;; p++) {
        size_t n = strcspn(p, ";");
        if (strspn(p, " \t") >= n) return 0;
        p += n;
        if (!*p) return 1;
    }
}

static int check(const mode_check *ck, void *options, char *err, size_t err_size) {
    const mode_mig_options *m = options;
    const suite_mode *given = ck->chain_count ? ck->chain[0] : NULL, *runs = mode_check_runs(ck);
    const char *emulation = suite_mode_with(MODE_MIG_EMULATION)->name;
    if (m->emulate && given && !(given->flags & (MODE_NEEDS_MIG | MODE_MIG_EMULATION)))
        snprintf(err, err_size, "--mig-emulate goes with --mode %s or all, not %s", mode_mig.name, ck->given);
    else if (m->layouts && !mode_check_any(ck, MODE_NEEDS_MIG | MODE_MIG_EMULATION))
        snprintf(err, err_size, "--mig-layouts sweeps MIG layouts: give --mode %s (or %s with --mig-create), "
                 "not %s", emulation, mode_mig.name, ck->given);
    else if (m->layouts && strcmp(m->layouts, "all") != 0 && !layouts_whole(m->layouts))
        snprintf(err, err_size, "--mig-layouts %.200s: an empty layout; expected all, or layouts separated by ';' "
                 "(1g.10gb,3g.40gb;2g.20gb,2g.20gb), none of them empty", m->layouts);
    else if (m->share_memory && m->layout)
        snprintf(err, err_size, "--mig-share-memory lets the planner share a GPU instance; --mig-layout gives the "
                 "layout (a shared one is written 7g.40gb:3c+4c): not both");
    else if (m->layouts && m->layout)
        snprintf(err, err_size, "--mig-layouts runs each of its layouts; --mig-layout gives one: not both");
    else if (m->gpu && !mig_known_gpu(m->gpu))
        snprintf(err, err_size, "--mig-gpu %s: unknown GPU; expected one of %s", m->gpu, mig_known_gpu_names());
    else if (m->create && mode_check_any(ck, MODE_MIG_EMULATION))
        snprintf(err, err_size, "--mig-create creates real instances; --mig-emulate needs none");
    else if (m->gpu && runs && (runs->flags & MODE_NEEDS_MIG) && !ck->o->dry_run)
        snprintf(err, err_size, "--mig-gpu plans for a GPU that may not be present: use it with --dry-run or "
                 "--mig-emulate");
    else
        return 0;
    return -1;
}

static void settings(const void *options, cJSON *settings) {
    const mode_mig_options *m = options;
    cJSON_AddStringToObject(settings, "mig_layout", m->layout ? m->layout : "");
    cJSON_AddStringToObject(settings, "mig_gpu", m->gpu ? m->gpu : "");
    cJSON_AddBoolToObject(settings, "mig_create", m->create);
    if (m->share_memory) cJSON_AddBoolToObject(settings, "mig_share_memory", 1);
}

static const mode_options OPTIONS = {
    .rows = ROWS, .size = sizeof(mode_mig_options), .groups = GROUPS, .check = check, .settings = settings};

const mode_mig_options *mode_mig_options_of(const run_request *o) { return suite_mode_options(o, &mode_mig); }

void mode_mig_with_layout(const run_request *o, const char *layout, run_request *one, mode_mig_options *storage) {
    const mode_mig_options *given = mode_mig_options_of(o);
    *one = *o;
    *storage = *given;
    storage->layout = layout;
    for (int k = 0; k < SUITE_MODES_MAX; k++)
        if (o->mode_options[k] == given) one->mode_options[k] = storage;
}

/* Under --mig-emulate the mode that realises the plan without MIG runs in mig's place. */
static const suite_mode *runs_as(const run_request *o) {
    return mode_mig_options_of(o)->emulate ? suite_mode_with(MODE_MIG_EMULATION) : NULL;
}

/* --- planning -------------------------------------------------------------------------------- */

typedef struct mig_state {
    mig_plan plan;                  /* the dry run's layout on an empty GPU */
    int have_plan;
    nvml *nv;
    mig_session *session;
    mig_device devices[MIX_MAX_JOBS]; /* each job's, kept for run.json after stop */
    int shared[MIX_MAX_JOBS];         /* ... and whether its GPU instance is shared */
    int device_count;
} mig_state;

void mode_mig_jobs(const suite_ctx *c, const int *job_of, int count, mig_job *out) {
    memset(out, 0, sizeof *out * (size_t)count);
    for (int k = 0; k < count; k++) {
        int i = job_of ? job_of[k] : k;
        out[k].label = c->o->mix.jobs[i].label;
        out[k].footprint_bytes = (unsigned long long)c->fp[i].total;
        out[k].demand = job_demand(&c->fp[i], &c->o->mix.jobs[i], c->o);
    }
}

/* The table to plan on: --mig-gpu NAME, else the GPU's own (NVML, or shipped for its name). */
int mode_mig_table(const suite_ctx *c, mig_gpu *gpu, char *err, size_t err_size) {
    const char *name = mode_mig_options_of(c->o)->gpu;
    if (name) {
        const mig_gpu *known = mig_known_gpu(name);
        if (known) *gpu = *known;
        else snprintf(err, err_size, "--mig-gpu %s: unknown; expected %s", name, mig_known_gpu_names());
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
    const mode_mig_options *m = mode_mig_options_of(c->o);
    if (mode_mig_table(c, &gpu, err, err_size) != 0) /* no table: a layout or a job count no GPU has is still bad input */
        return (m->layout && mig_layout_of_some_gpu(m->layout, c->count, err, err_size) != 0) ||
                       mig_jobs_fit_some_gpu(c->count, err, err_size) != 0
                   ? EXIT_USAGE
                   : -1;
    mode_mig_jobs(c, NULL, c->count, jobs);
    return mig_plan_objective(plan, &gpu, jobs, c->count, m->layout, (mig_objective)m->objective, m->share_memory,
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

/* A dry run shows the layout; a run needs MIG on (the session plans on the GPU as it is, at start).
 * Both refuse a mix no layout of the empty GPU holds (exit 2), before the run folder exists. */
static int plan(suite_ctx *c, char *err, size_t err_size) {
    mig_state *st = suite_mode_state(c, &mode_mig);
    if (!c->o->dry_run && usable(c, err, err_size) != 0) return -1;
    int rc = mode_mig_plan(c, &st->plan, err, err_size);
    st->have_plan = rc == 0 && c->o->dry_run;
    return c->o->dry_run || rc == EXIT_USAGE ? rc : 0;
}

/* MIG's planner and assignment check each instance's memory themselves. */
static int fit(const suite_ctx *c, char *err, size_t err_size) {
    (void)c, (void)err, (void)err_size;
    return SUITE_FIT_OWN;
}

cJSON *mode_mig_plan_json(const mig_plan *plan) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < plan->count; i++) {
        const mig_planned *p = &plan->instances[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "job", p->job);
        cJSON_AddStringToObject(o, "label", p->label);
        cJSON_AddStringToObject(o, "profile", plan->gpu.profiles[p->profile].name);
        if (p->shared) {  /* a compute instance of a GPU instance other jobs share */
            char ci[48];
            mig_ci_name(&plan->gpu, p->profile, p->ci_slices, ci, sizeof ci);
            cJSON_AddStringToObject(o, "compute_instance", ci);  /* nvidia-smi's name: "3c.7g.40gb" */
            cJSON_AddNumberToObject(o, "compute_slices", p->ci_slices);
            cJSON_AddBoolToObject(o, "shared", 1);
            cJSON_AddNumberToObject(o, "gpu_instance", p->gpu_instance);
        }
        cJSON_AddNumberToObject(o, "placement_start", p->placement.start);
        cJSON_AddNumberToObject(o, "placement_size", p->placement.size);
        cJSON_AddNumberToObject(o, "sm_count", p->sm_count);
        cJSON_AddNumberToObject(o, "sm_fraction", p->sm_fraction);
        cJSON_AddNumberToObject(o, "memory_bytes", (double)p->memory_bytes);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}


void mode_mig_describe(const mig_plan *plan, const char *title, FILE *out, cJSON *json) {
    if (json) {
        cJSON_AddItemToObject(json, "mig_plan", mode_mig_plan_json(plan));
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
    const mode_mig_options *m = mode_mig_options_of(c->o);
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
    int rc = whole ? mig_plan_objective(whole, &st->session->gpu, all, c->count, m->layout,
                                        (mig_objective)m->objective, m->share_memory, 0, 0, err, err_size) : -1;
    if (rc == 0) mig_plan_layout_for(whole, r->job_of, r->count, layout, sizeof layout);
    free(whole);
    if (rc == 0) rc = mig_assign(st->session, jobs, r->count, layout, m->create, err, err_size);
    for (int k = 0; rc == 0 && k < r->count; k++) {
        const mig_device *d = mig_job_device(st->session, k);
        if (d) st->devices[k] = *d;
        st->shared[k] = k < st->session->plan.count && st->session->plan.instances[k].shared;
        st->device_count = k + 1;
        r->gpu_instances[r->gpu_instance_count++] = st->devices[k].gpu_instance_id;
    }
    size_t n = strlen(err);
    if (rc != 0 && !m->create && n + 1 < err_size)
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
        if (st->shared[i]) cJSON_AddBoolToObject(m, "shared", 1);  /* its GPU instance holds other jobs too */
        cJSON_AddItemToArray(a, m);
    }
}

const suite_mode mode_mig = {
    .name = "mig",
    .help = "one job per MIG instance: existing ones matched to the jobs, or planned and created with --mig-create",
    .flags = MODE_PARTITIONED | MODE_IN_ALL | MODE_NEEDS_MIG | MODE_WHERE_POSSIBLE,
    .no_data_parallel = "each job runs in a MIG instance of one card; a data-parallel job spans several cards",
    .state_size = sizeof(mig_state),
    .plan = plan,
    .fit = fit,
    .describe = describe,
    .start = start,
    .job_env = environment,
    .stop = stop,
    .report = report,
    .runs_as = runs_as,
    .options = &OPTIONS,
    .takes = GROUPS,
};
