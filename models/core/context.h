/* Everything one training job owns on the GPU: its device, stream, library handles, arena and
 * the workspace shared by cuDNN and cuBLASLt. No globals, so several jobs can live in one process
 * (the streams and green-context modes). A job runs on the whole device, or inside a green
 * context: a fixed set of the device's SMs (driver API, CUDA 12.4+), MIG-like compute isolation
 * inside one process without MIG mode, MPS or administrator rights. */
#ifndef SUITE_CONTEXT_H
#define SUITE_CONTEXT_H

#include <stddef.h>

#include <cublasLt.h>
#include <cuda.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "base/sm_target.h"
#include "models/core/arena.h"
#include "models/core/kernel_scope.h"

/* Where a job's work runs. */
typedef struct context_place {
    int device;
    CUgreenCtx green;         /* NULL: the device's primary context, all SMs */
    int sm_count;             /* the green context's SMs; 0 with the whole device */
    int process_jobs;         /* jobs whose streams share this process's hardware work queues
                                 (job_host's count); 0 or 1: the job alone in its process */
} context_place;

/* Told as a backward pass completes gradients, for data-parallel training (models/core/ddp.h), whose
 * all-reduces overlap the rest of the pass. ready: param's gradient is enqueued on the job's
 * stream (layers call context_grad_ready); end: every gradient of the pass is. A layer may still
 * read param after its report (conv, linear and depthwise report before their input gradient,
 * which reads the weight): a hook may read the gradient, never write the parameter. */
typedef struct grad_hooks {
    void *user;
    void (*begin)(void *user);
    void (*ready)(void *user, const float *param);
    void (*end)(void *user);
    int casts_half_grads;  /* 1: the hooks make the float32 gradients from the bfloat16 ones */
} grad_hooks;

/* Set by the trainer for the span of a step whose optimizer may run beside the backward pass
 * (models/core/trainer.c). A model whose pass finishes parameters early (ResNet, whose weight gradients
 * run on a lane: models/core/wgrad_lane.h) calls it with `stream` ordered after every kernel that writes
 * or still reads those parameters and their gradients: from `from` to the end of the arena's
 * decay region (its weights, in build order), every parameter is then final, and the hook may
 * enqueue their update on `stream`. The trainer updates whatever is left after the pass. */
typedef struct update_hook {
    void *user;
    void (*final_from)(void *user, const float *from, cudaStream_t stream);
} update_hook;

/* The SM count the job's libraries are told to plan for (base/sm_target.h), decided once when the
 * context is made: cuBLASLt's matmul descriptors, cuBLAS's handles and cuDNN's engines take it
 * (models/layers/). */
typedef struct context_sm_target {
    int sms;                  /* told; 0: nothing told, the device's own count holds (an MPS share's: from = seen) */
    sm_target_from from;
    int percent;              /* an MPS client's active thread percentage; 0: none */
    int device_sms;           /* the device's SM count as this process sees it (an MPS share's) */
    int context_sms;          /* the driver's count for the context (execution affinity); 0: unknown */
} context_sm_target;

typedef struct job_context {
    int device;
    CUgreenCtx green;         /* the place's green context, or NULL */
    int sm_count;             /* SMs the job may use; 0: all of the device's */
    int process_jobs;         /* the place's: jobs sharing this process's hardware work queues */
    context_sm_target sm_target;
    cudaStream_t stream;      /* at the greatest priority (context_stream_create) */
    cudnnHandle_t cudnn;
    cublasLtHandle_t cublaslt;
    arena arena;
    void *workspace;          /* shared by every cuDNN / cuBLASLt call on this stream */
    size_t workspace_bytes;
    size_t workspace_limit;   /* the most a convolution algorithm may ask for */
    int allow_tf32;           /* TF32 tensor-core math for float32 convolutions and matmuls */
    grad_hooks *grad_hooks;   /* NULL: nobody listens */
    update_hook *update_hook; /* NULL: the optimizer runs after the pass */
    /* 1 only while trainer_step_body enqueues a step (models/core/trainer.c): its optimizer writes the
     * arena's bfloat16 weight copy and, without grad_hooks, reads the bfloat16 gradients, so
     * model_weights_to_half and model_grads_from_half leave those casts to it. 0 (as
     * context_init leaves it) everywhere else: every other forward and backward casts. */
    int optimizer_owns_half;
    /* The job's scope table while it traces its kernels (models/core/kernel_trace.h): layers mark
     * their launches with it (kernel_scope_enter). NULL, as context_init leaves it: no marks. */
    kernel_scopes *scopes;
} job_context;

