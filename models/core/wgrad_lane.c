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

int wgrad_lane_enabled(void) { return knob_flag(KNOB_WGRAD_LANE); }
