/* CaiT's bfloat16 (--precision bf16) paths on the GPU. Each kernel and layer runs on bfloat16
 * tensors against a double-precision CPU reference computed from the same bfloat16-rounded inputs
 * (and, where the GPU keeps a bfloat16 intermediate, from that intermediate rounded the same way),
 * so what remains is float accumulation plus one bfloat16 rounding per output (BF16_OUT) or float
 * arithmetic alone for float outputs (F32_SUMS): LayerNorm (plain and with the class token; float
 * dx, its bfloat16 copy, float statistics and affine gradients), GELU (scalar and vector paths, in
 * place), talking heads, the attention core (batched bfloat16 GEMMs), class attention, and the
 * GEMM wrapper through the layers on the arena's bfloat16 weight copies (dense with a bfloat16
 * bias and an accumulated strided dx, the LayerScale residual linear writing float, the patch
 * embedding). Directional finite differences through the bfloat16 forward itself check the
 * LayerNorm and attention backward passes. Then a whole cait_xxs24 step in bf16 against the same
 * weights in float32: the loss, every gradient tensor, and a repeated batch being learned. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/kernels.h"
#include "kernels/transformer.h"
#include "models/layers/cait_layers.h"
#include "kernels/check.h"
#include "models/session.h"
#include "tests/support/cait_reference.h"
#include "tests/support/testutil.h"

static job_context ctx;
static gemm_engine engine;
static uint64_t rng = 7919;

/* bfloat16 output: one rounding per element, an L2-relative error near 2^-9 / sqrt(3) */
#define BF16_OUT 6e-3
/* float results of float arithmetic on exact bfloat16 inputs */
#define F32_SUMS 1e-4
/* Directional differences through a bfloat16 forward: each output's rounding moves L = sum(w y)
 * by about 1.1e-3 |w y| (independently at x + hv and x - hv, as every output moves by more than
 * its ulp), which against the signal 2h |g|^2 / norm(g) of these sizes (fd_direction) is below
 * 1e-2 at the steps used; the truncation error of central differences is below 1e-2. */
#define FD_TOL 3e-2

/* ---- bfloat16 on the host, device buffers (freed at the end of each test) --------------------*/

/* A value as the GPU stores it: float, then bfloat16. */
static float bf16r(double v) { return test_float_of_bf16(test_bf16_of((float)v)); }

static void *owned[256];
static int owned_count;
static void *keep(void *p) {
    if (owned_count == (int)(sizeof owned / sizeof *owned)) fail_msg("too many test buffers");
    return owned[owned_count++] = p;
}
static void release(void) {
    CHECK_CUDA(cudaDeviceSynchronize());
    for (int i = 0; i < owned_count; i++) CHECK_CUDA(cudaFree(owned[i]));
    owned_count = 0;
}

static void settle(void) { CHECK_CUDA(cudaDeviceSynchronize()); }
static double *dal(size_t n) { return calloc(n, sizeof(double)); }
/* n values in [lo, hi], rounded to bfloat16 when `round` is set. */
static float *randf(size_t n, float lo, float hi, int round) {
    float *x = malloc(n * sizeof *x);
    test_fill_uniform(x, n, &rng, lo, hi);
    for (size_t i = 0; round && i < n; i++) x[i] = bf16r(x[i]);
    return x;
}
static void *dev(size_t n, elem_type t) {
    void *d = NULL;
    CHECK_CUDA(cudaMalloc(&d, n * elem_bytes(t) + 16));
    return keep(d);
}
static void upload(void *d, const float *x, size_t n, elem_type t) {
    if (t == ELEM_F32) {
        CHECK_CUDA(cudaMemcpy(d, x, n * sizeof(float), cudaMemcpyHostToDevice));
    } else {
        uint16_t *h = malloc(n * sizeof *h);
        for (size_t i = 0; i < n; i++) h[i] = test_bf16_of(x[i]);
        CHECK_CUDA(cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice));
        free(h);
    }
    settle();
}
static void *up(const float *x, size_t n, elem_type t) {
    void *d = dev(n, t);
    upload(d, x, n, t);
    return d;
}
static void *poisoned(size_t n, elem_type t) {
    void *d = dev(n, t);
    CHECK_CUDA(cudaMemset(d, 0xff, n * elem_bytes(t))); /* NaN in either type */
    settle();
    return d;
}
static float *down(const void *d, size_t n, elem_type t) {
    float *f = malloc(n * sizeof *f);
    settle();
    if (t == ELEM_F32) {
        CHECK_CUDA(cudaMemcpy(f, d, n * sizeof *f, cudaMemcpyDeviceToHost));
    } else {
        uint16_t *h = malloc(n * sizeof *h);
        CHECK_CUDA(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) f[i] = test_float_of_bf16(h[i]);
        free(h);
    }
    return f;
}
static void expect(const char *what, const void *d, elem_type t, const double *ref, size_t n, double tol) {
    float *got = down(d, n, t);
    double e = test_rel_err(got, ref, n);
    free(got);
    printf("  %-38s rel err %.2e (tol %.0e)\n", what, e, tol);
    if (!(e < tol)) fail_msg("%s: relative error %.3e against the CPU reference", what, e);
}
static double weighted(const void *d, elem_type t, const float *w, size_t n) {
    float *y = down(d, n, t);
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)y[i] * w[i];
    free(y);
    return s;
}

/* L(x + h v) - L(x - h v) with v = g / max(rms(g), max|g| / 2), x the device input of type t whose
 * exact values are x_host, against g . (x+ - x-) over the inputs as actually stored (rounded to
 * bfloat16 for a bfloat16 input, so that rounding of the step is no error). Why the cap: a gradient
 * concentrated on few elements (class attention's dk over 197 tokens: max|g| = 26 rms) would move
 * those by 26 h, where the softmax is far from linear (24% off in exact arithmetic at h 0.05);
 * moving no element by more than 2 h keeps the step's own error under 1%. */
