/* The layers CaiT is made of, over device buffers the model owns: dense (Linear), LayerScale
 * residual linear, talking-heads attention core and patch embedding. Each is a forward/backward
 * pair of GEMMs (models/cait_gemm.h) and kernels (kernels/transformer.h); nothing allocates or
 * synchronises, so the model's passes can be captured in a CUDA graph. Tokens are rows:
 * [rows, features] row-major, weights [out, in] as in PyTorch. Bias gradients are GEMMs against a
 * vector of ones (at least `rows` long), which cuBLASLt reduces deterministically. */
#ifndef SUITE_CAIT_LAYERS_H
#define SUITE_CAIT_LAYERS_H

#include <stddef.h>

#include "models/arena.h"
#include "models/cait_gemm.h"
#include "models/context.h"

/* y[rows, out] = x W^T + b, x rows `ldx` floats apart (a strided view, e.g. every class token). */
void dense_forward(gemm_engine *g, job_context *ctx, float *y, const float *x, int ldx, const float *w,
                   const float *b, int rows, int in, int out);
/* dw = dy^T x and db = column sums of dy (overwritten); when dx is not NULL,
 * dx = dx_beta * dx + dy W with dx rows `lddx` floats apart. */
void dense_backward(gemm_engine *g, job_context *ctx, float *dx, int lddx, float dx_beta, float *dw, float *db,
                    const float *dy, const float *x, int ldx, const float *w, const float *ones, int rows,
                    int in, int out);

/* LayerScale residual: y = x + gamma * (a W^T + b), one GEMM with beta = 1 against the folded
 * weights ws = diag(gamma) W, bs = gamma * b (written here, kept for the backward pass). */
void ls_linear_forward(gemm_engine *g, job_context *ctx, float *y, float *ws, float *bs, const float *x,
                       const float *a, const float *w, const float *b, const float *gamma, int rows, int in,
                       int out);
size_t ls_linear_scratch_floats(int in, int out);
/* For dy = dL/dy: da = dy ws, and dw, db, dgamma (overwritten); dL/dx is dy itself (the caller's
 * residual gradient passes through unchanged). */
void ls_linear_backward(gemm_engine *g, job_context *ctx, float *da, float *dw, float *db, float *dgamma,
                        const float *dy, const float *a, const float *ws, const float *w, const float *b,
                        const float *gamma, const float *ones, int rows, int in, int out, float *scratch);

/* Talking-heads attention core of one block: from qkv [B*N, 3*H*D] (q | k | v, heads inside each)
 * to out [B*N, H*D]; logits [B, H, N, N] (scaled q k^T) and stats [B, H, N, 2] are kept per
 * block; attn [B, H, N, N] is scratch that blocks share (attention weights forward; dattn, then
 * dlogits backward). The per-(sample, head) GEMMs read operands through device pointer arrays
 * built once by th_core_bind. */
enum { TH_Q, TH_K, TH_V, TH_LOGITS, TH_OUT, TH_ATTN, TH_DOUT, TH_DQ, TH_DK, TH_DV, TH_ARRAYS };
typedef struct th_core {
    int batch, tokens, heads, head_dim;
    float scale;                     /* head_dim^-0.5, applied to q as timm does */
    float *logits, *stats, *attn;
    void **pointers;                 /* device: TH_ARRAYS arrays of batch*heads pointers */
} th_core;

/* Takes the pointer arrays from the arena's scratch (planning or real). */
void th_core_init(th_core *t, arena *a, int batch, int tokens, int heads, int head_dim);
/* Set-up: fills the pointer arrays. dout [B*N, H*D] and dqkv [B*N, 3*H*D] are the shared
 * gradient buffers the backward pass reads and writes. */
void th_core_bind(th_core *t, const float *qkv, float *logits, float *stats, float *out, float *attn,
                  const float *dout, float *dqkv, job_context *ctx);
void th_core_forward(th_core *t, gemm_engine *g, job_context *ctx, const float *wl, const float *bl,
                     const float *ww, const float *bw);
/* From dout to dqkv (overwritten) and the mixing parameters' gradients. */
void th_core_backward(th_core *t, gemm_engine *g, job_context *ctx, float *dwl, float *dbl, float *dww,
                      float *dbw, const float *wl, const float *bl, const float *ww, const float *bw,
                      float *scratch);

/* Patch embedding: conv P x P stride P as patch_gather + one GEMM against w stored
 * [C, P, P, Cin], then + pos_embed [N, C]. x0 [B*N, C]; patches [B*N, P*P*Cin] kept for dw. */
void patch_embed_forward(gemm_engine *g, job_context *ctx, float *x0, float *patches, const float *image,
                         const float *w, const float *b, const float *pos, int batch, int size, int in_c,
                         int patch, int dim);
/* dw, db, dpos (overwritten) from dx0 = dL/dx0. */
void patch_embed_backward(gemm_engine *g, job_context *ctx, float *dw, float *db, float *dpos, const float *dx0,
                          const float *patches, const float *ones, int batch, int size, int in_c, int patch,
                          int dim);

#endif
