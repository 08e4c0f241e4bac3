/* Batch normalisation over NHWC activations viewed as [rows, C], fused with the residual add and
 * the activation: ReLU (a ResNet block), SiLU (EfficientNet) or none; the activation is a template
 * parameter, so each kind is its own kernel with no per-element branch. It is memory-bound, so
 * each direction is two kernels and the fewest passes over memory:
 *   forward (train): stats  - one read of x; per-channel shifted sums, block-reduced, added into
 *                             double accumulators in scratch; the last block to finish finalises
 *                             mean/invstd and the running statistics and zeroes the scratch again.
 *                    apply  - one read of x (and residual), one write of y.
 *   backward:        reduce - one read of dy and x (SiLU's derivative, and the ReLU's mask of
 *                             a layer that joined no residual, are recomputed from x, gamma and
 *                             beta; a ReLU that joined one reads its mask as bits the apply kernel
 *                             wrote, or y); writes dresidual on the way; the last block writes
 *                             dbeta and dgamma.
 *                    dx     - one read of the masked dy (dresidual when it was written, else dy
 *                             masked as above) and x, one write of dx.
 * The cross-block reduction needs no host round trip, no memset and no extra launch: each block
 * adds its per-channel sums with double atomics into one of up to 8 stripes of accumulators (so
 * hundreds of blocks of a C = 64 layer do not queue on the same L2 lines), then takes a ticket
 * from its channel tile's arrival counter; the block that draws a tile's last ticket sees every
 * sum of that tile, finalises its channels (so wide layers finalise in parallel), and puts the
 * accumulators and the counter back to zero. So the scratch must be zero once when it is
 * allocated (the arena zeroes its scratch region) and every call leaves it zero, which is what
 * lets a captured graph replay without a reset. The variance is numerically sound when
 * |mean| >> std: sums are of (x - x[row 0]) (a shift inside the data), and the final combine is
 * in double.
 * Threads own a fixed group of 4 channels (one float4; 1 channel when C % 4 != 0 or a pointer is
 * not 16-byte aligned) and walk the rows, so loads are coalesced across C and per-channel
 * parameters are read once per thread. Grid sizes come from rows, C and the SM count, so both
 * rows=128 x C=2048 and rows=401408 x C=64 fill the GPU.
 * Activation tensors (x, residual, y, dy, dx, dresidual) are float or bfloat16, a template
 * parameter T of every kernel (vector_io.cuh); arithmetic, statistics, gamma/beta and their
 * gradients are float either way, as under PyTorch's autocast.
 * All four kernels are launched for programmatic dependent launch (kernels/pdl.cuh): each waits
 * for the kernel before it after loading what that kernel cannot have written (per-channel
 * parameters, the forward's statistics), and releases the next at once, so that the second kernel
 * of each pair is scheduled while the first one's cross-block reduction finishes. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "kernels/pdl.cuh"
#include "kernels/relu.cuh"
#include "kernels/vector_io.cuh"
#include "kernels/check.h"

#define BN_THREADS 256        /* threads per block (upper bound: the block is lanes x tile_cols) */
#define BN_MAX_TILE_COLS 64   /* vector columns one block covers when C is small */
#define BN_WIDE_TILE_COLS 32  /* ... and when C is large (then C is split over blockIdx.x) */
/* Independent rows each thread has in flight: 4 float4 loads, or 8 of bfloat16 (8 bytes each), so
 * both keep 64 bytes per thread in flight for the memory system. */
#define BN_ROW_UNROLL(T) (sizeof(T) == 2 ? 8 : 4)
#define BN_REDUCE_BLOCKS_PER_SM 4 /* at most: fewer, fuller blocks mean fewer atomics */
#define BN_MAX_STRIPES 8      /* copies of the accumulators, so blocks spread their atomics */
#define BN_BLOCKS_PER_STRIPE 32


/* ---- shared pieces ------------------------------------------------------------------------- */


static int bn_aligned16(const void *p) { return kernel_aligned(p, 16); }


/* How one launch covers [rows, C]: blockIdx.x picks a tile of tile_cols vector columns, each
 * block is lanes (a power of two) x tile_cols threads, blockIdx.y and the lane pick the rows. */
typedef struct bn_shape {
    int vec, tile_cols, lanes, tiles;
} bn_shape;

static bn_shape bn_shape_of(int C, int vec) {
    bn_shape s;
    int ncols = C / vec;
    s.vec = vec;
    s.tiles = ncols <= BN_MAX_TILE_COLS ? 1 : (ncols + BN_WIDE_TILE_COLS - 1) / BN_WIDE_TILE_COLS;
    s.tile_cols = (ncols + s.tiles - 1) / s.tiles;
    s.lanes = 1;
    while (s.lanes * 2 * s.tile_cols <= BN_THREADS) s.lanes *= 2;
    return s;
}

/* Blocks that fit on one SM at once (so a grid is one full wave, never a ragged second one). */
static int bn_resident_blocks(const void *kernel, int threads, int at_most) {
    int blocks = 0;
    CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0));
    if (blocks < 1) blocks = 1;
    return at_most > 0 && blocks > at_most ? at_most : blocks;
}

/* Blocks along the rows: enough to give every thread a few rows, at most one full wave. */
static dim3 bn_grid(const bn_shape *s, int rows, int unroll, int blocks_per_sm) {
    long want = ((long)rows + (long)s->lanes * unroll - 1) / ((long)s->lanes * unroll);
    long cap = (long)kernel_sm_count() * blocks_per_sm / s->tiles;
    if (cap < 1) cap = 1;
    if (want > cap) want = cap;
    if (want > 65535) want = 65535;
    if (want < 1) want = 1;
    return dim3((unsigned)s->tiles, (unsigned)want);
}

