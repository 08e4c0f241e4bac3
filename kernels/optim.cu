/* Optimizer update and learning-rate schedule, both device-side so the captured training step
 * needs no host work between replays.
 *   sgd_update: one fused pass over the flat parameter, gradient and momentum buffers (the arena
 *     lays them out [weights with decay | the rest]): 3 reads and 2 writes per parameter, float4
 *     wide, grid-stride with enough blocks in flight to saturate memory bandwidth.
 *   adamw_update: the same shape of pass with two moment buffers (4 reads, 3 writes).
 *   bf16 training: the first n_half elements (the weights with decay) also have bfloat16 copies.
 *     The pass reads their gradient from the bfloat16 copy the layers wrote (2 bytes, not 4) and
 *     stores each new weight a second time as bfloat16 (2 bytes more): that replaces the two cast
 *     passes that surrounded it (weights to bfloat16 before the forward, gradients to float32
 *     after the backward, 6 bytes each), 20 bytes per weight instead of 32 for SGD with momentum,
 *     28 instead of 40 for AdamW. The arithmetic and the optimizer state stay float32.
 *   lr_schedule_step: one thread evaluates the shared lr_at formula (kernels/schedule.h). */
#include <cuda_bf16.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "kernels/pdl.cuh"
#include "kernels/check.h"

#define SGD_THREADS 256
#define SGD_BLOCKS_PER_SM 8

/* The bfloat16 copies of elements [0, n) of the flat buffers; either pointer may be NULL. */
struct half_copies {
    __nv_bfloat16 *weights;      /* written: the new weights, rounded to nearest even */
    const __nv_bfloat16 *grads;  /* read instead of the float32 gradients */
    size_t n;
};

/* Four bfloat16 values: one 8-byte load or store (a float4 item's worth). */
struct __align__(8) bf16x4 {
    __nv_bfloat162 lo, hi;
};

__device__ __forceinline__ float grad_of(const float *grads, half_copies h, size_t i) {
    return h.grads && i < h.n ? __bfloat162float(h.grads[i]) : grads[i];
}

/* The gradients of float4 item i: 8 bytes of bfloat16 when the item lies below h.n, a float4
 * when it lies above, element by element when h.n cuts through it. */
__device__ __forceinline__ void grads_of4(float g[4], const float *grads, half_copies h, size_t i) {
    size_t base = 4 * i;
    if (h.grads && base + 4 <= h.n) {
        bf16x4 v = ((const bf16x4 *)h.grads)[i];
        float2 lo = __bfloat1622float2(v.lo), hi = __bfloat1622float2(v.hi);
        g[0] = lo.x, g[1] = lo.y, g[2] = hi.x, g[3] = hi.y;
    } else if (!h.grads || base >= h.n) {
        float4 v = ((const float4 *)grads)[i];
        g[0] = v.x, g[1] = v.y, g[2] = v.z, g[3] = v.w;
    } else {
        for (int j = 0; j < 4; j++) g[j] = grad_of(grads, h, base + j);
    }
}

/* The rounding of cast_f32_to_bf16 (kernels/fill.cu), so a later cast would write the same bits. */
__device__ __forceinline__ void store_half(half_copies h, size_t i, float p) {
    if (h.weights && i < h.n) h.weights[i] = __float2bfloat16_rn(p);
}

__device__ __forceinline__ void store_half4(half_copies h, size_t i, const float p[4]) {
    size_t base = 4 * i;
    if (!h.weights || base >= h.n) return;
    if (base + 4 <= h.n) {
        bf16x4 v;
        v.lo = __floats2bfloat162_rn(p[0], p[1]), v.hi = __floats2bfloat162_rn(p[2], p[3]);
        ((bf16x4 *)h.weights)[i] = v;
    } else {
        for (int j = 0; j < 4; j++) store_half(h, base + j, p[j]);
    }
}

/* torch.optim.SGD, dampening 0, for one element. */
__device__ __forceinline__ float sgd_step(float *p, float *b, float grad, size_t index,
                                          size_t n_decay, float lr, float momentum,
                                          float weight_decay, int nesterov) {
    float g = index < n_decay ? fmaf(weight_decay, *p, grad) : grad;
    float buf = fmaf(momentum, *b, g);
    float step = nesterov ? fmaf(momentum, buf, g) : buf;
    *b = buf;
    *p = fmaf(-lr, step, *p);
    return buf;
}

/* VEC = 4: the first n/4*4 elements as float4, the n % 4 tail by the first threads of block 0.
 * momentum_buf is NULL for plain SGD (momentum 0): no buffer traffic at all. */
