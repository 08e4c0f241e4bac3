/* CaiT's GEMM layers and the whole model on the GPU (float32, TF32 off). Dense on strided rows
 * with an accumulated input gradient (the class-token query), the LayerScale residual linear
 * (gamma folded into the GEMM) and the patch embedding, each against a double-precision CPU
 * reference and central finite differences of L = sum(w * y) through the GPU forward. Then
 * cait_xxs24 at 32x32, patch 4, batch 2: a finite loss, every parameter a finite non-zero
 * gradient (proj_l.bias excepted: a constant shift of a softmax row cancels), finite differences
 * of the loss for parameters at both ends of the network, and two AdamW steps replayed from the
 * captured CUDA graph equal to the same steps run kernel by kernel. Every check prints what it
 * measured. */
#include <string.h>

#include "kernels/transformer.h"
#include "models/layers/cait_layers.h"
#include "models/session.h"
#include "tests/support/gpu_cait_check.h"
#include "tests/support/testutil.h"

/* ---- dense on strided rows ------------------------------------------------------------------------*/

static void test_dense_strided(void **state) {
    int rows = 5, stride = 3, in = 12, out = 8, ld = stride * in;
    size_t nx = (size_t)rows * ld;
    float *x = rnd(nx, -1, 1), *w = rnd((size_t)out * in, -1, 1), *b = rnd(out, -1, 1), *dy = rnd((size_t)rows * out, -1, 1);
    float *dx0 = rnd(nx, -1, 1), *ones = falloc(rows);
    for (int r = 0; r < rows; r++) ones[r] = 1;
    double *y_ref = dalloc((size_t)rows * out), *dx_ref = dalloc(nx), *dw_ref = dalloc((size_t)out * in), *db_ref = dalloc(out);
    for (size_t i = 0; i < nx; i++) dx_ref[i] = dx0[i];
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            double acc = b[o], g = dy[(size_t)r * out + o];
            for (int i = 0; i < in; i++) {
                acc += (double)x[(size_t)r * ld + i] * w[(size_t)o * in + i];
                dx_ref[(size_t)r * ld + i] += g * w[(size_t)o * in + i];
                dw_ref[(size_t)o * in + i] += g * x[(size_t)r * ld + i];
            }
            y_ref[(size_t)r * out + o] = acc, db_ref[o] += g;
        }
    float *d_x = test_to_device(x, nx), *d_w = test_to_device(w, (size_t)out * in), *d_b = test_to_device(b, out);
    float *d_dy = test_to_device(dy, (size_t)rows * out), *d_y = test_to_device(dy, (size_t)rows * out);
    float *d_dx = test_to_device(dx0, nx), *d_dw = test_to_device(w, (size_t)out * in), *d_db = test_to_device(b, out);
    float *d_ones = test_to_device(ones, rows);
    printf("dense %d rows %d floats apart, %d -> %d, dx accumulated:\n", rows, ld, in, out);
    test_poison(d_y, (size_t)rows * out), test_poison(d_dw, (size_t)out * in), test_poison(d_db, out);
    settle();
    dense_forward(&engine, &ctx, d_y, d_x, ld, d_w, d_b, rows, in, out, ELEM_F32);
    dense_backward(&engine, &ctx, d_dx, ld, 1.0f, d_dw, d_db, d_dy, d_x, ld, d_w, d_ones, rows, in, out);
    expect_close("y", d_y, y_ref, (size_t)rows * out, 1e-5);
    expect_close("dx (other rows untouched)", d_dx, dx_ref, nx, 1e-5);
    expect_close("dw", d_dw, dw_ref, (size_t)out * in, 1e-5);
    expect_close("db", d_db, db_ref, out, 1e-5);
    float *ptrs[] = {d_x, d_w, d_b, d_dy, d_y, d_dx, d_dw, d_db, d_ones};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) CHECK_CUDA(cudaFree(ptrs[i]));
    free(x), free(w), free(b), free(dy), free(dx0), free(ones), free(y_ref), free(dx_ref), free(dw_ref), free(db_ref);
}

