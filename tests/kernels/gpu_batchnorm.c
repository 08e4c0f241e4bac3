/* Batch norm kernels against a double-precision CPU reference: train forward (batch statistics,
 * running statistics, residual and activation - none, ReLU with the residual before it, SiLU with
 * the residual after it - in every combination), inference forward, backward (dx, dresidual,
 * dgamma, dbeta), the scalar path (C % 4 != 0, misaligned pointers), |mean| >> std,
 * rows = 1, big layers, scratch reuse across calls and shapes and inside a replayed CUDA graph,
 * and a finite-difference check of the backward pass against the GPU forward. The backward's
 * ReLU mask from each source: y, the bits the forward kept (checked bit for bit against y > 0),
 * and x recomputed where no residual joined. Outputs are poisoned with NaN before every call. */
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

#define EPS 1e-5f
#define MOMENTUM 0.1f
#define MAX_C 2048

/* One scratch for the whole file, zeroed once like the arena's: every call must leave it ready. */
static void *scratch;
static size_t scratch_bytes;

/* ---- helpers ------------------------------------------------------------------------------- */

typedef struct err_acc {
    double num, den;
    int bad;
} err_acc;

static void err_add(err_acc *e, float got, double want) {
    if (!isfinite(got)) e->bad = 1;
    double d = (double)got - want;
    e->num += d * d;
    e->den += want * want;
}

static double err_value(const err_acc *e) {
    if (e->bad) return INFINITY;
    return e->den > 0 ? sqrt(e->num / e->den) : sqrt(e->num);
}

static void expect_err(const char *what, int rows, int C, double err, double tol) {
    if (!(err < tol)) {
        fprintf(stderr, "%s (rows=%d C=%d): relative error %.3g, expected < %.1g\n", what, rows, C, err, tol);
        fail();
    }
}

static float *dev_alloc(size_t n) {
    float *d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&d, (n + 4) * sizeof(float)));
    test_poison(d, n + 4);
    return d;
}

static void upload(float *device, const float *host, size_t n) {
    CHECK_CUDA(cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice));
}

static float *host_alloc(size_t n) {
    float *h = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(h);
    return h;
}

static void assert_scratch_clean(void) {
    unsigned char *h = malloc(scratch_bytes);
    assert_non_null(h);
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(h, scratch, scratch_bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < scratch_bytes; i++)
        if (h[i]) {
            fprintf(stderr, "scratch byte %zu is %d after a call: the next call would start dirty\n", i, h[i]);
            fail();
        }
    free(h);
}

/* Host inputs of one layer: x has a per-channel offset and spread (conv outputs are not centred). */
typedef struct layer {
    int rows, C;
    float *x, *res, *gamma, *beta, *rmean, *rvar, *dy;
} layer;

static void layer_make(layer *L, int rows, int C, uint64_t *rng, double offset_scale, double spread) {
    size_t n = (size_t)rows * C;
    L->rows = rows;
    L->C = C;
    L->x = host_alloc(n);
    L->res = host_alloc(n);
    L->dy = host_alloc(n);
    L->gamma = host_alloc(C);
    L->beta = host_alloc(C);
    L->rmean = host_alloc(C);
    L->rvar = host_alloc(C);
    float *offset = host_alloc(C), *scale = host_alloc(C);
    for (int c = 0; c < C; c++) {
        offset[c] = (float)offset_scale * test_rand_uniform(rng, -1.0f, 1.0f);
        scale[c] = (float)spread * test_rand_uniform(rng, 0.5f, 2.0f);
        float g = test_rand_uniform(rng, 0.5f, 1.5f);
        L->gamma[c] = test_rand_u64(rng) & 1 ? g : -g;
        L->beta[c] = test_rand_uniform(rng, -0.5f, 0.5f);
        L->rmean[c] = test_rand_uniform(rng, -1.0f, 1.0f);
        L->rvar[c] = test_rand_uniform(rng, 0.5f, 2.0f);
    }
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % C);
        L->x[i] = offset[c] + scale[c] * test_rand_uniform(rng, -1.7f, 1.7f);
        L->res[i] = test_rand_uniform(rng, -1.0f, 1.0f);
        L->dy[i] = test_rand_uniform(rng, -1.0f, 1.0f);
    }
    free(offset);
    free(scale);
}

static void layer_free(layer *L) {
    free(L->x); free(L->res); free(L->dy); free(L->gamma); free(L->beta); free(L->rmean); free(L->rvar);
}

/* ---- reference ----------------------------------------------------------------------------- */

