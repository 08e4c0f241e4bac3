#include "models/context.h"

#include <stdio.h>
#include <string.h>

#include "models/check.h"

context_status context_init(job_context *ctx, int device, size_t workspace_limit, int allow_tf32) {
    memset(ctx, 0, sizeof *ctx);
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        fprintf(stderr, "no usable CUDA device: %s\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "the driver reports 0 devices");
        return CONTEXT_NO_DEVICE;
    }
    if (device < 0 || device >= count) {
        fprintf(stderr, "device %d does not exist: %d device(s) are visible\n", device, count);
        return CONTEXT_NO_DEVICE;
    }
    ctx->device = device;
    ctx->workspace_limit = workspace_limit;
    ctx->allow_tf32 = allow_tf32;
    CHECK_CUDA(cudaSetDevice(device));
    /* A host thread waiting for the GPU sleeps rather than spins: the CPU cores belong to the data
     * loader's workers and, under collocation, to the other jobs (a spinning wait takes a whole
     * core for nothing). The steps are enqueued a step ahead, so the wake-up is never on the
     * GPU's critical path. */
    CHECK_CUDA(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    CHECK_CUDA(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
    CHECK_CUDNN(cudnnCreate(&ctx->cudnn));
    CHECK_CUDNN(cudnnSetStream(ctx->cudnn, ctx->stream));
    CHECK_CUBLAS(cublasLtCreate(&ctx->cublaslt));
    return CONTEXT_OK;
}

void context_reserve_workspace(job_context *ctx, size_t bytes) {
    if (bytes > ctx->workspace_bytes) context_set_workspace(ctx, bytes);
}

void context_set_workspace(job_context *ctx, size_t bytes) {
    if (bytes == ctx->workspace_bytes) return;
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    if (ctx->workspace) CHECK_CUDA(cudaFree(ctx->workspace));
    ctx->workspace = NULL;
    if (bytes) CHECK_CUDA(cudaMalloc(&ctx->workspace, bytes));
    ctx->workspace_bytes = bytes;
}

void context_free(job_context *ctx) {
    if (ctx->stream) CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    arena_free(&ctx->arena);
    if (ctx->workspace) CHECK_CUDA(cudaFree(ctx->workspace));
    if (ctx->cublaslt) CHECK_CUBLAS(cublasLtDestroy(ctx->cublaslt));
    if (ctx->cudnn) CHECK_CUDNN(cudnnDestroy(ctx->cudnn));
    if (ctx->stream) CHECK_CUDA(cudaStreamDestroy(ctx->stream));
    memset(ctx, 0, sizeof *ctx);
}