template <int VEC>
__global__ void __launch_bounds__(SGD_THREADS)
sgd_update_kernel(float *params, float *momentum_buf, const float *grads, half_copies half, const float *lr_ptr,
                  size_t n, size_t n_decay, float momentum, float weight_decay, int nesterov) {
    pdl_wait();
    pdl_release();
    float lr = *lr_ptr;
    size_t nvec = n / VEC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nvec;
         i += (size_t)gridDim.x * blockDim.x) {
        float p[VEC], g[VEC], b[VEC];
        if constexpr (VEC == 4) {
            float4 pv = ((const float4 *)params)[i];
            float4 bv = momentum_buf ? ((const float4 *)momentum_buf)[i] : make_float4(0, 0, 0, 0);
            p[0] = pv.x; p[1] = pv.y; p[2] = pv.z; p[3] = pv.w;
            b[0] = bv.x; b[1] = bv.y; b[2] = bv.z; b[3] = bv.w;
            grads_of4(g, grads, half, i);
        } else {
            p[0] = params[i];
            g[0] = grad_of(grads, half, i);
            b[0] = momentum_buf ? momentum_buf[i] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < VEC; j++)
            sgd_step(&p[j], &b[j], g[j], i * VEC + j, n_decay, lr, momentum, weight_decay, nesterov);
        if constexpr (VEC == 4) {
            ((float4 *)params)[i] = make_float4(p[0], p[1], p[2], p[3]);
            if (momentum_buf) ((float4 *)momentum_buf)[i] = make_float4(b[0], b[1], b[2], b[3]);
            store_half4(half, i, p);
        } else {
            params[i] = p[0];
            if (momentum_buf) momentum_buf[i] = b[0];
            store_half(half, i, p[0]);
        }
    }
    if (VEC > 1 && blockIdx.x == 0 && threadIdx.x < n - nvec * VEC) {
        size_t i = nvec * VEC + threadIdx.x;
        float p = params[i], b = momentum_buf ? momentum_buf[i] : 0.0f;
        sgd_step(&p, &b, grad_of(grads, half, i), i, n_decay, lr, momentum, weight_decay, nesterov);
        params[i] = p;
        if (momentum_buf) momentum_buf[i] = b;
        store_half(half, i, p);
    }
}

/* Checks the bfloat16 copies' arguments. n_half > 0 with neither copy is a caller's mistake (the
 * trainer passes 0 without half weights), so it is refused rather than read as 0. */
static half_copies half_copies_of(const char *fn, void *half_weights, const void *half_grads, size_t n_half,
                                  size_t n) {
    if (n_half > n) kernel_bad_input(fn, "n_half (%zu) must be <= n (%zu)", n_half, n);
    if (n_half > 0 && !half_weights && !half_grads)
        kernel_bad_input(fn, "n_half is %zu but half_weights and half_grads are both NULL (pass 0)", n_half);
    half_copies h = {(__nv_bfloat16 *)half_weights, (const __nv_bfloat16 *)half_grads, n_half};
    return h;
}

/* 4 wide when the float buffers are 16-byte aligned and the bfloat16 copies 8-byte aligned (the
 * arena's 256-byte blocks always are; NULL counts as aligned). */
static int update_vec(half_copies h, const void *a, const void *b, const void *c, const void *d) {
    return kernel_aligned(a, 16) && kernel_aligned(b, 16) && kernel_aligned(c, 16) && kernel_aligned(d, 16) &&
           kernel_aligned(h.weights, 8) && kernel_aligned(h.grads, 8) ? 4 : 1;
}

static unsigned update_blocks(size_t items) {
    size_t blocks = (items + SGD_THREADS - 1) / SGD_THREADS;
    size_t cap = (size_t)kernel_sm_count() * SGD_BLOCKS_PER_SM;
    if (blocks > cap) blocks = cap;
    return (unsigned)(blocks < 1 ? 1 : blocks);
}

extern "C" void sgd_update(float *params, float *momentum_buf, void *half_weights, const float *grads,
                           const void *half_grads, const float *lr, size_t n, size_t n_decay, size_t n_half,
                           float momentum, float weight_decay, int nesterov, cudaStream_t stream) {
    const char *fn = "sgd_update";
    if (!params || !grads || !lr)
        kernel_bad_input(fn, "params, grads and lr must be device pointers (one is NULL)");
    if (!momentum_buf && momentum != 0.0f)
        kernel_bad_input(fn, "momentum_buf must be a device pointer when momentum is %g (got NULL)",
                        momentum);
    if (n_decay > n) kernel_bad_input(fn, "n_decay (%zu) must be <= n (%zu)", n_decay, n);
    half_copies half = half_copies_of(fn, half_weights, half_grads, n_half, n);
    if (n == 0) return;
    /* Momentum 0 is plain SGD, as in PyTorch, which keeps no buffer: the update is the same and
     * the buffer is neither read nor written (2 of the 5 memory streams saved). */
    if (momentum == 0.0f) momentum_buf = NULL;
    int vec = update_vec(half, params, grads, momentum_buf, NULL);
    unsigned blocks = update_blocks(n / vec);
    if (vec == 4)
        CHECK_CUDA(pdl_launch(sgd_update_kernel<4>, blocks, SGD_THREADS, stream, params, momentum_buf, grads, half,
                              lr, n, n_decay, momentum, weight_decay, nesterov));
    else
        CHECK_CUDA(pdl_launch(sgd_update_kernel<1>, blocks, SGD_THREADS, stream, params, momentum_buf, grads, half,
                              lr, n, n_decay, momentum, weight_decay, nesterov));
}

#define ADAMW_VEC 4

