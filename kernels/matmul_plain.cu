/* A plain matmul in cuBLAS's column-major terms, float accumulation: the fallback where no
 * algorithm of cuBLASLt's writes all of its output (models/layers/written.h). Correct before fast:
 * one thread per output element, operands read through the caches, so it is taken only where
 * the library's own kernels cannot be. */
#include <cuda_bf16.h>

#include "kernels/kernels.h"
#include "kernels/check.h"
#include "kernels/launch.h"

template <typename T> __device__ __forceinline__ float plain_load(const T *p, size_t i);
template <> __device__ __forceinline__ float plain_load<float>(const float *p, size_t i) { return p[i]; }
template <> __device__ __forceinline__ float plain_load<__nv_bfloat16>(const __nv_bfloat16 *p, size_t i) {
    return __bfloat162float(p[i]);
}
template <typename T> __device__ __forceinline__ void plain_store(T *p, size_t i, float v);
template <> __device__ __forceinline__ void plain_store<float>(float *p, size_t i, float v) { p[i] = v; }
template <> __device__ __forceinline__ void plain_store<__nv_bfloat16>(__nv_bfloat16 *p, size_t i, float v) {
    p[i] = __float2bfloat16_rn(v);
}

template <typename TAB, typename TC>
__global__ void matmul_plain_kernel(TC *d, const TC *c, const TAB *a, const TAB *b, const TC *bias, int m, int n,
                                    int k, int trans_a, int trans_b, int lda, int ldb, int ldc, float alpha,
                                    float beta) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, j = blockIdx.y;
    if (i >= m || j >= n) return;
    float acc = 0.0f;
    for (int p = 0; p < k; p++) {
        float av = plain_load(a, trans_a ? (size_t)i * lda + p : (size_t)p * lda + i);
        float bv = plain_load(b, trans_b ? (size_t)p * ldb + j : (size_t)j * ldb + p);
        acc = fmaf(av, bv, acc);
    }
    size_t at = (size_t)j * ldc + i;
    float v = alpha * acc;
    if (beta != 0.0f) v = fmaf(beta, plain_load(c, at), v); /* beta 0 never reads c: it may be poison */
    if (bias) v += plain_load(bias, (size_t)i);
    plain_store(d, at, v);
}

extern "C" void matmul_plain(void *d, const void *c, const void *a, const void *b, const void *bias, int m, int n,
                             int k, int trans_a, int trans_b, int lda, int ldb, int ldc, float alpha, float beta,
                             elem_type ab_type, elem_type c_type, cudaStream_t stream) {
    if (m <= 0 || n <= 0) return;
    if (n > 65535) kernel_bad_input("matmul_plain", "n = %d columns, at most 65535 supported", n);
    dim3 block(128), grid((unsigned)((m + 127) / 128), (unsigned)n);
    if (ab_type == ELEM_BF16 && c_type == ELEM_BF16)
        matmul_plain_kernel<__nv_bfloat16, __nv_bfloat16><<<grid, block, 0, stream>>>(
            (__nv_bfloat16 *)d, (const __nv_bfloat16 *)c, (const __nv_bfloat16 *)a, (const __nv_bfloat16 *)b,
            (const __nv_bfloat16 *)bias, m, n, k, trans_a, trans_b, lda, ldb, ldc, alpha, beta);
    else if (ab_type == ELEM_BF16)
        matmul_plain_kernel<__nv_bfloat16, float><<<grid, block, 0, stream>>>(
            (float *)d, (const float *)c, (const __nv_bfloat16 *)a, (const __nv_bfloat16 *)b, (const float *)bias, m, n,
            k, trans_a, trans_b, lda, ldb, ldc, alpha, beta);
    else if (c_type == ELEM_BF16)
        matmul_plain_kernel<float, __nv_bfloat16><<<grid, block, 0, stream>>>(
            (__nv_bfloat16 *)d, (const __nv_bfloat16 *)c, (const float *)a, (const float *)b,
            (const __nv_bfloat16 *)bias, m, n, k, trans_a, trans_b, lda, ldb, ldc, alpha, beta);
    else
        matmul_plain_kernel<float, float><<<grid, block, 0, stream>>>((float *)d, (const float *)c, (const float *)a,
                                                                      (const float *)b, (const float *)bias, m, n, k,
                                                                      trans_a, trans_b, lda, ldb, ldc, alpha, beta);
    CHECK_CUDA(cudaGetLastError());
}
