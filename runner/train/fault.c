/* The GPU half of injected faults (see fault.h). Each kind fails the way a real job would, with
 * the runner's protocol intact up to the failure: an error event carrying the CUDA error's own
 * text where there is one, so the runner's record of the job names what the GPU said. */
#define _GNU_SOURCE
#include "runner/train/fault.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "kernels/fault.h"
#include "kernels/kernels.h"
#include "kernels/check.h"
#include "models/core/model.h"
#include "runner/train/train_events.h"

#define OOM_MAX_BLOCKS 65536

static void announce(const train_fault *f, const train_events *ev) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "fault");
    cJSON_AddStringToObject(e, "kind", fault_kind_name(f->kind));
    cJSON_AddNumberToObject(e, "step", (double)f->step);
    cJSON_AddNumberToObject(e, "t", clock_unix());
    train_emit(ev, e);
    fprintf(stderr, "train: injecting fault %s at step %ld\n", fault_kind_name(f->kind), f->step);
    fflush(stderr);
}

/* Takes device memory in halving blocks until cudaMalloc refuses even 1 MiB: the job then holds
 * all the memory it could get, as a leaking job would, and fails on the refusal. */
static void exhaust_memory(const train_fault *f, const train_events *ev) {
    static void *blocks[OOM_MAX_BLOCKS];
    size_t block = (size_t)1 << 30, taken = 0;
    int count = 0;
    cudaError_t rc = cudaSuccess;
    while (count < OOM_MAX_BLOCKS) {
        rc = cudaMalloc(&blocks[count], block);
        if (rc == cudaSuccess) {
            taken += block;
            count++;
            continue;
        }
        if (rc != cudaErrorMemoryAllocation || block <= ((size_t)1 << 20)) break;
        (void)cudaGetLastError(); /* not sticky: keep asking for less */
        block /= 2;
    }
    char message[512];
    snprintf(message, sizeof message, "cudaMalloc: %s (%s) after taking %.2f GiB more (injected fault %s at step %ld)",
             cudaGetErrorString(rc), cudaGetErrorName(rc), taken / 1073741824.0, fault_kind_name(f->kind), f->step);
    suite_check_exit(train_fail(ev, 1, message), message); /* in the job host: this job only */
}

static void write_out_of_bounds(const train_fault *f, const train_events *ev, cudaStream_t stream) {
    float *buffer = NULL;
    CHECK_CUDA(cudaMalloc((void **)&buffer, 256 * sizeof *buffer));
    cudaError_t rc = fault_write_out_of_bounds(buffer, stream);
    if (rc == cudaSuccess) rc = cudaStreamSynchronize(stream);
    char message[512];
    if (rc == cudaSuccess)
        snprintf(message, sizeof message, "injected fault %s at step %ld: the out-of-bounds write was not "
                 "reported by the GPU", fault_kind_name(f->kind), f->step);
    else
        snprintf(message, sizeof message, "cudaStreamSynchronize: %s (%s) (injected fault %s at step %ld)",
                 cudaGetErrorString(rc), cudaGetErrorName(rc), fault_kind_name(f->kind), f->step);
    suite_check_exit(train_fail(ev, 1, message), message); /* in the job host: this job only */
}

void train_fault_at(const train_fault *f, long step, const struct train_events *ev,
                    struct CUstream_st *stream, const struct param_table *params) {
    if (f->kind == FAULT_NONE || step != f->step) return;
    announce(f, ev);
    switch (f->kind) {
    case FAULT_OOM:
        exhaust_memory(f, ev);
        break;
    case FAULT_ILLEGAL_ADDRESS:
        write_out_of_bounds(f, ev, stream);
        break;
    case FAULT_NAN: /* the first weight tensor: every later forward pass reads it */
        for (int i = 0; i < params->count; i++) {
            const param_entry *p = &params->entries[i];
            if (p->kind != PARAM_WEIGHT || !p->data) continue;
            fill_float(p->data, NAN, (size_t)param_numel(p), stream);
            break;
        }
        break;
    case FAULT_EXIT:
        exit(1);
    case FAULT_HANG:
        for (;;) pause(); /* SIGTERM and SIGKILL still end it, as the runner's watchdog sends */
    case FAULT_SIGKILL:
        raise(SIGKILL);
        break;
    case FAULT_NONE:
        break;
    }
}