/* Two-pass batch statistics in double. */
static void ref_stats(double *mean, double *var, const float *x, int rows, int C) {
    for (int c = 0; c < C; c++) mean[c] = var[c] = 0.0;
    for (size_t r = 0; r < (size_t)rows; r++)
        for (int c = 0; c < C; c++) mean[c] += x[r * C + c];
    for (int c = 0; c < C; c++) mean[c] /= rows;
    for (size_t r = 0; r < (size_t)rows; r++)
        for (int c = 0; c < C; c++) {
            double d = x[r * C + c] - mean[c];
            var[c] += d * d;
        }
    for (int c = 0; c < C; c++) var[c] /= rows;
}

static double ref_pre(const layer *L, const double *mean, const double *invstd, size_t i, int with_res) {
    int c = (int)(i % L->C);
    return L->gamma[c] * (L->x[i] - mean[c]) * invstd[c] + L->beta[c] + (with_res ? L->res[i] : 0.0);
}

static double ref_sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }

/* The layer's output: ReLU takes the residual inside, SiLU adds it after the activation. */
static double ref_out(const layer *L, const double *mean, const double *invstd, size_t i, int with_res, int act) {
    if (act == ACT_SILU) {
        double z = ref_pre(L, mean, invstd, i, 0);
        return z * ref_sigmoid(z) + (with_res ? L->res[i] : 0.0);
    }
    double pre = ref_pre(L, mean, invstd, i, with_res);
    return act == ACT_RELU && pre < 0 ? 0.0 : pre;
}

/* ---- forward ------------------------------------------------------------------------------- */

typedef struct dev_layer {
    float *x, *res, *gamma, *beta, *rmean, *rvar, *y, *mean, *invstd;
    float *dy, *dx, *dres, *dgamma, *dbeta;
    uint32_t *bits; /* the ReLU mask the forward may keep; NULL where its layout does not fit C */
} dev_layer;

/* Where the backward takes the ReLU mask from. */
enum { MASK_FROM_Y, MASK_FROM_BITS, MASK_FROM_X };

/* shift > 0 offsets the activation tensors by one float: C % 4 == 0 but not 16-byte aligned. */
static void dev_layer_make(dev_layer *D, const layer *L, int shift) {
    size_t n = (size_t)L->rows * L->C;
    float **acts[] = {&D->x, &D->res, &D->y, &D->dy, &D->dx, &D->dres};
    for (size_t k = 0; k < sizeof acts / sizeof *acts; k++) *acts[k] = dev_alloc(n + 1) + shift;
    float **chans[] = {&D->gamma, &D->beta, &D->rmean, &D->rvar, &D->mean, &D->invstd, &D->dgamma, &D->dbeta};
    for (size_t k = 0; k < sizeof chans / sizeof *chans; k++) *chans[k] = dev_alloc(L->C);
    upload(D->x, L->x, n);
    upload(D->res, L->res, n);
    upload(D->dy, L->dy, n);
    upload(D->gamma, L->gamma, L->C);
    upload(D->beta, L->beta, L->C);
    upload(D->rmean, L->rmean, L->C);
    upload(D->rvar, L->rvar, L->C);
    size_t bits = bn_relu_mask_bytes(L->rows, L->C);
    D->bits = NULL;
    if (bits) CHECK_CUDA(cudaMalloc((void **)&D->bits, bits));
}

static void dev_layer_free(dev_layer *D, int shift) {
    float *acts[] = {D->x, D->res, D->y, D->dy, D->dx, D->dres};
    for (size_t k = 0; k < sizeof acts / sizeof *acts; k++) CHECK_CUDA(cudaFree(acts[k] - shift));
    float *chans[] = {D->gamma, D->beta, D->rmean, D->rvar, D->mean, D->invstd, D->dgamma, D->dbeta};
    for (size_t k = 0; k < sizeof chans / sizeof *chans; k++) CHECK_CUDA(cudaFree(chans[k]));
    if (D->bits) CHECK_CUDA(cudaFree(D->bits));
}

/* Checks y, mean, invstd and the running statistics of a train forward already run on D;
 * rmean0/rvar0 are the running statistics before the call. */
