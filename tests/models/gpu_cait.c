/* CaiT's kernels and attention core on the GPU (float32, TF32 off): each against a
 * double-precision CPU reference (forward and backward) and its gradients against central finite
 * differences of L = sum(w * y) through the GPU forward: LayerNorm (plain and with the class token
 * prepended, overwriting and accumulating dx), exact GELU (scalar and float4 paths, in place),
 * talking heads fused with the softmax (recompute equal to the forward, backward deterministic),
 * the attention core (batched GEMMs over pointer arrays + talking heads) and class attention.
 * The GEMM layers and the whole model are in tests/models/gpu_cait_model.c. Every check prints what it
 * measured. */
#include <string.h>

#include "kernels/transformer.h"
#include "models/layers/cait_layers.h"
#include "tests/support/cait_reference.h"
#include "tests/support/gpu_cait_check.h"

/* ---- LayerNorm ----------------------------------------------------------------------------------*/

typedef struct ln_run {
    int rows, C, tokens, cat;
    float *y, *mean, *rstd, *first, *x, *gamma, *beta;
    const float *w;
} ln_run;

static double ln_loss(void *arg) {
    ln_run *r = arg;
    if (r->cat) layernorm_cat_forward(r->y, r->mean, r->rstd, r->first, r->x, r->tokens, r->gamma, r->beta, r->rows, r->C, 1e-6f, ELEM_F32, ctx.stream);
    else layernorm_forward(r->y, r->mean, r->rstd, r->x, r->gamma, r->beta, r->rows, r->C, 1e-6f, ELEM_F32, ctx.stream);
    return weighted_sum(r->y, r->w, (size_t)r->rows * r->C);
}

static void check_layernorm(int batch, int tokens, int C, int cat) {
    int rows = batch * tokens;
    size_t n = (size_t)rows * C, nf = cat ? (size_t)batch * C : 0, nx = n - nf;
    float *x = rnd(nx, -2, 3), *first = rnd(nf ? nf : 1, -1, 1), *gamma = rnd(C, 0.5f, 1.5f), *beta = rnd(C, -0.5f, 0.5f);
    float *dy = rnd(n, -1, 1), *dx0 = rnd(nx, -1, 1), *dfirst0 = rnd(nf ? nf : 1, -1, 1);
    double *y_ref = dalloc(n), *dx_ref = dalloc(nx), *dfirst_ref = dalloc(nf ? nf : 1), *dg_ref = dalloc(C), *db_ref = dalloc(C);
    for (int r = 0; r < rows; r++) {
        int b = r / tokens, t = r % tokens, in_first = cat && t == 0;
        size_t off = !cat ? (size_t)r * C : in_first ? (size_t)b * C : ((size_t)b * (tokens - 1) + t - 1) * C;
        const float *src = (in_first ? first : x) + off;
        double mean = 0, var = 0, s1 = 0, s2 = 0;
        for (int c = 0; c < C; c++) mean += src[c];
        mean /= C;
        for (int c = 0; c < C; c++) var += (src[c] - mean) * (src[c] - mean);
        double rstd = 1 / sqrt(var / C + 1e-6);
        for (int c = 0; c < C; c++) {
            double xh = (src[c] - mean) * rstd, d = dy[(size_t)r * C + c], g = d * gamma[c];
            y_ref[(size_t)r * C + c] = xh * gamma[c] + beta[c];
            dg_ref[c] += d * xh, db_ref[c] += d, s1 += g, s2 += g * xh;
        }
        s1 /= C, s2 /= C;
        double *dst = (in_first ? dfirst_ref : dx_ref) + off;
        const float *acc = (in_first ? dfirst0 : dx0) + off; /* plain: accumulate; cat: first accumulates, x not */
        for (int c = 0; c < C; c++) {
            double xh = (src[c] - mean) * rstd;
            dst[c] = rstd * (dy[(size_t)r * C + c] * gamma[c] - s1 - xh * s2) + ((!cat || in_first) ? acc[c] : 0.0);
        }
    }
    ln_run r = {rows, C, tokens, cat, NULL, NULL, NULL, test_to_device(first, nf ? nf : 1), test_to_device(x, nx),
                test_to_device(gamma, C), test_to_device(beta, C), dy};
    float *d_dy = test_to_device(dy, n), *d_dx = test_to_device(dx0, nx), *d_df = test_to_device(dfirst0, nf ? nf : 1);
    r.y = test_to_device(dy, n), r.mean = test_to_device(dy, rows), r.rstd = test_to_device(dy, rows);
    float *d_dg = test_to_device(gamma, C), *d_db = test_to_device(gamma, C);
    float *scratch;
    CHECK_CUDA(cudaMalloc((void **)&scratch, layernorm_backward_scratch_floats(rows, C) * sizeof(float)));
    test_poison(r.y, n), test_poison(d_dg, C), test_poison(d_db, C);
    settle();
    ln_loss(&r);
    if (cat) layernorm_cat_backward(d_df, NULL, d_dx, NULL, d_dg, d_db, d_dy, r.first, r.x, tokens, r.mean, r.rstd, r.gamma, rows, C, 1, 0, ELEM_F32, scratch, ctx.stream);
    else layernorm_backward(d_dx, NULL, d_dg, d_db, d_dy, r.x, r.mean, r.rstd, r.gamma, rows, C, 1, ELEM_F32, scratch, ctx.stream);
    printf("layernorm%s rows %d (tokens %d) C %d:\n", cat ? " (class token prepended)" : "", rows, tokens, C);
    expect_close("y", r.y, y_ref, n, 1e-5);
    expect_close("dx", d_dx, dx_ref, nx, 1e-5);
    if (cat) expect_close("dfirst", d_df, dfirst_ref, nf, 1e-5);
    expect_close("dgamma", d_dg, dg_ref, C, 1e-5);
    expect_close("dbeta", d_db, db_ref, C, 1e-5);
    float *dx = download(d_dx, nx), *dg = download(d_dg, C), *db = download(d_db, C);
    for (size_t i = 0; i < nx; i++) dx[i] -= cat ? 0 : dx0[i];
    fd_check("dL/dx", r.x, nx, dx, 8, ln_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/dgamma", r.gamma, C, dg, 4, ln_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/dbeta", r.beta, C, db, 4, ln_loss, &r, 1e-2f, 5e-3);
    float *ptrs[] = {r.y, r.mean, r.rstd, r.first, r.x, r.gamma, r.beta, d_dy, d_dx, d_df, d_dg, d_db, scratch};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) CHECK_CUDA(cudaFree(ptrs[i]));
    free(x), free(first), free(gamma), free(beta), free(dy), free(dx0), free(dfirst0), free(dx), free(dg), free(db);
    free(y_ref), free(dx_ref), free(dfirst_ref), free(dg_ref), free(db_ref);
}

