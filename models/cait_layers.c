#include "models/cait_layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/transformer.h"
#include "models/check.h"

/* ---- dense ------------------------------------------------------------------------------------ */

/* sums[1, cols] = ones[1, rows] dy[rows, cols]: the shape models/linear.c uses for its bias. */
static void column_sums(gemm_engine *g, job_context *ctx, float *sums, const float *dy, const float *ones, int rows,
                        int cols) {
    gemm(g, ctx, 0, 0, 1, cols, rows, 1.0f, ones, rows, dy, cols, 0.0f, NULL, sums, cols, NULL);
}

void dense_forward(gemm_engine *g, job_context *ctx, float *y, const float *x, int ldx, const float *w,
                   const float *b, int rows, int in, int out) {
    gemm(g, ctx, 0, 1, rows, out, in, 1.0f, x, ldx, w, in, 0.0f, NULL, y, out, b);
}

void dense_backward(gemm_engine *g, job_context *ctx, float *dx, int lddx, float dx_beta, float *dw, float *db,
                    const float *dy, const float *x, int ldx, const float *w, const float *ones, int rows,
                    int in, int out) {
    gemm(g, ctx, 1, 0, out, in, rows, 1.0f, dy, out, x, ldx, 0.0f, NULL, dw, in, NULL);
    column_sums(g, ctx, db, dy, ones, rows, out);
    if (dx) gemm(g, ctx, 0, 0, rows, in, out, 1.0f, dy, out, w, in, dx_beta, NULL, dx, lddx, NULL);
}

/* ---- LayerScale residual linear ------------------------------------------------------------------ */

void ls_linear_forward(gemm_engine *g, job_context *ctx, float *y, float *ws, float *bs, const float *x,
                       const float *a, const float *w, const float *b, const float *gamma, int rows, int in,
                       int out) {
    layerscale_fold(ws, bs, w, b, gamma, out, in, ctx->stream);
    gemm(g, ctx, 0, 1, rows, out, in, 1.0f, a, in, ws, in, 1.0f, x, y, out, bs);
}

/* [out, in] for dy^T a, then [out] for the column sums of dy, 16-byte aligned. */
static size_t ls_sums_offset(int in, int out) { return ((size_t)out * in + 3) / 4 * 4; }

size_t ls_linear_scratch_floats(int in, int out) { return ls_sums_offset(in, out) + (size_t)out; }

void ls_linear_backward(gemm_engine *g, job_context *ctx, float *da, float *dw, float *db, float *dgamma,
                        const float *dy, const float *a, const float *ws, const float *w, const float *b,
                        const float *gamma, const float *ones, int rows, int in, int out, float *scratch) {
    float *dy_a = scratch, *dy_sum = scratch + ls_sums_offset(in, out);
    gemm(g, ctx, 1, 0, out, in, rows, 1.0f, dy, out, a, in, 0.0f, NULL, dy_a, in, NULL);
    column_sums(g, ctx, dy_sum, dy, ones, rows, out);
    layerscale_unfold_backward(dw, db, dgamma, dy_a, dy_sum, w, b, gamma, out, in, ctx->stream);
    gemm(g, ctx, 0, 0, rows, in, out, 1.0f, dy, out, ws, in, 0.0f, NULL, da, in, NULL);
}

/* ---- talking-heads attention core --------------------------------------------------------------- */

void th_core_init(th_core *t, arena *a, int batch, int tokens, int heads, int head_dim) {
    t->batch = batch, t->tokens = tokens, t->heads = heads, t->head_dim = head_dim;
    t->scale = 1.0f / sqrtf((float)head_dim);
    t->logits = t->stats = t->attn = NULL;
    t->pointers = arena_take(a, ARENA_SCRATCH, (size_t)TH_ARRAYS * batch * heads * sizeof(void *));
}

static const float *const *th_array(const th_core *t, int which) {
    return (const float *const *)(t->pointers + (size_t)which * t->batch * t->heads);
}
static float *const *th_out_array(const th_core *t, int which) {
    return (float *const *)(t->pointers + (size_t)which * t->batch * t->heads);
}

