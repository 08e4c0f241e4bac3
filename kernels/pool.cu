/* Pooling over NHWC activations: max pool with a k x k window (the ResNet stem's 3x3/2 pad 1)
 * and global average pool (the head). Every kernel gives each thread one pixel and a group of 4
 * channels (a float4; 1 channel when C % 4 != 0 or a pointer is misaligned), so a warp reads
 * consecutive channels: coalesced over C.
 *   maxpool forward:  one read of x (window overlaps are served by L1/L2), one write of y and of
 *                     the winning offset (one byte per output).
 *   maxpool backward: each input cell gathers dy from the windows that contain it and compares
 *                     their argmax with its own offset: one write of dx, no atomics, no memset.
 *   avgpool forward:  block = channel tile x lanes over HW, reduced in shared memory.
 *   avgpool backward: one write of dx, dy re-read from cache.
 * Tensors are float or bfloat16 (the template parameter T); comparisons and sums are in float. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "kernels/pdl.cuh"
#include "kernels/vector_io.cuh"
#include "kernels/check.h"

#define POOL_THREADS 256
#define POOL_MAX_WINDOW 16 /* argmax is a byte: k * k <= 256 */




/* Blocks for a grid-stride loop over `items` threads' worth of work: at most 16 waves' worth of
 * resident blocks, so huge tensors loop instead of launching millions of blocks. */
static unsigned pool_blocks(size_t items) {
    size_t blocks = (items + POOL_THREADS - 1) / POOL_THREADS;
    size_t cap = (size_t)kernel_sm_count() * 8 * 16;
    if (blocks > cap) blocks = cap;
    return (unsigned)(blocks > 0 ? blocks : 1);
}

/* Index arithmetic is 32-bit (64-bit division is a slow subroutine on the GPU): a tensor must
 * hold fewer than 2^31 vector items (8 GiB of floats, 32 GiB in float4), which also keeps the
 * grid-stride index from wrapping. */
static void pool_check_items(const char *fn, size_t items) {
    if (items > 0x7fffffffu)
        kernel_bad_input(fn, "tensor too large: %zu vector items, at most 2^31 - 1 supported", items);
}

/* ---- max pool ------------------------------------------------------------------------------ */

static void maxpool_check(const char *fn, int N, int H, int W, int C, int k, int stride, int pad,
                          int Ho, int Wo) {
    if (N < 0 || H < 1 || W < 1 || C < 1)
        kernel_bad_input(fn, "sizes must be N >= 0, H, W, C >= 1 (got N=%d H=%d W=%d C=%d)", N, H, W, C);
    if (k < 1 || k > POOL_MAX_WINDOW)
        kernel_bad_input(fn, "window k must be in [1, %d] (got %d)", POOL_MAX_WINDOW, k);
    if (stride < 1) kernel_bad_input(fn, "stride must be >= 1 (got %d)", stride);
    if (pad < 0 || pad > k / 2)
        kernel_bad_input(fn, "pad must be in [0, k/2 = %d] (got %d)", k / 2, pad);
    /* Every window must hold at least one real cell, as with PyTorch's output-size rule. */
    if (Ho < 1 || Wo < 1 || (long)(Ho - 1) * stride - pad >= H || (long)(Wo - 1) * stride - pad >= W)
        kernel_bad_input(fn, "output %dx%d does not fit input %dx%d with k=%d stride=%d pad=%d "
                           "(expected %dx%d)", Ho, Wo, H, W, k, stride, pad,
                       (H + 2 * pad - k) / stride + 1, (W + 2 * pad - k) / stride + 1);
}