template <int VEC, typename T>
__device__ __forceinline__ void bn_load(float v[VEC], const T *p) { load_vec<VEC>(v, p); }

template <int VEC, typename T>
__device__ __forceinline__ void bn_store(T *p, const float v[VEC]) { store_vec<VEC>(p, v); }

template <int VEC>
__device__ __forceinline__ float4 bn_pack(const float v[VEC]) {
    if constexpr (VEC == 4) return make_float4(v[0], v[1], v[2], v[3]);
    else return make_float4(v[0], 0.0f, 0.0f, 0.0f);
}

__device__ __forceinline__ float bn_lane(float4 v, int j) {
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

/* Many blocks adding into one double would serialise in L2: block row y adds into stripe
 * y % stripes of the accumulators (each stripe is [sums of a | sums of b], 2C doubles). */
static int bn_stripes(dim3 grid) {
    int stripes = (int)grid.y / BN_BLOCKS_PER_STRIPE;
    return stripes < 1 ? 1 : stripes > BN_MAX_STRIPES ? BN_MAX_STRIPES : stripes;
}

/* Scratch layout: one arrival counter per channel tile (at most ceil(C / 32) tiles), then the
 * stripes of double accumulators. Both depend only on C, so layers share one scratch. */
static size_t bn_counter_bytes(int C) { return ((size_t)(C + 31) / 32 * sizeof(unsigned) + 255) / 256 * 256; }

/* Reduces a[], b[] (VEC channels per thread) over the lanes of the block, adds the block's sums
 * to its stripe with double atomics, and returns true in every thread of the block that arrives
 * last among the blocks of its channel tile (which then sees all the tile's sums). */
template <int VEC>
__device__ bool bn_reduce_and_arrive(const float a[VEC], const float b[VEC], int c, int C,
                                     int tile_cols, int stripes, double *acc, unsigned *counter) {
    /* One float4 per thread (VEC lanes used): conflict-free shared-memory traffic. */
    __shared__ float4 red_a[BN_THREADS], red_b[BN_THREADS];
    __shared__ bool last;
    int tid = threadIdx.x, lane = tid / tile_cols, lanes = blockDim.x / tile_cols;
    float4 pa = bn_pack<VEC>(a), pb = bn_pack<VEC>(b);
    red_a[tid] = pa;
    red_b[tid] = pb;
    __syncthreads();
    for (int half = lanes / 2; half > 0; half /= 2) {
        if (lane < half) {
            float4 oa = red_a[tid + half * tile_cols], ob = red_b[tid + half * tile_cols];
            pa.x += oa.x; pa.y += oa.y; pa.z += oa.z; pa.w += oa.w;
            pb.x += ob.x; pb.y += ob.y; pb.z += ob.z; pb.w += ob.w;
            red_a[tid] = pa;
            red_b[tid] = pb;
        }
        __syncthreads();
    }
    if (lane == 0 && c < C) {
        acc += (size_t)(blockIdx.y % stripes) * 2 * C;
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            atomicAdd(acc + c + j, (double)bn_lane(pa, j));
            atomicAdd(acc + C + c + j, (double)bn_lane(pb, j));
        }
    }
    /* Publish this block's sums before its ticket; the last block orders its reads after it. */
    __threadfence();
    __syncthreads();
    if (tid == 0) last = atomicAdd(counter + blockIdx.x, 1u) == gridDim.y - 1;
    __syncthreads();
    if (last) __threadfence();
    return last;
}

/* In the last block of a tile: the totals of channel ch over the stripes, which are put back to
 * zero for the next call. */
__device__ __forceinline__ void bn_take_sums(double *sa, double *sb, int ch, int C, int stripes,
                                             double *acc) {
    double a = 0.0, b = 0.0;
    for (int k = 0; k < stripes; k++) {
        a += __ldcg(acc + (size_t)k * 2 * C + ch);
        b += __ldcg(acc + (size_t)k * 2 * C + C + ch);
    }
    for (int k = 0; k < stripes; k++) {
        acc[(size_t)k * 2 * C + ch] = 0.0;
        acc[(size_t)k * 2 * C + C + ch] = 0.0;
    }
    *sa = a;
    *sb = b;
}

/* The channels of this block's tile, for the last block's finalise loop. */
__device__ __forceinline__ int bn_tile_end(int tile_cols, int vec, int C) {
    int end = (blockIdx.x + 1) * tile_cols * vec;
    return end < C ? end : C;
}

/* A value as its tensor stores it: what y > 0 was decided on. */
template <typename T> __device__ __forceinline__ float bn_stored(float v);
template <> __device__ __forceinline__ float bn_stored<float>(float v) { return v; }
template <> __device__ __forceinline__ float bn_stored<__nv_bfloat16>(float v) {
    return __bfloat162float(__float2bfloat16_rn(v));
}

/* A ReLU's mask kept as bits: bit (r * C + c) of 32-bit words, so that with C % 32 == 0 each word
 * holds 32 channels of one row. The 32 / VEC neighbouring threads that own those channels (one row:
 * bn_mask_bits_fit) put the word together with shuffles and one of them stores it. */
