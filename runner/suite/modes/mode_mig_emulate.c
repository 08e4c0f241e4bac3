/* mig-emulate: the MIG layout the mix would get, realised through the run's MPS daemon: each
 * job's SM share and memory limit are its planned instance's (labelled as emulation in run.json).
 * The MIG comparison on a GPU without MIG mode, and the same partitions for MPS to beat.
 *
 * A shared GPU instance (compute instances of one GPU instance, "7g.40gb:3c+4c") is realised as
 * SM shares with no per-job memory limit. MPS limits pinned memory per client
 * (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT) and cannot express one limit that two clients share, and a
 * green context partitions SMs only, not memory; so each job gets its compute instance's SM share
 * and the jobs' footprints together were checked against the GPU instance's memory when the
 * layout was planned (mig_plan_jobs). What this cannot reproduce: the GPU instance's memory
 * bandwidth and L2 limit (the jobs share the whole GPU's), as for every emulated instance. */
#include <math.h>
#include <stdio.h>

#include "base/sm_target.h"
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
        if (p && !p->shared) limits[i] = (long long)p->memory_bytes;  /* shared: checked at plan time */
    }
    return suite_fit(c, 0, limits, err, err_size);
}

static void describe(const suite_ctx *c, FILE *out, cJSON *json) {
    const emulate_state *st = suite_mode_state(c, &mode_mig_emulate);
    if (!st->have_plan) return;
    mode_mig_describe(&st->plan, "mig-emulate (through MPS)", out, json);
    int shared = 0;
    for (int i = 0; i < st->plan.count; i++) shared |= st->plan.instances[i].shared;
    if (shared && out && !json)
        fprintf(out, "  emulated: each shared compute instance as its SM share with no per-job memory limit (MPS "
                "limits memory per client and cannot give two jobs one limit); the GPU instance's memory was "
                "checked for the sum of their footprints when planning\n");
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
        sm = sm_target_percent_for(st->plan.gpu.total_sms, p->sm_fraction);
        mem = p->shared ? 0 : (long long)p->memory_bytes;  /* see the top of this file */
    }
    int queues = job_spec_may_decode_on_gpu(&r->ctx->o->mix.jobs[r->job_of[job]]) ? MPS_CLIENT_CONNECTIONS : 0;
    mps_client_env(&st->mps, sm, mem, queues, env);
}

static void partition_key(const mode_run *r, int job, char *out, size_t size) {
    const emulate_state *st = mode_run_state(r);
    const mig_planned *p = planned_for(&st->plan, job);
    if (p) snprintf(out, size, "sm %.6f, memory %llu%s", p->sm_fraction, (unsigned long long)p->memory_bytes,
                    p->shared ? " shared" : "");
    else snprintf(out, size, "whole GPU");
}

/* Its instance's share as the MPS percentage its environment gets, in SMs by the rule (which the
 * device then reports to the client: base/sm_target.h). */
static int sm_target(const suite_ctx *c, int job, int *percent) {
    const emulate_state *st = suite_mode_state(c, &mode_mig_emulate);
    const mig_planned *p = st->have_plan ? planned_for(&st->plan, job) : NULL;
    if (!p) return 0;
    *percent = sm_target_percent_for(st->plan.gpu.total_sms, p->sm_fraction);
    return *percent < 100 ? sm_target_of_share(st->plan.gpu.total_sms, *percent) : 0;
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
static const char *const TAKES[] = {"--mps-pipe", "--mig-layout --mig-create", "--mig-objective", "--mig-share-memory",
                                    "--mig-gpu", NULL};

const suite_mode mode_mig_emulate = {
    .name = "mig-emulate",
    .help = "the planned MIG layout realised through MPS SM shares and memory limits, labelled as emulation",
    .flags = MODE_PARTITIONED | MODE_MIG_EMULATION | MODE_FAULTS_SPREAD | MODE_IN_STUDY, /* MPS or one process */
    .no_data_parallel = "each job runs in a partition of one card; a data-parallel job spans several cards",
    .state_size = sizeof(emulate_state),
    .plan = plan,
    .fit = fit,
    .describe = describe,
    .start = start,
    .job_env = environment,
    .stop = stop,
    .report = report,
    .partition_key = partition_key,
    .sm_target = sm_target,
    .fault_evidence = evidence,
    .runs_as = mode_green_via,  /* --via green: the layout's SMs as green contexts */
    .takes = TAKES,
};
