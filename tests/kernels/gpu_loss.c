/* Softmax cross-entropy against a double-precision CPU reference: loss sums, gradients and
 * correct counts over several N x K (K % 4 != 0, misaligned pointers, K = 1, K = 4096), with and
 * without label smoothing, invalid labels, argmax ties (torch.argmax keeps the first), the
 * accumulation into loss_sum/correct across calls, evaluation with n_valid < N (padding rows hold
 * NaN and garbage labels), and a finite-difference check of dlogits against the GPU loss. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kernels/kernels.h"
#include "kernels/check.h"
#include "tests/support/testutil.h"

static float *host_alloc(size_t n) {
    float *h = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(h);
    return h;
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

static int32_t *labels_to_device(const int32_t *labels, int n) {
    int32_t *d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&d, (size_t)(n > 0 ? n : 1) * sizeof(int32_t)));
    if (n > 0) CHECK_CUDA(cudaMemcpy(d, labels, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice));
    return d;
}

static float read_scalar(const float *device) {
    float v;
    test_to_host(&v, device, 1);
    return v;
}

/* Reference over `rows` rows; dlogits (may be NULL) uses grad_rows as the mean's N. */
static void ref_ce(double *dlogits, double *loss_sum, double *correct, const float *z,
                   const int32_t *labels, int rows, int grad_rows, int K, double s) {
    *loss_sum = 0.0;
    *correct = 0.0;
    for (int r = 0; r < rows; r++) {
        const float *row = z + (size_t)r * K;
        double m = row[0];
        int arg = 0;
        for (int k = 1; k < K; k++)
            if (row[k] > m) {
                m = row[k];
                arg = k;
            }
        double sum = 0.0;
        for (int k = 0; k < K; k++) sum += exp(row[k] - m);
        double lse = m + log(sum);
        int label = labels[r], valid = label >= 0 && label < K;
        for (int k = 0; k < K; k++) {
            double target = s / K + (k == label ? 1.0 - s : 0.0);
            if (valid) *loss_sum -= target * (row[k] - lse);
            if (dlogits)
                dlogits[(size_t)r * K + k] = valid ? (exp(row[k] - lse) - target) / grad_rows : 0.0;
        }
        if (valid && arg == label) *correct += 1.0;
    }
}

static void expect_close(const char *what, int N, int K, double got, double want, double rel) {
    if (!(fabs(got - want) <= rel * fabs(want) + 1e-6)) {
        fprintf(stderr, "%s (N=%d K=%d): got %.9g, expected %.9g\n", what, N, K, got, want);
        fail();
    }
}

/* invalid_every > 0: every invalid_every-th label is out of range (cycling through kinds). */
static void check_case(int N, int K, float smoothing, int invalid_every, int shift, uint64_t seed) {
    uint64_t rng = seed;
    size_t n = (size_t)N * K;
    float *z = host_alloc(n), *grad = host_alloc(n);
    int32_t *labels = malloc((size_t)N * sizeof(int32_t));
    double *grad_ref = malloc(n * sizeof(double));
    test_fill_uniform(z, n, &rng, -4.0f, 4.0f);
    const int32_t bad[] = {-1, K, K + 5, INT_MIN, INT_MAX};
    for (int r = 0; r < N; r++) {
        labels[r] = (int32_t)(test_rand_u64(&rng) % K);
        if (invalid_every > 0 && r % invalid_every == invalid_every - 1)
            labels[r] = bad[(r / invalid_every) % 5];
    }
    float *z_d = dev_alloc(n) + shift, *grad_d = dev_alloc(n) + shift;
    float *loss_d = dev_alloc(1), *correct_d = dev_alloc(1);
    int32_t *labels_d = labels_to_device(labels, N);
    upload(z_d, z, n);
    const float loss0 = 1.5f, correct0 = 3.0f;
    upload(loss_d, &loss0, 1);
    upload(correct_d, &correct0, 1);
    double loss_ref, correct_ref;
    ref_ce(grad_ref, &loss_ref, &correct_ref, z, labels, N, N, K, smoothing);
    for (int call = 1; call <= 2; call++) { /* accumulates into loss_sum and correct */
        test_poison(grad_d, n);
        softmax_ce_forward_backward(grad_d, loss_d, correct_d, z_d, labels_d, N, K, smoothing, 0);
        test_to_host(grad, grad_d, n);
        double err = test_rel_err(grad, grad_ref, n);
        if (!(err < 1e-5)) {
            fprintf(stderr, "dlogits (N=%d K=%d s=%g): relative error %.3g\n", N, K, smoothing, err);
            fail();
        }
        expect_close("loss_sum", N, K, read_scalar(loss_d) - loss0, call * loss_ref, 1e-5);
        expect_eq(read_scalar(correct_d), correct0 + call * (float)correct_ref);
    }
    CHECK_CUDA(cudaFree(z_d - shift)); CHECK_CUDA(cudaFree(grad_d - shift));
    CHECK_CUDA(cudaFree(loss_d)); CHECK_CUDA(cudaFree(correct_d)); CHECK_CUDA(cudaFree(labels_d));
    free(z); free(grad); free(labels); free(grad_ref);
}

