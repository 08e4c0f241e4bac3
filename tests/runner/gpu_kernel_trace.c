/* train --kernels on the GPU (models/core/kernel_trace.h, runner/train/job_trace.h): ResNet-26 at
 * 32x32, its step captured in a CUDA graph, traced over its last epoch, alone and as two jobs of
 * one process (job_host: two streams of one context, then two green contexts). In each job's files
 * every kernel has a layer's scope and a class of the format, every (scope, kernel)'s count is a
 * multiple of the job's traced steps (the two jobs of a host take different step counts, so a
 * kernel filed under the wrong job breaks it), forward, data-gradient and weight-gradient
 * convolutions and batch norms are there, the window lies between the test's own readings of
 * CLOCK_REALTIME and every interval inside it, and the aggregate sums the intervals. A job that
 * does not trace writes nothing. Exit 77 without a GPU. */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "models/core/kernel_scope.h"
#include "tests/support/testutil.h"

static char out[1 << 20], err[1 << 20];
static char dir[512];

static double now_unix(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define JOB_ARGS(steps, prefix) "--model", "resnet26", "--data", "synthetic", "--batch", "32", "--image-size", "32", \
                                "--classes", "10", "--steps-per-epoch", steps, "--epochs", "2", "--workers", "2",     \
                                "--json", "--kernels", prefix

/* The fields of one CSV line (RFC 4180 quoting), in place; the count. */
static int csv_fields(char *line, char **fields, int max) {
    int n = 0;
    char *w = line;
    for (char *p = line; n < max;) {
        fields[n++] = w;
        if (*p == '"') {
            for (p++; *p && !(p[0] == '"' && p[1] != '"'); p++) {
                if (p[0] == '"') p++;
                *w++ = *p;
            }
            if (*p == '"') p++;
        } else {
            while (*p && *p != ',') *w++ = *p++;
        }
        int more = *p == ',';
        *w++ = 0;
        if (!more) break;
        p++;
    }
    return n;
}

/* The value of a `# key=value` line; a missing key fails the test. */
static const char *header_value(char *const *lines, int n, const char *key) {
    size_t len = strlen(key);
    for (int i = 0; i < n && lines[i][0] == '#'; i++)
        if (!strncmp(lines[i] + 2, key, len) && lines[i][2 + len] == '=') return lines[i] + 3 + len;
    fail_msg("no \"# %s=\" line", key);
    return "";
}

/* One job's files checked; the window's bounds within [before, after]. */
static void check_job(const char *prefix, long steps, double before, double after) {
    char path[700], e[512];
    snprintf(path, sizeof path, "%s.kernels.csv", prefix);
    char *text = test_read_text(path, e, sizeof e);
    if (!text) fail_msg("%s", e);
    static char *lines[100000];
    int n = 0;
    for (char *p = strtok(text, "\n"); p && n < 100000; p = strtok(NULL, "\n")) lines[n++] = p;
    assert_string_equal(header_value(lines, n, "clock"), "realtime");
    double t0 = atof(header_value(lines, n, "t0")), t1 = atof(header_value(lines, n, "t1"));
    printf("%s: window %.3f s, %s steps, %s kernels, %s dropped, step %s ms, peak %s FLOP/s, %s B/s\n", prefix, t1 - t0,
           header_value(lines, n, "steps"), header_value(lines, n, "kernels"), header_value(lines, n, "dropped"),
           header_value(lines, n, "step_ms"), header_value(lines, n, "peak_flops"), header_value(lines, n, "peak_bytes_s"));
    expect_ge(t0, before);
    expect_le(t1, after);
    expect_gt(t1, t0);
    assert_int_equal(atol(header_value(lines, n, "steps")), steps);
    assert_int_equal(atol(header_value(lines, n, "dropped")), 0);
    long kernels = atol(header_value(lines, n, "kernels"));
    assert_true(kernels > 0);
    int first = 0;
    while (first < n && lines[first][0] == '#') first++;
    assert_string_equal(lines[first], "scope,layer,pass,class,kernel,count,total_ns,min_ns,max_ns,flops,bytes");
    int seen[KCLASS_COUNT] = {0}, unscoped = 0, conv1 = 0;
    long count_sum = 0;
    double total_sum = 0;
    for (int i = first + 1; i < n; i++) {
        char *f[16];
        assert_int_equal(csv_fields(lines[i], f, 16), 11);
        int cls = kernel_class_parse(f[3]);
        if (cls < 0 || kernel_pass_parse(f[2]) < 0) fail_msg("%s: class %s, pass %s", prefix, f[3], f[2]);
        seen[cls] = 1;
        long count = atol(f[5]);
        if (atoi(f[0]) == 0) {
            printf("unscoped: %s %s count %ld\n", f[3], f[4], count);
            unscoped++;
        }
        if (count % steps) printf("%s: %s %s %s %s: %ld launches in %ld steps\n", prefix, f[1], f[2], f[3], f[4], count, steps);
        expect_eq(count % steps, 0);
        conv1 |= !strcmp(f[1], "layer1.0.conv1") && cls == KCLASS_CONV_WGRAD;
        count_sum += count;
        total_sum += atof(f[6]);
    }
    expect_eq(unscoped, 0);
    expect_ne(conv1, 0);
    expect_eq(count_sum, kernels);
    const kernel_class needed[] = {KCLASS_CONV_FWD, KCLASS_CONV_DGRAD, KCLASS_CONV_WGRAD, KCLASS_BATCHNORM,
                                   KCLASS_POOLING, KCLASS_GEMM, KCLASS_LOSS, KCLASS_OPTIMIZER, KCLASS_COPY};
    for (size_t k = 0; k < sizeof needed / sizeof needed[0]; k++)
        if (!seen[needed[k]]) fail_msg("%s: no %s kernel", prefix, kernel_class_name(needed[k]));
    free(text);

    snprintf(path, sizeof path, "%s.intervals.csv", prefix);
    text = test_read_text(path, e, sizeof e);
    if (!text) fail_msg("%s", e);
    long rows = 0;
    double previous = -1, sum = 0, span_ns = (t1 - t0) * 1e9;
    char *line = strtok(text, "\n");
    assert_string_equal(line, "start_ns,end_ns,scope,class,stream");
    while ((line = strtok(NULL, "\n"))) {
        double start, end;
        assert_int_equal(sscanf(line, "%lf,%lf", &start, &end), 2);
        expect_ge(start, 0);
        expect_ge(start, previous);
        expect_ge(end, start);
        expect_le(end, span_ns + 1e6);
        previous = start;
        sum += end - start;
        rows++;
    }
    expect_eq(rows, kernels);
    expect_near(sum, total_sum, 1e-6 * total_sum + rows);
    free(text);
}

static void test_train_alone(void **state) {
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s/alone", dir);
    double before = now_unix();
    int rc = test_run_binary("train", out, sizeof out, err, sizeof err, JOB_ARGS("5", prefix), NULL);
    double after = now_unix();
    if (rc != 0) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"event\":\"kernels\",\"file\":"));
    check_job(prefix, 5, before, after);
}

