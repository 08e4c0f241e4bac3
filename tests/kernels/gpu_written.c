/* The rule that a library kernel is taken only where it writes all of its output
 * (models/layers/written.h): count_nonfinite against known positions in both element types,
 * written_unwritten against a run that writes half of its output, the plain matmul that stands in
 * where no cuBLASLt algorithm writes all (against a double reference), and the rule at work where it
 * was needed: the bfloat16 layer and model tests (gpu_bf16, gpu_bf16_efficientnet, gpu_bf16_cait) run again as
 * clients of a private MPS daemon on the shares on which cuBLASLt's and cuDNN's own choices left
 * outputs unwritten (43% and 80% of an H100's or H200's SMs). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernels/check.h"
#include "kernels/kernels.h"
#include "models/layers/written.h"
#include "runner/suite/gpu/mps.h"
#include "runner/suite/jobs/jobs.h"
#include "tests/support/testutil.h"

extern char **environ;

static uint16_t bf16_bits(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return (uint16_t)(u >> 16);
}

static void test_count_nonfinite(void **state) {
    (void)state;
    enum { N = 100003 };
    float *host = calloc(N, sizeof *host);
    uint16_t *half = calloc(N, sizeof *half);
    const size_t bad[] = {0, 31, 32, 4097, N - 1};
    for (size_t i = 0; i < N; i++) host[i] = (float)i * 1e-3f - 7.0f;
    host[bad[0]] = NAN, host[bad[1]] = INFINITY, host[bad[2]] = -INFINITY, host[bad[3]] = -NAN, host[bad[4]] = NAN;
    host[5] = 3.0e38f; /* finite, near the top of both types' range */
    for (size_t i = 0; i < N; i++) half[i] = bf16_bits(host[i]);
    float *d = test_to_device(host, N);
    void *dh = NULL;
    CHECK_CUDA(cudaMalloc(&dh, N * sizeof *half));
    CHECK_CUDA(cudaMemcpy(dh, half, N * sizeof *half, cudaMemcpyHostToDevice));
    assert_int_equal(count_nonfinite(d, N, ELEM_F32, 0), 5);
    assert_int_equal(count_nonfinite(dh, N, ELEM_BF16, 0), 5);
    assert_int_equal(count_nonfinite(d + 6, 20, ELEM_F32, 0), 0);
    assert_int_equal(count_nonfinite(d, 0, ELEM_F32, 0), 0);
    CHECK_CUDA(cudaFree(d));
    CHECK_CUDA(cudaFree(dh));
    free(host);
    free(half);
}

typedef struct half_fill {
    void *out;
    size_t n;
    elem_type type;
} half_fill;

static void fill_first_half(void *arg) {
    half_fill *h = arg;
    if (h->type == ELEM_BF16) fill_bf16(h->out, 1.0f, h->n / 2, 0);
    else fill_float(h->out, 1.0f, h->n / 2, 0);
}

static void fill_all(void *arg) {
    half_fill *h = arg;
    if (h->type == ELEM_BF16) fill_bf16(h->out, 0.0f, h->n, 0);
    else fill_float(h->out, 0.0f, h->n, 0);
}

static void test_unwritten_counted(void **state) {
    (void)state;
    const size_t n = 12345;
    for (int t = 0; t < 2; t++) {
        elem_type type = t ? ELEM_BF16 : ELEM_F32;
        void *out = NULL;
        CHECK_CUDA(cudaMalloc(&out, n * elem_bytes(type)));
        CHECK_CUDA(cudaMemset(out, 0, n * elem_bytes(type))); /* finite before: the poison must come first */
        half_fill h = {out, n, type};
        assert_int_equal(written_unwritten(out, n, type, fill_first_half, &h, 0), n - n / 2);
        assert_int_equal(written_unwritten(out, n, type, fill_all, &h, 0), 0);
        CHECK_CUDA(cudaFree(out));
    }
}

static float bf16_round(float v) {
    uint32_t u = (uint32_t)bf16_bits(v) << 16; /* truncation is enough: the inputs are made this way */
    float r;
    memcpy(&r, &u, 4);
    return r;
}

/* The plain fallback against a double reference: transposes, both element types, a bias, beta,
 * and a leading dimension past the rows (whose gap must stay untouched). */
typedef struct plain_case { int m, n, k, ta, tb, pad, bias, bf16_in, bf16_out; float beta; } plain_case;

