/* EfficientNetV2-S's new layers on the GPU, each against a double-precision CPU reference and by
 * finite differences of L = sum(w * y) through the GPU forward (float32 math, TF32 off):
 * depthwise 3x3 (our kernels directly, incl. C % 4 != 0 and misaligned pointers, then the layer
 * through both paths, ours and cuDNN's grouped convolution, at stride 1 and 2), SiLU, the
 * squeeze-excitation block as a whole, drop path with fixed scales and its device masks (also in
 * a replayed graph), BN + SiLU with the skip joined after the activation; then the whole model at
 * 64x64, batch 8, 1000 classes, from its own initialisation: the loss near ln(1000) as that
 * initialisation implies, the backward's gradients against directional finite differences of the
 * loss from the stem to the classifier, a captured step with the forward's loss and the backward's
 * gradient whose update lowers the loss, drop path in training only, and three captured steps
 * against three eager ones. What the parity test against timm covers is not repeated (see "the
 * whole model" below). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/activation.h"
#include "kernels/depthwise.h"
#include "kernels/kernels.h"
#include "kernels/check.h"
#include "models/efficientnet.h"
#include "base/rng.h"
#include "models/session.h"
#include "tests/support/efficientnet_reference.h"
#include "tests/support/testutil.h"

static job_context ctx;
static uint64_t rng = 4242;

static float *falloc(size_t n) { float *p = calloc(n ? n : 1, sizeof(float)); assert_non_null(p); return p; }
static double *dalloc(size_t n) { double *p = calloc(n ? n : 1, sizeof(double)); assert_non_null(p); return p; }
static float *dev_alloc(size_t n) {
    float *d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&d, (n + 8) * sizeof(float)));
    test_poison(d, n + 8);
    return d;
}
static void upload(float *dev, const float *host, size_t n) {
    CHECK_CUDA(cudaMemcpy(dev, host, n * sizeof(float), cudaMemcpyHostToDevice));
}
static float *random_host(size_t n, float lo, float hi) {
    float *h = falloc(n);
    test_fill_uniform(h, n, &rng, lo, hi);
    return h;
}
static void expect_close(const char *what, const float *got, const double *want, size_t n, double tol) {
    double e = test_rel_err(got, want, n);
    printf("  %-34s rel err %.2e (< %.0e)\n", what, e, tol);
    if (!(e < tol)) fail_msg("%s: relative error %.3g, expected < %.1g", what, e, tol);
}
static void expect_device_close(const char *what, const float *dev, const double *want, size_t n, double tol) {
    float *h = falloc(n);
    test_to_host(h, dev, n);
    expect_close(what, h, want, n, tol);
    free(h);
}

/* ---- finite differences ----------------------------------------------------------------------
 * loss(arg) runs a GPU forward and returns sum(w * y) in double. Each checked coordinate i of the
 * device tensor moves by +-step; the central difference must match grad[i] within
 * 1e-2 (|grad| + 0.1 rms(grad)) + 1e-4. */
typedef double (*loss_fn)(void *arg);

static void fd_check(const char *what, float *dev, const float *grad, size_t n, int count, loss_fn loss, void *arg) {
    double rms = 0.0;
    for (size_t i = 0; i < n; i++) rms += (double)grad[i] * grad[i];
    rms = sqrt(rms / (double)n);
    double worst = 0.0;
    for (int t = 0; t < count; t++) {
        size_t i = (size_t)(test_rand_u64(&rng) % n);
        float v;
        CHECK_CUDA(cudaMemcpy(&v, dev + i, sizeof v, cudaMemcpyDeviceToHost));
        float step = 1e-2f * fmaxf(fabsf(v), 0.5f), plus = v + step, minus = v - step;
        upload(dev + i, &plus, 1);
        double lp = loss(arg);
        upload(dev + i, &minus, 1);
        double lm = loss(arg);
        upload(dev + i, &v, 1);
        double fd = (lp - lm) / ((double)plus - (double)minus), an = grad[i];
        double err = fabs(fd - an), bound = 1e-2 * (fabs(an) + 0.1 * rms) + 1e-4;
        if (err / bound > worst) worst = err / bound;
        if (!(err <= bound)) fail_msg("%s: finite difference at [%zu] %.6g, backward %.6g", what, i, fd, an);
    }
    printf("  %-34s finite differences: worst error %.2f of the bound\n", what, worst);
}

static double weighted_sum(const float *dev_y, const float *w, size_t n) {
    float *y = falloc(n);
    test_to_host(y, dev_y, n);
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)y[i] * w[i];
    free(y);
    return s;
}

/* ---- depthwise ---------------------------------------------------------------------------------*/

/* The kernels directly; shift offsets x, y, dx, dy by one float (C % 4 == 0 but misaligned). */
static void check_dw_kernels(dw_case k, int shift, void *scratch) {
    int ho = (k.h - 1) / k.stride + 1, wo = (k.w - 1) / k.stride + 1;
    size_t nx = (size_t)k.n * k.h * k.w * k.c, ny = (size_t)k.n * ho * wo * k.c, nw = (size_t)k.c * 9;
    float *x = random_host(nx, -1, 1), *w = random_host(nw, -1, 1), *dy = random_host(ny, -1, 1);
    double *y_ref = dalloc(ny), *dx_ref = dalloc(nx), *dw_ref = dalloc(nw);
    dw_reference(&k, x, w, dy, y_ref, dx_ref, dw_ref);
    float *d_x = dev_alloc(nx + 1) + shift, *d_y = dev_alloc(ny + 1) + shift, *d_dy = dev_alloc(ny + 1) + shift;
    float *d_dx = dev_alloc(nx + 1) + shift, *d_w = dev_alloc(nw), *d_dw = dev_alloc(nw);
    upload(d_x, x, nx), upload(d_w, w, nw), upload(d_dy, dy, ny);
    printf("depthwise kernels n%d %dx%d c%d stride %d%s:\n", k.n, k.h, k.w, k.c, k.stride, shift ? " misaligned" : "");
    for (int call = 0; call < 2; call++) { /* the second call starts from the scratch the first left */
        depthwise_forward(d_y, d_x, d_w, k.n, k.h, k.w, k.c, k.stride, ho, wo, ELEM_F32, 0);
        depthwise_backward_data(d_dx, d_dy, d_w, k.n, k.h, k.w, k.c, k.stride, ho, wo, ELEM_F32, 0);
        depthwise_backward_filter(d_dw, d_dy, d_x, k.n, k.h, k.w, k.c, k.stride, ho, wo, ELEM_F32, scratch, 0);
        expect_device_close("y", d_y, y_ref, ny, 1e-5);
        expect_device_close("dx", d_dx, dx_ref, nx, 1e-5);
        expect_device_close("dw", d_dw, dw_ref, nw, 1e-5);
        test_poison(d_y, ny), test_poison(d_dx, nx), test_poison(d_dw, nw);
    }
    CHECK_CUDA(cudaFree(d_x - shift)); CHECK_CUDA(cudaFree(d_y - shift)); CHECK_CUDA(cudaFree(d_dy - shift));
    CHECK_CUDA(cudaFree(d_dx - shift)); CHECK_CUDA(cudaFree(d_w)); CHECK_CUDA(cudaFree(d_dw));
    free(x), free(w), free(dy), free(y_ref), free(dx_ref), free(dw_ref);
}