/* ---- LayerScale residual linear -------------------------------------------------------------------*/

typedef struct ls_run {
    int rows, in, out;
    float *y, *ws, *bs, *x, *a, *w, *b, *gamma;
    const float *weights;
} ls_run;

static double ls_loss(void *arg) {
    ls_run *r = arg;
    ls_linear_forward(&engine, &ctx, r->y, r->ws, r->bs, r->x, r->a, r->w, r->b, r->gamma, r->rows, r->in, r->out);
    return weighted_sum(r->y, r->weights, (size_t)r->rows * r->out);
}

static void test_layerscale(void **state) {
    int rows = 37, in = 24, out = 16;
    size_t ny = (size_t)rows * out, na = (size_t)rows * in, nw = (size_t)out * in;
    float *x = rnd(ny, -1, 1), *a = rnd(na, -1, 1), *w = rnd(nw, -0.5f, 0.5f), *b = rnd(out, -1, 1);
    float *gamma = rnd(out, -1, 1), *dy = rnd(ny, -1, 1), *ones = falloc(rows);
    for (int i = 0; i < rows; i++) ones[i] = 1;
    double *y_ref = dalloc(ny), *da_ref = dalloc(na), *dw_ref = dalloc(nw), *db_ref = dalloc(out), *dg_ref = dalloc(out);
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < out; o++) {
            double branch = b[o], g = dy[(size_t)r * out + o], gb = g * gamma[o];
            for (int i = 0; i < in; i++) branch += (double)a[(size_t)r * in + i] * w[(size_t)o * in + i];
            y_ref[(size_t)r * out + o] = x[(size_t)r * out + o] + gamma[o] * branch;
            dg_ref[o] += g * branch, db_ref[o] += gb;
            for (int i = 0; i < in; i++) {
                dw_ref[(size_t)o * in + i] += gb * a[(size_t)r * in + i];
                da_ref[(size_t)r * in + i] += gb * w[(size_t)o * in + i];
            }
        }
    ls_run r = {rows, in, out, test_to_device(x, ny), test_to_device(w, nw), test_to_device(b, out), test_to_device(x, ny),
                test_to_device(a, na), test_to_device(w, nw), test_to_device(b, out), test_to_device(gamma, out), dy};
    float *d_dy = test_to_device(dy, ny), *d_da = test_to_device(a, na), *d_dw = test_to_device(w, nw);
    float *d_db = test_to_device(b, out), *d_dg = test_to_device(b, out), *d_ones = test_to_device(ones, rows), *scratch;
    CHECK_CUDA(cudaMalloc((void **)&scratch, ls_linear_scratch_floats(in, out) * sizeof(float)));
    printf("layerscale linear %d rows, %d -> %d:\n", rows, in, out);
    test_poison(r.y, ny), test_poison(d_da, na), test_poison(d_dw, nw), test_poison(d_db, out), test_poison(d_dg, out);
    settle();
    ls_loss(&r);
    ls_linear_backward(&engine, &ctx, d_da, d_dw, d_db, d_dg, d_dy, r.a, r.ws, r.w, r.b, r.gamma, d_ones, rows, in, out,
                       scratch);
    expect_close("y", r.y, y_ref, ny, 1e-5);
    expect_close("da", d_da, da_ref, na, 1e-5);
    expect_close("dw", d_dw, dw_ref, nw, 1e-5);
    expect_close("db", d_db, db_ref, out, 1e-5);
    expect_close("dgamma", d_dg, dg_ref, out, 1e-5);
    float *da = download(d_da, na), *dw = download(d_dw, nw), *db = download(d_db, out), *dg = download(d_dg, out);
    fd_check("dL/da", r.a, na, da, 6, ls_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/dw", r.w, nw, dw, 6, ls_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/db", r.b, out, db, 3, ls_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/dgamma", r.gamma, out, dg, 4, ls_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/dx (= dy)", r.x, ny, dy, 3, ls_loss, &r, 1e-2f, 5e-3);
    float *ptrs[] = {r.y, r.ws, r.bs, r.x, r.a, r.w, r.b, r.gamma, d_dy, d_da, d_dw, d_db, d_dg, d_ones, scratch};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) CHECK_CUDA(cudaFree(ptrs[i]));
    free(x), free(a), free(w), free(b), free(gamma), free(dy), free(ones), free(da), free(dw), free(db), free(dg);
    free(y_ref), free(da_ref), free(dw_ref), free(db_ref), free(dg_ref);
}