template <int VEC>
__device__ __forceinline__ void bn_store_mask_bits(uint32_t *bits, const float y[VEC], size_t at) {
    constexpr int group = 32 / VEC;
    unsigned word = 0;
#pragma unroll
    for (int j = 0; j < VEC; j++) word |= (y[j] > 0.0f ? 1u : 0u) << j;
    word <<= at % 32;
    unsigned lanes = group == 32 ? 0xffffffffu : ((1u << group) - 1u) << (threadIdx.x & 31 & ~(group - 1));
#pragma unroll
    for (int step = 1; step < group; step *= 2) word |= __shfl_xor_sync(lanes, word, step);
    if (at % 32 == 0) bits[at / 32] = word;
}

template <int VEC, typename T>
__device__ __forceinline__ void bn_store_stored_mask(uint32_t *bits, const float y[VEC], size_t at) {
    float stored[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++) stored[j] = bn_stored<T>(y[j]);
    bn_store_mask_bits<VEC>(bits, stored, at);
}

template <int VEC>
__device__ __forceinline__ unsigned bn_load_mask_bits(const uint32_t *bits, size_t at) {
    return (bits[at / 32] >> (at % 32)) & ((1u << VEC) - 1u);
}

/* Bits need every 32-channel word to lie within one block's tile, so that its threads are one
 * aligned group of a warp (and all of them exit or stay together). */
static int bn_mask_bits_fit(int C, int vec) {
    if (C % 32 != 0) return 0;
    bn_shape s = bn_shape_of(C, vec);
    return s.tile_cols % (32 / vec) == 0;
}

/* ---- forward ------------------------------------------------------------------------------- */

template <int VEC, typename T>
__global__ void __launch_bounds__(BN_THREADS)
bn_stats_kernel(float *__restrict__ mean, float *__restrict__ invstd,
                float *__restrict__ running_mean, float *__restrict__ running_var,
                const T *__restrict__ x, int rows, int C, int tile_cols, float eps,
                float momentum, int stripes, unsigned *counter, double *acc) {
    int tid = threadIdx.x, lane = tid / tile_cols, lanes = blockDim.x / tile_cols;
    int c = (blockIdx.x * tile_cols + tid % tile_cols) * VEC;
    float sum[VEC], sq[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++) sum[j] = sq[j] = 0.0f;
    pdl_wait(); /* x is the output of the kernel before */
    pdl_release();
    if (c < C) {
        float shift[VEC];
        bn_load<VEC>(shift, x + c);
        size_t stride = (size_t)gridDim.y * lanes, r = (size_t)blockIdx.y * lanes + lane;
        for (; r + (BN_ROW_UNROLL(T) - 1) * stride < (size_t)rows; r += BN_ROW_UNROLL(T) * stride) {
            float v[BN_ROW_UNROLL(T)][VEC];
#pragma unroll
            for (int u = 0; u < BN_ROW_UNROLL(T); u++) bn_load<VEC>(v[u], x + (r + u * stride) * C + c);
#pragma unroll
            for (int u = 0; u < BN_ROW_UNROLL(T); u++)
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    float d = v[u][j] - shift[j];
                    sum[j] += d;
                    sq[j] = fmaf(d, d, sq[j]);
                }
        }
        for (; r < (size_t)rows; r += stride) {
            float v[VEC];
            bn_load<VEC>(v, x + r * C + c);
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                float d = v[j] - shift[j];
                sum[j] += d;
                sq[j] = fmaf(d, d, sq[j]);
            }
        }
    }
    if (!bn_reduce_and_arrive<VEC>(sum, sq, c, C, tile_cols, stripes, acc, counter)) return;

    double n = (double)rows;
    for (int ch = blockIdx.x * tile_cols * VEC + threadIdx.x, end = bn_tile_end(tile_cols, VEC, C); ch < end;
         ch += blockDim.x) {
        float shift = to_float(x[ch]), rm = running_mean ? running_mean[ch] : 0.0f;
        float rv = running_var ? running_var[ch] : 0.0f;
        double s, ss;
        bn_take_sums(&s, &ss, ch, C, stripes, acc);
        double shifted_mean = s / n, var = ss / n - shifted_mean * shifted_mean;
        if (var < 0.0) var = 0.0;
        double m = (double)shift + shifted_mean;
        mean[ch] = (float)m;
        invstd[ch] = (float)(1.0 / sqrt(var + (double)eps));
        /* PyTorch keeps the unbiased variance; with one row it is undefined: keep the biased. */
        double unbiased = rows > 1 ? var * n / (n - 1.0) : var;
        if (running_mean) running_mean[ch] = (float)((1.0 - momentum) * rm + (double)momentum * m);
        if (running_var) running_var[ch] = (float)((1.0 - momentum) * rv + (double)momentum * unbiased);
    }
    if (threadIdx.x == 0) counter[blockIdx.x] = 0u;
}

/* The activation after the affine step. ReLU takes the residual before it (ResNet's block
 * output), SiLU after it (EfficientNet's skip joins the activated branch), none either way. */
__device__ __forceinline__ float bn_silu(float z) { return z / (1.0f + __expf(-z)); }

template <int ACT>
__device__ __forceinline__ float bn_activate(float z, float res) {
    if constexpr (ACT == ACT_RELU) return relu_keep_nan(z + res);
    else if constexpr (ACT == ACT_SILU) return bn_silu(z) + res;
    else return z + res;
}

/* y = act(gamma * (x - mean) * invstd + beta) with the residual joined as bn_activate says. With
 * stats_are_var, `spread` holds the variance (inference: running_var) instead of invstd. */