static void check_train_outputs(const layer *L, const dev_layer *D, const float *rmean0,
                                const float *rvar0, int act, int with_res) {
    int rows = L->rows, C = L->C;
    size_t n = (size_t)rows * C;
    double *mean = malloc(C * sizeof(double)), *var = malloc(C * sizeof(double));
    double *invstd = malloc(C * sizeof(double));
    float *y = host_alloc(n), *got = host_alloc(C);
    ref_stats(mean, var, L->x, rows, C);
    for (int c = 0; c < C; c++) invstd[c] = 1.0 / sqrt(var[c] + EPS);

    /* y is checked given the float mean the kernel kept (the mean is checked on its own): with
     * |mean| >> std, one float rounding of the mean is already a visible shift of y. */
    test_to_host(got, D->mean, C);
    expect_err("batch mean", rows, C, test_rel_err(got, mean, C), 1e-5);
    double *kept_mean = malloc(C * sizeof(double));
    for (int c = 0; c < C; c++) kept_mean[c] = got[c];
    test_to_host(y, D->y, n);
    err_acc e = {0};
    for (size_t i = 0; i < n; i++) err_add(&e, y[i], ref_out(L, kept_mean, invstd, i, with_res, act));
    expect_err("train forward y", rows, C, err_value(&e), 1e-5);
    free(kept_mean);

    test_to_host(got, D->invstd, C);
    expect_err("batch invstd", rows, C, test_rel_err(got, invstd, C), 1e-4);
    double *want = malloc(C * sizeof(double));
    for (int c = 0; c < C; c++) want[c] = (1.0 - MOMENTUM) * rmean0[c] + MOMENTUM * mean[c];
    test_to_host(got, D->rmean, C);
    expect_err("running mean", rows, C, test_rel_err(got, want, C), 1e-5);
    for (int c = 0; c < C; c++) {
        double unbiased = rows > 1 ? var[c] * rows / (rows - 1.0) : var[c];
        want[c] = (1.0 - MOMENTUM) * rvar0[c] + MOMENTUM * unbiased;
    }
    test_to_host(got, D->rvar, C);
    expect_err("running var", rows, C, test_rel_err(got, want, C), 1e-4);
    free(mean); free(var); free(invstd); free(y); free(got); free(want);
}

/* Every bit of the kept mask is y > 0 of the y the same call wrote. */
static void check_mask_bits(const dev_layer *D, int rows, int C) {
    size_t n = (size_t)rows * C;
    float *y = host_alloc(n);
    uint32_t *bits = malloc(n / 8 + 4);
    assert_non_null(bits);
    test_to_host(y, D->y, n);
    CHECK_CUDA(cudaMemcpy(bits, D->bits, n / 8, cudaMemcpyDeviceToHost));
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) wrong += ((bits[i / 32] >> (i % 32)) & 1u) != (y[i] > 0.0f);
    if (wrong) fail_msg("mask bits (rows=%d C=%d): %zu of %zu differ from y > 0", rows, C, wrong, n);
    free(y), free(bits);
}

static void run_train_forward(const layer *L, const dev_layer *D, int act, int with_res, int keep_bits) {
    test_poison(D->y, (size_t)L->rows * L->C);
    test_poison(D->mean, L->C);
    test_poison(D->invstd, L->C);
    if (keep_bits) CHECK_CUDA(cudaMemset(D->bits, 0xA5, bn_relu_mask_bytes(L->rows, L->C)));
    bn_act_forward_train(D->y, keep_bits ? D->bits : NULL, D->mean, D->invstd, D->rmean, D->rvar, D->x,
                         with_res ? D->res : NULL, D->gamma, D->beta, L->rows, L->C, EPS, MOMENTUM, (act_kind)act,
                         ELEM_F32, scratch, 0);
    if (keep_bits) check_mask_bits(D, L->rows, L->C);
}

/* Two calls per case with fresh data each: the second starts from the scratch the first left. */
static void check_train_case(int rows, int C, int act, int with_res, int shift, double offset_scale,
                             double spread, uint64_t seed) {
    uint64_t rng = seed;
    for (int call = 0; call < 2; call++) {
        layer L;
        dev_layer D;
        layer_make(&L, rows, C, &rng, offset_scale, spread);
        dev_layer_make(&D, &L, shift);
        run_train_forward(&L, &D, act, with_res, act == ACT_RELU && D.bits != NULL);
        check_train_outputs(&L, &D, L.rmean, L.rvar, act, with_res);
        assert_scratch_clean();
        dev_layer_free(&D, shift);
        layer_free(&L);
    }
}

static const int SHAPES[][2] = {{1, 8},    {2, 3},    {7, 5},      {33, 36},  {128, 2048},
                                {1000, 64}, {517, 100}, {4096, 130}, {8192, 512}, {20000, 64}};
#define NSHAPES (sizeof SHAPES / sizeof *SHAPES)

