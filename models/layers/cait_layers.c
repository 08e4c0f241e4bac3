#include "models/layers/cait_layers.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/transformer.h"
#include "kernels/check.h"

/* ---- weights as the GEMMs read and write them ----------------------------------------------- */

static void *half_or_die(void *p, const char *what) {
    if (!p) {
        fprintf(stderr, "cait: a bfloat16 GEMM needs the %s of an arena with half_weights (the model was planned "
                "as float)\n", what);
        exit(1);
    }
    return p;
}

/* The float32 master, or its bfloat16 copy under a bf16 engine. */
static const void *run_weight(const gemm_engine *g, const job_context *ctx, const float *w) {
    if (g->type != ELEM_BF16) return w;
    return half_or_die(arena_half_of(&ctx->arena, w), "bfloat16 weight copy");
}

/* Where w's gradient goes: dw, or the bfloat16 gradient copy under a bf16 engine. */
static void *run_weight_grad(const gemm_engine *g, const job_context *ctx, const float *w, float *dw) {
    if (g->type != ELEM_BF16) return dw;
    return half_or_die(arena_half_grad_of(&ctx->arena, w), "bfloat16 gradient copy");
}

/* ---- dense ------------------------------------------------------------------------------------ */

/* sums[1, cols] = ones[1, rows] dy[rows, cols] in float: the shape models/layers/linear.c uses for its
 * bias. */
static void column_sums(gemm_engine *g, job_context *ctx, float *sums, const void *dy, const void *ones, int rows,
                        int cols) {
    gemm(g, ctx, 0, 0, 1, cols, rows, 1.0f, ones, rows, dy, cols, 0.0f, NULL, sums, cols, NULL, ELEM_F32);
}

/* The GEMMs, the attention core and the patch embedding each mark their launches for the kernel
 * trace (models/core/kernel_scope.h), named by their weight (the core by its talking-heads weight
 * proj_l); FLOPs from the shapes, bytes not counted. */

void dense_forward(gemm_engine *g, job_context *ctx, void *y, const void *x, int ldx, const float *w,
                   const void *b, int rows, int in, int out, elem_type y_type) {
    int token = kernel_scope_enter(ctx->scopes, w, NULL, KPASS_FORWARD, KCLASS_GEMM, 2.0 * rows * (double)in * out, 0);
    gemm(g, ctx, 0, 1, rows, out, in, 1.0f, x, ldx, run_weight(g, ctx, w), in, 0.0f, NULL, y, out, b, y_type);
    kernel_scope_leave(token);
}

void dense_backward(gemm_engine *g, job_context *ctx, void *dx, int lddx, float dx_beta, float *dw, float *db,
                    const void *dy, const void *x, int ldx, const float *w, const void *ones, int rows,
                    int in, int out) {
    int token = kernel_scope_enter(ctx->scopes, w, NULL, KPASS_BACKWARD, KCLASS_GEMM,
                                   (dx ? 4.0 : 2.0) * rows * (double)in * out, 0);
    gemm(g, ctx, 1, 0, out, in, rows, 1.0f, dy, out, x, ldx, 0.0f, NULL, run_weight_grad(g, ctx, w, dw), in, NULL,
         g->type);
    column_sums(g, ctx, db, dy, ones, rows, out);
    if (dx)
        gemm(g, ctx, 0, 0, rows, in, out, 1.0f, dy, out, run_weight(g, ctx, w), in, dx_beta, NULL, dx, lddx, NULL,
             g->type);
    kernel_scope_leave(token);
}

/* ---- LayerScale residual linear ------------------------------------------------------------------ */

void ls_linear_forward(gemm_engine *g, job_context *ctx, float *y, void *ws, float *bs, const float *x,
                       const void *a, const float *w, const float *b, const float *gamma, int rows, int in,
                       int out) {
    int token = kernel_scope_enter(ctx->scopes, w, NULL, KPASS_FORWARD, KCLASS_GEMM, 2.0 * rows * (double)in * out, 0);
    layerscale_fold(ws, bs, w, b, gamma, out, in, g->type, ctx->stream);
    gemm(g, ctx, 0, 1, rows, out, in, 1.0f, a, in, ws, in, 1.0f, x, y, out, bs, ELEM_F32);
    kernel_scope_leave(token);
}

/* [out, in] for dy^T a, then [out] for the column sums of dy, 16-byte aligned. */
static size_t ls_sums_offset(int in, int out) { return ((size_t)out * in + 3) / 4 * 4; }

size_t ls_linear_scratch_floats(int in, int out) { return ls_sums_offset(in, out) + (size_t)out; }

