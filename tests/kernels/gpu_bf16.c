/* The bfloat16 (--precision bf16) paths on the GPU: the casts bit for bit against round-to-
 * nearest-even on the host; batch norm (ReLU with residual, none, SiLU with residual; the ReLU's
 * mask from y, from the forward's bits and recomputed from x, each element as y > 0), pooling,
 * the cuBLASLt linear layer and cuDNN convolutions (the 3-channel stem included) on bfloat16
 * tensors against a double-precision reference computed from the same bfloat16 inputs, so what
 * remains is float accumulation plus one bfloat16 rounding of each output (relative 2^-9 per
 * element, about 2e-3 as an L2 norm); and a whole ResNet-26 step in bf16 against the same
 * weights in float32 (loss within bfloat16's reach, a repeated batch learned). */
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
#include "kernels/check.h"
#include "models/layers/conv.h"
#include "models/layers/linear.h"
#include "models/session.h"
#include "tests/support/testutil.h"

static job_context ctx;
static uint64_t rng = 4242;

/* bfloat16 output: one rounding per element, so an L2-relative error near 2^-9 / sqrt(3). */
#define BF16_OUT 6e-3
/* float results of float arithmetic on exact bfloat16 inputs */
#define F32_SUMS 1e-4

/* Rounds x in place to bfloat16 values and returns a device copy in bfloat16. */
static uint16_t *bf16_device(float *x, size_t n) {
    uint16_t *h = malloc(n * sizeof *h), *d = NULL;
    for (size_t i = 0; i < n; i++) h[i] = test_bf16_of(x[i]), x[i] = test_float_of_bf16(h[i]);
    CHECK_CUDA(cudaMalloc((void **)&d, n * sizeof *d));
    CHECK_CUDA(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice));
    free(h);
    return d;
}
static uint16_t *bf16_poisoned(size_t n) {
    uint16_t *d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&d, n * sizeof *d));
    CHECK_CUDA(cudaMemset(d, 0xff, n * sizeof *d)); /* 0xffff is a NaN */
    return d;
}
static float *bf16_host(const void *d, size_t n) {
    uint16_t *h = malloc(n * sizeof *h);
    float *f = malloc(n * sizeof *f);
    CHECK_CUDA(cudaMemcpy(h, d, n * sizeof *h, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) f[i] = test_float_of_bf16(h[i]);
    free(h);
    return f;
}
static float *randf(size_t n, float lo, float hi) {
    float *x = malloc(n * sizeof *x);
    test_fill_uniform(x, n, &rng, lo, hi);
    return x;
}

/* ---- casts ---------------------------------------------------------------------------------*/

static void test_casts(void **state) {
    (void)state;
    size_t n = 100003; /* odd: the last element is cast alone */
    float *x = randf(n, -3e4f, 3e4f);
    x[0] = 0.0f, x[1] = -0.0f, x[2] = INFINITY, x[3] = 1e-40f, x[4] = 3.3895314e38f, x[5] = 1.00390625f;
    x[6] = 1.01171875f; /* exact ties of bfloat16's grid: to even */
    float *d_x = test_to_device(x, n), *d_back = test_to_device(x, n);
    uint16_t *d_h = bf16_poisoned(n), *h = malloc(n * sizeof *h);
    cast_f32_to_bf16(d_h, d_x, n, 0);
    cast_bf16_to_f32(d_back, d_h, n, 0);
    CHECK_CUDA(cudaMemcpy(h, d_h, n * sizeof *h, cudaMemcpyDeviceToHost));
    float *back = malloc(n * sizeof *back);
    test_to_host(back, d_back, n);
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) wrong += h[i] != test_bf16_of(x[i]) || back[i] != test_float_of_bf16(h[i]);
    printf("casts: %zu of %zu elements differ from round-to-nearest-even\n", wrong, n);
    assert_int_equal(wrong, 0);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_back)); CHECK_CUDA(cudaFree(d_h));
    free(x), free(h), free(back);
}

/* ---- batch norm ----------------------------------------------------------------------------*/

static double act_of(int act, double z, double res) {
    if (act == ACT_RELU) return fmax(z + res, 0.0);
    if (act == ACT_SILU) return z / (1.0 + exp(-z)) + res;
    return z + res;
}

