/* mps: all jobs at once as clients of the run's own MPS control daemon (private folders in the
 * run folder), each with an optional SM share (--mps-sm) and memory limit (--mps-mem); or of the
 * daemon at --mps-pipe. The daemon parts and --mps-pipe are shared with mig-emulate. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/sm_target.h"
#include "results/results.h"
#include "runner/mps_probe.h"
#include "runner/suite/gpu/mps.h"
#include "runner/suite/modes/mode_run.h"
#include "runner/suite/plan/mig_profiles.h"

extern const suite_mode mode_mps;

typedef struct mps_options {
    const char *sm_text, *mem_text; /* --mps-sm, --mps-mem as given */
    const char *pipe;               /* --mps-pipe: use this running daemon instead of starting one */
    int have_sm, have_mem;
    int sm[MIX_MAX_JOBS];           /* per job of the mix, parsed by the check */
    long long mem[MIX_MAX_JOBS];
} mps_options;

#define T mps_options
static const cli_option ROWS[] = {
    {"--mps-sm", "P[,P...]", "MPS active thread percentage per job (1..100; one value: all jobs)", CLI_STR(T, sm_text)},
    {"--mps-mem", "S[,S...]", "MPS pinned device memory limit per job (4G, 512M; one value: all)",
     CLI_STR(T, mem_text)},
    {"--mps-pipe", "DIR", "use the MPS daemon already running there instead of starting one", CLI_STR(T, pipe)},
    {0}};
#undef T

static const char *const GROUPS[] = {"--mps-sm --mps-mem", "--mps-pipe", NULL};

static int check(const mode_check *ck, void *options, char *err, size_t err_size) {
    mps_options *m = options;
    int count = ck->o->mix.count;
    struct stat st;
    if (m->sm_text && mps_parse_sm_list(m->sm_text, count, m->sm, err, err_size) != 0) return -1;
    if (m->mem_text && mps_parse_mem_list(m->mem_text, count, m->mem, err, err_size) != 0) return -1;
    m->have_sm = m->sm_text != NULL;
    m->have_mem = m->mem_text != NULL;
    if (m->pipe && !(stat(m->pipe, &st) == 0 && S_ISDIR(st.st_mode))) {
        snprintf(err, err_size, "--mps-pipe %s: not a folder", m->pipe);
        return -1;
    }
    /* the daemon it names must answer before anything is made, in the dry run too (a compute node's
       daemon is left to the node: run_suite --slurm checks on the login node) */
    if (m->pipe && !suite_node_checks_later() && !mps_daemon_running(m->pipe)) {
        snprintf(err, err_size, "--mps-pipe %s: no MPS control daemon answers there (no %s/control socket with a live "
                 "pid)", m->pipe, m->pipe);
        return -1;
    }
    return 0;
}

static const mode_options OPTIONS = {.rows = ROWS, .size = sizeof(mps_options), .groups = GROUPS, .check = check};

static const mps_options *options_of(const run_request *o) { return suite_mode_options(o, &mode_mps); }

int mode_mps_start(mode_run *r, mps_daemon *d, char *err, size_t err_size) {
    const mps_options *m = options_of(r->ctx->o);
    memset(d, 0, sizeof *d); /* what an earlier execution of the mode left */
    if (m->pipe) return mps_attach(d, m->pipe, err, err_size);
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
    const mps_options *m = options_of(r->ctx->o);
    int i = r->job_of[job];
    int queues = job_spec_may_decode_on_gpu(&r->ctx->o->mix.jobs[i]) ? MPS_CLIENT_CONNECTIONS : 0;
    mps_client_env(mode_run_state(r), m->have_sm ? m->sm[i] : 0, m->have_mem ? m->mem[i] : 0, queues, env);
}

/* A limit below a job's footprint fails that job whatever the GPU holds: refused, --force or not. */
static int fit(const suite_ctx *c, char *err, size_t err_size) {
    const mps_options *m = options_of(c->o);
    for (int i = 0; m->have_mem && i < c->count; i++)
        if (c->fp[i].total > (double)m->mem[i]) {
            char need[32], limit[32];
            results_format_bytes(need, sizeof need, c->fp[i].total);
            results_format_bytes(limit, sizeof limit, (double)m->mem[i]);
            snprintf(err, err_size, "--mps-mem %s: job %d (%s) needs %s (its footprint) but its limit is %s", m->mem_text,
                     i, c->o->mix.jobs[i].label, need, limit);
            return SUITE_FIT_REFUSED;
        }
    return suite_fit(c, 0, NULL, err, err_size);
}

/* --mps-sm's share in SMs by the rule, where the GPU is one of the known tables (its SM count);
 * elsewhere the count is the job's to find (-1). */
static int sm_target(const suite_ctx *c, int job, int *percent) {
    const mps_options *m = options_of(c->o);
    if (!m->have_sm || m->sm[job] >= 100) return 0;
    *percent = m->sm[job];
    const mig_gpu *known = c->gpu.nvml_ok && !isnan(c->gpu.memory_bytes)
                               ? mig_known_gpu_for_device(c->gpu.name, (unsigned long long)(c->gpu.memory_bytes / (1 << 20)))
                               : NULL;
    return known ? sm_target_of_share(known->total_sms, *percent) : -1;
}

static void describe(const suite_ctx *c, FILE *out, cJSON *json) {
    const mps_options *m = options_of(c->o);
    if (json) return;
    char bytes[32];
    fprintf(out, "mps: %s, %d clients", m->pipe ? "the daemon at --mps-pipe" : "own daemon (private folders in the run folder)", c->count);
    for (int i = 0; i < c->count && (m->have_sm || m->have_mem); i++) {
        results_format_bytes(bytes, sizeof bytes, m->have_mem ? (double)m->mem[i] : NAN);
        fprintf(out, "%s job %d: %d%% SMs, limit %s", i ? ";" : ":", i, m->have_sm ? m->sm[i] : 100, bytes);
    }
    fprintf(out, "\n");
}

const suite_mode mode_mps = {
    .name = "mps",
    .help = "all jobs at once as clients of the run's own MPS daemon (--mps-sm shares, --mps-mem limits)",
    .flags = MODE_IN_ALL | MODE_FAULTS_SPREAD | MODE_MPS_CLIENTS | MODE_IN_STUDY | MODE_STUDY_ALONE,
    .state_size = sizeof(mps_daemon),
    .fit = fit,
    .describe = describe,
    .sm_target = sm_target,
    .start = start,
    .job_env = environment,
    .stop = stop,
    .report = report,
    .fault_evidence = evidence,
    .options = &OPTIONS,
    .takes = GROUPS,
};