static void test_depthwise_kernels(void **state) {
    size_t bytes = depthwise_scratch_bytes(1536);
    void *scratch = NULL;
    CHECK_CUDA(cudaMalloc(&scratch, bytes));
    CHECK_CUDA(cudaMemset(scratch, 0, bytes));
    dw_case cases[] = {{2, 7, 7, 8, 1}, {2, 8, 8, 12, 2}, {3, 5, 6, 7, 1}, {2, 9, 9, 5, 2}, {1, 1, 1, 4, 2},
                       {16, 4, 4, 256, 1}, {8, 8, 8, 96, 2}, {32, 2, 2, 1536, 1}, {4, 14, 14, 64, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_dw_kernels(cases[i], 0, scratch);
    check_dw_kernels(cases[0], 1, scratch);
    check_dw_kernels(cases[1], 1, scratch);
    /* every call leaves the arrival counters at zero */
    unsigned counters[48];
    CHECK_CUDA(cudaMemcpy(counters, scratch, sizeof counters, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 48; i++) assert_int_equal(counters[i], 0);
    CHECK_CUDA(cudaFree(scratch));
}

typedef struct dw_fd { depthwise_layer *layer; float *y, *x; const float *w; size_t ny; } dw_fd;
static double dw_loss(void *arg) {
    dw_fd *f = arg;
    depthwise_layer_forward(f->layer, f->y, f->x, &ctx);
    return weighted_sum(f->y, f->w, f->ny);
}

/* The layer, set up (both paths measured), then run through each path in turn. */
static void check_dw_layer(dw_case k) {
    arena plan;
    depthwise_layer layer;
    arena_plan(&plan);
    depthwise_layer_init(&layer, &plan, k.n, k.c, k.h, k.stride);
    arena_take(&plan, ARENA_SCRATCH, depthwise_layer_scratch_bytes(&layer));
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    depthwise_layer_init(&layer, &ctx.arena, k.n, k.c, k.h, k.stride);
    depthwise_layer_attach_scratch(&layer, arena_take(&ctx.arena, ARENA_SCRATCH, depthwise_layer_scratch_bytes(&layer)));
    int ho = layer.h_out, wo = layer.w_out;
    size_t nx = (size_t)k.n * k.h * k.w * k.c, ny = (size_t)k.n * ho * wo * k.c, nw = (size_t)k.c * 9;
    float *x = random_host(nx, -1, 1), *w = random_host(nw, -1, 1), *dy = random_host(ny, -1, 1);
    float *d_x = dev_alloc(nx), *d_y = dev_alloc(ny), *d_dy = dev_alloc(ny), *d_dx = dev_alloc(nx);
    upload(d_x, x, nx), upload(d_dy, dy, ny), upload(layer.weight, w, nw);
    depthwise_layer_setup(&layer, d_y, d_x, d_dx, NULL, &ctx);
    const depthwise_choice *ch = &layer.choice;
    printf("depthwise layer n%d %dx%d c%d stride %d: chose forward %s (ours %.4f ms, cudnn %.4f ms), "
           "backward-data %s (%.4f, %.4f), backward-filter %s (%.4f, %.4f)\n", k.n, k.h, k.w, k.c, k.stride,
           depthwise_path_name(ch->path[0]), ch->ours_ms[0], ch->cudnn_ms[0], depthwise_path_name(ch->path[1]),
           ch->ours_ms[1], ch->cudnn_ms[1], depthwise_path_name(ch->path[2]), ch->ours_ms[2], ch->cudnn_ms[2]);
    upload(d_x, x, nx), upload(d_dy, dy, ny), upload(layer.weight, w, nw); /* the timing scribbled */
    double *y_ref = dalloc(ny), *dx_ref = dalloc(nx), *dw_ref = dalloc(nw);
    dw_reference(&k, x, w, dy, y_ref, dx_ref, dw_ref);
    depthwise_choice chosen = layer.choice;
    for (int p = 0; p < 2; p++) {
        depthwise_path path = p ? DEPTHWISE_CUDNN : DEPTHWISE_OURS;
        int usable = 1;
        for (int d = 0; d < 3; d++) {
            layer.choice.path[d] = path;
            if (path == DEPTHWISE_CUDNN && !chosen.cudnn_ok[d]) usable = 0;
        }
        if (!usable) {
            printf("  cuDNN has no algorithm for one direction of this shape: its path is not checked\n");
            continue;
        }
        printf("  path %s:\n", depthwise_path_name(path));
        test_poison(d_y, ny), test_poison(d_dx, nx), test_poison(layer.weight_grad, nw);
        depthwise_layer_forward(&layer, d_y, d_x, &ctx);
        depthwise_layer_backward(&layer, d_dx, d_dy, d_x, &ctx);
        expect_device_close("y", d_y, y_ref, ny, 1e-5);
        expect_device_close("dx", d_dx, dx_ref, nx, 1e-5);
        expect_device_close("dw", layer.weight_grad, dw_ref, nw, 1e-5);
        float *dx = falloc(nx), *dwg = falloc(nw);
        test_to_host(dx, d_dx, nx), test_to_host(dwg, layer.weight_grad, nw);
        dw_fd f = {&layer, d_y, d_x, dy, ny};
        fd_check("d loss / dx", d_x, dx, nx, 8, dw_loss, &f);
        fd_check("d loss / dw", layer.weight, dwg, nw, 8, dw_loss, &f);
        free(dx), free(dwg);
    }
    layer.choice = chosen;
    depthwise_layer_destroy(&layer);
    arena_free(&ctx.arena);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_y)); CHECK_CUDA(cudaFree(d_dy)); CHECK_CUDA(cudaFree(d_dx));
    free(x), free(w), free(dy), free(y_ref), free(dx_ref), free(dw_ref);
}

static void test_depthwise_layer_both_paths(void **state) {
    check_dw_layer((dw_case){4, 6, 6, 32, 1});
    check_dw_layer((dw_case){4, 7, 7, 24, 2});
    check_dw_layer((dw_case){8, 4, 4, 960, 1});  /* EfficientNetV2-S at 64 px: stage 4 */
    check_dw_layer((dw_case){8, 4, 4, 960, 2});  /* stage 5's first block */
}

/* ---- SiLU --------------------------------------------------------------------------------------*/

typedef struct silu_fd { float *y, *x; const float *w; size_t n; } silu_fd;
static double silu_loss(void *arg) {
    silu_fd *f = arg;
    silu_forward(f->y, f->x, f->n, ELEM_F32, 0);
    return weighted_sum(f->y, f->w, f->n);
}

static void test_silu(void **state) {
    size_t sizes[] = {1000, 1001, 4096};
    for (int c = 0; c < 4; c++) {
        size_t n = sizes[c < 3 ? c : 0];
        int shift = c == 3; /* n % 4 == 0 but misaligned */
        float *x = random_host(n, -6, 6), *dy = random_host(n, -1, 1);
        double *y_ref = dalloc(n), *dx_ref = dalloc(n);
        for (size_t i = 0; i < n; i++) y_ref[i] = silu(x[i]), dx_ref[i] = dy[i] * silu_grad(x[i]);
        float *d_x = dev_alloc(n + 1) + shift, *d_y = dev_alloc(n + 1) + shift, *d_dy = dev_alloc(n + 1) + shift;
        float *d_dx = dev_alloc(n + 1) + shift;
        upload(d_x, x, n), upload(d_dy, dy, n);
        printf("silu n %zu%s:\n", n, shift ? " misaligned" : "");
        silu_forward(d_y, d_x, n, ELEM_F32, 0);
        silu_backward(d_dx, d_dy, d_x, n, ELEM_F32, 0);
        expect_device_close("y", d_y, y_ref, n, 1e-5);
        expect_device_close("dx", d_dx, dx_ref, n, 1e-5);
        silu_backward(d_dy, d_dy, d_x, n, ELEM_F32, 0); /* in place */
        expect_device_close("dx in place", d_dy, dx_ref, n, 1e-5);
        float *dx = falloc(n);
        test_to_host(dx, d_dx, n);
        silu_fd f = {d_y, d_x, dy, n};
        fd_check("d loss / dx", d_x, dx, n, 10, silu_loss, &f);
        CHECK_CUDA(cudaFree(d_x - shift)); CHECK_CUDA(cudaFree(d_y - shift)); CHECK_CUDA(cudaFree(d_dy - shift));
        CHECK_CUDA(cudaFree(d_dx - shift));
        free(x), free(dy), free(y_ref), free(dx_ref), free(dx);
    }
}

/* ---- squeeze-excitation --------------------------------------------------------------------------*/

typedef struct se_fd { squeeze_excite *se; float *y, *x; const float *w; size_t n; } se_fd;
static double se_loss(void *arg) {
    se_fd *f = arg;
    squeeze_excite_forward(f->se, f->y, f->x, &ctx);
    return weighted_sum(f->y, f->w, f->n);
}

static void check_se(int N, int HW, int C, int R) {
    arena plan;
    squeeze_excite se;
    arena_plan(&plan);
    squeeze_excite_init(&se, &plan, N, HW, C, R, ELEM_F32, NULL);
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    squeeze_excite_init(&se, &ctx.arena, N, HW, C, R, ELEM_F32, NULL);
    squeeze_excite_setup(&se, &ctx);
    size_t n = (size_t)N * HW * C;
    float *x = random_host(n, -2, 2), *dy = random_host(n, -1, 1);
    float *w1 = random_host((size_t)R * C, -0.5f, 0.5f), *b1 = random_host(R, -0.5f, 0.5f);
    float *w2 = random_host((size_t)C * R, -1, 1), *b2 = random_host(C, -0.5f, 0.5f);
    upload(se.reduce.weight, w1, (size_t)R * C), upload(se.reduce.bias, b1, R);
    upload(se.expand.weight, w2, (size_t)C * R), upload(se.expand.bias, b2, C);
    float *d_x = dev_alloc(n), *d_y = dev_alloc(n), *d_dy = dev_alloc(n), *d_dx = dev_alloc(n);
    upload(d_x, x, n), upload(d_dy, dy, n);
    squeeze_excite_forward(&se, d_y, d_x, &ctx);
    squeeze_excite_backward(&se, d_dx, d_dy, d_x, &ctx);

    /* reference, in double */
    double *pool = dalloc((size_t)N * C), *r = dalloc((size_t)N * R), *ra = dalloc((size_t)N * R);
    double *s = dalloc((size_t)N * C), *y = dalloc(n), *dx = dalloc(n), *de = dalloc((size_t)N * C);
    double *dr = dalloc((size_t)N * R), *dw1 = dalloc((size_t)R * C), *db1 = dalloc(R), *dw2 = dalloc((size_t)C * R);
    double *db2 = dalloc(C);
    for (int b = 0; b < N; b++) {
        for (int c = 0; c < C; c++) {
            for (int p = 0; p < HW; p++) pool[b * C + c] += x[((size_t)b * HW + p) * C + c];
            pool[b * C + c] /= HW;
        }
        for (int j = 0; j < R; j++) {
            r[b * R + j] = b1[j];
            for (int c = 0; c < C; c++) r[b * R + j] += (double)w1[j * C + c] * pool[b * C + c];
            ra[b * R + j] = silu(r[b * R + j]);
        }
        for (int c = 0; c < C; c++) {
            double e = b2[c];
            for (int j = 0; j < R; j++) e += (double)w2[c * R + j] * ra[b * R + j];
            s[b * C + c] = sigmoid(e);
            double sum = 0.0;
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)b * HW + p) * C + c;
                y[i] = x[i] * s[b * C + c];
                sum += (double)dy[i] * x[i];
            }
            de[b * C + c] = sum * s[b * C + c] * (1.0 - s[b * C + c]);
            db2[c] += de[b * C + c];
            for (int j = 0; j < R; j++) dw2[c * R + j] += de[b * C + c] * ra[b * R + j];
        }
        for (int j = 0; j < R; j++) {
            double g = 0.0;
            for (int c = 0; c < C; c++) g += (double)w2[c * R + j] * de[b * C + c];
            dr[b * R + j] = g * silu_grad(r[b * R + j]);
            db1[j] += dr[b * R + j];
            for (int c = 0; c < C; c++) dw1[j * C + c] += dr[b * R + j] * pool[b * C + c];
        }
        for (int c = 0; c < C; c++) {
            double dpool = 0.0;
            for (int j = 0; j < R; j++) dpool += (double)w1[j * C + c] * dr[b * R + j];
            for (int p = 0; p < HW; p++) {
                size_t i = ((size_t)b * HW + p) * C + c;
                dx[i] = dy[i] * s[b * C + c] + dpool / HW;
            }
        }
    }
    printf("squeeze-excitation N %d HW %d C %d reduced %d:\n", N, HW, C, R);
    expect_device_close("y", d_y, y, n, 1e-5);
    expect_device_close("dx", d_dx, dx, n, 1e-4);
    expect_device_close("d conv_reduce.weight", se.reduce.weight_grad, dw1, (size_t)R * C, 1e-4);
    expect_device_close("d conv_reduce.bias", se.reduce.bias_grad, db1, R, 1e-4);
    expect_device_close("d conv_expand.weight", se.expand.weight_grad, dw2, (size_t)C * R, 1e-4);
    expect_device_close("d conv_expand.bias", se.expand.bias_grad, db2, C, 1e-4);

    float *gx = falloc(n), *gw1 = falloc((size_t)R * C), *gb1 = falloc(R), *gw2 = falloc((size_t)C * R), *gb2 = falloc(C);
    test_to_host(gx, d_dx, n), test_to_host(gw1, se.reduce.weight_grad, (size_t)R * C);
    test_to_host(gb1, se.reduce.bias_grad, R), test_to_host(gw2, se.expand.weight_grad, (size_t)C * R);
    test_to_host(gb2, se.expand.bias_grad, C);
    se_fd f = {&se, d_y, d_x, dy, n};
    fd_check("d loss / dx", d_x, gx, n, 8, se_loss, &f);
    fd_check("d loss / d conv_reduce.weight", se.reduce.weight, gw1, (size_t)R * C, 6, se_loss, &f);
    fd_check("d loss / d conv_reduce.bias", se.reduce.bias, gb1, R, 4, se_loss, &f);
    fd_check("d loss / d conv_expand.weight", se.expand.weight, gw2, (size_t)C * R, 6, se_loss, &f);
    fd_check("d loss / d conv_expand.bias", se.expand.bias, gb2, C, 4, se_loss, &f);

    squeeze_excite_destroy(&se);
    arena_free(&ctx.arena);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_y)); CHECK_CUDA(cudaFree(d_dy)); CHECK_CUDA(cudaFree(d_dx));
    free(x), free(dy), free(w1), free(b1), free(w2), free(b2), free(pool), free(r), free(ra), free(s), free(y);
    free(dx), free(de), free(dr), free(dw1), free(db1), free(dw2), free(db2);
    free(gx), free(gw1), free(gb1), free(gw2), free(gb2);
}

