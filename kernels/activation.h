/* Activations and the small per-sample ops of EfficientNet's blocks, exported to C: SiLU, the
 * squeeze-excitation gate (sigmoid fused into the scale) and stochastic depth (drop path).
 * Activations are NHWC seen as [N, HW, C] where an op is per sample and channel (batch norm with
 * SiLU is in kernels.h), of one element type: float32, or bfloat16 under --precision bf16
 * (elem_type; arithmetic in float, each output rounded once). Per-sample float inputs (the gate's
 * logits, the drop-path scales) are float32 in either precision: they come out of a linear layer
 * (whose output is float32, models/layers/linear.h) or the mask kernel. Argument order: outputs, inputs,
 * sizes, type, scratch, stream. Every launcher checks its arguments (a message naming the
 * function and the argument, exit 2) and its launch.
 * References: tests/models/gpu_efficientnet.c (float32), tests/models/gpu_bf16_efficientnet.c (bfloat16) and
 * tests/kernels/gpu_batchnorm.c hold double-precision CPU versions. */
#ifndef SUITE_ACTIVATION_H
#define SUITE_ACTIVATION_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- SiLU (kernels/activation.cu) --------------------------------------------------------------
 * y = x * sigmoid(x); dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x). n elements; dx may be dy.
 * x, the pre-activation, is float32 (a linear layer's output); y, dy and dx are of `type`. */
void silu_forward(void *y, const float *x, size_t n, elem_type type, cudaStream_t stream);
void silu_backward(void *dx, const void *dy, const float *x, size_t n, elem_type type, cudaStream_t stream);

/* ---- squeeze-excitation gate ---------------------------------------------------------------------
 * The gate's logits e[N, C] (float32) come from the block's excitation FC; the sigmoid is applied
 * inside these kernels, so no gate tensor is stored. x, y, dy, dx, de and dmean are of `type`.
 * se_scale_forward:         y[n, p, c] = x[n, p, c] * sigmoid(e[n, c]) for p < HW.
 * se_scale_backward_gate:   de[n, c] = s (1 - s) * sum_p dy[n, p, c] * x[n, p, c], s = sigmoid(e)
 *                           (summed in float, rounded once: de feeds the FC's backward).
 * se_scale_backward_input:  dx[n, p, c] = dy[n, p, c] * sigmoid(e[n, c]) + dmean[n, c] / HW: the
 *                           gate's input gradient plus that of the channel mean the squeeze took
 *                           from the same x (dmean: the gradient of that mean, [N, C]). */
void se_scale_forward(void *y, const void *x, const float *e, int N, int HW, int C, elem_type type,
                      cudaStream_t stream);
void se_scale_backward_gate(void *de, const void *dy, const void *x, const float *e, int N, int HW, int C,
                            elem_type type, cudaStream_t stream);
void se_scale_backward_input(void *dx, const void *dy, const float *e, const void *dmean, int N, int HW, int C,
                             elem_type type, cudaStream_t stream);

/* ---- stochastic depth (drop path) ------------------------------------------------------------------
 * drop_path_masks: for each of `blocks` residual branches k and sample n, scale[k * N + n] is
 * 1 / keep[k] with probability keep[k] and 0 otherwise (timm's DropPath with scale_by_keep), drawn
 * from a counter-based hash of (seed, *counter, k, n); then *counter is incremented. Everything is
 * on the device, so a captured graph draws new masks on every replay. keep[k] in (0, 1].
 * drop_path_add_forward: y[n, p, c] = shortcut[n, p, c] + branch[n, p, c] * scale[n].
 * drop_path_backward:    dbranch[n, p, c] = dy[n, p, c] * scale[n] (the shortcut's gradient is dy).
 * y, shortcut, branch, dy and dbranch are of `type`; the scales are float32. */
void drop_path_masks(float *scale, int64_t *counter, const float *keep, int blocks, int N, uint64_t seed,
                     cudaStream_t stream);
void drop_path_add_forward(void *y, const void *shortcut, const void *branch, const float *scale, int N, int HW,
                           int C, elem_type type, cudaStream_t stream);
void drop_path_backward(void *dbranch, const void *dy, const float *scale, int N, int HW, int C, elem_type type,
                        cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
