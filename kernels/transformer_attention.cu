/* Attention kernels of CaiT (kernels/transformer.h): talking-heads mixing fused with the softmax,
 * and class attention.
 *   Talking heads: one warp per query row (b, i) covers all H heads at once, since the 4x4 mixes
 *     run across heads at each key j. Forward: pass 1 walks the keys with an online max/sum per
 *     head (one exp per element), pass 2 re-reads the row (L1-resident: H*N floats) and writes
 *     attn. The backward pass recomputes p from the logits and the saved row stats (max, 1/sum),
 *     so no [B, H, N, N] tensor besides the logits is kept per block. Pass 1 of the backward
 *     gets the softmax dot products, pass 2 writes dL/dlogits over dL/dattn in place (each lane
 *     reads a key's values before writing them). Mixing-weight gradients are per-lane sums,
 *     reduced per block in a fixed order into partial rows, then summed in a fixed order.
 *   Class attention: one block per (b, h); a single query, so the scores fit in shared memory.
 * Each kernel is a template over the typed tensors' element type (float or bfloat16): logits,
 * attention weights and their gradients, q, kv and the outputs are read and written in it while
 * the mixes, the softmax and every sum run in float. */
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "kernels/launch.h"
#include "kernels/transformer.h"
#include "kernels/transformer_device.cuh"
#include "kernels/check.h"

#define TH_ROWS_PER_BLOCK (TF_WARPS * 4)  /* backward: query rows one block sums gradients over */
#define TH_REDUCE_THREADS 256
#define CA_THREADS 128
#define CA_MAX_SMEM (48 * 1024)

typedef __nv_bfloat16 bf16;

/* ---- talking heads ---------------------------------------------------------------------------- */

template <int H>
__device__ __forceinline__ void th_mix(float out[H], const float w[H * H], const float b[H], const float in[H]) {
#pragma unroll
    for (int o = 0; o < H; o++) {
        float acc = b[o];
#pragma unroll
        for (int h = 0; h < H; h++) acc = fmaf(w[o * H + h], in[h], acc);
        out[o] = acc;
    }
}

template <int H>
__device__ __forceinline__ void th_load_params(float Wl[H * H], float Bl[H], float Ww[H * H], float Bw[H],
                                               const float *wl, const float *bl, const float *ww,
                                               const float *bw) {
#pragma unroll
    for (int i = 0; i < H * H; i++) Wl[i] = wl[i], Ww[i] = ww[i];
#pragma unroll
    for (int i = 0; i < H; i++) Bl[i] = bl[i], Bw[i] = bw[i];
}

/* stats_known: take max and 1/sum from stats instead of computing (and writing) them. */
template <int H, typename T>
__global__ void __launch_bounds__(TF_THREADS)
talking_heads_forward_kernel(T *attn, float *stats, const T *logits, const float *wl, const float *bl,
                             const float *ww, const float *bw, int B, int N, int stats_known) {
    int row = blockIdx.x * TF_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= B * N) return;
    float Wl[H * H], Bl[H], Ww[H * H], Bw[H];
    th_load_params<H>(Wl, Bl, Ww, Bw, wl, bl, ww, bw);
    int b = row / N, i = row - b * N;
    size_t hs = (size_t)N * N, base = ((size_t)b * H * N + i) * N, stat0 = (size_t)b * H * N + i;
    float m[H], inv[H];
    if (stats_known) {
#pragma unroll
        for (int h = 0; h < H; h++) m[h] = stats[2 * (stat0 + (size_t)h * N)], inv[h] = stats[2 * (stat0 + (size_t)h * N) + 1];
    } else {
        float s[H];
#pragma unroll
        for (int h = 0; h < H; h++) m[h] = -INFINITY, s[h] = 0.0f;
        for (int j = lane; j < N; j += 32) {
            float l[H], z[H];
#pragma unroll
            for (int h = 0; h < H; h++) l[h] = to_float(logits[base + h * hs + j]);
            th_mix<H>(z, Wl, Bl, l);
#pragma unroll
            for (int h = 0; h < H; h++) {
                if (z[h] > m[h]) {
                    s[h] = s[h] * __expf(m[h] - z[h]) + 1.0f;
                    m[h] = z[h];
                } else {
                    s[h] += __expf(z[h] - m[h]);
                }
            }
        }
#pragma unroll
        for (int h = 0; h < H; h++) {
            for (int o = 16; o > 0; o /= 2) {
                float om = __shfl_xor_sync(0xffffffffu, m[h], o), os = __shfl_xor_sync(0xffffffffu, s[h], o);
                float mn = fmaxf(m[h], om);
                float mine = m[h] == -INFINITY ? 0.0f : s[h] * __expf(m[h] - mn);
                float theirs = om == -INFINITY ? 0.0f : os * __expf(om - mn);
                s[h] = mine + theirs;
                m[h] = mn;
            }
            inv[h] = 1.0f / s[h];
            if (lane == 0) stats[2 * (stat0 + (size_t)h * N)] = m[h], stats[2 * (stat0 + (size_t)h * N) + 1] = inv[h];
        }
    }
    for (int j = lane; j < N; j += 32) {
        float l[H], z[H], p[H], a[H];
#pragma unroll
        for (int h = 0; h < H; h++) l[h] = to_float(logits[base + h * hs + j]);
        th_mix<H>(z, Wl, Bl, l);
#pragma unroll
        for (int h = 0; h < H; h++) p[h] = __expf(z[h] - m[h]) * inv[h];
        th_mix<H>(a, Ww, Bw, p);
#pragma unroll
        for (int h = 0; h < H; h++) put(attn + base + h * hs + j, a[h]);
    }
}

