/* The recommender's dense-side kernels (declared in kernels/dlrm.h):
 *   embedding-bag forward: one thread per (bag, 4 floats of its row), every table in one launch,
 *     writing the (row, bag) pairs the sparse update sorts (kernels/dlrm_sparse.cu);
 *   dot interaction: one block per sample, its 27 feature vectors staged in shared memory
 *     (rows padded by one float so the pair loop is free of bank conflicts);
 *   ReLU, sigmoid + BCE (double accumulators for epoch sums), the learning-rate policy and a
 *     counter-based uniform fill for the tables. */
#include <math.h>
#include <stdint.h>

#include "kernels/dlrm.h"
#include "kernels/launch.h"
#include "kernels/vector_io.cuh"
#include "kernels/relu.cuh"
#include "kernels/check.h"

#define DLRM_THREADS 256
#define DLRM_MAX_BLOCKS 65535u

static unsigned blocks_for(size_t threads) {
    size_t blocks = (threads + DLRM_THREADS - 1) / DLRM_THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks > DLRM_MAX_BLOCKS ? DLRM_MAX_BLOCKS : blocks);
}

/* ---- embedding bag ---------------------------------------------------------------------------*/

__device__ __forceinline__ int clamp_index(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

template <int VEC>
__global__ void __launch_bounds__(DLRM_THREADS)
bag_forward_kernel(float *out, uint32_t *keys, uint32_t *vals, const float *weights,
                   const __grid_constant__ dlrm_tables tables, const int32_t *indices,
                   const int32_t *offsets, int batch, int capacity) {
    const int T = tables.count, dim = tables.dim, comps = dim / VEC;
    const size_t total = (size_t)batch * T * comps;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t id = blockIdx.x * (size_t)blockDim.x + threadIdx.x; id < total; id += stride) {
        int c = (int)(id % comps);
        size_t bag = id / comps; /* = b * T + t: the row of out */
        int b = (int)(bag / T), t = (int)(bag % T);
        int begin = (int)bag, end = (int)bag + 1;
        if (offsets) {
            begin = clamp_index(offsets[(size_t)t * batch + b], 0, capacity);
            end = clamp_index(offsets[(size_t)t * batch + b + 1], begin, capacity);
        }
        float acc[VEC];
#pragma unroll
        for (int k = 0; k < VEC; k++) acc[k] = 0.0f;
        for (int j = begin; j < end; j++) {
            uint32_t row = tables.base[t] + dlrm_hash_index(indices[j], tables.rows[t]);
            float v[VEC];
            load_vec<VEC>(v, weights + (size_t)row * dim + (size_t)c * VEC);
#pragma unroll
            for (int k = 0; k < VEC; k++) acc[k] += v[k];
            if (keys && c == 0) {
                keys[j] = row;
                vals[j] = (uint32_t)bag;
            }
        }
        store_vec<VEC>(out + bag * dim + (size_t)c * VEC, acc);
    }
    if (keys && offsets) { /* slots past the batch's indices sort last and are skipped */
        int used = clamp_index(offsets[(size_t)T * batch], 0, capacity);
        for (size_t j = used + blockIdx.x * (size_t)blockDim.x + threadIdx.x; j < (size_t)capacity; j += stride) {
            keys[j] = DLRM_NO_ROW;
            vals[j] = 0;
        }
    }
}