void th_core_bind(th_core *t, const float *qkv, float *logits, float *stats, float *out, float *attn,
                  const float *dout, float *dqkv, job_context *ctx) {
    int B = t->batch, H = t->heads, N = t->tokens, D = t->head_dim, C = H * D;
    size_t bh = (size_t)B * H;
    t->logits = logits, t->stats = stats, t->attn = attn;
    const float **host = malloc(TH_ARRAYS * bh * sizeof *host);
    if (!host) {
        fprintf(stderr, "th_core_bind: out of host memory\n");
        exit(1);
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t i = (size_t)b * H + h, row3 = (size_t)b * N * 3 * C + (size_t)h * D, row1 = (size_t)b * N * C + (size_t)h * D;
            size_t square = i * N * N;
            host[TH_Q * bh + i] = qkv + row3;
            host[TH_K * bh + i] = qkv + row3 + C;
            host[TH_V * bh + i] = qkv + row3 + 2 * C;
            host[TH_LOGITS * bh + i] = logits + square;
            host[TH_OUT * bh + i] = out + row1;
            host[TH_ATTN * bh + i] = attn + square;
            host[TH_DOUT * bh + i] = dout + row1;
            host[TH_DQ * bh + i] = dqkv + row3;
            host[TH_DK * bh + i] = dqkv + row3 + C;
            host[TH_DV * bh + i] = dqkv + row3 + 2 * C;
        }
    CHECK_CUDA(cudaMemcpyAsync(t->pointers, host, TH_ARRAYS * bh * sizeof *host, cudaMemcpyHostToDevice, ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    free(host);
}

void th_core_forward(th_core *t, gemm_engine *g, job_context *ctx, const float *wl, const float *bl,
                     const float *ww, const float *bw) {
    int B = t->batch, H = t->heads, N = t->tokens, D = t->head_dim, C = H * D, count = B * H;
    /* logits = scale q k^T */
    gemm_batched(g, ctx, 0, 1, N, N, D, t->scale, th_array(t, TH_Q), 3 * C, th_array(t, TH_K), 3 * C, 0.0f,
                 th_out_array(t, TH_LOGITS), N, count);
    talking_heads_forward(t->attn, t->stats, t->logits, wl, bl, ww, bw, B, H, N, ctx->stream);
    /* out = attn v, written per head into the [B*N, C] rows */
    gemm_batched(g, ctx, 0, 0, N, D, N, 1.0f, th_array(t, TH_ATTN), N, th_array(t, TH_V), 3 * C, 0.0f,
                 th_out_array(t, TH_OUT), C, count);
}

void th_core_backward(th_core *t, gemm_engine *g, job_context *ctx, float *dwl, float *dbl, float *dww,
                      float *dbw, const float *wl, const float *bl, const float *ww, const float *bw,
                      float *scratch) {
    int B = t->batch, H = t->heads, N = t->tokens, D = t->head_dim, C = H * D, count = B * H;
    talking_heads_recompute(t->attn, t->stats, t->logits, wl, bl, ww, bw, B, H, N, ctx->stream);
    /* dv = attn^T dout, then dattn = dout v^T over the attention weights (no longer needed) */
    gemm_batched(g, ctx, 1, 0, N, D, N, 1.0f, th_array(t, TH_ATTN), N, th_array(t, TH_DOUT), C, 0.0f,
                 th_out_array(t, TH_DV), 3 * C, count);
    gemm_batched(g, ctx, 0, 1, N, N, D, 1.0f, th_array(t, TH_DOUT), C, th_array(t, TH_V), 3 * C, 0.0f,
                 th_out_array(t, TH_ATTN), N, count);
    talking_heads_backward(t->attn, dwl, dbl, dww, dbw, t->logits, t->stats, wl, bl, ww, bw, B, H, N, scratch,
                           ctx->stream);
    /* dq = scale dlogits k, dk = scale dlogits^T q */
    gemm_batched(g, ctx, 0, 0, N, D, N, t->scale, th_array(t, TH_ATTN), N, th_array(t, TH_K), 3 * C, 0.0f,
                 th_out_array(t, TH_DQ), 3 * C, count);
    gemm_batched(g, ctx, 1, 0, N, D, N, t->scale, th_array(t, TH_ATTN), N, th_array(t, TH_Q), 3 * C, 0.0f,
                 th_out_array(t, TH_DK), 3 * C, count);
}

/* ---- patch embedding --------------------------------------------------------------------------- */

void patch_embed_forward(gemm_engine *g, job_context *ctx, float *x0, float *patches, const float *image,
                         const float *w, const float *b, const float *pos, int batch, int size, int in_c,
                         int patch, int dim) {
    int grid = size / patch, rows = batch * grid * grid, width = patch * patch * in_c;
    patch_gather(patches, image, batch, size, size, in_c, patch, ctx->stream);
    gemm(g, ctx, 0, 1, rows, dim, width, 1.0f, patches, width, w, width, 0.0f, NULL, x0, dim, b);
    broadcast_add(x0, pos, batch, (size_t)grid * grid * dim, ctx->stream);
}

void patch_embed_backward(gemm_engine *g, job_context *ctx, float *dw, float *db, float *dpos, const float *dx0,
                          const float *patches, const float *ones, int batch, int size, int in_c, int patch,
                          int dim) {
    int grid = size / patch, rows = batch * grid * grid, width = patch * patch * in_c;
    dense_backward(g, ctx, NULL, 0, 0.0f, dw, db, dx0, patches, width, NULL, ones, rows, width, dim);
    column_sum(dpos, dx0, batch, grid * grid * dim, (size_t)grid * grid * dim, ctx->stream);
}