static void test_train_forward(void **state) {
    (void)state;
    for (size_t s = 0; s < NSHAPES; s++)
        for (int mode = 0; mode < 6; mode++) /* activation x residual */
            check_train_case(SHAPES[s][0], SHAPES[s][1], mode % 3, mode / 3, 0, 2.0, 1.0,
                             1000 + 10 * s + mode);
}

static void test_train_forward_scalar_paths(void **state) {
    (void)state;
    check_train_case(300, 64, ACT_RELU, 1, 1, 2.0, 1.0, 77); /* C % 4 == 0 but misaligned */
    check_train_case(301, 7, ACT_RELU, 1, 0, 2.0, 1.0, 78);
    check_train_case(5, 2049, ACT_NONE, 1, 0, 2.0, 1.0, 79);
    check_train_case(300, 64, ACT_SILU, 1, 1, 2.0, 1.0, 83);
    check_train_case(301, 7, ACT_SILU, 1, 0, 2.0, 1.0, 84);
}

/* Conv outputs can have |mean| >> std: 1e4 here, where E[x^2] - E[x]^2 in float would be noise. */
static void test_train_forward_large_mean(void **state) {
    (void)state;
    check_train_case(4096, 64, ACT_NONE, 0, 0, 100.0, 0.01, 80);
    check_train_case(2000, 13, ACT_RELU, 1, 0, 100.0, 0.01, 81);
    check_train_case(2000, 24, ACT_SILU, 1, 0, 100.0, 0.01, 85);
}

/* The biggest ResNet layer shape: the stem's 128 x 56 x 56 x 64 at 224 px. */
static void test_train_forward_big(void **state) {
    (void)state;
    check_train_case(401408, 64, ACT_RELU, 1, 0, 2.0, 1.0, 82);
    check_train_case(131072, 24, ACT_SILU, 1, 0, 2.0, 1.0, 86); /* EfficientNetV2-S at 64 px: stage 0 */
}

/* ---- inference ----------------------------------------------------------------------------- */

static void test_infer_forward(void **state) {
    (void)state;
    uint64_t rng = 2000;
    for (size_t s = 0; s < NSHAPES; s++)
        for (int mode = 0; mode < 9; mode++) {
            /* activation x (no residual, residual, residual on misaligned pointers) */
            int act = mode % 3, with_res = mode / 3 > 0, shift = mode / 3 == 2;
            layer L;
            dev_layer D;
            layer_make(&L, SHAPES[s][0], SHAPES[s][1], &rng, 2.0, 1.0);
            int rows = L.rows, C = L.C;
            size_t n = (size_t)rows * C;
            dev_layer_make(&D, &L, shift);
            test_poison(D.y, n);
            bn_act_forward_infer(D.y, D.x, with_res ? D.res : NULL, D.gamma, D.beta, D.rmean, D.rvar,
                                 rows, C, EPS, act, ELEM_F32, 0);
            float *y = host_alloc(n);
            test_to_host(y, D.y, n);
            err_acc e = {0};
            double *rmean = malloc(C * sizeof(double)), *rinv = malloc(C * sizeof(double));
            for (int c = 0; c < C; c++) rmean[c] = L.rmean[c], rinv[c] = 1.0 / sqrt((double)L.rvar[c] + EPS);
            for (size_t i = 0; i < n; i++) err_add(&e, y[i], ref_out(&L, rmean, rinv, i, with_res, act));
            free(rmean);
            free(rinv);
            expect_err("inference y", rows, C, err_value(&e), 1e-5);
            free(y);
            dev_layer_free(&D, shift);
            layer_free(&L);
        }
}

/* ---- backward ------------------------------------------------------------------------------ */

/* Runs the train forward and the backward on D; checks dx, dresidual, dgamma, dbeta against the
 * reference computed from the same inputs the backward was given (dy, x, y, gamma, mean, invstd). */
