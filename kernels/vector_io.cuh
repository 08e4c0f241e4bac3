/* Loads and stores of VEC consecutive elements as floats (4: one 16-byte float4, or 8 bytes of
 * bfloat16, the caller having checked the alignment; 1: a scalar), so that one kernel template
 * serves the vectorised and the scalar path, and float and bfloat16 tensors, of every elementwise
 * kernel. Arithmetic is float either way; bfloat16 is rounded to nearest even on the store. */
#ifndef SUITE_VECTOR_IO_CUH
#define SUITE_VECTOR_IO_CUH

#include <cuda_bf16.h>

template <int VEC>
__device__ __forceinline__ void load_vec(float v[VEC], const float *p) {
    if constexpr (VEC == 4) {
        float4 q = *(const float4 *)p;
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
        v[0] = *p;
    }
}

template <int VEC>
__device__ __forceinline__ void store_vec(float *p, const float v[VEC]) {
    if constexpr (VEC == 4) *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
    else *p = v[0];
}

template <int VEC>
__device__ __forceinline__ void load_vec(float v[VEC], const __nv_bfloat16 *p) {
    if constexpr (VEC == 4) {
        uint2 q = *(const uint2 *)p;
        float2 a = __bfloat1622float2(*(const __nv_bfloat162 *)&q.x);
        float2 b = __bfloat1622float2(*(const __nv_bfloat162 *)&q.y);
        v[0] = a.x, v[1] = a.y, v[2] = b.x, v[3] = b.y;
    } else {
        v[0] = __bfloat162float(*p);
    }
}

template <int VEC>
__device__ __forceinline__ void store_vec(__nv_bfloat16 *p, const float v[VEC]) {
    if constexpr (VEC == 4) {
        __nv_bfloat162 a = __floats2bfloat162_rn(v[0], v[1]), b = __floats2bfloat162_rn(v[2], v[3]);
        uint2 q;
        q.x = *(const unsigned *)&a;
        q.y = *(const unsigned *)&b;
        *(uint2 *)p = q;
    } else {
        *p = __float2bfloat16_rn(v[0]);
    }
}

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

#endif
