/* mig-emulate: the MIG layout the mix would get, realised through the run's MPS daemon: each
 * job's SM share and memory limit are its planned instance's (labelled as emulation in run.json).
 * The MIG comparison on a GPU without MIG mode, and the same partitions for MPS to beat. */
#include <math.h>
#include <stdio.h>

#include "runner/suite/plan/mig_plan.h"
#include "runner/suite/gpu/mps.h"
#include "runner/suite/modes/mode_run.h"

extern const suite_mode mode_mig_emulate;

typedef struct emulate_state {
    mig_plan plan;
    int have_plan;
    mps_daemon mps;
} emulate_state;

static const mig_planned *planned_for(const mig_plan *plan, int job) {
    for (int i = 0; i < plan->count; i++)
        if (plan->instances[i].job == job) return &plan->instances[i];
    return NULL;
}

static int plan(suite_ctx *c, char *err, size_t err_size) {
    emulate_state *st = suite_mode_state(c, &mode_mig_emulate);
    int rc = mode_mig_plan(c, &st->plan, err, err_size);
    st->have_plan = rc == 0;
    return rc;
}

/* Each job within its instance's memory, and all of them within the GPU's. */
static int fit(const suite_ctx *c, char *err, size_t err_size) {
    const emulate_state *st = suite_mode_state(c, &mode_mig_emulate);
    long long limits[MIX_MAX_JOBS] = {0};
    for (int i = 0; st->have_plan && i < c->count; i++) {
        const mig_planned *p = planned_for(&st->plan, i);
        if (p) limits[i] = (long long)p->memory_bytes;
    }
    return suite_fit(c, 0, limits, err, err_size);
}

static void describe(const suite_ctx *c, FILE *out, cJSON *json) {
    const emulate_state *st = suite_mode_state(c, &mode_mig_emulate);
    if (st->have_plan) mode_mig_describe(&st->plan, "mig-emulate (through MPS)", out, json);
}

static int start(mode_run *r, char *err, size_t err_size) {
    emulate_state *st = mode_run_state(r);
    return mode_mps_start(r, &st->mps, err, err_size);
}

static void environment(const mode_run *r, int job, job_env *env) {
    const emulate_state *st = mode_run_state(r);
    const mig_planned *p = planned_for(&st->plan, r->job_of[job]);
    int sm = 0;
    long long mem = 0;
    if (p) {
        sm = (int)lround(p->sm_fraction * 100.0);
        sm = sm < 1 ? 1 : sm > 100 ? 100 : sm;
        mem = (long long)p->memory_bytes;
    }
    mps_client_env(&st->mps, sm, mem, env);
}

static void partition_key(const mode_run *r, int job, char *out, size_t size) {
    const emulate_state *st = mode_run_state(r);
    const mig_planned *p = planned_for(&st->plan, job);
    if (p) snprintf(out, size, "sm %.6f, memory %llu", p->sm_fraction, (unsigned long long)p->memory_bytes);
    else snprintf(out, size, "whole GPU");
}

static void stop(mode_run *r) {
    emulate_state *st = mode_run_state(r);
    mode_mps_stop(&st->mps);
}

static void report(const mode_run *r, cJSON *run_json) {
    const emulate_state *st = mode_run_state(r);
    mode_mps_report(&st->mps, run_json);
    if (st->have_plan) cJSON_AddItemToObject(run_json, "mig_emulated_layout", mode_mig_plan_json(&st->plan));
}

static void evidence(const mode_run *r, char *out, size_t size) {
    const emulate_state *st = mode_run_state(r);
    out[0] = 0;
    if (st->mps.log_dir[0]) mps_fault_evidence(&st->mps, out, size);
}

/* MPS's daemon and MIG's planning options (mode_mps.c, mode_mig.c) */
static const char *const TAKES[] = {"--mps-pipe", "--mig-layout --mig-create", "--mig-objective", "--mig-gpu", NULL};

const suite_mode mode_mig_emulate = {
    .name = "mig-emulate",
    .help = "the planned MIG layout realised through MPS SM shares and memory limits, labelled as emulation",
    .flags = MODE_PARTITIONED | MODE_MIG_EMULATION | MODE_FAULTS_SPREAD, /* MPS or one process */
    .state_size = sizeof(emulate_state),
    .plan = plan,
    .fit = fit,
    .describe = describe,
    .start = start,
    .job_env = environment,
    .stop = stop,
    .report = report,
    .partition_key = partition_key,
    .fault_evidence = evidence,
    .runs_as = mode_green_via,  /* --via green: the layout's SMs as green contexts */
    .takes = TAKES,
};
