/* The kernel trace's host side, without a GPU: the classes and passes by name, the scope table
 * (layers named by their weights' addresses, scopes interned, the thread's mark nesting and a
 * job that does not trace marking nothing), the tally of made-up records (the window's bounds,
 * the aggregate per scope and kernel, the intervals sorted and capped), the two files as the
 * trace format names them (read back: the header's keys in order, RFC 4180 quoting, a scope's
 * FLOPs and bytes on its first row only), kernel names shortened, the runner's trace line, and
 * the peaks of the arch table. tests/runner/gpu_kernel_trace.c traces a real job. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/core/kernel_scope.h"
#include "models/core/kernel_tally.h"
#include "runner/train/kernel_files.h"
#include "runner/train/step_window.h"
#include "tests/support/testutil.h"

static void test_classes_and_passes_by_name(void **state) {
    static const char *const format[] = {"conv_fwd", "conv_dgrad", "conv_wgrad", "gemm", "batchnorm", "elementwise",
                                         "pooling", "attention", "embedding", "optimizer", "loss", "copy",
                                         "collective", "other"};
    assert_int_equal(KCLASS_COUNT, 14);
    for (int c = 0; c < KCLASS_COUNT; c++) {
        assert_string_equal(kernel_class_name((kernel_class)c), format[c]);
        assert_int_equal(kernel_class_parse(format[c]), c);
    }
    assert_int_equal(kernel_class_parse("conv"), -1);
    assert_string_equal(kernel_class_name(KCLASS_COUNT), "other");
    static const char *const passes[] = {"forward", "dgrad", "wgrad", "backward", "update", "-"};
    for (int p = 0; p < KPASS_COUNT; p++) assert_int_equal(kernel_pass_parse(passes[p]), p);
    assert_int_equal(kernel_pass_parse("fwd"), -1);
    assert_int_equal(kernel_class_of_name("[memcpy HtoD]"), KCLASS_COPY);
    assert_int_equal(kernel_class_of_name("[memset]"), KCLASS_COPY);
    assert_int_equal(kernel_class_of_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), KCLASS_COLLECTIVE);
    assert_int_equal(kernel_class_of_name("_Z9bn_applyPf"), KCLASS_OTHER);
}

static void test_scope_table(void **state) {
    kernel_scopes *s = kernel_scopes_create();
    assert_non_null(s);
    float weights[4];
    const char *names[] = {"layer3.2.conv2.weight", "bn1.weight", "bn1.bias", "fc.weight", "pos_embed"};
    const void *keys[] = {&weights[0], &weights[1], &weights[2], &weights[3], &weights[0]};
    assert_int_equal(kernel_scopes_name_params(s, names, keys, 5), 0);
    assert_int_equal(kernel_scopes_count(s), 1); /* scope 0 only */
    kernel_scope_info none = kernel_scopes_info(s, 0);
    assert_string_equal(none.layer, "-");
    assert_int_equal(none.pass, KPASS_NONE);
    assert_int_equal(none.cls, KCLASS_OTHER);

    int fwd = kernel_scopes_intern(s, &weights[0], NULL, KPASS_FORWARD, KCLASS_CONV_FWD, 1e9, 2e6);
    int wgrad = kernel_scopes_intern(s, &weights[0], NULL, KPASS_WGRAD, KCLASS_CONV_WGRAD, 1e9, 2e6);
    assert_true(fwd > 0 && wgrad > 0 && fwd != wgrad);
    assert_int_equal(kernel_scopes_intern(s, &weights[0], NULL, KPASS_FORWARD, KCLASS_CONV_FWD, 5, 5), fwd);
    kernel_scope_info info = kernel_scopes_info(s, fwd);
    assert_string_equal(info.layer, "layer3.2.conv2");
    assert_true(info.flops == 1e9 && info.bytes == 2e6); /* the first use's */
    assert_string_equal(kernel_scopes_info(s, kernel_scopes_intern(s, &weights[1], NULL, KPASS_BACKWARD,
                                                                   KCLASS_BATCHNORM, 0, 0)).layer, "bn1");
    int loss = kernel_scopes_intern(s, NULL, "loss", KPASS_NONE, KCLASS_LOSS, 0, 0);
    assert_string_equal(kernel_scopes_info(s, loss).layer, "loss");
    assert_int_equal(kernel_scopes_intern(s, NULL, "loss", KPASS_NONE, KCLASS_LOSS, 0, 0), loss);
    int stranger = 0;
    assert_string_equal(kernel_scopes_info(s, kernel_scopes_intern(s, &stranger, NULL, KPASS_FORWARD,
                                                                   KCLASS_GEMM, 0, 0)).layer, "?");
    /* many scopes: the tables grow and every one is found again */
    char name[32];
    for (int i = 0; i < 500; i++) {
        snprintf(name, sizeof name, "blocks.%d", i);
        int made = kernel_scopes_intern(s, NULL, name, KPASS_FORWARD, KCLASS_GEMM, i, 0);
        assert_int_equal(kernel_scopes_intern(s, NULL, name, KPASS_FORWARD, KCLASS_GEMM, 0, 0), made);
    }
    snprintf(name, sizeof name, "blocks.%d", 321);
    int id = kernel_scopes_intern(s, NULL, name, KPASS_FORWARD, KCLASS_GEMM, 0, 0);
    assert_true(kernel_scopes_info(s, id).flops == 321);
    kernel_scopes_free(s);
}