static void test_layernorm(void **state) {
    check_layernorm(37, 1, 192, 0);
    check_layernorm(3, 5, 40, 0);
    check_layernorm(4, 9, 192, 1);
    check_layernorm(2, 3, 500, 1);
}

/* ---- GELU -----------------------------------------------------------------------------------------*/

typedef struct gelu_run {
    float *y, *x;
    const float *w;
    size_t n;
} gelu_run;

static double gelu_loss(void *arg) {
    gelu_run *r = arg;
    gelu_forward(r->y, r->x, r->n, ELEM_F32, ctx.stream);
    return weighted_sum(r->y, r->w, r->n);
}

static void test_gelu(void **state) {
    size_t n = 1001;
    float *x = rnd(n, -6, 6), *dy = rnd(n, -1, 1);
    double *y_ref = dalloc(n), *dx_ref = dalloc(n);
    for (size_t i = 0; i < n; i++) {
        double v = x[i], cdf = 0.5 * (1 + erf(v / sqrt(2.0)));
        y_ref[i] = v * cdf;
        dx_ref[i] = dy[i] * (cdf + v * exp(-0.5 * v * v) / sqrt(2 * M_PI));
    }
    gelu_run r = {test_to_device(x, n), test_to_device(x, n), dy, n};
    printf("gelu (exact erf), %zu values and the float4 path:\n", n);
    for (int vec = 0; vec < 2; vec++) {
        r.n = vec ? 1000 : n;
        test_poison(r.y, n);
        settle();
        gelu_forward(r.y, r.x, r.n, ELEM_F32, ctx.stream);
        expect_close(vec ? "y (float4)" : "y", r.y, y_ref, r.n, 3e-6);
        CHECK_CUDA(cudaMemcpy(r.y, dy, n * sizeof(float), cudaMemcpyHostToDevice));
        settle();
        gelu_backward(r.y, r.y, r.x, r.n, ELEM_F32, ctx.stream); /* in place, as the model runs it */
        expect_close(vec ? "dx (float4, in place)" : "dx (in place)", r.y, dx_ref, r.n, 3e-6);
    }
    float *dx = download(r.y, n);
    r.n = n;
    fd_check("dL/dx", r.x, 1000, dx, 10, gelu_loss, &r, 1e-3f, 5e-3);
    CHECK_CUDA(cudaFree(r.x));
    CHECK_CUDA(cudaFree(r.y));
    free(x), free(dy), free(dx), free(y_ref), free(dx_ref);
}

