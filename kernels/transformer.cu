/* Row-wise and element-wise kernels of the vision transformers (kernels/transformer.h).
 *   LayerNorm: one warp per row, the row's C <= 512 channels held in registers (lane owns
 *     channels lane, lane + 32, ...: coalesced), two-pass mean/variance from registers (no
 *     E[x^2] - E[x]^2 cancellation). The backward pass writes dx in the same warp and keeps
 *     per-lane dgamma/dbeta sums; each block reduces its warps in a fixed order into one
 *     partial row, and column_sum adds the partial rows in a fixed order: deterministic.
 *   GELU: exact erf form, 4 elements at once (a float4, or 8 bytes of bfloat16) when aligned.
 *   patch_gather: one coalesced write per element; each (patch, kh) reads a contiguous run of
 *     P*Cin floats of the NHWC image.
 *   LayerScale fold/unfold: tiny passes over the [out, in] weights that let the residual add and
 *     gamma ride inside the GEMMs (see layerscale_fold in the header).
 * Each kernel is a template over the typed tensors' element type (float or bfloat16), with float
 * arithmetic either way; the exported launchers pick the instance from elem_type. */
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "kernels/launch.h"
#include "kernels/transformer.h"
#include "kernels/transformer_device.cuh"
#include "kernels/check.h"

#define LN_MAX_C 512
#define LN_ROWS_PER_BLOCK 32   /* backward: rows whose gradients one block sums into a partial */
#define EW_THREADS 256

typedef __nv_bfloat16 bf16;

static unsigned ew_blocks(size_t n) {
    size_t b = (n + EW_THREADS - 1) / EW_THREADS;
    return (unsigned)(b < 65535u * 16u ? (b ? b : 1) : 65535u * 16u);
}

/* ---- LayerNorm ------------------------------------------------------------------------------ */

/* Offset of row `row` of cat([first, x]) (first != NULL) or of x. *in_first says which buffer. */
__device__ __forceinline__ size_t cat_row(int row, int tokens, int C, int has_first, int *in_first) {
    if (!has_first) {
        *in_first = 0;
        return (size_t)row * C;
    }
    int b = row / tokens, t = row - b * tokens;
    *in_first = t == 0;
    return t == 0 ? (size_t)b * C : ((size_t)b * (tokens - 1) + t - 1) * C;
}

template <int K, typename TY>
__global__ void __launch_bounds__(TF_THREADS)
layernorm_forward_kernel(TY *y, float *mean_out, float *rstd_out, const float *first, const float *x, int tokens,
                         const float *gamma, const float *beta, int rows, int C, float eps) {
    int row = blockIdx.x * TF_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    int in_first;
    size_t offset = cat_row(row, tokens, C, first != NULL, &in_first);
    const float *src = (in_first ? first : x) + offset;
    float v[K], sum = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int c = lane + 32 * k;
        v[k] = c < C ? src[c] : 0.0f;
        sum += v[k];
    }
    float mean = warp_sum(sum) / C, sq = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++) {
        float d = lane + 32 * k < C ? v[k] - mean : 0.0f;
        sq += d * d;
    }
    float rstd = rsqrtf(warp_sum(sq) / C + eps);
    TY *dst = y + (size_t)row * C;
#pragma unroll
    for (int k = 0; k < K; k++) {
        int c = lane + 32 * k;
        if (c < C) put(dst + c, (v[k] - mean) * rstd * gamma[c] + beta[c]);
    }
    if (lane == 0) mean_out[row] = mean, rstd_out[row] = rstd;
}