static void check_backward_case(const layer *L, const dev_layer *D, int act, int with_res, int want_dres,
                                int mask_source) {
    int rows = L->rows, C = L->C;
    size_t n = (size_t)rows * C;
    run_train_forward(L, D, act, with_res, mask_source == MASK_FROM_BITS);
    test_poison(D->dx, n);
    test_poison(D->dres, n);
    test_poison(D->dgamma, C);
    test_poison(D->dbeta, C);
    bn_act_backward(D->dx, want_dres ? D->dres : NULL, D->dgamma, D->dbeta, D->dy, D->x,
                    mask_source == MASK_FROM_Y ? D->y : NULL, mask_source == MASK_FROM_BITS ? D->bits : NULL,
                    D->gamma, D->beta, D->mean, D->invstd, rows, C, (act_kind)act, ELEM_F32, scratch, 0);
    float *y = host_alloc(n), *dx = host_alloc(n), *dres = host_alloc(n);
    float *mean = host_alloc(C), *invstd = host_alloc(C), *got = host_alloc(C);
    test_to_host(y, D->y, n);
    test_to_host(dx, D->dx, n);
    test_to_host(dres, D->dres, n);
    test_to_host(mean, D->mean, C);
    test_to_host(invstd, D->invstd, C);
    double *dgamma = calloc(C, sizeof(double)), *dbeta = calloc(C, sizeof(double));
    /* g: dy through the activation (the ReLU mask from y; SiLU's derivative at the pre-activation
     * recomputed from the kept mean and invstd) */
    double *g = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % C);
        double xhat = (L->x[i] - (double)mean[c]) * invstd[c];
        if (act == ACT_SILU) {
            double z = L->gamma[c] * xhat + L->beta[c], sg = ref_sigmoid(z);
            g[i] = L->dy[i] * sg * (1.0 + z * (1.0 - sg));
        } else {
            g[i] = act == ACT_RELU && !(y[i] > 0.0f) ? 0.0 : L->dy[i];
        }
        dbeta[c] += g[i];
        dgamma[c] += g[i] * xhat;
    }
    /* dx = k (g - mean g - xhat mean(g xhat)) cancels almost completely for tiny batches (rows = 2:
     * dx ~ eps / var * k g), so its error is measured against the size of k g when that is larger. */
    err_acc edx = {0}, edres = {0};
    double terms = 0.0;
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % C);
        double xhat = (L->x[i] - (double)mean[c]) * invstd[c], k = (double)L->gamma[c] * invstd[c];
        err_add(&edx, dx[i], k * (g[i] - dbeta[c] / rows - xhat * dgamma[c] / rows));
        terms += k * g[i] * k * g[i];
        /* the residual's gradient: where it joined, after the SiLU (dy) or before the ReLU (g) */
        if (want_dres) err_add(&edres, dres[i], act == ACT_SILU ? L->dy[i] : g[i]);
    }
    if (edx.den < 1e-4 * terms) edx.den = 1e-4 * terms;
    expect_err("backward dx", rows, C, err_value(&edx), 1e-4);
    if (want_dres) expect_err("backward dresidual", rows, C, err_value(&edres), 1e-7);
    else for (size_t i = 0; i < n; i++) assert_true(isnan(dres[i])); /* NULL: left alone */
    test_to_host(got, D->dgamma, C);
    expect_err("backward dgamma", rows, C, test_rel_err(got, dgamma, C), 1e-4);
    test_to_host(got, D->dbeta, C);
    expect_err("backward dbeta", rows, C, test_rel_err(got, dbeta, C), 1e-4);
    assert_scratch_clean();
    free(y); free(dx); free(dres); free(mean); free(invstd); free(got); free(dgamma); free(dbeta); free(g);
}

static void test_backward(void **state) {
    (void)state;
    uint64_t rng = 3000;
    for (size_t s = 0; s < NSHAPES; s++)
        for (int mode = 0; mode < 9; mode++) {
            /* activation x (no dresidual, dresidual, dresidual on the misaligned scalar path) */
            int act = mode % 3, with_res = mode / 3 > 0, shift = mode / 3 == 2;
            layer L;
            dev_layer D;
            layer_make(&L, SHAPES[s][0], SHAPES[s][1], &rng, 2.0, 1.0);
            dev_layer_make(&D, &L, shift);
            for (int call = 0; call < 2; call++) { /* the second call reuses the scratch */
                check_backward_case(&L, &D, act, with_res, with_res, MASK_FROM_Y);
                if (act == ACT_RELU && !with_res) { /* the mask from x: dresidual shows it element by element */
                    check_backward_case(&L, &D, act, 0, 1, MASK_FROM_X);
                    check_backward_case(&L, &D, act, 0, 0, MASK_FROM_X);
                }
                if (act == ACT_RELU && with_res && D.bits) {
                    check_backward_case(&L, &D, act, 1, 1, MASK_FROM_BITS);
                    check_backward_case(&L, &D, act, 1, 0, MASK_FROM_BITS);
                }
                for (size_t i = 0; i < (size_t)L.rows * L.C; i++) L.dy[i] = test_rand_uniform(&rng, -1, 1);
                upload(D.dy, L.dy, (size_t)L.rows * L.C);
            }
            dev_layer_free(&D, shift);
            layer_free(&L);
        }
}

