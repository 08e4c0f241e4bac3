/* Depthwise 3x3 convolution (groups = channels, padding 1, stride 1 or 2, no bias) over NHWC
 * activations, exported to C. Weights are [C, 3, 3], which is timm's [C, 1, 3, 3] and cuDNN's
 * grouped NHWC filter [C, 3, 3, 1] in the same memory order. Argument order: outputs, inputs,
 * sizes, type, scratch, stream; every launcher checks its arguments (message naming the function
 * and the argument, exit 2) and its launch. models/layers/depthwise.c measures these against cuDNN's
 * grouped convolution per direction and keeps the faster.
 * Sizes: x [N, H, W, C], y [N, Ho, Wo, C] with Ho = (H - 1) / stride + 1 (and Wo alike).
 * Element type: x, y, w and their gradients are all float32 (ELEM_F32) or all bfloat16
 * (ELEM_BF16: a bfloat16 model's activations and the arena's bfloat16 weight copy, as autocast
 * runs a convolution); products are summed in float and each output is rounded once. */
#ifndef SUITE_DEPTHWISE_KERNELS_H
#define SUITE_DEPTHWISE_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>

#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y[n, ho, wo, c] = sum_{r, s < 3} x[n, ho * stride - 1 + r, wo * stride - 1 + s, c] * w[c, r, s]
 * (cells outside the input count as zero). */
void depthwise_forward(void *y, const void *x, const void *w, int N, int H, int W, int C, int stride,
                       int Ho, int Wo, elem_type type, cudaStream_t stream);
/* dx (overwritten) = the gradient of x for the gradient dy of y: each input cell gathers the
 * outputs whose windows hold it (no atomics, no memset). */
void depthwise_backward_data(void *dx, const void *dy, const void *w, int N, int H, int W, int C,
                             int stride, int Ho, int Wo, elem_type type, cudaStream_t stream);
/* dw (overwritten) = sum over n, ho, wo of dy * the matching x. Blocks take slices of the output
 * pixels, write per-slice float partial sums into scratch, and the last block of each channel tile
 * to finish adds them in a fixed order (deterministic, one launch, no host round trip) and rounds
 * once into dw. scratch: depthwise_scratch_bytes(C) bytes, zeroed once when allocated (the arena
 * zeroes its scratch region); every call leaves its counters zero again, so layers on one stream
 * can share one scratch and a captured graph replays without a reset. */
size_t depthwise_scratch_bytes(int C);
void depthwise_backward_filter(void *dw, const void *dy, const void *x, int N, int H, int W, int C,
                               int stride, int Ho, int Wo, elem_type type, void *scratch, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