/* Where the backward takes the ReLU mask from (kernels.h): y, the forward's bits, or x. */
enum { MASK_FROM_Y, MASK_FROM_BITS, MASK_FROM_X };

static void check_bn(int rows, int C, int act, int with_res, int mask_source) {
    size_t n = (size_t)rows * C;
    float *x = randf(n, -2.0f, 3.0f), *res = randf(n, -1.0f, 1.0f), *dy = randf(n, -1.0f, 1.0f);
    float *gamma = randf((size_t)C, 0.5f, 1.5f), *beta = randf((size_t)C, -0.3f, 0.3f);
    uint16_t *d_x = bf16_device(x, n), *d_res = bf16_device(res, n), *d_dy = bf16_device(dy, n);
    uint16_t *d_y = bf16_poisoned(n), *d_dx = bf16_poisoned(n), *d_dres = bf16_poisoned(n);
    float *d_gamma = test_to_device(gamma, C), *d_beta = test_to_device(beta, C);
    float *d_mean = test_to_device(gamma, C), *d_invstd = test_to_device(gamma, C);
    float *d_dgamma = test_to_device(gamma, C), *d_dbeta = test_to_device(gamma, C);
    void *scratch = NULL;
    CHECK_CUDA(cudaMalloc(&scratch, bn_scratch_bytes(rows, C)));
    CHECK_CUDA(cudaMemset(scratch, 0, bn_scratch_bytes(rows, C)));
    uint32_t *d_bits = NULL;
    if (mask_source == MASK_FROM_BITS) CHECK_CUDA(cudaMalloc((void **)&d_bits, bn_relu_mask_bytes(rows, C)));
    const void *mask_y = mask_source == MASK_FROM_Y ? d_y : NULL;
    /* A ReLU's dresidual is its mask applied to dy, element by element: asked for even without a
     * residual, so that a mask that differs from the stored y > 0 anywhere shows. */
    int want_dres = with_res || act == ACT_RELU;
    bn_act_forward_train(d_y, d_bits, d_mean, d_invstd, NULL, NULL, d_x, with_res ? d_res : NULL, d_gamma, d_beta,
                         rows, C, 1e-5f, 0.1f, (act_kind)act, ELEM_BF16, scratch, 0);
    bn_act_backward(d_dx, want_dres ? d_dres : NULL, d_dgamma, d_dbeta, d_dy, d_x, mask_y, d_bits, d_gamma, d_beta,
                    d_mean, d_invstd, rows, C, (act_kind)act, ELEM_BF16, scratch, 0);
    float *y = bf16_host(d_y, n), *dx = bf16_host(d_dx, n), *dres = want_dres ? bf16_host(d_dres, n) : NULL;
    double e_dx_own_mask = 0.0;
    if (act == ACT_RELU) {
        size_t wrong = 0;
        for (size_t i = 0; i < n; i++) wrong += dres[i] != (y[i] > 0.0f ? dy[i] : 0.0f);
        if (wrong) fail_msg("bn bf16 rows %d C %d mask source %d: %zu of %zu elements masked unlike y > 0", rows, C,
                            mask_source, wrong, n);
        /* Without dresidual the dx pass masks dy itself: the same dx, up to the sums' atomics. */
        bn_act_backward(d_dx, NULL, d_dgamma, d_dbeta, d_dy, d_x, mask_y, d_bits, d_gamma, d_beta, d_mean, d_invstd,
                        rows, C, (act_kind)act, ELEM_BF16, scratch, 0);
        float *dx_own_mask = bf16_host(d_dx, n);
        double *dx_first = malloc(n * sizeof *dx_first);
        for (size_t i = 0; i < n; i++) dx_first[i] = dx[i];
        e_dx_own_mask = test_rel_err(dx_own_mask, dx_first, n);
        free(dx_own_mask), free(dx_first);
    }
    float *mean = malloc(C * sizeof(float)), *invstd = malloc(C * sizeof(float));
    float *dgamma = malloc(C * sizeof(float)), *dbeta = malloc(C * sizeof(float));
    test_to_host(mean, d_mean, C), test_to_host(invstd, d_invstd, C);
    test_to_host(dgamma, d_dgamma, C), test_to_host(dbeta, d_dbeta, C);

    double *m = calloc(C, sizeof *m), *inv = calloc(C, sizeof *inv), *y_ref = calloc(n, sizeof *y_ref);
    double *g = calloc(n, sizeof *g), *sg = calloc(C, sizeof *sg), *sgx = calloc(C, sizeof *sgx);
    double *dx_ref = calloc(n, sizeof *dx_ref), *dres_ref = calloc(n, sizeof *dres_ref);
    for (int c = 0; c < C; c++) {
        double s = 0, ss = 0;
        for (int r = 0; r < rows; r++) s += x[(size_t)r * C + c];
        m[c] = s / rows;
        for (int r = 0; r < rows; r++) ss += (x[(size_t)r * C + c] - m[c]) * (x[(size_t)r * C + c] - m[c]);
        inv[c] = 1.0 / sqrt(ss / rows + 1e-5);
    }
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % (size_t)C);
        double xhat = (x[i] - m[c]) * inv[c], z = gamma[c] * xhat + beta[c];
        y_ref[i] = act_of(act, z, with_res ? res[i] : 0.0);
        /* the ReLU mask from the kernel's own output: elements at the kink are rounding, not bugs */
        double gi = act == ACT_RELU ? (y[i] > 0 ? dy[i] : 0.0) : dy[i];
        dres_ref[i] = gi;
        if (act == ACT_SILU) {
            double sig = 1.0 / (1.0 + exp(-z));
            gi *= sig * (1.0 + z * (1.0 - sig));
        }
        g[i] = gi;
        sg[c] += gi;
        sgx[c] += gi * xhat;
    }
    for (size_t i = 0; i < n; i++) {
        int c = (int)(i % (size_t)C);
        double xhat = (x[i] - m[c]) * inv[c];
        dx_ref[i] = gamma[c] * inv[c] * (g[i] - sg[c] / rows - xhat * sgx[c] / rows);
    }
    double e_y = test_rel_err(y, y_ref, n), e_m = test_rel_err(mean, m, C), e_inv = test_rel_err(invstd, inv, C);
    double e_dg = test_rel_err(dgamma, sgx, C), e_db = test_rel_err(dbeta, sg, C), e_dx = test_rel_err(dx, dx_ref, n);
    double e_dres = want_dres ? test_rel_err(dres, dres_ref, n) : 0.0;
    printf("bn bf16 rows %d C %d act %d residual %d mask %d: y %.2e mean %.2e invstd %.2e dgamma %.2e dbeta %.2e "
           "dx %.2e dres %.2e, dx masking itself %.2e\n", rows, C, act, with_res, mask_source, e_y, e_m, e_inv, e_dg,
           e_db, e_dx, e_dres, e_dx_own_mask);
    expect_lt(e_y, BF16_OUT); expect_lt(e_dx, BF16_OUT); expect_lt(e_dres, BF16_OUT);
    expect_lt(e_dx_own_mask, 1e-5); /* one element masked differently is about 1e-3 here */
    expect_lt(e_m, F32_SUMS); expect_lt(e_inv, F32_SUMS); expect_lt(e_dg, F32_SUMS); expect_lt(e_db, F32_SUMS);

    void *dev[] = {d_x, d_res, d_dy, d_y, d_dx, d_dres, d_gamma, d_beta, d_mean, d_invstd, d_dgamma, d_dbeta, scratch,
                   d_bits};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) CHECK_CUDA(cudaFree(dev[i]));
    free(x), free(res), free(dy), free(gamma), free(beta), free(y), free(dx), free(dres), free(mean), free(invstd);
    free(dgamma), free(dbeta), free(m), free(inv), free(y_ref), free(g), free(sg), free(sgx), free(dx_ref), free(dres_ref);
}