typedef double (*loss_fn)(void *arg);
static void fd_direction(const char *what, void *d, elem_type t, const float *x_host, const float *g, size_t n,
                         loss_fn loss, void *arg, double h) {
    double norm = 0, pred = 0, l[2];
    for (size_t i = 0; i < n; i++) norm += (double)g[i] * g[i];
    norm = sqrt(norm / n);
    for (size_t i = 0; i < n; i++) norm = fmax(norm, fabs((double)g[i]) / 2);
    float *xs[2];
    for (int s = 0; s < 2; s++) {
        xs[s] = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            double v = x_host[i] + (s ? -h : h) * g[i] / norm;
            xs[s][i] = t == ELEM_BF16 ? bf16r(v) : (float)v;
        }
        upload(d, xs[s], n, t);
        l[s] = loss(arg);
    }
    for (size_t i = 0; i < n; i++) pred += (double)g[i] * ((double)xs[0][i] - xs[1][i]);
    upload(d, x_host, n, t);
    double err = fabs((l[0] - l[1]) - pred) / fabs(pred);
    printf("  %-38s directional difference (h %.2g): rel err %.2e (tol %.0e)\n", what, h, err, FD_TOL);
    free(xs[0]), free(xs[1]);
    if (!(err < FD_TOL)) fail_msg("%s: difference %.6g, backward predicts %.6g", what, l[0] - l[1], pred);
}

/* ---- LayerNorm --------------------------------------------------------------------------------*/

typedef struct ln_run {
    int rows, C, tokens, cat;
    void *y;
    float *mean, *rstd, *first, *x, *gamma, *beta;
    const float *w;
} ln_run;

static double ln_loss(void *arg) {
    ln_run *r = arg;
    if (r->cat)
        layernorm_cat_forward(r->y, r->mean, r->rstd, r->first, r->x, r->tokens, r->gamma, r->beta, r->rows, r->C,
                              1e-6f, ELEM_BF16, ctx.stream);
    else
        layernorm_forward(r->y, r->mean, r->rstd, r->x, r->gamma, r->beta, r->rows, r->C, 1e-6f, ELEM_BF16,
                          ctx.stream);
    return weighted(r->y, ELEM_BF16, r->w, (size_t)r->rows * r->C);
}

/* x and first are the float residual stream (not rounded); dy is bfloat16. Plain: dx accumulates;
 * cat: dfirst accumulates, dx is overwritten, as the class-attention blocks run it. */
static void check_layernorm(int batch, int tokens, int C, int cat) {
    int rows = batch * tokens;
    size_t n = (size_t)rows * C, nf = cat ? (size_t)batch * C : 1, nx = n - (cat ? nf : 0);
    float *x = randf(nx, -2, 3, 0), *first = randf(nf, -1, 1, 0), *gamma = randf(C, 0.5f, 1.5f, 0);
    float *beta = randf(C, -0.5f, 0.5f, 0), *dy = randf(n, -1, 1, 1), *dx0 = randf(nx, -1, 1, 0);
    float *df0 = randf(nf, -1, 1, 0);
    double *y_ref = dal(n), *dx_ref = dal(nx), *df_ref = dal(nf), *dg_ref = dal(C), *db_ref = dal(C);
    double *m_ref = dal(rows), *r_ref = dal(rows);
    for (int r = 0; r < rows; r++) {
        int b = r / tokens, t = r % tokens, in_first = cat && t == 0;
        size_t off = !cat ? (size_t)r * C : in_first ? (size_t)b * C : ((size_t)b * (tokens - 1) + t - 1) * C;
        const float *src = (in_first ? first : x) + off;
        double mean = 0, var = 0, s1 = 0, s2 = 0;
        for (int c = 0; c < C; c++) mean += src[c];
        mean /= C;
        for (int c = 0; c < C; c++) var += (src[c] - mean) * (src[c] - mean);
        double rstd = 1 / sqrt(var / C + 1e-6);
        m_ref[r] = mean, r_ref[r] = rstd;
        for (int c = 0; c < C; c++) {
            double xh = (src[c] - mean) * rstd, d = dy[(size_t)r * C + c], g = d * gamma[c];
            y_ref[(size_t)r * C + c] = xh * gamma[c] + beta[c];
            dg_ref[c] += d * xh, db_ref[c] += d, s1 += g, s2 += g * xh;
        }
        s1 /= C, s2 /= C;
        double *dst = (in_first ? df_ref : dx_ref) + off;
        const float *acc = (in_first ? df0 : dx0) + off;
        for (int c = 0; c < C; c++) {
            double xh = (src[c] - mean) * rstd;
            dst[c] = rstd * (dy[(size_t)r * C + c] * gamma[c] - s1 - xh * s2) + ((!cat || in_first) ? acc[c] : 0.0);
        }
    }
    ln_run run = {rows, C, tokens, cat, poisoned(n, ELEM_BF16), dev(rows, ELEM_F32), dev(rows, ELEM_F32),
                  up(first, nf, ELEM_F32), up(x, nx, ELEM_F32), up(gamma, C, ELEM_F32), up(beta, C, ELEM_F32), dy};
    void *d_dy = up(dy, n, ELEM_BF16), *d_dx = up(dx0, nx, ELEM_F32), *d_df = up(df0, nf, ELEM_F32);
    void *d_dxh = poisoned(nx, ELEM_BF16), *d_dfh = poisoned(nf, ELEM_BF16);
    void *d_dg = poisoned(C, ELEM_F32), *d_db = poisoned(C, ELEM_F32);
    float *scratch = dev(layernorm_backward_scratch_floats(rows, C), ELEM_F32);
    ln_loss(&run);
    if (cat)
        layernorm_cat_backward(d_df, d_dfh, d_dx, d_dxh, d_dg, d_db, d_dy, run.first, run.x, tokens, run.mean,
                               run.rstd, run.gamma, rows, C, 1, 0, ELEM_BF16, scratch, ctx.stream);
    else
        layernorm_backward(d_dx, d_dxh, d_dg, d_db, d_dy, run.x, run.mean, run.rstd, run.gamma, rows, C, 1, ELEM_BF16,
                           scratch, ctx.stream);
    printf("layernorm bf16%s rows %d (tokens %d) C %d:\n", cat ? " (class token prepended)" : "", rows, tokens, C);
    expect("y (bf16)", run.y, ELEM_BF16, y_ref, n, BF16_OUT);
    expect("mean", run.mean, ELEM_F32, m_ref, rows, F32_SUMS);
    expect("rstd", run.rstd, ELEM_F32, r_ref, rows, F32_SUMS);
    expect("dx (float)", d_dx, ELEM_F32, dx_ref, nx, F32_SUMS);
    expect("dx's bf16 copy", d_dxh, ELEM_BF16, dx_ref, nx, BF16_OUT);
    if (cat) expect("dfirst (float)", d_df, ELEM_F32, df_ref, nf, F32_SUMS);
    if (cat) expect("dfirst's bf16 copy", d_dfh, ELEM_BF16, df_ref, nf, BF16_OUT);
    expect("dgamma", d_dg, ELEM_F32, dg_ref, C, F32_SUMS);
    expect("dbeta", d_db, ELEM_F32, db_ref, C, F32_SUMS);
    float *dx = down(d_dx, nx, ELEM_F32), *df = down(d_df, nf, ELEM_F32), *dg = down(d_dg, C, ELEM_F32);
    for (size_t i = 0; i < nx; i++) dx[i] -= cat ? 0.0f : dx0[i];
    for (size_t i = 0; cat && i < nf; i++) df[i] -= df0[i];
    fd_direction("dL/dx", run.x, ELEM_F32, x, dx, nx, ln_loss, &run, 0.05);
    if (cat) fd_direction("dL/dfirst", run.first, ELEM_F32, first, df, nf, ln_loss, &run, 0.05);
    fd_direction("dL/dgamma", run.gamma, ELEM_F32, gamma, dg, C, ln_loss, &run, 0.05);
    release();
    free(x), free(first), free(gamma), free(beta), free(dy), free(dx0), free(df0), free(dx), free(df), free(dg);
    free(y_ref), free(dx_ref), free(df_ref), free(dg_ref), free(db_ref), free(m_ref), free(r_ref);
}

