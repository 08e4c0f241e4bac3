/* Pooling kernels against a double-precision CPU reference: max pool forward (values, argmax,
 * PyTorch's padding and tie rules, borders, C % 4 != 0, misaligned pointers, the ResNet stem's
 * size) and backward (gather of every window a cell won), global average pool forward and
 * backward, and finite-difference checks of both backward passes against the GPU forward.
 * Outputs are poisoned before every call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kernels/kernels.h"
#include "kernels/check.h"
#include "tests/support/testutil.h"

static void expect_err(const char *what, const char *shape, double err, double tol) {
    if (!(err < tol)) {
        fprintf(stderr, "%s (%s): relative error %.3g, expected < %.1g\n", what, shape, err, tol);
        fail();
    }
}

static float *host_alloc(size_t n) {
    float *h = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(h);
    return h;
}

/* n floats of device memory (+1 so a misaligned view fits), NaN-filled. */
static float *dev_alloc(size_t n) {
    float *d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&d, (n + 4) * sizeof(float)));
    test_poison(d, n + 4);
    return d;
}

static void upload(float *device, const float *host, size_t n) {
    CHECK_CUDA(cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice));
}

/* ---- max pool ------------------------------------------------------------------------------ */

typedef struct pool_shape {
    int N, H, W, C, k, stride, pad;
} pool_shape;

static int out_size(int in, int k, int stride, int pad) { return (in + 2 * pad - k) / stride + 1; }

/* PyTorch semantics: padded cells never win, the first strictly larger value in scan order wins. */
static void ref_maxpool(double *y, uint8_t *argmax, const float *x, const pool_shape *s) {
    int Ho = out_size(s->H, s->k, s->stride, s->pad), Wo = out_size(s->W, s->k, s->stride, s->pad);
    for (int n = 0; n < s->N; n++)
        for (int ho = 0; ho < Ho; ho++)
            for (int wo = 0; wo < Wo; wo++)
                for (int c = 0; c < s->C; c++) {
                    double best = -INFINITY;
                    int where = -1;
                    for (int kh = 0; kh < s->k; kh++)
                        for (int kw = 0; kw < s->k; kw++) {
                            int h = ho * s->stride - s->pad + kh, w = wo * s->stride - s->pad + kw;
                            if (h < 0 || h >= s->H || w < 0 || w >= s->W) continue;
                            double v = x[(((size_t)n * s->H + h) * s->W + w) * s->C + c];
                            if (where < 0 || v > best) {
                                best = v;
                                where = kh * s->k + kw;
                            }
                        }
                    size_t o = (((size_t)n * Ho + ho) * Wo + wo) * s->C + c;
                    y[o] = best;
                    argmax[o] = (uint8_t)where;
                }
}

/* dx[cell] = sum of dy over the outputs whose argmax is that cell. */
static void ref_maxpool_backward(double *dx, const float *dy, const uint8_t *argmax, const pool_shape *s) {
    int Ho = out_size(s->H, s->k, s->stride, s->pad), Wo = out_size(s->W, s->k, s->stride, s->pad);
    memset(dx, 0, (size_t)s->N * s->H * s->W * s->C * sizeof(double));
    for (int n = 0; n < s->N; n++)
        for (int ho = 0; ho < Ho; ho++)
            for (int wo = 0; wo < Wo; wo++)
                for (int c = 0; c < s->C; c++) {
                    size_t o = (((size_t)n * Ho + ho) * Wo + wo) * s->C + c;
                    int h = ho * s->stride - s->pad + argmax[o] / s->k;
                    int w = wo * s->stride - s->pad + argmax[o] % s->k;
                    dx[(((size_t)n * s->H + h) * s->W + w) * s->C + c] += dy[o];
                }
}

/* kind 0: uniform values; 1: few distinct values (ties everywhere); 2: distinct values at least
 * `gap` apart (finite differences never change a winner). */