static void test_squeeze_excite(void **state) {
    check_se(3, 5, 12, 3);
    check_se(2, 3, 10, 3);    /* C % 4 != 0: the scalar paths */
    check_se(4, 16, 256, 16); /* EfficientNetV2-S at 64 px: stage 3's first block */
}

/* ---- drop path -------------------------------------------------------------------------------------*/

typedef struct drop_fd { float *y, *shortcut, *branch, *scale; const float *w; int N, HW, C; } drop_fd;
static double drop_loss(void *arg) {
    drop_fd *f = arg;
    drop_path_add_forward(f->y, f->shortcut, f->branch, f->scale, f->N, f->HW, f->C, ELEM_F32, 0);
    return weighted_sum(f->y, f->w, (size_t)f->N * f->HW * f->C);
}

static void test_drop_path_fixed_mask(void **state) {
    int shapes[][3] = {{3, 5, 8}, {3, 4, 7}};
    float scales[3] = {1.25f, 0.0f, 2.0f};
    for (int k = 0; k < 2; k++) {
        int N = shapes[k][0], HW = shapes[k][1], C = shapes[k][2];
        size_t n = (size_t)N * HW * C;
        float *s = random_host(n, -1, 1), *b = random_host(n, -1, 1), *dy = random_host(n, -1, 1);
        double *y_ref = dalloc(n), *db_ref = dalloc(n);
        for (size_t i = 0; i < n; i++) {
            float scale = scales[i / ((size_t)HW * C)];
            y_ref[i] = s[i] + (double)b[i] * scale;
            db_ref[i] = (double)dy[i] * scale;
        }
        float *d_s = dev_alloc(n), *d_b = dev_alloc(n), *d_y = dev_alloc(n), *d_dy = dev_alloc(n), *d_db = dev_alloc(n);
        float *d_scale = dev_alloc(N);
        upload(d_s, s, n), upload(d_b, b, n), upload(d_dy, dy, n), upload(d_scale, scales, N);
        printf("drop path N %d HW %d C %d, scales {1.25, 0, 2}:\n", N, HW, C);
        drop_path_add_forward(d_y, d_s, d_b, d_scale, N, HW, C, ELEM_F32, 0);
        drop_path_backward(d_db, d_dy, d_scale, N, HW, C, ELEM_F32, 0);
        expect_device_close("y", d_y, y_ref, n, 1e-6);
        expect_device_close("dbranch", d_db, db_ref, n, 1e-7);
        float *db = falloc(n);
        test_to_host(db, d_db, n);
        drop_fd f = {d_y, d_s, d_b, d_scale, dy, N, HW, C};
        fd_check("d loss / dbranch", d_b, db, n, 8, drop_loss, &f);
        fd_check("d loss / dshortcut (= dy)", d_s, dy, n, 8, drop_loss, &f);
        CHECK_CUDA(cudaFree(d_s)); CHECK_CUDA(cudaFree(d_b)); CHECK_CUDA(cudaFree(d_y)); CHECK_CUDA(cudaFree(d_dy));
        CHECK_CUDA(cudaFree(d_db)); CHECK_CUDA(cudaFree(d_scale));
        free(s), free(b), free(dy), free(y_ref), free(db_ref), free(db);
    }
}

