/* Depthwise 3x3 convolution kernels over NHWC (declared in kernels/depthwise.h). A depthwise
 * layer does 9 multiply-adds per element, so every direction is memory-bound; each kernel makes
 * one pass over its tensors with loads coalesced across channels: a thread owns a group of 4
 * channels (a float4, or 8 bytes of bfloat16; 1 when C % 4 != 0 or a pointer is not aligned for
 * that).
 *   forward:         a thread per (sample, output row, channel group) keeps the 9 x 4 weights in
 *                    registers and walks the row; the 3 x 3 input window is re-read through L1.
 *   backward-data:   a thread per (sample, input row, channel group) walks the row and gathers
 *                    the (at most 3 x 3) outputs whose windows hold each cell: no atomics.
 *   backward-filter: a reduction over all N * Ho * Wo output pixels per channel and tap. Blocks
 *                    are (channel tile) x (slice of the pixels); each thread keeps 9 x 4 sums,
 *                    the block reduces them over its lanes in shared memory and writes one
 *                    partial per slice; the last block of a channel tile to take its ticket
 *                    (an arrival counter, as kernels/batchnorm.cu does) adds the slices in order
 *                    and puts the counter back to zero. Enough slices are used to fill the GPU
 *                    even when C is small and the pixels are many (or the reverse).
 * Tensors are float or bfloat16 (the template parameter T, vector_io.cuh); sums, partials and
 * weights in registers are float either way, so a bfloat16 output is rounded exactly once. */
#include <stdint.h>

#include "kernels/depthwise.h"
#include "kernels/launch.h"
#include "kernels/pdl.cuh"
#include "kernels/vector_io.cuh"
#include "kernels/check.h"

#define DW_THREADS 256
#define DW_TILE_COLS 32      /* channel groups a backward-filter block covers */
#define DW_MAX_SPLITS 64     /* pixel slices (bounds the scratch: DW_MAX_SPLITS x 9 x C floats) */
#define DW_BLOCKS_PER_SM 4
#define DW_ROWS_PER_THREAD 4 /* at least this many pixels per thread before adding a slice */

typedef __nv_bfloat16 bf16;

template <int VEC>
__device__ __forceinline__ float4 dw_pack(const float v[VEC]) {
    if constexpr (VEC == 4) return make_float4(v[0], v[1], v[2], v[3]);
    else return make_float4(v[0], 0.0f, 0.0f, 0.0f);
}

static unsigned dw_blocks(size_t items) {
    size_t blocks = (items + DW_THREADS - 1) / DW_THREADS;
    size_t cap = (size_t)kernel_sm_count() * 8 * 16;
    if (blocks > cap) blocks = cap;
    return (unsigned)(blocks > 0 ? blocks : 1);
}

static void dw_check(const char *fn, int N, int H, int W, int C, int stride, int Ho, int Wo, int type) {
    if (N < 0 || H < 1 || W < 1 || C < 1)
        kernel_bad_input(fn, "sizes must be N >= 0, H, W, C >= 1 (got N=%d H=%d W=%d C=%d)", N, H, W, C);
    if (stride != 1 && stride != 2) kernel_bad_input(fn, "stride must be 1 or 2 (got %d)", stride);
    if (Ho != (H - 1) / stride + 1 || Wo != (W - 1) / stride + 1)
        kernel_bad_input(fn, "output %dx%d does not match input %dx%d with a 3x3 window, pad 1, stride %d "
                         "(expected %dx%d)", Ho, Wo, H, W, stride, (H - 1) / stride + 1, (W - 1) / stride + 1);
    if (type != ELEM_F32 && type != ELEM_BF16)
        kernel_bad_input(fn, "type must be ELEM_F32 (0) or ELEM_BF16 (1) (got %d)", type);
    /* 32-bit index arithmetic inside the kernels */
    if ((size_t)N * H * W * C > 0x7fffffffu || (size_t)N * Ho * Wo * C > 0x7fffffffu)
        kernel_bad_input(fn, "tensor too large: at most 2^31 - 1 elements supported");
}

/* The 4-channel vector path: C a multiple of 4 and every activation pointer aligned for 4
 * elements (16 bytes of float, 8 of bfloat16; vector_io.cuh). */
static int dw_vec(int C, elem_type type, const void *a, const void *b) {
    unsigned bytes = (unsigned)(4 * elem_bytes(type));
    return C % 4 == 0 && kernel_aligned(a, bytes) && kernel_aligned(b, bytes) ? 4 : 1;
}

/* The weights of channel group c: w9[tap][j] = w[(c + j) * 9 + tap]. */
template <int VEC, typename T>
__device__ __forceinline__ void dw_load_weights(float w9[9][VEC], const T *w, int c) {
#pragma unroll
    for (int j = 0; j < VEC; j++)
#pragma unroll
        for (int t = 0; t < 9; t++) w9[t][j] = to_float(__ldg(w + (size_t)(c + j) * 9 + t));
}

