/* mps: all jobs at once as clients of the run's own MPS control daemon (private folders in the
 * run folder), each with an optional SM share (--mps-sm) and memory limit (--mps-mem); or of the
 * daemon at --mps-pipe. The daemon parts are shared with mig-emulate. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "results/results.h"
#include "runner/suite/gpu/mps.h"
#include "runner/suite/run/suite.h"

int mode_mps_start(mode_run *r, mps_daemon *d, char *err, size_t err_size) {
    const suite_options *o = r->ctx->o;
    memset(d, 0, sizeof *d); /* what an earlier execution of the mode left */
    if (o->mps_pipe) return mps_attach(d, o->mps_pipe, err, err_size);
    const char *def = mps_default_pipe_dir();
    if (mps_daemon_running(def)) {
        snprintf(err, err_size, "an MPS control daemon already runs for this machine "
                 "(%s/control); use it with --mps-pipe %s, or stop it (echo quit | "
                 "nvidia-cuda-mps-control) to let run_suite start its own", def, def);
        return -1;
    }
    return mps_start(d, r->dir, r->ctx->gpu.visible, err, err_size);
}

void mode_mps_stop(mps_daemon *d) {
    char err[1024];
    if (mps_stop(d, err, sizeof err) != 0) fprintf(stderr, "warning: %s\n", err);
}

void mode_mps_report(const mps_daemon *d, cJSON *run_json) {
    if (!d->pipe_dir[0]) return;
    cJSON *m = cJSON_AddObjectToObject(run_json, "mps");
    cJSON_AddStringToObject(m, "pipe_dir", d->pipe_dir);
    cJSON_AddStringToObject(m, "log_dir", d->log_dir);
    cJSON_AddBoolToObject(m, "started_by_run", d->started);
}

static int start(mode_run *r, char *err, size_t err_size) { return mode_mps_start(r, mode_run_state(r), err, err_size); }
static void stop(mode_run *r) { mode_mps_stop(mode_run_state(r)); }
static void report(const mode_run *r, cJSON *run_json) { mode_mps_report(mode_run_state(r), run_json); }
static void evidence(const mode_run *r, char *out, size_t size) { mps_fault_evidence(mode_run_state(r), out, size); }

static void environment(const mode_run *r, int job, job_env *env) {
    const suite_options *o = r->ctx->o;
    int i = r->job_of[job];
    mps_client_env(mode_run_state(r), o->have_mps_sm ? o->mps_sm[i] : 0, o->have_mps_mem ? o->mps_mem[i] : 0, env);
}

static int fit(const suite_ctx *c, char *err, size_t err_size) {
    return suite_fit(c, 0, c->o->have_mps_mem ? c->o->mps_mem : NULL, err, err_size);
}

static void describe(const suite_ctx *c, FILE *out, cJSON *json) {
    const suite_options *o = c->o;
    if (json) return;
    char bytes[32];
    fprintf(out, "mps: %s, %d clients", o->mps_pipe ? "the daemon at --mps-pipe" : "own daemon (private folders in the run folder)", c->count);
    for (int i = 0; i < c->count && (o->have_mps_sm || o->have_mps_mem); i++) {
        results_format_bytes(bytes, sizeof bytes, o->have_mps_mem ? (double)o->mps_mem[i] : NAN);
        fprintf(out, "%s job %d: %d%% SMs, limit %s", i ? ";" : ":", i, o->have_mps_sm ? o->mps_sm[i] : 100, bytes);
    }
    fprintf(out, "\n");
}

const suite_mode mode_mps = {
    .name = "mps",
    .help = "all jobs at once as clients of the run's own MPS daemon (--mps-sm shares, --mps-mem limits)",
    .flags = MODE_IN_ALL | MODE_FAULTS_SPREAD,
    .state_size = sizeof(mps_daemon),
    .fit = fit,
    .describe = describe,
    .start = start,
    .job_env = environment,
    .stop = stop,
    .report = report,
    .fault_evidence = evidence,
};
