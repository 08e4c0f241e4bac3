/* Data-parallel training over NCCL, one process per GPU (runner/train/train_ddp.c starts them).
 * Every rank holds a full replica; after each backward pass the gradients are averaged over the
 * ranks (ncclAvg), so every rank applies the same update and the parameters stay identical.
 *
 * As PyTorch's DistributedDataParallel does, the all-reduce overlaps the backward pass: the
 * arena keeps every gradient in one flat buffer, cut here into buckets of about 25 MB at
 * parameter boundaries. Layers tell the job context when a parameter's gradient is enqueued
 * (context_grad_ready); when the last parameter of a bucket is, an event is recorded on the
 * compute stream, the communication stream waits for it and all-reduces that bucket while the
 * backward pass goes on. With bfloat16 weights the layers write bfloat16 gradients: a bucket's
 * part of them is cast to float32 on the compute stream just before its event, so the all-reduce
 * overlaps the pass there too (the hooks say so, and the pass leaves that cast to them). At the
 * end of the pass the buckets not yet started (layers that do not report) are all-reduced, rank
 * 0's buffers (batch norm's running statistics) are broadcast, as DDP's default
 * broadcast_buffers does, and the compute stream waits for the communication stream before the
 * optimizer. Buckets are
 * launched in the same order on every rank (the same code runs there), as NCCL requires. The
 * whole step, all-reduces included, is captured in the trainer's CUDA graph.
 *
 * A rank whose peer dies must not hang in a collective: ddp_check() reads ncclCommGetAsyncError
 * and aborts the communicator (ncclCommAbort) on an error (train_ddp.c polls it from a watchdog
 * thread), and train_ddp.c's launcher stops every rank when one ends early. */
#ifndef SUITE_DDP_H
#define SUITE_DDP_H

#include <stddef.h>
#include <stdint.h>

#include "models/core/context.h"
#include "models/core/model.h"

#define DDP_BUCKET_BYTES ((size_t)25 << 20)
#define DDP_EXPOSED_SAMPLES 64
#define DDP_STOP_EVERY 8 /* steps between the ranks' agreements on stopping */
#define DDP_MAX_BUCKETS 512
#define DDP_ID_BYTES 128  /* ncclUniqueId */

typedef struct ddp_bucket {
    size_t offset, count;          /* floats of the flat gradient buffer */
    int pending;                   /* parameters whose gradient is not yet enqueued this pass */
    int launched;
    void *ready;                   /* cudaEvent_t on the compute stream */
} ddp_bucket;

typedef struct ddp {
    int rank, world;
    void *comm;                    /* ncclComm_t */
    job_context *ctx;
    cudaStream_t comm_stream;
    void *done;                    /* cudaEvent_t: every all-reduce of the pass finished */
    float *grads;
    size_t count;
    int bucket_count;
    ddp_bucket buckets[DDP_MAX_BUCKETS];
    int param_count;
    const float **param_ptr;       /* trainable parameters, sorted by address */
    int *param_bucket;             /* the bucket of each */
    unsigned char *param_seen;     /* reported this pass */
    void *half_grads;              /* the bfloat16 gradient copies (NULL: float32 weights) */
    size_t half_count;             /* floats they mirror: the decay region */
    size_t buffer_floats;          /* the buffers broadcast after each pass */
    int overlap;                   /* buckets start during the pass (SUITE_DDP_OVERLAP) */
    int launches_early;            /* buckets started during the last pass */
    /* What the optimizer waits for after the pass: the compute stream at the end of the pass and
     * once it has waited for the communication (cudaEvent_t, timed; recorded in the step's graph),
     * read where the stream is idle (ddp_sample_exposed) */
    void *pass_end, *comm_waited;
    float exposed_ms[DDP_EXPOSED_SAMPLES];
    int exposed_count;
    const char *exposed_error;     /* why a sample could not be read (NULL: none failed) */
    double allreduce_alone_ms;     /* ddp_time_allreduce's last result */
    /* ddp_agree_stop: each round's flag on the GPU (int[2]), its copy on the host (pinned int[4]:
     * the flags sent, then the maxima come back) and the event after each round (cudaEvent_t[2]) */
    int *stop_flags, *stop_host;
    void *stop_read[2];
    long stop_rounds;
    int stop_agreed;
    grad_hooks hooks;
} ddp;

/* The NCCL id rank 0's launcher makes, as hex text (2*DDP_ID_BYTES+1), and back. */
int ddp_make_id(char *hex, size_t size, char *err, size_t err_size);
/* Joins the communicator (ncclCommInitRank on ctx's device), cuts the buckets over the model's
 * trainable parameters, makes rank 0's parameters and buffers everyone's (broadcast) and hooks
 * itself into ctx. Call after the session has set the model up, before trainer_init. 0, or -1
 * with a message (NCCL's own words). */
int ddp_init(ddp *d, job_context *ctx, model *m, int rank, int world, const char *id_hex, char *err,
             size_t err_size);
/* Whether every rank's parameters and buffers are the same bytes: 1 or 0, with this rank's FNV-1a
 * hash of them; -1 with err. A collective: every rank calls it at the same point. */
int ddp_state_identical(ddp *d, uint64_t *hash, char *err, size_t err_size);
/* The all-reduce of the whole gradient, bucket by bucket as a step does it, on a copy with nothing
 * else running: the median of 9 timed by CUDA events after 3 untimed, in ms. A collective. */
double ddp_time_allreduce(ddp *d);
/* Where the compute stream is idle (after an epoch): the last step's exposed communication, the
 * time from the end of its backward pass to the end of its wait for the all-reduces and the
 * buffers' broadcast. At most DDP_EXPOSED_SAMPLES are kept. */
void ddp_sample_exposed(ddp *d);
/* The median of the samples in ms; NaN without any. */
double ddp_exposed_ms(const ddp *d);
/* Whether any rank has been told to stop (told: this rank's own flag), the same answer on every
 * rank at the same step, so that they all leave after the same step (a rank that took one more
 * would wait in its all-reduce for ever). Call it after every step with the step's number: every
 * DDP_STOP_EVERY steps the ranks all-reduce (max) their flags on the compute stream, and the answer
 * is the previous round's, long complete: no step waits for it. Without a communicator: told. */
int ddp_agree_stop(ddp *d, int told, long step);
/* 0 while the communicator is healthy; -1 with NCCL's message after aborting it. */
int ddp_check(ddp *d, char *err, size_t err_size);
/* Aborts the communicator (a peer is gone): pending collectives return instead of hanging. */
void ddp_abort(ddp *d);
/* Leaves the communicator. Destroy every CUDA graph that captured this step first (trainer_free):
 * each holds a reference on the communicator, and ncclCommDestroy waits until none is left. */
void ddp_free(ddp *d);

#endif