static const int SHAPES[][2] = {{1, 1},   {5, 10},   {7, 3},   {128, 1000}, {64, 1001},
                                {256, 100}, {3, 4096}, {33, 37}, {1024, 10}};

static void test_forward_backward(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++) {
        check_case(SHAPES[i][0], SHAPES[i][1], 0.0f, 0, 0, 100 + i);
        check_case(SHAPES[i][0], SHAPES[i][1], 0.1f, 0, 0, 200 + i);
    }
}

static void test_invalid_labels(void **state) {
    (void)state;
    check_case(40, 100, 0.1f, 3, 0, 300);
    check_case(11, 7, 0.0f, 2, 0, 301);
    check_case(5, 12, 0.2f, 1, 0, 302); /* every label invalid: zero loss, zero gradient */
}

static void test_misaligned(void **state) {
    (void)state;
    check_case(16, 1000, 0.1f, 5, 1, 400);
}

/* torch.argmax keeps the first maximum: a tie with an earlier index is not a hit. */
static void test_argmax_ties(void **state) {
    (void)state;
    const int N = 3, K = 8;
    float z[24] = {0, 1, 5, 2, 5, 0, 0, 0, /* label 2: first max, a hit */
                   0, 1, 5, 2, 5, 0, 0, 0, /* label 4: tied but not first, a miss */
                   7, 7, 7, 7, 7, 7, 7, 7};/* label 0: all tied, a hit */
    int32_t labels[3] = {2, 4, 0};
    float *z_d = dev_alloc(24), *grad_d = dev_alloc(24), *loss_d = dev_alloc(1), *correct_d = dev_alloc(1);
    int32_t *labels_d = labels_to_device(labels, N);
    const float zero = 0.0f;
    upload(z_d, z, 24);
    upload(loss_d, &zero, 1);
    upload(correct_d, &zero, 1);
    softmax_ce_forward_backward(grad_d, loss_d, correct_d, z_d, labels_d, N, K, 0.0f, 0);
    expect_eq(read_scalar(correct_d), 2.0f);
    upload(correct_d, &zero, 1);
    softmax_ce_eval(loss_d, correct_d, z_d, labels_d, N, K, 0.0f, 0);
    expect_eq(read_scalar(correct_d), 2.0f);
    CHECK_CUDA(cudaFree(z_d)); CHECK_CUDA(cudaFree(grad_d)); CHECK_CUDA(cudaFree(loss_d));
    CHECK_CUDA(cudaFree(correct_d)); CHECK_CUDA(cudaFree(labels_d));
}