static void test_backward_big(void **state) {
    (void)state;
    uint64_t rng = 3100;
    layer L;
    dev_layer D;
    layer_make(&L, 401408, 64, &rng, 2.0, 1.0);
    dev_layer_make(&D, &L, 0);
    check_backward_case(&L, &D, ACT_RELU, 1, 1, MASK_FROM_Y);
    check_backward_case(&L, &D, ACT_RELU, 1, 1, MASK_FROM_BITS);
    check_backward_case(&L, &D, ACT_RELU, 0, 1, MASK_FROM_X);
    check_backward_case(&L, &D, ACT_SILU, 1, 1, MASK_FROM_Y);
    dev_layer_free(&D, 0);
    layer_free(&L);
}

/* ---- finite differences on the GPU ----------------------------------------------------------
 * L = sum(w * y) with w = dy. Each coordinate is perturbed by about 1e-2 of its size; a
 * perturbation that moves any pre-activation across the ReLU kink (checked on the host in double)
 * is skipped, so the loss is smooth on the segment. */

static double gpu_loss(const layer *L, const dev_layer *D, int act, int with_res, float *y) {
    size_t n = (size_t)L->rows * L->C;
    run_train_forward(L, D, act, with_res, 0);
    test_to_host(y, D->y, n);
    double loss = 0.0;
    for (size_t i = 0; i < n; i++) loss += (double)L->dy[i] * y[i];
    return loss;
}

/* 1 when every pre-activation keeps its side of 0 (with a margin) for the host inputs in L. */
static int away_from_kinks(const layer *L, int with_res, double margin) {
    int rows = L->rows, C = L->C;
    double *mean = malloc(C * sizeof(double)), *var = malloc(C * sizeof(double));
    ref_stats(mean, var, L->x, rows, C);
    for (int c = 0; c < C; c++) var[c] = 1.0 / sqrt(var[c] + EPS);
    int ok = 1;
    for (size_t i = 0; i < (size_t)rows * C && ok; i++)
        if (fabs(ref_pre(L, mean, var, i, with_res)) < margin) ok = 0;
    free(mean);
    free(var);
    return ok;
}

static void pre_signs(const layer *L, int with_res, signed char *sign) {
    int rows = L->rows, C = L->C;
    double *mean = malloc(C * sizeof(double)), *var = malloc(C * sizeof(double));
    ref_stats(mean, var, L->x, rows, C);
    for (int c = 0; c < C; c++) var[c] = 1.0 / sqrt(var[c] + EPS);
    for (size_t i = 0; i < (size_t)rows * C; i++) sign[i] = ref_pre(L, mean, var, i, with_res) > 0 ? 1 : -1;
    free(mean);
    free(var);
}

