/* The kernel attribution (results/kernel_trace.h, results/kernel_attribution.h) on the CPU: a window
 * split by hand (two kernels of one job at once share the instant, the gap while another job's
 * kernel ran is waiting_others, the rest waiting_idle), the interference matrix's cells by hand, the
 * files' rules (each refusal names the file, line and what was expected), and a trace recorded on a
 * GPU (an H200: S+M+M under serial and mps, run_suite --mode all --kernels --kernels-window 0.5,
 * tests/fixtures/kernel_trace/smm_serial_mps_h200.tgz, as lab/results keeps it) through kernels.csv
 * and interference.csv: every job's classes sum to its step, alone and shared, the shares of the
 * slowdown to 1, and S's waiting beside the others is part of its slowdown under mps. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/kernel_attribution.h"
#include "results/results.h"
#include "tests/support/testutil.h"

#define RECORDED SUITE_SOURCE_DIR "/tests/fixtures/kernel_trace/smm_serial_mps_h200.tgz"

static const char HEADER[] = "# job=0\n# model=resnet26\n# precision=tf32\n# batch=128\n# device_name=Fake\n"
                             "# device_sms=132\n# sm_count=132\n# clock=realtime\n";

/* PREFIX.kernels.csv and PREFIX.intervals.csv in dir, named name; the path of the first in out. */
static void write_trace(const char *dir, const char *name, const char *t0, const char *t1, int steps,
                        const char *rows, const char *intervals, char *out, size_t size) {
    snprintf(out, size, "%s/%s.kernels.csv", dir, name);
    FILE *f = fopen(out, "w");
    assert_non_null(f);
    fprintf(f, "%s# t0=%s\n# t1=%s\n# steps=%d\n# step_ms=0.0005\n# kernels=3\n# dropped=0\n"
            "# peak_flops=1000000000000\n# peak_bytes_s=100000000000\n"
            "scope,layer,pass,class,kernel,count,total_ns,min_ns,max_ns,flops,bytes\n%s", HEADER, t0, t1, steps, rows);
    fclose(f);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s.intervals.csv", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "start_ns,end_ns,scope,class,stream\n%s", intervals);
    fclose(f);
}

/* Job A over 1000 ns (2 steps): conv_fwd [0,400), its weight gradient [200,600) on a second stream,
 * batch norm [700,900); job B: a GEMM [500,800). Alone A's kernels take 200, 400 and 100 ns. */
static const char A_ROWS[] = "0,conv1,forward,conv_fwd,\"fprop<float, 4>\",1,400000,400000,400000,2000,100\n"
                             "1,conv1,wgrad,conv_wgrad,wgrad,1,400000,400000,400000,2000,100\n"
                             "2,bn1,forward,batchnorm,bn_fw,1,200000,200000,200000,10,1000\n";
static const char A_ALONE_ROWS[] = "5,conv1,forward,conv_fwd,\"fprop<float, 4>\",1,200000,200000,200000,2000,100\n"
                                   "6,conv1,wgrad,conv_wgrad,wgrad,1,400000,400000,400000,2000,100\n"
                                   "7,bn1,forward,batchnorm,bn_fw,1,100000,100000,100000,10,1000\n";

typedef struct traces {
    char dir[256];
    char a[PATH_MAX], b[PATH_MAX], alone[PATH_MAX];
} traces;

static void make_traces(traces *t) {
    test_tmpdir(t->dir, sizeof t->dir);
    write_trace(t->dir, "a", "100.000000000", "100.001000000", 2, A_ROWS,
                "0,400000,0,conv_fwd,7\n200000,600000,1,conv_wgrad,8\n700000,900000,2,batchnorm,7\n", t->a, sizeof t->a);
    /* B's window starts 100 us later: its GEMM [400,700) us is [500,800) on A's time line */
    write_trace(t->dir, "b", "100.000100000", "100.001100000", 1, "0,fc,forward,gemm,gemm,1,300000,300000,300000,0,0\n",
                "400000,700000,0,gemm,7\n", t->b, sizeof t->b);
    /* alone (800 us): conv [0,200), wgrad [100,500) (its class by its place in the list), bn [600,700) */
    write_trace(t->dir, "alone", "50.5", "50.5008", 2, A_ALONE_ROWS,
                "0,200000,5,conv_fwd,7\n100000,500000,6,2,8\n600000,700000,7,batchnorm,7\n", t->alone, sizeof t->alone);
}

