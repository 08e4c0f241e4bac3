/* SiLU, the squeeze-excitation gate and stochastic depth for EfficientNet's blocks (declared in
 * kernels/activation.h). All are memory-bound element-wise passes, so each is one kernel and one
 * pass: a thread takes a group of 4 channels (a float4; 1 when C % 4 != 0 or a pointer is not
 * 16-byte aligned) of one pixel, so a warp reads consecutive channels, and grid-strides over the
 * tensor. Per-sample values (the gate logits e[n, c], the drop-path scale[n]) are small and read
 * through the cache. The sigmoid of the gate is recomputed where it is needed rather than stored:
 * a few exponentials per element are cheaper than another tensor pass. The gate's backward
 * reduces over the HW pixels of one sample in one thread per (sample, channel group): HW is at
 * most a few hundred in these networks, and that needs no atomics and no scratch. */
#include <stdint.h>

#include "kernels/activation.h"
#include "kernels/launch.h"
#include "kernels/vector_io.cuh"
#include "models/check.h"

#define ACT_THREADS 256

/* At most 16 waves of 8 resident blocks per SM; larger tensors grid-stride. */
static unsigned act_blocks(size_t items) {
    size_t blocks = (items + ACT_THREADS - 1) / ACT_THREADS;
    size_t cap = (size_t)kernel_sm_count() * 8 * 16;
    if (blocks > cap) blocks = cap;
    return (unsigned)(blocks > 0 ? blocks : 1);
}

/* Index arithmetic is 32-bit (64-bit division is slow on the GPU): fewer than 2^31 vector items. */
static void act_check_items(const char *fn, size_t items) {
    if (items > 0x7fffffffu)
        kernel_bad_input(fn, "tensor too large: %zu vector items, at most 2^31 - 1 supported", items);
}

static void act_check_nhwc(const char *fn, int N, int HW, int C) {
    if (N < 0 || HW < 1 || C < 1)
        kernel_bad_input(fn, "sizes must be N >= 0, HW >= 1, C >= 1 (got N=%d HW=%d C=%d)", N, HW, C);
}

static int act_vec(int C, const void *a, const void *b, const void *c) {
    return C % 4 == 0 && kernel_aligned(a, 16) && kernel_aligned(b, 16) && kernel_aligned(c, 16) ? 4 : 1;
}

__device__ __forceinline__ float act_sigmoid(float z) { return 1.0f / (1.0f + __expf(-z)); }

/* ---- SiLU ---------------------------------------------------------------------------------- */

template <int VEC>
__global__ void __launch_bounds__(ACT_THREADS) silu_forward_kernel(float *y, const float *x, unsigned items) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        float v[VEC];
        load_vec<VEC>(v, x + (size_t)i * VEC);
#pragma unroll
        for (int j = 0; j < VEC; j++) v[j] = v[j] * act_sigmoid(v[j]);
        store_vec<VEC>(y + (size_t)i * VEC, v);
    }
}

template <int VEC>
__global__ void __launch_bounds__(ACT_THREADS)
silu_backward_kernel(float *dx, const float *dy, const float *x, unsigned items) {
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        float v[VEC], g[VEC];
        load_vec<VEC>(v, x + (size_t)i * VEC);
        load_vec<VEC>(g, dy + (size_t)i * VEC);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            float s = act_sigmoid(v[j]);
            g[j] *= s * fmaf(v[j], 1.0f - s, 1.0f);
        }
        store_vec<VEC>(dx + (size_t)i * VEC, g);
    }
}

extern "C" void silu_forward(float *y, const float *x, size_t n, cudaStream_t stream) {
    const char *fn = "silu_forward";
    if (n == 0) return;
    if (!y || !x) kernel_bad_input(fn, "y and x must be device pointers (one is NULL)");
    int vec = act_vec(n % 4 == 0 ? 4 : 1, y, x, NULL);
    size_t items = n / vec;
    act_check_items(fn, items);
    if (vec == 4) silu_forward_kernel<4><<<act_blocks(items), ACT_THREADS, 0, stream>>>(y, x, (unsigned)items);
    else silu_forward_kernel<1><<<act_blocks(items), ACT_THREADS, 0, stream>>>(y, x, (unsigned)items);
    CHECK_LAUNCH();
}

