/* SiLU, the squeeze-excitation gate and stochastic depth for EfficientNet's blocks (declared in
 * kernels/activation.h). All are memory-bound element-wise passes, so each is one kernel and one
 * pass: a thread takes a group of 4 channels (a float4, or 8 bytes of bfloat16; 1 when C % 4 != 0
 * or a pointer is not aligned for that) of one pixel, so a warp reads consecutive channels, and
 * grid-strides over the tensor. Per-sample values (the gate logits e[n, c], the drop-path
 * scale[n]) are small float32 tensors read through the cache. The sigmoid of the gate is
 * recomputed where it is needed rather than stored: a few exponentials per element are cheaper
 * than another tensor pass. The gate's backward reduces over the HW pixels of one sample in one
 * thread per (sample, channel group): HW is at most a few hundred in these networks, and that
 * needs no atomics and no scratch. Activations are float or bfloat16, the template parameter T
 * (vector_io.cuh): loads widen to float, arithmetic is float, stores round once. */
#include <stdint.h>

#include "kernels/activation.h"
#include "kernels/launch.h"
#include "kernels/pdl.cuh"
#include "kernels/vector_io.cuh"
#include "kernels/check.h"

#define ACT_THREADS 256

typedef __nv_bfloat16 bf16;

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

static void act_check_type(const char *fn, int type) {
    if (type != ELEM_F32 && type != ELEM_BF16)
        kernel_bad_input(fn, "type must be ELEM_F32 (0) or ELEM_BF16 (1) (got %d)", type);
}

/* The 4-element path: C a multiple of 4, the activation pointers t0..t2 (of `type`) aligned for 4
 * elements (16 bytes of float, 8 of bfloat16) and the float pointer f to 16 bytes. NULL counts as
 * aligned. */
static int act_vec(int C, elem_type type, const void *t0, const void *t1, const void *t2, const float *f) {
    unsigned bytes = (unsigned)(4 * elem_bytes(type));
    return C % 4 == 0 && kernel_aligned(t0, bytes) && kernel_aligned(t1, bytes) && kernel_aligned(t2, bytes) &&
                   kernel_aligned(f, 16)
               ? 4
               : 1;
}

/* One instantiation per (vector width, element type); the launchers pick them at run time. */
#define ACT_LAUNCH(kernel, T, vec, items, stream, ...)                                                 \
    do {                                                                                              \
        if ((vec) == 4)                                                                               \
            CHECK_CUDA(pdl_launch(kernel<4, T>, act_blocks(items), ACT_THREADS, stream, __VA_ARGS__)); \
        else CHECK_CUDA(pdl_launch(kernel<1, T>, act_blocks(items), ACT_THREADS, stream, __VA_ARGS__)); \
    } while (0)
#define ACT_TYPED(type, launch, ...)                      \
    do {                                                  \
        if ((type) == ELEM_BF16) launch<bf16>(__VA_ARGS__); \
        else launch<float>(__VA_ARGS__);                  \
    } while (0)

__device__ __forceinline__ float act_sigmoid(float z) { return 1.0f / (1.0f + __expf(-z)); }

/* ---- SiLU ---------------------------------------------------------------------------------- */

template <int VEC, typename T>
__global__ void __launch_bounds__(ACT_THREADS) silu_forward_kernel(T *y, const float *x, unsigned items) {
    pdl_wait();
    pdl_release();
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += gridDim.x * blockDim.x) {
        float v[VEC];
        load_vec<VEC>(v, x + (size_t)i * VEC);
#pragma unroll
        for (int j = 0; j < VEC; j++) v[j] = v[j] * act_sigmoid(v[j]);
        store_vec<VEC>(y + (size_t)i * VEC, v);
    }
}

