/* Softmax cross-entropy with label smoothing, fused with its gradient and the accuracy count, so
 * the classifier head costs one kernel per step. One warp per row: K (10 to a few thousand) is
 * read once from memory and twice more from L1 (max and argmax; exp sum; gradient), float4
 * wide when K % 4 == 0 and the pointers allow. Per-row loss and hit are summed per block and
 * added to the two device accumulators with one atomic each.
 * The row loss is written without cancellation: with m = max z and S = sum exp(z - m),
 *   loss = (1-s) * (m - z_label + log S) + s * (log S - mean(z - m)),
 * both terms >= 0. A label outside [0, K) adds nothing to the loss or the hits and gets a zero
 * gradient row. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/kernels.h"
#include "kernels/launch.h"
#include "kernels/pdl.cuh"
#include "kernels/check.h"

#define CE_THREADS 256
#define CE_WARPS (CE_THREADS / 32)


template <int VEC>
__device__ __forceinline__ void ce_load(float v[VEC], const float *p) {
    if constexpr (VEC == 4) {
        float4 q = *(const float4 *)p;
        v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
    } else {
        v[0] = *p;
    }
}

/* dlogits NULL: evaluation (no gradient). */
template <int VEC>
__global__ void __launch_bounds__(CE_THREADS)
softmax_ce_kernel(float *dlogits, float *loss_sum, float *correct, const float *logits,
                  const int32_t *labels, int rows, int K, float smoothing, float grad_scale) {
    pdl_wait();
    pdl_release();
    __shared__ float block_loss[CE_WARPS], block_hits[CE_WARPS];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int row = blockIdx.x * CE_WARPS + warp;
    float row_loss = 0.0f, row_hit = 0.0f;
    if (row < rows) {
        const float *z = logits + (size_t)row * K;
        /* Pass 1: max with its first index (torch.argmax). */
        float m = -INFINITY;
        int arg = K;
        for (int k = lane * VEC; k < K; k += 32 * VEC) {
            float v[VEC];
            ce_load<VEC>(v, z + k);
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                if (v[j] > m) {
                    m = v[j];
                    arg = k + j;
                }
            }
        }
        for (int o = 16; o > 0; o /= 2) {
            float om = __shfl_xor_sync(0xffffffffu, m, o);
            int oa = __shfl_xor_sync(0xffffffffu, arg, o);
            if (om > m || (om == m && oa < arg)) {
                m = om;
                arg = oa;
            }
        }
        /* Pass 2: S = sum exp(z - m) and the sum of z - m (for the smoothing term). */
        float s = 0.0f, shifted_sum = 0.0f;
        for (int k = lane * VEC; k < K; k += 32 * VEC) {
            float v[VEC];
            ce_load<VEC>(v, z + k);
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                s += __expf(v[j] - m);
                shifted_sum += v[j] - m;
            }
        }
        for (int o = 16; o > 0; o /= 2) {
            s += __shfl_xor_sync(0xffffffffu, s, o);
            shifted_sum += __shfl_xor_sync(0xffffffffu, shifted_sum, o);
        }
        float log_s = __logf(s), lse = m + log_s;
        int label = labels[row];
        int valid = label >= 0 && label < K;
        if (valid) {
            float z_label = z[label];
            row_loss = (1.0f - smoothing) * ((m - z_label) + log_s) +
                       smoothing * (log_s - shifted_sum / (float)K);
            row_hit = arg == label ? 1.0f : 0.0f;
        }
        /* Pass 3: dlogits = (softmax - target) / N, zero for an invalid label. */
        if (dlogits) {
            float *d = dlogits + (size_t)row * K;
            float uniform = smoothing / (float)K, hot = 1.0f - smoothing;
            for (int k = lane * VEC; k < K; k += 32 * VEC) {
                float v[VEC];
                ce_load<VEC>(v, z + k);
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    float target = uniform + (k + j == label ? hot : 0.0f);
                    v[j] = valid ? (__expf(v[j] - lse) - target) * grad_scale : 0.0f;
                }
                if constexpr (VEC == 4) *(float4 *)(d + k) = make_float4(v[0], v[1], v[2], v[3]);
                else d[k] = v[0];
            }
        }
    }
    if (lane == 0) {
        block_loss[warp] = row_loss;
        block_hits[warp] = row_hit;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float l = 0.0f, h = 0.0f;
        for (int w = 0; w < CE_WARPS; w++) {
            l += block_loss[w];
            h += block_hits[w];
        }
        atomicAdd(loss_sum, l);
        if (h > 0.0f) atomicAdd(correct, h);
    }
}

static void ce_launch(float *dlogits, float *loss_sum, float *correct,
                      const float *logits, const int32_t *labels, int rows, int K, float smoothing,
                      float grad_scale, cudaStream_t stream) {
    unsigned blocks = (unsigned)((rows + CE_WARPS - 1) / CE_WARPS);
    int vec = K % 4 == 0 && ((uintptr_t)logits & 15) == 0 && ((uintptr_t)dlogits & 15) == 0 ? 4 : 1;
    if (vec == 4)
        CHECK_CUDA(pdl_launch(softmax_ce_kernel<4>, blocks, CE_THREADS, stream, dlogits, loss_sum, correct, logits,
                              labels, rows, K, smoothing, grad_scale));
    else
        CHECK_CUDA(pdl_launch(softmax_ce_kernel<1>, blocks, CE_THREADS, stream, dlogits, loss_sum, correct, logits,
                              labels, rows, K, smoothing, grad_scale));
}

static void ce_check(const char *fn, float *loss_sum, float *correct, const float *logits,
                     const int32_t *labels, int rows, const char *rows_name, int K, float smoothing) {
    if (rows < 0) kernel_bad_input(fn, "%s must be >= 0 (got %d)", rows_name, rows);
    if (K < 1) kernel_bad_input(fn, "K (classes) must be >= 1 (got %d)", K);
    if (!(smoothing >= 0.0f && smoothing <= 1.0f))
        kernel_bad_input(fn, "smoothing must be in [0, 1] (got %g)", smoothing);
    if (!loss_sum || !correct || !logits || !labels)
        kernel_bad_input(fn, "loss_sum, correct, logits and labels must be device pointers (one is NULL)");
}

extern "C" void softmax_ce_forward_backward(float *dlogits, float *loss_sum, float *correct,
                                            const float *logits, const int32_t *labels, int N,
                                            int K, float smoothing, cudaStream_t stream) {
    const char *fn = "softmax_ce_forward_backward";
    ce_check(fn, loss_sum, correct, logits, labels, N, "N", K, smoothing);
    if (!dlogits) kernel_bad_input(fn, "dlogits must be a device pointer (got NULL)");
    if (N == 0) return;
    ce_launch(dlogits, loss_sum, correct, logits, labels, N, K, smoothing, 1.0f / (float)N, stream);
}

extern "C" void softmax_ce_eval(float *loss_sum, float *correct, const float *logits,
                                const int32_t *labels, int n_valid, int K, float smoothing,
                                cudaStream_t stream) {
    const char *fn = "softmax_ce_eval";
    ce_check(fn, loss_sum, correct, logits, labels, n_valid, "n_valid", K, smoothing);
    if (n_valid == 0) return;
    ce_launch(NULL, loss_sum, correct, logits, labels, n_valid, K, smoothing, 0.0f, stream);
}
