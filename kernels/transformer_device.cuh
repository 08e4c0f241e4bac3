/* Device helpers shared by transformer.cu and transformer_attention.cu: warp and block
 * reductions in a fixed order (so results do not depend on scheduling), and the scalar load and
 * store of a tensor element of either elem_type as float (bfloat16 rounded to nearest even on
 * the store), so that one kernel template serves float32 and bfloat16 activations. */
#ifndef SUITE_TRANSFORMER_DEVICE_CUH
#define SUITE_TRANSFORMER_DEVICE_CUH

#include <cuda_bf16.h>

#include "kernels/vector_io.cuh"

#define TF_WARPS 8                  /* warps per block of the row kernels */
#define TF_THREADS (TF_WARPS * 32)

__device__ __forceinline__ void put(float *p, float v) { *p = v; }
__device__ __forceinline__ void put(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum (max when take_max) over the whole block, returned to every thread. `red` holds 32 floats
 * of shared memory; the block is a whole number of warps. */
__device__ __forceinline__ float block_reduce(float v, float *red, int take_max) {
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    v = take_max ? warp_max(v) : warp_sum(v);
    __syncthreads(); /* red may still be read by a previous call */
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float r = lane < warps ? red[lane] : (take_max ? -INFINITY : 0.0f);
    return take_max ? warp_max(r) : warp_sum(r);
}

#endif
