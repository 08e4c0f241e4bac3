/* Programmatic dependent launch (compute capability 9.0 and up). Without it the GPU starts a
 * kernel only once the kernel before it in the stream has finished and its writes are flushed; a
 * training step is hundreds of kernels of a few microseconds, and that gap is paid at each. A
 * kernel launched with pdl_launch may be scheduled while the kernel before it is still finishing:
 * it does its preamble, then pdl_wait() holds it until that kernel has finished and its memory is
 * visible. The rules for such a kernel:
 *   - before pdl_wait: no stores to global memory, and loads only of data the kernel just before
 *     it does not write (every kernel before that one is finished: that one passed its own wait,
 *     or was launched the ordinary way, as cuDNN's and cuBLAS's are, before it let this one start);
 *     ours load only parameters and saved statistics there, written many kernels earlier;
 *   - every thread that touches global memory calls pdl_wait first, on every path;
 *   - pdl_release(), once the kernel has passed its own pdl_wait, lets the next kernel be
 *     scheduled early; a block that exits releases implicitly.
 * On older GPUs, or with SUITE_PDL=0 in the environment (to measure what it buys), pdl_launch is
 * an ordinary launch and pdl_wait/pdl_release do nothing. In a captured graph the dependency
 * becomes a programmatic edge. */
#ifndef SUITE_PDL_CUH
#define SUITE_PDL_CUH

#include <cuda_runtime.h>

#include "kernels/launch.h"

__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
}

__device__ __forceinline__ void pdl_release() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

/* Launches kernel<<<grid, block, 0, stream>>>(args...) allowing programmatic overlap with the
 * kernel before it. Returns the launch status, for CHECK_CUDA at the call site. */
template <typename... Params, typename... Args>
static inline cudaError_t pdl_launch(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream,
                                     Args... args) {
    cudaLaunchAttribute attribute;
    attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {};
    config.gridDim = grid;
    config.blockDim = block;
    config.stream = stream;
    config.attrs = &attribute;
    config.numAttrs = kernel_pdl_enabled() ? 1 : 0;
    return cudaLaunchKernelEx(&config, kernel, ((Params)args)...);
}

#endif