template <int VEC, typename T>
__global__ void __launch_bounds__(POOL_THREADS)
maxpool_forward_kernel(T *y, uint8_t *argmax, const T *x, int N, int H, int W, int C,
                       int k, int stride, int pad, int Ho, int Wo) {
    pdl_wait();
    pdl_release();
    unsigned ncols = (unsigned)(C / VEC), total = (unsigned)N * Ho * Wo * ncols;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int c = (int)(i % ncols) * VEC;
        unsigned pixel = i / ncols;
        int wo = (int)(pixel % Wo), ho = (int)(pixel / Wo % Ho), n = (int)(pixel / ((unsigned)Wo * Ho));
        int h0 = ho * stride - pad, w0 = wo * stride - pad;
        float best[VEC];
        int where[VEC];
        /* PyTorch: start at -inf with the first real cell's offset; a strictly larger value or a
         * NaN takes over, so ties keep the first cell in scan order. */
        int first = (h0 < 0 ? -h0 : 0) * k + (w0 < 0 ? -w0 : 0);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            best[j] = -INFINITY;
            where[j] = first;
        }
        for (int kh = 0; kh < k; kh++) {
            int h = h0 + kh;
            if (h < 0 || h >= H) continue;
            for (int kw = 0; kw < k; kw++) {
                int w = w0 + kw;
                if (w < 0 || w >= W) continue;
                float v[VEC];
                load_vec<VEC>(v, x + (((size_t)n * H + h) * W + w) * C + c);
#pragma unroll
                for (int j = 0; j < VEC; j++)
                    if (v[j] > best[j] || isnan(v[j])) {
                        best[j] = v[j];
                        where[j] = kh * k + kw;
                    }
            }
        }
        size_t out = (size_t)pixel * C + c;
        store_vec<VEC>(y + out, best);
        if constexpr (VEC == 4)
            *(uchar4 *)(argmax + out) = make_uchar4((unsigned char)where[0], (unsigned char)where[1],
                                                    (unsigned char)where[2], (unsigned char)where[3]);
        else
            argmax[out] = (uint8_t)where[0];
    }
}

static void pool_check_type(const char *fn, int type) {
    if (type != ELEM_F32 && type != ELEM_BF16)
        kernel_bad_input(fn, "type must be ELEM_F32 (0) or ELEM_BF16 (1) (got %d)", type);
}

template <typename T>
static void maxpool_forward_launch(void *y, uint8_t *argmax, const void *x, int N, int H, int W, int C, int k,
                                   int stride, int pad, int Ho, int Wo, int vec, size_t items, cudaStream_t stream) {
    if (vec == 4)
        CHECK_CUDA(pdl_launch(maxpool_forward_kernel<4, T>, pool_blocks(items), POOL_THREADS, stream, (T *)y, argmax,
                              (const T *)x, N, H, W, C, k, stride, pad, Ho, Wo));
    else
        CHECK_CUDA(pdl_launch(maxpool_forward_kernel<1, T>, pool_blocks(items), POOL_THREADS, stream, (T *)y, argmax,
                              (const T *)x, N, H, W, C, k, stride, pad, Ho, Wo));
}