extern "C" void dlrm_embedding_bag_forward(float *out, uint32_t *keys, uint32_t *vals,
                                           const float *weights, dlrm_tables tables,
                                           dlrm_lookups lookups, cudaStream_t stream) {
    const char *fn = "dlrm_embedding_bag_forward";
    if (!out || !weights || !lookups.indices)
        kernel_bad_input(fn, "out, weights and lookups.indices must be device pointers (one is NULL)");
    if ((keys == NULL) != (vals == NULL)) kernel_bad_input(fn, "keys and vals go together (one is NULL)");
    if (tables.count < 1 || tables.count > DLRM_MAX_TABLES || tables.dim < 1)
        kernel_bad_input(fn, "tables.count must be 1..%d and dim >= 1 (got %d, %d)", DLRM_MAX_TABLES,
                         tables.count, tables.dim);
    for (int t = 0; t < tables.count; t++)
        if (tables.rows[t] < 1) kernel_bad_input(fn, "table %d has no rows", t);
    if (lookups.batch < 0) kernel_bad_input(fn, "batch must be >= 0 (got %d)", lookups.batch);
    size_t fixed = (size_t)lookups.batch * tables.count;
    if (!lookups.offsets && (size_t)lookups.capacity != fixed)
        kernel_bad_input(fn, "without offsets capacity must be batch * tables = %zu (got %d)", fixed,
                         lookups.capacity);
    if (fixed > INT32_MAX || lookups.capacity < 0)
        kernel_bad_input(fn, "batch * tables (%zu) and capacity (%d) must fit an int32", fixed, lookups.capacity);
    if (lookups.batch == 0) return;
    int vec = tables.dim % 4 == 0 && kernel_aligned(weights, 16) && kernel_aligned(out, 16) ? 4 : 1;
    size_t threads = fixed * (size_t)(tables.dim / vec);
    if (vec == 4)
        bag_forward_kernel<4><<<blocks_for(threads), DLRM_THREADS, 0, stream>>>(
            out, keys, vals, weights, tables, lookups.indices, lookups.offsets, lookups.batch, lookups.capacity);
    else
        bag_forward_kernel<1><<<blocks_for(threads), DLRM_THREADS, 0, stream>>>(
            out, keys, vals, weights, tables, lookups.indices, lookups.offsets, lookups.batch, lookups.capacity);
    CHECK_LAUNCH();
}

/* ---- dot interaction --------------------------------------------------------------------------*/

#define INTERACTION_THREADS 128
#define INTERACTION_MAX_SHARED (48 * 1024)

extern "C" int dlrm_interaction_width(int tables, int dim) {
    int features = tables + 1;
    return dim + features * (features - 1) / 2;
}

/* Pair p of the reference's order -> (i, j), i > j: p = i (i - 1) / 2 + j. */
__device__ __forceinline__ void pair_of(int p, int *i, int *j) {
    int r = (int)((1.0f + sqrtf(1.0f + 8.0f * (float)p)) * 0.5f);
    while (r * (r - 1) / 2 > p) r--;
    while ((r + 1) * r / 2 <= p) r++;
    *i = r;
    *j = p - r * (r - 1) / 2;
}

/* Stages v_0 = x[b], v_{1+t} = emb[b, t] into v [F][dim + 1]. */
__device__ __forceinline__ void stage_features(float *v, const float *xb, const float *eb, int F, int dim) {
    int ld = dim + 1;
    for (int k = threadIdx.x; k < F * dim; k += blockDim.x) {
        int f = k / dim, c = k % dim;
        v[f * ld + c] = f == 0 ? xb[c] : eb[(size_t)(f - 1) * dim + c];
    }
}

__global__ void __launch_bounds__(INTERACTION_THREADS)
interaction_forward_kernel(float *r, const float *x, const float *emb, int T, int dim) {
    extern __shared__ float v[];
    const int F = T + 1, ld = dim + 1, pairs = F * (F - 1) / 2;
    const size_t b = blockIdx.x;
    stage_features(v, x + b * dim, emb + b * (size_t)T * dim, F, dim);
    __syncthreads();
    float *rb = r + b * (size_t)(dim + pairs);
    for (int c = threadIdx.x; c < dim; c += blockDim.x) rb[c] = v[c];
    for (int p = threadIdx.x; p < pairs; p += blockDim.x) {
        int i, j;
        pair_of(p, &i, &j);
        const float *vi = v + i * ld, *vj = v + j * ld;
        float dot = 0.0f;
        for (int c = 0; c < dim; c++) dot = fmaf(vi[c], vj[c], dot);
        rb[dim + p] = dot;
    }
}