static void test_thread_mark_nests(void **state) {
    kernel_scopes *s = kernel_scopes_create();
    int scope = -1;
    assert_null(kernel_scope_current(&scope));
    /* a job that does not trace: nothing is marked */
    assert_int_equal(kernel_scope_enter(NULL, NULL, "loss", KPASS_NONE, KCLASS_LOSS, 0, 0), -1);
    assert_null(kernel_scope_current(&scope));
    kernel_scope_leave(-1);

    kernel_scope_bind_thread(s);
    assert_ptr_equal(kernel_scope_current(&scope), s);
    assert_int_equal(scope, 0);
    int outer = kernel_scope_enter(s, NULL, "model", KPASS_FORWARD, KCLASS_OTHER, 0, 0);
    int model;
    kernel_scope_current(&model);
    int inner = kernel_scope_enter(s, NULL, "maxpool", KPASS_FORWARD, KCLASS_POOLING, 0, 0);
    kernel_scope_current(&scope);
    assert_string_equal(kernel_scopes_info(s, scope).layer, "maxpool");
    kernel_scope_leave(inner);
    kernel_scope_current(&scope);
    assert_int_equal(scope, model);
    kernel_scope_leave(outer);
    kernel_scope_current(&scope);
    assert_int_equal(scope, 0);
    kernel_scope_unbind_thread();
    /* a mark on an unbound thread binds it for its span only */
    int token = kernel_scope_enter(s, NULL, "loss", KPASS_NONE, KCLASS_LOSS, 0, 0);
    assert_ptr_equal(kernel_scope_current(&scope), s);
    assert_true(scope > 0);
    kernel_scope_leave(token);
    assert_null(kernel_scope_current(&scope));
    kernel_scopes_free(s);
}

#define T0 1700000000.25
/* T0 + s seconds in unix ns, exactly */
#define NS(s) (1700000000ULL * 1000000000ULL + 250000000ULL + (uint64_t)(int64_t)llround((s) * 1e9))

static void test_tally_window_and_aggregate(void **state) {
    kernel_tally *t = kernel_tally_create(T0, T0 + 1.0, 4);
    static const char conv[] = "_Z4convPf", bn[] = "_Z2bnPf";
    char conv_again[] = "_Z4convPf"; /* another pointer, the same text */
    assert_int_equal(kernel_tally_add(t, NS(0.5), NS(0.6), 2, KCLASS_CONV_FWD, 7, conv), 0);
    assert_int_equal(kernel_tally_add(t, NS(0.1), NS(0.3), 2, KCLASS_CONV_FWD, 7, conv_again), 0);
    assert_int_equal(kernel_tally_add(t, NS(0.2), NS(0.25), 1, KCLASS_BATCHNORM, 8, bn), 0);
    assert_int_equal(kernel_tally_add(t, NS(-0.1), NS(0.05), 1, KCLASS_BATCHNORM, 8, bn), 0); /* before t0 */
    assert_int_equal(kernel_tally_add(t, NS(1.2), NS(1.3), 1, KCLASS_BATCHNORM, 8, bn), 0);   /* after t1 */
    assert_int_equal(kernel_tally_kernels(t), 3);
    const kernel_tally_row *rows;
    assert_int_equal(kernel_tally_rows(t, &rows), 2);
    assert_int_equal(rows[0].scope, 1); /* by scope */
    assert_int_equal(rows[1].scope, 2);
    assert_int_equal(rows[1].count, 2);
    assert_true(llabs(rows[1].total_ns - 300000000) < 1000);
    assert_true(llabs(rows[1].min_ns - 100000000) < 1000 && llabs(rows[1].max_ns - 200000000) < 1000);
    assert_string_equal(kernel_tally_name(t, rows[1].name), "_Z4convPf");
    const kernel_interval *iv;
    assert_int_equal(kernel_tally_intervals(t, &iv), 3);
    assert_true(iv[0].start_ns < iv[1].start_ns && iv[1].start_ns < iv[2].start_ns); /* by start */
    assert_true(llabs(iv[0].start_ns - 100000000) < 1000 && iv[0].stream == 7);
    /* past the cap: counted, not kept; the aggregate still has them */
    for (int i = 0; i < 3; i++) kernel_tally_add(t, NS(0.7 + 0.01 * i), NS(0.705 + 0.01 * i), 1, KCLASS_BATCHNORM, 8, bn);
    assert_int_equal(kernel_tally_intervals(t, &iv), 4);
    assert_int_equal(kernel_tally_dropped(t), 2);
    assert_int_equal(kernel_tally_kernels(t), 6);
    kernel_tally_lost(t, 5);
    assert_int_equal(kernel_tally_dropped(t), 7);
    kernel_tally_free(t);

    /* a window whose end comes later (the last epoch's) */
    t = kernel_tally_create(T0, INFINITY, 10);
    kernel_tally_add(t, NS(100), NS(101), 0, KCLASS_OTHER, 1, bn);
    assert_int_equal(kernel_tally_kernels(t), 1);
    kernel_tally_close(t, T0 + 200);
    assert_true(kernel_tally_t1(t) == T0 + 200);
    kernel_tally_free(t);
}