extern "C" void maxpool_forward(void *y, uint8_t *argmax, const void *x, int N, int H, int W,
                                int C, int k, int stride, int pad, int Ho, int Wo, elem_type type,
                                cudaStream_t stream) {
    const char *fn = "maxpool_forward";
    maxpool_check(fn, N, H, W, C, k, stride, pad, Ho, Wo);
    pool_check_type(fn, type);
    if (!y || !argmax || !x) kernel_bad_input(fn, "y, argmax and x must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = C % 4 == 0 && kernel_aligned(y, 16) && kernel_aligned(x, 16) && kernel_aligned(argmax, 4) ? 4 : 1;
    size_t items = (size_t)N * Ho * Wo * (C / vec);
    pool_check_items(fn, items);
    if (type == ELEM_BF16)
        maxpool_forward_launch<__nv_bfloat16>(y, argmax, x, N, H, W, C, k, stride, pad, Ho, Wo, vec, items, stream);
    else
        maxpool_forward_launch<float>(y, argmax, x, N, H, W, C, k, stride, pad, Ho, Wo, vec, items, stream);
}

/* Adds dy[out] to sum where the window's argmax is this cell's offset `mine`. */
template <int VEC, typename T>
__device__ __forceinline__ void maxpool_gather(float sum[VEC], const T *dy, const uint8_t *argmax,
                                               size_t out, int mine) {
    float g[VEC];
    load_vec<VEC>(g, dy + out);
    if constexpr (VEC == 4) {
        uchar4 a = *(const uchar4 *)(argmax + out);
        sum[0] += a.x == mine ? g[0] : 0.0f;
        sum[1] += a.y == mine ? g[1] : 0.0f;
        sum[2] += a.z == mine ? g[2] : 0.0f;
        sum[3] += a.w == mine ? g[3] : 0.0f;
    } else {
        sum[0] += argmax[out] == mine ? g[0] : 0.0f;
    }
}

/* TWO_BY_TWO: every cell lies in at most 2 windows per dimension (k <= 2 * stride). */
template <int VEC, bool TWO_BY_TWO, typename T>
__global__ void __launch_bounds__(POOL_THREADS)
maxpool_backward_kernel(T *dx, const T *dy, const uint8_t *argmax, int N, int H, int W,
                        int C, int k, int stride, int pad, int Ho, int Wo) {
    pdl_wait();
    pdl_release();
    unsigned ncols = (unsigned)(C / VEC), total = (unsigned)N * H * W * ncols;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int c = (int)(i % ncols) * VEC;
        unsigned cell = i / ncols;
        int w = (int)(cell % W), h = (int)(cell / W % H), n = (int)(cell / ((unsigned)W * H));
        /* Windows ho with ho*stride - pad <= h <= ho*stride - pad + k - 1. */
        int lo_h = h + pad - k + 1, lo_w = w + pad - k + 1;
        int ho_begin = lo_h <= 0 ? 0 : (lo_h + stride - 1) / stride;
        int wo_begin = lo_w <= 0 ? 0 : (lo_w + stride - 1) / stride;
        int ho_end = min(Ho - 1, (h + pad) / stride), wo_end = min(Wo - 1, (w + pad) / stride);
        float sum[VEC];
#pragma unroll
        for (int j = 0; j < VEC; j++) sum[j] = 0.0f;
        /* The stem's 3x3/2 puts each cell in at most 2 x 2 windows: a fixed, unrolled 2 x 2 scan
         * keeps all four loads in flight; other shapes take the general loop. */
        if (TWO_BY_TWO) {
#pragma unroll
            for (int dh = 0; dh < 2; dh++)
#pragma unroll
                for (int dw = 0; dw < 2; dw++) {
                    int ho = ho_begin + dh, wo = wo_begin + dw;
                    if (ho <= ho_end && wo <= wo_end)
                        maxpool_gather<VEC>(sum, dy, argmax, (((size_t)n * Ho + ho) * Wo + wo) * C + c,
                                            (h - (ho * stride - pad)) * k + (w - (wo * stride - pad)));
                }
        } else {
            for (int ho = ho_begin; ho <= ho_end; ho++)
                for (int wo = wo_begin; wo <= wo_end; wo++)
                    maxpool_gather<VEC>(sum, dy, argmax, (((size_t)n * Ho + ho) * Wo + wo) * C + c,
                                        (h - (ho * stride - pad)) * k + (w - (wo * stride - pad)));
        }
        store_vec<VEC>(dx + (size_t)cell * C + c, sum);
    }
}

template <typename T>
static void maxpool_backward_launch(void *dx_, const void *dy_, const uint8_t *argmax, int N, int H, int W, int C,
                                    int k, int stride, int pad, int Ho, int Wo, int vec, size_t items,
                                    cudaStream_t stream) {
    T *dx = (T *)dx_;
    const T *dy = (const T *)dy_;
    unsigned blocks = pool_blocks(items);
    int two = k <= 2 * stride;
    if (vec == 4 && two)
        CHECK_CUDA(pdl_launch(maxpool_backward_kernel<4, true, T>, blocks, POOL_THREADS, stream, dx, dy, argmax, N, H,
                              W, C, k, stride, pad, Ho, Wo));
    else if (vec == 4)
        CHECK_CUDA(pdl_launch(maxpool_backward_kernel<4, false, T>, blocks, POOL_THREADS, stream, dx, dy, argmax, N,
                              H, W, C, k, stride, pad, Ho, Wo));
    else if (two)
        CHECK_CUDA(pdl_launch(maxpool_backward_kernel<1, true, T>, blocks, POOL_THREADS, stream, dx, dy, argmax, N, H,
                              W, C, k, stride, pad, Ho, Wo));
    else
        CHECK_CUDA(pdl_launch(maxpool_backward_kernel<1, false, T>, blocks, POOL_THREADS, stream, dx, dy, argmax, N,
                              H, W, C, k, stride, pad, Ho, Wo));
}