static void test_batchnorm(void **state) {
    (void)state;
    check_bn(2048, 64, ACT_RELU, 1, MASK_FROM_Y);
    check_bn(2048, 64, ACT_RELU, 1, MASK_FROM_BITS);
    check_bn(2048, 64, ACT_RELU, 0, MASK_FROM_X);
    check_bn(2048, 64, ACT_RELU, 0, MASK_FROM_Y);
    check_bn(512, 256, ACT_NONE, 0, MASK_FROM_Y);
    check_bn(300, 6, ACT_SILU, 1, MASK_FROM_Y); /* C % 4 != 0: the scalar path */
    check_bn(300, 6, ACT_RELU, 0, MASK_FROM_X);
    check_bn(128, 2048, ACT_RELU, 1, MASK_FROM_BITS);
    check_bn(8192, 128, ACT_RELU, 1, MASK_FROM_BITS);
    check_bn(6272, 256, ACT_SILU, 1, MASK_FROM_Y); /* ResNet-152's stage 3 at 224 px, batch 32 */
    check_bn(6272, 1024, ACT_RELU, 1, MASK_FROM_BITS);
    check_bn(6272, 256, ACT_RELU, 0, MASK_FROM_X);
    check_bn(32768, 64, ACT_RELU, 1, MASK_FROM_BITS);
}