static void fill_pool_input(float *x, size_t n, uint64_t *rng, int kind, float gap) {
    if (kind == 0) {
        test_fill_uniform(x, n, rng, -2.0f, 2.0f);
    } else if (kind == 1) {
        for (size_t i = 0; i < n; i++) x[i] = (float)(test_rand_u64(rng) % 3);
    } else {
        for (size_t i = 0; i < n; i++) x[i] = gap * (float)i - gap * (float)n / 2;
        for (size_t i = n - 1; i > 0; i--) { /* shuffle */
            size_t j = test_rand_u64(rng) % (i + 1);
            float t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
}

static void check_maxpool(const pool_shape *s, int kind, int shift, uint64_t seed) {
    char name[128];
    snprintf(name, sizeof name, "N=%d H=%d W=%d C=%d k=%d stride=%d pad=%d kind=%d shift=%d", s->N, s->H,
             s->W, s->C, s->k, s->stride, s->pad, kind, shift);
    uint64_t rng = seed;
    int Ho = out_size(s->H, s->k, s->stride, s->pad), Wo = out_size(s->W, s->k, s->stride, s->pad);
    size_t nx = (size_t)s->N * s->H * s->W * s->C, ny = (size_t)s->N * Ho * Wo * s->C;
    float *x = host_alloc(nx), *dy = host_alloc(ny), *y = host_alloc(ny), *dx = host_alloc(nx);
    double *y_ref = malloc(ny * sizeof(double)), *dx_ref = malloc(nx * sizeof(double));
    uint8_t *am_ref = malloc(ny), *am = malloc(ny);
    fill_pool_input(x, nx, &rng, kind, 0.01f);
    test_fill_uniform(dy, ny, &rng, -1.0f, 1.0f);
    float *x_d = dev_alloc(nx) + shift, *y_d = dev_alloc(ny) + shift;
    float *dy_d = dev_alloc(ny) + shift, *dx_d = dev_alloc(nx) + shift;
    uint8_t *am_d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&am_d, ny + 4));
    CHECK_CUDA(cudaMemset(am_d, 0xEE, ny + 4)); /* 238: never a valid offset for k <= 15 */
    am_d += shift;
    upload(x_d, x, nx);
    upload(dy_d, dy, ny);

    maxpool_forward(y_d, am_d, x_d, s->N, s->H, s->W, s->C, s->k, s->stride, s->pad, Ho, Wo, ELEM_F32, 0);
    ref_maxpool(y_ref, am_ref, x, s);
    test_to_host(y, y_d, ny);
    CHECK_CUDA(cudaMemcpy(am, am_d, ny, cudaMemcpyDeviceToHost));
    expect_err("maxpool y", name, test_rel_err(y, y_ref, ny), 1e-7);
    for (size_t i = 0; i < ny; i++)
        if (am[i] != am_ref[i]) {
            fprintf(stderr, "maxpool argmax (%s): output %zu has %d, expected %d\n", name, i, am[i], am_ref[i]);
            fail();
        }

    maxpool_backward(dx_d, dy_d, am_d, s->N, s->H, s->W, s->C, s->k, s->stride, s->pad, Ho, Wo, ELEM_F32, 0);
    ref_maxpool_backward(dx_ref, dy, am_ref, s);
    test_to_host(dx, dx_d, nx);
    expect_err("maxpool dx", name, test_rel_err(dx, dx_ref, nx), 1e-6);

    CHECK_CUDA(cudaFree(x_d - shift)); CHECK_CUDA(cudaFree(y_d - shift));
    CHECK_CUDA(cudaFree(dy_d - shift)); CHECK_CUDA(cudaFree(dx_d - shift));
    CHECK_CUDA(cudaFree(am_d - shift));
    free(x); free(dy); free(y); free(dx); free(y_ref); free(dx_ref); free(am_ref); free(am);
}