extern "C" void maxpool_backward(void *dx, const void *dy, const uint8_t *argmax, int N, int H,
                                 int W, int C, int k, int stride, int pad, int Ho, int Wo, elem_type type,
                                 cudaStream_t stream) {
    const char *fn = "maxpool_backward";
    maxpool_check(fn, N, H, W, C, k, stride, pad, Ho, Wo);
    pool_check_type(fn, type);
    if (!dx || !dy || !argmax) kernel_bad_input(fn, "dx, dy and argmax must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = C % 4 == 0 && kernel_aligned(dx, 16) && kernel_aligned(dy, 16) && kernel_aligned(argmax, 4) ? 4 : 1;
    size_t items = (size_t)N * H * W * (C / vec);
    pool_check_items(fn, items);
    if (type == ELEM_BF16)
        maxpool_backward_launch<__nv_bfloat16>(dx, dy, argmax, N, H, W, C, k, stride, pad, Ho, Wo, vec, items, stream);
    else
        maxpool_backward_launch<float>(dx, dy, argmax, N, H, W, C, k, stride, pad, Ho, Wo, vec, items, stream);
}

/* ---- global average pool ------------------------------------------------------------------- */

/* Block: lanes (a power of two) x tile_cols threads; blockIdx.x picks the channel tile and
 * blockIdx.y the image; lanes split the HW cells and meet in shared memory. */
template <int VEC, typename T>
__global__ void __launch_bounds__(POOL_THREADS)
avgpool_global_forward_kernel(T *y, const T *x, int HW, int C, int tile_cols) {
    pdl_wait();
    pdl_release();
    __shared__ float4 partial[POOL_THREADS];
    int tid = threadIdx.x, lane = tid / tile_cols, lanes = blockDim.x / tile_cols;
    int c = (blockIdx.x * tile_cols + tid % tile_cols) * VEC;
    size_t n = blockIdx.y;
    float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (c < C) {
        const T *base = x + n * HW * C + c;
        for (int p = lane; p < HW; p += lanes) {
            float v[VEC];
            load_vec<VEC>(v, base + (size_t)p * C);
#pragma unroll
            for (int j = 0; j < VEC; j++) sum[j] += v[j];
        }
    }
    float4 mine = make_float4(sum[0], sum[1], sum[2], sum[3]);
    partial[tid] = mine;
    __syncthreads();
    for (int half = lanes / 2; half > 0; half /= 2) {
        if (lane < half) {
            float4 o = partial[tid + half * tile_cols];
            mine.x += o.x; mine.y += o.y; mine.z += o.z; mine.w += o.w;
            partial[tid] = mine;
        }
        __syncthreads();
    }
    if (lane == 0 && c < C) {
        float inv = 1.0f / (float)HW, out[4] = {mine.x * inv, mine.y * inv, mine.z * inv, mine.w * inv};
        store_vec<VEC>(y + n * C + c, out);
    }
}

template <int VEC, typename T>
__global__ void __launch_bounds__(POOL_THREADS)
avgpool_global_backward_kernel(T *dx, const T *dy, int N, int HW, int C) {
    pdl_wait();
    pdl_release();
    unsigned ncols = (unsigned)(C / VEC), total = (unsigned)N * HW * ncols;
    float inv = 1.0f / (float)HW;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x) {
        int c = (int)(i % ncols) * VEC;
        unsigned cell = i / ncols, n = cell / HW;
        float g[VEC];
        load_vec<VEC>(g, dy + (size_t)n * C + c);
#pragma unroll
        for (int j = 0; j < VEC; j++) g[j] *= inv;
        store_vec<VEC>(dx + (size_t)cell * C + c, g);
    }
}

