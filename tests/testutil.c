#define _XOPEN_SOURCE 700
#include "tests/testutil.h"

#include <ftw.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "models/check.h"

void test_require_gpu(void) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        printf("no CUDA device (%s): skipped\n", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
        exit(77);
    }
}

uint64_t test_rand_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float test_rand_uniform(uint64_t *s, float lo, float hi) {
    return lo + (hi - lo) * (float)((test_rand_u64(s) >> 40) * (1.0 / 16777216.0));
}

float test_rand_normal(uint64_t *s) {
    double u1 = ((test_rand_u64(s) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (test_rand_u64(s) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void test_fill_uniform(float *x, size_t n, uint64_t *s, float lo, float hi) {
    for (size_t i = 0; i < n; i++) x[i] = test_rand_uniform(s, lo, hi);
}

double test_rel_err(const float *a, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i])) return INFINITY;
        double d = a[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

double test_rel_err_f(const float *a, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) || isnan(ref[i])) return INFINITY;
        double d = (double)a[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

float *test_to_device(const float *host, size_t n) {
    float *d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&d, n * sizeof(float) + 16));
    CHECK_CUDA(cudaMemcpy(d, host, n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

void test_to_host(float *host, const float *device, size_t n) {
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost));
}

void test_poison(float *device, size_t n) {
    CHECK_CUDA(cudaMemset(device, 0xFF, n * sizeof(float))); /* 0xFFFFFFFF is a NaN */
}

void test_tmpdir(char *path, size_t size) {
    const char *base = getenv("TMPDIR");
    snprintf(path, size, "%s/suite-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(path)) {
        perror("mkdtemp");
        exit(1);
    }
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

void test_rmtree(const char *path) {
    if (strstr(path, "suite-test-") == NULL) return; /* only folders test_tmpdir made */
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