template <int VEC, int ACT, typename T>
__global__ void __launch_bounds__(BN_THREADS)
bn_apply_kernel(T *y, uint32_t *mask_bits, const T *x, const T *residual, const float *gamma,
                const float *beta, const float *center, const float *spread, int stats_are_var,
                float eps, int rows, int C, int tile_cols) {
    int tid = threadIdx.x, lane = tid / tile_cols, lanes = blockDim.x / tile_cols;
    int c = (blockIdx.x * tile_cols + tid % tile_cols) * VEC;
    if (c >= C) return;
    float m[VEC], scale[VEC], shift[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        scale[j] = gamma[c + j];
        shift[j] = beta[c + j];
    }
    pdl_wait(); /* training: the statistics kernel before wrote center and spread */
    pdl_release();
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        float inv = stats_are_var ? (float)(1.0 / sqrt((double)spread[c + j] + (double)eps))
                                  : spread[c + j];
        m[j] = center[c + j];
        scale[j] *= inv;
    }
    size_t stride = (size_t)gridDim.y * lanes, r = (size_t)blockIdx.y * lanes + lane;
    for (; r + (BN_ROW_UNROLL(T) - 1) * stride < (size_t)rows; r += BN_ROW_UNROLL(T) * stride) {
        float v[BN_ROW_UNROLL(T)][VEC], res[BN_ROW_UNROLL(T)][VEC];
#pragma unroll
        for (int u = 0; u < BN_ROW_UNROLL(T); u++) {
            bn_load<VEC>(v[u], x + (r + u * stride) * C + c);
            if (residual) bn_load<VEC>(res[u], residual + (r + u * stride) * C + c);
        }
#pragma unroll
        for (int u = 0; u < BN_ROW_UNROLL(T); u++) {
#pragma unroll
            for (int j = 0; j < VEC; j++)
                v[u][j] = bn_activate<ACT>(fmaf(v[u][j] - m[j], scale[j], shift[j]), residual ? res[u][j] : 0.0f);
            bn_store<VEC>(y + (r + u * stride) * C + c, v[u]);
            if (ACT == ACT_RELU && mask_bits) bn_store_stored_mask<VEC, T>(mask_bits, v[u], (r + u * stride) * C + c);
        }
    }
    for (; r < (size_t)rows; r += stride) {
        float v[VEC], res[VEC];
        bn_load<VEC>(v, x + r * C + c);
        if (residual) bn_load<VEC>(res, residual + r * C + c);
#pragma unroll
        for (int j = 0; j < VEC; j++)
            v[j] = bn_activate<ACT>(fmaf(v[j] - m[j], scale[j], shift[j]), residual ? res[j] : 0.0f);
        bn_store<VEC>(y + r * C + c, v);
        if (ACT == ACT_RELU && mask_bits) bn_store_stored_mask<VEC, T>(mask_bits, v, r * C + c);
    }
}

extern "C" size_t bn_scratch_bytes(int rows, int C) {
    (void)rows;
    if (C < 1) C = 1;
    size_t bytes = bn_counter_bytes(C) + (size_t)BN_MAX_STRIPES * 2 * (size_t)C * sizeof(double);
    return (bytes + 255) / 256 * 256;
}

static void bn_check_sizes(const char *fn, int rows, int C) {
    if (rows < 1) kernel_bad_input(fn, "rows must be >= 1 (got %d)", rows);
    if (C < 1) kernel_bad_input(fn, "C must be >= 1 (got %d)", C);
}

static void bn_check_act(const char *fn, int act) {
    if (act != ACT_NONE && act != ACT_RELU && act != ACT_SILU)
        kernel_bad_input(fn, "act must be ACT_NONE (0), ACT_RELU (1) or ACT_SILU (2) (got %d)", act);
}

static void bn_check_type(const char *fn, int type) {
    if (type != ELEM_F32 && type != ELEM_BF16)
        kernel_bad_input(fn, "type must be ELEM_F32 (0) or ELEM_BF16 (1) (got %d)", type);
}

/* One template per (vector width, activation, element type); the launchers pick it at run time. */
#define BN_DISPATCH(launch, T, vec, act, ...)                                    \
    do {                                                                         \
        if ((vec) == 4) {                                                        \
            if ((act) == ACT_RELU) launch<4, ACT_RELU, T>(__VA_ARGS__);          \
            else if ((act) == ACT_SILU) launch<4, ACT_SILU, T>(__VA_ARGS__);     \
            else launch<4, ACT_NONE, T>(__VA_ARGS__);                            \
        } else {                                                                 \
            if ((act) == ACT_RELU) launch<1, ACT_RELU, T>(__VA_ARGS__);          \
            else if ((act) == ACT_SILU) launch<1, ACT_SILU, T>(__VA_ARGS__);     \
            else launch<1, ACT_NONE, T>(__VA_ARGS__);                            \
        }                                                                        \
    } while (0)
#define BN_DISPATCH_TYPED(launch, type, vec, act, ...)                           \
    do {                                                                         \
        if ((type) == ELEM_BF16) BN_DISPATCH(launch, __nv_bfloat16, vec, act, __VA_ARGS__); \
        else BN_DISPATCH(launch, float, vec, act, __VA_ARGS__);                  \
    } while (0)

