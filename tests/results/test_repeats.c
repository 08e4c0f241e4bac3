/* The summary across repeats (results/repeats.h): the ranking line on hand-made spreads (better
 * first by median, ">" or "<" only where ranges do not overlap, "~" else, modes without values left
 * out), and the reading of hand-made repeat folders (summary.json by field name, a mode missing
 * from a repeat, SM activity from timeline.csv) into repeats.json and repeats.csv. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "results/repeats.h"
#include "tests/support/testutil.h"

static spread of3(double a, double b, double c) {
    double v[] = {a, b, c};
    return spread_of(v, 3);
}

static void test_rank_line(void **state) {
    (void)state;
    char line[256];
    const char *names[] = {"naive", "mps", "streams", "green", "mig"};
    spread s[] = {of3(1.20, 1.25, 1.22), of3(1.40, 1.45, 1.42), of3(1.44, 1.46, 1.41), of3(1.50, 1.55, 1.52),
                  spread_of(NULL, 0)};
    repeats_rank_line(line, sizeof line, "STP", names, s, 5, 0);
    assert_string_equal(line, "STP: green > streams ~ mps > naive"); /* mig: no value, left out */
    /* lower is better: the lowest first, joined by "<" */
    repeats_rank_line(line, sizeof line, "ANTT", names, s, 4, 1);
    assert_string_equal(line, "ANTT: naive < mps ~ streams < green");
    /* one repeat each ranks nothing, however far apart */
    spread once[] = {spread_of((double[]){1.0}, 1), spread_of((double[]){2.0}, 1)};
    repeats_rank_line(line, sizeof line, "STP", names, once, 2, 0);
    assert_string_equal(line, "STP: mps ~ naive");
    /* equal medians keep the order given */
    spread tie[] = {of3(1, 2, 3), of3(2, 2, 2)};
    repeats_rank_line(line, sizeof line, "x", names, tie, 2, 0);
    assert_string_equal(line, "x: naive ~ mps");
    repeats_rank_line(line, sizeof line, "x", names, s + 4, 1, 0);
    assert_string_equal(line, "x: -");
    /* a short buffer: cut, and the length it needed returned */
    char small[12];
    int need = repeats_rank_line(small, sizeof small, "STP", names, s, 4, 0);
    assert_int_equal(need, (int)strlen("STP: green > streams ~ mps > naive"));
    assert_string_equal(small, "STP: green ");
}

static void write_text(const char *dir, const char *name, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    test_write_text(path, text);
}

/* A mode's summary.json as run_suite writes it (the fields repeats reads, and one it does not). */
static void write_summary(const char *dir, const char *mode, double stp, double rate0, const char *status) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"mode\":\"%s\",\"status\":\"%s\",\"stp\":%g,\"antt\":1.5,\"fairness\":null,"
             "\"speedup_vs_serial\":1.2,\"window_s\":9,\"jobs\":["
             "{\"label\":\"S\",\"timed_samples_per_s\":%g,\"slowdown\":1.1,\"normalized_throughput\":0.9,"
             "\"go_t\":100,\"end_t\":110},"
             "{\"label\":\"M\",\"timed_samples_per_s\":50,\"slowdown\":1.3,\"normalized_throughput\":0.7,"
             "\"go_t\":100,\"end_t\":112}]}",
             mode, status, stp, rate0);
    mkdir(dir, 0755);
    write_text(dir, "summary.json", text);
}

