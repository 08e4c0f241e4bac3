/* The kernel behind the injected illegal-address fault (runner/train/fault.c): a write far past
 * the end of a small buffer, into address space no allocation holds, so the GPU raises the
 * sticky cudaErrorIllegalAddress that a buggy kernel would. Exported to C. */
#ifndef SUITE_FAULT_KERNELS_H
#define SUITE_FAULT_KERNELS_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Enqueues the out-of-bounds write relative to buffer on stream; the error surfaces at the next
 * synchronizing call. Returns the launch's own status (cudaSuccess when it was enqueued). */
cudaError_t fault_write_out_of_bounds(float *buffer, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