/* ---- pooling -------------------------------------------------------------------------------*/

static void check_maxpool(int N, int H, int C) {
    int k = 3, stride = 2, pad = 1, Ho = (H + 2 * pad - k) / stride + 1;
    size_t nx = (size_t)N * H * H * C, ny = (size_t)N * Ho * Ho * C;
    float *x = randf(nx, -2, 2), *dy = randf(ny, -1, 1);
    uint16_t *d_x = bf16_device(x, nx), *d_dy = bf16_device(dy, ny), *d_y = bf16_poisoned(ny);
    uint16_t *d_dx = bf16_poisoned(nx);
    uint8_t *d_arg = NULL;
    CHECK_CUDA(cudaMalloc((void **)&d_arg, ny));
    maxpool_forward(d_y, d_arg, d_x, N, H, H, C, k, stride, pad, Ho, Ho, ELEM_BF16, 0);
    maxpool_backward(d_dx, d_dy, d_arg, N, H, H, C, k, stride, pad, Ho, Ho, ELEM_BF16, 0);
    float *y = bf16_host(d_y, ny), *dx = bf16_host(d_dx, nx);
    double *dx_ref = calloc(nx, sizeof *dx_ref);
    size_t wrong = 0;
    for (int n = 0; n < N; n++)
        for (int oh = 0; oh < Ho; oh++)
            for (int ow = 0; ow < Ho; ow++)
                for (int c = 0; c < C; c++) {
                    float best = -INFINITY;
                    size_t at = 0;
                    for (int r = 0; r < k; r++)
                        for (int q = 0; q < k; q++) {
                            int h = oh * stride - pad + r, w = ow * stride - pad + q;
                            if (h < 0 || h >= H || w < 0 || w >= H) continue;
                            size_t i = (((size_t)n * H + h) * H + w) * C + c;
                            if (x[i] > best) best = x[i], at = i;
                        }
                    size_t o = (((size_t)n * Ho + oh) * Ho + ow) * C + c;
                    wrong += y[o] != best;
                    dx_ref[at] += dy[o];
                }
    double e_dx = test_rel_err(dx, dx_ref, nx);
    printf("maxpool bf16 N %d %dx%d C %d: %zu maxima wrong, dx rel err %.2e\n", N, H, H, C, wrong, e_dx);
    assert_int_equal(wrong, 0);
    expect_lt(e_dx, BF16_OUT);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_dy)); CHECK_CUDA(cudaFree(d_y)); CHECK_CUDA(cudaFree(d_dx));
    CHECK_CUDA(cudaFree(d_arg));
    free(x), free(dy), free(y), free(dx), free(dx_ref);
}

static void check_avgpool(int N, int HW, int C) {
    size_t nx = (size_t)N * HW * C, ny = (size_t)N * C;
    float *x = randf(nx, -2, 2), *dy = randf(ny, -1, 1);
    uint16_t *d_x = bf16_device(x, nx), *d_dy = bf16_device(dy, ny), *d_y = bf16_poisoned(ny);
    uint16_t *d_dx = bf16_poisoned(nx);
    avgpool_global_forward(d_y, d_x, N, HW, C, ELEM_BF16, 0);
    avgpool_global_backward(d_dx, d_dy, N, HW, C, ELEM_BF16, 0);
    float *y = bf16_host(d_y, ny), *dx = bf16_host(d_dx, nx);
    double *y_ref = calloc(ny, sizeof *y_ref), *dx_ref = calloc(nx, sizeof *dx_ref);
    for (int n = 0; n < N; n++)
        for (int p = 0; p < HW; p++)
            for (int c = 0; c < C; c++) {
                y_ref[(size_t)n * C + c] += x[((size_t)n * HW + p) * C + c] / (double)HW;
                dx_ref[((size_t)n * HW + p) * C + c] = dy[(size_t)n * C + c] / (double)HW;
            }
    double e_y = test_rel_err(y, y_ref, ny), e_dx = test_rel_err(dx, dx_ref, nx);
    printf("avgpool bf16 N %d HW %d C %d: y %.2e dx %.2e\n", N, HW, C, e_y, e_dx);
    expect_lt(e_y, BF16_OUT); expect_lt(e_dx, BF16_OUT);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_dy)); CHECK_CUDA(cudaFree(d_y)); CHECK_CUDA(cudaFree(d_dx));
    free(x), free(dy), free(y), free(dx), free(y_ref), free(dx_ref);
}