template <int K, typename TD>
__global__ void __launch_bounds__(TF_THREADS)
layernorm_backward_kernel(float *dfirst, bf16 *dfirst_half, float *dx, bf16 *dx_half, float *partial, const TD *dy,
                          const float *first, const float *x, int tokens, const float *mean, const float *rstd,
                          const float *gamma, int rows, int C, int accumulate_first, int accumulate_x) {
    __shared__ float part[TF_WARPS][2][32 * K];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float dg[K], db[K];
#pragma unroll
    for (int k = 0; k < K; k++) dg[k] = db[k] = 0.0f;
    int begin = blockIdx.x * LN_ROWS_PER_BLOCK, end = min(begin + LN_ROWS_PER_BLOCK, rows);
    for (int row = begin + warp; row < end; row += TF_WARPS) {
        int in_first;
        size_t offset = cat_row(row, tokens, C, first != NULL, &in_first);
        const float *src = (in_first ? first : x) + offset;
        const TD *g = dy + (size_t)row * C;
        float mu = mean[row], r = rstd[row], xh[K], gg[K], s1 = 0.0f, s2 = 0.0f;
#pragma unroll
        for (int k = 0; k < K; k++) {
            int c = lane + 32 * k;
            xh[k] = gg[k] = 0.0f;
            if (c < C) {
                float d = to_float(g[c]);
                xh[k] = (src[c] - mu) * r;
                dg[k] += d * xh[k];
                db[k] += d;
                gg[k] = d * gamma[c];
                s1 += gg[k];
                s2 += gg[k] * xh[k];
            }
        }
        s1 = warp_sum(s1) / C;
        s2 = warp_sum(s2) / C;
        float *dst = (in_first ? dfirst : dx) + offset;
        bf16 *mirror = in_first ? dfirst_half : dx_half;
        if (mirror) mirror += offset;
        int accumulate = in_first ? accumulate_first : accumulate_x;
#pragma unroll
        for (int k = 0; k < K; k++) {
            int c = lane + 32 * k;
            if (c < C) {
                float v = r * (gg[k] - s1 - xh[k] * s2);
                v = accumulate ? dst[c] + v : v;
                dst[c] = v;
                if (mirror) mirror[c] = __float2bfloat16_rn(v);
            }
        }
    }
#pragma unroll
    for (int k = 0; k < K; k++) part[warp][0][lane + 32 * k] = dg[k], part[warp][1][lane + 32 * k] = db[k];
    __syncthreads();
    for (int i = threadIdx.x; i < 2 * C; i += blockDim.x) {
        int which = i / C, c = i - which * C;
        float s = 0.0f;
        for (int w = 0; w < TF_WARPS; w++) s += part[w][which][c];
        partial[(size_t)blockIdx.x * 2 * C + i] = s;
    }
}

static void check_type(const char *fn, elem_type type) {
    if (type != ELEM_F32 && type != ELEM_BF16) kernel_bad_input(fn, "element type %d: expected ELEM_F32 or ELEM_BF16", (int)type);
}

static int ln_lanes_per_row(const char *fn, int C) {
    if (C < 1 || C > LN_MAX_C) kernel_bad_input(fn, "C = %d: expected 1..%d channels", C, LN_MAX_C);
    int k = (C + 31) / 32;
    return k <= 2 ? 2 : k <= 4 ? 4 : k <= 6 ? 6 : k <= 8 ? 8 : 16;
}

template <typename TY>
static void ln_forward_typed(int k, unsigned blocks, TY *y, float *mean, float *rstd, const float *first,
                             const float *x, int tokens, const float *gamma, const float *beta, int rows, int C,
                             float eps, cudaStream_t stream) {
#define LN_FWD(K) layernorm_forward_kernel<K, TY><<<blocks, TF_THREADS, 0, stream>>>(y, mean, rstd, first, x, tokens, gamma, beta, rows, C, eps)
    switch (k) {
    case 2: LN_FWD(2); break;
    case 4: LN_FWD(4); break;
    case 6: LN_FWD(6); break;
    case 8: LN_FWD(8); break;
    default: LN_FWD(16); break;
    }
#undef LN_FWD
    CHECK_LAUNCH();
}