/* Masks: values in {0, 1/keep}, kept fraction near keep, new masks every step (also when replayed
 * from a graph), the same masks for the same seed and counter. */
static void test_drop_path_masks(void **state) {
    enum { ROWS = 3, N = 4096 };
    float keep[ROWS] = {1.0f, 0.8f, 0.5f};
    float *d_keep = dev_alloc(ROWS), *d_scale = dev_alloc(ROWS * N);
    int64_t *d_counter = NULL, counter = 0;
    CHECK_CUDA(cudaMalloc((void **)&d_counter, sizeof *d_counter));
    CHECK_CUDA(cudaMemset(d_counter, 0, sizeof *d_counter));
    upload(d_keep, keep, ROWS);
    float *first = falloc(ROWS * N), *second = falloc(ROWS * N);
    drop_path_masks(d_scale, d_counter, d_keep, ROWS, N, 7, 0);
    test_to_host(first, d_scale, ROWS * N);
    for (int r = 0; r < ROWS; r++) {
        int kept = 0;
        for (int i = 0; i < N; i++) {
            float v = first[r * N + i];
            if (v != 0.0f && fabsf(v - 1.0f / keep[r]) > 1e-6f) fail_msg("mask value %g, expected 0 or %g", v, 1.0f / keep[r]);
            kept += v != 0.0f;
        }
        double frac = (double)kept / N, sigma = sqrt(keep[r] * (1.0 - keep[r]) / N);
        printf("drop path masks: keep %.2f, kept %.4f of %d samples\n", keep[r], frac, N);
        expect_le(fabs(frac - keep[r]), 5 * sigma + 1e-9);
    }
    drop_path_masks(d_scale, d_counter, d_keep, ROWS, N, 7, 0);
    test_to_host(second, d_scale, ROWS * N);
    assert_true(memcmp(first, second, sizeof(float) * ROWS * N) != 0);
    CHECK_CUDA(cudaMemcpy(&counter, d_counter, sizeof counter, cudaMemcpyDeviceToHost));
    assert_int_equal(counter, 2);
    CHECK_CUDA(cudaMemset(d_counter, 0, sizeof *d_counter)); /* same seed and counter: same masks */
    drop_path_masks(d_scale, d_counter, d_keep, ROWS, N, 7, 0);
    test_to_host(second, d_scale, ROWS * N);
    assert_memory_equal(first, second, sizeof(float) * ROWS * N);

    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    drop_path_masks(d_scale, d_counter, d_keep, ROWS, N, 7, stream);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    test_to_host(first, d_scale, ROWS * N);
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    test_to_host(second, d_scale, ROWS * N);
    assert_true(memcmp(first, second, sizeof(float) * ROWS * N) != 0);
    CHECK_CUDA(cudaMemcpy(&counter, d_counter, sizeof counter, cudaMemcpyDeviceToHost));
    assert_int_equal(counter, 3);
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaStreamDestroy(stream));
    CHECK_CUDA(cudaFree(d_keep)); CHECK_CUDA(cudaFree(d_scale)); CHECK_CUDA(cudaFree(d_counter));
    free(first), free(second);
}