static void test_pooling(void **state) {
    (void)state;
    check_maxpool(4, 16, 64);
    check_maxpool(2, 9, 3);
    check_avgpool(16, 16, 2048);
    check_avgpool(3, 49, 5);
}

/* ---- linear and convolution on the arena's bfloat16 weight copies ---------------------------*/

/* Writes w (rounded to bfloat16 in place) as the float32 master of the weight at `master`, and
 * the arena's bfloat16 copy from it, as a bf16 model's forward does. */
static void set_weight(float *master, float *w, size_t n) {
    for (size_t i = 0; i < n; i++) w[i] = test_float_of_bf16(test_bf16_of(w[i]));
    CHECK_CUDA(cudaMemcpy(master, w, n * sizeof *w, cudaMemcpyHostToDevice));
    model_weights_to_half(&ctx);
}

static void check_linear(int n, int in, int out) {
    arena plan;
    arena_plan(&plan);
    plan.half_weights = 1;
    linear_layer l;
    linear_init(&l, &plan, n, in, out);
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    linear_init(&l, &ctx.arena, n, in, out);
    l.type = ELEM_BF16;
    size_t nx = (size_t)n * in, ny = (size_t)n * out, nw = (size_t)in * out;
    float *x = randf(nx, -1, 1), *w = randf(nw, -0.5f, 0.5f), *b = randf(out, -1, 1), *dy = randf(ny, -1, 1);
    set_weight(l.weight, w, nw);
    CHECK_CUDA(cudaMemcpy(l.bias, b, out * sizeof(float), cudaMemcpyHostToDevice));
    uint16_t *d_x = bf16_device(x, nx), *d_dy = bf16_device(dy, ny), *d_dx = bf16_poisoned(nx);
    float *d_y = test_to_device(dy, ny);
    linear_setup(&l, &ctx);
    test_poison(d_y, ny), test_poison(l.bias_grad, out);
    linear_forward(&l, d_y, d_x, &ctx);
    linear_backward(&l, d_dx, d_dy, d_x, &ctx);
    model_grads_from_half(&ctx);
    double *y_ref = calloc(ny, sizeof(double)), *dx_ref = calloc(nx, sizeof(double));
    double *dw_ref = calloc(nw, sizeof(double)), *db_ref = calloc(out, sizeof(double));
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
    float *y = malloc(ny * sizeof *y), *dw = malloc(nw * sizeof *dw), *db = malloc(out * sizeof *db);
    float *dx = bf16_host(d_dx, nx);
    test_to_host(y, d_y, ny), test_to_host(dw, l.weight_grad, nw), test_to_host(db, l.bias_grad, out);
    double ey = test_rel_err(y, y_ref, ny), edx = test_rel_err(dx, dx_ref, nx);
    double edw = test_rel_err(dw, dw_ref, nw), edb = test_rel_err(db, db_ref, out);
    printf("linear bf16 %dx%d->%d: rel err y %.2e dx %.2e dw %.2e db %.2e\n", n, in, out, ey, edx, edw, edb);
    expect_lt(ey, F32_SUMS); expect_lt(edb, F32_SUMS); expect_lt(edx, BF16_OUT); expect_lt(edw, BF16_OUT);
    linear_destroy(&l);
    arena_free(&ctx.arena);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_dy)); CHECK_CUDA(cudaFree(d_dx)); CHECK_CUDA(cudaFree(d_y));
    free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db);
    free(y_ref), free(dx_ref), free(dw_ref), free(db_ref);
}

