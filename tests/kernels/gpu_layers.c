/* Convolution (cuDNN) and linear (cuBLASLt) layers on the GPU: outputs and gradients against a
 * double-precision CPU reference, and finite-difference checks of the gradients through the GPU
 * forward (float32 math, TF32 off), for several shapes, including gradient accumulation into dx. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/check.h"
#include "models/layers/conv.h"
#include "models/layers/linear.h"
#include "tests/support/testutil.h"

static job_context ctx;
static uint64_t rng = 1234;

static double *dalloc(size_t n) { return calloc(n, sizeof(double)); }
static float *falloc(size_t n) { return calloc(n, sizeof(float)); }

/* ---- convolution ---------------------------------------------------------------------------*/

typedef struct conv_case { int n, c, k, size, kernel, stride, pad; } conv_case;

static size_t xi(const conv_shape *s, int n, int h, int w, int c) {
    return (((size_t)n * s->h_in + h) * s->w_in + w) * s->in_c + c;
}
static size_t yi(const conv_shape *s, int n, int h, int w, int k) {
    return (((size_t)n * s->h_out + h) * s->w_out + w) * s->out_c + k;
}
static size_t wi(const conv_shape *s, int k, int r, int q, int c) {
    return (((size_t)k * s->kernel + r) * s->kernel + q) * s->in_c + c;
}

/* y, and for a given dy: dx and dw, all in double. */
static void conv_reference(const conv_shape *s, const float *x, const float *w, const float *dy, double *y,
                           double *dx, double *dw) {
    for (int n = 0; n < s->batch; n++)
        for (int oh = 0; oh < s->h_out; oh++)
            for (int ow = 0; ow < s->w_out; ow++)
                for (int k = 0; k < s->out_c; k++)
                    for (int r = 0; r < s->kernel; r++)
                        for (int q = 0; q < s->kernel; q++) {
                            int h = oh * s->stride - s->pad + r, ww = ow * s->stride - s->pad + q;
                            if (h < 0 || h >= s->h_in || ww < 0 || ww >= s->w_in) continue;
                            for (int c = 0; c < s->in_c; c++) {
                                double xv = x[xi(s, n, h, ww, c)], wv = w[wi(s, k, r, q, c)];
                                double g = dy[yi(s, n, oh, ow, k)];
                                y[yi(s, n, oh, ow, k)] += xv * wv;
                                dx[xi(s, n, h, ww, c)] += g * wv;
                                dw[wi(s, k, r, q, c)] += g * xv;
                            }
                        }
}

static double weighted_sum(const float *device_y, const float *weights, size_t n) {
    float *y = falloc(n);
    test_to_host(y, device_y, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)y[i] * weights[i];
    free(y);
    return sum;
}