/* ---- BN + SiLU (skip joined after the activation), through the model's layer ------------------------*/

typedef struct bn_fd { batchnorm_layer *bn; float *y, *x, *res; const float *w; size_t n; } bn_fd;
static double bn_loss(void *arg) {
    bn_fd *f = arg;
    batchnorm_forward(f->bn, f->y, f->x, f->res, 1, &ctx);
    return weighted_sum(f->y, f->w, f->n);
}

static void test_bn_silu(void **state) {
    int rows = 48, C = 12;
    size_t n = (size_t)rows * C;
    arena plan;
    batchnorm_layer bn;
    arena_plan(&plan);
    batchnorm_init(&bn, &plan, rows, C, ACT_SILU);
    arena_take(&plan, ARENA_SCRATCH, batchnorm_scratch_bytes(&bn));
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    batchnorm_init(&bn, &ctx.arena, rows, C, ACT_SILU);
    batchnorm_attach_scratch(&bn, arena_take(&ctx.arena, ARENA_SCRATCH, batchnorm_scratch_bytes(&bn)));
    float *x = random_host(n, -1, 3), *res = random_host(n, -1, 1), *dy = random_host(n, -1, 1);
    float *gamma = random_host(C, 0.5f, 1.5f), *beta = random_host(C, -1, 1);
    upload(bn.gamma, gamma, C), upload(bn.beta, beta, C);
    fill_float(bn.running_mean, 0.0f, C, ctx.stream);
    fill_float(bn.running_var, 1.0f, C, ctx.stream);
    float *d_x = dev_alloc(n), *d_res = dev_alloc(n), *d_y = dev_alloc(n), *d_dy = dev_alloc(n);
    float *d_dx = dev_alloc(n), *d_dres = dev_alloc(n);
    upload(d_x, x, n), upload(d_res, res, n), upload(d_dy, dy, n);
    batchnorm_forward(&bn, d_y, d_x, d_res, 1, &ctx);
    batchnorm_backward(&bn, d_dx, d_dres, d_dy, d_x, d_y, &ctx);

    double *mean = dalloc(C), *var = dalloc(C), *y = dalloc(n), *dx = dalloc(n), *dres = dalloc(n);
    double *dgamma = dalloc(C), *dbeta = dalloc(C), *g = dalloc(n), *xhat = dalloc(n);
    for (size_t i = 0; i < n; i++) mean[i % C] += x[i] / (double)rows;
    for (size_t i = 0; i < n; i++) var[i % C] += (x[i] - mean[i % C]) * (x[i] - mean[i % C]) / rows;
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % C);
        xhat[i] = (x[i] - mean[c]) / sqrt(var[c] + 1e-5);
        double z = gamma[c] * xhat[i] + beta[c];
        y[i] = silu(z) + res[i];
        g[i] = dy[i] * silu_grad(z);
        dres[i] = dy[i];
        dbeta[c] += g[i];
        dgamma[c] += g[i] * xhat[i];
    }
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % C);
        dx[i] = gamma[c] / sqrt(var[c] + 1e-5) * (g[i] - dbeta[c] / rows - xhat[i] * dgamma[c] / rows);
    }
    printf("BN + SiLU + skip, rows %d C %d:\n", rows, C);
    expect_device_close("y", d_y, y, n, 1e-5);
    expect_device_close("dx", d_dx, dx, n, 1e-4);
    expect_device_close("dresidual", d_dres, dres, n, 1e-7);
    expect_device_close("dgamma", bn.gamma_grad, dgamma, C, 1e-4);
    expect_device_close("dbeta", bn.beta_grad, dbeta, C, 1e-4);
    float *gx = falloc(n), *gg = falloc(C), *gb = falloc(C), *gr = falloc(n);
    test_to_host(gx, d_dx, n), test_to_host(gg, bn.gamma_grad, C), test_to_host(gb, bn.beta_grad, C);
    test_to_host(gr, d_dres, n);
    bn_fd f = {&bn, d_y, d_x, d_res, dy, n};
    fd_check("d loss / dx", d_x, gx, n, 10, bn_loss, &f);
    fd_check("d loss / dgamma", bn.gamma, gg, C, 6, bn_loss, &f);
    fd_check("d loss / dbeta", bn.beta, gb, C, 6, bn_loss, &f);
    fd_check("d loss / dresidual", d_res, gr, n, 6, bn_loss, &f);
    arena_free(&ctx.arena);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_res)); CHECK_CUDA(cudaFree(d_y)); CHECK_CUDA(cudaFree(d_dy));
    CHECK_CUDA(cudaFree(d_dx)); CHECK_CUDA(cudaFree(d_dres));
    free(x), free(res), free(dy), free(gamma), free(beta), free(mean), free(var), free(y), free(dx), free(dres);
    free(dgamma), free(dbeta), free(g), free(xhat), free(gx), free(gg), free(gb), free(gr);
}