/* ---- forward ------------------------------------------------------------------------------- */

template <int VEC, typename T>
__global__ void __launch_bounds__(DW_THREADS)
depthwise_forward_kernel(T *y, const T *x, const T *w, int N, int H, int W, int C, int stride, int Ho, int Wo) {
    pdl_wait();
    pdl_release();
    unsigned ncols = (unsigned)(C / VEC), items = (unsigned)N * Ho * ncols;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        int c = (int)(i % ncols) * VEC;
        unsigned row = i / ncols;
        int ho = (int)(row % Ho), n = (int)(row / Ho);
        float w9[9][VEC];
        dw_load_weights<VEC>(w9, w, c);
        const T *xn = x + (size_t)n * H * W * C + c;
        T *yrow = y + ((size_t)n * Ho + ho) * Wo * C + c;
        for (int wo = 0; wo < Wo; wo++) {
            float acc[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++) acc[j] = 0.0f;
#pragma unroll
            for (int r = 0; r < 3; r++) {
                int h = ho * stride - 1 + r;
                if (h < 0 || h >= H) continue;
#pragma unroll
                for (int s = 0; s < 3; s++) {
                    int ww = wo * stride - 1 + s;
                    if (ww < 0 || ww >= W) continue;
                    float v[VEC];
                    load_vec<VEC>(v, xn + ((size_t)h * W + ww) * C);
#pragma unroll
                    for (int j = 0; j < VEC; j++) acc[j] = fmaf(v[j], w9[r * 3 + s][j], acc[j]);
                }
            }
            store_vec<VEC>(yrow + (size_t)wo * C, acc);
        }
    }
}

template <typename T>
static void dw_forward_launch(void *y, const void *x, const void *w, int N, int H, int W, int C, int stride, int Ho,
                              int Wo, int vec, cudaStream_t stream) {
    unsigned blocks = dw_blocks((size_t)N * Ho * (C / vec));
    if (vec == 4)
        CHECK_CUDA(pdl_launch(depthwise_forward_kernel<4, T>, blocks, DW_THREADS, stream, (T *)y, (const T *)x,
                              (const T *)w, N, H, W, C, stride, Ho, Wo));
    else
        CHECK_CUDA(pdl_launch(depthwise_forward_kernel<1, T>, blocks, DW_THREADS, stream, (T *)y, (const T *)x,
                              (const T *)w, N, H, W, C, stride, Ho, Wo));
}

extern "C" void depthwise_forward(void *y, const void *x, const void *w, int N, int H, int W, int C, int stride,
                                  int Ho, int Wo, elem_type type, cudaStream_t stream) {
    const char *fn = "depthwise_forward";
    dw_check(fn, N, H, W, C, stride, Ho, Wo, type);
    if (!y || !x || !w) kernel_bad_input(fn, "y, x and w must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = dw_vec(C, type, y, x);
    if (type == ELEM_BF16) dw_forward_launch<bf16>(y, x, w, N, H, W, C, stride, Ho, Wo, vec, stream);
    else dw_forward_launch<float>(y, x, w, N, H, W, C, stride, Ho, Wo, vec, stream);
}

/* ---- backward-data ------------------------------------------------------------------------- */

template <int VEC, typename T>
__global__ void __launch_bounds__(DW_THREADS)
depthwise_backward_data_kernel(T *dx, const T *dy, const T *w, int N, int H, int W, int C, int stride, int Ho,
                               int Wo) {
    pdl_wait();
    pdl_release();
    unsigned ncols = (unsigned)(C / VEC), items = (unsigned)N * H * ncols;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        int c = (int)(i % ncols) * VEC;
        unsigned row = i / ncols;
        int h = (int)(row % H), n = (int)(row / H);
        float w9[9][VEC];
        dw_load_weights<VEC>(w9, w, c);
        const T *dyn = dy + (size_t)n * Ho * Wo * C + c;
        T *dxrow = dx + ((size_t)n * H + h) * W * C + c;
        for (int ww = 0; ww < W; ww++) {
            float acc[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++) acc[j] = 0.0f;
            /* output ho sees this cell through tap r when ho * stride - 1 + r == h */
#pragma unroll
            for (int r = 0; r < 3; r++) {
                int th = h + 1 - r;
                if (th < 0 || th % stride) continue;
                int ho = th / stride;
                if (ho >= Ho) continue;
#pragma unroll
                for (int s = 0; s < 3; s++) {
                    int tw = ww + 1 - s;
                    if (tw < 0 || tw % stride) continue;
                    int wo = tw / stride;
                    if (wo >= Wo) continue;
                    float g[VEC];
                    load_vec<VEC>(g, dyn + ((size_t)ho * Wo + wo) * C);
#pragma unroll
                    for (int j = 0; j < VEC; j++) acc[j] = fmaf(g[j], w9[r * 3 + s][j], acc[j]);
                }
            }
            store_vec<VEC>(dxrow + (size_t)ww * C, acc);
        }
    }
}