static void check_conv_case(conv_case cc) {
    conv_shape s = conv_shape_nhwc(cc.n, cc.c, cc.k, cc.kernel, cc.stride, cc.pad, cc.size, cc.size);
    size_t nx = (size_t)s.batch * s.h_in * s.w_in * s.in_c, ny = (size_t)s.batch * s.h_out * s.w_out * s.out_c;
    size_t nw = (size_t)s.out_c * s.kernel * s.kernel * s.in_c;
    arena plan;
    arena_plan(&plan);
    conv_layer layer;
    conv_init(&layer, &plan, s);
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    conv_init(&layer, &ctx.arena, s);

    float *x = falloc(nx), *w = falloc(nw), *dy = falloc(ny), *dx0 = falloc(nx);
    test_fill_uniform(x, nx, &rng, -1, 1);
    test_fill_uniform(w, nw, &rng, -0.5f, 0.5f);
    test_fill_uniform(dy, ny, &rng, -1, 1);
    test_fill_uniform(dx0, nx, &rng, -1, 1);
    float *d_x = test_to_device(x, nx), *d_dy = test_to_device(dy, ny), *d_dx = test_to_device(dx0, nx);
    float *d_y = test_to_device(dy, ny); /* overwritten */
    CHECK_CUDA(cudaMemcpy(layer.weight, w, nw * sizeof(float), cudaMemcpyHostToDevice));
    conv_setup(&layer, d_y, d_x, d_dx, 1, NULL, &ctx);
    CHECK_CUDA(cudaMemcpy(d_dx, dx0, nx * sizeof(float), cudaMemcpyHostToDevice)); /* search scribbled */

    double *y_ref = dalloc(ny), *dx_ref = dalloc(nx), *dw_ref = dalloc(nw);
    conv_reference(&s, x, w, dy, y_ref, dx_ref, dw_ref);
    test_poison(d_y, ny);
    test_poison(layer.weight_grad, nw);
    conv_forward(&layer, d_y, d_x, &ctx);
    conv_backward(&layer, d_dx, d_dy, d_x, &ctx); /* accumulates onto dx0 */
    float *y = falloc(ny), *dx = falloc(nx), *dw = falloc(nw);
    test_to_host(y, d_y, ny);
    test_to_host(dx, d_dx, nx);
    test_to_host(dw, layer.weight_grad, nw);
    for (size_t i = 0; i < nx; i++) dx_ref[i] += dx0[i];
    double ey = test_rel_err(y, y_ref, ny), edx = test_rel_err(dx, dx_ref, nx), edw = test_rel_err(dw, dw_ref, nw);
    printf("conv n%d c%d k%d %dx%d kernel %d stride %d pad %d: rel err y %.2e dx %.2e dw %.2e\n", cc.n, cc.c,
           cc.k, cc.size, cc.size, cc.kernel, cc.stride, cc.pad, ey, edx, edw);
    expect_lt(ey, 1e-5); expect_lt(edx, 1e-5); expect_lt(edw, 1e-5);

    /* finite differences of L = sum(dy * y) through the GPU forward, at random weights and inputs */
    const float step = 1e-2f;
    for (int t = 0; t < 12; t++) {
        int on_weight = t % 2 == 0;
        size_t i = (size_t)(test_rand_u64(&rng) % (on_weight ? nw : nx));
        float *host = on_weight ? w : x, *dev = on_weight ? layer.weight : d_x;
        float saved = host[i];
        double loss[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            float v = saved + (sgn ? -step : step);
            CHECK_CUDA(cudaMemcpy(dev + i, &v, sizeof v, cudaMemcpyHostToDevice));
            conv_forward(&layer, d_y, d_x, &ctx);
            loss[sgn] = weighted_sum(d_y, dy, ny);
        }
        CHECK_CUDA(cudaMemcpy(dev + i, &saved, sizeof saved, cudaMemcpyHostToDevice));
        double fd = (loss[0] - loss[1]) / (2 * step);
        double analytic = on_weight ? dw[i] : dx[i] - dx0[i];
        if (fabs(fd - analytic) > 2e-3 * (1 + fabs(analytic)))
            fail_msg("conv finite difference at %s[%zu]: %.6f vs backward %.6f", on_weight ? "w" : "x", i, fd, analytic);
    }
    conv_destroy(&layer);
    arena_free(&ctx.arena);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_dy)); CHECK_CUDA(cudaFree(d_dx)); CHECK_CUDA(cudaFree(d_y));
    free(x), free(w), free(dy), free(dx0), free(y), free(dx), free(dw), free(y_ref), free(dx_ref), free(dw_ref);
}

