#include "kernels/smid.h"

__global__ void smid_kernel(int *sm_of_block, long long spin_cycles) {
    long long start = clock64();
    while (clock64() - start < spin_cycles) {
    }
    if (threadIdx.x == 0) {
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        sm_of_block[blockIdx.x] = (int)sm;
    }
}

extern "C" cudaError_t smid_record(int *sm_of_block, int blocks, long long spin_cycles, cudaStream_t stream) {
    smid_kernel<<<blocks, 64, 0, stream>>>(sm_of_block, spin_cycles);
    return cudaGetLastError();
}
