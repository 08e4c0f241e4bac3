#include "runner/train/job_trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/spread.h"
#include "kernels/check.h"
#include "models/core/kernel_trace.h"
#include "runner/train/kernel_files.h"

typedef enum { TRACE_WAITING, TRACE_RECORDING, TRACE_DONE } trace_phase;

struct job_trace {
    const train_options *o;
    const train_events *ev;
    kernel_scopes *scopes;
    kernel_trace_job *tracer;     /* NULL: cannot trace (why) */
    char why[512];
    job_context *ctx;
    trace_phase phase;
    double t0, t1;
    float *step_ms;               /* the window's steps */
    size_t steps, step_cap;
};

static void emit_error(job_trace *t, const char *why) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "kernels");
    cJSON_AddStringToObject(e, "error", why);
    train_emit(t->ev, e);
    fprintf(t->ev->human, "kernel trace: %s\n", why);
}

job_trace *job_trace_open(const train_options *o, const train_events *ev) {
    if (!o->kernels[0]) return NULL;
    job_trace *t = calloc(1, sizeof *t);
    if (!t) {
        fprintf(stderr, "train --kernels: out of memory for the kernel trace\n");
        return NULL;
    }
    t->o = o, t->ev = ev;
    t->scopes = kernel_scopes_create();
    if (!t->scopes) snprintf(t->why, sizeof t->why, "out of memory for the scope table");
    else t->tracer = kernel_trace_join(t->scopes, t->why, sizeof t->why);
    return t;
}

void job_trace_attach(job_trace *t, job_context *ctx, const param_table *params) {
    if (!t || !t->tracer) return;
    t->ctx = ctx;
    ctx->scopes = t->scopes;
    const char **names = calloc((size_t)params->count + 1, sizeof *names);
    const void **keys = calloc((size_t)params->count + 1, sizeof *keys);
    for (int i = 0; names && keys && i < params->count; i++)
        names[i] = params->entries[i].name, keys[i] = params->entries[i].data;
    if (!names || !keys || kernel_scopes_name_params(t->scopes, names, keys, params->count) != 0)
        fprintf(t->ev->human, "kernel trace: out of memory naming the layers; they are named \"?\"\n");
    free(names);
    free(keys);
}

void job_trace_begin(job_trace *t, double t0, double t1) {
    if (!t || t->phase != TRACE_WAITING) return;
    t->phase = TRACE_RECORDING;
    t->t0 = t0, t->t1 = t1;
    char why[512];
    if (!t->tracer || !t->ctx) {
        emit_error(t, t->tracer ? "the job has no GPU context to trace" : t->why);
        t->phase = TRACE_DONE;
    } else if (kernel_trace_start(t->tracer, t0, t1, why, sizeof why) != 0) {
        emit_error(t, why);
        t->phase = TRACE_DONE;
    }
}

/* The file header's device figures: the job's SMs and the peaks they give. */
static void describe_device(const job_trace *t, kernel_file_header *h, char *name, size_t name_size) {
    struct cudaDeviceProp p;
    int device = t->ctx->device, clock_khz = 0, memory_khz = 0, bus_bits = 0;
    CHECK_CUDA(cudaGetDeviceProperties(&p, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&memory_khz, cudaDevAttrMemoryClockRate, device));
    CHECK_CUDA(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
    snprintf(name, name_size, "%s", p.name);
    h->device_name = name;
    h->device_sms = p.multiProcessorCount;
    h->sm_count = t->ctx->green ? t->ctx->sm_count : p.multiProcessorCount;
    h->peak_flops = kernel_peak_flops(p.major, p.minor, t->o->precision, h->sm_count, clock_khz);
    h->peak_bytes_s = kernel_peak_bytes(memory_khz, bus_bits);
}

/* The job's name in the files: the prefix's last part (run_suite's job<i>). */
static const char *job_name(const char *prefix) {
    const char *slash = strrchr(prefix, '/');
    return slash && slash[1] ? slash + 1 : prefix;
}

void job_trace_finish(job_trace *t, double t1) {
    if (!t || t->phase != TRACE_RECORDING) return;
    t->phase = TRACE_DONE;
    CHECK_CUDA(cudaStreamSynchronize(t->ctx->stream)); /* every kernel of the window has ended */
    char why[1024];
    kernel_tally *tally = kernel_trace_stop(t->tracer, t1, why, sizeof why);
    if (!tally) {
        emit_error(t, why);
        return;
    }
    spread_sort_floats(t->step_ms, t->steps);
    char device[256];
    kernel_file_header h = {.job = job_name(t->o->kernels), .model = t->o->model, .precision = t->o->precision,
                            .batch = t->o->batch, .steps = (long)t->steps,
                            .step_ms = t->steps ? t->step_ms[t->steps / 2] : 0};
    describe_device(t, &h, device, sizeof device);
    if (kernel_files_write(t->o->kernels, &h, tally, t->scopes, why, sizeof why) != 0) {
        emit_error(t, why);
        kernel_tally_free(tally);
        return;
    }
    char kernels[1100], intervals[1100];
    kernel_files_paths(t->o->kernels, kernels, intervals, sizeof kernels);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "kernels");
    cJSON_AddStringToObject(e, "file", kernels);
    cJSON_AddStringToObject(e, "intervals", intervals);
    cJSON_AddNumberToObject(e, "kernels", (double)kernel_tally_kernels(tally));
    cJSON_AddNumberToObject(e, "dropped", (double)kernel_tally_dropped(tally));
    cJSON_AddNumberToObject(e, "steps", (double)t->steps);
    cJSON_AddNumberToObject(e, "t0", kernel_tally_t0(tally));
    cJSON_AddNumberToObject(e, "t1", kernel_tally_t1(tally));
    cJSON_AddNumberToObject(e, "step_ms", h.step_ms);
    train_emit(t->ev, e);
    fprintf(t->ev->human, "kernel trace: %.0f kernels of %ld steps (%.0f dropped) in %s\n",
            (double)kernel_tally_kernels(tally), (long)t->steps, (double)kernel_tally_dropped(tally), kernels);
    kernel_tally_free(tally);
}

void job_trace_step(job_trace *t, double t_end, double ms) {
    if (!t || t->phase != TRACE_RECORDING) return;
    if (t_end > t->t1) {
        job_trace_finish(t, t->t1);
        return;
    }
    if (t_end < t->t0) return;
    if (t->steps == t->step_cap) {
        size_t cap = t->step_cap ? 2 * t->step_cap : 1024;
        float *grown = realloc(t->step_ms, cap * sizeof *grown);
        if (!grown) return; /* the median of the steps kept */
        t->step_ms = grown, t->step_cap = cap;
    }
    t->step_ms[t->steps++] = (float)ms;
}

void job_trace_close(job_trace *t) {
    if (!t) return;
    if (t->ctx) t->ctx->scopes = NULL;
    kernel_trace_leave(t->tracer);
    kernel_scopes_free(t->scopes);
    free(t->step_ms);
    free(t);
}
