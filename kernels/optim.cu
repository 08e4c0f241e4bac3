/* Optimizer update and learning-rate schedule, both device-side so the captured training step
 * needs no host work between replays.
 *   sgd_update: one fused pass over the flat parameter, gradient and momentum buffers (the arena
 *     lays them out [weights with decay | the rest]): 3 reads and 2 writes per parameter, float4
 *     wide, grid-stride with enough blocks in flight to saturate memory bandwidth.
 *   adamw_update: the same shape of pass with two moment buffers (4 reads, 3 writes).
 *   lr_schedule_step: one thread evaluates the shared lr_at formula (kernels/schedule.h). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "kernels/pdl.cuh"
#include "models/check.h"

#define SGD_THREADS 256
#define SGD_BLOCKS_PER_SM 8


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
sgd_update_kernel(float *params, float *momentum_buf, const float *grads, const float *lr_ptr,
                  size_t n, size_t n_decay, float momentum, float weight_decay, int nesterov) {
    pdl_wait();
    pdl_release();
    float lr = *lr_ptr;
    size_t nvec = n / VEC;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < nvec;
         i += (size_t)gridDim.x * blockDim.x) {
        float p[VEC], g[VEC], b[VEC];
        if constexpr (VEC == 4) {
            float4 pv = ((const float4 *)params)[i], gv = ((const float4 *)grads)[i];
            float4 bv = momentum_buf ? ((const float4 *)momentum_buf)[i] : make_float4(0, 0, 0, 0);
            p[0] = pv.x; p[1] = pv.y; p[2] = pv.z; p[3] = pv.w;
            g[0] = gv.x; g[1] = gv.y; g[2] = gv.z; g[3] = gv.w;
            b[0] = bv.x; b[1] = bv.y; b[2] = bv.z; b[3] = bv.w;
        } else {
            p[0] = params[i];
            g[0] = grads[i];
            b[0] = momentum_buf ? momentum_buf[i] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < VEC; j++)
            sgd_step(&p[j], &b[j], g[j], i * VEC + j, n_decay, lr, momentum, weight_decay, nesterov);
        if constexpr (VEC == 4) {
            ((float4 *)params)[i] = make_float4(p[0], p[1], p[2], p[3]);
            if (momentum_buf) ((float4 *)momentum_buf)[i] = make_float4(b[0], b[1], b[2], b[3]);
        } else {
            params[i] = p[0];
            if (momentum_buf) momentum_buf[i] = b[0];
        }
    }
    if (VEC > 1 && blockIdx.x == 0 && threadIdx.x < n - nvec * VEC) {
        size_t i = nvec * VEC + threadIdx.x;
        float p = params[i], b = momentum_buf ? momentum_buf[i] : 0.0f;
        sgd_step(&p, &b, grads[i], i, n_decay, lr, momentum, weight_decay, nesterov);
        params[i] = p;
        if (momentum_buf) momentum_buf[i] = b;
    }
}

extern "C" void sgd_update(float *params, float *momentum_buf, const float *grads, const float *lr,
                           size_t n, size_t n_decay, float momentum, float weight_decay,
                           int nesterov, cudaStream_t stream) {
    const char *fn = "sgd_update";
    if (!params || !grads || !lr)
        kernel_bad_input(fn, "params, grads and lr must be device pointers (one is NULL)");
    if (!momentum_buf && momentum != 0.0f)
        kernel_bad_input(fn, "momentum_buf must be a device pointer when momentum is %g (got NULL)",
                        momentum);
    if (n_decay > n) kernel_bad_input(fn, "n_decay (%zu) must be <= n (%zu)", n_decay, n);
    if (n == 0) return;
    /* Momentum 0 is plain SGD, as in PyTorch, which keeps no buffer: the update is the same and
     * the buffer is neither read nor written (2 of the 5 memory streams saved). */
    if (momentum == 0.0f) momentum_buf = NULL;
    int vec = (((uintptr_t)params | (uintptr_t)grads | (uintptr_t)momentum_buf) & 15) == 0 ? 4 : 1;
    size_t items = n / vec, blocks = (items + SGD_THREADS - 1) / SGD_THREADS;
    size_t cap = (size_t)kernel_sm_count() * SGD_BLOCKS_PER_SM;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    if (vec == 4)
        CHECK_CUDA(pdl_launch(sgd_update_kernel<4>, (unsigned)blocks, SGD_THREADS, stream, params, momentum_buf,
                              grads, lr, n, n_decay, momentum, weight_decay, nesterov));
    else
        CHECK_CUDA(pdl_launch(sgd_update_kernel<1>, (unsigned)blocks, SGD_THREADS, stream, params, momentum_buf,
                              grads, lr, n, n_decay, momentum, weight_decay, nesterov));
}

#define ADAMW_VEC 4

__global__ void __launch_bounds__(SGD_THREADS)
adamw_update_kernel(float *params, float *m, float *v, const float *grads, const float *lr_ptr,
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
            float4 pv = ((const float4 *)params)[i], gv = ((const float4 *)grads)[i];
            float4 av = ((const float4 *)m)[i], bv = ((const float4 *)v)[i];
            p[0] = pv.x, p[1] = pv.y, p[2] = pv.z, p[3] = pv.w;
            g[0] = gv.x, g[1] = gv.y, g[2] = gv.z, g[3] = gv.w;
            a[0] = av.x, a[1] = av.y, a[2] = av.z, a[3] = av.w;
            b[0] = bv.x, b[1] = bv.y, b[2] = bv.z, b[3] = bv.w;
        } else {
            /* scalar items, or the last float4 item running past n: element by element */
            count = (int)(n - base < (size_t)vec ? n - base : (size_t)vec);
            for (int j = 0; j < count; j++)
                p[j] = params[base + j], g[j] = grads[base + j], a[j] = m[base + j], b[j] = v[base + j];
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
        } else {
            for (int j = 0; j < count; j++)
                params[base + j] = p[j], m[base + j] = a[j], v[base + j] = b[j];
        }
    }
}

extern "C" void adamw_update(float *params, float *m, float *v, const float *grads, const float *lr,
                             const int64_t *step, size_t n, size_t n_decay, double beta1, double beta2,
                             float eps, float weight_decay, cudaStream_t stream) {
    const char *fn = "adamw_update";
    if (!params || !m || !v || !grads || !lr || !step)
        kernel_bad_input(fn, "params, m, v, grads, lr and step must be device pointers (one is NULL)");
    if (n_decay > n) kernel_bad_input(fn, "n_decay (%zu) must be <= n (%zu)", n_decay, n);
    if (!(beta1 >= 0.0 && beta1 < 1.0 && beta2 >= 0.0 && beta2 < 1.0 && eps > 0.0f))
        kernel_bad_input(fn, "betas must be in [0, 1) and eps > 0 (got %g, %g, %g)", beta1, beta2, eps);
    if (n == 0) return;
    int vec = (((uintptr_t)params | (uintptr_t)grads | (uintptr_t)m | (uintptr_t)v) & 15) == 0 ? ADAMW_VEC : 1;
    size_t items = (n + vec - 1) / vec, blocks = (items + SGD_THREADS - 1) / SGD_THREADS;
    size_t cap = (size_t)kernel_sm_count() * SGD_BLOCKS_PER_SM;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    CHECK_CUDA(pdl_launch(adamw_update_kernel, (unsigned)blocks, SGD_THREADS, stream, params, m, v, grads, lr, step,
                          n, n_decay, beta1, beta2, eps, weight_decay, vec));
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