static void gradcheck_case(int rows, int C, int act, int with_res, uint64_t seed) {
    int relu = act == ACT_RELU; /* only the ReLU has kinks to keep away from */
    uint64_t rng = seed;
    layer L;
    dev_layer D;
    layer_make(&L, rows, C, &rng, 1.0, 1.0);
    dev_layer_make(&D, &L, 0);
    size_t n = (size_t)rows * C;
    run_train_forward(&L, &D, act, with_res, 0);
    bn_act_backward(D.dx, with_res ? D.dres : NULL, D.dgamma, D.dbeta, D.dy, D.x, D.y, NULL, D.gamma, D.beta,
                    D.mean, D.invstd, rows, C, (act_kind)act, ELEM_F32, scratch, 0);
    float *dx = host_alloc(n), *dres = host_alloc(n), *dgamma = host_alloc(C), *dbeta = host_alloc(C);
    float *y = host_alloc(n);
    test_to_host(dx, D.dx, n);
    test_to_host(dres, D.dres, n);
    test_to_host(dgamma, D.dgamma, C);
    test_to_host(dbeta, D.dbeta, C);
    signed char *sign0 = malloc(n), *sign1 = malloc(n);
    pre_signs(&L, with_res, sign0);

    struct { const char *name; float *host; float *dev; const float *grad; size_t count; } params[] = {
        {"x", L.x, D.x, dx, n}, {"gamma", L.gamma, D.gamma, dgamma, C},
        {"beta", L.beta, D.beta, dbeta, C}, {"residual", L.res, D.res, dres, n}};
    int nparams = with_res ? 4 : 3;
    for (int p = 0; p < nparams; p++) {
        double rms = 0.0;
        for (size_t i = 0; i < params[p].count; i++) rms += (double)params[p].grad[i] * params[p].grad[i];
        rms = sqrt(rms / params[p].count);
        int checked = 0;
        for (int attempt = 0; attempt < 200 && checked < 12; attempt++) {
            size_t i = test_rand_u64(&rng) % params[p].count;
            float v = params[p].host[i];
            float step = 1e-2f * fmaxf(fabsf(v), 0.5f);
            float plus = v + step, minus = v - step;
            int smooth = 1;
            if (relu) {
                params[p].host[i] = plus;
                smooth = away_from_kinks(&L, with_res, 1e-4);
                pre_signs(&L, with_res, sign1);
                if (memcmp(sign0, sign1, n)) smooth = 0;
                params[p].host[i] = minus;
                smooth = smooth && away_from_kinks(&L, with_res, 1e-4);
                pre_signs(&L, with_res, sign1);
                if (memcmp(sign0, sign1, n)) smooth = 0;
            }
            params[p].host[i] = v;
            if (!smooth) continue;
            upload(params[p].dev + i, &plus, 1);
            double loss_plus = gpu_loss(&L, &D, act, with_res, y);
            upload(params[p].dev + i, &minus, 1);
            double loss_minus = gpu_loss(&L, &D, act, with_res, y);
            upload(params[p].dev + i, &v, 1);
            double fd = (loss_plus - loss_minus) / ((double)plus - (double)minus);
            double an = params[p].grad[i];
            if (!(fabs(fd - an) <= 1e-2 * (fabs(an) + 0.1 * rms) + 1e-6)) {
                fprintf(stderr, "gradcheck rows=%d C=%d act=%d residual=%d: d%s[%zu] backward %.6g, "
                        "finite difference %.6g\n", rows, C, act, with_res, params[p].name, i, an, fd);
                fail();
            }
            checked++;
        }
        if (checked < 4) {
            fprintf(stderr, "gradcheck rows=%d C=%d: only %d smooth coordinates of %s\n", rows, C, checked,
                    params[p].name);
            fail();
        }
    }
    free(dx); free(dres); free(dgamma); free(dbeta); free(y); free(sign0); free(sign1);
    dev_layer_free(&D, 0);
    layer_free(&L);
}

static void test_gradcheck(void **state) {
    (void)state;
    gradcheck_case(24, 6, ACT_RELU, 1, 4000);  /* scalar path */
    gradcheck_case(32, 8, ACT_RELU, 1, 4001);  /* float4 path */
    gradcheck_case(40, 12, ACT_NONE, 0, 4002);
    gradcheck_case(16, 8, ACT_RELU, 0, 4003);
    gradcheck_case(20, 5, ACT_NONE, 1, 4004);
    gradcheck_case(24, 6, ACT_SILU, 1, 4005);  /* SiLU, scalar path, skip after the activation */
    gradcheck_case(32, 8, ACT_SILU, 1, 4006);
    gradcheck_case(40, 12, ACT_SILU, 0, 4007);
}

/* ---- a captured graph: two layers sharing the scratch, replayed with new inputs ------------- */

static void test_graph_replay(void **state) {
    (void)state;
    uint64_t rng = 5000;
    layer L1, L2;
    dev_layer D1, D2;
    layer_make(&L1, 2048, 64, &rng, 2.0, 1.0);
    layer_make(&L2, 512, 256, &rng, 2.0, 1.0);
    dev_layer_make(&D1, &L1, 0);
    dev_layer_make(&D2, &L2, 0);
    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    bn_act_forward_train(D1.y, D1.bits, D1.mean, D1.invstd, D1.rmean, D1.rvar, D1.x, D1.res, D1.gamma, D1.beta,
                         L1.rows, L1.C, EPS, MOMENTUM, ACT_RELU, ELEM_F32, scratch, stream);
    bn_act_forward_train(D2.y, NULL, D2.mean, D2.invstd, D2.rmean, D2.rvar, D2.x, NULL, D2.gamma, D2.beta,
                         L2.rows, L2.C, EPS, MOMENTUM, ACT_NONE, ELEM_F32, scratch, stream);
    bn_act_backward(D2.dx, NULL, D2.dgamma, D2.dbeta, D2.dy, D2.x, D2.y, NULL, D2.gamma, D2.beta, D2.mean,
                    D2.invstd, L2.rows, L2.C, ACT_NONE, ELEM_F32, scratch, stream);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    float *rmean0 = host_alloc(64), *rvar0 = host_alloc(64);
    for (int replay = 0; replay < 3; replay++) {
        for (size_t i = 0; i < (size_t)L1.rows * L1.C; i++) L1.x[i] = test_rand_uniform(&rng, -3, 3);
        upload(D1.x, L1.x, (size_t)L1.rows * L1.C);
        test_to_host(rmean0, D1.rmean, 64);
        test_to_host(rvar0, D1.rvar, 64);
        test_poison(D1.y, (size_t)L1.rows * L1.C);
        test_poison(D1.mean, 64);
        test_poison(D1.invstd, 64);
        test_poison(D2.dgamma, L2.C);
        CHECK_CUDA(cudaDeviceSynchronize());
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        check_train_outputs(&L1, &D1, rmean0, rvar0, 1, 1);
        check_mask_bits(&D1, L1.rows, L1.C);
        float *dgamma = host_alloc(L2.C);
        test_to_host(dgamma, D2.dgamma, L2.C);
        for (int c = 0; c < L2.C; c++) assert_true(isfinite(dgamma[c]));
        free(dgamma);
        assert_scratch_clean();
    }
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaStreamDestroy(stream));
    free(rmean0); free(rvar0);
    dev_layer_free(&D1, 0);
    dev_layer_free(&D2, 0);
    layer_free(&L1);
    layer_free(&L2);
}

