/* run.json (see run_json.h). */
#define _GNU_SOURCE
#include "runner/suite/run/run_json.h"
#include "results/kernel_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "data/data_check.h"
#include "results/results.h"

void run_json_time(char *out, size_t size) {
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

cJSON *run_json_gpu(const monitor_gpu *g, int index) {
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

cJSON *run_json_jobs(const suite_ctx *c, const mode_run *r) {
    cJSON *jobs = cJSON_CreateArray();
    int count = r ? r->count : c->count;
    for (int k = 0; k < count; k++) {
        int i = r ? r->job_of[k] : k;
        const job_spec *spec = &c->o->mix.jobs[i];
        const job_footprint *f = &c->fp[i];
        cJSON *j = cJSON_CreateObject();
        char canonical[256];
        mix_job_format(spec, canonical, sizeof canonical);
        cJSON_AddStringToObject(j, "label", spec->label);
        cJSON_AddStringToObject(j, "job", canonical);
        cJSON_AddStringToObject(j, "model", spec->model);
        cJSON_AddStringToObject(j, "data", spec->data);
        char what[1200]; /* real (where) or synthetic (why): run_suite passes --data-if-present with a root */
        int real = data_describe(spec->data, c->o->data_root, 1, what, sizeof what);
        cJSON_AddStringToObject(j, "data_source", real ? "real" : "synthetic");
        cJSON_AddStringToObject(j, "data_detail", what);
        cJSON_AddNumberToObject(j, "batch", spec->batch);
        cJSON_AddNumberToObject(j, "image_size", spec->image_size);
        cJSON_AddNumberToObject(j, "classes", spec->classes);
        if (spec->decode_given) cJSON_AddStringToObject(j, "decode", decode_kind_name(spec->decode));
        if (spec->decode_slots > 0) cJSON_AddNumberToObject(j, "decode_slots", spec->decode_slots);
        add_num(j, "params", f->params);
        cJSON *fj = cJSON_AddObjectToObject(j, "footprint");
        const char *keys[] = {"parameters", "gradients", "optimizer", "buffers", "activations", "workspace", "total"};
        const double vals[] = {f->parameters, f->gradients, f->optimizer, f->buffers, f->activations, f->workspace, f->total};
        for (int n = 0; n < 7; n++) add_num(fj, keys[n], vals[n]);
        const job_record *run = r && r->jobs ? &r->jobs[k] : NULL;
        char **argv = run ? NULL : suite_job_argv(c, i);
        cJSON_AddItemToObject(j, "argv", strv_json(run ? run->argv : argv));
        job_free_strv(argv);
        cJSON *traced = run ? ktrace_event_json(run) : NULL;
        if (traced) cJSON_AddItemToObject(j, "kernels", traced);
        if (run) {
            cJSON *env = cJSON_AddArrayToObject(j, "cuda_env");
            for (char **e = run->envp; e && *e; e++)
                if (strncmp(*e, "CUDA_", 5) == 0) cJSON_AddItemToArray(env, cJSON_CreateString(*e));
        }
        cJSON_AddItemToArray(jobs, j);
    }
    return jobs;
}

void run_json_write(const suite_ctx *c, const mode_run *r, const char *dir, const char *mode,
                    const char *status) {
    const run_request *o = c->o;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "run_id", c->run_id);
    cJSON_AddStringToObject(root, "mode", mode);
    cJSON_AddStringToObject(root, "mix", o->mix_text);
    cJSON_AddStringToObject(root, "status", status);
    cJSON_AddStringToObject(root, "started", c->started);
    char finished[32] = "";
    if (strcmp(status, "running") != 0) run_json_time(finished, sizeof finished);
    cJSON_AddStringToObject(root, "finished", finished);
    /* who writes it: "running" whose process is gone reads as failed (results.h) */
    cJSON_AddItemToObject(root, "process", results_process_json());
    if (r && r->error[0]) cJSON_AddStringToObject(root, "error", r->error);
    cJSON_AddItemToObject(root, "command", strv_json(o->argv));
    cJSON_AddItemToObject(root, "gpu", run_json_gpu(&c->gpu, o->gpu));
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    cJSON_AddStringToObject(root, "host", host);
    cJSON *s = cJSON_AddObjectToObject(root, "settings");
    cJSON_AddNumberToObject(s, "epochs", o->epochs);
    cJSON_AddNumberToObject(s, "steps_per_epoch", (double)o->steps_per_epoch);
    cJSON_AddBoolToObject(s, "quick", o->quick);
    cJSON_AddStringToObject(s, "train", o->train_path);
    cJSON_AddStringToObject(s, "data_root", o->data_root ? o->data_root : "");
    cJSON_AddNumberToObject(s, "sample_ms", o->sample_ms);
    cJSON_AddBoolToObject(s, "monitor", !o->no_monitor);
    cJSON_AddNumberToObject(s, "ready_timeout_s", o->ready_timeout_s);
    cJSON_AddNumberToObject(s, "grace_s", o->grace_s);
    cJSON_AddBoolToObject(s, "force", o->force);
    cJSON_AddBoolToObject(s, "kernels", o->kernels);
    if (o->kernels) cJSON_AddNumberToObject(s, "kernels_window_s", o->kernels_window_s);
    int mode_count;
    const suite_mode *const *modes = suite_modes(&mode_count);
    for (int k = 0; k < mode_count; k++) /* the options modes declare, as they record them */
        if (modes[k]->options && modes[k]->options->settings)
            modes[k]->options->settings(suite_mode_options(o, modes[k]), s);
    cJSON_AddStringToObject(s, "baseline", c->baseline.known ? c->baseline.source : "");
    cJSON_AddItemToObject(root, "jobs", run_json_jobs(c, r));
    if (r && r->started && r->mode->report) r->mode->report(r, root);
    char err[512];
    if (results_write_json(dir, "run.json", root, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    cJSON_Delete(root);
}