static void ln_forward_launch(const char *fn, void *y, float *mean, float *rstd, const float *first,
                              const float *x, int tokens, const float *gamma, const float *beta, int rows,
                              int C, float eps, elem_type type, cudaStream_t stream) {
    int k = ln_lanes_per_row(fn, C);
    check_type(fn, type);
    if (rows < 0) kernel_bad_input(fn, "rows = %d: expected >= 0", rows);
    if (first && (tokens < 1 || rows % tokens)) kernel_bad_input(fn, "rows %d are not groups of %d tokens", rows, tokens);
    if (rows == 0) return;
    unsigned blocks = (unsigned)((rows + TF_WARPS - 1) / TF_WARPS);
    if (type == ELEM_BF16)
        ln_forward_typed(k, blocks, (bf16 *)y, mean, rstd, first, x, tokens, gamma, beta, rows, C, eps, stream);
    else
        ln_forward_typed(k, blocks, (float *)y, mean, rstd, first, x, tokens, gamma, beta, rows, C, eps, stream);
}

extern "C" void layernorm_forward(void *y, float *mean, float *rstd, const float *x, const float *gamma,
                                  const float *beta, int rows, int C, float eps, elem_type type,
                                  cudaStream_t stream) {
    ln_forward_launch("layernorm_forward", y, mean, rstd, NULL, x, 1, gamma, beta, rows, C, eps, type, stream);
}

extern "C" void layernorm_cat_forward(void *y, float *mean, float *rstd, const float *first, const float *x,
                                      int tokens, const float *gamma, const float *beta, int rows, int C,
                                      float eps, elem_type type, cudaStream_t stream) {
    if (!first) kernel_bad_input("layernorm_cat_forward", "first is NULL");
    ln_forward_launch("layernorm_cat_forward", y, mean, rstd, first, x, tokens, gamma, beta, rows, C, eps, type,
                      stream);
}

extern "C" size_t layernorm_backward_scratch_floats(int rows, int C) {
    return (size_t)((rows + LN_ROWS_PER_BLOCK - 1) / LN_ROWS_PER_BLOCK) * 2 * (size_t)C;
}

/* The bfloat16 copies of dx and dfirst, when asked for. */
typedef struct ln_halves {
    bf16 *first, *x;
} ln_halves;

template <typename TD>
static void ln_backward_typed(int k, unsigned blocks, float *dfirst, float *dx, ln_halves halves, float *scratch,
                              const TD *dy, const float *first, const float *x, int tokens, const float *mean,
                              const float *rstd, const float *gamma, int rows, int C, int accumulate_first,
                              int accumulate_x, cudaStream_t stream) {
#define LN_BWD(K) layernorm_backward_kernel<K, TD><<<blocks, TF_THREADS, 0, stream>>>(dfirst, halves.first, dx, halves.x, scratch, dy, first, x, tokens, mean, rstd, gamma, rows, C, accumulate_first, accumulate_x)
    switch (k) {
    case 2: LN_BWD(2); break;
    case 4: LN_BWD(4); break;
    case 6: LN_BWD(6); break;
    case 8: LN_BWD(8); break;
    default: LN_BWD(16); break;
    }
#undef LN_BWD
    CHECK_LAUNCH();
}

static void ln_backward_launch(const char *fn, float *dfirst, void *dfirst_half, float *dx, void *dx_half,
                               float *dgamma, float *dbeta, const void *dy, const float *first, const float *x,
                               int tokens, const float *mean, const float *rstd, const float *gamma, int rows,
                               int C, int accumulate_first, int accumulate_x, elem_type type, float *scratch,
                               cudaStream_t stream) {
    int k = ln_lanes_per_row(fn, C);
    check_type(fn, type);
    if (rows < 1) kernel_bad_input(fn, "rows = %d: expected >= 1", rows);
    if (first && (tokens < 1 || rows % tokens)) kernel_bad_input(fn, "rows %d are not groups of %d tokens", rows, tokens);
    unsigned blocks = (unsigned)((rows + LN_ROWS_PER_BLOCK - 1) / LN_ROWS_PER_BLOCK);
    ln_halves halves = {(bf16 *)dfirst_half, (bf16 *)dx_half};
    if (type == ELEM_BF16)
        ln_backward_typed(k, blocks, dfirst, dx, halves, scratch, (const bf16 *)dy, first, x, tokens, mean, rstd,
                          gamma, rows, C, accumulate_first, accumulate_x, stream);
    else
        ln_backward_typed(k, blocks, dfirst, dx, halves, scratch, (const float *)dy, first, x, tokens, mean, rstd,
                          gamma, rows, C, accumulate_first, accumulate_x, stream);
    column_sum(dgamma, scratch, (int)blocks, C, 2 * (size_t)C, stream);
    column_sum(dbeta, scratch + C, (int)blocks, C, 2 * (size_t)C, stream);
}

