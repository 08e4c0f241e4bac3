/* Everything one training job owns on the GPU: its device, stream, library handles, arena and
 * the workspace shared by cuDNN and cuBLASLt. No globals, so several jobs can live in one process
 * (the streams and green-context modes). */
#ifndef SUITE_CONTEXT_H
#define SUITE_CONTEXT_H

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "models/arena.h"

typedef struct job_context {
    int device;
    cudaStream_t stream;
    cudnnHandle_t cudnn;
    cublasLtHandle_t cublaslt;
    arena arena;
    void *workspace;          /* shared by every cuDNN / cuBLASLt call on this stream */
    size_t workspace_bytes;
    size_t workspace_limit;   /* the most a convolution algorithm may ask for */
    int allow_tf32;           /* TF32 tensor-core math for float32 convolutions and matmuls */
} job_context;

/* Reasons context_init can fail without a crash; anything else is a checked library error. */
typedef enum { CONTEXT_OK = 0, CONTEXT_NO_DEVICE = 1 } context_status;

/* Selects the device, creates the stream and handles. Prints why and returns CONTEXT_NO_DEVICE
 * when there is no usable GPU. */
context_status context_init(job_context *ctx, int device, size_t workspace_limit, int allow_tf32);
/* Grows the shared workspace to at least `bytes` (set-up only: it reallocates). */
void context_reserve_workspace(job_context *ctx, size_t bytes);
/* Sets the workspace to exactly `bytes`, e.g. down to what the chosen algorithms need. */
void context_set_workspace(job_context *ctx, size_t bytes);
void context_free(job_context *ctx);

#endif