/* Partial row per block: [dwl (H*H) | dbl (H) | dww (H*H) | dbw (H)]. */
template <int H, typename T>
__global__ void __launch_bounds__(TF_THREADS)
talking_heads_backward_kernel(T *grad, float *partial, const T *logits, const float *stats,
                              const float *wl, const float *bl, const float *ww, const float *bw, int B, int N) {
    constexpr int P = 2 * H * H + 2 * H;
    __shared__ float part[TF_WARPS][P];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float Wl[H * H], Bl[H], Ww[H * H], Bw[H];
    th_load_params<H>(Wl, Bl, Ww, Bw, wl, bl, ww, bw);
    float acc[P];
#pragma unroll
    for (int t = 0; t < P; t++) acc[t] = 0.0f;
    constexpr int OWL = 0, OBL = H * H, OWW = H * H + H, OBW = 2 * H * H + H; /* offsets in acc */
    size_t hs = (size_t)N * N;
    int begin = blockIdx.x * TH_ROWS_PER_BLOCK, end = min(begin + TH_ROWS_PER_BLOCK, B * N);
    for (int row = begin + warp; row < end; row += TF_WARPS) {
        int b = row / N, i = row - b * N;
        size_t base = ((size_t)b * H * N + i) * N, stat0 = (size_t)b * H * N + i;
        float m[H], inv[H], dot[H];
#pragma unroll
        for (int h = 0; h < H; h++) {
            m[h] = stats[2 * (stat0 + (size_t)h * N)], inv[h] = stats[2 * (stat0 + (size_t)h * N) + 1];
            dot[h] = 0.0f;
        }
        /* pass 1: dp = ww^T da; dot = sum_j dp p; ww and bw gradients */
        for (int j = lane; j < N; j += 32) {
            float l[H], z[H], p[H], da[H];
#pragma unroll
            for (int h = 0; h < H; h++) l[h] = to_float(logits[base + h * hs + j]), da[h] = to_float(grad[base + h * hs + j]);
            th_mix<H>(z, Wl, Bl, l);
#pragma unroll
            for (int h = 0; h < H; h++) p[h] = __expf(z[h] - m[h]) * inv[h];
#pragma unroll
            for (int o = 0; o < H; o++) {
                acc[OBW + o] += da[o];
#pragma unroll
                for (int h = 0; h < H; h++) acc[OWW + o * H + h] = fmaf(da[o], p[h], acc[OWW + o * H + h]);
            }
#pragma unroll
            for (int h = 0; h < H; h++) {
                float dp = 0.0f;
#pragma unroll
                for (int o = 0; o < H; o++) dp = fmaf(Ww[o * H + h], da[o], dp);
                dot[h] = fmaf(dp, p[h], dot[h]);
            }
        }
#pragma unroll
        for (int h = 0; h < H; h++) dot[h] = warp_sum(dot[h]);
        /* pass 2: dz = p (dp - dot); dl = wl^T dz, written over da; wl and bl gradients */
        for (int j = lane; j < N; j += 32) {
            float l[H], z[H], p[H], da[H], dz[H];
#pragma unroll
            for (int h = 0; h < H; h++) l[h] = to_float(logits[base + h * hs + j]), da[h] = to_float(grad[base + h * hs + j]);
            th_mix<H>(z, Wl, Bl, l);
#pragma unroll
            for (int h = 0; h < H; h++) {
                p[h] = __expf(z[h] - m[h]) * inv[h];
                float dp = 0.0f;
#pragma unroll
                for (int o = 0; o < H; o++) dp = fmaf(Ww[o * H + h], da[o], dp);
                dz[h] = p[h] * (dp - dot[h]);
                acc[OBL + h] += dz[h];
#pragma unroll
                for (int k = 0; k < H; k++) acc[OWL + h * H + k] = fmaf(dz[h], l[k], acc[OWL + h * H + k]);
            }
#pragma unroll
            for (int k = 0; k < H; k++) {
                float dl = 0.0f;
#pragma unroll
                for (int h = 0; h < H; h++) dl = fmaf(Wl[h * H + k], dz[h], dl);
                put(grad + base + k * hs + j, dl);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < P; t++) {
        float v = warp_sum(acc[t]);
        if (lane == 0) part[warp][t] = v;
    }
    __syncthreads();
    for (int t = threadIdx.x; t < P; t += blockDim.x) {
        float s = 0.0f;
        for (int w = 0; w < TF_WARPS; w++) s += part[w][t];
        partial[(size_t)blockIdx.x * P + t] = s;
    }
}

/* One block per mixing parameter: its partials summed in a fixed order. TW: the weights'
 * gradients' element type. */
template <typename TW>
__global__ void __launch_bounds__(TH_REDUCE_THREADS)
talking_heads_param_kernel(TW *dwl, float *dbl, TW *dww, float *dbw, const float *partial, int blocks, int H) {
    __shared__ float red[32];
    int P = 2 * H * H + 2 * H, t = blockIdx.x;
    float s = 0.0f;
    for (int r = threadIdx.x; r < blocks; r += blockDim.x) s += partial[(size_t)r * P + t];
    s = block_reduce(s, red, 0);
    if (threadIdx.x != 0) return;
    if (t < H * H) put(dwl + t, s);
    else if (t < H * H + H) dbl[t - H * H] = s;
    else if (t < 2 * H * H + H) put(dww + t - H * H - H, s);
    else dbw[t - 2 * H * H - H] = s;
}

static void th_check(const char *fn, int B, int H, int N) {
    if (H != 1 && H != 2 && H != 4 && H != 8) kernel_bad_input(fn, "H = %d heads: expected 1, 2, 4 or 8", H);
    if (B < 1 || N < 1 || (long long)B * N > (1ll << 30))
        kernel_bad_input(fn, "B = %d, N = %d: expected positive sizes with B*N < 2^30", B, N);
}

static void type_check(const char *fn, elem_type type) {
    if (type != ELEM_F32 && type != ELEM_BF16) kernel_bad_input(fn, "element type %d: expected ELEM_F32 or ELEM_BF16", (int)type);
}

template <typename T>
static void th_forward_typed(T *attn, float *stats, const T *logits, const float *wl, const float *bl,
                             const float *ww, const float *bw, int B, int H, int N, int stats_known,
                             cudaStream_t stream) {
    unsigned blocks = (unsigned)(((long long)B * N + TF_WARPS - 1) / TF_WARPS);
#define TH_FWD(HH) talking_heads_forward_kernel<HH, T><<<blocks, TF_THREADS, 0, stream>>>(attn, stats, logits, wl, bl, ww, bw, B, N, stats_known)
    switch (H) {
    case 1: TH_FWD(1); break;
    case 2: TH_FWD(2); break;
    case 4: TH_FWD(4); break;
    default: TH_FWD(8); break;
    }
#undef TH_FWD
    CHECK_LAUNCH();
}

static void th_forward_launch(const char *fn, void *attn, float *stats, const void *logits, const float *wl,
                              const float *bl, const float *ww, const float *bw, int B, int H, int N,
                              int stats_known, elem_type type, cudaStream_t stream) {
    th_check(fn, B, H, N);
    type_check(fn, type);
    if (type == ELEM_BF16)
        th_forward_typed((bf16 *)attn, stats, (const bf16 *)logits, wl, bl, ww, bw, B, H, N, stats_known, stream);
    else
        th_forward_typed((float *)attn, stats, (const float *)logits, wl, bl, ww, bw, B, H, N, stats_known, stream);
}

extern "C" void talking_heads_forward(void *attn, float *stats, const void *logits, const float *wl,
                                      const float *bl, const float *ww, const float *bw, int B, int H, int N,
                                      elem_type type, cudaStream_t stream) {
    th_forward_launch("talking_heads_forward", attn, stats, logits, wl, bl, ww, bw, B, H, N, 0, type, stream);
}

extern "C" void talking_heads_recompute(void *attn, const float *stats, const void *logits, const float *wl,
                                        const float *bl, const float *ww, const float *bw, int B, int H, int N,
                                        elem_type type, cudaStream_t stream) {
    th_forward_launch("talking_heads_recompute", attn, (float *)stats, logits, wl, bl, ww, bw, B, H, N, 1, type,
                      stream);
}

extern "C" size_t talking_heads_backward_scratch_floats(int B, int H, int N) {
    size_t blocks = ((size_t)B * N + TH_ROWS_PER_BLOCK - 1) / TH_ROWS_PER_BLOCK;
    return blocks * (size_t)(2 * H * H + 2 * H);
}

template <typename T>
static void th_backward_typed(T *grad, T *dwl, float *dbl, T *dww, float *dbw, const T *logits, const float *stats,
                              const float *wl, const float *bl, const float *ww, const float *bw, int B, int H,
                              int N, float *scratch, cudaStream_t stream) {
    unsigned blocks = (unsigned)(((long long)B * N + TH_ROWS_PER_BLOCK - 1) / TH_ROWS_PER_BLOCK);
#define TH_BWD(HH) talking_heads_backward_kernel<HH, T><<<blocks, TF_THREADS, 0, stream>>>(grad, scratch, logits, stats, wl, bl, ww, bw, B, N)
    switch (H) {
    case 1: TH_BWD(1); break;
    case 2: TH_BWD(2); break;
    case 4: TH_BWD(4); break;
    default: TH_BWD(8); break;
    }
#undef TH_BWD
    CHECK_LAUNCH();
    talking_heads_param_kernel<T><<<(unsigned)(2 * H * H + 2 * H), TH_REDUCE_THREADS, 0, stream>>>(
        dwl, dbl, dww, dbw, scratch, (int)blocks, H);
    CHECK_LAUNCH();
}

extern "C" void talking_heads_backward(void *grad, void *dwl, float *dbl, void *dww, float *dbw,
                                       const void *logits, const float *stats, const float *wl, const float *bl,
                                       const float *ww, const float *bw, int B, int H, int N, elem_type type,
                                       float *scratch, cudaStream_t stream) {
    th_check("talking_heads_backward", B, H, N);
    type_check("talking_heads_backward", type);
    if (type == ELEM_BF16)
        th_backward_typed((bf16 *)grad, (bf16 *)dwl, dbl, (bf16 *)dww, dbw, (const bf16 *)logits, stats, wl, bl, ww,
                          bw, B, H, N, scratch, stream);
    else
        th_backward_typed((float *)grad, (float *)dwl, dbl, (float *)dww, dbw, (const float *)logits, stats, wl, bl,
                          ww, bw, B, H, N, scratch, stream);
}

/* ---- class attention ------------------------------------------------------------------------ */

/* shared: q (scaled) [D] | p [tokens] | reduction [32] */
template <typename T>
__global__ void __launch_bounds__(CA_THREADS)
class_attention_forward_kernel(T *out, float *p, const T *q, const T *kv, int H, int tokens, int D, float scale) {
    extern __shared__ float smem[];
    float *s_q = smem, *s_p = smem + D, *red = s_p + tokens;
    int bh = blockIdx.x, b = bh / H, h = bh - b * H, C = H * D;
    for (int d = threadIdx.x; d < D; d += blockDim.x) s_q[d] = to_float(q[(size_t)b * C + h * D + d]) * scale;
    __syncthreads();
    const T *keys = kv + (size_t)b * tokens * 2 * C + h * D, *values = keys + C;
    float local_max = -INFINITY;
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) {
        const T *k = keys + (size_t)j * 2 * C;
        float dot = 0.0f;
        for (int d = 0; d < D; d++) dot = fmaf(s_q[d], to_float(k[d]), dot);
        s_p[j] = dot;
        local_max = fmaxf(local_max, dot);
    }
    float m = block_reduce(local_max, red, 1), local_sum = 0.0f;
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) {
        float e = __expf(s_p[j] - m);
        s_p[j] = e;
        local_sum += e;
    }
    float inv = 1.0f / block_reduce(local_sum, red, 0);
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) {
        s_p[j] *= inv;
        p[(size_t)bh * tokens + j] = s_p[j];
    }
    __syncthreads();
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < tokens; j++) acc = fmaf(s_p[j], to_float(values[(size_t)j * 2 * C + d]), acc);
        put(out + (size_t)b * C + h * D + d, acc);
    }
}