static void two_jobs(const char *how, const char *green) {
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/%s0", dir, how);
    snprintf(b, sizeof b, "%s/%s1", dir, how);
    double before = now_unix();
    int rc = green ? test_run_binary("job_host", out, sizeof out, err, sizeof err, "--green", green, "--job",
                                     JOB_ARGS("4", a), "--job", JOB_ARGS("7", b), NULL)
                   : test_run_binary("job_host", out, sizeof out, err, sizeof err, "--job", JOB_ARGS("4", a), "--job",
                                     JOB_ARGS("7", b), NULL);
    double after = now_unix();
    if (rc != 0) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    check_job(a, 4, before, after);
    check_job(b, 7, before, after);
}

static void test_two_jobs_on_streams(void **state) { two_jobs("streams", NULL); }
static void test_two_jobs_in_green_contexts(void **state) { two_jobs("green", test_two_green_partitions()); }

static void test_untraced_job_writes_nothing(void **state) {
    int rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--data", "synthetic",
                             "--batch", "32", "--image-size", "32", "--classes", "10", "--steps-per-epoch", "2",
                             "--epochs", "1", "--json", NULL);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "\"kernels\""));
}

int main(void) {
    test_require_gpu();
    test_tmpdir(dir, sizeof dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_alone),
        cmocka_unit_test(test_two_jobs_on_streams),
        cmocka_unit_test(test_two_jobs_in_green_contexts),
        cmocka_unit_test(test_untraced_job_writes_nothing),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    test_rmtree(dir);
    return failed;
}
