/* Kernels of the vision transformers (CaiT) that cuBLAS does not provide, exported to C. Tokens
 * are rows of C channels, [batch, tokens, C] flattened to [rows, C]. Argument order: outputs,
 * inputs, sizes, element type, scratch, stream. Every reduction is deterministic: blocks write
 * partial sums in a fixed order and a second kernel adds them up in a fixed order (no atomics),
 * so two runs of one step give the same bits.
 * Element types (elem_type, kernels/kernels.h): the tensors marked "typed" below are float32 or
 * bfloat16 as `type` says (the activations a bf16 model keeps: LayerNorm outputs, matmul inputs
 * and outputs, attention weights, and their gradients); the residual stream and its gradient,
 * statistics, parameters and their float gradients are always float32. Arithmetic is float
 * either way; a bfloat16 store rounds to nearest even. References: tests/models/gpu_cait.c (float32)
 * and tests/models/gpu_bf16_cait.c (bfloat16) hold a double-precision CPU version of each kernel. */
#ifndef SUITE_TRANSFORMER_H
#define SUITE_TRANSFORMER_H

#include <cuda_runtime.h>
#include <stddef.h>

#include "kernels/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- LayerNorm over the C channels of each row (C <= 512) ------------------------------------
 * y (typed) = (x - mean) * rstd * gamma + beta with rstd = 1/sqrt(biased variance + eps), x float
 * (the residual stream); mean and rstd are kept per row for the backward pass.
 * The "cat" forms read the rows of cat([first, x], dim=1) without building it: rows come in
 * groups of `tokens` per sample, row 0 of a group is first[b] ([batch, C]) and rows 1.. are
 * x[b] ([batch, tokens - 1, C]) (CaiT's class token prepended to the patch tokens). */
void layernorm_forward(void *y, float *mean, float *rstd, const float *x, const float *gamma,
                       const float *beta, int rows, int C, float eps, elem_type type,
                       cudaStream_t stream);
void layernorm_cat_forward(void *y, float *mean, float *rstd, const float *first, const float *x,
                           int tokens, const float *gamma, const float *beta, int rows, int C,
                           float eps, elem_type type, cudaStream_t stream);
/* Floats of scratch the backward pass needs for `rows` rows (per-block partial sums). */
size_t layernorm_backward_scratch_floats(int rows, int C);
/* dx = (accumulate ? dx : 0) + dL/dx for dy (typed) = dL/dy (dx may already hold the residual
 * stream's gradient, which is then added to in place); dgamma, dbeta are overwritten. dx_half,
 * when not NULL, receives a bfloat16 copy of the new dx: the operand the matmuls of a bf16
 * model read the residual gradient from (written here, where dx is, instead of in a pass of its
 * own). */
void layernorm_backward(float *dx, void *dx_half, float *dgamma, float *dbeta, const void *dy,
                        const float *x, const float *mean, const float *rstd, const float *gamma,
                        int rows, int C, int accumulate, elem_type type, float *scratch,
                        cudaStream_t stream);
/* Backward of layernorm_cat_forward: the rows' gradients go to dfirst ([batch, C]) and dx
 * ([batch, tokens - 1, C]), each overwritten or added to as its flag says, with optional
 * bfloat16 copies as above. */
void layernorm_cat_backward(float *dfirst, void *dfirst_half, float *dx, void *dx_half, float *dgamma,
                            float *dbeta, const void *dy, const float *first, const float *x,
                            int tokens, const float *mean, const float *rstd, const float *gamma,
                            int rows, int C, int accumulate_first, int accumulate_x, elem_type type,
                            float *scratch, cudaStream_t stream);

/* ---- exact GELU, 0.5 x (1 + erf(x / sqrt 2)) (nn.GELU(), not the tanh approximation) --------
 * All typed. gelu_backward: dx = dy * GELU'(x); dx may alias dy. */
void gelu_forward(void *y, const void *x, size_t n, elem_type type, cudaStream_t stream);
void gelu_backward(void *dx, const void *dy, const void *x, size_t n, elem_type type,
                   cudaStream_t stream);

/* ---- patches, broadcasts and sums over the batch --------------------------------------------
 * patch_gather: the non-overlapping P x P patches of a float NHWC image batch [B, H, W, Cin] as
 * typed rows [B * (H/P) * (W/P), P * P * Cin] (the cast to bfloat16 rides on the gather),
 * patches in row-major order, each row ordered (kh, kw, c): a convolution with kernel = stride
 * = P is then one GEMM against weights stored [out, kh, kw, in]. */
void patch_gather(void *patches, const float *image, int B, int H, int W, int Cin, int P,
                  elem_type type, cudaStream_t stream);
/* x[b, i] += v[i] for each of `batch` rows of n (pos_embed added to every sample). */
void broadcast_add(float *x, const float *v, int batch, size_t n, cudaStream_t stream);
/* y[b, i] = v[i] (the class token expanded over the batch). */
void broadcast_copy(float *y, const float *v, int batch, size_t n, cudaStream_t stream);
/* out[c] = sum over r of in[r * ld + c], c < cols: the gradient of a broadcast parameter. */
void column_sum(float *out, const float *in, int rows, int cols, size_t ld, cudaStream_t stream);

/* ---- LayerScale folded into the linear layer before it ---------------------------------------
 * y = x + gamma * (a W^T + b) is computed as one GEMM with beta = 1 against the folded weights
 * ws (typed) = diag(gamma) W, bs = gamma * b (W is [out, in], float). */
void layerscale_fold(void *ws, float *bs, const float *w, const float *b, const float *gamma,
                     int out, int in, elem_type type, cudaStream_t stream);
/* From g = dy^T a ([out, in]) and s = column sums of dy ([out]), both float: dw (typed: a bf16
 * model's weight gradients are its bfloat16 gradient copy) = diag(gamma) g, db = gamma * s,
 * dgamma[o] = sum_k w[o, k] g[o, k] + b[o] s[o] (= sum over rows of dy * branch). */
void layerscale_unfold_backward(void *dw, float *db, float *dgamma, const float *g, const float *s,
                                const float *w, const float *b, const float *gamma, int out, int in,
                                elem_type type, cudaStream_t stream);

/* ---- talking-heads attention (CaiT blocks), H in {1, 2, 4, 8} ---------------------------------
 * logits [B, H, N, N] (typed) are the scaled q k^T of each head. Per query (b, i) and key j, the
 * heads are mixed before and after the softmax over keys:
 *   l'[h'] = sum_h wl[h', h] l[h] + bl[h'],   p[h'] = softmax_j(l'[h']),
 *   attn[h''] = sum_h' ww[h'', h'] p[h'] + bw[h''].
 * The mixes and the softmax run in float from the float32 mixing parameters; attn is typed.
 * stats [B, H, N, 2] keep each softmax row's max and 1/sum, so the backward pass recomputes p and
 * attn from the logits in one pass instead of keeping them. */
void talking_heads_forward(void *attn, float *stats, const void *logits, const float *wl,
                           const float *bl, const float *ww, const float *bw, int B, int H, int N,
                           elem_type type, cudaStream_t stream);
/* attn again from logits and the stats of the forward pass (the same bits). */
void talking_heads_recompute(void *attn, const float *stats, const void *logits, const float *wl,
                             const float *bl, const float *ww, const float *bw, int B, int H, int N,
                             elem_type type, cudaStream_t stream);
size_t talking_heads_backward_scratch_floats(int B, int H, int N);
/* grad (typed) holds dL/dattn on entry and dL/dlogits on return (in place); the mixing
 * weights' gradients dwl, dww (typed, as layerscale_unfold_backward's dw) and the biases'
 * dbl, dbw (float) are overwritten. */
void talking_heads_backward(void *grad, void *dwl, float *dbl, void *dww, float *dbw,
                            const void *logits, const float *stats, const float *wl,
                            const float *bl, const float *ww, const float *bw, int B, int H, int N,
                            elem_type type, float *scratch, cudaStream_t stream);

/* ---- class attention (CaiT's class-token blocks) ---------------------------------------------
 * q [B, H*D] (typed) is the class token's query; kv [B * tokens, 2*H*D] (typed) holds keys
 * (columns 0..HD-1) and values (HD..2HD-1) of every token. For each (b, h):
 * p = softmax_j(scale q . k_j) is kept in float p [B, H, tokens] and out[b, h*D + d] (typed) =
 * sum_j p_j v_j[d]. */
void class_attention_forward(void *out, float *p, const void *q, const void *kv, int B, int H,
                             int tokens, int D, float scale, elem_type type, cudaStream_t stream);
/* dq [B, H*D] and dkv [B * tokens, 2*H*D] (typed) are overwritten; dout is typed. */
void class_attention_backward(void *dq, void *dkv, const void *dout, const float *p,
                              const void *q, const void *kv, int B, int H, int tokens, int D,
                              float scale, elem_type type, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