template <typename T>
static void dw_backward_data_launch(void *dx, const void *dy, const void *w, int N, int H, int W, int C, int stride,
                                    int Ho, int Wo, int vec, cudaStream_t stream) {
    unsigned blocks = dw_blocks((size_t)N * H * (C / vec));
    if (vec == 4)
        CHECK_CUDA(pdl_launch(depthwise_backward_data_kernel<4, T>, blocks, DW_THREADS, stream, (T *)dx,
                              (const T *)dy, (const T *)w, N, H, W, C, stride, Ho, Wo));
    else
        CHECK_CUDA(pdl_launch(depthwise_backward_data_kernel<1, T>, blocks, DW_THREADS, stream, (T *)dx,
                              (const T *)dy, (const T *)w, N, H, W, C, stride, Ho, Wo));
}

extern "C" void depthwise_backward_data(void *dx, const void *dy, const void *w, int N, int H, int W, int C,
                                        int stride, int Ho, int Wo, elem_type type, cudaStream_t stream) {
    const char *fn = "depthwise_backward_data";
    dw_check(fn, N, H, W, C, stride, Ho, Wo, type);
    if (!dx || !dy || !w) kernel_bad_input(fn, "dx, dy and w must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = dw_vec(C, type, dx, dy);
    if (type == ELEM_BF16) dw_backward_data_launch<bf16>(dx, dy, w, N, H, W, C, stride, Ho, Wo, vec, stream);
    else dw_backward_data_launch<float>(dx, dy, w, N, H, W, C, stride, Ho, Wo, vec, stream);
}

/* ---- backward-filter ----------------------------------------------------------------------- */

/* Scratch: one arrival counter per channel tile (at most ceil(C / 32) tiles), then the float
 * partials [DW_MAX_SPLITS][9][C]. Both depend only on C, so layers share one scratch. */
static size_t dw_counter_bytes(int C) { return ((size_t)(C + 31) / 32 * sizeof(unsigned) + 255) / 256 * 256; }

extern "C" size_t depthwise_scratch_bytes(int C) {
    if (C < 1) C = 1;
    return dw_counter_bytes(C) + ((size_t)DW_MAX_SPLITS * 9 * C * sizeof(float) + 255) / 256 * 256;
}

/* Block: lanes (a power of two) x tile_cols threads; blockIdx.x picks the channel tile,
 * blockIdx.y the slice of output pixels. */
template <int VEC, typename T>
__global__ void __launch_bounds__(DW_THREADS)
depthwise_backward_filter_kernel(T *dw, const T *dy, const T *x, int H, int W, int C, int stride, int Ho, int Wo,
                                 unsigned pixels, int tile_cols, unsigned *counter, float *partial) {
    pdl_wait();
    pdl_release();
    __shared__ float4 red[DW_THREADS];
    __shared__ bool last;
    int tid = threadIdx.x, lane = tid / tile_cols, lanes = blockDim.x / tile_cols;
    int c = (blockIdx.x * tile_cols + tid % tile_cols) * VEC;
    float acc[9][VEC];
#pragma unroll
    for (int t = 0; t < 9; t++)
#pragma unroll
        for (int j = 0; j < VEC; j++) acc[t][j] = 0.0f;
    if (c < C) {
        unsigned step = gridDim.y * (unsigned)lanes;
        for (unsigned q = blockIdx.y * (unsigned)lanes + lane; q < pixels; q += step) {
            int wo = (int)(q % Wo), ho = (int)(q / Wo % Ho), n = (int)(q / ((unsigned)Wo * Ho));
            float g[VEC];
            load_vec<VEC>(g, dy + (size_t)q * C + c);
            const T *xn = x + (size_t)n * H * W * C + c;
#pragma unroll
            for (int r = 0; r < 3; r++) {
                int h = ho * stride - 1 + r;
                if (h < 0 || h >= H) continue;
#pragma unroll
                for (int s = 0; s < 3; s++) {
                    int ww = wo * stride - 1 + s;
                    if (ww < 0 || ww >= W) continue;
                    float v[VEC];
                    load_vec<VEC>(v, xn + ((size_t)h * W + ww) * C);
#pragma unroll
                    for (int j = 0; j < VEC; j++) acc[r * 3 + s][j] = fmaf(g[j], v[j], acc[r * 3 + s][j]);
                }
            }
        }
    }
    /* Reduce each tap over the lanes; lane 0 writes this slice's partial. */
    for (int t = 0; t < 9; t++) {
        float4 mine = dw_pack<VEC>(acc[t]);
        red[tid] = mine;
        __syncthreads();
        for (int half = lanes / 2; half > 0; half /= 2) {
            if (lane < half) {
                float4 o = red[tid + half * tile_cols];
                mine.x += o.x; mine.y += o.y; mine.z += o.z; mine.w += o.w;
                red[tid] = mine;
            }
            __syncthreads();
        }
        if (lane == 0 && c < C) {
            float sums[4] = {mine.x, mine.y, mine.z, mine.w};
            store_vec<VEC>(partial + ((size_t)blockIdx.y * 9 + t) * C + c, sums);
        }
        __syncthreads(); /* red[] is reused by the next tap */
    }
    /* Publish the partials before the ticket; the last block orders its reads after it. */
    __threadfence();
    __syncthreads();
    if (tid == 0) last = atomicAdd(counter + blockIdx.x, 1u) == gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    int begin = blockIdx.x * tile_cols * VEC, end = min(C, begin + tile_cols * VEC);
    for (int k = tid; k < (end - begin) * 9; k += blockDim.x) {
        int ch = begin + k / 9, t = k % 9;
        float sum[1] = {0.0f};
        for (unsigned s = 0; s < gridDim.y; s++) sum[0] += __ldcg(partial + ((size_t)s * 9 + t) * C + ch);
        store_vec<1>(dw + (size_t)ch * 9 + t, sum);
    }
    if (tid == 0) counter[blockIdx.x] = 0u;
}

template <typename T>
static void dw_backward_filter_launch(void *dw, const void *dy, const void *x, int H, int W, int C, int stride,
                                      int Ho, int Wo, unsigned pixels, int tile_cols, dim3 grid, dim3 block, int vec,
                                      unsigned *counter, float *partial, cudaStream_t stream) {
    if (vec == 4)
        CHECK_CUDA(pdl_launch(depthwise_backward_filter_kernel<4, T>, grid, block, stream, (T *)dw, (const T *)dy,
                              (const T *)x, H, W, C, stride, Ho, Wo, pixels, tile_cols, counter, partial));
    else
        CHECK_CUDA(pdl_launch(depthwise_backward_filter_kernel<1, T>, grid, block, stream, (T *)dw, (const T *)dy,
                              (const T *)x, H, W, C, stride, Ho, Wo, pixels, tile_cols, counter, partial));
}

extern "C" void depthwise_backward_filter(void *dw, const void *dy, const void *x, int N, int H, int W, int C,
                                          int stride, int Ho, int Wo, elem_type type, void *scratch,
                                          cudaStream_t stream) {
    const char *fn = "depthwise_backward_filter";
    dw_check(fn, N, H, W, C, stride, Ho, Wo, type);
    if (!dw || !dy || !x) kernel_bad_input(fn, "dw, dy and x must be device pointers (one is NULL)");
    if (!scratch) kernel_bad_input(fn, "scratch must hold depthwise_scratch_bytes(C) bytes (got NULL)");
    unsigned *counter = (unsigned *)scratch;
    float *partial = (float *)((char *)scratch + dw_counter_bytes(C));
    int vec = dw_vec(C, type, dy, x);
    int ncols = C / vec, tile_cols = ncols < DW_TILE_COLS ? ncols : DW_TILE_COLS;
    int tiles = (ncols + tile_cols - 1) / tile_cols, lanes = 1;
    while (lanes * 2 * tile_cols <= DW_THREADS) lanes *= 2;
    unsigned pixels = (unsigned)N * Ho * Wo;
    /* Slices: a few pixels per thread at least, one wave of blocks at most. */
    long want = ((long)pixels + (long)lanes * DW_ROWS_PER_THREAD - 1) / ((long)lanes * DW_ROWS_PER_THREAD);
    long cap = (long)kernel_sm_count() * DW_BLOCKS_PER_SM / tiles;
    if (cap > DW_MAX_SPLITS) cap = DW_MAX_SPLITS;
    if (cap < 1) cap = 1;
    if (want > cap) want = cap;
    if (want < 1) want = 1;
    dim3 grid((unsigned)tiles, (unsigned)want), block((unsigned)(lanes * tile_cols));
    if (type == ELEM_BF16)
        dw_backward_filter_launch<bf16>(dw, dy, x, H, W, C, stride, Ho, Wo, pixels, tile_cols, grid, block, vec,
                                        counter, partial, stream);
    else
        dw_backward_filter_launch<float>(dw, dy, x, H, W, C, stride, Ho, Wo, pixels, tile_cols, grid, block, vec,
                                         counter, partial, stream);
}