static void test_split_by_hand(void **state) {
    (void)state;
    traces t;
    make_traces(&t);
    char err[1024];
    ktrace a, b;
    assert_int_equal(ktrace_read(&a, t.a, err, sizeof err), 0);
    assert_int_equal(ktrace_read(&b, t.b, err, sizeof err), 0);
    assert_string_equal(a.rows[0].kernel, "fprop<float, 4>"); /* quoted per RFC 4180 */
    const ktrace *others[] = {&b};
    kattr_split s;
    assert_int_equal(kattr_split_job(&a, others, 1, &s), 0);
    assert_true(fabs(s.window_ns - 1e6) < 1e-9);
    /* in us: [0,200) conv alone 200; [200,400) shared by two: 100 each; [400,600) wgrad 200; [600,700) B ran:
     * 100; [700,900) bn 200; [900,1000) idle 100 */
    assert_true(fabs(s.part_ns[KCLASS_CONV_FWD] - 3e5) < 1e-6);
    assert_true(fabs(s.part_ns[KCLASS_CONV_WGRAD] - 3e5) < 1e-6);
    assert_true(fabs(s.part_ns[KCLASS_BATCHNORM] - 2e5) < 1e-6);
    assert_true(fabs(s.part_ns[KATTR_WAITING_OTHERS] - 1e5) < 1e-6);
    assert_true(fabs(s.part_ns[KATTR_WAITING_IDLE] - 1e5) < 1e-6);
    double sum = 0;
    for (int p = 0; p < KATTR_PARTS; p++) sum += s.part_ns[p];
    assert_true(fabs(sum - 1e6) < 1e-6);
    assert_int_equal(s.key_count, 3);
    assert_true(fabs(s.flops[KCLASS_CONV_FWD] - 2000) < 1e-9 && fabs(s.bytes[KCLASS_BATCHNORM] - 1000) < 1e-9);
    kattr_split_free(&s);
    /* alone, nobody else: all waiting is idle */
    assert_int_equal(kattr_split_job(&a, NULL, 0, &s), 0);
    assert_true(fabs(s.part_ns[KATTR_WAITING_IDLE] - 2e5) < 1e-6 && s.part_ns[KATTR_WAITING_OTHERS] == 0);
    kattr_split_free(&s);
    ktrace_free(&a);
    ktrace_free(&b);
    test_rmtree(t.dir);
}

static void test_matrix_by_hand(void **state) {
    (void)state;
    traces t;
    make_traces(&t);
    char err[1024];
    ktrace a, b, alone;
    assert_int_equal(ktrace_read(&a, t.a, err, sizeof err), 0);
    assert_int_equal(ktrace_read(&b, t.b, err, sizeof err), 0);
    assert_int_equal(ktrace_read(&alone, t.alone, err, sizeof err), 0);
    assert_int_equal(alone.intervals[1].cls, KCLASS_CONV_WGRAD); /* a class by its place in the list */
    const ktrace *others[] = {&b};
    kattr_matrix m;
    memset(&m, 0, sizeof m);
    assert_int_equal(kattr_matrix_add(&a, others, 1, &alone, &m), 0);
    /* conv 400 us shared, 200 alone, never beside B: 2.0 beside none */
    assert_true(fabs(m.shared_ns[KCLASS_CONV_FWD][KATTR_BESIDE_NONE] / m.alone_ns[KCLASS_CONV_FWD][KATTR_BESIDE_NONE] - 2) < 1e-9);
    assert_true(m.shared_ns[KCLASS_CONV_FWD][KCLASS_GEMM] == 0);
    /* wgrad as fast as alone: 300 us beside none, 100 beside the GEMM */
    assert_true(fabs(m.shared_ns[KCLASS_CONV_WGRAD][KATTR_BESIDE_NONE] - 3e5) < 1e-6);
    assert_true(fabs(m.shared_ns[KCLASS_CONV_WGRAD][KCLASS_GEMM] / m.alone_ns[KCLASS_CONV_WGRAD][KCLASS_GEMM] - 1) < 1e-9);
    /* bn twice as slow: [700,800) beside the GEMM, [800,900) beside none */
    assert_true(fabs(m.shared_ns[KCLASS_BATCHNORM][KCLASS_GEMM] - 1e5) < 1e-6);
    assert_true(fabs(m.alone_ns[KCLASS_BATCHNORM][KCLASS_GEMM] - 5e4) < 1e-6);
    assert_true(fabs(m.shared_ns[KCLASS_BATCHNORM][KATTR_BESIDE_NONE] / m.alone_ns[KCLASS_BATCHNORM][KATTR_BESIDE_NONE] - 2) < 1e-9);
    assert_true(m.unmatched_ns == 0);
    ktrace_free(&a);
    ktrace_free(&b);
    ktrace_free(&alone);
    test_rmtree(t.dir);
}