/* ---- talking heads --------------------------------------------------------------------------------*/


typedef struct th_run {
    int B, H, N;
    float *attn, *stats, *logits, *wl, *bl, *ww, *bw;
    const float *w;
} th_run;

static double th_loss(void *arg) {
    th_run *r = arg;
    talking_heads_forward(r->attn, r->stats, r->logits, r->wl, r->bl, r->ww, r->bw, r->B, r->H, r->N, ELEM_F32, ctx.stream);
    return weighted_sum(r->attn, r->w, (size_t)r->B * r->H * r->N * r->N);
}

static void check_talking_heads(int B, int H, int N) {
    size_t n = (size_t)B * H * N * N, hh = (size_t)H * H;
    float *logits = rnd(n, -3, 3), *wl = rnd(hh, -1, 1), *bl = rnd(H, -1, 1), *ww = rnd(hh, -1, 1), *bw = rnd(H, -1, 1);
    float *da = rnd(n, -1, 1);
    double *dad = dalloc(n), *attn_ref = dalloc(n), *dl_ref = dalloc(n), *dwl = dalloc(hh), *dbl = dalloc(H);
    double *dww = dalloc(hh), *dbw = dalloc(H);
    for (size_t i = 0; i < n; i++) dad[i] = da[i];
    th_reference(B, H, N, logits, wl, bl, ww, bw, dad, attn_ref, dl_ref, dwl, dbl, dww, dbw);
    th_run r = {B, H, N, test_to_device(da, n), NULL, test_to_device(logits, n), test_to_device(wl, hh),
                test_to_device(bl, H), test_to_device(ww, hh), test_to_device(bw, H), da};
    CHECK_CUDA(cudaMalloc((void **)&r.stats, (size_t)B * H * N * 2 * sizeof(float)));
    float *grad = test_to_device(da, n), *g_wl = test_to_device(wl, hh), *g_bl = test_to_device(bl, H);
    float *g_ww = test_to_device(ww, hh), *g_bw = test_to_device(bw, H), *scratch, *again = test_to_device(da, n);
    CHECK_CUDA(cudaMalloc((void **)&scratch, talking_heads_backward_scratch_floats(B, H, N) * sizeof(float)));
    printf("talking heads B %d H %d N %d:\n", B, H, N);
    test_poison(r.attn, n);
    settle();
    th_loss(&r);
    expect_close("attn", r.attn, attn_ref, n, 2e-5);
    test_poison(again, n);
    settle();
    talking_heads_recompute(again, r.stats, r.logits, r.wl, r.bl, r.ww, r.bw, B, H, N, ELEM_F32, ctx.stream);
    float *a1 = download(r.attn, n), *a2 = download(again, n);
    assert_memory_equal(a1, a2, n * sizeof(float)); /* the backward pass sees the forward's weights exactly */
    talking_heads_backward(grad, g_wl, g_bl, g_ww, g_bw, r.logits, r.stats, r.wl, r.bl, r.ww, r.bw, B, H, N, ELEM_F32, scratch, ctx.stream);
    expect_close("dlogits", grad, dl_ref, n, 1e-4);
    expect_close("d proj_l.weight", g_wl, dwl, hh, 5e-5);
    expect_close("d proj_w.weight", g_ww, dww, hh, 5e-5);
    expect_close("d proj_w.bias", g_bw, dbw, H, 5e-5);
    /* proj_l.bias shifts a whole softmax row: its gradient is zero up to rounding */
    float *gbl = download(g_bl, H);
    for (int h = 0; h < H; h++)
        if (fabs(gbl[h] - dbl[h]) > 1e-3) fail_msg("d proj_l.bias[%d] = %g, expected about %g", h, gbl[h], dbl[h]);
    float *dl = download(grad, n), *gwl = download(g_wl, hh), *gww = download(g_ww, hh), *gbw = download(g_bw, H);
    /* deterministic: the same call again gives the same bits */
    CHECK_CUDA(cudaMemcpy(grad, da, n * sizeof(float), cudaMemcpyHostToDevice));
    settle();
    talking_heads_backward(grad, g_wl, g_bl, g_ww, g_bw, r.logits, r.stats, r.wl, r.bl, r.ww, r.bw, B, H, N, ELEM_F32, scratch, ctx.stream);
    float *dl2 = download(grad, n), *gwl2 = download(g_wl, hh);
    assert_memory_equal(dl, dl2, n * sizeof(float));
    assert_memory_equal(gwl, gwl2, hh * sizeof(float));
    fd_check("dL/dlogits", r.logits, n, dl, 8, th_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/d proj_l.weight", r.wl, hh, gwl, 4, th_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/d proj_l.bias", r.bl, H, gbl, 2, th_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/d proj_w.weight", r.ww, hh, gww, 4, th_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/d proj_w.bias", r.bw, H, gbw, 2, th_loss, &r, 1e-2f, 5e-3);
    float *ptrs[] = {r.attn, r.stats, r.logits, r.wl, r.bl, r.ww, r.bw, grad, g_wl, g_bl, g_ww, g_bw, scratch, again};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) CHECK_CUDA(cudaFree(ptrs[i]));
    free(logits), free(wl), free(bl), free(ww), free(bw), free(da), free(a1), free(a2), free(dl), free(dl2);
    free(gwl), free(gwl2), free(gww), free(gbw), free(gbl);
    free(dad), free(attn_ref), free(dl_ref), free(dwl), free(dbl), free(dww), free(dbw);
}