/* ---- the whole model -------------------------------------------------------------------------------
 * gpu_model_parity (run by default, from tests/parity/reference/) holds the model to timm's own
 * numbers from the same weights and batch: the logits, the loss, every parameter's gradient by
 * name (which fails a gradient left zero or not finite), the running statistics and the SGD update;
 * test_efficientnet_params (CPU) holds its parameter count, names and shapes to timm's. So the
 * checks that only said "finite" and "not zero" are gone, and this file keeps what timm's weights
 * cannot show: the suite's own initialisation, its gradients against its own forward, a step that
 * lowers the loss, drop path, and the captured step. */

/* 64x64, batch 8: the last stage is 2x2, so its batch norms normalise over 32 values (a 1x1 stage
 * at batch 4 normalises over 4, where the statistics are ill-conditioned and float32's rounding is
 * amplified); 1000 classes, the count timm's classifier initialisation is made for. */
static const model_config MODEL = {.name = "efficientnetv2_s", .batch = 8, .image_size = 64, .in_channels = 3,
                                   .classes = 1000, .seed = 3};
#define MODEL_BATCH 8
#define HEAD_FEATURES 1280 /* conv_head's channels: the classifier's inputs */

static void random_batch(float *images, int32_t *labels, const model_config *c) {
    uint64_t r = 99;
    for (size_t i = 0; i < (size_t)c->batch * c->image_size * c->image_size * c->in_channels; i++)
        images[i] = rng_normal(&r);
    for (int i = 0; i < c->batch; i++) labels[i] = (int32_t)(rng_next(&r) % (uint64_t)c->classes);
}

typedef struct model_run {
    session s;
    model_config config;
    float *images;
    int32_t labels[MODEL_BATCH];
    double logits_mean_square; /* of the last model_loss */
} model_run;

/* A session of `config` (float32, TF32 off) from its seeded initialisation, with the fixed batch
 * uploaded. */