/* The lines of a file (at most 64), newline removed, in lines[] pointing into text. */
static int split_lines(char *text, char **lines, int max) {
    int n = 0;
    for (char *p = strtok(text, "\n"); p && n < max; p = strtok(NULL, "\n")) lines[n++] = p;
    return n;
}

static void test_files_as_the_format_says(void **state) {
    char dir[512], prefix[600], err[512];
    test_tmpdir(dir, sizeof dir);
    snprintf(prefix, sizeof prefix, "%s/job0", dir);
    kernel_scopes *s = kernel_scopes_create();
    float w;
    const char *names[] = {"layer1.0.conv1.weight"};
    const void *keys[] = {&w};
    kernel_scopes_name_params(s, names, keys, 1);
    int conv = kernel_scopes_intern(s, &w, NULL, KPASS_WGRAD, KCLASS_CONV_WGRAD, 2.5e9, 4e6);
    int odd = kernel_scopes_intern(s, NULL, "odd,name", KPASS_NONE, KCLASS_OTHER, 0, 0);
    kernel_tally *t = kernel_tally_create(T0, T0 + 1.0, 100);
    kernel_tally_add(t, NS(0.1), NS(0.3), conv, KCLASS_CONV_WGRAD, 7, "_Z9wgrad_bigPfi");
    kernel_tally_add(t, NS(0.4), NS(0.45), conv, KCLASS_COPY, 7, "[memset]");
    kernel_tally_add(t, NS(0.2), NS(0.21), odd, KCLASS_OTHER, 9, "kernel \"with\", comma");
    kernel_file_header h = {.job = "job0", .model = "resnet26", .precision = PRECISION_BF16, .batch = 128,
                            .device_name = "NVIDIA H200", .device_sms = 132, .sm_count = 64, .steps = 11,
                            .step_ms = 12.5, .peak_flops = 5e14, .peak_bytes_s = 4.8e12};
    assert_int_equal(kernel_files_write(prefix, &h, t, s, err, sizeof err), 0);
    char kpath[700], ipath[700];
    kernel_files_paths(prefix, kpath, ipath, sizeof kpath);
    char *text = test_read_text(kpath, err, sizeof err);
    assert_non_null(text);
    char *lines[64];
    int n = split_lines(text, lines, 64);
    static const char *const keys_in_order[] = {"job", "model", "precision", "batch", "device_name", "device_sms",
                                                "sm_count", "clock", "t0", "t1", "steps", "step_ms", "kernels",
                                                "dropped", "peak_flops", "peak_bytes_s"};
    for (int k = 0; k < 16; k++) {
        char want[40];
        snprintf(want, sizeof want, "# %s=", keys_in_order[k]);
        assert_true(!strncmp(lines[k], want, strlen(want)));
    }
    assert_string_equal(lines[0], "# job=job0");
    assert_string_equal(lines[2], "# precision=bf16");
    assert_string_equal(lines[7], "# clock=realtime");
    assert_string_equal(lines[8], "# t0=1700000000.250000000");
    assert_string_equal(lines[12], "# kernels=3");
    assert_string_equal(lines[16], "scope,layer,pass,class,kernel,count,total_ns,min_ns,max_ns,flops,bytes");
    assert_int_equal(n, 20);
    /* the conv scope's rows: the longer first, FLOPs and bytes on it only */
    char want[256];
    snprintf(want, sizeof want, "%d,layer1.0.conv1,wgrad,conv_wgrad,wgrad_big,1,", conv);
    assert_true(!strncmp(lines[17], want, strlen(want)));
    assert_non_null(strstr(lines[17], ",2.5e+09,4e+06"));
    snprintf(want, sizeof want, "%d,layer1.0.conv1,wgrad,copy,[memset],1,", conv);
    assert_true(!strncmp(lines[18], want, strlen(want)));
    assert_non_null(strstr(lines[18], ",0,0"));
    snprintf(want, sizeof want, "%d,\"odd,name\",-,other,\"kernel \"\"with\"\", comma\",1,", odd);
    assert_true(!strncmp(lines[19], want, strlen(want)));
    free(text);
    text = test_read_text(ipath, err, sizeof err);
    assert_non_null(text);
    n = split_lines(text, lines, 64);
    assert_int_equal(n, 4);
    assert_string_equal(lines[0], "start_ns,end_ns,scope,class,stream");
    assert_true(!strncmp(lines[1], "1000000", 7)); /* ns since t0, sorted by start */
    snprintf(want, sizeof want, ",%d,other,9", odd);
    assert_non_null(strstr(lines[2], want));
    free(text);
    /* a prefix in a folder that does not exist: the file and its reason */
    snprintf(prefix, sizeof prefix, "%s/no/such/job0", dir);
    assert_int_equal(kernel_files_write(prefix, &h, t, s, err, sizeof err), -1);
    assert_non_null(strstr(err, "no/such/job0.intervals.csv"));
    kernel_tally_free(t);
    kernel_scopes_free(s);
    test_rmtree(dir);
}

