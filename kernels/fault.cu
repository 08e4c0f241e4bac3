/* Out-of-bounds write for the injected illegal-address fault (declared in kernels/fault.h). */
#include "kernels/fault.h"

/* 1 TiB past the buffer: beyond any allocation on a GPU of today, still inside the 49-bit
 * virtual address space, so the access faults instead of corrupting a neighbour. */
#define FAULT_OFFSET_FLOATS ((size_t)1 << 38)

__global__ void fault_out_of_bounds_kernel(float *buffer, size_t offset) {
    buffer[offset + threadIdx.x] = 1.0f;
}

extern "C" cudaError_t fault_write_out_of_bounds(float *buffer, cudaStream_t stream) {
    fault_out_of_bounds_kernel<<<1, 32, 0, stream>>>(buffer, FAULT_OFFSET_FLOATS);
    return cudaGetLastError();
}