extern "C" void silu_backward(float *dx, const float *dy, const float *x, size_t n, cudaStream_t stream) {
    const char *fn = "silu_backward";
    if (n == 0) return;
    if (!dx || !dy || !x) kernel_bad_input(fn, "dx, dy and x must be device pointers (one is NULL)");
    int vec = act_vec(n % 4 == 0 ? 4 : 1, dx, dy, x);
    size_t items = n / vec;
    act_check_items(fn, items);
    if (vec == 4)
        silu_backward_kernel<4><<<act_blocks(items), ACT_THREADS, 0, stream>>>(dx, dy, x, (unsigned)items);
    else
        silu_backward_kernel<1><<<act_blocks(items), ACT_THREADS, 0, stream>>>(dx, dy, x, (unsigned)items);
    CHECK_LAUNCH();
}

/* ---- squeeze-excitation gate --------------------------------------------------------------- */

/* Item i is channel group (i % ncols) of pixel row i / ncols, which belongs to sample row / HW. */
template <int VEC>
__global__ void __launch_bounds__(ACT_THREADS)
se_scale_forward_kernel(float *y, const float *x, const float *e, int HW, int C, unsigned items) {
    unsigned ncols = (unsigned)(C / VEC);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        unsigned col = i % ncols, row = i / ncols, n = row / (unsigned)HW;
        float v[VEC], z[VEC];
        load_vec<VEC>(v, x + (size_t)i * VEC);
        load_vec<VEC>(z, e + (size_t)n * C + col * VEC);
#pragma unroll
        for (int j = 0; j < VEC; j++) v[j] *= act_sigmoid(z[j]);
        store_vec<VEC>(y + (size_t)i * VEC, v);
    }
}

/* One thread per (sample, channel group), summing over the sample's HW pixels. */
template <int VEC>
__global__ void __launch_bounds__(ACT_THREADS)
se_scale_backward_gate_kernel(float *de, const float *dy, const float *x, const float *e, int HW, int C,
                              unsigned items) {
    unsigned ncols = (unsigned)(C / VEC);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        unsigned col = i % ncols, n = i / ncols;
        size_t base = (size_t)n * HW * C + col * VEC;
        float sum[VEC];
#pragma unroll
        for (int j = 0; j < VEC; j++) sum[j] = 0.0f;
        for (int p = 0; p < HW; p++) {
            float g[VEC], v[VEC];
            load_vec<VEC>(g, dy + base + (size_t)p * C);
            load_vec<VEC>(v, x + base + (size_t)p * C);
#pragma unroll
            for (int j = 0; j < VEC; j++) sum[j] = fmaf(g[j], v[j], sum[j]);
        }
        float z[VEC];
        load_vec<VEC>(z, e + (size_t)n * C + col * VEC);
#pragma unroll
        for (int j = 0; j < VEC; j++) {
            float s = act_sigmoid(z[j]);
            sum[j] *= s * (1.0f - s);
        }
        store_vec<VEC>(de + (size_t)n * C + col * VEC, sum);
    }
}

template <int VEC>
__global__ void __launch_bounds__(ACT_THREADS)
se_scale_backward_input_kernel(float *dx, const float *dy, const float *e, const float *dmean, int HW, int C,
                               unsigned items) {
    unsigned ncols = (unsigned)(C / VEC);
    float inv_hw = 1.0f / (float)HW;
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        unsigned col = i % ncols, row = i / ncols, n = row / (unsigned)HW;
        float g[VEC], z[VEC], dm[VEC];
        load_vec<VEC>(g, dy + (size_t)i * VEC);
        load_vec<VEC>(z, e + (size_t)n * C + col * VEC);
        load_vec<VEC>(dm, dmean + (size_t)n * C + col * VEC);
#pragma unroll
        for (int j = 0; j < VEC; j++) g[j] = fmaf(g[j], act_sigmoid(z[j]), dm[j] * inv_hw);
        store_vec<VEC>(dx + (size_t)i * VEC, g);
    }
}

