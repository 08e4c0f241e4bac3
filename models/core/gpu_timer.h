/* How long a piece of device work takes on the GPU alone, as set-up measures its choices (cuDNN
 * plans and algorithms, depthwise paths). Timing one run at a time (event, launch, event, wait)
 * also times the host's launch path: for kernels of tens of microseconds that is as long as the
 * kernel, and the choice went to the plan with the cheapest host path, not the one that runs
 * fastest inside the captured step. Here a waiting kernel holds the stream while every run is
 * queued, and events between the runs time each one back to back. */
#ifndef SUITE_GPU_TIMER_H
#define SUITE_GPU_TIMER_H

#include <cuda_runtime.h>

/* Enqueues one run of the work on `stream`; no synchronisation. */
typedef void (*gpu_timed_fn)(void *arg);

/* Median of `runs` (1..64) back-to-back runs, in ms, after the caller's own warm-up run. The hold
 * grows until the host had queued every run before the GPU reached the first. */
float gpu_timer_median_ms(cudaStream_t stream, gpu_timed_fn run, void *arg, int runs);

#endif