template <int VEC, int ACT, typename T>
static void bn_train_launch(void *y_, uint32_t *relu_mask, float *mean, float *invstd, float *running_mean,
                            float *running_var, const void *x_, const void *residual_,
                            const float *gamma, const float *beta, int rows, int C, float eps,
                            float momentum, unsigned *counter, double *acc, cudaStream_t stream) {
    T *y = (T *)y_;
    const T *x = (const T *)x_, *residual = (const T *)residual_;
    bn_shape s = bn_shape_of(C, VEC);
    int threads = s.lanes * s.tile_cols, unroll = BN_ROW_UNROLL(T);
    dim3 block((unsigned)threads);
    dim3 stats_grid = bn_grid(&s, rows, unroll, bn_resident_blocks((const void *)bn_stats_kernel<VEC, T>, threads,
                                                           BN_REDUCE_BLOCKS_PER_SM));
    dim3 apply_grid =
        bn_grid(&s, rows, unroll, bn_resident_blocks((const void *)bn_apply_kernel<VEC, ACT, T>, threads, 0));
    int stripes = bn_stripes(stats_grid);
    CHECK_CUDA(pdl_launch(bn_stats_kernel<VEC, T>, stats_grid, block, stream, mean, invstd, running_mean, running_var,
                          x, rows, C, s.tile_cols, eps, momentum, stripes, counter, acc));
    CHECK_CUDA(pdl_launch(bn_apply_kernel<VEC, ACT, T>, apply_grid, block, stream, y, relu_mask, x, residual, gamma,
                          beta, (const float *)mean, (const float *)invstd, 0, eps, rows, C, s.tile_cols));
}

extern "C" size_t bn_relu_mask_bytes(int rows, int C) {
    if (rows < 1 || C < 1 || !bn_mask_bits_fit(C, 4) || !bn_mask_bits_fit(C, 1)) return 0;
    return ((size_t)rows * (size_t)(C / 32) * sizeof(uint32_t) + 255) / 256 * 256;
}

extern "C" void bn_act_forward_train(void *y, uint32_t *relu_mask, float *mean, float *invstd, float *running_mean,
                                     float *running_var, const void *x, const void *residual,
                                     const float *gamma, const float *beta, int rows, int C, float eps,
                                     float momentum, act_kind act, elem_type type, void *scratch,
                                     cudaStream_t stream) {
    const char *fn = "bn_act_forward_train";
    bn_check_sizes(fn, rows, C);
    bn_check_act(fn, act);
    bn_check_type(fn, type);
    if (!y || !mean || !invstd || !x || !gamma || !beta)
        kernel_bad_input(fn, "y, mean, invstd, x, gamma and beta must be device pointers (one is NULL)");
    if (!scratch) kernel_bad_input(fn, "scratch must hold bn_scratch_bytes(rows, C) bytes (got NULL)");
    if (!(eps > 0.0f)) kernel_bad_input(fn, "eps must be > 0 (got %g)", eps);
    unsigned *counter = (unsigned *)scratch;
    double *acc = (double *)((char *)scratch + bn_counter_bytes(C));
    int vec = C % 4 == 0 && bn_aligned16(x) && bn_aligned16(y) && bn_aligned16(residual) ? 4 : 1;
    if (relu_mask && act != ACT_RELU) kernel_bad_input(fn, "relu_mask is for ACT_RELU only (act is %d)", (int)act);
    if (relu_mask && (!bn_mask_bits_fit(C, vec) || !kernel_aligned(relu_mask, 4)))
        kernel_bad_input(fn, "relu_mask needs C %% 32 == 0 (got C = %d; bn_relu_mask_bytes says 0 then) and "
                         "4-byte alignment", C);
    BN_DISPATCH_TYPED(bn_train_launch, type, vec, act, y, relu_mask, mean, invstd, running_mean, running_var, x, residual, gamma,
                      beta, rows, C, eps, momentum, counter, acc, stream);
}

template <int VEC, int ACT, typename T>
static void bn_infer_launch(void *y, const void *x, const void *residual, const float *gamma,
                            const float *beta, const float *running_mean, const float *running_var,
                            int rows, int C, float eps, cudaStream_t stream) {
    bn_shape s = bn_shape_of(C, VEC);
    int threads = s.lanes * s.tile_cols, unroll = BN_ROW_UNROLL(T);
    dim3 grid = bn_grid(&s, rows, unroll, bn_resident_blocks((const void *)bn_apply_kernel<VEC, ACT, T>, threads, 0));
    CHECK_CUDA(pdl_launch(bn_apply_kernel<VEC, ACT, T>, grid, dim3((unsigned)threads), stream, (T *)y,
                          (uint32_t *)NULL, (const T *)x, (const T *)residual, gamma, beta, running_mean, running_var, 1, eps, rows, C, s.tile_cols));
}

extern "C" void bn_act_forward_infer(void *y, const void *x, const void *residual,
                                     const float *gamma, const float *beta, const float *running_mean,
                                     const float *running_var, int rows, int C, float eps, act_kind act,
                                     elem_type type, cudaStream_t stream) {
    const char *fn = "bn_act_forward_infer";
    bn_check_sizes(fn, rows, C);
    bn_check_act(fn, act);
    bn_check_type(fn, type);
    if (!y || !x || !gamma || !beta || !running_mean || !running_var)
        kernel_bad_input(fn, "y, x, gamma, beta, running_mean and running_var must be device pointers "
                         "(one is NULL)");
    if (!(eps > 0.0f)) kernel_bad_input(fn, "eps must be > 0 (got %g)", eps);
    int vec = C % 4 == 0 && bn_aligned16(x) && bn_aligned16(y) && bn_aligned16(residual) ? 4 : 1;
    BN_DISPATCH_TYPED(bn_infer_launch, type, vec, act, y, x, residual, gamma, beta, running_mean, running_var, rows, C,
                      eps, stream);
}

/* ---- backward ------------------------------------------------------------------------------
 * g = dy through the activation: masked by y > 0 (ReLU) or times silu'(z) with the
 * pre-activation z = gamma * xhat + beta recomputed from x (SiLU), xhat = (x - mean) * invstd;
 * dbeta = sum g ; dgamma = sum g * xhat ;
 * dx = gamma * invstd * (g - dbeta / rows - xhat * dgamma / rows) ;
 * dresidual = the gradient where the residual joined: g for ReLU and none, dy for SiLU. */