static const pool_shape MAXPOOL_SHAPES[] = {
    {2, 7, 7, 5, 3, 2, 1},   {2, 8, 8, 64, 3, 2, 1}, {1, 1, 1, 4, 3, 2, 1},  {1, 2, 3, 3, 3, 2, 1},
    {3, 9, 6, 12, 2, 2, 0},  {1, 5, 5, 3, 3, 1, 1},  {2, 6, 6, 8, 3, 3, 0},  {2, 11, 13, 7, 5, 2, 2},
    {1, 9, 9, 16, 4, 3, 1},  {2, 10, 10, 6, 3, 4, 1},
};

static void test_maxpool(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof MAXPOOL_SHAPES / sizeof *MAXPOOL_SHAPES; i++)
        for (int kind = 0; kind < 3; kind++) check_maxpool(&MAXPOOL_SHAPES[i], kind, 0, 100 + 3 * i + kind);
}

static void test_maxpool_misaligned(void **state) {
    (void)state;
    pool_shape s = {2, 8, 8, 64, 3, 2, 1};
    check_maxpool(&s, 0, 1, 200);
}

/* The ResNet stem after the 7x7/2 conv: 64 px images at batch 128, and 224 px at batch 8. */
static void test_maxpool_stem(void **state) {
    (void)state;
    pool_shape small = {128, 32, 32, 64, 3, 2, 1}, large = {8, 112, 112, 64, 3, 2, 1};
    check_maxpool(&small, 0, 0, 300);
    check_maxpool(&large, 0, 0, 301);
}