static void test_talking_heads(void **state) {
    check_talking_heads(2, 4, 37);
    check_talking_heads(3, 2, 5);
    check_talking_heads(1, 4, 196);
}

/* ---- attention core: batched GEMMs + talking heads ----------------------------------------------*/

typedef struct core_run {
    th_core core;
    float *qkv, *out, *wl, *bl, *ww, *bw;
    const float *w;
    size_t n_out;
} core_run;

static double core_loss(void *arg) {
    core_run *r = arg;
    th_core_forward(&r->core, &engine, &ctx, r->wl, r->bl, r->ww, r->bw);
    return weighted_sum(r->out, r->w, r->n_out);
}

static void test_attention_core(void **state) {
    int B = 2, N = 19, H = 4, D = 8, C = H * D;
    size_t T = (size_t)B * N, n_qkv = T * 3 * C, n_out = T * C, sq = (size_t)B * H * N * N, hh = (size_t)H * H;
    double scale = 1 / sqrt((double)D);
    float *qkv = rnd(n_qkv, -1, 1), *wl = rnd(hh, -1, 1), *bl = rnd(H, -1, 1), *ww = rnd(hh, -1, 1), *bw = rnd(H, -1, 1);
    float *dout = rnd(n_out, -1, 1);
    float *logits = falloc(sq);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int d = 0; d < D; d++)
                        s += (double)qkv[((size_t)b * N + i) * 3 * C + h * D + d] * qkv[((size_t)b * N + j) * 3 * C + C + h * D + d];
                    logits[(((size_t)b * H + h) * N + i) * N + j] = (float)(s * scale);
                }
    double *attn = dalloc(sq), *da = dalloc(sq), *dl = dalloc(sq), *out_ref = dalloc(n_out), *dqkv_ref = dalloc(n_qkv);
    double *dwl = dalloc(hh), *dbl = dalloc(H), *dww = dalloc(hh), *dbw = dalloc(H);
    th_reference(B, H, N, logits, wl, bl, ww, bw, NULL, attn, NULL, NULL, NULL, NULL, NULL);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    size_t a = (((size_t)b * H + h) * N + i) * N + j;
                    for (int d = 0; d < D; d++) {
                        size_t oi = ((size_t)b * N + i) * C + h * D + d, vj = ((size_t)b * N + j) * 3 * C + 2 * C + h * D + d;
                        out_ref[oi] += attn[a] * qkv[vj];
                        da[a] += (double)dout[oi] * qkv[vj];
                        dqkv_ref[vj] += attn[a] * dout[oi];
                    }
                }
    th_reference(B, H, N, logits, wl, bl, ww, bw, da, attn, dl, dwl, dbl, dww, dbw);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    double g = dl[(((size_t)b * H + h) * N + i) * N + j] * scale;
                    for (int d = 0; d < D; d++) {
                        size_t qi = ((size_t)b * N + i) * 3 * C + h * D + d, kj = ((size_t)b * N + j) * 3 * C + C + h * D + d;
                        dqkv_ref[qi] += g * qkv[kj];
                        dqkv_ref[kj] += g * qkv[qi];
                    }
                }
    core_run r = {0};
    th_core_init(&r.core, B, N, H, D, ELEM_F32);
    r.qkv = test_to_device(qkv, n_qkv), r.out = test_to_device(dout, n_out), r.w = dout, r.n_out = n_out;
    r.wl = test_to_device(wl, hh), r.bl = test_to_device(bl, H), r.ww = test_to_device(ww, hh), r.bw = test_to_device(bw, H);
    float *d_logits, *d_stats, *d_attn, *scratch, *d_dout = test_to_device(dout, n_out), *d_dqkv = test_to_device(qkv, n_qkv);
    CHECK_CUDA(cudaMalloc((void **)&d_logits, sq * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_attn, sq * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&d_stats, (size_t)B * H * N * 2 * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&scratch, talking_heads_backward_scratch_floats(B, H, N) * sizeof(float)));
    float *g_wl = test_to_device(wl, hh), *g_bl = test_to_device(bl, H), *g_ww = test_to_device(ww, hh), *g_bw = test_to_device(bw, H);
    th_core_bind(&r.core, r.qkv, d_logits, d_stats, r.out, d_attn, d_dout, d_dqkv);
    printf("attention core B %d N %d H %d D %d:\n", B, N, H, D);
    test_poison(r.out, n_out), test_poison(d_dqkv, n_qkv);
    settle();
    core_loss(&r);
    th_core_backward(&r.core, &engine, &ctx, g_wl, g_bl, g_ww, g_bw, r.wl, r.bl, r.ww, r.bw, scratch);
    expect_close("out", r.out, out_ref, n_out, 2e-5);
    expect_close("dqkv", d_dqkv, dqkv_ref, n_qkv, 1e-4);
    expect_close("d proj_l.weight", g_wl, dwl, hh, 5e-5);
    expect_close("d proj_w.weight", g_ww, dww, hh, 5e-5);
    expect_close("d proj_w.bias", g_bw, dbw, H, 5e-5);
    float *g = download(d_dqkv, n_qkv), *gw = download(g_ww, hh), *gl = download(g_wl, hh);
    fd_check("dL/dqkv", r.qkv, n_qkv, g, 12, core_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/d proj_l.weight", r.wl, hh, gl, 3, core_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/d proj_w.weight", r.ww, hh, gw, 3, core_loss, &r, 1e-2f, 5e-3);
    float *ptrs[] = {r.qkv, r.out, r.wl, r.bl, r.ww, r.bw, d_logits, d_stats, d_attn, scratch, d_dout, d_dqkv, g_wl, g_bl, g_ww, g_bw};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) CHECK_CUDA(cudaFree(ptrs[i]));
    free(qkv), free(wl), free(bl), free(ww), free(bw), free(dout), free(logits), free(g), free(gw), free(gl);
    free(attn), free(da), free(dl), free(out_ref), free(dqkv_ref), free(dwl), free(dbl), free(dww), free(dbw);
}