/* silu'(z) = s (1 + z (1 - s)), s = sigmoid(z). */
__device__ __forceinline__ float bn_silu_grad(float z) {
    float s = 1.0f / (1.0f + __expf(-z));
    return s * fmaf(z, 1.0f - s, 1.0f);
}

/* Where a ReLU's backward finds its mask, y > 0 as y was stored (bn_act_backward picks). */
enum { BN_MASK_NONE, BN_MASK_Y, BN_MASK_BITS, BN_MASK_FROM_X };

typedef struct bn_mask_source {
    const void *y;         /* BN_MASK_Y */
    const uint32_t *bits;  /* BN_MASK_BITS */
} bn_mask_source;

/* dy (or the already-masked g_src) at `at`, through the mask that is read (y or bits). */
template <int VEC, int MASK, typename T>
__device__ __forceinline__ void bn_masked_grad(float g[VEC], const T *dy, bn_mask_source mask, size_t at) {
    bn_load<VEC>(g, dy + at);
    if constexpr (MASK == BN_MASK_Y) {
        float out[VEC];
        bn_load<VEC>(out, (const T *)mask.y + at);
#pragma unroll
        for (int j = 0; j < VEC; j++) g[j] = out[j] > 0.0f ? g[j] : 0.0f;
    } else if constexpr (MASK == BN_MASK_BITS) {
        unsigned passed = bn_load_mask_bits<VEC>(mask.bits, at);
#pragma unroll
        for (int j = 0; j < VEC; j++) g[j] = (passed >> j) & 1u ? g[j] : 0.0f;
    }
}

/* With no residual joined, y = relu(gamma * invstd * (x - mean) + beta) as stored, so the mask is
 * x's: the apply kernel's arithmetic, operation for operation, with scale = gamma * invstd. */
template <int MASK, typename T>
__device__ __forceinline__ float bn_masked_from_x(float g, float x, float mean, float scale, float beta) {
    if constexpr (MASK == BN_MASK_FROM_X)
        return bn_stored<T>(bn_activate<ACT_RELU>(fmaf(x - mean, scale, beta), 0.0f)) > 0.0f ? g : 0.0f;
    else return g;
}

/* Through SiLU: g *= silu'(gamma * xhat + beta); xhat is what the caller computed from x. */
template <int ACT>
__device__ __forceinline__ float bn_through_act(float g, float xhat, float gamma, float beta) {
    if constexpr (ACT == ACT_SILU) return g * bn_silu_grad(fmaf(xhat, gamma, beta));
    else return g;
}

template <int VEC, int ACT, int MASK, typename T>
__global__ void __launch_bounds__(BN_THREADS)
bn_backward_reduce_kernel(T *dresidual, float *dgamma, float *dbeta, const T *dy,
                          const T *x, bn_mask_source mask, const float *gamma, const float *beta,
                          const float *mean, const float *invstd, int rows, int C, int tile_cols,
                          int stripes, unsigned *counter, double *acc) {
    constexpr bool needs_affine = ACT == ACT_SILU || MASK == BN_MASK_FROM_X;
    int tid = threadIdx.x, lane = tid / tile_cols, lanes = blockDim.x / tile_cols;
    int c = (blockIdx.x * tile_cols + tid % tile_cols) * VEC;
    float sg[VEC], sgx[VEC];
#pragma unroll
    for (int j = 0; j < VEC; j++) sg[j] = sgx[j] = 0.0f;
    float m[VEC], inv[VEC], ga[VEC], be[VEC], scale[VEC];
    if (c < C) {
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            m[j] = mean[c + j];
            inv[j] = invstd[c + j];
            ga[j] = needs_affine ? gamma[c + j] : 0.0f;
            be[j] = needs_affine ? beta[c + j] : 0.0f;
            scale[j] = ga[j] * inv[j];
        }
    }
    pdl_wait(); /* dy is the output of the kernel before */
    pdl_release();
    if (c < C) {
        size_t stride = (size_t)gridDim.y * lanes, r = (size_t)blockIdx.y * lanes + lane;
        for (; r + (BN_ROW_UNROLL(T) - 1) * stride < (size_t)rows; r += BN_ROW_UNROLL(T) * stride) {
            float g[BN_ROW_UNROLL(T)][VEC], v[BN_ROW_UNROLL(T)][VEC];
#pragma unroll
            for (int u = 0; u < BN_ROW_UNROLL(T); u++) {
                size_t at = (r + u * stride) * C + c;
                bn_masked_grad<VEC, MASK>(g[u], dy, mask, at);
                bn_load<VEC>(v[u], x + at);
            }
#pragma unroll
            for (int u = 0; u < BN_ROW_UNROLL(T); u++) {
#pragma unroll
                for (int j = 0; j < VEC; j++) g[u][j] = bn_masked_from_x<MASK, T>(g[u][j], v[u][j], m[j], scale[j], be[j]);
                if (dresidual) bn_store<VEC>(dresidual + (r + u * stride) * C + c, g[u]);
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    float xhat = (v[u][j] - m[j]) * inv[j];
                    float gj = bn_through_act<ACT>(g[u][j], xhat, ga[j], be[j]);
                    sg[j] += gj;
                    sgx[j] = fmaf(gj, xhat, sgx[j]);
                }
            }
        }
        for (; r < (size_t)rows; r += stride) {
            float g[VEC], v[VEC];
            size_t at = r * C + c;
            bn_masked_grad<VEC, MASK>(g, dy, mask, at);
            bn_load<VEC>(v, x + at);
#pragma unroll
            for (int j = 0; j < VEC; j++) g[j] = bn_masked_from_x<MASK, T>(g[j], v[j], m[j], scale[j], be[j]);
            if (dresidual) bn_store<VEC>(dresidual + at, g);
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                float xhat = (v[j] - m[j]) * inv[j];
                float gj = bn_through_act<ACT>(g[j], xhat, ga[j], be[j]);
                sg[j] += gj;
                sgx[j] = fmaf(gj, xhat, sgx[j]);
            }
        }
    }
    if (!bn_reduce_and_arrive<VEC>(sg, sgx, c, C, tile_cols, stripes, acc, counter)) return;

    for (int ch = blockIdx.x * tile_cols * VEC + threadIdx.x, end = bn_tile_end(tile_cols, VEC, C); ch < end;
         ch += blockDim.x) {
        double s1, s2;
        bn_take_sums(&s1, &s2, ch, C, stripes, acc);
        dbeta[ch] = (float)s1;
        dgamma[ch] = (float)s2;
    }
    if (threadIdx.x == 0) counter[blockIdx.x] = 0u;
}