/* kernels.csv of the hand-made pair: the step, each class's ms per step and share of the slowdown
 * (alone: conv 150 us, wgrad 350, bn 100, idle 200 over 2 steps; shared as in test_split_by_hand). */
static void test_files_by_hand(void **state) {
    (void)state;
    traces t;
    make_traces(&t);
    kattr_job jobs[] = {{0, "A", t.a, t.alone, "serial"}, {1, "B", t.b, NULL, ""}};
    char err[1024], path[PATH_MAX];
    assert_int_equal(kattr_write(t.dir, "mps", jobs, 2, 1, stderr, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/kernels.csv", t.dir);
    char *text = test_read_text(path, err, sizeof err);
    assert_non_null(text);
    assert_non_null(strstr(text, "\nmps,0,A,step,step,,,0.4000,0.5000,0.1000,1.0000,"));
    assert_non_null(strstr(text, "\nmps,0,A,class,conv_fwd,,,0.0750,0.1500,0.0750,0.7500,"));
    assert_non_null(strstr(text, "\nmps,0,A,class,conv_wgrad,,,0.1750,0.1500,-0.0250,-0.2500,"));
    assert_non_null(strstr(text, "\nmps,0,A,class,waiting_others,,,0.0000,0.0500,0.0500,0.5000,"));
    assert_non_null(strstr(text, "\nmps,0,A,class,waiting_idle,,,0.1000,0.0500,-0.0500,-0.5000,"));
    /* bn alone: 10 FLOP and 1000 bytes a launch (0.00001 GFLOP, 0.001 MB a step), against a ridge of 10:
     * the memory side of the roofline, but at a ten-thousandth of the DRAM bandwidth bound by neither */
    assert_non_null(strstr(text, "\nmps,0,A,class,batchnorm,,,0.0500,0.1000,0.0500,0.5000,0.0000,0.001,0.010,10.000,neither,"));
    assert_non_null(strstr(text, "\nmps,0,A,layer,conv_fwd,conv1,forward,0.0750,0.1500,"));
    assert_non_null(strstr(text, "\nmps,1,B,step,step,,,,1.0000,,,")); /* no alone: empty, never 0 */
    assert_null(strstr(text, "nan"));
    free(text);
    snprintf(path, sizeof path, "%s/interference.csv", t.dir);
    text = test_read_text(path, err, sizeof err);
    assert_non_null(text);
    assert_non_null(strstr(text, "\nmps,0,A,batchnorm,gemm,2.0000,0.1000,traced"));
    assert_non_null(strstr(text, "\nmps,0,A,conv_fwd,none,2.0000,0.4000,traced"));
    assert_non_null(strstr(text, "\nmps,0,A,conv_wgrad,gemm,1.0000,0.1000,traced"));
    assert_null(strstr(text, "mps,all,")); /* one job with an alone: its rows are all */
    free(text);
    /* contexts taking turns (naive): the same intervals make no matrix, and the time B's kernel ran
     * while A had none is still A's waiting on the others (the slices it lost) */
    assert_int_equal(kattr_write(t.dir, "naive", jobs, 2, 0, stderr, err, sizeof err), 0);
    text = test_read_text(path, err, sizeof err);
    assert_non_null(text);
    assert_string_equal(text, "mode,job,label,class,beside,slowdown,overlap_ms,measurement\n");
    free(text);
    snprintf(path, sizeof path, "%s/kernels.csv", t.dir);
    text = test_read_text(path, err, sizeof err);
    assert_non_null(text);
    assert_non_null(strstr(text, "\nnaive,0,A,class,waiting_others,,,0.0000,0.0500,0.0500,0.5000,"));
    free(text);
    test_rmtree(t.dir);
}

/* Each broken file is refused naming the file, its line and what was expected. */
static void test_refusals(void **state) {
    (void)state;
    char dir[256], path[PATH_MAX], err[1024];
    test_tmpdir(dir, sizeof dir);
    static const char ok_row[] = "0,conv1,forward,conv_fwd,k,1,10,10,10,0,0\n";
    struct { const char *rows, *intervals, *t1; const char *message; } cases[] = {
        {"0,conv1,forward,conv_forward,k,1,10,10,10,0,0\n", "", "2", "a.kernels.csv:18: class: 'conv_forward' is none"},
        {"0,conv1,sideways,conv_fwd,k,1,10,10,10,0,0\n", "", "2", "pass: expected forward, dgrad"},
        {"0,conv1,forward,conv_fwd,k,1,-10,10,10,0,0\n", "", "2", "total_ns: expected a number >= 0"},
        {"0,conv1,forward,conv_fwd,\"k,1,10,10,10,0,0\n", "", "2", "expected the 11 fields"},
        {ok_row, "0,5,3,conv_fwd,7\n", "2", "a.intervals.csv:2: scope: '3' is no scope"},
        {ok_row, "5,0,0,conv_fwd,7\n", "2", "start_ns, end_ns: expected 0 <= start <= end"},
        {ok_row, "0,5,0,convolution,7\n", "2", "class: 'convolution' is none of the classes"},
        {ok_row, "", "1", "t1 is not after t0"},
        {ok_row, "", "2.x", "t1: '2.x' is not a value of it"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        write_trace(dir, "a", "1.5", cases[k].t1, 1, cases[k].rows, cases[k].intervals, path, sizeof path);
        ktrace t;
        err[0] = 0;
        assert_int_equal(ktrace_read(&t, path, err, sizeof err), -1);
        if (!strstr(err, cases[k].message)) fprintf(stderr, "case %zu: %s\n", k, err);
        assert_non_null(strstr(err, cases[k].message));
    }
    /* a header line missing */
    snprintf(path, sizeof path, "%s/b.kernels.csv", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "# job=0\nscope,layer,pass,class,kernel,count,total_ns,min_ns,max_ns,flops,bytes\n");
    fclose(f);
    ktrace t;
    assert_int_equal(ktrace_read(&t, path, err, sizeof err), -1);
    assert_non_null(strstr(err, "'# model=...' is missing"));
    assert_int_equal(ktrace_read(&t, "/nonexistent/x.csv", err, sizeof err), -1);
    assert_non_null(strstr(err, "ends in .kernels.csv"));
    test_rmtree(dir);
}

/* A column of a CSV line (0-based), as a number; NaN when empty. */
static double column(const char *line, int k) {
    for (int i = 0; i < k && line; i++) line = strchr(line, ',') ? strchr(line, ',') + 1 : NULL;
    return line && *line != ',' && *line != '\n' ? atof(line) : NAN;
}

/* The recorded S+M+M: alone found through the serial run's summary.json (job 2 is job 1's
 * measurement), every job's classes sum to its step alone and shared and the shares to 1. */
static void test_recorded(void **state) {
    (void)state;
    char dir[256], rec[256], err[1024], alone[3][PATH_MAX], shared[3][PATH_MAX], cmd[1024], run[PATH_MAX];
    test_tmpdir(dir, sizeof dir);
    test_tmpdir(rec, sizeof rec);
    snprintf(cmd, sizeof cmd, "tar xzf '%s' -C '%s'", RECORDED, rec);
    assert_int_equal(system(cmd), 0);
    kattr_job jobs[3];
    static const char *const labels[] = {"S", "M", "M"};
    for (int j = 0; j < 3; j++) {
        snprintf(run, sizeof run, "%s/serial", rec);
        assert_int_equal(kattr_file_of_run(run, j, alone[j], sizeof alone[j]), 0);
        snprintf(run, sizeof run, "%s/mps", rec);
        assert_int_equal(kattr_file_of_run(run, j, shared[j], sizeof shared[j]), 0);
        jobs[j] = (kattr_job){j, labels[j], shared[j], alone[j], "serial"};
    }
    assert_non_null(strstr(alone[2], "serial/kernels/job1.kernels.csv")); /* serial measured M once */
    snprintf(run, sizeof run, "%s/serial", rec);
    assert_int_equal(kattr_file_of_run(run, 3, alone[0], sizeof alone[0]), -1);
    assert_int_equal(kattr_write(dir, "mps", jobs, 3, 1, stderr, err, sizeof err), 0);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/kernels.csv", dir);
    char *text = test_read_text(path, err, sizeof err);
    assert_non_null(text);
    for (int j = 0; j < 3; j++) {
        double step[2] = {NAN, NAN}, sum[2] = {0, 0}, share = 0;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "mps,%d,", j);
        for (char *next = text; next && *next;) {
            char line[1024];
            size_t n = strcspn(next, "\n");
            snprintf(line, sizeof line, "%.*s", (int)n, next);
            next = next[n] ? next + n + 1 : NULL;
            if (strncmp(line, prefix, strlen(prefix))) continue;
            if (strstr(line, ",step,step,")) step[0] = column(line, 7), step[1] = column(line, 8);
            if (!strstr(line, ",class,")) continue;
            sum[0] += column(line, 7), sum[1] += column(line, 8);
            share += column(line, 10);
        }
        if (!(fabs(sum[0] - step[0]) < 2e-3 && fabs(sum[1] - step[1]) < 2e-3 && fabs(share - 1) < 2e-2))
            fprintf(stderr, "job %d: step %g %g, classes %g %g, shares %g\n", j, step[0], step[1], sum[0], sum[1], share);
        assert_true(step[1] > step[0]); /* slower beside the others */
        assert_true(fabs(sum[0] - step[0]) < 2e-3 && fabs(sum[1] - step[1]) < 2e-3);
        assert_true(fabs(share - 1) < 2e-2);
    }
    free(text);
    snprintf(path, sizeof path, "%s/interference.csv", dir);
    text = test_read_text(path, err, sizeof err);
    assert_non_null(text);
    assert_non_null(strstr(text, "mps,all,,batchnorm,conv_fwd,"));
    /* beside the Ms' convolutions S's batch norm ran slower than alone */
    char *cell = strstr(text, "mps,0,S,batchnorm,conv_fwd,");
    assert_non_null(cell);
    expect_gt(column(cell, 5), 1.0);
    free(text);
    /* under mps S waited while the others' kernels ran: a part of its slowdown the split names */
    snprintf(path, sizeof path, "%s/kernels.csv", dir);
    text = test_read_text(path, err, sizeof err);
    assert_non_null(text);
    cell = strstr(text, "mps,0,S,class,waiting_others,");
    assert_non_null(cell);
    expect_gt(column(cell, 9), 0.1); /* delta_ms */
    /* alone, S's optimizer streams its bytes near the DRAM roof: memory-bound; its convolutions reach
     * neither roof */
    cell = strstr(text, "mps,0,S,class,optimizer,");
    assert_non_null(cell);
    expect_gt(column(cell, 16), 0.5);
    char *eol = strchr(cell, '\n'), *word = strstr(cell, ",memory,");
    assert_true(word && (!eol || word < eol));
    cell = strstr(text, "mps,0,S,class,conv_fwd,");
    assert_non_null(cell);
    eol = strchr(cell, '\n'), word = strstr(cell, ",neither,");
    assert_true(word && (!eol || word < eol));
    free(text);
    test_rmtree(dir);
    test_rmtree(rec);
}

/* --mode all's top folder: each mode's rows under one header. */
static void test_join(void **state) {
    (void)state;
    traces t;
    make_traces(&t);
    char a[PATH_MAX], b[PATH_MAX], err[1024];
    snprintf(a, sizeof a, "%s/serial", t.dir);
    snprintf(b, sizeof b, "%s/mps", t.dir);
    assert_int_equal(results_make_dirs(a, err, sizeof err), 0);
    assert_int_equal(results_make_dirs(b, err, sizeof err), 0);
    kattr_job alone[] = {{0, "A", t.alone, t.alone, "self"}};
    kattr_job both[] = {{0, "A", t.a, t.alone, "serial"}, {1, "B", t.b, NULL, ""}};
    assert_int_equal(kattr_write(a, "serial", alone, 1, 0, stderr, err, sizeof err), 0);
    assert_int_equal(kattr_write(b, "mps", both, 2, 1, stderr, err, sizeof err), 0);
    const char *dirs[] = {a, b};
    assert_int_equal(kattr_join(t.dir, dirs, 2, err, sizeof err), 0);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/kernels.csv", t.dir);
    char *text = test_read_text(path, err, sizeof err);
    assert_non_null(text);
    assert_int_equal(strncmp(text, "mode,job,", 9), 0);
    assert_null(strstr(text + 1, "\nmode,job,")); /* one header */
    assert_non_null(strstr(text, "\nserial,0,A,step,"));
    assert_non_null(strstr(text, "\nmps,1,B,step,"));
    free(text);
    test_rmtree(t.dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_by_hand), cmocka_unit_test(test_matrix_by_hand),
        cmocka_unit_test(test_files_by_hand), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_recorded),       cmocka_unit_test(test_join),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