/* ---- class attention ----------------------------------------------------------------------------*/

typedef struct ca_run {
    int B, H, tokens, D;
    float *out, *p, *q, *kv;
    const float *w;
} ca_run;

static double ca_loss(void *arg) {
    ca_run *r = arg;
    class_attention_forward(r->out, r->p, r->q, r->kv, r->B, r->H, r->tokens, r->D, 1 / sqrtf((float)r->D), ELEM_F32, ctx.stream);
    return weighted_sum(r->out, r->w, (size_t)r->B * r->H * r->D);
}

static void check_class_attention(int B, int H, int tokens, int D) {
    int C = H * D;
    size_t nq = (size_t)B * C, nkv = (size_t)B * tokens * 2 * C;
    float *q = rnd(nq, -1, 1), *kv = rnd(nkv, -1, 1), *dout = rnd(nq, -1, 1);
    double *out_ref = dalloc(nq), *dq_ref = dalloc(nq), *dkv_ref = dalloc(nkv), *p = dalloc(tokens), *dp = dalloc(tokens);
    double scale = 1 / sqrt((double)D);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *qq = q + (size_t)b * C + h * D;
            double m = -INFINITY, s = 0, dot = 0;
            for (int j = 0; j < tokens; j++) {
                const float *k = kv + ((size_t)b * tokens + j) * 2 * C + h * D;
                double v = 0;
                for (int d = 0; d < D; d++) v += (double)qq[d] * k[d];
                p[j] = v * scale, m = fmax(m, p[j]);
            }
            for (int j = 0; j < tokens; j++) s += exp(p[j] - m);
            for (int j = 0; j < tokens; j++) {
                p[j] = exp(p[j] - m) / s;
                const float *v = kv + ((size_t)b * tokens + j) * 2 * C + C + h * D;
                dp[j] = 0;
                for (int d = 0; d < D; d++) {
                    out_ref[(size_t)b * C + h * D + d] += p[j] * v[d];
                    dp[j] += (double)dout[(size_t)b * C + h * D + d] * v[d];
                    dkv_ref[((size_t)b * tokens + j) * 2 * C + C + h * D + d] = p[j] * dout[(size_t)b * C + h * D + d];
                }
                dot += p[j] * dp[j];
            }
            for (int j = 0; j < tokens; j++) {
                double ds = p[j] * (dp[j] - dot) * scale;
                const float *k = kv + ((size_t)b * tokens + j) * 2 * C + h * D;
                for (int d = 0; d < D; d++) {
                    dq_ref[(size_t)b * C + h * D + d] += ds * k[d];
                    dkv_ref[((size_t)b * tokens + j) * 2 * C + h * D + d] = ds * qq[d];
                }
            }
        }
    ca_run r = {B, H, tokens, D, test_to_device(q, nq), NULL, test_to_device(q, nq), test_to_device(kv, nkv), dout};
    CHECK_CUDA(cudaMalloc((void **)&r.p, (size_t)B * H * tokens * sizeof(float)));
    float *d_dout = test_to_device(dout, nq), *d_dq = test_to_device(q, nq), *d_dkv = test_to_device(kv, nkv);
    printf("class attention B %d H %d tokens %d D %d:\n", B, H, tokens, D);
    test_poison(r.out, nq), test_poison(d_dq, nq), test_poison(d_dkv, nkv);
    settle();
    ca_loss(&r);
    class_attention_backward(d_dq, d_dkv, d_dout, r.p, r.q, r.kv, B, H, tokens, D, 1 / sqrtf((float)D), ELEM_F32, ctx.stream);
    expect_close("out", r.out, out_ref, nq, 2e-5);
    expect_close("dq", d_dq, dq_ref, nq, 1e-4);
    expect_close("dkv", d_dkv, dkv_ref, nkv, 1e-4);
    float *dq = download(d_dq, nq), *dkv = download(d_dkv, nkv);
    fd_check("dL/dq", r.q, nq, dq, 6, ca_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/dkv", r.kv, nkv, dkv, 10, ca_loss, &r, 1e-2f, 5e-3);
    float *ptrs[] = {r.out, r.p, r.q, r.kv, d_dout, d_dq, d_dkv};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) CHECK_CUDA(cudaFree(ptrs[i]));
    free(q), free(kv), free(dout), free(dq), free(dkv), free(out_ref), free(dq_ref), free(dkv_ref), free(p), free(dp);
}

static void test_class_attention(void **state) {
    check_class_attention(3, 4, 11, 8);
    check_class_attention(2, 4, 197, 48);
}

int main(void) {
    test_require_gpu();
    if (context_init(&ctx, 0, (size_t)64 << 20, 0) != CONTEXT_OK) return 1;
    gemm_engine_init(&engine, &ctx);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm), cmocka_unit_test(test_gelu), cmocka_unit_test(test_talking_heads),
        cmocka_unit_test(test_attention_core), cmocka_unit_test(test_class_attention),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    gemm_engine_destroy(&engine);
    context_free(&ctx);
    return rc;
}