static void test_linear(void **state) {
    (void)state;
    check_linear(128, 2048, 1000);
    check_linear(16, 512, 10);
}

typedef struct conv_case { int n, c, k, size, kernel, stride, pad, accumulate; } conv_case;

static void check_conv(conv_case cc) {
    conv_shape s = conv_shape_nhwc(cc.n, cc.c, cc.k, cc.kernel, cc.stride, cc.pad, cc.size, cc.size);
    s.data_type = CUDNN_DATA_BFLOAT16;
    size_t nx = (size_t)s.batch * s.h_in * s.w_in * s.in_c, ny = (size_t)s.batch * s.h_out * s.w_out * s.out_c;
    size_t nw = (size_t)s.out_c * s.kernel * s.kernel * s.in_c;
    arena plan;
    arena_plan(&plan);
    plan.half_weights = 1;
    conv_layer layer;
    conv_init(&layer, &plan, s);
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    conv_init(&layer, &ctx.arena, s);
    float *x = randf(nx, -1, 1), *w = randf(nw, -0.5f, 0.5f), *dy = randf(ny, -1, 1), *dx0 = randf(nx, -1, 1);
    set_weight(layer.weight, w, nw);
    uint16_t *d_x = bf16_device(x, nx), *d_dy = bf16_device(dy, ny), *d_dx = bf16_device(dx0, nx);
    uint16_t *d_y = bf16_poisoned(ny);
    conv_setup(&layer, d_y, d_x, d_dx, cc.accumulate, NULL, &ctx);
    CHECK_CUDA(cudaFree(d_dx));
    d_dx = bf16_device(dx0, nx); /* the search scribbled on it */
    CHECK_CUDA(cudaMemset(d_y, 0xff, ny * 2));
    conv_forward(&layer, d_y, d_x, &ctx);
    conv_backward(&layer, d_dx, d_dy, d_x, &ctx);
    model_grads_from_half(&ctx);
    double *y_ref = calloc(ny, sizeof(double)), *dx_ref = calloc(nx, sizeof(double)), *dw_ref = calloc(nw, sizeof(double));
    for (int n = 0; n < s.batch; n++)
        for (int oh = 0; oh < s.h_out; oh++)
            for (int ow = 0; ow < s.w_out; ow++)
                for (int k = 0; k < s.out_c; k++)
                    for (int r = 0; r < s.kernel; r++)
                        for (int q = 0; q < s.kernel; q++) {
                            int h = oh * s.stride - s.pad + r, ww = ow * s.stride - s.pad + q;
                            if (h < 0 || h >= s.h_in || ww < 0 || ww >= s.w_in) continue;
                            for (int c = 0; c < s.in_c; c++) {
                                size_t xi = (((size_t)n * s.h_in + h) * s.w_in + ww) * s.in_c + c;
                                size_t wi = (((size_t)k * s.kernel + r) * s.kernel + q) * s.in_c + c;
                                double g = dy[(((size_t)n * s.h_out + oh) * s.w_out + ow) * s.out_c + k];
                                y_ref[(((size_t)n * s.h_out + oh) * s.w_out + ow) * s.out_c + k] += (double)x[xi] * w[wi];
                                dx_ref[xi] += g * w[wi];
                                dw_ref[wi] += g * x[xi];
                            }
                        }
    if (cc.accumulate)
        for (size_t i = 0; i < nx; i++) dx_ref[i] += dx0[i];
    float *y = bf16_host(d_y, ny), *dx = bf16_host(d_dx, nx), *dw = malloc(nw * sizeof *dw);
    test_to_host(dw, layer.weight_grad, nw);
    double ey = test_rel_err(y, y_ref, ny), edx = test_rel_err(dx, dx_ref, nx), edw = test_rel_err(dw, dw_ref, nw);
    printf("conv bf16 n%d c%d k%d %dx%d kernel %d stride %d pad %d accumulate %d: rel err y %.2e dx %.2e dw %.2e "
           "(forward %s, backward-data %s, backward-filter %s)\n", cc.n, cc.c, cc.k, cc.size, cc.size, cc.kernel,
           cc.stride, cc.pad, cc.accumulate, ey, edx, edw,
           layer.algos.use_engine[CONV_FORWARD] ? layer.algos.engine[CONV_FORWARD].name : "legacy",
           layer.algos.use_engine[CONV_BACKWARD_DATA] ? layer.algos.engine[CONV_BACKWARD_DATA].name : "legacy",
           layer.algos.use_engine[CONV_BACKWARD_FILTER] ? layer.algos.engine[CONV_BACKWARD_FILTER].name : "legacy");
    expect_lt(ey, BF16_OUT); expect_lt(edx, BF16_OUT); expect_lt(edw, BF16_OUT);
    conv_destroy(&layer);
    arena_free(&ctx.arena);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_dy)); CHECK_CUDA(cudaFree(d_dx)); CHECK_CUDA(cudaFree(d_y));
    free(x), free(w), free(dy), free(dx0), free(y), free(dx), free(dw), free(y_ref), free(dx_ref), free(dw_ref);
}

