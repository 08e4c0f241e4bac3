/* Kernels of the vision transformers (CaiT) that cuBLAS does not provide, exported to C. Tokens
 * are rows of C float32 channels, [batch, tokens, C] flattened to [rows, C]. Argument order:
 * outputs, inputs, sizes, scratch, stream. Every reduction is deterministic: blocks write
 * partial sums in a fixed order and a second kernel adds them up in a fixed order (no atomics),
 * so two runs of one step give the same bits. References: tests/gpu_cait.c holds a double
 * precision CPU version of each kernel. */
#ifndef SUITE_TRANSFORMER_H
#define SUITE_TRANSFORMER_H

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- LayerNorm over the C channels of each row (C <= 512) ------------------------------------
 * y = (x - mean) * rstd * gamma + beta with rstd = 1/sqrt(biased variance + eps); mean and rstd
 * are kept per row for the backward pass.
 * The "cat" forms read the rows of cat([first, x], dim=1) without building it: rows come in
 * groups of `tokens` per sample, row 0 of a group is first[b] ([batch, C]) and rows 1.. are
 * x[b] ([batch, tokens - 1, C]) (CaiT's class token prepended to the patch tokens). */
void layernorm_forward(float *y, float *mean, float *rstd, const float *x, const float *gamma,
                       const float *beta, int rows, int C, float eps, cudaStream_t stream);
void layernorm_cat_forward(float *y, float *mean, float *rstd, const float *first, const float *x,
                           int tokens, const float *gamma, const float *beta, int rows, int C,
                           float eps, cudaStream_t stream);
/* Floats of scratch the backward pass needs for `rows` rows (per-block partial sums). */
size_t layernorm_backward_scratch_floats(int rows, int C);
/* dx = (accumulate ? dx : 0) + dL/dx for dy = dL/dy (dx may already hold the residual stream's
 * gradient, which is then added to in place); dgamma, dbeta are overwritten. */
void layernorm_backward(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x,
                        const float *mean, const float *rstd, const float *gamma, int rows, int C,
                        int accumulate, float *scratch, cudaStream_t stream);
/* Backward of layernorm_cat_forward: the rows' gradients go to dfirst ([batch, C]) and dx
 * ([batch, tokens - 1, C]), each overwritten or added to as its flag says. */
void layernorm_cat_backward(float *dfirst, float *dx, float *dgamma, float *dbeta, const float *dy,
                            const float *first, const float *x, int tokens, const float *mean,
                            const float *rstd, const float *gamma, int rows, int C,
                            int accumulate_first, int accumulate_x, float *scratch,
                            cudaStream_t stream);

/* ---- exact GELU, 0.5 x (1 + erf(x / sqrt 2)) (nn.GELU(), not the tanh approximation) --------
 * gelu_backward: dx = dy * GELU'(x); dx may alias dy. */
void gelu_forward(float *y, const float *x, size_t n, cudaStream_t stream);
void gelu_backward(float *dx, const float *dy, const float *x, size_t n, cudaStream_t stream);

/* ---- patches, broadcasts and sums over the batch --------------------------------------------
 * patch_gather: the non-overlapping P x P patches of an NHWC image batch [B, H, W, Cin] as rows
 * [B * (H/P) * (W/P), P * P * Cin], patches in row-major order, each row ordered (kh, kw, c):
 * a convolution with kernel = stride = P is then one GEMM against weights stored [out, kh, kw, in]. */
void patch_gather(float *patches, const float *image, int B, int H, int W, int Cin, int P,
                  cudaStream_t stream);
/* x[b, i] += v[i] for each of `batch` rows of n (pos_embed added to every sample). */
void broadcast_add(float *x, const float *v, int batch, size_t n, cudaStream_t stream);
/* y[b, i] = v[i] (the class token expanded over the batch). */
void broadcast_copy(float *y, const float *v, int batch, size_t n, cudaStream_t stream);
/* out[c] = sum over r of in[r * ld + c], c < cols: the gradient of a broadcast parameter. */
void column_sum(float *out, const float *in, int rows, int cols, size_t ld, cudaStream_t stream);

/* ---- LayerScale folded into the linear layer before it ---------------------------------------
 * y = x + gamma * (a W^T + b) is computed as one GEMM with beta = 1 against the folded weights
 * ws = diag(gamma) W, bs = gamma * b (W is [out, in]). */
void layerscale_fold(float *ws, float *bs, const float *w, const float *b, const float *gamma,
                     int out, int in, cudaStream_t stream);
/* From g = dy^T a ([out, in]) and s = column sums of dy ([out]): dw = diag(gamma) g,
 * db = gamma * s, dgamma[o] = sum_k w[o, k] g[o, k] + b[o] s[o] (= sum over rows of dy * branch). */
void layerscale_unfold_backward(float *dw, float *db, float *dgamma, const float *g, const float *s,
                                const float *w, const float *b, const float *gamma, int out, int in,
                                cudaStream_t stream);

/* ---- talking-heads attention (CaiT blocks), H in {1, 2, 4, 8} ---------------------------------
 * logits [B, H, N, N] are the scaled q k^T of each head. Per query (b, i) and key j, the heads
 * are mixed before and after the softmax over keys:
 *   l'[h'] = sum_h wl[h', h] l[h] + bl[h'],   p[h'] = softmax_j(l'[h']),
 *   attn[h''] = sum_h' ww[h'', h'] p[h'] + bw[h''].
 * stats [B, H, N, 2] keep each softmax row's max and 1/sum, so the backward pass recomputes p and
 * attn from the logits in one pass instead of keeping them. */
void talking_heads_forward(float *attn, float *stats, const float *logits, const float *wl,
                           const float *bl, const float *ww, const float *bw, int B, int H, int N,
                           cudaStream_t stream);
/* attn again from logits and the stats of the forward pass. */
void talking_heads_recompute(float *attn, const float *stats, const float *logits, const float *wl,
                             const float *bl, const float *ww, const float *bw, int B, int H, int N,
                             cudaStream_t stream);
size_t talking_heads_backward_scratch_floats(int B, int H, int N);
/* grad holds dL/dattn on entry and dL/dlogits on return (in place); the mixing weights' and
 * biases' gradients are overwritten. */
void talking_heads_backward(float *grad, float *dwl, float *dbl, float *dww, float *dbw,
                            const float *logits, const float *stats, const float *wl,
                            const float *bl, const float *ww, const float *bw, int B, int H, int N,
                            float *scratch, cudaStream_t stream);

/* ---- class attention (CaiT's class-token blocks) ---------------------------------------------
 * q [B, H*D] is the class token's query; kv [B * tokens, 2*H*D] holds keys (columns 0..HD-1) and
 * values (HD..2HD-1) of every token. For each (b, h): p = softmax_j(scale q . k_j) is kept in
 * p [B, H, tokens] and out[b, h*D + d] = sum_j p_j v_j[d]. */
void class_attention_forward(float *out, float *p, const float *q, const float *kv, int B, int H,
                             int tokens, int D, float scale, cudaStream_t stream);
/* dq [B, H*D] and dkv [B * tokens, 2*H*D] are overwritten. */
void class_attention_backward(float *dq, float *dkv, const float *dout, const float *p,
                              const float *q, const float *kv, int B, int H, int tokens, int D,
                              float scale, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