/* ---- patch embedding ---------------------------------------------------------------------------------*/

typedef struct pe_run {
    int B, S, Cin, P, C;
    float *x0, *patches, *image, *w, *b, *pos;
    const float *weights;
} pe_run;

static double pe_loss(void *arg) {
    pe_run *r = arg;
    patch_embed_forward(&engine, &ctx, r->x0, r->patches, r->image, r->w, r->b, r->pos, r->B, r->S, r->Cin, r->P, r->C);
    int n = (r->S / r->P) * (r->S / r->P);
    return weighted_sum(r->x0, r->weights, (size_t)r->B * n * r->C);
}

static void test_patch_embed(void **state) {
    int B = 2, S = 12, Cin = 3, P = 4, C = 16, G = S / P, N = G * G, width = P * P * Cin;
    size_t nimg = (size_t)B * S * S * Cin, nw = (size_t)C * width, nx = (size_t)B * N * C, np = (size_t)N * C;
    float *image = rnd(nimg, -1, 1), *w = rnd(nw, -0.3f, 0.3f), *b = rnd(C, -1, 1), *pos = rnd(np, -1, 1);
    float *dy = rnd(nx, -1, 1), *ones = falloc((size_t)B * N);
    for (int i = 0; i < B * N; i++) ones[i] = 1;
    double *x_ref = dalloc(nx), *dw_ref = dalloc(nw), *db_ref = dalloc(C), *dpos_ref = dalloc(np);
    for (int bb = 0; bb < B; bb++)
        for (int n = 0; n < N; n++)
            for (int o = 0; o < C; o++) {
                size_t xi = ((size_t)bb * N + n) * C + o;
                double acc = b[o] + pos[(size_t)n * C + o], g = dy[xi];
                for (int kh = 0; kh < P; kh++)
                    for (int kw = 0; kw < P; kw++)
                        for (int c = 0; c < Cin; c++) {
                            size_t wi = (((size_t)o * P + kh) * P + kw) * Cin + c; /* [out, kh, kw, in] */
                            size_t ii = (((size_t)bb * S + (n / G) * P + kh) * S + (n % G) * P + kw) * Cin + c;
                            acc += (double)w[wi] * image[ii];
                            dw_ref[wi] += g * image[ii];
                        }
                x_ref[xi] = acc, db_ref[o] += g, dpos_ref[(size_t)n * C + o] += g;
            }
    pe_run r = {B, S, Cin, P, C, test_to_device(dy, nx), NULL, test_to_device(image, nimg), test_to_device(w, nw),
                test_to_device(b, C), test_to_device(pos, np), dy};
    CHECK_CUDA(cudaMalloc((void **)&r.patches, (size_t)B * N * width * sizeof(float)));
    float *d_dy = test_to_device(dy, nx), *d_dw = test_to_device(w, nw), *d_db = test_to_device(b, C);
    float *d_dpos = test_to_device(pos, np), *d_ones = test_to_device(ones, (size_t)B * N);
    printf("patch embedding %d x %dx%dx%d, patch %d -> %d:\n", B, S, S, Cin, P, C);
    test_poison(r.x0, nx), test_poison(d_dw, nw), test_poison(d_db, C), test_poison(d_dpos, np);
    settle();
    pe_loss(&r);
    patch_embed_backward(&engine, &ctx, d_dw, d_db, d_dpos, d_dy, d_dy, r.patches, r.w, d_ones, B, S, Cin, P, C);
    expect_close("x0", r.x0, x_ref, nx, 1e-5);
    expect_close("dw", d_dw, dw_ref, nw, 1e-5);
    expect_close("db", d_db, db_ref, C, 1e-5);
    expect_close("dpos", d_dpos, dpos_ref, np, 1e-5);
    float *dw = download(d_dw, nw), *db = download(d_db, C), *dpos = download(d_dpos, np);
    fd_check("dL/dw", r.w, nw, dw, 6, pe_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/db", r.b, C, db, 3, pe_loss, &r, 1e-2f, 5e-3);
    fd_check("dL/dpos", r.pos, np, dpos, 3, pe_loss, &r, 1e-2f, 5e-3);
    float *ptrs[] = {r.x0, r.patches, r.image, r.w, r.b, r.pos, d_dy, d_dw, d_db, d_dpos, d_ones};
    for (size_t i = 0; i < sizeof ptrs / sizeof *ptrs; i++) CHECK_CUDA(cudaFree(ptrs[i]));
    free(image), free(w), free(b), free(pos), free(dy), free(ones), free(dw), free(db), free(dpos);
    free(x_ref), free(dw_ref), free(db_ref), free(dpos_ref);
}

/* ---- the whole model -------------------------------------------------------------------------------*/

typedef struct model_run {
    model *m;
    job_context *ctx;
    const int32_t *labels;
    int write_grad;
} model_run;

/* Mean cross-entropy of the logits, in double on the host; optionally its gradient into dlogits. */
static double model_loss(void *arg) {
    model_run *r = arg;
    model *m = r->m;
    int B = m->config.batch, K = m->config.classes;
    m->forward(m, 1, r->ctx);
    float *z = download(m->logits, (size_t)B * K), *dz = falloc((size_t)B * K);
    double loss = 0;
    for (int b = 0; b < B; b++) {
        const float *row = z + (size_t)b * K;
        double mx = -INFINITY, s = 0;
        for (int k = 0; k < K; k++) mx = fmax(mx, row[k]);
        for (int k = 0; k < K; k++) s += exp(row[k] - mx);
        loss += log(s) + mx - row[r->labels[b]];
        for (int k = 0; k < K; k++) dz[(size_t)b * K + k] = (float)((exp(row[k] - mx) / s - (k == r->labels[b])) / B);
    }
    if (r->write_grad) CHECK_CUDA(cudaMemcpy(m->dlogits, dz, (size_t)B * K * sizeof(float), cudaMemcpyHostToDevice));
    settle();
    free(z), free(dz);
    return loss / B;
}

static const param_entry *param_named(const model *m, const char *name) {
    for (int i = 0; i < m->params.count; i++)
        if (!strcmp(m->params.entries[i].name, name)) return &m->params.entries[i];
    fail_msg("no parameter %s", name);
    return NULL;
}

static void start(session *s, const model_config *config) {
    char err[256] = "";
    if (session_plan(s, config, err, sizeof err) || session_start(s, 0, (size_t)64 << 20, 0, 2, err, sizeof err))
        fail_msg("starting %s: %s", config->name, err);
}

static void test_whole_model(void **state) {
    model_config config = {.name = "cait_xxs24", .batch = 2, .image_size = 32, .in_channels = 3, .classes = 10,
                           .seed = 5, .patch_size = 4};
    size_t image_floats = (size_t)2 * 32 * 32 * 3;
    float *images = rnd(image_floats, -2, 2);
    int32_t labels[2] = {3, 7};
    session s;
    start(&s, &config);
    model *m = s.model;
    CHECK_CUDA(cudaMemcpy(m->input, images, image_floats * sizeof(float), cudaMemcpyHostToDevice));
    settle();
    model_run run = {m, &s.ctx, labels, 1};
    double loss = model_loss(&run);
    printf("cait_xxs24 32x32 patch 4, batch 2: loss %.6f (ln 10 = %.6f)\n", loss, log(10.0));
    assert_true(isfinite(loss)); expect_gt(loss, 0.5); expect_lt(loss, 10);
    m->backward(m, &s.ctx);
    int zero = 0;
    double smallest = INFINITY;
    const char *smallest_name = "";
    for (int i = 0; i < m->params.count; i++) {
        const param_entry *e = &m->params.entries[i];
        size_t n = (size_t)param_numel(e);
        float *g = download(arena_grad_of(&s.ctx.arena, e->data), n);
        double mx = 0;
        for (size_t j = 0; j < n; j++) {
            if (!isfinite(g[j])) fail_msg("%s: gradient %g at %zu", e->name, g[j], j);
            mx = fmax(mx, fabs(g[j]));
        }
        free(g);
        if (strstr(e->name, "attn.proj_l.bias")) continue; /* softmax(z + c) = softmax(z) */
        if (mx == 0) printf("  %s: all-zero gradient\n", e->name), zero++;
        if (mx < smallest) smallest = mx, smallest_name = e->name;
    }
    printf("  %d tensors; smallest largest-|gradient|: %.3g (%s)\n", m->params.count, smallest, smallest_name);
    assert_int_equal(zero, 0);

    /* finite differences of the loss for parameters at both ends of the network */
    const char *names[] = {"head.weight", "head.bias", "norm.weight", "blocks_token_only.1.gamma_2",
                           "blocks_token_only.1.gamma_1", "blocks.23.gamma_2", "pos_embed", "patch_embed.proj.bias",
                           "cls_token"};
    run.write_grad = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const param_entry *e = param_named(m, names[i]);
        size_t n = (size_t)param_numel(e);
        float *g = download(arena_grad_of(&s.ctx.arena, e->data), n);
        fd_check(names[i], e->data, n, g, 3, model_loss, &run, 1e-2f, 2e-2);
        free(g);
    }
    session_end(&s);

    /* two AdamW steps from the captured graph and kernel by kernel, from the same initial weights */
    float *after[2] = {NULL, NULL};
    size_t n = 0;
    for (int graph = 0; graph < 2; graph++) {
        start(&s, &config);
        optimizer_config adamw = {.kind = OPTIMIZER_ADAMW, .weight_decay = 0.05f};
        lr_schedule constant = {.kind = LR_CONSTANT, .base_lr = 1e-3f};
        trainer_init(&s.trainer, s.model, &s.ctx, adamw, constant, 0.0f, graph);
        for (int step = 0; step < 2; step++) trainer_step(&s.trainer, images, labels);
        n = arena_trainable_floats(&s.ctx.arena);
        after[graph] = download((const float *)s.ctx.arena.params, n);
        double loss_sum, correct;
        trainer_take_sums(&s.trainer, &loss_sum, &correct);
        printf("  %s: loss summed over 2 steps %.6f\n", graph ? "graph" : "eager", loss_sum);
        assert_true(isfinite(loss_sum));
        session_end(&s);
    }
    double e = test_rel_err_f(after[1], after[0], n);
    printf("  graph vs eager after 2 AdamW steps: relative difference of the parameters %.2e\n", e);
    expect_lt(e, 1e-6);
    free(after[0]), free(after[1]), free(images);
}

int main(void) {
    test_require_gpu();
    if (context_init(&ctx, 0, (size_t)64 << 20, 0) != CONTEXT_OK) return 1;
    gemm_engine_init(&engine, &ctx);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dense_strided), cmocka_unit_test(test_layerscale),
                                       cmocka_unit_test(test_patch_embed), cmocka_unit_test(test_whole_model)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    gemm_engine_destroy(&engine);
    context_free(&ctx);
    return rc;
}
