/* The rule that a library kernel is taken only where it writes all of its output
 * (models/layers/written.h): count_nonfinite against known positions in both element types,
 * written_unwritten against a run that writes half of its output, and the rule at work where it
 * was needed: the bfloat16 layer and model tests (gpu_bf16, gpu_bf16_efficientnet) run again as
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
    const char *programs[] = {"gpu_bf16", "gpu_bf16_efficientnet"};
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
        cmocka_unit_test(test_bf16_layers_on_mps_shares),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