/* dv_i = sum_j S_ij v_j with S symmetric, S_ij = dZ of pair (max, min), zero diagonal. */
__global__ void __launch_bounds__(INTERACTION_THREADS)
interaction_backward_kernel(float *dx, float *demb, const float *dr, const float *x, const float *emb,
                            int T, int dim) {
    extern __shared__ float shared[];
    const int F = T + 1, ld = dim + 1, pairs = F * (F - 1) / 2;
    const size_t b = blockIdx.x;
    float *v = shared, *s = shared + F * ld;
    const float *drb = dr + b * (size_t)(dim + pairs);
    stage_features(v, x + b * dim, emb + b * (size_t)T * dim, F, dim);
    for (int k = threadIdx.x; k < F * F; k += blockDim.x) {
        int i = k / F, j = k % F, hi = i > j ? i : j, lo = i > j ? j : i;
        s[k] = i == j ? 0.0f : drb[dim + hi * (hi - 1) / 2 + lo];
    }
    __syncthreads();
    for (int k = threadIdx.x; k < F * dim; k += blockDim.x) {
        int i = k / dim, c = k % dim;
        const float *si = s + i * F;
        float acc = 0.0f;
        for (int j = 0; j < F; j++) acc = fmaf(si[j], v[j * ld + c], acc);
        if (i == 0) dx[b * dim + c] = drb[c] + acc;
        else demb[(b * T + (i - 1)) * (size_t)dim + c] = acc;
    }
}

static size_t interaction_shared(const char *fn, int batch, int tables, int dim, int backward) {
    if (batch < 0 || tables < 1 || tables > DLRM_MAX_TABLES || dim < 1)
        kernel_bad_input(fn, "batch >= 0, tables 1..%d and dim >= 1 expected (got %d, %d, %d)",
                         DLRM_MAX_TABLES, batch, tables, dim);
    size_t F = (size_t)tables + 1, bytes = (F * (dim + 1) + (backward ? F * F : 0)) * sizeof(float);
    if (bytes > INTERACTION_MAX_SHARED)
        kernel_bad_input(fn, "%d tables of dim %d need %zu bytes of shared memory, more than %d", tables,
                         dim, bytes, INTERACTION_MAX_SHARED);
    return bytes;
}

extern "C" void dlrm_interaction_forward(float *r, const float *x, const float *emb, int batch,
                                         int tables, int dim, cudaStream_t stream) {
    const char *fn = "dlrm_interaction_forward";
    size_t shared = interaction_shared(fn, batch, tables, dim, 0);
    if (!r || !x || !emb) kernel_bad_input(fn, "r, x and emb must be device pointers (one is NULL)");
    if (batch == 0) return;
    interaction_forward_kernel<<<(unsigned)batch, INTERACTION_THREADS, shared, stream>>>(r, x, emb, tables, dim);
    CHECK_LAUNCH();
}

extern "C" void dlrm_interaction_backward(float *dx, float *demb, const float *dr, const float *x,
                                          const float *emb, int batch, int tables, int dim,
                                          cudaStream_t stream) {
    const char *fn = "dlrm_interaction_backward";
    size_t shared = interaction_shared(fn, batch, tables, dim, 1);
    if (!dx || !demb || !dr || !x || !emb)
        kernel_bad_input(fn, "dx, demb, dr, x and emb must be device pointers (one is NULL)");
    if (batch == 0) return;
    interaction_backward_kernel<<<(unsigned)batch, INTERACTION_THREADS, shared, stream>>>(dx, demb, dr, x, emb,
                                                                                         tables, dim);
    CHECK_LAUNCH();
}

/* ---- ReLU ------------------------------------------------------------------------------------*/

__global__ void relu_forward_kernel(float *y, size_t n, int vec) {
    size_t stride = (size_t)gridDim.x * blockDim.x, items = vec == 4 ? n / 4 : n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < items; i += stride) {
        if (vec == 4) {
            float4 v = ((float4 *)y)[i];
            ((float4 *)y)[i] = make_float4(relu_keep_nan(v.x), relu_keep_nan(v.y), relu_keep_nan(v.z), relu_keep_nan(v.w));
        } else {
            y[i] = relu_keep_nan(y[i]);
        }
    }
    if (vec == 4 && blockIdx.x == 0 && threadIdx.x < n % 4) {
        size_t i = n / 4 * 4 + threadIdx.x;
        y[i] = relu_keep_nan(y[i]);
    }
}