static void test_layernorm(void **state) {
    check_layernorm(37, 1, 192, 0);
    check_layernorm(3, 5, 40, 0);
    check_layernorm(4, 9, 192, 1);
    check_layernorm(2, 3, 500, 1);
}

/* ---- GELU -------------------------------------------------------------------------------------*/

static void test_gelu(void **state) {
    size_t n = 1001;
    float *x = randf(n, -6, 6, 1), *dy = randf(n, -1, 1, 1);
    double *y_ref = dal(n), *dx_ref = dal(n);
    for (size_t i = 0; i < n; i++) {
        double v = x[i], cdf = 0.5 * (1 + erf(v / sqrt(2.0)));
        y_ref[i] = v * cdf;
        dx_ref[i] = dy[i] * (cdf + v * exp(-0.5 * v * v) / sqrt(2 * M_PI));
    }
    void *d_x = up(x, n, ELEM_BF16), *d_y = dev(n, ELEM_BF16);
    printf("gelu bf16, %zu values (scalar) and 1000 (4 at a time):\n", n);
    for (int vec = 0; vec < 2; vec++) {
        size_t m = vec ? 1000 : n;
        CHECK_CUDA(cudaMemset(d_y, 0xff, n * 2));
        settle();
        gelu_forward(d_y, d_x, m, ELEM_BF16, ctx.stream);
        expect(vec ? "y (vector)" : "y", d_y, ELEM_BF16, y_ref, m, BF16_OUT);
        upload(d_y, dy, n, ELEM_BF16);
        gelu_backward(d_y, d_y, d_x, m, ELEM_BF16, ctx.stream);
        expect(vec ? "dx (vector, in place)" : "dx (in place)", d_y, ELEM_BF16, dx_ref, m, BF16_OUT);
    }
    release();
    free(x), free(dy), free(y_ref), free(dx_ref);
}

/* ---- talking heads ----------------------------------------------------------------------------*/