/* NaN wins its window (PyTorch propagates it). */
static void test_maxpool_nan(void **state) {
    (void)state;
    float x[9] = {1, 2, 3, 4, NAN, 6, 7, 8, 9}, y[4];
    uint8_t am[4];
    float *x_d = dev_alloc(9), *y_d = dev_alloc(4);
    uint8_t *am_d;
    CHECK_CUDA(cudaMalloc((void **)&am_d, 4));
    upload(x_d, x, 9);
    maxpool_forward(y_d, am_d, x_d, 1, 3, 3, 1, 3, 2, 1, 2, 2, ELEM_F32, 0);
    test_to_host(y, y_d, 4);
    CHECK_CUDA(cudaMemcpy(am, am_d, 4, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4; i++) assert_true(isnan(y[i])); /* every window holds the centre */
    assert_int_equal(am[0], 8); /* centre (1,1) is offset 2*3+2 in the window at (-1,-1) */
    assert_int_equal(am[3], 0);
    CHECK_CUDA(cudaFree(x_d)); CHECK_CUDA(cudaFree(y_d)); CHECK_CUDA(cudaFree(am_d));
}

/* L = sum(w * y): perturbing x by less than half the gap between values never changes a winner. */
static void gradcheck_maxpool(const pool_shape *s, uint64_t seed) {
    uint64_t rng = seed;
    int Ho = out_size(s->H, s->k, s->stride, s->pad), Wo = out_size(s->W, s->k, s->stride, s->pad);
    size_t nx = (size_t)s->N * s->H * s->W * s->C, ny = (size_t)s->N * Ho * Wo * s->C;
    float *x = host_alloc(nx), *w = host_alloc(ny), *y = host_alloc(ny), *dx = host_alloc(nx);
    const float gap = 0.05f;
    fill_pool_input(x, nx, &rng, 2, gap);
    test_fill_uniform(w, ny, &rng, -1.0f, 1.0f);
    float *x_d = dev_alloc(nx), *y_d = dev_alloc(ny), *w_d = dev_alloc(ny), *dx_d = dev_alloc(nx);
    uint8_t *am_d;
    CHECK_CUDA(cudaMalloc((void **)&am_d, ny));
    upload(x_d, x, nx);
    upload(w_d, w, ny);
    maxpool_forward(y_d, am_d, x_d, s->N, s->H, s->W, s->C, s->k, s->stride, s->pad, Ho, Wo, ELEM_F32, 0);
    maxpool_backward(dx_d, w_d, am_d, s->N, s->H, s->W, s->C, s->k, s->stride, s->pad, Ho, Wo, ELEM_F32, 0);
    test_to_host(dx, dx_d, nx);
    int checked = 0, winners = 0;
    for (int attempt = 0; attempt < 400 && checked < 24; attempt++) {
        size_t i = test_rand_u64(&rng) % nx;
        if (dx[i] == 0.0f && winners < checked / 2) continue; /* at least half are winners */
        float v = x[i], step = 0.2f * gap; /* about 1e-2 of a typical |x|, below half the gap */
        float plus = v + step, minus = v - step;
        double loss[2];
        float at[2] = {plus, minus};
        for (int side = 0; side < 2; side++) {
            upload(x_d + i, &at[side], 1);
            maxpool_forward(y_d, am_d, x_d, s->N, s->H, s->W, s->C, s->k, s->stride, s->pad, Ho, Wo, ELEM_F32, 0);
            test_to_host(y, y_d, ny);
            loss[side] = 0.0;
            for (size_t o = 0; o < ny; o++) loss[side] += (double)w[o] * y[o];
        }
        upload(x_d + i, &v, 1);
        double fd = (loss[0] - loss[1]) / ((double)plus - (double)minus);
        if (!(fabs(fd - dx[i]) <= 1e-2 * (fabs(dx[i]) + 0.05))) {
            fprintf(stderr, "maxpool gradcheck: dx[%zu] backward %.6g, finite difference %.6g\n", i, dx[i], fd);
            fail();
        }
        winners += dx[i] != 0.0f;
        checked++;
    }
    expect_ge(checked, 12); expect_ge(winners, 4);
    CHECK_CUDA(cudaFree(x_d)); CHECK_CUDA(cudaFree(y_d)); CHECK_CUDA(cudaFree(w_d));
    CHECK_CUDA(cudaFree(dx_d)); CHECK_CUDA(cudaFree(am_d));
    free(x); free(w); free(y); free(dx);
}

static void test_maxpool_gradcheck(void **state) {
    (void)state;
    pool_shape a = {2, 7, 7, 5, 3, 2, 1}, b = {1, 6, 6, 8, 3, 2, 1}, c = {1, 5, 5, 4, 3, 1, 1};
    gradcheck_maxpool(&a, 400);
    gradcheck_maxpool(&b, 401);
    gradcheck_maxpool(&c, 402);
}

/* ---- global average pool ------------------------------------------------------------------- */

static void check_avgpool(int N, int HW, int C, int shift, uint64_t seed) {
    char name[96];
    snprintf(name, sizeof name, "N=%d HW=%d C=%d shift=%d", N, HW, C, shift);
    uint64_t rng = seed;
    size_t nx = (size_t)N * HW * C, ny = (size_t)N * C;
    float *x = host_alloc(nx), *dy = host_alloc(ny), *y = host_alloc(ny), *dx = host_alloc(nx);
    double *y_ref = calloc(ny, sizeof(double)), *dx_ref = malloc(nx * sizeof(double));
    test_fill_uniform(x, nx, &rng, -1.0f, 3.0f);
    test_fill_uniform(dy, ny, &rng, -1.0f, 1.0f);
    float *x_d = dev_alloc(nx) + shift, *y_d = dev_alloc(ny) + shift;
    float *dy_d = dev_alloc(ny) + shift, *dx_d = dev_alloc(nx) + shift;
    upload(x_d, x, nx);
    upload(dy_d, dy, ny);
    for (int call = 0; call < 2; call++) { /* outputs are overwritten, not accumulated */
        avgpool_global_forward(y_d, x_d, N, HW, C, ELEM_F32, 0);
        avgpool_global_backward(dx_d, dy_d, N, HW, C, ELEM_F32, 0);
    }
    for (int n = 0; n < N; n++)
        for (int p = 0; p < HW; p++)
            for (int c = 0; c < C; c++) {
                y_ref[(size_t)n * C + c] += x[((size_t)n * HW + p) * C + c] / (double)HW;
                dx_ref[((size_t)n * HW + p) * C + c] = dy[(size_t)n * C + c] / (double)HW;
            }
    test_to_host(y, y_d, ny);
    test_to_host(dx, dx_d, nx);
    expect_err("avgpool y", name, test_rel_err(y, y_ref, ny), 1e-6);
    expect_err("avgpool dx", name, test_rel_err(dx, dx_ref, nx), 1e-6);
    CHECK_CUDA(cudaFree(x_d - shift)); CHECK_CUDA(cudaFree(y_d - shift));
    CHECK_CUDA(cudaFree(dy_d - shift)); CHECK_CUDA(cudaFree(dx_d - shift));
    free(x); free(dy); free(y); free(dx); free(y_ref); free(dx_ref);
}

static void test_avgpool(void **state) {
    (void)state;
    const int shapes[][3] = {{1, 1, 1},   {2, 1, 5},    {3, 4, 2048}, {128, 4, 2048}, {16, 49, 2048},
                             {5, 7, 3},   {2, 300, 6},  {8, 64, 130}, {4, 9, 36},     {1, 1000, 4}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        check_avgpool(shapes[i][0], shapes[i][1], shapes[i][2], 0, 500 + i);
    check_avgpool(8, 16, 64, 1, 520); /* C % 4 == 0 but misaligned */
}

static void test_avgpool_gradcheck(void **state) {
    (void)state;
    const int N = 2, HW = 9, C = 6;
    uint64_t rng = 600;
    size_t nx = (size_t)N * HW * C, ny = (size_t)N * C;
    float *x = host_alloc(nx), *w = host_alloc(ny), *y = host_alloc(ny), *dx = host_alloc(nx);
    test_fill_uniform(x, nx, &rng, -2.0f, 2.0f);
    test_fill_uniform(w, ny, &rng, -1.0f, 1.0f);
    float *x_d = dev_alloc(nx), *y_d = dev_alloc(ny), *w_d = dev_alloc(ny), *dx_d = dev_alloc(nx);
    upload(x_d, x, nx);
    upload(w_d, w, ny);
    avgpool_global_backward(dx_d, w_d, N, HW, C, ELEM_F32, 0);
    test_to_host(dx, dx_d, nx);
    for (int t = 0; t < 16; t++) {
        size_t i = test_rand_u64(&rng) % nx;
        float v = x[i], step = 1e-2f * fmaxf(fabsf(v), 0.5f), at[2] = {v + step, v - step};
        double loss[2];
        for (int side = 0; side < 2; side++) {
            upload(x_d + i, &at[side], 1);
            avgpool_global_forward(y_d, x_d, N, HW, C, ELEM_F32, 0);
            test_to_host(y, y_d, ny);
            loss[side] = 0.0;
            for (size_t o = 0; o < ny; o++) loss[side] += (double)w[o] * y[o];
        }
        upload(x_d + i, &v, 1);
        double fd = (loss[0] - loss[1]) / ((double)at[0] - (double)at[1]);
        if (!(fabs(fd - dx[i]) <= 1e-2 * fabs(dx[i]) + 1e-5)) {
            fprintf(stderr, "avgpool gradcheck: dx[%zu] backward %.6g, finite difference %.6g\n", i, dx[i], fd);
            fail();
        }
    }
    CHECK_CUDA(cudaFree(x_d)); CHECK_CUDA(cudaFree(y_d)); CHECK_CUDA(cudaFree(w_d)); CHECK_CUDA(cudaFree(dx_d));
    free(x); free(w); free(y); free(dx);
}

int main(void) {
    test_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maxpool),
        cmocka_unit_test(test_maxpool_misaligned),
        cmocka_unit_test(test_maxpool_stem),
        cmocka_unit_test(test_maxpool_nan),
        cmocka_unit_test(test_maxpool_gradcheck),
        cmocka_unit_test(test_avgpool),
        cmocka_unit_test(test_avgpool_gradcheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