static void test_kernel_names_shortened(void **state) {
    char out[256], field[300];
    kernel_name_short("_Z8bn_applyPfPKfi", out, sizeof out);
    assert_string_equal(out, "bn_apply");
    kernel_name_short("_ZN5cudnn4gemm10sgemm_kernILi4EEEvPfS2_", out, sizeof out);
    assert_string_equal(out, "cudnn::gemm::sgemm_kern<4>");
    kernel_name_short("[memcpy HtoD]", out, sizeof out);
    assert_string_equal(out, "[memcpy HtoD]");
    kernel_name_short("plain_c_kernel", out, sizeof out);
    assert_string_equal(out, "plain_c_kernel");
    char longer[400];
    memset(longer, 'k', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    kernel_name_short(longer, out, sizeof out);
    assert_int_equal(strlen(out), KERNEL_NAME_MAX);
    assert_string_equal(out + KERNEL_NAME_MAX - 3, "...");
    kernel_csv_field("a,b", field, sizeof field);
    assert_string_equal(field, "\"a,b\"");
    kernel_csv_field("plain", field, sizeof field);
    assert_string_equal(field, "plain");
    kernel_csv_field("say \"hi\"", field, sizeof field);
    assert_string_equal(field, "\"say \"\"hi\"\"\"");
}

static void test_trace_line(void **state) {
    step_windows w;
    step_windows_init(&w, 128);
    assert_int_equal(step_windows_command(&w, "window 100 110"), 0);
    assert_int_equal(step_windows_command(&w, "trace 120.5 125.25"), 2);
    assert_true(w.traced && w.trace.t0 == 120.5 && w.trace.t1 == 125.25);
    assert_int_equal(step_windows_command(&w, "trace 130 140"), -1); /* one traced window */
    step_windows w2;
    step_windows_init(&w2, 128);
    assert_int_equal(step_windows_command(&w2, "trace 140 130"), -1);
    assert_int_equal(step_windows_command(&w2, "trace 1 2 3"), -1);
    assert_int_equal(step_windows_command(&w2, "trace x y"), -1);
    assert_false(w2.traced);
    assert_int_equal(w.window_count, 1); /* the trace line is no measured window */
    step_windows_free(&w);
    step_windows_free(&w2);
}

static void test_peaks(void **state) {
    /* an H100 SXM's 132 SMs at 1980 MHz: 4096 dense bf16 FLOP a clock per SM */
    assert_true(fabs(kernel_peak_flops(9, 0, PRECISION_BF16, 132, 1980000) - 4096.0 * 132 * 1.98e9) < 1e6);
    assert_true(fabs(kernel_peak_flops(9, 0, PRECISION_TF32, 66, 1980000) - 2048.0 * 66 * 1.98e9) < 1e6);
    assert_true(kernel_peak_flops(9, 0, PRECISION_FP32, 132, 1980000) < kernel_peak_flops(9, 0, PRECISION_TF32, 132, 1980000));
    assert_true(kernel_peak_flops(7, 5, PRECISION_BF16, 40, 1590000) == 0); /* not in the table */
    assert_true(fabs(kernel_peak_bytes(2619000, 5120) - 3.352e12) < 1e9);
    assert_true(kernel_peak_bytes(0, 5120) == 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_classes_and_passes_by_name),
        cmocka_unit_test(test_scope_table),
        cmocka_unit_test(test_thread_mark_nests),
        cmocka_unit_test(test_tally_window_and_aggregate),
        cmocka_unit_test(test_files_as_the_format_says),
        cmocka_unit_test(test_kernel_names_shortened),
        cmocka_unit_test(test_trace_line),
        cmocka_unit_test(test_peaks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
