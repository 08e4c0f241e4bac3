#include "models/core/wgrad_lane.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "kernels/knobs.h"

void wgrad_lane_init(wgrad_lane *l, const job_context *ctx, size_t workspace_bytes, int lag) {
    if (lag < 1 || lag >= WGRAD_LANE_RING) {
        fprintf(stderr, "wgrad_lane_init: lag must be 1..%d (got %d)\n", WGRAD_LANE_RING - 1, lag);
        exit(1);
    }
    memset(l, 0, sizeof *l);
    l->lag = lag;
    l->stream = context_stream_create(ctx, 0); /* behind the chain */
    CHECK_CUDNN(cudnnCreate(&l->cudnn));
    CHECK_CUDNN(cudnnSetStream(l->cudnn, l->stream));
    if (workspace_bytes) CHECK_CUDA(cudaMalloc(&l->workspace, workspace_bytes));
    l->workspace_bytes = workspace_bytes;
    CHECK_CUDA(cudaEventCreateWithFlags(&l->fork, cudaEventDisableTiming));
    for (int i = 0; i < WGRAD_LANE_RING; i++) CHECK_CUDA(cudaEventCreateWithFlags(&l->done[i], cudaEventDisableTiming));
}

void wgrad_lane_free(wgrad_lane *l) {
    if (!l->stream) return;
    CHECK_CUDA(cudaStreamSynchronize(l->stream));
    for (int i = 0; i < WGRAD_LANE_RING; i++) CHECK_CUDA(cudaEventDestroy(l->done[i]));
    CHECK_CUDA(cudaEventDestroy(l->fork));
    if (l->workspace) CHECK_CUDA(cudaFree(l->workspace));
    CHECK_CUDNN(cudnnDestroy(l->cudnn));
    CHECK_CUDA(cudaStreamDestroy(l->stream));
    memset(l, 0, sizeof *l);
}

cudnnHandle_t wgrad_lane_job_begin(wgrad_lane *l, cudaStream_t chain) {
    if (l->issued >= l->lag)
        CHECK_CUDA(cudaStreamWaitEvent(chain, l->done[(l->issued - l->lag) % WGRAD_LANE_RING], 0));
    wgrad_lane_follow(l, chain);
    return l->cudnn;
}

cudaStream_t wgrad_lane_follow(wgrad_lane *l, cudaStream_t chain) {
    CHECK_CUDA(cudaEventRecord(l->fork, chain));
    CHECK_CUDA(cudaStreamWaitEvent(l->stream, l->fork, 0));
    return l->stream;
}

void wgrad_lane_job_end(wgrad_lane *l) {
    CHECK_CUDA(cudaEventRecord(l->done[l->issued % WGRAD_LANE_RING], l->stream));
    l->issued++;
}

void wgrad_lane_join(wgrad_lane *l, cudaStream_t chain) {
    if (l->issued) CHECK_CUDA(cudaStreamWaitEvent(chain, l->done[(l->issued - 1) % WGRAD_LANE_RING], 0));
    l->issued = 0;
}

int wgrad_lane_asked(void) { return knob_flag(KNOB_WGRAD_LANE); }

int wgrad_lane_work_queues(void) {
    const char *text = getenv("CUDA_DEVICE_MAX_CONNECTIONS"); /* CUDA's own variable, not a suite knob */
    char *end;
    long queues = text ? strtol(text, &end, 10) : 0;
    return text && *text && !*end && queues >= 1 && queues <= 32 ? (int)queues : 8;
}

wgrad_lane_choice wgrad_lane_choose(const job_context *ctx) {
    wgrad_lane_choice c = {.asked = wgrad_lane_asked()};
    int jobs = ctx->process_jobs > 1 ? ctx->process_jobs : 1, queues = wgrad_lane_work_queues();
    if (!c.asked) return c;
    const char *setting = knob_text(KNOB_WGRAD_LANE);
    if (setting && !strcmp(setting, "force")) /* to measure what the lane costs where it cannot pay */
        c.in_effect = 1;
    else if (ctx->green)
        snprintf(c.why_off, sizeof c.why_off, "a green-context partition of %d SMs: its chain fills them", ctx->sm_count);
    else if (2 * jobs > queues)
        snprintf(c.why_off, sizeof c.why_off,
                 "%d jobs in one process need %d hardware work queues; CUDA_DEVICE_MAX_CONNECTIONS gives %d", jobs,
                 2 * jobs, queues);
    else
        c.in_effect = 1;
    return c;
}