extern "C" void layernorm_backward(float *dx, void *dx_half, float *dgamma, float *dbeta, const void *dy,
                                   const float *x, const float *mean, const float *rstd, const float *gamma,
                                   int rows, int C, int accumulate, elem_type type, float *scratch,
                                   cudaStream_t stream) {
    ln_backward_launch("layernorm_backward", NULL, NULL, dx, dx_half, dgamma, dbeta, dy, NULL, x, 1, mean, rstd,
                       gamma, rows, C, 0, accumulate, type, scratch, stream);
}

extern "C" void layernorm_cat_backward(float *dfirst, void *dfirst_half, float *dx, void *dx_half, float *dgamma,
                                       float *dbeta, const void *dy, const float *first, const float *x,
                                       int tokens, const float *mean, const float *rstd, const float *gamma,
                                       int rows, int C, int accumulate_first, int accumulate_x, elem_type type,
                                       float *scratch, cudaStream_t stream) {
    if (!first || !dfirst) kernel_bad_input("layernorm_cat_backward", "first and dfirst must be given");
    ln_backward_launch("layernorm_cat_backward", dfirst, dfirst_half, dx, dx_half, dgamma, dbeta, dy, first, x,
                       tokens, mean, rstd, gamma, rows, C, accumulate_first, accumulate_x, type, scratch, stream);
}

/* ---- GELU ------------------------------------------------------------------------------------- */

__device__ __forceinline__ float gelu_value(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }

__device__ __forceinline__ float gelu_slope(float x) {
    float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
    return cdf + x * pdf;
}

/* count = n / VEC groups of VEC elements. */
template <int VEC, typename T>
__global__ void gelu_forward_kernel(T *y, const T *x, size_t count) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float v[VEC];
        load_vec<VEC>(v, x + i * VEC);
#pragma unroll
        for (int k = 0; k < VEC; k++) v[k] = gelu_value(v[k]);
        store_vec<VEC>(y + i * VEC, v);
    }
}

template <int VEC, typename T>
__global__ void gelu_backward_kernel(T *dx, const T *dy, const T *x, size_t count) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float v[VEC], g[VEC];
        load_vec<VEC>(v, x + i * VEC);
        load_vec<VEC>(g, dy + i * VEC);
#pragma unroll
        for (int k = 0; k < VEC; k++) g[k] *= gelu_slope(v[k]);
        store_vec<VEC>(dx + i * VEC, g);
    }
}

/* Four elements at once: 16 bytes of float, 8 of bfloat16, every pointer aligned to that. */
static int all_vec4(size_t n, elem_type type, const void *a, const void *b, const void *c) {
    unsigned bytes = 4u * (unsigned)elem_bytes(type);
    return n % 4 == 0 && kernel_aligned(a, bytes) && kernel_aligned(b, bytes) && kernel_aligned(c, bytes);
}

template <typename T>
static void gelu_forward_typed(T *y, const T *x, size_t n, int vec4, cudaStream_t stream) {
    if (vec4) gelu_forward_kernel<4, T><<<ew_blocks(n / 4), EW_THREADS, 0, stream>>>(y, x, n / 4);
    else gelu_forward_kernel<1, T><<<ew_blocks(n), EW_THREADS, 0, stream>>>(y, x, n);
    CHECK_LAUNCH();
}