/* g comes from g_src: dresidual, already masked (MASK is then BN_MASK_NONE), or dy through the
 * mask; with SiLU from dy through silu'. */
template <int VEC, int ACT, int MASK, typename T>
__global__ void __launch_bounds__(BN_THREADS)
bn_backward_dx_kernel(T *dx, const T *g_src, bn_mask_source mask, const T *x,
                      const float *gamma, const float *beta, const float *mean, const float *invstd,
                      const float *dgamma, const float *dbeta, int rows, int C, int tile_cols) {
    constexpr bool needs_beta = ACT == ACT_SILU || MASK == BN_MASK_FROM_X;
    int tid = threadIdx.x, lane = tid / tile_cols, lanes = blockDim.x / tile_cols;
    int c = (blockIdx.x * tile_cols + tid % tile_cols) * VEC;
    if (c >= C) return;
    float m[VEC], inv[VEC], k[VEC], mean_g[VEC], mean_gx[VEC], ga[VEC], be[VEC];
    float inv_rows = 1.0f / (float)rows;
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        m[j] = mean[c + j];
        inv[j] = invstd[c + j];
        ga[j] = gamma[c + j];
        be[j] = needs_beta ? beta[c + j] : 0.0f;
        k[j] = ga[j] * inv[j]; /* also the forward's scale, for the mask from x */
    }
    pdl_wait(); /* the reduce kernel before wrote dgamma, dbeta and g_src */
    pdl_release();
#pragma unroll
    for (int j = 0; j < VEC; j++) {
        mean_g[j] = dbeta[c + j] * inv_rows;
        mean_gx[j] = dgamma[c + j] * inv_rows;
    }
    size_t stride = (size_t)gridDim.y * lanes, r = (size_t)blockIdx.y * lanes + lane;
    for (; r + (BN_ROW_UNROLL(T) - 1) * stride < (size_t)rows; r += BN_ROW_UNROLL(T) * stride) {
        float g[BN_ROW_UNROLL(T)][VEC], v[BN_ROW_UNROLL(T)][VEC];
#pragma unroll
        for (int u = 0; u < BN_ROW_UNROLL(T); u++) {
            size_t at = (r + u * stride) * C + c;
            bn_masked_grad<VEC, MASK>(g[u], g_src, mask, at);
            bn_load<VEC>(v[u], x + at);
        }
#pragma unroll
        for (int u = 0; u < BN_ROW_UNROLL(T); u++) {
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                float gm = bn_masked_from_x<MASK, T>(g[u][j], v[u][j], m[j], k[j], be[j]);
                float xhat = (v[u][j] - m[j]) * inv[j];
                float gj = bn_through_act<ACT>(gm, xhat, ga[j], be[j]);
                v[u][j] = k[j] * (gj - mean_g[j] - xhat * mean_gx[j]);
            }
            bn_store<VEC>(dx + (r + u * stride) * C + c, v[u]);
        }
    }
    for (; r < (size_t)rows; r += stride) {
        float g[VEC], v[VEC];
        size_t at = r * C + c;
        bn_masked_grad<VEC, MASK>(g, g_src, mask, at);
        bn_load<VEC>(v, x + at);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            float gm = bn_masked_from_x<MASK, T>(g[j], v[j], m[j], k[j], be[j]);
            float xhat = (v[j] - m[j]) * inv[j];
            float gj = bn_through_act<ACT>(gm, xhat, ga[j], be[j]);
            v[j] = k[j] * (gj - mean_g[j] - xhat * mean_gx[j]);
        }
        bn_store<VEC>(dx + at, v);
    }
}