static void check_talking_heads(int B, int H, int N) {
    size_t n = (size_t)B * H * N * N, hh = (size_t)H * H;
    float *logits = randf(n, -3, 3, 1), *wl = randf(hh, -1, 1, 0), *bl = randf(H, -1, 1, 0);
    float *ww = randf(hh, -1, 1, 0), *bw = randf(H, -1, 1, 0), *da = randf(n, -1, 1, 1);
    double *dad = dal(n), *attn = dal(n), *dl = dal(n), *dwl = dal(hh), *dbl = dal(H), *dww = dal(hh), *dbw = dal(H);
    for (size_t i = 0; i < n; i++) dad[i] = da[i];
    th_reference(B, H, N, logits, wl, bl, ww, bw, dad, attn, dl, dwl, dbl, dww, dbw);
    void *d_logits = up(logits, n, ELEM_BF16), *d_attn = poisoned(n, ELEM_BF16), *again = poisoned(n, ELEM_BF16);
    float *d_wl = up(wl, hh, ELEM_F32), *d_bl = up(bl, H, ELEM_F32), *d_ww = up(ww, hh, ELEM_F32);
    float *d_bw = up(bw, H, ELEM_F32), *stats = dev((size_t)B * H * N * 2, ELEM_F32);
    void *grad = up(da, n, ELEM_BF16), *g_wl = poisoned(hh, ELEM_BF16), *g_ww = poisoned(hh, ELEM_BF16);
    float *g_bl = poisoned(H, ELEM_F32), *g_bw = poisoned(H, ELEM_F32);
    float *scratch = dev(talking_heads_backward_scratch_floats(B, H, N), ELEM_F32);
    printf("talking heads bf16 B %d H %d N %d:\n", B, H, N);
    talking_heads_forward(d_attn, stats, d_logits, d_wl, d_bl, d_ww, d_bw, B, H, N, ELEM_BF16, ctx.stream);
    expect("attn (bf16)", d_attn, ELEM_BF16, attn, n, BF16_OUT);
    talking_heads_recompute(again, stats, d_logits, d_wl, d_bl, d_ww, d_bw, B, H, N, ELEM_BF16, ctx.stream);
    settle();
    uint16_t *a1 = malloc(n * 2), *a2 = malloc(n * 2);
    CHECK_CUDA(cudaMemcpy(a1, d_attn, n * 2, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(a2, again, n * 2, cudaMemcpyDeviceToHost));
    assert_memory_equal(a1, a2, n * 2); /* the backward pass sees the forward's weights exactly */
    talking_heads_backward(grad, g_wl, g_bl, g_ww, g_bw, d_logits, stats, d_wl, d_bl, d_ww, d_bw, B, H, N, ELEM_BF16,
                           scratch, ctx.stream);
    expect("dlogits (bf16)", grad, ELEM_BF16, dl, n, BF16_OUT);
    expect("d proj_l.weight (bf16)", g_wl, ELEM_BF16, dwl, hh, BF16_OUT);
    expect("d proj_w.weight (bf16)", g_ww, ELEM_BF16, dww, hh, BF16_OUT);
    expect("d proj_w.bias (float)", g_bw, ELEM_F32, dbw, H, F32_SUMS);
    float *gbl = down(g_bl, H, ELEM_F32); /* a softmax row's shift: zero up to rounding */
    for (int h = 0; h < H; h++)
        if (fabs(gbl[h] - dbl[h]) > 1e-3) fail_msg("d proj_l.bias[%d] = %g, expected about %g", h, gbl[h], dbl[h]);
    release();
    free(logits), free(wl), free(bl), free(ww), free(bw), free(da), free(a1), free(a2), free(gbl);
    free(dad), free(attn), free(dl), free(dwl), free(dbl), free(dww), free(dbw);
}

static void test_talking_heads(void **state) {
    check_talking_heads(2, 4, 37);
    check_talking_heads(3, 2, 5);
    check_talking_heads(1, 4, 196);
}

/* ---- attention core: batched bfloat16 GEMMs + talking heads -----------------------------------*/

typedef struct core_run {
    th_core core;
    void *qkv, *out;
    float *wl, *bl, *ww, *bw;
    const float *w;
    size_t n_out;
} core_run;

static double core_loss(void *arg) {
    core_run *r = arg;
    th_core_forward(&r->core, &engine, &ctx, r->wl, r->bl, r->ww, r->bw);
    return weighted(r->out, ELEM_BF16, r->w, r->n_out);
}

/* The reference rounds to bfloat16 where the GPU stores bfloat16: logits, attention weights,
 * dattn and dlogits, so each output is compared after one rounding of its own. */
static void test_attention_core(void **state) {
    int B = 2, N = 19, H = 4, D = 8, C = H * D;
    size_t T = (size_t)B * N, n_qkv = T * 3 * C, n_out = T * C, sq = (size_t)B * H * N * N, hh = (size_t)H * H;
    double scale = 1 / sqrt((double)D);
    float *qkv = randf(n_qkv, -1, 1, 1), *wl = randf(hh, -1, 1, 1), *bl = randf(H, -1, 1, 0);
    float *ww = randf(hh, -1, 1, 1), *bw = randf(H, -1, 1, 0), *dout = randf(n_out, -1, 1, 1);
    float *logits = malloc(sq * sizeof(float)), *attn_r = malloc(sq * sizeof(float)), *dl_r = malloc(sq * sizeof(float));
    double *attn = dal(sq), *da = dal(sq), *dl = dal(sq), *out_ref = dal(n_out), *dqkv_ref = dal(n_qkv);
    double *dwl = dal(hh), *dbl = dal(H), *dww = dal(hh), *dbw = dal(H);
#define Q(b, i, h, d) qkv[((size_t)(b) * N + (i)) * 3 * C + (h) * D + (d)]
#define SQ(b, h, i, j) ((((size_t)(b) * H + (h)) * N + (i)) * N + (j))
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int d = 0; d < D; d++) s += (double)Q(b, i, h, d) * Q(b, j, h, C + d);
                    logits[SQ(b, h, i, j)] = bf16r(s * scale);
                }
    th_reference(B, H, N, logits, wl, bl, ww, bw, NULL, attn, NULL, NULL, NULL, NULL, NULL);
    for (size_t i = 0; i < sq; i++) attn_r[i] = bf16r(attn[i]);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    double a = attn_r[SQ(b, h, i, j)], s = 0;
                    for (int d = 0; d < D; d++) {
                        double g = dout[((size_t)b * N + i) * C + h * D + d];
                        out_ref[((size_t)b * N + i) * C + h * D + d] += a * Q(b, j, h, 2 * C + d);
                        dqkv_ref[((size_t)b * N + j) * 3 * C + 2 * C + h * D + d] += a * g;
                        s += g * Q(b, j, h, 2 * C + d);
                    }
                    da[SQ(b, h, i, j)] = bf16r(s);
                }
    th_reference(B, H, N, logits, wl, bl, ww, bw, da, attn, dl, dwl, dbl, dww, dbw);
    for (size_t i = 0; i < sq; i++) dl_r[i] = bf16r(dl[i]);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    double g = dl_r[SQ(b, h, i, j)] * scale;
                    for (int d = 0; d < D; d++) {
                        dqkv_ref[((size_t)b * N + i) * 3 * C + h * D + d] += g * Q(b, j, h, C + d);
                        dqkv_ref[((size_t)b * N + j) * 3 * C + C + h * D + d] += g * Q(b, i, h, d);
                    }
                }
