/* bench_gpu_timer: does the timer set-up measures its choices with (models/core/gpu_timer.h) time
 * the GPU's work alone, without the host's cost of launching it? Each run spends HOST us on the
 * host, then queues a kernel that holds the GPU for GPU us; the table shows the timer's median
 * against the GPU time alone (near 1.00: the host's part is left out) for each pair. A shared GPU
 * makes the numbers larger, never smaller: this is a measurement, not a test. */
#include <stdio.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "kernels/check.h"
#include "kernels/kernels.h"
#include "models/core/gpu_timer.h"

typedef struct timed_case {
    cudaStream_t stream;
    long host_us, gpu_ns;
} timed_case;

static void host_then_gpu(void *arg) {
    const timed_case *c = arg;
    if (c->host_us) usleep((useconds_t)c->host_us);
    gpu_hold(c->gpu_ns, c->stream);
}

int main(void) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        fprintf(stderr, "bench_gpu_timer: no CUDA device\n");
        return 1;
    }
    timed_case c = {0};
    CHECK_CUDA(cudaStreamCreate(&c.stream));
    static const long host_us[] = {0, 100, 300, 1000};
    static const long gpu_ns[] = {20000, 40000, 100000};
    printf("%8s %8s %10s %10s\n", "host_us", "gpu_us", "timed_ms", "timed/gpu");
    for (size_t h = 0; h < sizeof host_us / sizeof *host_us; h++)
        for (size_t g = 0; g < sizeof gpu_ns / sizeof *gpu_ns; g++) {
            c.host_us = host_us[h], c.gpu_ns = gpu_ns[g];
            host_then_gpu(&c); /* the caller's warm-up run */
            CHECK_CUDA(cudaStreamSynchronize(c.stream));
            float ms = gpu_timer_median_ms(c.stream, host_then_gpu, &c, 5);
            printf("%8ld %8ld %10.4f %10.2f\n", c.host_us, c.gpu_ns / 1000, ms, ms / (c.gpu_ns / 1e6));
        }
    CHECK_CUDA(cudaStreamDestroy(c.stream));
    return 0;
}
