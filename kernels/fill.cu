/* Small element-wise helpers (launched for programmatic dependent launch: kernels/pdl.cuh). */
#include <cuda_bf16.h>

#include "kernels/kernels.h"
#include "kernels/pdl.cuh"
#include "kernels/check.h"

__global__ void fill_float_kernel(float *x, float value, size_t n) {
    pdl_wait();
    pdl_release();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = value;
}

extern "C" void fill_float(float *x, float value, size_t n, cudaStream_t stream) {
    if (n == 0) return;
    size_t blocks = (n + 255) / 256;
    CHECK_CUDA(pdl_launch(fill_float_kernel, (unsigned)(blocks < 4096 ? blocks : 4096), 256, stream, x, value, n));
}

__global__ void fill_bf16_kernel(__nv_bfloat16 *x, __nv_bfloat16 value, size_t n) {
    pdl_wait();
    pdl_release();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = value;
}

extern "C" void fill_bf16(void *x, float value, size_t n, cudaStream_t stream) {
    if (n == 0) return;
    size_t blocks = (n + 255) / 256;
    CHECK_CUDA(pdl_launch(fill_bf16_kernel, (unsigned)(blocks < 4096 ? blocks : 4096), 256, stream,
                          (__nv_bfloat16 *)x, __float2bfloat16_rn(value), n));
}

/* Casts are grid-stride over pairs (bfloat162 / float2), so a weight region of any length and
 * 4-byte alignment (the arena's 256) needs one launch; an odd last element is done alone. */
__global__ void cast_f32_to_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n) {
    pdl_wait();
    pdl_release();
    size_t pairs = n / 2;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < pairs; i += (size_t)gridDim.x * blockDim.x)
        ((__nv_bfloat162 *)dst)[i] = __float22bfloat162_rn(((const float2 *)src)[i]);
    if (n % 2 && blockIdx.x == 0 && threadIdx.x == 0) dst[n - 1] = __float2bfloat16_rn(src[n - 1]);
}

__global__ void cast_bf16_to_f32_kernel(float *dst, const __nv_bfloat16 *src, size_t n) {
    pdl_wait();
    pdl_release();
    size_t pairs = n / 2;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < pairs; i += (size_t)gridDim.x * blockDim.x)
        ((float2 *)dst)[i] = __bfloat1622float2(((const __nv_bfloat162 *)src)[i]);
    if (n % 2 && blockIdx.x == 0 && threadIdx.x == 0) dst[n - 1] = __bfloat162float(src[n - 1]);
}

static unsigned cast_blocks(size_t n) {
    size_t blocks = (n / 2 + 255) / 256;
    return (unsigned)(blocks < 1 ? 1 : blocks < 4096 ? blocks : 4096);
}

extern "C" void cast_f32_to_bf16(void *dst, const float *src, size_t n, cudaStream_t stream) {
    if (n == 0) return;
    CHECK_CUDA(pdl_launch(cast_f32_to_bf16_kernel, cast_blocks(n), 256, stream, (__nv_bfloat16 *)dst, src, n));
}

extern "C" void cast_bf16_to_f32(float *dst, const void *src, size_t n, cudaStream_t stream) {
    if (n == 0) return;
    CHECK_CUDA(pdl_launch(cast_bf16_to_f32_kernel, cast_blocks(n), 256, stream, dst, (const __nv_bfloat16 *)src, n));
}

/* Counts elements whose exponent bits are all ones (NaN or infinite), read as raw bits so that a
 * bfloat16 and a float32 tensor take the same test. */
template <typename Bits, unsigned long long Exponent>
__global__ void count_nonfinite_kernel(unsigned long long *count, const Bits *x, size_t n) {
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        mine += (x[i] & Exponent) == Exponent;
    for (int offset = 16; offset > 0; offset /= 2) mine += __shfl_down_sync(0xffffffffu, mine, offset);
    if ((threadIdx.x & 31) == 0 && mine) atomicAdd(count, mine);
}

extern "C" size_t count_nonfinite(const void *x, size_t n, elem_type type, cudaStream_t stream) {
    if (n == 0) return 0;
    unsigned long long *count = NULL, host = 0;
    CHECK_CUDA(cudaMallocAsync((void **)&count, sizeof *count, stream));
    CHECK_CUDA(cudaMemsetAsync(count, 0, sizeof *count, stream));
    size_t blocks = (n + 255) / 256;
    unsigned grid = (unsigned)(blocks < 1024 ? blocks : 1024);
    if (type == ELEM_BF16)
        count_nonfinite_kernel<uint16_t, 0x7f80ull><<<grid, 256, 0, stream>>>(count, (const uint16_t *)x, n);
    else
        count_nonfinite_kernel<uint32_t, 0x7f800000ull><<<grid, 256, 0, stream>>>(count, (const uint32_t *)x, n);
    CHECK_CUDA(cudaGetLastError());
    CHECK_CUDA(cudaMemcpyAsync(&host, count, sizeof host, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaFreeAsync(count, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    return (size_t)host;
}
