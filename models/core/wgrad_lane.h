/* Weight gradients on a second stream of one job, beside the backward pass's main chain.
 *
 * A backward pass is one chain of data gradients and batch-norm backward kernels, most of them
 * small and latency-bound, with the GPU half idle while they run. The weight gradients hang off
 * that chain and nothing in it reads them, so a lane runs them concurrently and lets them fill
 * the chain's idle SMs. The chain waits for the lane only
 *  - before it overwrites a buffer a weight gradient still reads: the caller names how many
 *    jobs back that is (lag), and the wait goes in right before the chain's next convolution,
 *    a cuDNN launch that starts only after the kernel before it has finished anyway, so the
 *    extra edge costs no programmatic (early) launch of the chain;
 *  - at the end of the pass (wgrad_lane_join), before anyone reads a gradient.
 * The lane has its own cuDNN handle and workspace (the chain's workspace is busy meanwhile).
 * In a captured step the lane's events become graph edges, so the same calls serve eager and
 * captured steps. */
#ifndef SUITE_WGRAD_LANE_H
#define SUITE_WGRAD_LANE_H

#include <cuda_runtime.h>
#include <cudnn.h>

#include "models/core/context.h"

#define WGRAD_LANE_RING 8 /* done events in flight; more than any lag */

typedef struct wgrad_lane {
    cudaStream_t stream;
    cudnnHandle_t cudnn;
    void *workspace;
    size_t workspace_bytes;
    int lag;                  /* a job's buffers are safe once `lag` later jobs have been issued */
    int issued;               /* jobs issued since the last join */
    cudaEvent_t fork;         /* the chain's point a job starts from */
    cudaEvent_t done[WGRAD_LANE_RING];
} wgrad_lane;

/* A stream in the job's place (its green context, if any), its own handle and a workspace of
 * workspace_bytes. lag: see above; 1 <= lag < WGRAD_LANE_RING. */
void wgrad_lane_init(wgrad_lane *l, const job_context *ctx, size_t workspace_bytes, int lag);
void wgrad_lane_free(wgrad_lane *l);
/* Before the chain's next convolution: the chain waits for the job issued `lag` jobs ago, then
 * the lane waits for the chain (whose last kernel wrote the gradient the new job reads). Returns
 * the handle the job runs on; wgrad_lane_job_end after enqueuing it. */
cudnnHandle_t wgrad_lane_job_begin(wgrad_lane *l, cudaStream_t chain);
void wgrad_lane_job_end(wgrad_lane *l);
/* The lane stream, ordered after the chain's current point, for work that is not a job (no buffer
 * of the chain's to wait for): what runs there runs after the jobs already issued. */
cudaStream_t wgrad_lane_follow(wgrad_lane *l, cudaStream_t chain);
/* The chain waits for every job of the pass. */
void wgrad_lane_join(wgrad_lane *l, cudaStream_t chain);

/* Whether backward passes use a lane: asked for unless SUITE_WGRAD_LANE=0 (as SUITE_PDL=0 turns
 * off programmatic launch), for comparisons; SUITE_WGRAD_LANE=force keeps it where
 * wgrad_lane_choose would not, to measure what it costs there. */
int wgrad_lane_asked(void);

/* Whether a job at ctx's place gets the lane it asked for, and why not. The lane pays where the
 * chain leaves SMs idle and the lane's stream has a hardware work queue of its own. Neither holds
 * in two places, where it was measured to cost more than it gives (7*S on an H100, 300 steps an
 * epoch, samples/s with the lane against without):
 *  - a green-context partition: the chain's kernels already fill the partition's few SMs, so the
 *    lane adds joins and launches and no overlap (0.82 with 32 work queues);
 *  - a process whose jobs have fewer hardware work queues (CUDA_DEVICE_MAX_CONNECTIONS, 8 unless
 *    set) than streams, two per job: a job's low-priority lane then shares a queue with another
 *    job's chain and stalls it behind its weight gradients (green 0.38 at 8 queues for 14 streams;
 *    streams 0.99 at 8, 1.06 at 32).
 * The job's setup event reports the answer (wgrad_lane_asked, wgrad_lane, wgrad_lane_off). */
typedef struct wgrad_lane_choice {
    int asked, in_effect;
    char why_off[192];        /* "" when in effect or not asked */
} wgrad_lane_choice;
wgrad_lane_choice wgrad_lane_choose(const job_context *ctx);
/* CUDA_DEVICE_MAX_CONNECTIONS as the driver reads it: its value within 1..32, else 8. */
int wgrad_lane_work_queues(void);

#endif
