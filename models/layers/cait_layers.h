/* The layers CaiT is made of, over device buffers the model owns: dense (Linear), LayerScale
 * residual linear, talking-heads attention core and patch embedding. Each is a forward/backward
 * pair of GEMMs (models/layers/cait_gemm.h) and kernels (kernels/transformer.h); nothing allocates or
 * synchronises, so the model's passes can be captured in a CUDA graph. Tokens are rows:
 * [rows, features] row-major, weights [out, in] as in PyTorch. Bias gradients are GEMMs against a
 * vector of ones (at least `rows` long), which cuBLASLt reduces deterministically.
 * Element types: activations, their gradients and `ones` are of the engine's type (the "typed"
 * tensors). Under a bfloat16 engine the layers multiply the arena's bfloat16 copy of each float32
 * master weight (arena_half_of) and write each weight gradient to the arena's bfloat16 gradient
 * copy (arena_half_grad_of) instead of the float one, which model_grads_from_half converts, as
 * models/layers/linear.c does; biases, gammas, their gradients and the residual stream stay float32. */
#ifndef SUITE_CAIT_LAYERS_H
#define SUITE_CAIT_LAYERS_H

#include <stddef.h>

#include "kernels/kernels.h"
#include "models/core/arena.h"
#include "models/layers/cait_gemm.h"
#include "models/core/context.h"

/* y[rows, out] (of y_type) = x W^T + b, x rows `ldx` elements apart (a strided view, e.g. every
 * class token); b (may be NULL) is of y_type too (cuBLASLt adds a bias of the output's type): a
 * bfloat16 output takes the bias's bfloat16 copy, as autocast's linear casts it. */
void dense_forward(gemm_engine *g, job_context *ctx, void *y, const void *x, int ldx, const float *w,
                   const void *b, int rows, int in, int out, elem_type y_type);
/* dw = dy^T x and db = column sums of dy (float; both overwritten); when dx is not NULL,
 * dx = dx_beta * dx + dy W with dx rows `lddx` elements apart. */
void dense_backward(gemm_engine *g, job_context *ctx, void *dx, int lddx, float dx_beta, float *dw, float *db,
                    const void *dy, const void *x, int ldx, const float *w, const void *ones, int rows,
                    int in, int out);

/* LayerScale residual: y = x + gamma * (a W^T + b) (x, y float), one GEMM with beta = 1 against
 * the folded weights ws (typed) = diag(gamma) W, bs = gamma * b (written here, kept for the
 * backward pass). */
void ls_linear_forward(gemm_engine *g, job_context *ctx, float *y, void *ws, float *bs, const float *x,
                       const void *a, const float *w, const float *b, const float *gamma, int rows, int in,
                       int out);
size_t ls_linear_scratch_floats(int in, int out);
/* For dy = dL/dy (typed: the residual gradient, or its bfloat16 copy): da = dy ws, and dw, db,
 * dgamma (overwritten); dL/dx is dy itself (the caller's residual gradient passes through
 * unchanged). */
void ls_linear_backward(gemm_engine *g, job_context *ctx, void *da, float *dw, float *db, float *dgamma,
                        const void *dy, const void *a, const void *ws, const float *w, const float *b,
                        const float *gamma, const void *ones, int rows, int in, int out, float *scratch);

/* Talking-heads attention core of one block: from qkv [B*N, 3*H*D] (q | k | v, heads inside each)
 * to out [B*N, H*D]; logits [B, H, N, N] (scaled q k^T) and stats [B, H, N, 2] (float) are kept
 * per block; attn [B, H, N, N] is scratch that blocks share (attention weights forward; dattn,
 * then dlogits backward). All but stats are of the core's type, which must be the engine's. The
 * per-(sample, head) GEMMs run as one strided batch over the samples per head. */
typedef struct th_core {
    int batch, tokens, heads, head_dim;
    elem_type type;
    float scale;                     /* head_dim^-0.5, applied to q as timm does */
    const void *qkv, *dout;
    void *logits, *attn, *out, *dqkv;
    float *stats;
} th_core;

void th_core_init(th_core *t, int batch, int tokens, int heads, int head_dim, elem_type type);
/* Names the tensors the core reads and writes (device). dout [B*N, H*D] and dqkv [B*N, 3*H*D] are
 * the shared gradient buffers the backward pass reads and writes. */
void th_core_bind(th_core *t, const void *qkv, void *logits, float *stats, void *out, void *attn,
                  const void *dout, void *dqkv);
void th_core_forward(th_core *t, gemm_engine *g, job_context *ctx, const float *wl, const float *bl,
                     const float *ww, const float *bw);
/* From dout to dqkv (overwritten) and the mixing parameters' gradients (the weights' to their
 * bfloat16 gradient copies under a bfloat16 engine). */
void th_core_backward(th_core *t, gemm_engine *g, job_context *ctx, float *dwl, float *dbl, float *dww,
                      float *dbw, const float *wl, const float *bl, const float *ww, const float *bw,
                      float *scratch);

/* Patch embedding: conv P x P stride P as patch_gather + one GEMM against w stored
 * [C, P, P, Cin], then + pos_embed [N, C]. image and x0 [B*N, C] are float (the residual stream
 * starts here); patches [B*N, P*P*Cin] (typed) are kept for dw. */
void patch_embed_forward(gemm_engine *g, job_context *ctx, float *x0, void *patches, const float *image,
                         const float *w, const float *b, const float *pos, int batch, int size, int in_c,
                         int patch, int dim);
/* dw, db, dpos (overwritten) from dx0 = dL/dx0 (float), whose copy in the engine's type dx0_run
 * the GEMMs read (dx0 itself under a float32 engine). */
void patch_embed_backward(gemm_engine *g, job_context *ctx, float *dw, float *db, float *dpos, const float *dx0,
                          const void *dx0_run, const void *patches, const float *w, const void *ones, int batch,
                          int size, int in_c, int patch, int dim);

#endif