/* shared: q [D] | dout [D] | ds [tokens] | reduction [32] */
template <typename T>
__global__ void __launch_bounds__(CA_THREADS)
class_attention_backward_kernel(T *dq, T *dkv, const T *dout, const float *p, const T *q, const T *kv, int H,
                                int tokens, int D, float scale) {
    extern __shared__ float smem[];
    float *s_q = smem, *s_do = smem + D, *s_ds = smem + 2 * D, *red = s_ds + tokens;
    int bh = blockIdx.x, b = bh / H, h = bh - b * H, C = H * D;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        s_q[d] = to_float(q[(size_t)b * C + h * D + d]);
        s_do[d] = to_float(dout[(size_t)b * C + h * D + d]);
    }
    __syncthreads();
    const T *keys = kv + (size_t)b * tokens * 2 * C + h * D, *values = keys + C;
    const float *pr = p + (size_t)bh * tokens;
    float local = 0.0f;
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) {
        const T *v = values + (size_t)j * 2 * C;
        float dp = 0.0f;
        for (int d = 0; d < D; d++) dp = fmaf(s_do[d], to_float(v[d]), dp);
        s_ds[j] = dp;
        local = fmaf(pr[j], dp, local);
    }
    float dot = block_reduce(local, red, 0);
    for (int j = threadIdx.x; j < tokens; j += blockDim.x) s_ds[j] = pr[j] * (s_ds[j] - dot);
    __syncthreads();
    T *dkeys = dkv + (size_t)b * tokens * 2 * C + h * D, *dvalues = dkeys + C;
    for (int idx = threadIdx.x; idx < tokens * D; idx += blockDim.x) {
        int j = idx / D, d = idx - j * D;
        put(dkeys + (size_t)j * 2 * C + d, scale * s_ds[j] * s_q[d]);
        put(dvalues + (size_t)j * 2 * C + d, pr[j] * s_do[d]);
    }
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float acc = 0.0f;
        for (int j = 0; j < tokens; j++) acc = fmaf(s_ds[j], to_float(keys[(size_t)j * 2 * C + d]), acc);
        put(dq + (size_t)b * C + h * D + d, scale * acc);
    }
}