static void test_conv(void **state) {
    (void)state;
    conv_case cases[] = {{4, 3, 64, 32, 7, 2, 3, 0},   /* the stem: 3 channels */
                         {8, 64, 64, 8, 3, 1, 1, 0},   {8, 64, 256, 8, 1, 1, 0, 1},
                         {8, 128, 128, 8, 3, 2, 1, 0}, {16, 512, 128, 4, 1, 1, 0, 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_conv(cases[i]);
}

/* ---- a whole ResNet-26 step ------------------------------------------------------------------*/

/* Loss of the first step from the same initial weights, then the mean loss of steps 20..29 on
 * the same batch (which the model must be learning). */
static void run_resnet(precision_kind precision, const float *images, const int32_t *labels, double *first,
                       double *later) {
    model_config config = {.name = "resnet26", .batch = 32, .image_size = 32, .in_channels = 3, .classes = 10,
                           .seed = 3, .precision = precision};
    session s;
    char err[512];
    assert_int_equal(session_plan(&s, &config, err, sizeof err), 0);
    assert_int_equal(session_start(&s, 0, (size_t)64 << 20, precision != PRECISION_FP32, 1, err, sizeof err), 0);
    optimizer_config sgd = {.kind = OPTIMIZER_SGD, .momentum = 0.9f, .weight_decay = 5e-4f};
    lr_schedule constant = {LR_CONSTANT, 0.02f, 0, 0, 0, 0, 0, 25, 1e4f};
    trainer_init(&s.trainer, s.model, &s.ctx, sgd, constant, 0.0f, 1);
    double loss, correct, sum = 0;
    for (int i = 0; i < 30; i++) {
        trainer_step(&s.trainer, images, labels);
        trainer_take_sums(&s.trainer, &loss, &correct);
        if (i == 0) *first = loss / config.batch;
        if (i >= 20) sum += loss / config.batch;
    }
    *later = sum / 10;
    session_end(&s);
}

static void test_resnet_step(void **state) {
    (void)state;
    size_t n = (size_t)32 * 32 * 32 * 3;
    float *images = randf(n, -1, 1);
    int32_t labels[32];
    for (int i = 0; i < 32; i++) labels[i] = i % 10;
    double f32_first, f32_later, bf_first, bf_later;
    run_resnet(PRECISION_FP32, images, labels, &f32_first, &f32_later);
    run_resnet(PRECISION_BF16, images, labels, &bf_first, &bf_later);
    printf("resnet26 32x32/32: first-step loss fp32 %.5f bf16 %.5f; steps 20-29 fp32 %.5f bf16 %.5f\n", f32_first,
           bf_first, f32_later, bf_later);
    assert_true(isfinite(bf_first) && isfinite(bf_later));
    expect_lt(fabs(bf_first - f32_first), 2e-2 * f32_first);
    expect_lt(bf_later, 0.5 * bf_first); /* the repeated batch is being learned */
    free(images);
}

int main(void) {
    test_require_gpu();
    if (context_init(&ctx, 0, (size_t)64 << 20, 1) != CONTEXT_OK) return 1;
    context_reserve_workspace(&ctx, ctx.workspace_limit);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_casts),  cmocka_unit_test(test_batchnorm),
                                       cmocka_unit_test(test_pooling), cmocka_unit_test(test_linear),
                                       cmocka_unit_test(test_conv),    cmocka_unit_test(test_resnet_step)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    context_free(&ctx);
    return rc;
}
