/* Activations and the small per-sample ops of EfficientNet's blocks, exported to C: SiLU, the
 * squeeze-excitation gate (sigmoid fused into the scale), stochastic depth (drop path), and batch
 * norm with an activation kind. Activations are NHWC float32 seen as [N, HW, C] where an op is per
 * sample and channel. Argument order: outputs, inputs, sizes, scratch, stream. Every launcher
 * checks its arguments (a message naming the function and the argument, exit 2) and its launch.
 * References: tests/gpu_efficientnet.c and tests/gpu_batchnorm.c hold double-precision CPU
 * versions. */
#ifndef SUITE_ACTIVATION_H
#define SUITE_ACTIVATION_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { ACT_NONE = 0, ACT_RELU = 1, ACT_SILU = 2 } act_kind;

/* ---- batch norm + activation (kernels/batchnorm.cu) -------------------------------------------
 * bn_forward_train / bn_forward_infer / bn_backward of kernels/kernels.h with an activation kind
 * in place of the relu flag (those three are these with ACT_RELU or ACT_NONE):
 *   ACT_NONE: y = bn(x) + residual
 *   ACT_RELU: y = relu(bn(x) + residual)    ResNet: the shortcut joins before the ReLU
 *   ACT_SILU: y = silu(bn(x)) + residual    EfficientNet: the skip joins the activated branch
 * (residual may be NULL). The backward needs y only for the ReLU mask and beta only for SiLU,
 * whose pre-activation gamma * xhat + beta it recomputes from x. dresidual, when not NULL,
 * receives the gradient where the residual joined: dy masked by the ReLU, or dy itself (ACT_NONE,
 * ACT_SILU). Scratch rules as in kernels.h (bn_scratch_bytes, zero once, left zero). */
void bn_act_forward_train(float *y, float *mean, float *invstd, float *running_mean, float *running_var,
                          const float *x, const float *residual, const float *gamma, const float *beta,
                          int rows, int C, float eps, float momentum, act_kind act, void *scratch,
                          cudaStream_t stream);
void bn_act_forward_infer(float *y, const float *x, const float *residual, const float *gamma,
                          const float *beta, const float *running_mean, const float *running_var,
                          int rows, int C, float eps, act_kind act, cudaStream_t stream);
void bn_act_backward(float *dx, float *dresidual, float *dgamma, float *dbeta, const float *dy,
                     const float *x, const float *y, const float *gamma, const float *beta,
                     const float *mean, const float *invstd, int rows, int C, act_kind act,
                     void *scratch, cudaStream_t stream);

/* ---- SiLU (kernels/activation.cu) --------------------------------------------------------------
 * y = x * sigmoid(x); dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x). n elements; dx may be dy. */
void silu_forward(float *y, const float *x, size_t n, cudaStream_t stream);
void silu_backward(float *dx, const float *dy, const float *x, size_t n, cudaStream_t stream);

/* ---- squeeze-excitation gate ---------------------------------------------------------------------
 * The gate's logits e[N, C] come from the block's excitation FC; the sigmoid is applied inside
 * these kernels, so no gate tensor is stored.
 * se_scale_forward:         y[n, p, c] = x[n, p, c] * sigmoid(e[n, c]) for p < HW.
 * se_scale_backward_gate:   de[n, c] = s (1 - s) * sum_p dy[n, p, c] * x[n, p, c], s = sigmoid(e).
 * se_scale_backward_input:  dx[n, p, c] = dy[n, p, c] * sigmoid(e[n, c]) + dmean[n, c] / HW: the
 *                           gate's input gradient plus that of the channel mean the squeeze took
 *                           from the same x (dmean: the gradient of that mean, [N, C]). */
void se_scale_forward(float *y, const float *x, const float *e, int N, int HW, int C, cudaStream_t stream);
void se_scale_backward_gate(float *de, const float *dy, const float *x, const float *e, int N, int HW, int C,
                            cudaStream_t stream);
void se_scale_backward_input(float *dx, const float *dy, const float *e, const float *dmean, int N, int HW,
                             int C, cudaStream_t stream);

/* ---- stochastic depth (drop path) ------------------------------------------------------------------
 * drop_path_masks: for each of `blocks` residual branches k and sample n, scale[k * N + n] is
 * 1 / keep[k] with probability keep[k] and 0 otherwise (timm's DropPath with scale_by_keep), drawn
 * from a counter-based hash of (seed, *counter, k, n); then *counter is incremented. Everything is
 * on the device, so a captured graph draws new masks on every replay. keep[k] in (0, 1].
 * drop_path_add_forward: y[n, p, c] = shortcut[n, p, c] + branch[n, p, c] * scale[n].
 * drop_path_backward:    dbranch[n, p, c] = dy[n, p, c] * scale[n] (the shortcut's gradient is dy). */
void drop_path_masks(float *scale, int64_t *counter, const float *keep, int blocks, int N, uint64_t seed,
                     cudaStream_t stream);
void drop_path_add_forward(float *y, const float *shortcut, const float *branch, const float *scale, int N,
                           int HW, int C, cudaStream_t stream);
void drop_path_backward(float *dbranch, const float *dy, const float *scale, int N, int HW, int C,
                        cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