static void model_start(model_run *r, const model_config *config) {
    char e[512];
    r->config = *config;
    assert_true(config->batch <= MODEL_BATCH);
    if (session_plan(&r->s, config, e, sizeof e) || session_start(&r->s, 0, (size_t)64 << 20, 0, 1, e, sizeof e))
        fail_msg("efficientnetv2_s session: %s", e);
    size_t image_floats = (size_t)config->batch * config->image_size * config->image_size * config->in_channels;
    r->images = falloc(image_floats);
    random_batch(r->images, r->labels, config);
    upload(r->s.model->input, r->images, image_floats);
    CHECK_CUDA(cudaMemcpy(r->s.model->labels, r->labels, (size_t)config->batch * sizeof(int32_t),
                          cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaDeviceSynchronize()); /* the uploads went through the legacy stream */
}

static void model_end(model_run *r) {
    session_end(&r->s);
    free(r->images);
}

/* The mean cross-entropy of a training forward (batch statistics) on the fixed batch, in double on
 * the host from the logits (not through the loss kernel). */
static double model_loss(model_run *r) {
    model *m = r->s.model;
    int B = r->config.batch, K = r->config.classes;
    m->forward(m, 1, &r->s.ctx);
    float *z = falloc((size_t)B * K);
    test_to_host(z, m->logits, (size_t)B * K);
    double loss = 0.0, square = 0.0;
    for (int b = 0; b < B; b++) {
        const float *row = z + (size_t)b * K;
        double top = -INFINITY, sum = 0.0;
        for (int k = 0; k < K; k++) top = fmax(top, row[k]), square += (double)row[k] * row[k];
        for (int k = 0; k < K; k++) sum += exp(row[k] - top);
        loss += log(sum) + top - row[r->labels[b]];
    }
    free(z);
    r->logits_mean_square = square / ((double)B * K);
    return loss / B;
}

/* The gradient of model_loss at the current weights (the last forward's), into the arena. */
static void model_backward_pass(model_run *r) {
    model *m = r->s.model;
    trainer *t = &r->s.trainer;
    CHECK_CUDA(cudaMemset(t->sums, 0, 2 * sizeof(float)));
    CHECK_CUDA(cudaDeviceSynchronize());
    softmax_ce_forward_backward(m->dlogits, &t->sums[0], &t->sums[1], m->logits, m->labels, r->config.batch,
                                r->config.classes, 0.0f, r->s.ctx.stream);
    m->backward(m, &r->s.ctx);
    CHECK_CUDA(cudaDeviceSynchronize());
}

static const param_entry *param_named(const model *m, const char *name) {
    for (int i = 0; i < m->params.count; i++)
        if (!strcmp(m->params.entries[i].name, name)) return &m->params.entries[i];
    fail_msg("efficientnetv2_s has no parameter %s", name);
    return NULL;
}

/* Directional finite differences of model_loss over one parameter tensor: L(w + h v) - L(w - h v)
 * with v = g / max(rms(g), max|g| / 2), against the backward's g . (w+ - w-) over the values as
 * stored. The cap keeps every element's move within 2h (a gradient concentrated on a few elements
 * would otherwise move those out of the range where the loss is linear). h is FD_STEP of the
 * tensor's scale (its RMS; for a tensor at zero, a bias or a BN shift, the unit scale of the
 * normalised values it is added to). Moving the whole tensor at once makes the predicted change the
 * gradient's over every element, large against float32's rounding of the loss (FD_NOISE, absolute:
 * ten times what the rounding of a forward's sums moves the loss by). Central differences cancel the
 * step's second-order error; the third-order one is what sets FD_STEP: at the initialisation the
 * early layers' gradients are large and the loss curves sharply along them, so the step is small
 * (the same check through timm's model at this initialisation, on the CPU, stays well inside FD_TOL
 * at this step and misses it by far at twenty times it). A wrong gradient (a term left out, a wrong
 * scale or layout) misses by a fraction of the tensor's own gradient, far beyond FD_TOL. */
#define FD_STEP 5e-4
#define FD_TOL 2e-2
#define FD_NOISE 1e-5
static void fd_direction(model_run *r, const char *name, const float *all_grads, const float *all_params) {
    const param_entry *p = param_named(r->s.model, name);
    size_t n = (size_t)param_numel(p), offset = (size_t)(p->data - (const float *)r->s.ctx.arena.params);
    const float *g = all_grads + offset, *w = all_params + offset;
    double g_rms = 0.0, w_rms = 0.0, g_max = 0.0;
    for (size_t i = 0; i < n; i++) g_rms += (double)g[i] * g[i], w_rms += (double)w[i] * w[i], g_max = fmax(g_max, fabs(g[i]));
    g_rms = sqrt(g_rms / n), w_rms = sqrt(w_rms / n);
    double norm = fmax(g_rms, g_max / 2), h = FD_STEP * (w_rms > 0 ? w_rms : 1.0), l[2], predicted = 0.0;
    if (!(norm > 0)) fail_msg("%s: the backward gave it no gradient", name);
    float *moved[2];
    for (int s = 0; s < 2; s++) {
        moved[s] = falloc(n);
        for (size_t i = 0; i < n; i++) moved[s][i] = (float)(w[i] + (s ? -h : h) * g[i] / norm);
        upload(p->data, moved[s], n);
        CHECK_CUDA(cudaDeviceSynchronize());
        l[s] = model_loss(r);
    }
    for (size_t i = 0; i < n; i++) predicted += (double)g[i] * ((double)moved[0][i] - moved[1][i]);
    upload(p->data, w, n);
    CHECK_CUDA(cudaDeviceSynchronize());
    double measured = l[0] - l[1], err = fabs(measured - predicted);
    printf("  %-34s L+ - L- %.6e, backward predicts %.6e: off by %.2e (bound %.2e)\n", name, measured, predicted,
           err, FD_TOL * fabs(predicted) + FD_NOISE);
    expect_le(err, FD_TOL * fabs(predicted) + FD_NOISE);
    free(moved[0]), free(moved[1]);
}

/* From the seed's initialisation (timm's _init_weight_goog, models/efficientnet.h):
 *  - the loss is near ln(classes). The classifier's weights are U(+-1/sqrt(classes)), of variance
 *    1 / (3 classes), drawn independently of the features they multiply. The features are the head's
 *    batch norm (gamma 1, beta 0: unit mean square over the batch per channel), SiLU (|silu(x)| <=
 *    |x|) and the average pool (a mean's square is at most the mean square), so their mean square
 *    over the batch is at most 1 per channel, HEAD_FEATURES in all. Each logit's variance, averaged
 *    over the batch, is then at most s^2 = HEAD_FEATURES / (3 classes), 0.43 at 1000 classes, and so
 *    is the logits' mean square, up to the draw (over 1000 classes, a few per cent). The loss then is
 *    ln(classes) + s^2/2 (the log-sum-exp over many classes) minus the label's logit, whose batch
 *    mean has a deviation of at most s / sqrt(batch): within ln(classes) + [-0.7, 0.9] at three
 *    deviations. A forward that failed to normalise, or a classifier drawn at another scale, is far
 *    outside; logits at exactly zero (a classifier never drawn) fail the mean square's lower bound.
 *  - each gradient the backward computes is the derivative of that loss (fd_direction), for
 *    tensors from the stem to the classifier: each kind of layer (ConvBnAct, FusedMBConv, MBConv's
 *    1x1, depthwise and SE, the head, BN scales and shifts, biases). Not the last block's bn3.bias:
 *    a per-channel shift before conv_head is undone by bn2's batch statistics, so its gradient is
 *    zero in exact arithmetic and float noise here.
 *  - a captured training step computes the same loss as the forward run kernel by kernel (to float32's
 *    rounding of a sum of 8 losses), and the same gradient as the backward within the bound for the
 *    same kernels launched differently (TEST_SAME_KERNELS_FP32, tests/support/testutil.h), and its update
 *    lowers the loss on the batch, along a descent direction of that gradient. STEP_LR is small:
 *    the loss curves so sharply along the early layers' large gradients here that much larger steps
 *    overshoot. */
#define STEP_LR 1e-4f
static void test_model_from_initialisation(void **state) {
    model_run r;
    model_start(&r, &MODEL);
    model *m = r.s.model;
    int classes = MODEL.classes;
    double loss = model_loss(&r), s2 = HEAD_FEATURES / (3.0 * classes);
    printf("efficientnetv2_s %dx%d/%d, %d classes, initial weights: loss %.5f (ln %d = %.5f), logits' mean square "
           "%.4f (at most %.4f)\n", MODEL.image_size, MODEL.image_size, MODEL.batch, classes, loss, classes,
           log(classes), r.logits_mean_square, s2);
    expect_gt(r.logits_mean_square, 0);
    expect_lt(r.logits_mean_square, 1.1 * s2);
    expect_gt(loss, log(classes) - 3 * sqrt(s2 / MODEL.batch));
    expect_lt(loss, log(classes) + s2 / 2 + 3 * sqrt(s2 / MODEL.batch));

    model_backward_pass(&r);
    size_t n = arena_trainable_floats(&r.s.ctx.arena);
    float *g = falloc(n), *w0 = falloc(n);
    test_to_host(g, arena_grads(&r.s.ctx.arena), n);
    test_to_host(w0, (const float *)r.s.ctx.arena.params, n);
    printf("directional finite differences of the loss along each tensor's gradient (step %.0e of its scale):\n",
           FD_STEP);
    static const char *const tensors[] = {
        "conv_stem.weight", "bn1.weight", "blocks.0.1.conv.weight", "blocks.1.0.conv_exp.weight",
        "blocks.1.3.bn2.bias", "blocks.2.3.conv_pwl.weight", "blocks.3.0.conv_pw.weight",
        "blocks.3.0.conv_dw.weight", "blocks.3.0.se.conv_reduce.weight", "blocks.3.0.se.conv_expand.bias",
        "blocks.4.8.bn2.weight", "blocks.5.14.conv_pwl.weight", "blocks.5.14.bn2.bias", "conv_head.weight",
        "bn2.weight", "classifier.weight", "classifier.bias",
    };
    for (size_t i = 0; i < sizeof tensors / sizeof *tensors; i++) fd_direction(&r, tensors[i], g, w0);

    /* the captured step: its first replay is the loss and gradient at w0, then the update */
    optimizer_config sgd = {.kind = OPTIMIZER_SGD, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = 1};
    lr_schedule constant = {LR_CONSTANT, STEP_LR, 0, 0, 0, 0, 0, 25, 1e4f};
    trainer_init(&r.s.trainer, m, &r.s.ctx, sgd, constant, 0.0f, 1);
    double sums[2][2];
    float *g_graph = falloc(n), *w1 = falloc(n);
    trainer_step(&r.s.trainer, r.images, r.labels);
    trainer_take_sums(&r.s.trainer, &sums[0][0], &sums[0][1]);
    test_to_host(g_graph, arena_grads(&r.s.ctx.arena), n);
    test_to_host(w1, (const float *)r.s.ctx.arena.params, n);
    trainer_step(&r.s.trainer, r.images, r.labels);
    trainer_take_sums(&r.s.trainer, &sums[1][0], &sums[1][1]);
    double before = sums[0][0] / MODEL.batch, after = sums[1][0] / MODEL.batch, predicted = 0.0;
    for (size_t i = 0; i < n; i++) predicted += (double)g[i] * ((double)w1[i] - w0[i]);
    double g_err = test_rel_err_f(g_graph, g, n);
    printf("captured step: loss %.6f (the forward's %.6f), gradient against the backward's %.2e; after one update "
           "(lr %g) %.6f: change %.4e, first order predicts %.4e\n", before, loss, g_err, (double)STEP_LR, after,
           after - before, predicted);
    expect_lt(fabs(before - loss), 1e-5 * loss);
    expect_lt(g_err, TEST_SAME_KERNELS_FP32);
    expect_lt(predicted, 0);
    expect_lt(after, before);
    free(g), free(w0), free(g_graph), free(w1);
    model_end(&r);
}

/* Drop path acts in training only: with the same weights (the rate changes no parameter and no
 * draw of the initialisation), an inference forward gives the logits it gives without drop path,
 * within float32's rounding (two sessions may measure different convolution algorithms); a training
 * forward drops residual branches per sample (at rate 0.3, about one block in seven of each sample),
 * which moves the logits by a sizeable fraction of themselves. */
static void test_model_drop_path(void **state) {
    float *logits[2][2]; /* [drop path][training] */
    size_t nz = (size_t)MODEL.batch * MODEL.classes;
    for (int d = 0; d < 2; d++) {
        model_config config = MODEL;
        config.drop_path = d ? 0.3f : 0.0f;
        model_run r;
        model_start(&r, &config);
        model *m = r.s.model;
        for (int training = 0; training < 2; training++) {
            m->forward(m, training, &r.s.ctx);
            logits[d][training] = falloc(nz);
            test_to_host(logits[d][training], m->logits, nz);
        }
        model_end(&r);
    }
    double inference = test_rel_err_f(logits[1][0], logits[0][0], nz);
    double training = test_rel_err_f(logits[1][1], logits[0][1], nz);
    printf("drop path 0.3 against none, relative difference of the logits: inference %.2e, training %.2e\n",
           inference, training);
    expect_lt(inference, 1e-4);
    expect_gt(training, 1e-2);
    for (int d = 0; d < 2; d++) free(logits[d][0]), free(logits[d][1]);
}

/* Three steps captured in a graph and three run eagerly, from the same weights and batch, agree
 * within float32's bound for the same kernels launched differently (TEST_SAME_KERNELS_FP32,
 * tests/support/testutil.h), and so do two eager runs; a replay that missed a node, read a stale buffer or
 * kept a step's learning rate or drop-path draw would differ by far more. The learning rate is
 * test_model_from_initialisation's small one: larger steps along this initialisation's sharp early
 * layers let a last-bit difference grow from step to step. With drop path the graph's steps draw
 * new masks on every replay (test_drop_path_masks) and train: their loss is finite and moves the
 * parameters away from the run without drop path. */
static void test_model_graph(void **state) {
    float *change[4] = {NULL, NULL, NULL, NULL}, *initial = NULL;
    size_t n = 0;
    /* runs: eager, graph, eager again, graph with drop path */
    for (int run = 0; run < 4; run++) {
        int graph = run == 1 || run == 3;
        model_config config = MODEL;
        config.drop_path = run == 3 ? 0.3f : 0.0f;
        model_run r;
        model_start(&r, &config);
        optimizer_config sgd = {.kind = OPTIMIZER_SGD, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = 1};
        lr_schedule constant = {LR_CONSTANT, STEP_LR, 0, 0, 0, 0, 0, 25, 1e4f};
        trainer_init(&r.s.trainer, r.s.model, &r.s.ctx, sgd, constant, 0.0f, graph);
        n = arena_trainable_floats(&r.s.ctx.arena);
        if (!initial) {
            initial = falloc(n);
            test_to_host(initial, (const float *)r.s.ctx.arena.params, n);
        }
        for (int step = 0; step < 3; step++) trainer_step(&r.s.trainer, r.images, r.labels);
        double loss, correct;
        trainer_take_sums(&r.s.trainer, &loss, &correct);
        printf("3 steps, %s, drop path %.1f: mean loss %.4f\n", graph ? "graph" : "eager", config.drop_path,
               loss / (3.0 * config.batch));
        assert_true(isfinite(loss));
        change[run] = falloc(n);
        test_to_host(change[run], (const float *)r.s.ctx.arena.params, n);
        for (size_t i = 0; i < n; i++) change[run][i] -= initial[i];
        model_end(&r);
    }
    double e = test_rel_err_f(change[1], change[0], n), spread = test_rel_err_f(change[2], change[0], n);
    double dropped = test_rel_err_f(change[3], change[1], n);
    printf("after 3 steps, relative difference of the parameter change: graph against eager %.2e, two eager runs "
           "%.2e (bound %.0e); graph with drop path 0.3 against without %.2e\n", e, spread, TEST_SAME_KERNELS_FP32,
           dropped);
    expect_lt(spread, TEST_SAME_KERNELS_FP32);
    expect_lt(e, TEST_SAME_KERNELS_FP32);
    expect_gt(dropped, 1e-2);
    for (int run = 0; run < 4; run++) free(change[run]);
    free(initial);
}

int main(void) {
    test_require_gpu();
    /* The model tests set up five sessions; the legacy cuDNN search alone keeps that to seconds
     * (the graph-API engines are exercised by gpu_conv_engine and the benchmarks). */
    setenv("SUITE_CONV_PATH", "legacy", 0);
    if (context_init(&ctx, 0, (size_t)64 << 20, 0) != CONTEXT_OK) return 1;
    context_reserve_workspace(&ctx, ctx.workspace_limit);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depthwise_kernels), cmocka_unit_test(test_depthwise_layer_both_paths),
        cmocka_unit_test(test_silu),              cmocka_unit_test(test_squeeze_excite),
        cmocka_unit_test(test_drop_path_fixed_mask), cmocka_unit_test(test_drop_path_masks),
        cmocka_unit_test(test_bn_silu),           cmocka_unit_test(test_model_from_initialisation),
        cmocka_unit_test(test_model_drop_path),   cmocka_unit_test(test_model_graph),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    context_free(&ctx);
    return rc;
}