template <typename T>
static void gelu_backward_typed(T *dx, const T *dy, const T *x, size_t n, int vec4, cudaStream_t stream) {
    if (vec4) gelu_backward_kernel<4, T><<<ew_blocks(n / 4), EW_THREADS, 0, stream>>>(dx, dy, x, n / 4);
    else gelu_backward_kernel<1, T><<<ew_blocks(n), EW_THREADS, 0, stream>>>(dx, dy, x, n);
    CHECK_LAUNCH();
}

extern "C" void gelu_forward(void *y, const void *x, size_t n, elem_type type, cudaStream_t stream) {
    check_type("gelu_forward", type);
    if (n == 0) return;
    int vec4 = all_vec4(n, type, y, x, NULL);
    if (type == ELEM_BF16) gelu_forward_typed((bf16 *)y, (const bf16 *)x, n, vec4, stream);
    else gelu_forward_typed((float *)y, (const float *)x, n, vec4, stream);
}

extern "C" void gelu_backward(void *dx, const void *dy, const void *x, size_t n, elem_type type,
                              cudaStream_t stream) {
    check_type("gelu_backward", type);
    if (n == 0) return;
    int vec4 = all_vec4(n, type, dx, dy, x);
    if (type == ELEM_BF16) gelu_backward_typed((bf16 *)dx, (const bf16 *)dy, (const bf16 *)x, n, vec4, stream);
    else gelu_backward_typed((float *)dx, (const float *)dy, (const float *)x, n, vec4, stream);
}

/* ---- patches, broadcasts, sums over the batch ---------------------------------------------- */

template <typename T>
__global__ void patch_gather_kernel(T *patches, const float *image, int H, int W, int Cin, int P, size_t total) {
    int run = P * Cin, width = P * run, grid_w = W / P, grid_h = H / P;
    for (size_t idx = blockIdx.x * (size_t)blockDim.x + threadIdx.x; idx < total;
         idx += (size_t)gridDim.x * blockDim.x) {
        size_t patch = idx / width;
        int e = (int)(idx - patch * width), kh = e / run, within = e - kh * run;
        int px = (int)(patch % grid_w), py = (int)((patch / grid_w) % grid_h);
        size_t b = patch / ((size_t)grid_w * grid_h);
        put(patches + idx, image[((b * H + (size_t)py * P + kh) * W + (size_t)px * P) * Cin + within]);
    }
}

extern "C" void patch_gather(void *patches, const float *image, int B, int H, int W, int Cin, int P,
                             elem_type type, cudaStream_t stream) {
    check_type("patch_gather", type);
    if (B < 1 || Cin < 1 || P < 1 || H < P || W < P || H % P || W % P)
        kernel_bad_input("patch_gather", "image %dx%d (batch %d, %d channels) does not split into %dx%d patches",
                         H, W, B, Cin, P, P);
    size_t total = (size_t)B * H * W * Cin;
    if (type == ELEM_BF16)
        patch_gather_kernel<<<ew_blocks(total), EW_THREADS, 0, stream>>>((bf16 *)patches, image, H, W, Cin, P, total);
    else
        patch_gather_kernel<<<ew_blocks(total), EW_THREADS, 0, stream>>>((float *)patches, image, H, W, Cin, P, total);
    CHECK_LAUNCH();
}

__global__ void broadcast_kernel(float *x, const float *v, size_t n, size_t total, int add) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x)
        x[i] = add ? x[i] + v[i % n] : v[i % n];
}

extern "C" void broadcast_add(float *x, const float *v, int batch, size_t n, cudaStream_t stream) {
    size_t total = (size_t)batch * n;
    if (total == 0) return;
    broadcast_kernel<<<ew_blocks(total), EW_THREADS, 0, stream>>>(x, v, n, total, 1);
    CHECK_LAUNCH();
}

extern "C" void broadcast_copy(float *y, const float *v, int batch, size_t n, cudaStream_t stream) {
    size_t total = (size_t)batch * n;
    if (total == 0) return;
    broadcast_kernel<<<ew_blocks(total), EW_THREADS, 0, stream>>>(y, v, n, total, 0);
    CHECK_LAUNCH();
}