static void test_collect_folders(void **state) {
    (void)state;
    char root[256], dirs[3][512], sub[600];
    test_tmpdir(root, sizeof root);
    const double stp[] = {1.8, 1.6, 1.7}, rate[] = {100, 120, 110};
    for (int k = 0; k < 3; k++) {
        snprintf(dirs[k], sizeof dirs[k], "%s/repeat-%d", root, k + 1);
        mkdir(dirs[k], 0755);
        snprintf(sub, sizeof sub, "%s/naive", dirs[k]);
        write_summary(sub, "naive", stp[k], rate[k], "complete");
        if (k != 1) { /* mps is missing from repeat 2 (failed before writing) */
            snprintf(sub, sizeof sub, "%s/mps", dirs[k]);
            write_summary(sub, "mps", 2.5, 200, k ? "partial" : "complete");
        }
    }
    /* SM activity of the whole GPU between the first go and the last end; instances and other
     * times are not counted */
    snprintf(sub, sizeof sub, "%s/naive", dirs[0]);
    write_text(sub, "timeline.csv",
               "t,unit,util_gpu_pct,sm_active_pct,markers\n"
               "99.000,gpu0,10,5.00,\n101.000,gpu0,50,40.00,job0:go\n101.000,gpu0-gi1,50,99.00,\n"
               "105.000,gpu0,50,60.00,\n111.000,gpu0,50,,\n113.000,gpu0,50,90.00,\n");
    const char *paths[] = {dirs[0], dirs[1], dirs[2]}, *modes[] = {"naive", "mps", "green"};
    repeats r;
    char err[512];
    assert_int_equal(repeats_collect(&r, paths, 3, modes, 3, err, sizeof err), 0);
    assert_int_equal(r.mode_count, 3);
    int count;
    const repeats_metric *rm = repeats_run_metrics(&count);
    assert_string_equal(rm[0].key, "stp");
    spread s = repeats_spread(&r, 0, 0, -1);
    expect_eq(s.n, 3); expect_eq(s.median, 1.7); expect_eq(s.min, 1.6); expect_eq(s.max, 1.8);
    assert_true(isnan(repeats_values(&r, 0, 2, -1)[0])); /* fairness null */
    expect_eq(repeats_values(&r, 0, 4, -1)[0], 50.0); /* SM activity: (40 + 60) / 2 */
    assert_true(isnan(repeats_values(&r, 0, 4, -1)[1]));  /* no timeline there */
    assert_int_equal(repeats_spread(&r, 1, 0, -1).n, 2);  /* mps: two repeats */
    assert_string_equal(r.modes[1].status[1], "missing");
    assert_string_equal(r.modes[1].status[2], "partial");
    assert_int_equal(repeats_spread(&r, 2, 0, -1).n, 0);  /* green ran nowhere */
    assert_int_equal(r.modes[0].job_count, 2);
    assert_string_equal(r.modes[0].job_label[1], "M");
    s = repeats_spread(&r, 0, 0, 0); /* job 0's samples/s */
    expect_eq(s.median, 110); expect_eq(s.min, 100); expect_eq(s.max, 120);

    cJSON *json = repeats_json(&r);
    cJSON *naive = cJSON_GetArrayItem(cJSON_GetObjectItem(json, "modes"), 0);
    cJSON *values = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(naive, "metrics"), "stp"), "values");
    assert_int_equal(cJSON_GetArraySize(values), 3);
    expect_eq(cJSON_GetArrayItem(values, 1)->valuedouble, 1.6);
    cJSON *job = cJSON_GetArrayItem(cJSON_GetObjectItem(naive, "jobs"), 0);
    cJSON *job_spread = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(job, "metrics"),
                                                                "timed_samples_per_s"), "spread");
    assert_true(cJSON_GetObjectItem(job_spread, "median")->valuedouble == 110);
    const char *ranking = cJSON_GetObjectItem(cJSON_GetObjectItem(json, "rankings"), "stp")->valuestring;
    assert_string_equal(ranking, "STP: mps > naive");
    cJSON_Delete(json);

    assert_int_equal(repeats_write(root, &r, err, sizeof err), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/repeats.csv", root);
    char *csv = test_read_text(path, err, sizeof err);
    assert_non_null(csv);
    assert_non_null(strstr(csv, "mode,job,label,metric,repeat_1,repeat_2,repeat_3,median,min,max,n\n"));
    assert_non_null(strstr(csv, "naive,,,stp,1.800000,1.600000,1.700000,1.700000,1.600000,1.800000,3\n"));
    assert_non_null(strstr(csv, "mps,,,stp,2.500000,,2.500000,2.500000,2.500000,2.500000,2\n"));
    assert_non_null(strstr(csv, "naive,0,S,timed_samples_per_s,100.000000,120.000000,110.000000,"));
    free(csv);

    char out[1 << 14] = "";
    FILE *f = fmemopen(out, sizeof out, "w");
    repeats_print(f, &r);
    fclose(f);
    assert_non_null(strstr(out, "1.700 [1.600-1.800]"));
    assert_non_null(strstr(out, "110 [100-120]"));
    assert_non_null(strstr(out, "STP: mps > naive"));
    assert_non_null(strstr(out, "ANTT: naive ~ mps"));
    repeats_free(&r);
    assert_int_equal(repeats_collect(&r, paths, 0, modes, 1, err, sizeof err), -1);
    test_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_line),
        cmocka_unit_test(test_collect_folders),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