/* A NaN in a channel's input makes that channel's statistics and every output NaN, through the
 * ReLU as well (PyTorch's relu keeps NaN): a diverged run must show a NaN loss, not train on. */
static void test_relu_keeps_nan(void **state) {
    (void)state;
    enum { ROWS = 64, C = 8 };
    float *h = host_alloc(ROWS * C), *gamma_h = host_alloc(C), *beta_h = host_alloc(C), *ones = host_alloc(C);
    for (int i = 0; i < ROWS * C; i++) h[i] = (float)(i % 7) - 3.0f;
    h[5 * C + 2] = NAN; /* channel 2 */
    for (int c = 0; c < C; c++) gamma_h[c] = 1.0f, beta_h[c] = 0.0f, ones[c] = 1.0f;
    float *x = dev_alloc(ROWS * C), *y = dev_alloc(ROWS * C), *gamma = dev_alloc(C), *beta = dev_alloc(C);
    float *mean = dev_alloc(C), *invstd = dev_alloc(C), *rmean = dev_alloc(C), *rvar = dev_alloc(C);
    upload(x, h, ROWS * C), upload(gamma, gamma_h, C), upload(beta, beta_h, C);
    upload(rmean, beta_h, C), upload(rvar, ones, C);
    bn_act_forward_train(y, NULL, mean, invstd, rmean, rvar, x, NULL, gamma, beta, ROWS, C, EPS, MOMENTUM,
                         ACT_RELU, ELEM_F32, scratch, 0);
    test_to_host(h, y, ROWS * C);
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < C; c++) {
            if (c == 2 && !isnan(h[r * C + c])) fail_msg("row %d of the NaN channel: %g, expected NaN", r, h[r * C + c]);
            if (c != 2 && !(h[r * C + c] >= 0.0f)) fail_msg("row %d channel %d: %g, expected >= 0", r, c, h[r * C + c]);
        }
    assert_scratch_clean();
    float *bufs[] = {x, y, gamma, beta, mean, invstd, rmean, rvar};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) CHECK_CUDA(cudaFree(bufs[i]));
    free(h), free(gamma_h), free(beta_h), free(ones);
}

static int setup(void **state) {
    (void)state;
    scratch_bytes = bn_scratch_bytes(401408, MAX_C + 1);
    expect_ge(scratch_bytes, bn_scratch_bytes(1, 1));
    CHECK_CUDA(cudaMalloc(&scratch, scratch_bytes));
    CHECK_CUDA(cudaMemset(scratch, 0, scratch_bytes));
    return 0;
}

static int teardown(void **state) {
    (void)state;
    CHECK_CUDA(cudaFree(scratch));
    return 0;
}

int main(void) {
    test_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_forward),
        cmocka_unit_test(test_train_forward_scalar_paths),
        cmocka_unit_test(test_train_forward_large_mean),
        cmocka_unit_test(test_train_forward_big),
        cmocka_unit_test(test_infer_forward),
        cmocka_unit_test(test_backward),
        cmocka_unit_test(test_backward_big),
        cmocka_unit_test(test_gradcheck),
        cmocka_unit_test(test_graph_replay),
        cmocka_unit_test(test_relu_keeps_nan),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
