/* Shared helpers for the tests: GPU presence (exit 77 = skipped without one), seeded random data,
 * and relative errors against a double-precision reference. */
#ifndef SUITE_TESTUTIL_H
#define SUITE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Comparisons that print both sides when they fail (cmocka's assert_true prints only the text):
 * expect_lt(err, 1e-5) fails the test with "err (= 2.5e-05) < 1e-5 (= 1e-05)" and the file and line.
 * Each side is evaluated once and compared as a double (exact for integers up to 2^53); a NaN on
 * either side fails every comparison but expect_ne. */
typedef enum { TEST_LT, TEST_LE, TEST_GT, TEST_GE, TEST_EQ, TEST_NE } test_cmp_op;
void test_expect_cmp(test_cmp_op op, double a, double b, const char *text_a, const char *text_b, const char *file,
                     int line);
#define expect_lt(a, b) test_expect_cmp(TEST_LT, (double)(a), (double)(b), #a, #b, __FILE__, __LINE__)
#define expect_le(a, b) test_expect_cmp(TEST_LE, (double)(a), (double)(b), #a, #b, __FILE__, __LINE__)
#define expect_gt(a, b) test_expect_cmp(TEST_GT, (double)(a), (double)(b), #a, #b, __FILE__, __LINE__)
#define expect_ge(a, b) test_expect_cmp(TEST_GE, (double)(a), (double)(b), #a, #b, __FILE__, __LINE__)
#define expect_eq(a, b) test_expect_cmp(TEST_EQ, (double)(a), (double)(b), #a, #b, __FILE__, __LINE__)
#define expect_ne(a, b) test_expect_cmp(TEST_NE, (double)(a), (double)(b), #a, #b, __FILE__, __LINE__)
/* |a - b| <= tol, printing a, b, their difference and tol when not. */
void test_expect_near(double a, double b, double tol, const char *text_a, const char *text_b, const char *file, int line);
#define expect_near(a, b, tol) test_expect_near((double)(a), (double)(b), (double)(tol), #a, #b, __FILE__, __LINE__)

/* How far apart two trainings from the same weights and batch may end (relative difference of the
 * parameter change over a few steps) when they run the same kernels on the same data and differ
 * only in how those are launched (early, on a second stream, captured in a graph or not). With
 * deterministic kernels they would be bitwise equal. They are not, for the reasons two plain runs
 * are not: the batch norms add their blocks' partial sums (the statistics forward, the gradient
 * sums backward) with double atomics in an order that varies from run to run
 * (kernels/batchnorm.cu), so a mean or a parameter's gradient may differ in its last float bit;
 * and each session measures its convolution algorithms afresh, where another algorithm sums in
 * another order (some of cuDNN's weight-gradient algorithms add with atomics too). Over a few steps
 * such rounding-level differences grow (a pre-activation may cross a ReLU's kink; in bf16 one bit
 * more or less moves a stored activation by a whole bfloat16 unit, 2^-8 of it) but stay far from
 * what a race does: a buffer overwritten under a kernel still reading it, or a weight updated under
 * a data gradient that reads it, corrupts whole tensors, differences of order 1e-1 and more. Hence
 * one fixed bound per precision, which such a comparison must meet and so must two plain runs
 * (were those further apart, training itself would not be repeatable to its precision, and the
 * comparison would judge nothing): float32 1e-3, orders of magnitude above its rounding (2^-24)
 * even after a kink crossing and two below a race; bf16 5e-2, about a dozen bfloat16 units, still
 * below a race. */
#define TEST_SAME_KERNELS_FP32 1e-3
#define TEST_SAME_KERNELS_BF16 5e-2

/* Exits 77 (ctest: skipped) when no CUDA device can be used; prints why. */
void test_require_gpu(void);
/* Deterministic generator (splitmix64) so a failing case can be replayed from its seed. */
uint64_t test_rand_u64(uint64_t *state);
float test_rand_uniform(uint64_t *state, float lo, float hi);
float test_rand_normal(uint64_t *state);
void test_fill_uniform(float *x, size_t n, uint64_t *state, float lo, float hi);
/* ||a - ref|| / ||ref|| (an all-zero reference gives ||a||); NaN anywhere gives +inf. */
double test_rel_err(const float *a, const double *ref, size_t n);
double test_rel_err_f(const float *a, const float *ref, size_t n);
/* Device round trips for test data (checked). */
float *test_to_device(const float *host, size_t n);
void test_to_host(float *host, const float *device, size_t n);
/* bfloat16 on the host, as the GPU rounds (__float2bfloat16: to nearest, ties to even; a NaN stays
 * a NaN): the bits of f, and the float those bits are. */
uint16_t test_bf16_of(float f);
float test_float_of_bf16(uint16_t h);
/* Fills device memory with NaN so a kernel that leaves an output unwritten fails its check. */
void test_poison(float *device, size_t n);
/* A text file whole, NUL-terminated, malloc'd (at most 4 MiB); NULL with the reason in err. */
char *test_read_text(const char *path, char *err, size_t err_size);
/* A JSON file parsed (a run folder's summary.json, run.json); NULL with the reason in err. */
struct cJSON *test_read_json(const char *path, char *err, size_t err_size);
/* A fixture file written whole: bytes, a NUL-terminated text, or a JSON document as cJSON prints
 * it; one that cannot be written ends the test (exit 1, naming the file). */
void test_write_file(const char *path, const void *bytes, size_t size);
void test_write_text(const char *path, const char *text);
void test_write_json(const char *path, const struct cJSON *root);
/* Temporary directory for fixture files (created under $TMPDIR, removed by the test). */
void test_tmpdir(char *path, size_t size);
void test_rmtree(const char *path);
/* MPS without a GPU: dir/bin (returned in bin) holds fake_train under the name
 * nvidia-cuda-mps-control (tests/support/fake_train.c imitates the daemon's control program), and is put
 * first on PATH; the caller restores PATH if later tests need the old one. */
void test_fake_mps_on_path(const char *dir, const char *fake_train, char *bin, size_t size);

/* 1 when process pid exists and is not a zombie (gone, or exited and not yet reaped: 0); with comm,
 * also only when its name (/proc/<pid>/stat) is comm; ppid, when non-NULL, gets its parent. */
int test_process_alive(long pid, const char *comm, long *ppid);

/* Runs a program (argv[0] is its path; no shell) and collects its stdout and stderr (truncated to
 * the buffers). Returns its exit status, 128+signal when killed, or -1 when it could not start. */
int test_run(char *const argv[], char *out, size_t out_size, char *err, size_t err_size);
/* A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick; free until someone
 * binds it). */
int test_free_port(void);

/* Path of a program built next to the tests (SUITE_BINARY_DIR). */
const char *test_binary(const char *name);
/* test_run of the program `name` built next to the tests, with the NULL-terminated arguments
 * that follow (at most 62). */
int test_run_binary(const char *name, char *out, size_t out_size, char *err, size_t err_size, ...);

/* "N,N": two equal green-context partitions of device 0 holding as many of its SM groups as they
 * can (the H100 splits its 132 SMs into 15 groups of 8: 56,56), for job_host --green. */
const char *test_two_green_partitions(void);

#endif
