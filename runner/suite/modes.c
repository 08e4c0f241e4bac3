/* The run and its collocation modes (see modes.h). One mode run = set up (MPS daemon, MIG
 * instances), give every job its environment, start the monitor, run the jobs, then always tear
 * down in reverse order and write what was measured. */
#define _GNU_SOURCE
#include "runner/suite/modes.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runner/suite/mig.h"
#include "runner/suite/monitor.h"
#include "runner/suite/mps.h"
#include "runner/suite/nvml.h"
#include "results/results.h"

static const char *mode_names[] = {"serial", "naive", "mps", "mig", "mig-emulate", "all"};

const char *mode_name(suite_mode mode) { return mode_names[mode]; }

int mode_parse(const char *text, suite_mode *mode) {
    for (int i = 0; i <= MODE_ALL; i++)
        if (strcmp(text, mode_names[i]) == 0) {
            *mode = (suite_mode)i;
            return 0;
        }
    return -1;
}

int mode_check_fit(suite_mode mode, const double *footprints, const long long *limits, int count,
                   double memory_bytes, char *err, size_t err_size) {
    char need[32], have[32], one[32];
    for (int i = 0; limits && i < count; i++)
        if (limits[i] > 0 && footprints[i] > (double)limits[i]) {
            results_format_bytes(one, sizeof one, footprints[i]);
            results_format_bytes(have, sizeof have, (double)limits[i]);
            snprintf(err, err_size, "job %d needs %s but its memory limit is %s", i, one, have);
            return -1;
        }
    double sum = 0, largest = 0;
    for (int i = 0; i < count; i++) {
        sum += footprints[i];
        if (footprints[i] > largest) largest = footprints[i];
    }
    double required = mode == MODE_SERIAL ? largest : sum;
    if (isnan(memory_bytes) || required <= memory_bytes) return 0;
    results_format_bytes(need, sizeof need, required);
    results_format_bytes(have, sizeof have, memory_bytes);
    int n = snprintf(err, err_size, "the mix needs %s (%s) but the GPU has %s:", need,
                     mode == MODE_SERIAL ? "its largest job" : "the sum of its jobs' footprints", have);
    for (int i = 0; i < count && n > 0 && (size_t)n < err_size; i++) {
        results_format_bytes(one, sizeof one, footprints[i]);
        n += snprintf(err + n, err_size - (size_t)n, " job %d %s;", i, one);
    }
    return -1;
}

/* --- the run's context ------------------------------------------------------------------- */

typedef struct suite_ctx {
    const suite_options *o;
    int count;
    int epochs;
    long steps;
    monitor_gpu gpu;
    job_footprint fp[MIX_MAX_JOBS];
    mig_plan emulate_plan;         /* --mig-emulate: the layout MPS reproduces */
    int have_emulate_plan;
    serial_baseline baseline;
    char run_dir[PATH_MAX], run_id[256], started[32];
} suite_ctx;

typedef struct mode_run {
    suite_ctx *ctx;
    suite_mode mode;
    char dir[PATH_MAX];
    job_run *jobs;
    mps_daemon mps;
    nvml *nv;
    mig_session *mig;
    mig_device mig_devices[MIX_MAX_JOBS]; /* each job's, kept for run.json after teardown */
    int mig_device_count;
    monitor mon;
    int mon_on;
    int stopped;
    char error[2048];
    run_summary summary;
} mode_run;

static void iso_now(char *out, size_t size) {
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &utc);
}

static cJSON *strv_json(char **v) {
    cJSON *a = cJSON_CreateArray();
    for (; v && *v; v++) cJSON_AddItemToArray(a, cJSON_CreateString(*v));
    return a;
}

static void add_num(cJSON *o, const char *key, double v) {
    if (isnan(v)) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, v);
}

static cJSON *gpu_json(const monitor_gpu *g, int index) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", index);
    cJSON_AddBoolToObject(o, "nvml", g->nvml_ok);
    if (!g->nvml_ok) cJSON_AddStringToObject(o, "nvml_absent_because", g->why);
    cJSON_AddStringToObject(o, "name", g->name);
    cJSON_AddStringToObject(o, "uuid", g->uuid);
    cJSON_AddStringToObject(o, "driver_version", g->driver);
    if (g->cuda_version)
        cJSON_AddNumberToObject(o, "cuda_driver_version", g->cuda_version);
    else
        cJSON_AddNullToObject(o, "cuda_driver_version");
    add_num(o, "memory_bytes", g->memory_bytes);
    cJSON_AddStringToObject(o, "memory_source", g->memory_source ? g->memory_source : "unknown");
    return o;
}