static inline void context_grad_ready(const job_context *ctx, const float *param) {
    if (ctx->grad_hooks) ctx->grad_hooks->ready(ctx->grad_hooks->user, param);
}

/* Reasons context_init can fail without a crash; anything else is a checked library error. */
typedef enum { CONTEXT_OK = 0, CONTEXT_NO_DEVICE = 1 } context_status;

/* Selects the device, creates the stream and handles. Prints why and returns CONTEXT_NO_DEVICE
 * when there is no usable GPU. */
context_status context_init(job_context *ctx, int device, size_t workspace_limit, int allow_tf32);
/* The same at a place: with a green context, it becomes the calling thread's current context, so
 * every later runtime, cuDNN and cuBLASLt call of that thread (memory, handles, the stream, graph
 * capture) belongs to it and its kernels run on its SMs only. */
context_status context_init_at(job_context *ctx, const context_place *place, size_t workspace_limit,
                               int allow_tf32);

/* Green-context partitions of one device. The driver splits the SMs into equal groups of `unit`
 * SMs (its minimum partition, aligned as the hardware co-schedules SMs: 8 on Hopper); a partition
 * is a whole number of groups, so the SMs left over by the split (132 = 16 * 8 + 4 on an H100)
 * belong to none. */
#define CONTEXT_MAX_PARTITIONS 16
typedef struct context_partitions {
    int device;
    int count;
    int unit;                 /* SMs per group */
    int groups;               /* groups the device splits into */
    int device_sms;
    CUgreenCtx green[CONTEXT_MAX_PARTITIONS];
    int sm_count[CONTEXT_MAX_PARTITIONS];
} context_partitions;

/* The device's SMs and the group size of its green-context split. 0, or -1 with a message (no
 * device, a driver without green contexts). */
int context_sm_granularity(int device, int *device_sms, int *unit, int *groups, char *err, size_t err_size);
/* One green context per entry of sm_counts, each a multiple of the unit, all disjoint. 0, or -1
 * with a message naming the partition that cannot be made. */
int context_partitions_create(context_partitions *p, int device, const int *sm_counts, int count,
                              char *err, size_t err_size);
context_place context_partition_place(const context_partitions *p, int index);
void context_partitions_free(context_partitions *p);
/* Tells a cuBLASLt matmul descriptor the job's SM count (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET),
 * before its heuristic query; nothing when the context tells nothing. */
void context_tell_matmul(const job_context *ctx, cublasLtMatmulDesc_t desc);
/* Grows the shared workspace to at least `bytes` (set-up only: it reallocates). */
void context_reserve_workspace(job_context *ctx, size_t bytes);
/* Sets the workspace to exactly `bytes`, e.g. down to what the chosen algorithms need. */
void context_set_workspace(job_context *ctx, size_t bytes);
/* A non-blocking stream in the job's place (its green context, if any). first: at the device's
 * greatest priority, as the job's own stream is, else at its least (work that should only fill
 * what the job's stream leaves idle, models/core/wgrad_lane.h). Priorities order the job's own streams
 * (a captured step keeps them: models/core/trainer.c); every job's stream has the same one, so they
 * do not favour one job over another. */
cudaStream_t context_stream_create(const job_context *ctx, int first);
/* Makes the calling thread's CUDA calls the job's: its device and, in a green context, that
 * context (another thread's, e.g. a data loader worker's, work on the job's buffers). */
void context_bind_thread(const job_context *ctx);
void context_free(job_context *ctx);

/* Turns at the device's process-wide work. A stream capture fails when another thread of the
 * process synchronises the device while it runs (cudaFree does so implicitly), whatever the
 * capture mode, and a library call made during another thread's capture can fail inside the
 * library (cuDNN's execution failure at set-up). Jobs that share a process (job_host) therefore
 * take turns for what allocates, frees, searches or captures: a job's set-up and its teardown
 * hold the turn; its training (graph launches on its own stream) does not. One lock for the
 * process because the rule is the CUDA context's, not a job's. Taking a turn one holds, or
 * giving one back that one does not hold, does nothing (a failing job's unwinding gives back
 * whatever it held). */
void context_turn_take(void);
void context_turn_give(void);

#endif