#undef Q
#undef SQ
    /* the mixing weights live in an arena with bfloat16 copies: their gradients go there */
    arena plan;
    arena_plan(&plan);
    plan.half_weights = 1;
    core_run r = {0};
    for (int pass = 0; pass < 2; pass++) {
        arena *a = pass ? &ctx.arena : &plan;
        if (pass) assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
        r.wl = arena_take_floats(a, ARENA_WEIGHTS, hh), r.ww = arena_take_floats(a, ARENA_WEIGHTS, hh);
        r.bl = arena_take_floats(a, ARENA_NO_DECAY, H), r.bw = arena_take_floats(a, ARENA_NO_DECAY, H);
    }
    th_core_init(&r.core, B, N, H, D, ELEM_BF16);
    upload(r.wl, wl, hh, ELEM_F32), upload(r.ww, ww, hh, ELEM_F32), upload(r.bl, bl, H, ELEM_F32);
    upload(r.bw, bw, H, ELEM_F32);
    r.qkv = up(qkv, n_qkv, ELEM_BF16), r.out = poisoned(n_out, ELEM_BF16), r.w = dout, r.n_out = n_out;
    void *d_logits = dev(sq, ELEM_BF16), *d_attn = dev(sq, ELEM_BF16), *d_dout = up(dout, n_out, ELEM_BF16);
    void *d_dqkv = poisoned(n_qkv, ELEM_BF16);
    float *stats = dev((size_t)B * H * N * 2, ELEM_F32);
    float *scratch = dev(talking_heads_backward_scratch_floats(B, H, N), ELEM_F32);
    th_core_bind(&r.core, r.qkv, d_logits, stats, r.out, d_attn, d_dout, d_dqkv);
    engine.type = ELEM_BF16;
    printf("attention core bf16 B %d N %d H %d D %d:\n", B, N, H, D);
    core_loss(&r);
    float *g_wl = arena_grad_of(&ctx.arena, r.wl), *g_ww = arena_grad_of(&ctx.arena, r.ww);
    float *g_bl = arena_grad_of(&ctx.arena, r.bl), *g_bw = arena_grad_of(&ctx.arena, r.bw);
    th_core_backward(&r.core, &engine, &ctx, g_wl, g_bl, g_ww, g_bw, r.wl, r.bl, r.ww, r.bw, scratch);
    model_grads_from_half(&ctx);
    expect("out (bf16)", r.out, ELEM_BF16, out_ref, n_out, BF16_OUT);
    expect("dqkv (bf16)", d_dqkv, ELEM_BF16, dqkv_ref, n_qkv, BF16_OUT);
    expect("d proj_l.weight (bf16 copy)", g_wl, ELEM_F32, dwl, hh, BF16_OUT);
    expect("d proj_w.weight (bf16 copy)", g_ww, ELEM_F32, dww, hh, BF16_OUT);
    expect("d proj_w.bias (float)", g_bw, ELEM_F32, dbw, H, F32_SUMS);
    float *g = down(d_dqkv, n_qkv, ELEM_BF16);
    fd_direction("dL/dqkv", r.qkv, ELEM_BF16, qkv, g, n_qkv, core_loss, &r, 0.05);
    engine.type = ELEM_F32;
    arena_free(&ctx.arena);
    release();
    free(qkv), free(wl), free(bl), free(ww), free(bw), free(dout), free(logits), free(attn_r), free(dl_r), free(g);
    free(attn), free(da), free(dl), free(out_ref), free(dqkv_ref), free(dwl), free(dbl), free(dww), free(dbw);
}

/* ---- class attention ------------------------------------------------------------------------*/

typedef struct ca_run {
    int B, H, tokens, D;
    void *out, *q, *kv;
    float *p;
    const float *w;
} ca_run;

static double ca_loss(void *arg) {
    ca_run *r = arg;
    class_attention_forward(r->out, r->p, r->q, r->kv, r->B, r->H, r->tokens, r->D, 1 / sqrtf((float)r->D),
                            ELEM_BF16, ctx.stream);
    return weighted(r->out, ELEM_BF16, r->w, (size_t)r->B * r->H * r->D);
}

/* Inputs in [-2, 2] give a peaked softmax, so the query's gradient stands out of the output's
 * rounding in the directional difference. */
static void check_class_attention(int B, int H, int tokens, int D) {
    int C = H * D;
    size_t nq = (size_t)B * C, nkv = (size_t)B * tokens * 2 * C, np = (size_t)B * H * tokens;
    float *q = randf(nq, -2, 2, 1), *kv = randf(nkv, -2, 2, 1), *dout = randf(nq, -1, 1, 1);
    double *out_ref = dal(nq), *dq_ref = dal(nq), *dkv_ref = dal(nkv), *p_ref = dal(np), *dp = dal(tokens);
    double scale = 1 / sqrt((double)D);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *qq = q + (size_t)b * C + h * D;
            double *p = p_ref + ((size_t)b * H + h) * tokens, m = -INFINITY, s = 0, dot = 0;
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
                    double g = dout[(size_t)b * C + h * D + d];
                    out_ref[(size_t)b * C + h * D + d] += p[j] * v[d];
                    dp[j] += g * v[d];
                    dkv_ref[((size_t)b * tokens + j) * 2 * C + C + h * D + d] = p[j] * g;
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
    ca_run r = {B, H, tokens, D, poisoned(nq, ELEM_BF16), up(q, nq, ELEM_BF16), up(kv, nkv, ELEM_BF16),
                poisoned(np, ELEM_F32), dout};
    void *d_dout = up(dout, nq, ELEM_BF16), *d_dq = poisoned(nq, ELEM_BF16), *d_dkv = poisoned(nkv, ELEM_BF16);
    printf("class attention bf16 B %d H %d tokens %d D %d:\n", B, H, tokens, D);
    ca_loss(&r);
    class_attention_backward(d_dq, d_dkv, d_dout, r.p, r.q, r.kv, B, H, tokens, D, 1 / sqrtf((float)D), ELEM_BF16,
                             ctx.stream);
    expect("out (bf16)", r.out, ELEM_BF16, out_ref, nq, BF16_OUT);
    expect("p (float)", r.p, ELEM_F32, p_ref, np, F32_SUMS);
    expect("dq (bf16)", d_dq, ELEM_BF16, dq_ref, nq, BF16_OUT);
    expect("dkv (bf16)", d_dkv, ELEM_BF16, dkv_ref, nkv, BF16_OUT);
    float *dq = down(d_dq, nq, ELEM_BF16), *dkv = down(d_dkv, nkv, ELEM_BF16);
    fd_direction("dL/dq", r.q, ELEM_BF16, q, dq, nq, ca_loss, &r, 0.07);
    fd_direction("dL/dkv", r.kv, ELEM_BF16, kv, dkv, nkv, ca_loss, &r, 0.05);
    release();
    free(q), free(kv), free(dout), free(dq), free(dkv), free(out_ref), free(dq_ref), free(dkv_ref), free(p_ref);
    free(dp);
}