/* 32 columns per block, 8 threads down the rows of each; then the 8 sums in order. */
__global__ void column_sum_kernel(float *out, const float *in, int rows, int cols, size_t ld) {
    __shared__ float sums[8][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    float acc = 0.0f;
    if (c < cols)
        for (int r = threadIdx.y; r < rows; r += 8) acc += in[(size_t)r * ld + c];
    sums[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        float s = 0.0f;
        for (int i = 0; i < 8; i++) s += sums[i][threadIdx.x];
        out[c] = s;
    }
}

extern "C" void column_sum(float *out, const float *in, int rows, int cols, size_t ld, cudaStream_t stream) {
    if (rows < 1 || cols < 1 || ld < (size_t)cols)
        kernel_bad_input("column_sum", "rows %d, cols %d, ld %zu: expected rows, cols >= 1 and ld >= cols", rows,
                         cols, ld);
    column_sum_kernel<<<(unsigned)((cols + 31) / 32), dim3(32, 8), 0, stream>>>(out, in, rows, cols, ld);
    CHECK_LAUNCH();
}

/* ---- LayerScale ----------------------------------------------------------------------------- */

template <typename T>
__global__ void layerscale_fold_kernel(T *ws, float *bs, const float *w, const float *b, const float *gamma, int out,
                                       int in) {
    size_t total = (size_t)out * in;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        put(ws + i, gamma[i / in] * w[i]);
        if (i < (size_t)out) bs[i] = gamma[i] * b[i];
    }
}

extern "C" void layerscale_fold(void *ws, float *bs, const float *w, const float *b, const float *gamma, int out,
                                int in, elem_type type, cudaStream_t stream) {
    check_type("layerscale_fold", type);
    if (out < 1 || in < 1) kernel_bad_input("layerscale_fold", "weights [%d, %d]: expected positive sizes", out, in);
    size_t total = (size_t)out * in;
    if (type == ELEM_BF16)
        layerscale_fold_kernel<<<ew_blocks(total), EW_THREADS, 0, stream>>>((bf16 *)ws, bs, w, b, gamma, out, in);
    else
        layerscale_fold_kernel<<<ew_blocks(total), EW_THREADS, 0, stream>>>((float *)ws, bs, w, b, gamma, out, in);
    CHECK_LAUNCH();
}

/* One warp per output feature. */
template <typename T>
__global__ void layerscale_unfold_kernel(T *dw, float *db, float *dgamma, const float *g, const float *s,
                                         const float *w, const float *b, const float *gamma, int out, int in) {
    int o = blockIdx.x * TF_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (o >= out) return;
    const float *g_row = g + (size_t)o * in, *w_row = w + (size_t)o * in;
    T *dw_row = dw + (size_t)o * in;
    float scale = gamma[o], dot = 0.0f;
    for (int k = lane; k < in; k += 32) {
        float v = g_row[k];
        dot += w_row[k] * v;
        put(dw_row + k, scale * v);
    }
    dot = warp_sum(dot);
    if (lane == 0) {
        dgamma[o] = dot + b[o] * s[o];
        db[o] = scale * s[o];
    }
}

extern "C" void layerscale_unfold_backward(void *dw, float *db, float *dgamma, const float *g, const float *s,
                                           const float *w, const float *b, const float *gamma, int out, int in,
                                           elem_type type, cudaStream_t stream) {
    check_type("layerscale_unfold_backward", type);
    if (out < 1 || in < 1)
        kernel_bad_input("layerscale_unfold_backward", "weights [%d, %d]: expected positive sizes", out, in);
    unsigned blocks = (unsigned)((out + TF_WARPS - 1) / TF_WARPS);
    if (type == ELEM_BF16)
        layerscale_unfold_kernel<<<blocks, TF_THREADS, 0, stream>>>((bf16 *)dw, db, dgamma, g, s, w, b, gamma, out, in);
    else
        layerscale_unfold_kernel<<<blocks, TF_THREADS, 0, stream>>>((float *)dw, db, dgamma, g, s, w, b, gamma, out, in);
    CHECK_LAUNCH();
}