template <int VEC, typename T>
__global__ void __launch_bounds__(ACT_THREADS)
silu_backward_kernel(T *dx, const T *dy, const float *x, unsigned items) {
    pdl_wait();
    pdl_release();
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

template <typename T>
static void silu_forward_launch(void *y, const float *x, size_t items, int vec, cudaStream_t stream) {
    ACT_LAUNCH(silu_forward_kernel, T, vec, items, stream, (T *)y, x, (unsigned)items);
}

template <typename T>
static void silu_backward_launch(void *dx, const void *dy, const float *x, size_t items, int vec,
                                 cudaStream_t stream) {
    ACT_LAUNCH(silu_backward_kernel, T, vec, items, stream, (T *)dx, (const T *)dy, x, (unsigned)items);
}

extern "C" void silu_forward(void *y, const float *x, size_t n, elem_type type, cudaStream_t stream) {
    const char *fn = "silu_forward";
    act_check_type(fn, type);
    if (n == 0) return;
    if (!y || !x) kernel_bad_input(fn, "y and x must be device pointers (one is NULL)");
    int vec = act_vec(n % 4 == 0 ? 4 : 1, type, y, NULL, NULL, x);
    size_t items = n / vec;
    act_check_items(fn, items);
    ACT_TYPED(type, silu_forward_launch, y, x, items, vec, stream);
}

extern "C" void silu_backward(void *dx, const void *dy, const float *x, size_t n, elem_type type,
                              cudaStream_t stream) {
    const char *fn = "silu_backward";
    act_check_type(fn, type);
    if (n == 0) return;
    if (!dx || !dy || !x) kernel_bad_input(fn, "dx, dy and x must be device pointers (one is NULL)");
    int vec = act_vec(n % 4 == 0 ? 4 : 1, type, dx, dy, NULL, x);
    size_t items = n / vec;
    act_check_items(fn, items);
    ACT_TYPED(type, silu_backward_launch, dx, dy, x, items, vec, stream);
}

/* ---- squeeze-excitation gate --------------------------------------------------------------- */

/* Item i is channel group (i % ncols) of pixel row i / ncols, which belongs to sample row / HW. */
template <int VEC, typename T>
__global__ void __launch_bounds__(ACT_THREADS)
se_scale_forward_kernel(T *y, const T *x, const float *e, int HW, int C, unsigned items) {
    pdl_wait();
    pdl_release();
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
template <int VEC, typename T>
__global__ void __launch_bounds__(ACT_THREADS)
se_scale_backward_gate_kernel(T *de, const T *dy, const T *x, const float *e, int HW, int C, unsigned items) {
    pdl_wait();
    pdl_release();
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

template <int VEC, typename T>
__global__ void __launch_bounds__(ACT_THREADS)
se_scale_backward_input_kernel(T *dx, const T *dy, const float *e, const T *dmean, int HW, int C, unsigned items) {
    pdl_wait();
    pdl_release();
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

template <typename T>
static void se_scale_forward_launch(void *y, const void *x, const float *e, int HW, int C, size_t items, int vec,
                                    cudaStream_t stream) {
    ACT_LAUNCH(se_scale_forward_kernel, T, vec, items, stream, (T *)y, (const T *)x, e, HW, C, (unsigned)items);
}

template <typename T>
static void se_scale_backward_gate_launch(void *de, const void *dy, const void *x, const float *e, int HW, int C,
                                          size_t items, int vec, cudaStream_t stream) {
    ACT_LAUNCH(se_scale_backward_gate_kernel, T, vec, items, stream, (T *)de, (const T *)dy, (const T *)x, e, HW, C,
               (unsigned)items);
}

template <typename T>
static void se_scale_backward_input_launch(void *dx, const void *dy, const float *e, const void *dmean, int HW,
                                           int C, size_t items, int vec, cudaStream_t stream) {
    ACT_LAUNCH(se_scale_backward_input_kernel, T, vec, items, stream, (T *)dx, (const T *)dy, e, (const T *)dmean,
               HW, C, (unsigned)items);
}

extern "C" void se_scale_forward(void *y, const void *x, const float *e, int N, int HW, int C, elem_type type,
                                 cudaStream_t stream) {
    const char *fn = "se_scale_forward";
    act_check_nhwc(fn, N, HW, C);
    act_check_type(fn, type);
    if (!y || !x || !e) kernel_bad_input(fn, "y, x and e must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, type, y, x, NULL, e);
    size_t items = (size_t)N * HW * (C / vec);
    act_check_items(fn, items);
    ACT_TYPED(type, se_scale_forward_launch, y, x, e, HW, C, items, vec, stream);
}

extern "C" void se_scale_backward_gate(void *de, const void *dy, const void *x, const float *e, int N, int HW,
                                       int C, elem_type type, cudaStream_t stream) {
    const char *fn = "se_scale_backward_gate";
    act_check_nhwc(fn, N, HW, C);
    act_check_type(fn, type);
    if (!de || !dy || !x || !e) kernel_bad_input(fn, "de, dy, x and e must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, type, de, dy, x, e);
    size_t items = (size_t)N * (C / vec);
    act_check_items(fn, (size_t)N * HW * (C / vec));
    ACT_TYPED(type, se_scale_backward_gate_launch, de, dy, x, e, HW, C, items, vec, stream);
}

extern "C" void se_scale_backward_input(void *dx, const void *dy, const float *e, const void *dmean, int N, int HW,
                                        int C, elem_type type, cudaStream_t stream) {
    const char *fn = "se_scale_backward_input";
    act_check_nhwc(fn, N, HW, C);
    act_check_type(fn, type);
    if (!dx || !dy || !e || !dmean)
        kernel_bad_input(fn, "dx, dy, e and dmean must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, type, dx, dy, dmean, e);
    size_t items = (size_t)N * HW * (C / vec);
    act_check_items(fn, items);
    ACT_TYPED(type, se_scale_backward_input_launch, dx, dy, e, dmean, HW, C, items, vec, stream);
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
    pdl_wait();
    pdl_release();
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

template <int VEC, typename T>
__global__ void __launch_bounds__(ACT_THREADS)
drop_path_add_kernel(T *y, const T *shortcut, const T *branch, const float *scale, int HW, int C, unsigned items) {
    pdl_wait();
    pdl_release();
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

template <int VEC, typename T>
__global__ void __launch_bounds__(ACT_THREADS)
drop_path_backward_kernel(T *dbranch, const T *dy, const float *scale, int HW, int C, unsigned items) {
    pdl_wait();
    pdl_release();
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

template <typename T>
static void drop_path_add_launch(void *y, const void *shortcut, const void *branch, const float *scale, int HW,
                                 int C, size_t items, int vec, cudaStream_t stream) {
    ACT_LAUNCH(drop_path_add_kernel, T, vec, items, stream, (T *)y, (const T *)shortcut, (const T *)branch, scale,
               HW, C, (unsigned)items);
}

template <typename T>
static void drop_path_backward_launch(void *dbranch, const void *dy, const float *scale, int HW, int C,
                                      size_t items, int vec, cudaStream_t stream) {
    ACT_LAUNCH(drop_path_backward_kernel, T, vec, items, stream, (T *)dbranch, (const T *)dy, scale, HW, C,
               (unsigned)items);
}

extern "C" void drop_path_masks(float *scale, int64_t *counter, const float *keep, int blocks, int N,
                                uint64_t seed, cudaStream_t stream) {
    const char *fn = "drop_path_masks";
    if (blocks < 0 || N < 0) kernel_bad_input(fn, "blocks and N must be >= 0 (got %d, %d)", blocks, N);
    if ((long)blocks * N > 0x7fffffffL) kernel_bad_input(fn, "blocks * N = %ld is too large", (long)blocks * N);
    if (!scale || !counter || !keep) kernel_bad_input(fn, "scale, counter and keep must be device pointers (one is NULL)");
    CHECK_CUDA(pdl_launch(drop_path_masks_kernel, 1, ACT_THREADS, stream, scale, counter, keep, blocks, N, seed));
}

extern "C" void drop_path_add_forward(void *y, const void *shortcut, const void *branch, const float *scale, int N,
                                      int HW, int C, elem_type type, cudaStream_t stream) {
    const char *fn = "drop_path_add_forward";
    act_check_nhwc(fn, N, HW, C);
    act_check_type(fn, type);
    if (!y || !shortcut || !branch || !scale)
        kernel_bad_input(fn, "y, shortcut, branch and scale must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, type, y, shortcut, branch, NULL);
    size_t items = (size_t)N * HW * (C / vec);
    act_check_items(fn, items);
    ACT_TYPED(type, drop_path_add_launch, y, shortcut, branch, scale, HW, C, items, vec, stream);
}

extern "C" void drop_path_backward(void *dbranch, const void *dy, const float *scale, int N, int HW, int C,
                                   elem_type type, cudaStream_t stream) {
    const char *fn = "drop_path_backward";
    act_check_nhwc(fn, N, HW, C);
    act_check_type(fn, type);
    if (!dbranch || !dy || !scale) kernel_bad_input(fn, "dbranch, dy and scale must be device pointers (one is NULL)");
    if (N == 0) return;
    int vec = act_vec(C, type, dbranch, dy, NULL, NULL);
    size_t items = (size_t)N * HW * (C / vec);
    act_check_items(fn, items);
    ACT_TYPED(type, drop_path_backward_launch, dbranch, dy, scale, HW, C, items, vec, stream);
}