extern "C" void se_scale_forward(float *y, const float *x, const float *e, int N, int HW, int C,
                                 cudaStream_t stream) {
    const char *fn = "se_scale_forward";
    act_check_nhwc(fn, N, HW, C);
    if (!y || !x || !e) kernel_bad_input(fn, "y, x and e must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, y, x, e);
    size_t items = (size_t)N * HW * (C / vec);
    act_check_items(fn, items);
    if (vec == 4)
        se_scale_forward_kernel<4><<<act_blocks(items), ACT_THREADS, 0, stream>>>(y, x, e, HW, C, (unsigned)items);
    else
        se_scale_forward_kernel<1><<<act_blocks(items), ACT_THREADS, 0, stream>>>(y, x, e, HW, C, (unsigned)items);
    CHECK_LAUNCH();
}

extern "C" void se_scale_backward_gate(float *de, const float *dy, const float *x, const float *e, int N,
                                       int HW, int C, cudaStream_t stream) {
    const char *fn = "se_scale_backward_gate";
    act_check_nhwc(fn, N, HW, C);
    if (!de || !dy || !x || !e) kernel_bad_input(fn, "de, dy, x and e must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, dy, x, e) == 4 && kernel_aligned(de, 16) ? 4 : 1;
    size_t items = (size_t)N * (C / vec);
    act_check_items(fn, (size_t)N * HW * (C / vec));
    if (vec == 4)
        se_scale_backward_gate_kernel<4><<<act_blocks(items), ACT_THREADS, 0, stream>>>(de, dy, x, e, HW, C,
                                                                                        (unsigned)items);
    else
        se_scale_backward_gate_kernel<1><<<act_blocks(items), ACT_THREADS, 0, stream>>>(de, dy, x, e, HW, C,
                                                                                        (unsigned)items);
    CHECK_LAUNCH();
}

extern "C" void se_scale_backward_input(float *dx, const float *dy, const float *e, const float *dmean, int N,
                                        int HW, int C, cudaStream_t stream) {
    const char *fn = "se_scale_backward_input";
    act_check_nhwc(fn, N, HW, C);
    if (!dx || !dy || !e || !dmean)
        kernel_bad_input(fn, "dx, dy, e and dmean must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, dx, dy, e) == 4 && kernel_aligned(dmean, 16) ? 4 : 1;
    size_t items = (size_t)N * HW * (C / vec);
    act_check_items(fn, items);
    if (vec == 4)
        se_scale_backward_input_kernel<4><<<act_blocks(items), ACT_THREADS, 0, stream>>>(dx, dy, e, dmean, HW, C,
                                                                                         (unsigned)items);
    else
        se_scale_backward_input_kernel<1><<<act_blocks(items), ACT_THREADS, 0, stream>>>(dx, dy, e, dmean, HW, C,
                                                                                         (unsigned)items);
    CHECK_LAUNCH();
}

/* ---- stochastic depth ----------------------------------------------------------------------- */

__device__ __forceinline__ uint64_t act_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* One block: every thread reads the counter before the barrier, thread 0 advances it after. */
__global__ void __launch_bounds__(ACT_THREADS)
drop_path_masks_kernel(float *scale, int64_t *counter, const float *keep, int blocks, int N, uint64_t seed) {
    uint64_t step = (uint64_t)*counter;
    uint64_t stream_key = act_mix64(seed ^ act_mix64(step + 0x9E3779B97F4A7C15ull));
    for (int i = threadIdx.x; i < blocks * N; i += blockDim.x) {
        float k = keep[i / N];
        uint64_t bits = act_mix64(stream_key + 0xD1B54A32D192ED03ull * (uint64_t)(i + 1));
        float u = (float)(bits >> 40) * (1.0f / 16777216.0f); /* [0, 1) with 24 bits */
        scale[i] = u < k ? 1.0f / k : 0.0f;
    }
    __syncthreads();
    if (threadIdx.x == 0) *counter = (int64_t)(step + 1);
}

template <int VEC>
__global__ void __launch_bounds__(ACT_THREADS)
drop_path_add_kernel(float *y, const float *shortcut, const float *branch, const float *scale, int HW, int C,
                     unsigned items) {
    unsigned ncols = (unsigned)(C / VEC);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        float k = scale[i / ncols / (unsigned)HW];
        float s[VEC], b[VEC];
        load_vec<VEC>(s, shortcut + (size_t)i * VEC);
        load_vec<VEC>(b, branch + (size_t)i * VEC);
#pragma unroll
        for (int j = 0; j < VEC; j++) s[j] = fmaf(b[j], k, s[j]);
        store_vec<VEC>(y + (size_t)i * VEC, s);
    }
}

template <int VEC>
__global__ void __launch_bounds__(ACT_THREADS)
drop_path_backward_kernel(float *dbranch, const float *dy, const float *scale, int HW, int C, unsigned items) {
    unsigned ncols = (unsigned)(C / VEC);
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        float k = scale[i / ncols / (unsigned)HW];
        float g[VEC];
        load_vec<VEC>(g, dy + (size_t)i * VEC);
#pragma unroll
        for (int j = 0; j < VEC; j++) g[j] *= k;
        store_vec<VEC>(dbranch + (size_t)i * VEC, g);
    }
}

extern "C" void drop_path_masks(float *scale, int64_t *counter, const float *keep, int blocks, int N,
                                uint64_t seed, cudaStream_t stream) {
    const char *fn = "drop_path_masks";
    if (blocks < 0 || N < 0) kernel_bad_input(fn, "blocks and N must be >= 0 (got %d, %d)", blocks, N);
    if ((long)blocks * N > 0x7fffffffL) kernel_bad_input(fn, "blocks * N = %ld is too large", (long)blocks * N);
    if (!scale || !counter || !keep) kernel_bad_input(fn, "scale, counter and keep must be device pointers (one is NULL)");
    drop_path_masks_kernel<<<1, ACT_THREADS, 0, stream>>>(scale, counter, keep, blocks, N, seed);
    CHECK_LAUNCH();
}

extern "C" void drop_path_add_forward(float *y, const float *shortcut, const float *branch, const float *scale,
                                      int N, int HW, int C, cudaStream_t stream) {
    const char *fn = "drop_path_add_forward";
    act_check_nhwc(fn, N, HW, C);
    if (!y || !shortcut || !branch || !scale)
        kernel_bad_input(fn, "y, shortcut, branch and scale must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, y, shortcut, branch);
    size_t items = (size_t)N * HW * (C / vec);
    act_check_items(fn, items);
    if (vec == 4)
        drop_path_add_kernel<4><<<act_blocks(items), ACT_THREADS, 0, stream>>>(y, shortcut, branch, scale, HW, C,
                                                                               (unsigned)items);
    else
        drop_path_add_kernel<1><<<act_blocks(items), ACT_THREADS, 0, stream>>>(y, shortcut, branch, scale, HW, C,
                                                                               (unsigned)items);
    CHECK_LAUNCH();
}

extern "C" void drop_path_backward(float *dbranch, const float *dy, const float *scale, int N, int HW, int C,
                                   cudaStream_t stream) {
    const char *fn = "drop_path_backward";
    act_check_nhwc(fn, N, HW, C);
    if (!dbranch || !dy || !scale) kernel_bad_input(fn, "dbranch, dy and scale must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, dbranch, dy, NULL);
    size_t items = (size_t)N * HW * (C / vec);
    act_check_items(fn, items);
    if (vec == 4)
        drop_path_backward_kernel<4><<<act_blocks(items), ACT_THREADS, 0, stream>>>(dbranch, dy, scale, HW, C,
                                                                                    (unsigned)items);
    else
        drop_path_backward_kernel<1><<<act_blocks(items), ACT_THREADS, 0, stream>>>(dbranch, dy, scale, HW, C,
                                                                                    (unsigned)items);
    CHECK_LAUNCH();
}