/* A padded last batch: rows past n_valid hold NaN logits and garbage labels and must not count. */
static void test_eval(void **state) {
    (void)state;
    const int cases[][3] = {{10, 6, 100}, {64, 1, 1000}, {8, 8, 10}, {9, 0, 7}, {130, 97, 1001}};
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        int N = cases[t][0], n_valid = cases[t][1], K = cases[t][2];
        uint64_t rng = 500 + t;
        size_t n = (size_t)N * K;
        float *z = host_alloc(n);
        int32_t *labels = malloc((size_t)N * sizeof(int32_t));
        test_fill_uniform(z, n, &rng, -4.0f, 4.0f);
        for (int r = 0; r < N; r++) labels[r] = (int32_t)(test_rand_u64(&rng) % K);
        if (n_valid > 2) labels[1] = -7; /* an invalid label among the valid rows */
        for (size_t i = (size_t)n_valid * K; i < n; i++) z[i] = NAN;
        for (int r = n_valid; r < N; r++) labels[r] = K + 1000;
        for (int smooth = 0; smooth < 2; smooth++) {
            float smoothing = smooth ? 0.1f : 0.0f;
            float *z_d = dev_alloc(n), *loss_d = dev_alloc(1), *correct_d = dev_alloc(1);
            int32_t *labels_d = labels_to_device(labels, N);
            const float loss0 = 2.25f, correct0 = 1.0f;
            upload(z_d, z, n);
            upload(loss_d, &loss0, 1);
            upload(correct_d, &correct0, 1);
            softmax_ce_eval(loss_d, correct_d, z_d, labels_d, n_valid, K, smoothing, 0);
            double loss_ref, correct_ref;
            ref_ce(NULL, &loss_ref, &correct_ref, z, labels, n_valid, N, K, smoothing);
            expect_close("eval loss_sum", n_valid, K, read_scalar(loss_d) - loss0, loss_ref, 1e-5);
            expect_eq(read_scalar(correct_d), correct0 + (float)correct_ref);
            CHECK_CUDA(cudaFree(z_d)); CHECK_CUDA(cudaFree(loss_d)); CHECK_CUDA(cudaFree(correct_d));
            CHECK_CUDA(cudaFree(labels_d));
        }
        free(z);
        free(labels);
    }
}

/* L = loss_sum / N, whose gradient dlogits is; central differences of the GPU loss. */
static void gradcheck_case(int N, int K, float smoothing, uint64_t seed) {
    uint64_t rng = seed;
    size_t n = (size_t)N * K;
    float *z = host_alloc(n), *grad = host_alloc(n);
    int32_t *labels = malloc((size_t)N * sizeof(int32_t));
    test_fill_uniform(z, n, &rng, -3.0f, 3.0f);
    for (int r = 0; r < N; r++) labels[r] = (int32_t)(test_rand_u64(&rng) % K);
    labels[N - 1] = -1; /* its row has no gradient and no loss */
    float *z_d = dev_alloc(n), *grad_d = dev_alloc(n), *loss_d = dev_alloc(1), *correct_d = dev_alloc(1);
    int32_t *labels_d = labels_to_device(labels, N);
    const float zero = 0.0f;
    upload(z_d, z, n);
    upload(loss_d, &zero, 1);
    upload(correct_d, &zero, 1);
    softmax_ce_forward_backward(grad_d, loss_d, correct_d, z_d, labels_d, N, K, smoothing, 0);
    test_to_host(grad, grad_d, n);
    double rms = 0.0;
    for (size_t i = 0; i < n; i++) rms += (double)grad[i] * grad[i];
    rms = sqrt(rms / n);
    for (int t = 0; t < 24; t++) {
        size_t i = test_rand_u64(&rng) % n;
        float v = z[i], step = 1e-2f * fmaxf(fabsf(v), 1.0f), at[2] = {v + step, v - step};
        double loss[2];
        for (int side = 0; side < 2; side++) {
            upload(z_d + i, &at[side], 1);
            upload(loss_d, &zero, 1);
            softmax_ce_forward_backward(grad_d, loss_d, correct_d, z_d, labels_d, N, K, smoothing, 0);
            loss[side] = read_scalar(loss_d) / N;
        }
        upload(z_d + i, &v, 1);
        double fd = (loss[0] - loss[1]) / ((double)at[0] - (double)at[1]);
        if (!(fabs(fd - grad[i]) <= 1e-2 * (fabs(grad[i]) + 0.1 * rms))) {
            fprintf(stderr, "softmax CE gradcheck N=%d K=%d s=%g: dlogits[%zu] backward %.6g, finite "
                    "difference %.6g\n", N, K, smoothing, i, grad[i], fd);
            fail();
        }
    }
    CHECK_CUDA(cudaFree(z_d)); CHECK_CUDA(cudaFree(grad_d)); CHECK_CUDA(cudaFree(loss_d));
    CHECK_CUDA(cudaFree(correct_d)); CHECK_CUDA(cudaFree(labels_d));
    free(z); free(grad); free(labels);
}

static void test_gradcheck(void **state) {
    (void)state;
    gradcheck_case(4, 10, 0.1f, 600);
    gradcheck_case(3, 37, 0.0f, 601);
    gradcheck_case(2, 8, 0.3f, 602);
}

int main(void) {
    test_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_backward),
        cmocka_unit_test(test_invalid_labels),
        cmocka_unit_test(test_misaligned),
        cmocka_unit_test(test_argmax_ties),
        cmocka_unit_test(test_eval),
        cmocka_unit_test(test_gradcheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
