/* Loads and stores of VEC consecutive floats (4: one float4, the caller having checked 16-byte
 * alignment; 1: a scalar), so that one kernel template serves the vectorised and the scalar path
 * of every elementwise kernel. */
#ifndef SUITE_VECTOR_IO_CUH
#define SUITE_VECTOR_IO_CUH

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

#endif