static void test_class_attention(void **state) {
    check_class_attention(4, 4, 11, 8);
    check_class_attention(2, 4, 197, 48);
}

/* ---- the GEMM wrapper through the layers, on the arena's bfloat16 weight copies ----------------*/

enum { DR = 5, DS = 3, DI = 16, DO = 24, LR = 37, LI = 24, LO = 16, PB = 2, PS = 8, PC = 3, PP = 4, PD = 16 };

typedef struct layer_weights {
    float *w_dense, *w_ls, *w_pe, *b_ls, *gamma, *b_pe;
} layer_weights;

static void take_weights(arena *a, layer_weights *w) {
    w->w_dense = arena_take_floats(a, ARENA_WEIGHTS, DO * DI);
    w->w_ls = arena_take_floats(a, ARENA_WEIGHTS, LO * LI);
    w->w_pe = arena_take_floats(a, ARENA_WEIGHTS, PD * PP * PP * PC);
    w->b_ls = arena_take_floats(a, ARENA_NO_DECAY, LO);
    w->gamma = arena_take_floats(a, ARENA_NO_DECAY, LO);
    w->b_pe = arena_take_floats(a, ARENA_NO_DECAY, PD);
}

#define GRAD(p) arena_grad_of(&ctx.arena, (p))

static void test_gemm_layers(void **state) {
    arena plan;
    layer_weights lw;
    arena_plan(&plan);
    plan.half_weights = 1;
    take_weights(&plan, &lw);
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    take_weights(&ctx.arena, &lw);
    engine.type = ELEM_BF16;
    float ones[64];
    for (int i = 0; i < 64; i++) ones[i] = 1;
    void *d_ones = up(ones, 64, ELEM_BF16);

    /* dense on strided rows, bfloat16 output with a bfloat16 bias, dx accumulated in bfloat16 */
    int ld = DS * DI;
    size_t nx = (size_t)DR * ld;
    float *x = randf(nx, -1, 1, 1), *w = randf(DO * DI, -1, 1, 1), *b = randf(DO, -1, 1, 1);
    float *dy = randf(DR * DO, -1, 1, 1), *dx0 = randf(nx, -1, 1, 1);
    double *y_ref = dal(DR * DO), *dx_ref = dal(nx), *dw_ref = dal(DO * DI), *db_ref = dal(DO);
    for (size_t i = 0; i < nx; i++) dx_ref[i] = dx0[i];
    for (int r = 0; r < DR; r++)
        for (int o = 0; o < DO; o++) {
            double acc = b[o], g = dy[r * DO + o];
            for (int i = 0; i < DI; i++) {
                acc += (double)x[r * ld + i] * w[o * DI + i];
                dx_ref[r * ld + i] += g * w[o * DI + i];
                dw_ref[o * DI + i] += g * x[r * ld + i];
            }
            y_ref[r * DO + o] = acc, db_ref[o] += g;
        }
    upload(lw.w_dense, w, DO * DI, ELEM_F32);
    model_weights_to_half(&ctx);
    void *d_x = up(x, nx, ELEM_BF16), *d_b = up(b, DO, ELEM_BF16), *d_dy = up(dy, DR * DO, ELEM_BF16);
    void *d_y = poisoned(DR * DO, ELEM_BF16), *d_dx = up(dx0, nx, ELEM_BF16);
    float *d_db = poisoned(DO, ELEM_F32);
    printf("dense bf16: %d rows %d apart, %d -> %d, dx accumulated:\n", DR, ld, DI, DO);
    dense_forward(&engine, &ctx, d_y, d_x, ld, lw.w_dense, d_b, DR, DI, DO, ELEM_BF16);
    dense_backward(&engine, &ctx, d_dx, ld, 1.0f, GRAD(lw.w_dense), d_db, d_dy, d_x, ld, lw.w_dense, d_ones, DR, DI,
                   DO);
    model_grads_from_half(&ctx);
    expect("y (bf16, bf16 bias)", d_y, ELEM_BF16, y_ref, DR * DO, BF16_OUT);
    expect("dx (bf16, beta 1, other rows kept)", d_dx, ELEM_BF16, dx_ref, nx, BF16_OUT);
    expect("dw (bf16 copy)", GRAD(lw.w_dense), ELEM_F32, dw_ref, DO * DI, BF16_OUT);
    expect("db (float)", d_db, ELEM_F32, db_ref, DO, F32_SUMS);

    /* LayerScale residual: bfloat16 operands, float residual in and out */
    size_t ny = (size_t)LR * LO, na = (size_t)LR * LI, nw = (size_t)LO * LI;
    float *lx = randf(ny, -1, 1, 0), *la = randf(na, -1, 1, 1), *lwt = randf(nw, -0.5f, 0.5f, 1);
    float *lb = randf(LO, -1, 1, 0), *gamma = randf(LO, -1, 1, 0), *ldy = randf(ny, -1, 1, 1);
    double *ly_ref = dal(ny), *da_ref = dal(na), *ldw_ref = dal(nw), *ldb_ref = dal(LO), *dg_ref = dal(LO);
    for (int r = 0; r < LR; r++)
        for (int o = 0; o < LO; o++) {
            double branch = lb[o], folded = (double)(gamma[o] * lb[o]), g = ldy[r * LO + o];
            for (int i = 0; i < LI; i++) {
                float ws = bf16r(gamma[o] * lwt[o * LI + i]); /* the fold rounds gamma W, as the GPU */
                branch += (double)la[r * LI + i] * lwt[o * LI + i];
                folded += (double)la[r * LI + i] * ws;
                da_ref[r * LI + i] += g * ws;
                ldw_ref[o * LI + i] += g * gamma[o] * la[r * LI + i];
            }
            ly_ref[r * LO + o] = lx[r * LO + o] + folded;
            dg_ref[o] += g * branch, ldb_ref[o] += g * gamma[o];
        }
    upload(lw.w_ls, lwt, nw, ELEM_F32), upload(lw.b_ls, lb, LO, ELEM_F32), upload(lw.gamma, gamma, LO, ELEM_F32);
    model_weights_to_half(&ctx);
    float *d_lx = up(lx, ny, ELEM_F32), *d_ly = poisoned(ny, ELEM_F32), *d_bs = dev(LO, ELEM_F32);
    void *d_la = up(la, na, ELEM_BF16), *d_ws = dev(nw, ELEM_BF16), *d_ldy = up(ldy, ny, ELEM_BF16);
    void *d_da = poisoned(na, ELEM_BF16);
    float *d_ldb = poisoned(LO, ELEM_F32), *d_dg = poisoned(LO, ELEM_F32);
    float *scratch = dev(ls_linear_scratch_floats(LI, LO), ELEM_F32);
    printf("layerscale linear bf16: %d rows, %d -> %d:\n", LR, LI, LO);
    ls_linear_forward(&engine, &ctx, d_ly, d_ws, d_bs, d_lx, d_la, lw.w_ls, lw.b_ls, lw.gamma, LR, LI, LO);
    ls_linear_backward(&engine, &ctx, d_da, GRAD(lw.w_ls), d_ldb, d_dg, d_ldy, d_la, d_ws, lw.w_ls, lw.b_ls, lw.gamma,
                       d_ones, LR, LI, LO, scratch);
    model_grads_from_half(&ctx);
    expect("y (float: residual + branch)", d_ly, ELEM_F32, ly_ref, ny, F32_SUMS);
    expect("da (bf16)", d_da, ELEM_BF16, da_ref, na, BF16_OUT);
    expect("dw (bf16 copy)", GRAD(lw.w_ls), ELEM_F32, ldw_ref, nw, BF16_OUT);
    expect("db (float)", d_ldb, ELEM_F32, ldb_ref, LO, F32_SUMS);
    expect("dgamma (float)", d_dg, ELEM_F32, dg_ref, LO, F32_SUMS);

    /* patch embedding: a float image gathered into bfloat16 patches, float tokens out */
    int G = PS / PP, N = G * G, width = PP * PP * PC;
    size_t nimg = (size_t)PB * PS * PS * PC, npw = (size_t)PD * width, nt = (size_t)PB * N * PD, npos = (size_t)N * PD;
    float *image = randf(nimg, -1, 1, 0), *pw = randf(npw, -0.3f, 0.3f, 1), *pb = randf(PD, -1, 1, 0);
    float *pos = randf(npos, -1, 1, 0), *pdy = randf(nt, -1, 1, 1);
    double *x0_ref = dal(nt), *pdw_ref = dal(npw), *pdb_ref = dal(PD), *dpos_ref = dal(npos);
    for (int bb = 0; bb < PB; bb++)
        for (int n = 0; n < N; n++)
            for (int o = 0; o < PD; o++) {
                size_t xi = ((size_t)bb * N + n) * PD + o;
                double acc = pb[o] + pos[(size_t)n * PD + o], g = pdy[xi];
                for (int kh = 0; kh < PP; kh++)
                    for (int kw = 0; kw < PP; kw++)
                        for (int c = 0; c < PC; c++) {
                            size_t wi = (((size_t)o * PP + kh) * PP + kw) * PC + c;
                            size_t ii = (((size_t)bb * PS + (n / G) * PP + kh) * PS + (n % G) * PP + kw) * PC + c;
                            double pixel = bf16r(image[ii]); /* the gather rounds the image */
                            acc += pw[wi] * pixel;
                            pdw_ref[wi] += g * pixel;
                        }
                x0_ref[xi] = acc, pdb_ref[o] += g, dpos_ref[(size_t)n * PD + o] += g;
            }
    upload(lw.w_pe, pw, npw, ELEM_F32), upload(lw.b_pe, pb, PD, ELEM_F32);
    model_weights_to_half(&ctx);
    float *d_img = up(image, nimg, ELEM_F32), *d_pos = up(pos, npos, ELEM_F32), *d_x0 = poisoned(nt, ELEM_F32);
    float *d_pdy = up(pdy, nt, ELEM_F32), *d_pdb = poisoned(PD, ELEM_F32), *d_dpos = poisoned(npos, ELEM_F32);
    void *d_patches = dev((size_t)PB * N * width, ELEM_BF16), *d_pdy_half = up(pdy, nt, ELEM_BF16);
    printf("patch embedding bf16: %d x %dx%dx%d, patch %d -> %d:\n", PB, PS, PS, PC, PP, PD);
    patch_embed_forward(&engine, &ctx, d_x0, d_patches, d_img, lw.w_pe, lw.b_pe, d_pos, PB, PS, PC, PP, PD);
    patch_embed_backward(&engine, &ctx, GRAD(lw.w_pe), d_pdb, d_dpos, d_pdy, d_pdy_half, d_patches, lw.w_pe, d_ones,
                         PB, PS, PC, PP, PD);
    model_grads_from_half(&ctx);
    expect("x0 (float)", d_x0, ELEM_F32, x0_ref, nt, F32_SUMS);
    expect("dw (bf16 copy)", GRAD(lw.w_pe), ELEM_F32, pdw_ref, npw, BF16_OUT);
    expect("db (float)", d_pdb, ELEM_F32, pdb_ref, PD, F32_SUMS);
    expect("dpos (float)", d_dpos, ELEM_F32, dpos_ref, npos, F32_SUMS);

    engine.type = ELEM_F32;
    arena_free(&ctx.arena);
    release();
    float *host[] = {x, w, b, dy, dx0, lx, la, lwt, lb, gamma, ldy, image, pw, pb, pos, pdy};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
    double *refs[] = {y_ref, dx_ref, dw_ref, db_ref, ly_ref, da_ref, ldw_ref, ldb_ref, dg_ref, x0_ref, pdw_ref,
                      pdb_ref, dpos_ref};
    for (size_t i = 0; i < sizeof refs / sizeof *refs; i++) free(refs[i]);
}