static cJSON *plan_json(const mig_plan *plan) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < plan->count; i++) {
        const mig_planned *p = &plan->instances[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "job", p->job);
        cJSON_AddStringToObject(o, "label", p->label);
        cJSON_AddStringToObject(o, "profile", plan->gpu.profiles[p->profile].name);
        cJSON_AddNumberToObject(o, "placement_start", p->placement.start);
        cJSON_AddNumberToObject(o, "placement_size", p->placement.size);
        cJSON_AddNumberToObject(o, "sm_count", p->sm_count);
        cJSON_AddNumberToObject(o, "sm_fraction", p->sm_fraction);
        cJSON_AddNumberToObject(o, "memory_bytes", (double)p->memory_bytes);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static char **argv_of(const suite_ctx *c, int i) {
    const job_spec *s = &c->o->mix.jobs[i];
    return job_build_argv(c->o->train_path, s, s->epochs ? s->epochs : c->epochs,
                          s->steps_per_epoch ? s->steps_per_epoch : c->steps, c->o->data_root, 0);
}

/* The jobs as run.json and the dry run show them: spec, footprint, command, CUDA environment. */
static cJSON *jobs_json(const suite_ctx *c, const mode_run *r) {
    cJSON *jobs = cJSON_CreateArray();
    for (int i = 0; i < c->count; i++) {
        const job_spec *spec = &c->o->mix.jobs[i];
        const job_footprint *f = &c->fp[i];
        cJSON *j = cJSON_CreateObject();
        char canonical[256];
        mix_job_format(spec, canonical, sizeof canonical);
        cJSON_AddStringToObject(j, "label", spec->label);
        cJSON_AddStringToObject(j, "job", canonical);
        cJSON_AddStringToObject(j, "model", spec->model);
        cJSON_AddStringToObject(j, "data", spec->data);
        cJSON_AddNumberToObject(j, "batch", spec->batch);
        cJSON_AddNumberToObject(j, "image_size", spec->image_size);
        cJSON_AddNumberToObject(j, "classes", spec->classes);
        add_num(j, "params", f->params);
        cJSON *fj = cJSON_AddObjectToObject(j, "footprint");
        const char *keys[] = {"parameters", "gradients", "optimizer", "buffers", "activations", "workspace", "total"};
        const double vals[] = {f->parameters, f->gradients, f->optimizer, f->buffers, f->activations, f->workspace, f->total};
        for (int k = 0; k < 7; k++) add_num(fj, keys[k], vals[k]);
        char **argv = r && r->jobs ? NULL : argv_of(c, i);
        cJSON_AddItemToObject(j, "argv", strv_json(argv ? argv : r->jobs[i].argv));
        job_free_strv(argv);
        if (r && r->jobs) {
            cJSON *env = cJSON_AddArrayToObject(j, "cuda_env");
            for (char **e = r->jobs[i].envp; e && *e; e++)
                if (strncmp(*e, "CUDA_", 5) == 0) cJSON_AddItemToArray(env, cJSON_CreateString(*e));
        }
        cJSON_AddItemToArray(jobs, j);
    }
    return jobs;
}

/* run.json: the command line, the mix, the machine, the settings and, per mode, how it ran. */
static void write_run_json(const suite_ctx *c, const mode_run *r, const char *dir, const char *mode,
                           const char *status) {
    const suite_options *o = c->o;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "run_id", c->run_id);
    cJSON_AddStringToObject(root, "mode", mode);
    cJSON_AddStringToObject(root, "mix", o->mix_text);
    cJSON_AddStringToObject(root, "status", status);
    cJSON_AddStringToObject(root, "started", c->started);
    char finished[32] = "";
    if (strcmp(status, "running") != 0) iso_now(finished, sizeof finished);
    cJSON_AddStringToObject(root, "finished", finished);
    if (r && r->error[0]) cJSON_AddStringToObject(root, "error", r->error);
    cJSON_AddItemToObject(root, "command", strv_json(o->argv));
    cJSON_AddItemToObject(root, "gpu", gpu_json(&c->gpu, o->gpu));
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    cJSON_AddStringToObject(root, "host", host);
    cJSON *s = cJSON_AddObjectToObject(root, "settings");
    cJSON_AddNumberToObject(s, "epochs", c->epochs);
    cJSON_AddNumberToObject(s, "steps_per_epoch", (double)c->steps);
    cJSON_AddBoolToObject(s, "quick", o->quick);
    cJSON_AddStringToObject(s, "train", o->train_path);
    cJSON_AddStringToObject(s, "data_root", o->data_root ? o->data_root : "");
    cJSON_AddNumberToObject(s, "sample_ms", o->sample_ms);
    cJSON_AddBoolToObject(s, "monitor", !o->no_monitor);
    cJSON_AddNumberToObject(s, "ready_timeout_s", o->ready_timeout_s);
    cJSON_AddNumberToObject(s, "grace_s", o->grace_s);
    cJSON_AddBoolToObject(s, "force", o->force);
    cJSON_AddStringToObject(s, "mig_layout", o->mig_layout ? o->mig_layout : "");
    cJSON_AddStringToObject(s, "mig_gpu", o->mig_gpu ? o->mig_gpu : "");
    cJSON_AddBoolToObject(s, "mig_create", o->mig_create);
    cJSON_AddStringToObject(s, "baseline", c->baseline.known ? c->baseline.source : "");
    cJSON_AddItemToObject(root, "jobs", jobs_json(c, r));
    if (r && r->mps.pipe_dir[0]) {
        cJSON *m = cJSON_AddObjectToObject(root, "mps");
        cJSON_AddStringToObject(m, "pipe_dir", r->mps.pipe_dir);
        cJSON_AddStringToObject(m, "log_dir", r->mps.log_dir);
        cJSON_AddBoolToObject(m, "started_by_run", r->mps.started);
    }
    if (r && r->mode == MODE_MIG_EMULATE && c->have_emulate_plan)
        cJSON_AddItemToObject(root, "mig_emulated_layout", plan_json(&c->emulate_plan));
    if (r && r->mig_device_count) {
        cJSON *a = cJSON_AddArrayToObject(root, "mig_devices");
        for (int i = 0; i < r->mig_device_count; i++) {
            const mig_device *d = &r->mig_devices[i];
            cJSON *m = cJSON_CreateObject();
            cJSON_AddNumberToObject(m, "job", i);
            cJSON_AddStringToObject(m, "uuid", d->uuid);
            cJSON_AddNumberToObject(m, "gpu_instance_id", d->gpu_instance_id);
            cJSON_AddNumberToObject(m, "sm_count", d->sm_count);
            cJSON_AddNumberToObject(m, "memory_bytes", (double)d->memory_bytes);
            cJSON_AddBoolToObject(m, "created_by_run", d->created);
            cJSON_AddItemToArray(a, m);
        }
    }
    char err[512];
    if (results_write_json(dir, "run.json", root, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    cJSON_Delete(root);
}

/* --- planning -------------------------------------------------------------------------------- */

static void mig_jobs_of(const suite_ctx *c, mig_job *out) {
    for (int i = 0; i < c->count; i++) {
        out[i].label = c->o->mix.jobs[i].label;
        out[i].footprint_bytes = (unsigned long long)c->fp[i].total;
    }
}

/* The table to plan on: --mig-gpu NAME, else the GPU's own (NVML, or shipped for its name). */
static int mig_table(const suite_ctx *c, mig_gpu *gpu, char *err, size_t err_size) {
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

static int plan_emulation(suite_ctx *c, char *err, size_t err_size) {
    mig_gpu gpu;
    mig_job jobs[MIX_MAX_JOBS];
    if (mig_table(c, &gpu, err, err_size) != 0) return -1;
    mig_jobs_of(c, jobs);
    if (mig_plan_jobs(&c->emulate_plan, &gpu, jobs, c->count, c->o->mig_layout, 0, 0, err, err_size) != 0)
        return -1;
    c->have_emulate_plan = 1;
    return 0;
}

static const mig_planned *planned_for(const mig_plan *plan, int job) {
    for (int i = 0; i < plan->count; i++)
        if (plan->instances[i].job == job) return &plan->instances[i];
    return NULL;
}

/* --- one mode -------------------------------------------------------------------------------- */

static int is_mps_like(suite_mode m) { return m == MODE_MPS || m == MODE_MIG_EMULATE; }

static void job_environment(const mode_run *r, int i, job_env *env) {
    const suite_ctx *c = r->ctx;
    memset(env, 0, sizeof *env);
    job_env_set(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID"); /* indices mean what NVML means */
    /* the jobs running at once share the CPU cores: each one's loader sizes its threads by it */
    job_env_set(env, "SUITE_CONCURRENT_JOBS", "%d", r->mode == MODE_SERIAL ? 1 : c->count);
    if (is_mps_like(r->mode)) {
        int sm = c->o->have_mps_sm ? c->o->mps_sm[i] : 0;
        long long mem = c->o->have_mps_mem ? c->o->mps_mem[i] : 0;
        const mig_planned *p = r->mode == MODE_MIG_EMULATE ? planned_for(&c->emulate_plan, i) : NULL;
        if (p) {
            sm = (int)lround(p->sm_fraction * 100.0);
            sm = sm < 1 ? 1 : sm > 100 ? 100 : sm;
            mem = (long long)p->memory_bytes;
        }
        mps_client_env(&r->mps, sm, mem, env);
        return;
    }
    /* Plain processes: an empty private pipe folder keeps them off any MPS daemon that may run. */
    job_env_set(env, "CUDA_MPS_PIPE_DIRECTORY", "%s/no-mps", r->dir);
    job_env_set(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", NULL);
    job_env_set(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", NULL);
    if (r->mode == MODE_MIG) job_env_set(env, "CUDA_VISIBLE_DEVICES", "%s", mig_job_uuid(r->mig, i));
    else job_env_set(env, "CUDA_VISIBLE_DEVICES", "%s", c->gpu.visible);
}

static int start_mps(mode_run *r) {
    const suite_options *o = r->ctx->o;
    if (o->mps_pipe) return mps_attach(&r->mps, o->mps_pipe, r->error, sizeof r->error);
    const char *def = mps_default_pipe_dir();
    if (mps_daemon_running(def)) {
        snprintf(r->error, sizeof r->error, "an MPS control daemon already runs for this machine "
                 "(%s/control); use it with --mps-pipe %s, or stop it (echo quit | "
                 "nvidia-cuda-mps-control) to let run_suite start its own", def, def);
        return -1;
    }
    return mps_start(&r->mps, r->dir, r->ctx->gpu.visible, r->error, sizeof r->error);
}

static int start_mig(mode_run *r) {
    suite_ctx *c = r->ctx;
    r->nv = nvml_open(NULL, r->error, sizeof r->error);
    r->mig = calloc(1, sizeof *r->mig);
    if (!r->nv || !r->mig) return -1;
    if (mig_open(r->mig, r->nv, (unsigned)c->o->gpu, r->error, sizeof r->error) != 0) return -1;
    if (mig_require_enabled(r->mig, r->error, sizeof r->error) != 0) return -1;
    mig_job jobs[MIX_MAX_JOBS];
    mig_jobs_of(c, jobs);
    int rc = mig_assign(r->mig, jobs, c->count, c->o->mig_layout, c->o->mig_create, r->error,
                        sizeof r->error);
    for (int i = 0; rc == 0 && i < c->count; i++) {
        const mig_device *d = mig_job_device(r->mig, i);
        if (d) r->mig_devices[i] = *d;
        r->mig_device_count = i + 1;
    }
    size_t n = strlen(r->error);
    if (rc != 0 && !c->o->mig_create && n + 1 < sizeof r->error)
        snprintf(r->error + n, sizeof r->error - n, "\n(run_suite creates and afterwards destroys "
                 "the missing instances with --mig-create, as root)");
    return rc;
}

static void teardown(mode_run *r) {
    char err[1024];
    if (mps_stop(&r->mps, err, sizeof err) != 0) fprintf(stderr, "warning: %s\n", err);
    if (r->mig) {
        if (mig_destroy_created(r->mig, err, sizeof err) != 0) fprintf(stderr, "warning: %s\n", err);
        free(r->mig);
        r->mig = NULL;
    }
    nvml_close(r->nv);
    r->nv = NULL;
    char nomps[PATH_MAX + 16];
    snprintf(nomps, sizeof nomps, "%s/no-mps", r->dir);
    rmdir(nomps); /* it only kept the jobs off MPS; empty */
}

static void on_phase(void *user, const job_run *job, const char *phase, double t) {
    mode_run *r = user;
    if (r->mon_on)
        monitor_job_phase(&r->mon, job->index, job->pid, phase,
                          job->epoch_count ? job->epochs[job->epoch_count - 1].epoch : 0);
}

static void start_monitor(mode_run *r) {
    const suite_options *o = r->ctx->o;
    if (o->no_monitor) return;
    monitor_source src;
    char why[512], path[PATH_MAX + 32];
    unsigned gi[MIX_MAX_JOBS];
    int gi_count = 0;
    for (int i = 0; i < r->mig_device_count && gi_count < MONITOR_MAX_UNITS - 1; i++)
        gi[gi_count++] = r->mig_devices[i].gpu_instance_id;
    if (monitor_nvml_source(&src, o->gpu, gi, gi_count, why, sizeof why) != 0) {
        fprintf(stderr, "warning: no GPU timeline: %s\n", why);
        return;
    }
    snprintf(path, sizeof path, "%s/timeline.csv", r->dir);
    if (monitor_start(&r->mon, &src, path, r->ctx->count, o->sample_ms, why, sizeof why) != 0)
        fprintf(stderr, "warning: no GPU timeline: %s\n", why);
    else r->mon_on = 1;
}

static void measure_energy(mode_run *r) {
    run_summary *s = &r->summary;
    if (!r->mon_on) return;
    s->monitor_on = 1;
    monitor_cost(&r->mon, &s->monitor_ticks, &s->monitor_mean_ms, &s->monitor_busy_fraction);
    s->peak_gpu_memory = monitor_peak_memory(&r->mon, s->first_go, s->last_end);
    /* serial: the sum over each job's own window; collocated: first go to last end */
    double total = NAN;
    int ok = r->mode == MODE_SERIAL
                 ? monitor_energy_windows(&r->mon, s->window_start, s->window_end, s->job_count, &total)
                 : monitor_energy_between(&r->mon, s->first_go, s->last_end, &total);
    s->energy_j = ok == 0 && !isnan(s->first_go) ? total : NAN;
}

/* Runs one mode into dir; fills summary. Returns 0, or -1 when the mode could not be set up. */
static int execute_mode(suite_ctx *c, suite_mode mode, const char *dir, const serial_baseline *base,
                        run_summary *summary) {
    const suite_options *o = c->o;
    mode_run *r = calloc(1, sizeof *r);
    if (!r) return -1;
    r->ctx = c;
    r->mode = mode;
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    char nompsdir[PATH_MAX + 16], err[1024];
    snprintf(nompsdir, sizeof nompsdir, "%s/no-mps", dir);
    if (!is_mps_like(mode) && results_make_dirs(nompsdir, err, sizeof err) != 0)
        fprintf(stderr, "warning: %s\n", err);
    write_run_json(c, NULL, dir, mode_name(mode), "running");
    fprintf(stderr, "[%s] %d job(s) of %s, results in %s\n", mode_name(mode), c->count, o->mix_text, dir);
    int rc = 0;
    if (mode == MODE_MPS || mode == MODE_MIG_EMULATE) rc = start_mps(r);
    else if (mode == MODE_MIG) rc = start_mig(r);
    r->jobs = calloc((size_t)c->count, sizeof *r->jobs);
    for (int i = 0; rc == 0 && r->jobs && i < c->count; i++) {
        job_env env;
        job_environment(r, i, &env);
        rc = job_prepare(&r->jobs[i], i, &o->mix.jobs[i], o->train_path, c->epochs, c->steps,
                         o->data_root, &env, dir, r->error, sizeof r->error);
        r->jobs[i].footprint_bytes = c->fp[i].total;
    }
    if (!r->jobs) rc = -1;
    if (rc == 0) {
        start_monitor(r);
        jobs_settings s = {o->ready_timeout_s, o->grace_s, mode_name(mode), {r, on_phase}};
        if (mode == MODE_SERIAL) {
            for (int i = 0; i < c->count; i++)
                r->stopped |= jobs_run_group(&r->jobs[i], 1, &s) == GROUP_STOPPED;
        } else {
            r->stopped = jobs_run_group(r->jobs, c->count, &s) == GROUP_STOPPED;
        }
        monitor_stop(&r->mon);
    } else {
        fprintf(stderr, "[%s] error: %s\n", mode_name(mode), r->error[0] ? r->error : "set-up failed");
    }
    teardown(r);
    if (rc == 0) {
        results_summarize(r->jobs, c->count, mode_name(mode), mode == MODE_SERIAL, r->stopped, base, &r->summary);
        measure_energy(r);
        serial_baseline own;
        if (mode == MODE_SERIAL) { /* alone by construction: its own baseline */
            results_baseline_from(&r->summary, "this run", &own);
            base = &own;
        }
        results_compare(&r->summary, base);
        if (results_write_jobs_csv(dir, r->jobs, c->count, &r->summary, err, sizeof err) != 0 ||
            results_write_summary(dir, o->mix_text, r->jobs, c->count, &r->summary, base, err, sizeof err) != 0)
            fprintf(stderr, "error: %s\n", err);
        results_print_table(stdout, r->jobs, c->count, &r->summary);
        fflush(stdout);
    } else {
        memset(&r->summary, 0, sizeof r->summary);
        snprintf(r->summary.mode, sizeof r->summary.mode, "%s", mode_name(mode));
        r->summary.status = "failed";
        r->summary.makespan_s = r->summary.aggregate_samples_per_s = r->summary.speedup = NAN;
        r->summary.energy_j = r->summary.energy_vs_serial = NAN;
    }
    write_run_json(c, r, dir, mode_name(mode), rc == 0 ? r->summary.status : "failed");
    *summary = r->summary;
    for (int i = 0; r->jobs && i < c->count; i++) job_release(&r->jobs[i]);
    free(r->jobs);
    monitor_free(&r->mon);
    free(r);
    return rc;
}

/* --- dry run --------------------------------------------------------------------------------- */

static void print_dry_run(const suite_ctx *c, const char *fit_error, const char *plan_error) {
    const suite_options *o = c->o;
    const monitor_gpu *g = &c->gpu;
    if (o->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "mode", mode_name(o->mode));
        cJSON_AddStringToObject(root, "mix", o->mix_text);
        cJSON_AddNumberToObject(root, "epochs", c->epochs);
        cJSON_AddNumberToObject(root, "steps_per_epoch", (double)c->steps);
        cJSON_AddItemToObject(root, "gpu", gpu_json(g, o->gpu));
        cJSON_AddItemToObject(root, "jobs", jobs_json(c, NULL));
        cJSON_AddBoolToObject(root, "fits", fit_error == NULL);
        if (fit_error) cJSON_AddStringToObject(root, "fit_error", fit_error);
        if (c->have_emulate_plan) cJSON_AddItemToObject(root, "mig_plan", plan_json(&c->emulate_plan));
        if (plan_error) cJSON_AddStringToObject(root, "plan_error", plan_error);
        char *text = cJSON_Print(root);
        if (text) printf("%s\n", text);
        free(text);
        cJSON_Delete(root);
        return;
    }
    char mem[32], bytes[32];
    results_format_bytes(mem, sizeof mem, g->memory_bytes);
    printf("dry run: mode %s, mix %s, %d epoch(s) (the second is timed), %s\nGPU %d: %s%s%s, %s\n\n",
           mode_name(o->mode), o->mix_text, c->epochs, c->steps ? "fixed steps per epoch" : "whole epochs",
           o->gpu, g->nvml_ok ? g->name : "unknown: ", g->nvml_ok ? ", driver " : g->why, g->driver, mem);
    printf("%-4s %-24s %-16s %-11s %6s %6s %12s %12s\n", "job", "label", "model", "data", "batch",
           "size", "params", "footprint");
    double total = 0;
    for (int i = 0; i < c->count; i++) {
        const job_spec *s = &o->mix.jobs[i];
        results_format_bytes(bytes, sizeof bytes, c->fp[i].total);
        total += c->fp[i].total;
        printf("%-4d %-24.24s %-16s %-11s %6d %6d %12.0f %12s\n", i, s->label, s->model, s->data,
               s->batch, s->image_size, c->fp[i].params, bytes);
    }
    results_format_bytes(bytes, sizeof bytes, total);
    printf("total footprint %s: %s\n\n", bytes, fit_error ? fit_error : isnan(g->memory_bytes) ? "GPU memory unknown, not checked" : "fits");
    int all = o->mode == MODE_ALL;
    if (all || o->mode == MODE_SERIAL) printf("serial: each job alone, in mix order\n");
    if (all || o->mode == MODE_NAIVE) printf("naive: %d processes at once on GPU %s\n", c->count, g->visible);
    if (all || o->mode == MODE_MPS) {
        printf("mps: %s, %d clients", o->mps_pipe ? "the daemon at --mps-pipe" : "own daemon (private folders in the run folder)", c->count);
        for (int i = 0; i < c->count && (o->have_mps_sm || o->have_mps_mem); i++) {
            results_format_bytes(bytes, sizeof bytes, o->have_mps_mem ? (double)o->mps_mem[i] : NAN);
            printf("%s job %d: %d%% SMs, limit %s", i ? ";" : ":", i, o->have_mps_sm ? o->mps_sm[i] : 100, bytes);
        }
        printf("\n");
    }
    if (c->have_emulate_plan) {
        printf("%s layout (on an empty GPU):\n", o->mode == MODE_MIG_EMULATE || o->mig_emulate ? "mig-emulate (through MPS)" : "mig");
        mig_plan_print(&c->emulate_plan, stdout);
    }
    if (plan_error) printf("mig: %s\n", plan_error);
    printf("\ncommands:\n");
    for (int i = 0; i < c->count; i++) {
        char **argv = argv_of(c, i);
        printf("  job %d:", i);
        for (char **a = argv; a && *a; a++) printf(" %s", *a);
        printf("\n");
        job_free_strv(argv);
    }
}

/* --- the run --------------------------------------------------------------------------------- */

static int exit_for(const run_summary *s, int stopped) {
    if (stopped) return 128 + (jobs_stop_signal() ? jobs_stop_signal() : SIGTERM);
    if (strcmp(s->status, "failed") == 0) return EXIT_RUNTIME;
    return strcmp(s->status, "complete") == 0 ? EXIT_OK : EXIT_PARTIAL;
}

/* --mode mig: NVML present and MIG mode on, checked before a run folder exists. */
static int mig_usable(const suite_ctx *c, char *err, size_t err_size) {
    nvml *nv = nvml_open(NULL, err, err_size);
    mig_session *s = nv ? calloc(1, sizeof *s) : NULL;
    int rc = s && mig_open(s, nv, (unsigned)c->o->gpu, err, err_size) == 0 &&
                     mig_require_enabled(s, err, err_size) == 0 ? 0 : -1;
    free(s);
    nvml_close(nv);
    return rc;
}

/* Footprints, GPU, MIG plan, fit check, baseline: everything decided before anything runs.
 * Returns -1 to go on, else the exit status. */
static int prepare(suite_ctx *c, char *plan_err, size_t plan_err_size) {
    const suite_options *o = c->o;
    char err[2048], fit[2048];
    for (int i = 0; i < c->count; i++) {
        char mine[256], other[256];
        mix_job_format(&o->mix.jobs[i], mine, sizeof mine);
        for (int k = 0; k < i && c->fp[i].total <= 0; k++) /* "7*S": ask train once */
            if (mix_job_format(&o->mix.jobs[k], other, sizeof other) >= 0 && !strcmp(mine, other)) c->fp[i] = c->fp[k];
        if (c->fp[i].total <= 0 &&
            job_query_footprint(o->train_path, &o->mix.jobs[i], o->data_root, &c->fp[i], err, sizeof err) != 0) {
            fprintf(stderr, "error: job %d (%s): %s\n", i, o->mix.jobs[i].label, err);
            return EXIT_USAGE;
        }
    }
    monitor_probe_gpu(c->o->gpu, &c->gpu);
    int wants_plan = o->mode == MODE_MIG_EMULATE || (o->mode == MODE_ALL && o->mig_emulate) ||
                     (o->dry_run && (o->mode == MODE_MIG || o->mode == MODE_ALL));
    if (wants_plan && plan_emulation(c, plan_err, plan_err_size) != 0 && !o->dry_run) {
        fprintf(stderr, "error: %s\n", plan_err);
        return EXIT_RUNTIME;
    }
    double fps[MIX_MAX_JOBS];
    long long limits[MIX_MAX_JOBS] = {0};
    for (int i = 0; i < c->count; i++) {
        fps[i] = c->fp[i].total;
        if (o->have_mps_mem) limits[i] = o->mps_mem[i];
        const mig_planned *p = c->have_emulate_plan && (o->mode == MODE_MIG_EMULATE || o->mig_emulate)
                                   ? planned_for(&c->emulate_plan, i) : NULL;
        if (p && (!limits[i] || (long long)p->memory_bytes < limits[i])) limits[i] = (long long)p->memory_bytes;
    }
    /* MIG's planner and assignment check each instance themselves. */
    int fits = o->mode == MODE_MIG ||
               mode_check_fit(o->mode, fps, limits, c->count, c->gpu.memory_bytes, fit, sizeof fit) == 0;
    if (o->dry_run) {
        print_dry_run(c, fits ? NULL : fit, plan_err[0] ? plan_err : NULL);
        return EXIT_OK;
    }
    if (o->mode == MODE_MIG && mig_usable(c, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        return EXIT_RUNTIME;
    }
    if (!fits && !o->force) {
        fprintf(stderr, "error: refused: %s\n(--force runs it anyway)\n", fit);
        return EXIT_USAGE;
    }
    if (!fits) fprintf(stderr, "warning: %s; running anyway (--force)\n", fit);
    if (isnan(c->gpu.memory_bytes) && o->mode != MODE_MIG)
        fprintf(stderr, "warning: GPU memory unknown (%s): the footprint check is skipped\n", c->gpu.why);
    if (o->baseline_dir) {
        job_run *probe = calloc((size_t)c->count, sizeof *probe);
        for (int i = 0; probe && i < c->count; i++) {
            probe[i].spec = o->mix.jobs[i];
            probe[i].epochs_planned = o->mix.jobs[i].epochs ? o->mix.jobs[i].epochs : c->epochs;
            probe[i].steps_per_epoch = o->mix.jobs[i].steps_per_epoch ? o->mix.jobs[i].steps_per_epoch : c->steps;
        }
        int rc = probe ? results_load_baseline(o->baseline_dir, probe, c->count, &c->baseline, err, sizeof err) : -1;
        free(probe);
        if (rc != 0) {
            fprintf(stderr, "error: %s\n", err);
            return EXIT_USAGE;
        }
    }
    return -1;
}

/* serial, naive, mps and mig (or mig-emulate) into sub-folders, then one comparison. */
static int run_all(suite_ctx *c) {
    const suite_options *o = c->o;
    run_summary runs[4];
    int n = 0, stopped = 0, worst = EXIT_OK;
    const suite_mode order[4] = {MODE_SERIAL, MODE_NAIVE, MODE_MPS, o->mig_emulate ? MODE_MIG_EMULATE : MODE_MIG};
    serial_baseline serial = c->baseline;
    char err[1024];
    for (int k = 0; k < 4 && !stopped; k++) {
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s/%s", c->run_dir, mode_name(order[k]));
        if (results_make_dirs(dir, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            worst = EXIT_RUNTIME;
            break;
        }
        int rc = execute_mode(c, order[k], dir, serial.known ? &serial : NULL, &runs[n]);
        stopped = jobs_stop_signal() != 0;
        if (rc != 0 && order[k] == MODE_MIG && !stopped) {
            runs[n].status = "skipped"; /* "where possible": the other modes stand */
            fprintf(stderr, "[mig] skipped; the comparison has the other modes\n");
        } else {
            int e = exit_for(&runs[n], stopped);
            if (e != EXIT_OK && (worst == EXIT_OK || e > 128)) worst = e;
        }
        if (order[k] == MODE_SERIAL && rc == 0) results_baseline_from(&runs[n], "serial part of this run", &serial);
        n++;
    }
    for (int k = 0; k < n; k++) results_compare(&runs[k], serial.known ? &serial : NULL);
    results_print_comparison(stdout, runs, n);
    if (results_write_comparison(c->run_dir, runs, n, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    write_run_json(c, NULL, c->run_dir, "all", stopped ? "interrupted" : worst == EXIT_OK ? "complete" : "partial");
    return worst;
}

int suite_run(const suite_options *o) {
    suite_ctx *c = calloc(1, sizeof *c);
    if (!c) return EXIT_RUNTIME;
    c->o = o;
    c->count = o->mix.count;
    c->epochs = o->epochs > 0 ? o->epochs : 2;
    c->steps = o->steps_per_epoch;
    iso_now(c->started, sizeof c->started);
    jobs_install_stop_signals();
    char err[2048], plan_err[2048] = "";
    int status = prepare(c, plan_err, sizeof plan_err);
    if (status < 0 && jobs_stop_signal()) status = 128 + jobs_stop_signal(); /* nothing ran yet */
    if (status < 0 && results_make_run_dir(o->results_dir, mode_name(o->mode), o->mix_text, c->run_dir,
                                           sizeof c->run_dir, c->run_id, sizeof c->run_id, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", err);
        status = EXIT_RUNTIME;
    }
    if (status < 0 && o->mode == MODE_ALL) {
        status = run_all(c);
    } else if (status < 0) {
        run_summary s;
        execute_mode(c, o->mode, c->run_dir, c->baseline.known ? &c->baseline : NULL, &s);
        status = exit_for(&s, jobs_stop_signal() != 0);
    }
    free(c);
    return status;
}
