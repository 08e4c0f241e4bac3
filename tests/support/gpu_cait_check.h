/* Helpers shared by the CaiT GPU tests (tests/models/gpu_cait.c, tests/models/gpu_cait_model.c): random data,
 * device round trips, relative errors against double references and central finite differences
 * through a GPU forward. Each test program includes this once and defines `ctx` and `engine`. */
#ifndef SUITE_GPU_CAIT_CHECK_H
#define SUITE_GPU_CAIT_CHECK_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "models/layers/cait_gemm.h"
#include "kernels/check.h"
#include "tests/support/testutil.h"

static job_context ctx;
static gemm_engine engine;
static uint64_t rng = 20240611;

/* Uploads and poisons go through the legacy stream, which does not order against the job's
 * non-blocking stream: wait for them before the next launch. */
static inline void settle(void) { CHECK_CUDA(cudaDeviceSynchronize()); }
static inline double *dalloc(size_t n) { return calloc(n, sizeof(double)); }
static inline float *falloc(size_t n) { return calloc(n, sizeof(float)); }
static inline float *rnd(size_t n, float lo, float hi) {
    float *x = falloc(n);
    test_fill_uniform(x, n, &rng, lo, hi);
    return x;
}
static inline float *download(const float *d, size_t n) {
    float *h = falloc(n);
    test_to_host(h, d, n);
    return h;
}
static inline double weighted_sum(const float *device_y, const float *w, size_t n) {
    float *y = download(device_y, n);
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)y[i] * w[i];
    free(y);
    return s;
}
static inline void expect_close(const char *what, const float *device, const double *ref, size_t n, double tol) {
    float *got = download(device, n);
    double e = test_rel_err(got, ref, n);
    printf("  %-34s rel err %.2e (tol %.0e)\n", what, e, tol);
    free(got);
    if (!(e < tol)) fail_msg("%s: relative error %.3e against the CPU reference", what, e);
}

/* Central differences of loss() at `trials` random elements of dev[0..n), against analytic[]. */
typedef double (*loss_fn)(void *arg);
static inline void fd_check(const char *what, float *dev, size_t n, const float *analytic, int trials, loss_fn loss, void *arg,
                     float step, double tol) {
    double worst = 0;
    for (int t = 0; t < trials; t++) {
        size_t i = (size_t)(test_rand_u64(&rng) % n);
        float saved;
        CHECK_CUDA(cudaMemcpy(&saved, dev + i, sizeof saved, cudaMemcpyDeviceToHost));
        double l[2];
        for (int s = 0; s < 2; s++) {
            float v = saved + (s ? -step : step);
            CHECK_CUDA(cudaMemcpy(dev + i, &v, sizeof v, cudaMemcpyHostToDevice));
            settle();
            l[s] = loss(arg);
        }
        CHECK_CUDA(cudaMemcpy(dev + i, &saved, sizeof saved, cudaMemcpyHostToDevice));
        settle();
        double fd = (l[0] - l[1]) / (2.0 * step), err = fabs(fd - analytic[i]) / (1 + fabs(analytic[i]));
        if (err > worst) worst = err;
        if (err > tol) fail_msg("%s[%zu]: finite difference %.6g, backward %.6g", what, i, fd, analytic[i]);
    }
    printf("  %-34s finite differences: worst %.2e (tol %.0e)\n", what, worst, tol);
}

#endif