static void *device_of(const float *host, size_t n, int bf16) {
    void *d = NULL;
    if (!bf16) return test_to_device(host, n);
    uint16_t *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = bf16_bits(host[i]);
    CHECK_CUDA(cudaMalloc(&d, n * sizeof *h));
    CHECK_CUDA(cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static void check_plain(plain_case pc) {
    uint64_t rng = 77;
    int m = pc.m, n = pc.n, k = pc.k;
    int lda = (pc.ta ? k : m) + pc.pad, ldb = (pc.tb ? n : k) + pc.pad, ldc = m + pc.pad;
    size_t na = (size_t)lda * (pc.ta ? m : k), nb = (size_t)ldb * (pc.tb ? k : n), nc = (size_t)ldc * n;
    float *a = malloc(na * 4), *b = malloc(nb * 4), *c = malloc(nc * 4), *bias = malloc((size_t)m * 4);
    test_fill_uniform(a, na, &rng, -1, 1), test_fill_uniform(b, nb, &rng, -1, 1);
    test_fill_uniform(c, nc, &rng, -1, 1), test_fill_uniform(bias, m, &rng, -1, 1);
    for (size_t i = 0; pc.bf16_in && i < na; i++) a[i] = bf16_round(a[i]);
    for (size_t i = 0; pc.bf16_in && i < nb; i++) b[i] = bf16_round(b[i]);
    for (size_t i = 0; pc.bf16_out && i < nc; i++) c[i] = bf16_round(c[i]);
    for (int i = 0; pc.bf16_out && i < m; i++) bias[i] = bf16_round(bias[i]);
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t opa = pc.ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = pc.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    void *da = device_of(a, na, pc.bf16_in), *db = device_of(b, nb, pc.bf16_in), *dc = device_of(c, nc, pc.bf16_out);
    void *dbias = device_of(bias, m, pc.bf16_out);
    if (pc.bias) {
        cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_BIAS;
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
    }
    cudaDataType_t tab = pc.bf16_in ? CUDA_R_16BF : CUDA_R_32F, tc = pc.bf16_out ? CUDA_R_16BF : CUDA_R_32F;
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&la, tab, pc.ta ? k : m, pc.ta ? m : k, lda));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lb, tab, pc.tb ? n : k, pc.tb ? k : n, ldb));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&lc, tc, m, n, ldc));
    written_matmul_plain(desc, la, lb, lc, 0.5f, da, db, pc.beta, dc, dc, 0);
    float *out = malloc(nc * 4);
    if (pc.bf16_out) {
        uint16_t *h = malloc(nc * 2);
        CHECK_CUDA(cudaMemcpy(h, dc, nc * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < nc; i++) {
            uint32_t u = (uint32_t)h[i] << 16;
            memcpy(&out[i], &u, 4);
        }
        free(h);
    } else {
        test_to_host(out, dc, nc);
    }
    double worst = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ldc; i++) {
            size_t at = (size_t)j * ldc + i;
            if (i >= m) { /* the gap past the rows: as it was */
                assert_true(out[at] == c[at]);
                continue;
            }
            double acc = 0;
            for (int p = 0; p < k; p++)
                acc += (double)a[pc.ta ? (size_t)i * lda + p : (size_t)p * lda + i] *
                       b[pc.tb ? (size_t)p * ldb + j : (size_t)j * ldb + p];
            double want = 0.5 * acc + (double)pc.beta * c[at] + (pc.bias ? bias[i] : 0.0);
            double err = fabs(out[at] - want) / (fabs(want) + 1.0);
            if (err > worst) worst = err;
        }
    printf("matmul_plain m%d n%d k%d ta%d tb%d pad%d bias%d %s->%s beta %.1f: worst rel err %.2e\n", m, n, k, pc.ta,
           pc.tb, pc.pad, pc.bias, pc.bf16_in ? "bf16" : "f32", pc.bf16_out ? "bf16" : "f32", pc.beta, worst);
    expect_lt(worst, pc.bf16_out ? 8e-3 : 1e-5);
    CHECK_CUBLAS(cublasLtMatmulDescDestroy(desc));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(la));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(lb));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(lc));
    CHECK_CUDA(cudaFree(da));
    CHECK_CUDA(cudaFree(db));
    CHECK_CUDA(cudaFree(dc));
    CHECK_CUDA(cudaFree(dbias));
    free(a), free(b), free(c), free(bias), free(out);
}

static void test_matmul_plain(void **state) {
    (void)state;
    const plain_case cases[] = {
        {37, 11, 29, 0, 0, 0, 0, 0, 0, 0.0f}, {37, 11, 29, 1, 0, 3, 1, 0, 0, 0.0f},
        {64, 128, 96, 0, 1, 0, 0, 1, 1, 1.0f}, {1000, 16, 1280, 1, 0, 0, 1, 1, 0, 0.0f},
        {24, 5, 16, 1, 1, 24, 1, 1, 1, 0.5f},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_plain(cases[i]);
}

/* Runs the test program `name` as a client of the daemon at `percent` of the SMs; its exit status. */
static int run_client(const mps_daemon *d, const char *name, int percent) {
    job_env env = {0};
    assert_int_equal(mps_client_env(d, percent, 0, 0, &env), 0);
    char **envp = job_build_env(environ, &env);
    assert_non_null(envp);
    char path[4096];
    snprintf(path, sizeof path, "%s", test_binary(name));
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *argv[] = {path, NULL};
        execve(path, argv, envp);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    job_free_strv(envp);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void test_bf16_layers_on_mps_shares(void **state) {
    (void)state;
    char dir[512], err[512];
    test_tmpdir(dir, sizeof dir);
    mps_daemon d;
    memset(&d, 0, sizeof d);
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    if (mps_start(&d, dir, visible ? visible : "", err, sizeof err) != 0) {
        printf("no MPS daemon could start here (%s): the share part is skipped\n", err);
        test_rmtree(dir);
        return;
    }
    const char *programs[] = {"gpu_bf16", "gpu_bf16_efficientnet", "gpu_bf16_cait"};
    const int percents[] = {43, 80};
    int failed = 0, skipped = 0;
    for (size_t p = 0; p < sizeof percents / sizeof *percents; p++)
        for (size_t i = 0; i < sizeof programs / sizeof *programs; i++) {
            int rc = run_client(&d, programs[i], percents[p]);
            printf("%s as an MPS client at %d%% of the SMs: exit %d\n", programs[i], percents[p], rc);
            failed += rc != 0 && rc != 77;
            skipped += rc == 77;
        }
    assert_int_equal(mps_stop(&d, err, sizeof err), 0);
    test_rmtree(dir);
    if (skipped) printf("%d client run(s) saw no GPU through the daemon: skipped\n", skipped);
    assert_int_equal(failed, 0);
}

int main(void) {
    test_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_count_nonfinite),
        cmocka_unit_test(test_unwritten_counted),
        cmocka_unit_test(test_matmul_plain),
        cmocka_unit_test(test_bf16_layers_on_mps_shares),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