static void test_conv(void **state) {
    conv_case cases[] = {{2, 5, 6, 7, 3, 2, 1}, {3, 8, 16, 6, 1, 1, 0}, {2, 3, 8, 15, 7, 2, 3},
                         {2, 16, 8, 5, 1, 2, 0}, {1, 4, 4, 9, 3, 1, 1}, {16, 512, 128, 4, 1, 1, 0},
                         {16, 256, 64, 8, 1, 1, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_conv_case(cases[i]);
}

/* ---- linear -------------------------------------------------------------------------------*/

static void check_linear_case(int n, int in, int out) {
    arena plan;
    arena_plan(&plan);
    linear_layer l;
    linear_init(&l, &plan, n, in, out);
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    linear_init(&l, &ctx.arena, n, in, out);
    size_t nx = (size_t)n * in, ny = (size_t)n * out, nw = (size_t)in * out;
    float *x = falloc(nx), *w = falloc(nw), *b = falloc(out), *dy = falloc(ny);
    test_fill_uniform(x, nx, &rng, -1, 1);
    test_fill_uniform(w, nw, &rng, -0.5f, 0.5f);
    test_fill_uniform(b, out, &rng, -1, 1);
    test_fill_uniform(dy, ny, &rng, -1, 1);
    CHECK_CUDA(cudaMemcpy(l.weight, w, nw * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(l.bias, b, out * sizeof(float), cudaMemcpyHostToDevice));
    float *d_x = test_to_device(x, nx), *d_dy = test_to_device(dy, ny), *d_y = test_to_device(dy, ny);
    float *d_dx = test_to_device(x, nx);
    linear_setup(&l, &ctx);
    test_poison(d_y, ny), test_poison(d_dx, nx), test_poison(l.weight_grad, nw), test_poison(l.bias_grad, out);
    linear_forward(&l, d_y, d_x, &ctx);
    linear_backward(&l, d_dx, d_dy, d_x, &ctx);
    double *y_ref = dalloc(ny), *dx_ref = dalloc(nx), *dw_ref = dalloc(nw), *db_ref = dalloc(out);
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++) {
            double acc = b[o], g = dy[(size_t)r * out + o];
            for (int i = 0; i < in; i++) {
                acc += (double)x[(size_t)r * in + i] * w[(size_t)o * in + i];
                dx_ref[(size_t)r * in + i] += g * w[(size_t)o * in + i];
                dw_ref[(size_t)o * in + i] += g * x[(size_t)r * in + i];
            }
            y_ref[(size_t)r * out + o] = acc;
            db_ref[o] += g;
        }
    float *y = falloc(ny), *dx = falloc(nx), *dw = falloc(nw), *db = falloc(out);
    test_to_host(y, d_y, ny), test_to_host(dx, d_dx, nx), test_to_host(dw, l.weight_grad, nw);
    test_to_host(db, l.bias_grad, out);
    double ey = test_rel_err(y, y_ref, ny), edx = test_rel_err(dx, dx_ref, nx);
    double edw = test_rel_err(dw, dw_ref, nw), edb = test_rel_err(db, db_ref, out);
    printf("linear %dx%d->%d: rel err y %.2e dx %.2e dw %.2e db %.2e\n", n, in, out, ey, edx, edw, edb);
    expect_lt(ey, 1e-5); expect_lt(edx, 1e-5); expect_lt(edw, 1e-5); expect_lt(edb, 1e-5);
    const float step = 1e-2f;
    for (int t = 0; t < 9; t++) {
        int which = t % 3; /* weight, bias, input */
        size_t count = which == 0 ? nw : which == 1 ? (size_t)out : nx;
        size_t i = (size_t)(test_rand_u64(&rng) % count);
        float *host = which == 0 ? w : which == 1 ? b : x, *dev = which == 0 ? l.weight : which == 1 ? l.bias : d_x;
        float saved = host[i];
        double loss[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            float v = saved + (sgn ? -step : step);
            CHECK_CUDA(cudaMemcpy(dev + i, &v, sizeof v, cudaMemcpyHostToDevice));
            linear_forward(&l, d_y, d_x, &ctx);
            loss[sgn] = weighted_sum(d_y, dy, ny);
        }
        CHECK_CUDA(cudaMemcpy(dev + i, &saved, sizeof saved, cudaMemcpyHostToDevice));
        double fd = (loss[0] - loss[1]) / (2 * step), analytic = which == 0 ? dw[i] : which == 1 ? db[i] : dx[i];
        if (fabs(fd - analytic) > 2e-3 * (1 + fabs(analytic)))
            fail_msg("linear finite difference (%d)[%zu]: %.6f vs backward %.6f", which, i, fd, analytic);
    }
    linear_destroy(&l);
    arena_free(&ctx.arena);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_dy)); CHECK_CUDA(cudaFree(d_y)); CHECK_CUDA(cudaFree(d_dx));
    free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db);
    free(y_ref), free(dx_ref), free(dw_ref), free(db_ref);
}

static void test_linear(void **state) {
    check_linear_case(4, 16, 10);
    check_linear_case(33, 70, 5);
    check_linear_case(128, 2048, 1000);
}

int main(void) {
    test_require_gpu();
    if (context_init(&ctx, 0, (size_t)64 << 20, 0) != CONTEXT_OK) return 1;
    context_reserve_workspace(&ctx, ctx.workspace_limit);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_conv), cmocka_unit_test(test_linear)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    context_free(&ctx);
    return rc;
}