/* dy^T a is kept in float (not rounded to bfloat16) because dgamma is its dot product with w. */
void ls_linear_backward(gemm_engine *g, job_context *ctx, void *da, float *dw, float *db, float *dgamma,
                        const void *dy, const void *a, const void *ws, const float *w, const float *b,
                        const float *gamma, const void *ones, int rows, int in, int out, float *scratch) {
    int token = kernel_scope_enter(ctx->scopes, w, NULL, KPASS_BACKWARD, KCLASS_GEMM, 4.0 * rows * (double)in * out, 0);
    float *dy_a = scratch, *dy_sum = scratch + ls_sums_offset(in, out);
    gemm(g, ctx, 1, 0, out, in, rows, 1.0f, dy, out, a, in, 0.0f, NULL, dy_a, in, NULL, ELEM_F32);
    column_sums(g, ctx, dy_sum, dy, ones, rows, out);
    layerscale_unfold_backward(run_weight_grad(g, ctx, w, dw), db, dgamma, dy_a, dy_sum, w, b, gamma, out, in,
                               g->type, ctx->stream);
    gemm(g, ctx, 0, 0, rows, in, out, 1.0f, dy, out, ws, in, 0.0f, NULL, da, in, NULL, g->type);
    kernel_scope_leave(token);
}

/* ---- talking-heads attention core --------------------------------------------------------------- */

void th_core_init(th_core *t, int batch, int tokens, int heads, int head_dim, elem_type type) {
    memset(t, 0, sizeof *t);
    t->batch = batch, t->tokens = tokens, t->heads = heads, t->head_dim = head_dim, t->type = type;
    t->scale = 1.0f / sqrtf((float)head_dim);
}

static void th_check_engine(const th_core *t, const gemm_engine *g) {
    if (t->type != g->type) {
        fprintf(stderr, "th_core: built for element type %d, run on a GEMM engine of type %d\n", (int)t->type,
                (int)g->type);
        exit(2);
    }
}

void th_core_bind(th_core *t, const void *qkv, void *logits, float *stats, void *out, void *attn,
                  const void *dout, void *dqkv) {
    t->qkv = qkv, t->logits = logits, t->stats = stats, t->out = out, t->attn = attn;
    t->dout = dout, t->dqkv = dqkv;
}

/* One head's matrices in each sample, as a strided batch over the samples: a column slice of the
 * fused rows ([B*N, 3C] q | k | v with `part` 0, 1, 2, or [B*N, C] with part -1), or one [N, N]
 * square of [B, H, N, N]. */
typedef struct th_operand {
    const char *head0;   /* sample 0, head 0 */
    size_t head_step;    /* bytes from one head to the next */
    long long sample_step; /* elements from one sample to the next */
    int ld;
} th_operand;

static th_operand th_rows(const th_core *t, const void *base, int part) {
    int C = t->heads * t->head_dim, width = part < 0 ? C : 3 * C;
    size_t es = elem_bytes(t->type);
    th_operand o = {(const char *)base + (size_t)(part < 0 ? 0 : part) * C * es, (size_t)t->head_dim * es,
                    (long long)t->tokens * width, width};
    return o;
}

static th_operand th_square(const th_core *t, const void *base) {
    size_t nn = (size_t)t->tokens * t->tokens;
    th_operand o = {(const char *)base, nn * elem_bytes(t->type), (long long)t->heads * nn, t->tokens};
    return o;
}

/* C = alpha op(A) op(B) for every (sample, head): one strided batch over the samples per head.
 * (Device arrays of per-(sample, head) pointers would make it one call, but cuBLAS's pointer-array
 * kernels faulted with illegal addresses in some set-ups when several CaiT processes shared the
 * GPU by time-slicing: a collocation suite cannot take a path that fails under collocation.) */
static void th_gemm(const th_core *t, gemm_engine *g, job_context *ctx, int ta, int tb, int m, int n, int k,
                    float alpha, th_operand A, th_operand B, th_operand C) {
    for (int h = 0; h < t->heads; h++)
        gemm_strided_batched(g, ctx, ta, tb, m, n, k, alpha, A.head0 + h * A.head_step, A.ld, A.sample_step,
                             B.head0 + h * B.head_step, B.ld, B.sample_step, 0.0f,
                             (char *)C.head0 + h * C.head_step, C.ld, C.sample_step, t->batch);
}

