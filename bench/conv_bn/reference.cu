/* The probes' references (reference.h). Plain kernels, written to be obviously right rather than
 * fast: one thread an element, or one thread a channel over a slice of the rows. */
#include "bench/conv_bn/reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/check.h"

#define REF_THREADS 256
#define REF_STAT_ROWS 4096 /* rows one thread sums before its double atomics */

extern "C" size_t ref_type_bytes(ref_type type) { return type == REF_F32 ? 4 : 2; }

extern "C" const char *ref_type_name(ref_type type) {
    return type == REF_BF16 ? "bf16" : type == REF_HALF ? "half" : "float";
}

static void ref_check_type(const char *fn, ref_type type) {
    if (type != REF_F32 && type != REF_BF16 && type != REF_HALF) {
        fprintf(stderr, "%s: type must be REF_F32, REF_BF16 or REF_HALF (got %d)\n", fn, (int)type);
        exit(2);
    }
}

__device__ __forceinline__ float ref_load(const void *p, size_t i, int type) {
    if (type == REF_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    if (type == REF_HALF) return __half2float(((const __half *)p)[i]);
    return ((const float *)p)[i];
}

__device__ __forceinline__ void ref_store(void *p, size_t i, float v, int type) {
    if (type == REF_BF16) ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(v);
    else if (type == REF_HALF) ((__half *)p)[i] = __float2half_rn(v);
    else ((float *)p)[i] = v;
}

__device__ __forceinline__ float ref_rounded(float v, int type) {
    if (type == REF_BF16) return __bfloat162float(__float2bfloat16_rn(v));
    if (type == REF_HALF) return __half2float(__float2half_rn(v));
    return v;
}

/* splitmix64 of (seed, index): independent of the launch shape. */
__device__ __forceinline__ float ref_unit(uint64_t seed, size_t i) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

static unsigned ref_blocks(size_t n) {
    size_t blocks = (n + REF_THREADS - 1) / REF_THREADS;
    return (unsigned)(blocks > 65535u * 32u ? 65535u * 32u : blocks < 1 ? 1 : blocks);
}

__global__ void ref_fill_kernel(void *p, size_t n, float lo, float hi, uint64_t seed, int type) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        ref_store(p, i, lo + (hi - lo) * ref_unit(seed, i), type);
}

extern "C" void ref_fill_uniform(void *p, size_t n, float lo, float hi, uint64_t seed, ref_type type,
                                 cudaStream_t stream) {
    ref_check_type("ref_fill_uniform", type);
    ref_fill_kernel<<<ref_blocks(n), REF_THREADS, 0, stream>>>(p, n, lo, hi, seed, (int)type);
    CHECK_LAUNCH();
}

__global__ void ref_round_kernel(float *p, size_t n, int type) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = ref_rounded(p[i], type);
}

extern "C" void ref_round_floats(float *p, size_t n, ref_type type, cudaStream_t stream) {
    ref_check_type("ref_round_floats", type);
    ref_round_kernel<<<ref_blocks(n), REF_THREADS, 0, stream>>>(p, n, (int)type);
    CHECK_LAUNCH();
}

__global__ void ref_from_floats_kernel(void *dst, const float *src, size_t n, int type) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        ref_store(dst, i, src[i], type);
}

extern "C" void ref_from_floats(void *dst, const float *src, size_t n, ref_type type, cudaStream_t stream) {
    ref_check_type("ref_from_floats", type);
    ref_from_floats_kernel<<<ref_blocks(n), REF_THREADS, 0, stream>>>(dst, src, n, (int)type);
    CHECK_LAUNCH();
}

__global__ void ref_apply_kernel(void *out, const void *x, const float *scale, const float *bias, size_t n, int C,
                                 int type) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % (size_t)C);
        float v = fmaf(ref_load(x, i, type), scale[c], bias[c]);
        ref_store(out, i, v > 0.0f ? v : 0.0f, type);
    }
}

extern "C" void ref_apply_relu(void *out, const void *x, const float *scale, const float *bias, size_t rows, int C,
                               ref_type type, cudaStream_t stream) {
    ref_check_type("ref_apply_relu", type);
    size_t n = rows * (size_t)C;
    ref_apply_kernel<<<ref_blocks(n), REF_THREADS, 0, stream>>>(out, x, scale, bias, n, C, (int)type);
    CHECK_LAUNCH();
}

/* Thread (channel c, slice s) sums rows [s * REF_STAT_ROWS, ...) of channel c. */
__global__ void ref_sums_kernel(double *sum, double *sumsq, const void *y, size_t rows, int C, int type) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    size_t first = (size_t)blockIdx.y * REF_STAT_ROWS, last = first + REF_STAT_ROWS;
    if (last > rows) last = rows;
    double s = 0.0, ss = 0.0;
    for (size_t r = first; r < last; r++) {
        double v = (double)ref_load(y, r * (size_t)C + (size_t)c, type);
        s += v;
        ss += v * v;
    }
    atomicAdd(sum + c, s);
    atomicAdd(sumsq + c, ss);
}

extern "C" void ref_channel_sums(double *sum, double *sumsq, const void *y, size_t rows, int C, ref_type type,
                                 cudaStream_t stream) {
    ref_check_type("ref_channel_sums", type);
    CHECK_CUDA(cudaMemsetAsync(sum, 0, (size_t)C * sizeof(double), stream));
    CHECK_CUDA(cudaMemsetAsync(sumsq, 0, (size_t)C * sizeof(double), stream));
    size_t slices = (rows + REF_STAT_ROWS - 1) / REF_STAT_ROWS;
    if (slices > 65535) {
        fprintf(stderr, "ref_channel_sums: %zu rows is more than %d slices of %d\n", rows, 65535, REF_STAT_ROWS);
        exit(2);
    }
    dim3 grid((unsigned)((C + 127) / 128), (unsigned)slices);
    ref_sums_kernel<<<grid, 128, 0, stream>>>(sum, sumsq, y, rows, C, (int)type);
    CHECK_LAUNCH();
}

/* out[0] = max |a - b| (infinity for a NaN), out[1] = max |b|, as the bits of non-negative floats
 * (which order as unsigned integers). */
__global__ void ref_diff_kernel(unsigned *out, const void *a, const void *b, size_t n, int type) {
    float diff = 0.0f, ref = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float va = ref_load(a, i, type), vb = ref_load(b, i, type);
        float d = fabsf(va - vb);
        if (!(d == d)) d = INFINITY;
        diff = fmaxf(diff, d);
        ref = fmaxf(ref, fabsf(vb));
    }
    atomicMax(out, __float_as_uint(diff));
    atomicMax(out + 1, __float_as_uint(ref));
}

extern "C" void ref_max_diff(double *max_diff, double *max_ref, const void *a, const void *b, size_t n, ref_type type,
                             cudaStream_t stream) {
    ref_check_type("ref_max_diff", type);
    unsigned *bits = NULL, host[2];
    CHECK_CUDA(cudaMallocAsync((void **)&bits, 2 * sizeof(unsigned), stream));
    CHECK_CUDA(cudaMemsetAsync(bits, 0, 2 * sizeof(unsigned), stream));
    unsigned blocks = ref_blocks(n);
    if (blocks > 4096) blocks = 4096;
    ref_diff_kernel<<<blocks, REF_THREADS, 0, stream>>>(bits, a, b, n, (int)type);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaMemcpyAsync(host, bits, sizeof host, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaFreeAsync(bits, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    float d, r;
    memcpy(&d, &host[0], sizeof d);
    memcpy(&r, &host[1], sizeof r);
    *max_diff = d, *max_ref = r;
}
