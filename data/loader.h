/* Batches for training: an epoch is a seeded permutation of the data set (a different one each
 * epoch, the same for the same seed), cut into batches that worker threads fill in a ring of
 * host buffers ahead of the consumer. Buffers come from the caller's allocator, so train passes
 * pinned memory (cudaHostAlloc) and copies each batch to the GPU asynchronously. */
#ifndef SUITE_LOADER_H
#define SUITE_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"

typedef struct loader loader;

typedef struct loader_config {
    int batch;
    int workers;            /* threads filling batches; 0 = chosen from the CPU count */
    int depth;              /* batches in flight; 0 = 4 */
    int shuffle;            /* 0: in order (evaluation) */
    int drop_last;          /* 1: an incomplete last batch is dropped; 0: it is delivered short */
    uint64_t seed;
    void *(*alloc_host)(size_t bytes, void *user); /* NULL: malloc */
    void (*free_host)(void *ptr, void *user);
    void *user;
} loader_config;

typedef struct loader_batch {
    float *images;          /* [n, H, W, C], owned by the loader until the next loader_next */
    int32_t *labels;        /* [n] */
    int n;                  /* samples in this batch (config.batch except a short last one) */
    int64_t index;          /* batch number within the epoch */
} loader_batch;

typedef struct loader_stats {
    double wait_seconds;    /* consumer time spent waiting for a batch this epoch */
    double samples_per_s;   /* production rate of the workers this epoch */
} loader_stats;

loader *loader_open(const dataset *d, const loader_config *config, char *err, size_t err_size);
int64_t loader_batches_per_epoch(const loader *l);
/* Starts epoch `epoch` (0-based): its permutation and its batches. */
void loader_start_epoch(loader *l, int epoch);
/* Next batch of the current epoch: 1 and fills *b, 0 at the end of the epoch, -1 on a read error
 * (message in err). */
int loader_next(loader *l, loader_batch *b, char *err, size_t err_size);
loader_stats loader_epoch_stats(const loader *l);
void loader_close(loader *l);

#endif