__global__ void __launch_bounds__(SGD_THREADS)
adamw_update_kernel(float *params, float *m, float *v, const float *grads, half_copies half, const float *lr_ptr,
                    const int64_t *step_ptr, size_t n, size_t n_decay, double beta1_d, double beta2_d,
                    float eps, float weight_decay, int vec) {
    pdl_wait();
    pdl_release();
    float lr = *lr_ptr;
    double t = (double)*step_ptr;
    float bias1 = (float)(1.0 - pow(beta1_d, t)), bias2 = (float)(1.0 - pow(beta2_d, t));
    float beta1 = (float)beta1_d, beta2 = (float)beta2_d;
    float rest1 = (float)(1.0 - beta1_d), rest2 = (float)(1.0 - beta2_d);
    float step_size = lr / bias1, bias2_sqrt = sqrtf(bias2), decay = 1.0f - lr * weight_decay;
    size_t items = (n + vec - 1) / vec;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < items;
         i += (size_t)gridDim.x * blockDim.x) {
        float p[ADAMW_VEC], g[ADAMW_VEC], a[ADAMW_VEC], b[ADAMW_VEC];
        size_t base = i * vec;
        int count = vec == ADAMW_VEC && base + ADAMW_VEC <= n ? ADAMW_VEC : 1;
        if (count == ADAMW_VEC) {
            float4 pv = ((const float4 *)params)[i];
            float4 av = ((const float4 *)m)[i], bv = ((const float4 *)v)[i];
            p[0] = pv.x, p[1] = pv.y, p[2] = pv.z, p[3] = pv.w;
            a[0] = av.x, a[1] = av.y, a[2] = av.z, a[3] = av.w;
            b[0] = bv.x, b[1] = bv.y, b[2] = bv.z, b[3] = bv.w;
            grads_of4(g, grads, half, i);
        } else {
            /* scalar items, or the last float4 item running past n: element by element */
            count = (int)(n - base < (size_t)vec ? n - base : (size_t)vec);
            for (int j = 0; j < count; j++)
                p[j] = params[base + j], g[j] = grad_of(grads, half, base + j), a[j] = m[base + j], b[j] = v[base + j];
        }
#pragma unroll
        for (int j = 0; j < ADAMW_VEC; j++) {
            if (j >= count) break;
            if (base + j < n_decay) p[j] *= decay;
            a[j] = fmaf(beta1, a[j], rest1 * g[j]);
            b[j] = fmaf(beta2, b[j], rest2 * g[j] * g[j]);
            p[j] -= step_size * a[j] / (sqrtf(b[j]) / bias2_sqrt + eps);
        }
        if (count == ADAMW_VEC && vec == ADAMW_VEC) {
            ((float4 *)params)[i] = make_float4(p[0], p[1], p[2], p[3]);
            ((float4 *)m)[i] = make_float4(a[0], a[1], a[2], a[3]);
            ((float4 *)v)[i] = make_float4(b[0], b[1], b[2], b[3]);
            store_half4(half, i, p);
        } else {
            for (int j = 0; j < count; j++) {
                params[base + j] = p[j], m[base + j] = a[j], v[base + j] = b[j];
                store_half(half, base + j, p[j]);
            }
        }
    }
}

extern "C" void adamw_update(float *params, float *m, float *v, void *half_weights, const float *grads,
                             const void *half_grads, const float *lr, const int64_t *step, size_t n, size_t n_decay,
                             size_t n_half, double beta1, double beta2, float eps, float weight_decay,
                             cudaStream_t stream) {
    const char *fn = "adamw_update";
    if (!params || !m || !v || !grads || !lr || !step)
        kernel_bad_input(fn, "params, m, v, grads, lr and step must be device pointers (one is NULL)");
    if (n_decay > n) kernel_bad_input(fn, "n_decay (%zu) must be <= n (%zu)", n_decay, n);
    half_copies half = half_copies_of(fn, half_weights, half_grads, n_half, n);
    if (!(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0 && eps > 0.0f))
        kernel_bad_input(fn, "betas must be in [0, 1) and eps > 0 (got %g, %g, %g)", beta1, beta2, eps);
    if (n == 0) return;
    int vec = update_vec(half, params, grads, m, v); /* ADAMW_VEC or 1 */
    CHECK_CUDA(pdl_launch(adamw_update_kernel, update_blocks((n + vec - 1) / vec), SGD_THREADS, stream, params, m,
                          v, grads, half, lr, step, n, n_decay, beta1, beta2, eps, weight_decay, vec));
}

__global__ void lr_schedule_step_kernel(float *lr, int64_t *step, lr_schedule schedule) {
    pdl_wait();
    pdl_release();
    int64_t s = *step;
    *lr = lr_at(&schedule, (long)s);
    *step = s + 1;
}

extern "C" void lr_schedule_step(float *lr, int64_t *step, lr_schedule schedule,
                                 cudaStream_t stream) {
    if (!lr || !step)
        kernel_bad_input("lr_schedule_step", "lr and step must be device pointers (one is NULL)");
    CHECK_CUDA(pdl_launch(lr_schedule_step_kernel, 1, 1, stream, lr, step, schedule));
}
