/* A kernel that only waits, so that work queued behind it starts back to back (models/core/gpu_timer.c). */
#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "kernels/check.h"

__global__ void gpu_hold_kernel(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}

extern "C" void gpu_hold(long long ns, cudaStream_t stream) {
    if (ns < 0) kernel_bad_input("gpu_hold", "ns must be >= 0 (got %lld)", ns);
    gpu_hold_kernel<<<1, 32, 0, stream>>>((unsigned long long)ns);
    CHECK_CUDA(cudaGetLastError());
}
