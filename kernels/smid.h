/* Which SMs a stream's kernels run on: each block records the SM it ran on (%smid), so a test can
 * check that a green context's work stays inside its partition. Exported to C. */
#ifndef SUITE_SMID_KERNELS_H
#define SUITE_SMID_KERNELS_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Launches `blocks` blocks on stream; block b writes its SM's id to sm_of_block[b] (device memory)
 * after spinning for about spin_cycles clock cycles, so that the blocks spread over every SM the
 * stream may use. Returns the launch's status. */
cudaError_t smid_record(int *sm_of_block, int blocks, long long spin_cycles, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