static size_t ca_check(const char *fn, int B, int H, int tokens, int D, int extra, elem_type type) {
    size_t smem = ((size_t)extra * D + tokens + 32) * sizeof(float);
    type_check(fn, type);
    if (B < 1 || H < 1 || tokens < 1 || D < 1 || (long long)tokens * D > (1ll << 30))
        kernel_bad_input(fn, "B %d, H %d, tokens %d, D %d: expected positive sizes", B, H, tokens, D);
    if (smem > CA_MAX_SMEM)
        kernel_bad_input(fn, "%d tokens of head size %d need %zu bytes of shared memory: at most %d", tokens, D, smem,
                         CA_MAX_SMEM);
    return smem;
}

extern "C" void class_attention_forward(void *out, float *p, const void *q, const void *kv, int B, int H,
                                        int tokens, int D, float scale, elem_type type, cudaStream_t stream) {
    size_t smem = ca_check("class_attention_forward", B, H, tokens, D, 1, type);
    unsigned blocks = (unsigned)(B * H);
    if (type == ELEM_BF16)
        class_attention_forward_kernel<<<blocks, CA_THREADS, smem, stream>>>((bf16 *)out, p, (const bf16 *)q,
                                                                             (const bf16 *)kv, H, tokens, D, scale);
    else
        class_attention_forward_kernel<<<blocks, CA_THREADS, smem, stream>>>((float *)out, p, (const float *)q,
                                                                             (const float *)kv, H, tokens, D, scale);
    CHECK_LAUNCH();
}

extern "C" void class_attention_backward(void *dq, void *dkv, const void *dout, const float *p, const void *q,
                                         const void *kv, int B, int H, int tokens, int D, float scale,
                                         elem_type type, cudaStream_t stream) {
    size_t smem = ca_check("class_attention_backward", B, H, tokens, D, 2, type);
    unsigned blocks = (unsigned)(B * H);
    if (type == ELEM_BF16)
        class_attention_backward_kernel<<<blocks, CA_THREADS, smem, stream>>>(
            (bf16 *)dq, (bf16 *)dkv, (const bf16 *)dout, p, (const bf16 *)q, (const bf16 *)kv, H, tokens, D, scale);
    else
        class_attention_backward_kernel<<<blocks, CA_THREADS, smem, stream>>>(
            (float *)dq, (float *)dkv, (const float *)dout, p, (const float *)q, (const float *)kv, H, tokens, D,
            scale);
    CHECK_LAUNCH();
}