/* ---- a whole cait_xxs24 step -------------------------------------------------------------------*/

#define STEPS 40
enum { MB = 4, MS = 32, MK = 10 };

/* A trainable tensor's place among the arena's trainable floats (the same in both precisions). */
typedef struct grad_tensor {
    char name[PARAM_NAME_MAX];
    size_t at, n;
} grad_tensor;

/* From the same initial weights: the first step's loss and gradients (every trainable float),
 * then the mean loss of the last 10 steps on the same batch. *tensors (when asked for) lists the
 * trainable tensors. */
static float *run_cait(precision_kind precision, const float *images, const int32_t *labels, double *first,
                       double *later, size_t *n, grad_tensor **tensors, int *count) {
    model_config config = {.name = "cait_xxs24", .batch = MB, .image_size = MS, .in_channels = 3, .classes = MK,
                           .seed = 11, .patch_size = 4, .precision = precision};
    session s;
    char err[512] = "";
    optimizer_config adamw = {.kind = OPTIMIZER_ADAMW, .weight_decay = 0.05f};
    if (session_plan(&s, &config, err, sizeof err) ||
        session_start(&s, 0, (size_t)64 << 20, precision != PRECISION_FP32, optimizer_slots(adamw.kind), err,
                      sizeof err))
        fail_msg("starting cait_xxs24 (%s): %s", precision_name(precision), err);
    lr_schedule constant = {.kind = LR_CONSTANT, .base_lr = 1e-3f};
    trainer_init(&s.trainer, s.model, &s.ctx, adamw, constant, 0.0f, 1);
    double loss, correct, sum = 0;
    float *grads = NULL;
    for (int i = 0; i < STEPS; i++) {
        trainer_step(&s.trainer, images, labels);
        trainer_take_sums(&s.trainer, &loss, &correct);
        if (i == 0) {
            *first = loss / MB;
            /* bf16: the step's optimizer read the bfloat16 gradients; this makes the float32 ones */
            if (precision == PRECISION_BF16) model_grads_from_half(&s.ctx);
            *n = arena_trainable_floats(&s.ctx.arena);
            grads = malloc(*n * sizeof *grads);
            test_to_host(grads, arena_grads(&s.ctx.arena), *n);
        }
        if (i >= STEPS - 10) sum += loss / MB;
    }
    *later = sum / 10;
    if (tensors) {
        const param_table *t = &s.model->params;
        *tensors = calloc((size_t)t->count, sizeof **tensors), *count = 0;
        for (int i = 0; i < t->count; i++) {
            const param_entry *e = &t->entries[i];
            if (e->kind != PARAM_WEIGHT && e->kind != PARAM_NO_DECAY) continue;
            grad_tensor *g = &(*tensors)[(*count)++];
            snprintf(g->name, sizeof g->name, "%s", e->name);
            g->at = (size_t)(e->data - (const float *)s.ctx.arena.params), g->n = (size_t)param_numel(e);
        }
    }
    session_end(&s);
    return grads;
}