void th_core_forward(th_core *t, gemm_engine *g, job_context *ctx, const float *wl, const float *bl,
                     const float *ww, const float *bw) {
    int token = kernel_scope_enter(ctx->scopes, wl, NULL, KPASS_FORWARD, KCLASS_ATTENTION, 4.0 * t->batch * t->heads * (double)t->tokens * t->tokens * t->head_dim, 0);
    int B = t->batch, H = t->heads, N = t->tokens, D = t->head_dim;
    th_check_engine(t, g);
    /* logits = scale q k^T */
    th_gemm(t, g, ctx, 0, 1, N, N, D, t->scale, th_rows(t, t->qkv, 0), th_rows(t, t->qkv, 1),
            th_square(t, t->logits));
    talking_heads_forward(t->attn, t->stats, t->logits, wl, bl, ww, bw, B, H, N, t->type, ctx->stream);
    /* out = attn v, written per head into the [B*N, C] rows */
    th_gemm(t, g, ctx, 0, 0, N, D, N, 1.0f, th_square(t, t->attn), th_rows(t, t->qkv, 2), th_rows(t, t->out, -1));
    kernel_scope_leave(token);
}

void th_core_backward(th_core *t, gemm_engine *g, job_context *ctx, float *dwl, float *dbl, float *dww,
                      float *dbw, const float *wl, const float *bl, const float *ww, const float *bw,
                      float *scratch) {
    int token = kernel_scope_enter(ctx->scopes, wl, NULL, KPASS_BACKWARD, KCLASS_ATTENTION, 8.0 * t->batch * t->heads * (double)t->tokens * t->tokens * t->head_dim, 0);
    int B = t->batch, H = t->heads, N = t->tokens, D = t->head_dim;
    th_check_engine(t, g);
    talking_heads_recompute(t->attn, t->stats, t->logits, wl, bl, ww, bw, B, H, N, t->type, ctx->stream);
    /* dv = attn^T dout, then dattn = dout v^T over the attention weights (no longer needed) */
    th_gemm(t, g, ctx, 1, 0, N, D, N, 1.0f, th_square(t, t->attn), th_rows(t, t->dout, -1), th_rows(t, t->dqkv, 2));
    th_gemm(t, g, ctx, 0, 1, N, N, D, 1.0f, th_rows(t, t->dout, -1), th_rows(t, t->qkv, 2), th_square(t, t->attn));
    talking_heads_backward(t->attn, run_weight_grad(g, ctx, wl, dwl), dbl, run_weight_grad(g, ctx, ww, dww), dbw,
                           t->logits, t->stats, wl, bl, ww, bw, B, H, N, t->type, scratch, ctx->stream);
    /* dq = scale dlogits k, dk = scale dlogits^T q */
    th_gemm(t, g, ctx, 0, 0, N, D, N, t->scale, th_square(t, t->attn), th_rows(t, t->qkv, 1), th_rows(t, t->dqkv, 0));
    th_gemm(t, g, ctx, 1, 0, N, D, N, t->scale, th_square(t, t->attn), th_rows(t, t->qkv, 0), th_rows(t, t->dqkv, 1));
    kernel_scope_leave(token);
}

/* ---- patch embedding --------------------------------------------------------------------------- */

void patch_embed_forward(gemm_engine *g, job_context *ctx, float *x0, void *patches, const float *image,
                         const float *w, const float *b, const float *pos, int batch, int size, int in_c,
                         int patch, int dim) {
    int token = kernel_scope_enter(ctx->scopes, w, NULL, KPASS_FORWARD, KCLASS_GEMM, 2.0 * batch * (double)(size / patch) * (size / patch) * patch * patch * in_c * dim, 0);
    int grid = size / patch, rows = batch * grid * grid, width = patch * patch * in_c;
    patch_gather(patches, image, batch, size, size, in_c, patch, g->type, ctx->stream);
    dense_forward(g, ctx, x0, patches, width, w, b, rows, width, dim, ELEM_F32);
    broadcast_add(x0, pos, batch, (size_t)grid * grid * dim, ctx->stream);
    kernel_scope_leave(token);
}

void patch_embed_backward(gemm_engine *g, job_context *ctx, float *dw, float *db, float *dpos, const float *dx0,
                          const void *dx0_run, const void *patches, const float *w, const void *ones, int batch,
                          int size, int in_c, int patch, int dim) {
    int token = kernel_scope_enter(ctx->scopes, w, NULL, KPASS_BACKWARD, KCLASS_GEMM, 2.0 * batch * (double)(size / patch) * (size / patch) * patch * patch * in_c * dim, 0);
    int grid = size / patch, rows = batch * grid * grid, width = patch * patch * in_c;
    dense_backward(g, ctx, NULL, 0, 0.0f, dw, db, dx0_run, patches, width, w, ones, rows, width, dim);
    column_sum(dpos, dx0, batch, grid * grid * dim, (size_t)grid * grid * dim, ctx->stream);
    kernel_scope_leave(token);
}