__device__ __forceinline__ float relu_mask(float g, float y) { return y > 0.0f ? g : 0.0f; }

__global__ void relu_backward_kernel(float *dy, const float *y, size_t n, int vec) {
    size_t stride = (size_t)gridDim.x * blockDim.x, items = vec == 4 ? n / 4 : n;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < items; i += stride) {
        if (vec == 4) {
            float4 g = ((float4 *)dy)[i], v = ((const float4 *)y)[i];
            ((float4 *)dy)[i] = make_float4(relu_mask(g.x, v.x), relu_mask(g.y, v.y), relu_mask(g.z, v.z),
                                            relu_mask(g.w, v.w));
        } else {
            dy[i] = relu_mask(dy[i], y[i]);
        }
    }
    if (vec == 4 && blockIdx.x == 0 && threadIdx.x < n % 4) {
        size_t i = n / 4 * 4 + threadIdx.x;
        dy[i] = relu_mask(dy[i], y[i]);
    }
}

extern "C" void dlrm_relu_forward(float *y, size_t n, cudaStream_t stream) {
    if (!y) kernel_bad_input("dlrm_relu_forward", "y must be a device pointer (got NULL)");
    if (n == 0) return;
    int vec = kernel_aligned(y, 16) ? 4 : 1;
    relu_forward_kernel<<<blocks_for(vec == 4 ? n / 4 + 1 : n), DLRM_THREADS, 0, stream>>>(y, n, vec);
    CHECK_LAUNCH();
}

extern "C" void dlrm_relu_backward(float *dy, const float *y, size_t n, cudaStream_t stream) {
    if (!dy || !y) kernel_bad_input("dlrm_relu_backward", "dy and y must be device pointers (one is NULL)");
    if (n == 0) return;
    int vec = kernel_aligned(y, 16) && kernel_aligned(dy, 16) ? 4 : 1;
    relu_backward_kernel<<<blocks_for(vec == 4 ? n / 4 + 1 : n), DLRM_THREADS, 0, stream>>>(dy, y, n, vec);
    CHECK_LAUNCH();
}

/* ---- sigmoid + binary cross-entropy ------------------------------------------------------------*/

/* softplus(a) = log(1 + e^a) without overflow or cancellation. In double: the kernels build with
 * --use_fast_math, whose float expf is an approximation that a loss summed over a held-out set
 * would show; double functions are exact to rounding, and a row's loss is a handful of them. */
__device__ __forceinline__ double softplus(double a) { return fmax(a, 0.0) + log1p(exp(-fabs(a))); }

/* Loss of one row from its logit: log p = -softplus(-z), log(1 - p) = -softplus(z). */
__device__ __forceinline__ double bce_loss(float z, float y) {
    double log_p = fmax(-softplus(-(double)z), -100.0), log_q = fmax(-softplus((double)z), -100.0);
    return -(y * log_p + (1.0 - y) * log_q);
}

__device__ __forceinline__ float sigmoid(float z) { return 1.0f / (1.0f + expf(-z)); }

/* dz NULL: evaluation (p written instead, when not NULL). Rows >= n_valid add nothing. */
__global__ void __launch_bounds__(DLRM_THREADS)
bce_kernel(float *dz, float *p_out, double *sums, const float *z, const float *labels, int batch,
           int n_valid, float grad_scale) {
    __shared__ double block_loss[DLRM_THREADS / 32], block_hits[DLRM_THREADS / 32];
    double loss = 0.0, hits = 0.0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < batch; i += gridDim.x * blockDim.x) {
        float zi = z[i], y = labels[i], p = sigmoid(zi);
        if (dz) dz[i] = (p - y) * grad_scale;
        if (p_out) p_out[i] = p;
        if (i < n_valid) {
            loss += bce_loss(zi, y);
            hits += (zi > 0.0f) == (y > 0.5f) ? 1.0 : 0.0;
        }
    }
    for (int o = 16; o > 0; o /= 2) {
        loss += __shfl_xor_sync(0xffffffffu, loss, o);
        hits += __shfl_xor_sync(0xffffffffu, hits, o);
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) block_loss[warp] = loss, block_hits[warp] = hits;
    __syncthreads();
    if (threadIdx.x == 0) {
        double l = 0.0, h = 0.0;
        for (int w = 0; w < DLRM_THREADS / 32; w++) l += block_loss[w], h += block_hits[w];
        atomicAdd(&sums[0], l);
        atomicAdd(&sums[1], h);
    }
}

