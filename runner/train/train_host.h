/* Host resources every workload (workload_image.c, workload_dlrm.c) sets up the same way: pinned
 * memory for the loader's batches, so that their copies to the GPU run asynchronously, and the
 * number of loader threads a job may use when several jobs share the machine. */
#ifndef SUITE_TRAIN_HOST_H
#define SUITE_TRAIN_HOST_H

#include <stddef.h>

#include "runner/train/train_options.h"

/* loader_config's alloc_host / free_host: page-locked memory (checked CUDA calls). */
void *train_pinned_alloc(size_t bytes, void *user);
void train_pinned_free(void *ptr, void *user);
/* --workers, or when it is 0 the CPU cores divided among the jobs that run at once
 * (SUITE_CONCURRENT_JOBS, which run_suite sets), at least 1 and at most 16. */
int train_loader_workers(const train_options *o);
/* That rule for `cpus` online CPUs (fewer than 1: one) and SUITE_CONCURRENT_JOBS' text (NULL when
 * unset; a count below 1 or no number: one job): train_loader_workers passes the machine's. */
int train_loader_workers_for(int workers, long cpus, const char *concurrent_jobs);

#endif
