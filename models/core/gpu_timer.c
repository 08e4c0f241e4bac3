#include "models/core/gpu_timer.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/spread.h"
#include "kernels/kernels.h"
#include "kernels/check.h"

enum { MAX_RUNS = 64, MAX_TRIES = 6 };
/* The GPU is held busy while the runs are queued, so that the host's launches stay out of their times;
 * the hold doubles until it outlasts the queueing. */
static const long long FIRST_HOLD_NS = 200000;

float gpu_timer_median_ms(cudaStream_t stream, gpu_timed_fn run, void *arg, int runs) {
    if (runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "gpu_timer_median_ms: runs must be 1..%d (got %d)\n", MAX_RUNS, runs);
        exit(2);
    }
    cudaEvent_t marks[MAX_RUNS + 1];
    for (int i = 0; i <= runs; i++) CHECK_CUDA(cudaEventCreate(&marks[i]));
    long long hold_ns = FIRST_HOLD_NS;
    for (int attempt = 0; attempt < MAX_TRIES; attempt++, hold_ns *= 2) {
        gpu_hold(hold_ns, stream);
        CHECK_CUDA(cudaEventRecord(marks[0], stream));
        for (int r = 0; r < runs; r++) {
            run(arg);
            CHECK_CUDA(cudaEventRecord(marks[r + 1], stream));
        }
        cudaError_t reached = cudaEventQuery(marks[0]);
        if (reached != cudaErrorNotReady) CHECK_CUDA(reached);
        else (void)cudaGetLastError(); /* "not ready" is an answer, not an error to leave behind */
        CHECK_CUDA(cudaEventSynchronize(marks[runs]));
        if (reached == cudaErrorNotReady) break; /* still holding when the last run was queued */
    }
    /* After MAX_TRIES the host is too slow for any hold: the times then include its launches. */
    float ms[MAX_RUNS];
    for (int r = 0; r < runs; r++) CHECK_CUDA(cudaEventElapsedTime(&ms[r], marks[r], marks[r + 1]));
    for (int i = 0; i <= runs; i++) CHECK_CUDA(cudaEventDestroy(marks[i]));
    spread_sort_floats(ms, (size_t)runs);
    return ms[runs / 2];
}
