/* Placement of a mix's jobs over several GPUs (run_suite --gpus 0,1,2,3), decided on the host
 * before anything is launched. Memory must fit, compute is balanced:
 *
 *   - a job needs its footprint on each GPU it uses (a data-parallel job, gpus=k in the mix,
 *     holds a full replica on each of k distinct GPUs);
 *   - jobs are placed heaviest first (compute demand: FLOPs per step, or the footprint where
 *     the demand is unknown), each on the GPU(s) with the least demand so far among those where
 *     it fits: the greedy "longest processing time first" rule, within 4/3 of the best balance;
 *   - when that greedy order leaves a job without room, the jobs are placed again largest
 *     footprint first (first-fit decreasing), which packs memory more tightly;
 *   - with sequential modes (serial) jobs on one GPU run one after another: only the largest of
 *     them must fit, not their sum.
 * A placement that does not fit is refused with the numbers, never launched. */
#ifndef SUITE_PLACEMENT_H
#define SUITE_PLACEMENT_H

#include <stddef.h>

#define PLACEMENT_MAX_GPUS 64
/* A list of cards as CUDA_VISIBLE_DEVICES takes it (UUIDs, comma separated) for up to
 * PLACEMENT_MAX_GPUS of them: a UUID is 40 characters ("GPU-" and 36), a MIG device's older form
 * ("MIG-GPU-<uuid>/<gi>/<ci>") under 63. A list longer than this is refused where it is made,
 * never cut. */
#define GPU_LIST_MAX 4096
#define PLACEMENT_MAX_JOBS 64

typedef struct placement_gpu {
    int index;              /* NVML index */
    double memory_bytes;    /* NaN: unknown (not checked) */
} placement_gpu;

typedef struct placement_job {
    double footprint_bytes; /* per GPU it uses */
    double demand;          /* compute per step; <= 0 or NaN: unknown, the footprint stands in */
    int gpus;               /* GPUs it spans (data-parallel ranks); 0 or 1: one */
} placement_job;

typedef struct placement {
    int gpu_count, job_count;
    int gpus_of[PLACEMENT_MAX_JOBS][PLACEMENT_MAX_GPUS]; /* slots (0..gpu_count-1) job j uses */
    int span[PLACEMENT_MAX_JOBS];                        /* how many */
    double memory[PLACEMENT_MAX_GPUS];   /* bytes needed on each slot (sum, or largest if sequential) */
    double demand[PLACEMENT_MAX_GPUS];   /* compute placed on each slot */
    int jobs_on[PLACEMENT_MAX_GPUS];
    const char *method;                  /* "balanced" or "packed" */
} placement;

/* Plans; 0, or -1 with a message naming the job that does not fit and each GPU's room. */
int placement_plan(const placement_gpu *gpus, int gpu_count, const placement_job *jobs, int job_count,
                   int sequential, placement *out, char *err, size_t err_size);

/* Whether job j runs on slot g. */
int placement_uses(const placement *p, int job, int slot);

/* "0,1,3" -> {0,1,3}: distinct indices 0..1023. Returns the count, or -1 with a message. */
int placement_parse_gpus(const char *text, int *out, int max, char *err, size_t err_size);

#endif