template <int VEC, int ACT, int MASK, typename T>
static void bn_backward_launch_masked(T *dx, T *dresidual, float *dgamma, float *dbeta, const T *dy, const T *x,
                                      bn_mask_source mask, const float *gamma, const float *beta, const float *mean,
                                      const float *invstd, int rows, int C, unsigned *counter, double *acc,
                                      cudaStream_t stream) {
    bn_shape s = bn_shape_of(C, VEC);
    int threads = s.lanes * s.tile_cols, unroll = BN_ROW_UNROLL(T);
    dim3 block((unsigned)threads);
    dim3 reduce_grid = bn_grid(&s, rows, unroll,
                               bn_resident_blocks((const void *)bn_backward_reduce_kernel<VEC, ACT, MASK, T>,
                                                  threads, BN_REDUCE_BLOCKS_PER_SM));
    int stripes = bn_stripes(reduce_grid);
    CHECK_CUDA(pdl_launch(bn_backward_reduce_kernel<VEC, ACT, MASK, T>, reduce_grid, block, stream, dresidual, dgamma,
                          dbeta, dy, x, mask, gamma, beta, mean, invstd, rows, C, s.tile_cols, stripes, counter,
                          acc));
    /* Once dresidual holds the masked dy (ReLU, none), the dx pass reads it instead of dy and the
     * mask; with SiLU dresidual is dy itself and the dx pass goes through silu' again. */
    if (dresidual && ACT != ACT_SILU) {
        dim3 dx_grid = bn_grid(&s, rows, unroll, bn_resident_blocks(
                                   (const void *)bn_backward_dx_kernel<VEC, ACT, BN_MASK_NONE, T>, threads, 0));
        CHECK_CUDA(pdl_launch(bn_backward_dx_kernel<VEC, ACT, BN_MASK_NONE, T>, dx_grid, block, stream, dx,
                              (const T *)dresidual, mask, x, gamma, beta, mean, invstd, (const float *)dgamma,
                              (const float *)dbeta, rows, C, s.tile_cols));
    } else {
        dim3 dx_grid = bn_grid(&s, rows, unroll,
                               bn_resident_blocks((const void *)bn_backward_dx_kernel<VEC, ACT, MASK, T>, threads, 0));
        CHECK_CUDA(pdl_launch(bn_backward_dx_kernel<VEC, ACT, MASK, T>, dx_grid, block, stream, dx, dy, mask, x, gamma,
                              beta, mean, invstd, (const float *)dgamma, (const float *)dbeta, rows, C,
                              s.tile_cols));
    }
}

template <int VEC, int ACT, typename T>
static void bn_backward_launch(void *dx, void *dresidual, float *dgamma, float *dbeta, const void *dy, const void *x,
                               bn_mask_source mask, int mask_kind, const float *gamma, const float *beta,
                               const float *mean, const float *invstd, int rows, int C, unsigned *counter,
                               double *acc, cudaStream_t stream) {
#define BN_BACKWARD_ARGS (T *)dx, (T *)dresidual, dgamma, dbeta, (const T *)dy, (const T *)x, mask, gamma, beta, \
                         mean, invstd, rows, C, counter, acc, stream
    if constexpr (ACT == ACT_RELU) {
        if (mask_kind == BN_MASK_BITS) bn_backward_launch_masked<VEC, ACT, BN_MASK_BITS, T>(BN_BACKWARD_ARGS);
        else if (mask_kind == BN_MASK_Y) bn_backward_launch_masked<VEC, ACT, BN_MASK_Y, T>(BN_BACKWARD_ARGS);
        else bn_backward_launch_masked<VEC, ACT, BN_MASK_FROM_X, T>(BN_BACKWARD_ARGS);
    } else {
        (void)mask_kind;
        bn_backward_launch_masked<VEC, ACT, BN_MASK_NONE, T>(BN_BACKWARD_ARGS);
    }
#undef BN_BACKWARD_ARGS
}

extern "C" void bn_act_backward(void *dx, void *dresidual, float *dgamma, float *dbeta,
                                const void *dy, const void *x, const void *y, const uint32_t *relu_mask,
                                const float *gamma, const float *beta, const float *mean, const float *invstd,
                                int rows, int C, act_kind act, elem_type type, void *scratch, cudaStream_t stream) {
    const char *fn = "bn_act_backward";
    bn_check_sizes(fn, rows, C);
    bn_check_act(fn, act);
    bn_check_type(fn, type);
    if (!dx || !dgamma || !dbeta || !dy || !x || !gamma || !mean || !invstd)
        kernel_bad_input(fn, "dx, dgamma, dbeta, dy, x, gamma, mean and invstd must be device pointers "
                         "(one is NULL)");
    if (!scratch) kernel_bad_input(fn, "scratch must hold bn_scratch_bytes(rows, C) bytes (got NULL)");
    if (relu_mask && act != ACT_RELU) kernel_bad_input(fn, "relu_mask is for ACT_RELU only (act is %d)", (int)act);
    int mask_kind = act != ACT_RELU ? BN_MASK_NONE : relu_mask ? BN_MASK_BITS : y ? BN_MASK_Y : BN_MASK_FROM_X;
    bn_mask_source mask = {mask_kind == BN_MASK_Y ? y : NULL, relu_mask};
    if ((act == ACT_SILU || mask_kind == BN_MASK_FROM_X) && !beta)
        kernel_bad_input(fn, "beta is needed to recompute the %s from x (got NULL)",
                         act == ACT_SILU ? "SiLU pre-activation" : "ReLU mask");
    unsigned *counter = (unsigned *)scratch;
    double *acc = (double *)((char *)scratch + bn_counter_bytes(C));
    int vec = C % 4 == 0 && bn_aligned16(dx) && bn_aligned16(dresidual) && bn_aligned16(dy) &&
                      bn_aligned16(x) && bn_aligned16(mask.y)
                  ? 4
                  : 1;
    if (relu_mask && (!bn_mask_bits_fit(C, vec) || !kernel_aligned(relu_mask, 4)))
        kernel_bad_input(fn, "relu_mask needs C %% 32 == 0 (got C = %d) and 4-byte alignment", C);
    BN_DISPATCH_TYPED(bn_backward_launch, type, vec, act, dx, dresidual, dgamma, dbeta, dy, x, mask, mask_kind, gamma,
                      beta, mean, invstd, rows, C, counter, acc, stream);
}