static void avgpool_check(const char *fn, int N, int HW, int C) {
    if (N < 0 || N > 65535 || HW < 1 || C < 1)
        kernel_bad_input(fn, "sizes must be 0 <= N <= 65535, HW >= 1, C >= 1 (got N=%d HW=%d C=%d)",
                       N, HW, C);
}

extern "C" void avgpool_global_forward(void *y, const void *x, int N, int HW, int C, elem_type type,
                                       cudaStream_t stream) {
    const char *fn = "avgpool_global_forward";
    avgpool_check(fn, N, HW, C);
    pool_check_type(fn, type);
    if (!y || !x) kernel_bad_input(fn, "y and x must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = C % 4 == 0 && kernel_aligned(y, 16) && kernel_aligned(x, 16) ? 4 : 1;
    int ncols = C / vec, tiles = ncols <= 64 ? 1 : (ncols + 31) / 32;
    int tile_cols = (ncols + tiles - 1) / tiles, lanes = 1;
    while (lanes * 2 * tile_cols <= POOL_THREADS && lanes < HW) lanes *= 2;
    dim3 grid((unsigned)tiles, (unsigned)N), block((unsigned)(lanes * tile_cols));
    typedef __nv_bfloat16 bf16;
    if (type == ELEM_BF16 && vec == 4)
        CHECK_CUDA(pdl_launch(avgpool_global_forward_kernel<4, bf16>, grid, block, stream, (bf16 *)y, (const bf16 *)x,
                              HW, C, tile_cols));
    else if (type == ELEM_BF16)
        CHECK_CUDA(pdl_launch(avgpool_global_forward_kernel<1, bf16>, grid, block, stream, (bf16 *)y, (const bf16 *)x,
                              HW, C, tile_cols));
    else if (vec == 4)
        CHECK_CUDA(pdl_launch(avgpool_global_forward_kernel<4, float>, grid, block, stream, (float *)y,
                              (const float *)x, HW, C, tile_cols));
    else
        CHECK_CUDA(pdl_launch(avgpool_global_forward_kernel<1, float>, grid, block, stream, (float *)y,
                              (const float *)x, HW, C, tile_cols));
}

extern "C" void avgpool_global_backward(void *dx, const void *dy, int N, int HW, int C, elem_type type,
                                        cudaStream_t stream) {
    const char *fn = "avgpool_global_backward";
    avgpool_check(fn, N, HW, C);
    pool_check_type(fn, type);
    if (!dx || !dy) kernel_bad_input(fn, "dx and dy must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = C % 4 == 0 && kernel_aligned(dx, 16) && kernel_aligned(dy, 16) ? 4 : 1;
    size_t items = (size_t)N * HW * (C / vec);
    pool_check_items(fn, items);
    unsigned blocks = pool_blocks(items);
    typedef __nv_bfloat16 bf16;
    if (type == ELEM_BF16 && vec == 4)
        CHECK_CUDA(pdl_launch(avgpool_global_backward_kernel<4, bf16>, blocks, POOL_THREADS, stream, (bf16 *)dx,
                              (const bf16 *)dy, N, HW, C));
    else if (type == ELEM_BF16)
        CHECK_CUDA(pdl_launch(avgpool_global_backward_kernel<1, bf16>, blocks, POOL_THREADS, stream, (bf16 *)dx,
                              (const bf16 *)dy, N, HW, C));
    else if (vec == 4)
        CHECK_CUDA(pdl_launch(avgpool_global_backward_kernel<4, float>, blocks, POOL_THREADS, stream, (float *)dx,
                              (const float *)dy, N, HW, C));
    else
        CHECK_CUDA(pdl_launch(avgpool_global_backward_kernel<1, float>, blocks, POOL_THREADS, stream, (float *)dx,
                              (const float *)dy, N, HW, C));
}