static unsigned bce_blocks(int batch) {
    unsigned blocks = (unsigned)((batch + DLRM_THREADS - 1) / DLRM_THREADS);
    return blocks < 1 ? 1 : blocks > 1024 ? 1024 : blocks;
}

extern "C" void dlrm_bce_forward_backward(float *dz, double *sums, const float *z, const float *labels,
                                          int batch, cudaStream_t stream) {
    const char *fn = "dlrm_bce_forward_backward";
    if (!dz || !sums || !z || !labels) kernel_bad_input(fn, "dz, sums, z and labels must be device pointers (one is NULL)");
    if (batch < 0) kernel_bad_input(fn, "batch must be >= 0 (got %d)", batch);
    if (batch == 0) return;
    bce_kernel<<<bce_blocks(batch), DLRM_THREADS, 0, stream>>>(dz, NULL, sums, z, labels, batch, batch,
                                                               1.0f / (float)batch);
    CHECK_LAUNCH();
}

extern "C" void dlrm_bce_eval(float *p, double *sums, const float *z, const float *labels, int batch,
                              int n_valid, cudaStream_t stream) {
    const char *fn = "dlrm_bce_eval";
    if (!p || !sums || !z || !labels) kernel_bad_input(fn, "p, sums, z and labels must be device pointers (one is NULL)");
    if (batch < 0 || n_valid < 0 || n_valid > batch)
        kernel_bad_input(fn, "0 <= n_valid <= batch expected (got %d, %d)", n_valid, batch);
    if (batch == 0) return;
    bce_kernel<<<bce_blocks(batch), DLRM_THREADS, 0, stream>>>(NULL, p, sums, z, labels, batch, n_valid, 0.0f);
    CHECK_LAUNCH();
}

/* ---- learning rate and initial values -----------------------------------------------------------*/

__global__ void lr_step_kernel(float *lr, int64_t *step, dlrm_lr_policy policy) {
    int64_t s = *step;
    *lr = dlrm_lr_at(&policy, (long)s);
    *step = s + 1;
}

extern "C" void dlrm_lr_step(float *lr, int64_t *step, dlrm_lr_policy policy, cudaStream_t stream) {
    if (!lr || !step) kernel_bad_input("dlrm_lr_step", "lr and step must be device pointers (one is NULL)");
    lr_step_kernel<<<1, 1, 0, stream>>>(lr, step, policy);
    CHECK_LAUNCH();
}

__global__ void uniform_fill_kernel(float *x, size_t n, float bound, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull; /* splitmix64 of a counter */
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        float u = (float)(z >> 40) * (1.0f / 16777216.0f);
        x[i] = bound * (2.0f * u - 1.0f);
    }
}

extern "C" void dlrm_uniform_fill(float *x, size_t n, float bound, uint64_t seed, cudaStream_t stream) {
    if (!x) kernel_bad_input("dlrm_uniform_fill", "x must be a device pointer (got NULL)");
    if (n == 0) return;
    size_t cap = (size_t)kernel_sm_count() * 16, blocks = (n + DLRM_THREADS - 1) / DLRM_THREADS;
    uniform_fill_kernel<<<(unsigned)(blocks < cap ? blocks : cap), DLRM_THREADS, 0, stream>>>(x, n, bound, seed);
    CHECK_LAUNCH();
}