static void test_whole_model(void **state) {
    size_t n_img = (size_t)MB * MS * MS * 3, n32 = 0, n16 = 0;
    float *images = randf(n_img, -1, 1, 0);
    int32_t labels[MB];
    for (int i = 0; i < MB; i++) labels[i] = i % MK;
    double f_first, f_later, b_first, b_later;
    grad_tensor *tensors = NULL;
    int count = 0;
    float *g32 = run_cait(PRECISION_FP32, images, labels, &f_first, &f_later, &n32, &tensors, &count);
    float *g16 = run_cait(PRECISION_BF16, images, labels, &b_first, &b_later, &n16, NULL, NULL);
    printf("cait_xxs24 %dx%d patch 4, batch %d: first-step loss fp32 %.5f bf16 %.5f; steps %d-%d fp32 %.5f bf16 "
           "%.5f\n", MS, MS, MB, f_first, b_first, STEPS - 10, STEPS - 1, f_later, b_later);
    assert_int_equal(n32, n16);
    /* Each tensor's first gradient: a wiring error (a wrong operand, copy or offset) is off by O(1);
     * bfloat16 rounding through the 26 blocks stays near 1e-2. */
    double worst = 0;
    const char *worst_name = "";
    for (int i = 0; i < count; i++) {
        const grad_tensor *g = &tensors[i];
        /* softmax(z + c) = softmax(z): biases that shift every logit of a row alike (talking heads'
         * proj_l.bias; class attention's k.bias, q_cls . b_k for every key) have zero gradient in
         * exact arithmetic, so both precisions hold rounding only */
        int class_attention = strstr(g->name, "blocks_token_only.") != NULL;
        if (strstr(g->name, "attn.proj_l.bias") || (class_attention && strstr(g->name, "attn.k.bias"))) continue;
        double err = test_rel_err_f(g16 + g->at, g32 + g->at, g->n);
        if (!(err < 0.2)) fail_msg("%s: bf16 gradient %.3g off the float32 one (relative)", g->name, err);
        if (err > worst) worst = err, worst_name = g->name;
    }
    printf("  first gradients of %d tensors, bf16 against fp32: worst relative difference %.2e (%s)\n", count, worst,
           worst_name);
    assert_true(isfinite(b_first) && isfinite(b_later));
    expect_lt(fabs(b_first - f_first), 2e-2 * f_first);
    expect_lt(b_later, 0.7 * b_first); /* the repeated batch is being learned */
    free(tensors), free(g32), free(g16), free(images);
}

int main(void) {
    test_require_gpu();
    if (context_init(&ctx, 0, (size_t)64 << 20, 0) != CONTEXT_OK) return 1;
    gemm_engine_init(&engine, &ctx);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm),      cmocka_unit_test(test_gelu),
        cmocka_unit_test(test_talking_heads),  cmocka_unit_test(test_attention_core),
        cmocka_unit_test(test_class_attention), cmocka_unit_test(test_gemm_layers),
        cmocka_unit_test(test_whole_model),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    gemm_engine_destroy(&engine);
    context_free(&ctx);
    return rc;
}
