/* Energy per trained sample over the common window (summary.json's window_energy_per_sample_j, issue
 * 51's energy check rests on it), end to end on fake jobs and the NVML stand-in drawing a constant
 * power (SUITE_NVML_STANDIN_POWER_W, its energy counter that power times the wall clock): the run's
 * value is its window energy over the samples every job trained inside the window, that energy the
 * power times the window's length (up to the monitor's skew, less than a sampling tick an edge);
 * --repeat 3 carries its median [min-max]; one job after another sums each job's own window; and a run
 * that reads no energy (no power sensor, --no-monitor, no NVML) says why in window_energy_note with the
 * value null, never 0. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "tests/support/suite_fixture.h"
#include "tests/support/testutil.h"

#define POWER_W 250.0
#define SAMPLE_MS 50 /* the monitor's period in these runs (--sample-ms) */
#define FAKE_JOBS "resnet26:epoch_ms=200,steps=10,setup_ms=5;resnet50:epoch_ms=300,steps=10,setup_ms=5"

static double number(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static cJSON *summary_of(const char *dir) {
    char path[1200], err[512];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    cJSON *root = test_read_json(path, err, sizeof err);
    if (!root) fprintf(stderr, "%s\n", err);
    assert_non_null(root);
    return root;
}

/* The stand-in's H100 (its own folder: the fixture's has its fake MPS control already). */
static void standin(const suite_fixture *f) {
    char dir[400];
    snprintf(dir, sizeof dir, "%s/standin", f->dir);
    mkdir(dir, 0700);
    suite_fixture_standin_h100(dir);
}

static int run(suite_fixture *f, const char *const *args) {
    int rc = suite_fixture_run(f, FAKE_JOBS, args);
    if (rc != 0) fprintf(stderr, "%s\n%s\n", f->out, f->err);
    return rc;
}

/* The window's energy and samples as the summary states them, checked against the jobs' own windows:
 * collocated, the one window they share; one after another (sequential), each job's own, summed. */
static void check_arithmetic(const cJSON *summary, int sequential) {
    double length = 0, samples = 0;
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(summary, "jobs");
    for (const cJSON *j = jobs->child; j; j = j->next) {
        const cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "windows"), 0);
        assert_non_null(w);
        samples += number(w, "samples");
        if (sequential || j == jobs->child) length += number(w, "t1") - number(w, "t0");
    }
    double energy = number(summary, "window_energy_j"), per = number(summary, "window_energy_per_sample_j");
    expect_gt(samples, 0);
    expect_eq(number(summary, "window_samples"), samples);
    expect_near(per, energy / samples, 1e-12 * per);
    /* the counter is power x time: the window's energy is the power times its length, up to how far
     * the monitor's clock reading and its counter reading lie apart at each edge of each window, which
     * is less than one sampling tick unless the machine's load stalls the sampler longer (a rule, not a
     * share of the window: how long a thread waits for a core is the machine's, not the suite's) */
    double skew = POWER_W * SAMPLE_MS * 1e-3 * 2 * (sequential ? cJSON_GetArraySize(jobs) : 1);
    expect_near(energy, POWER_W * length, skew);
    expect_near(per, POWER_W * length / samples, skew / samples);
    const cJSON *w0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(summary, "window_metrics"), 0);
    expect_eq(number(w0, "energy_j"), energy);
    expect_eq(number(w0, "samples"), samples);
    const cJSON *note = cJSON_GetObjectItemCaseSensitive(summary, "window_energy_note");
    if (note) fprintf(stderr, "window_energy_note: %s\n", cJSON_GetStringValue(note));
    assert_null(note);
    const cJSON *defs = cJSON_GetObjectItemCaseSensitive(summary, "metric_definitions");
    assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(defs, "window_energy_per_sample_j")));
}

static void test_collocated_and_serial(void **state) {
    suite_fixture *f = *state;
    standin(f);
    setenv("SUITE_NVML_STANDIN_POWER_W", "250", 1);
    const char *naive[] = {"--mix", "S+M", "--mode", "naive", "--window", "0.4", "--warmup-steps", "2", "--sample-ms",
                           "50", NULL};
    assert_int_equal(run(f, naive), 0);
    char dir[1024];
    suite_fixture_run_dir(f, dir, sizeof dir);
    cJSON *summary = summary_of(dir);
    check_arithmetic(summary, 0);
    cJSON_Delete(summary);
    test_rmtree(f->results);
    const char *serial[] = {"--mix", "S+M", "--mode", "serial", "--window", "0.4", "--warmup-steps", "2", "--sample-ms",
                            "50", NULL};
    assert_int_equal(run(f, serial), 0);
    suite_fixture_run_dir(f, dir, sizeof dir);
    summary = summary_of(dir);
    check_arithmetic(summary, 1);
    cJSON_Delete(summary);
    unsetenv("SUITE_NVML_STANDIN_POWER_W");
}

static void test_repeats_spread(void **state) {
    suite_fixture *f = *state;
    standin(f);
    setenv("SUITE_NVML_STANDIN_POWER_W", "250", 1);
    const char *args[] = {"--mix", "S+M", "--mode", "naive", "--window", "0.3", "--warmup-steps", "2", "--repeat", "3",
                          NULL};
    assert_int_equal(run(f, args), 0);
    assert_non_null(strstr(f->out, "J/sample"));
    char dir[1024], path[1200], err[512];
    suite_fixture_run_dir(f, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/repeats.json", dir);
    cJSON *root = test_read_json(path, err, sizeof err);
    assert_non_null(root);
    const cJSON *mode = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "modes"), 0);
    const cJSON *metric = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(mode, "metrics"),
                                                           "window_energy_per_sample_j");
    const cJSON *values = cJSON_GetObjectItemCaseSensitive(metric, "values");
    assert_int_equal(cJSON_GetArraySize(values), 3);
    double lo = INFINITY, hi = -INFINITY;
    for (int r = 0; r < 3; r++) {
        char repeat[1200];
        snprintf(repeat, sizeof repeat, "%s/repeat-%d", dir, r + 1);
        cJSON *summary = summary_of(repeat);
        double v = number(summary, "window_energy_per_sample_j");
        expect_eq(cJSON_GetArrayItem(values, r)->valuedouble, v);
        lo = fmin(lo, v), hi = fmax(hi, v);
        cJSON_Delete(summary);
    }
    const cJSON *spread = cJSON_GetObjectItemCaseSensitive(metric, "spread");
    expect_eq(number(spread, "min"), lo);
    expect_eq(number(spread, "max"), hi);
    expect_eq(number(spread, "n"), 3);
    cJSON_Delete(root);
    unsetenv("SUITE_NVML_STANDIN_POWER_W");
}

/* The note of a run made with extra (NULL-terminated after the common options), its value null. */
static void expect_absent(suite_fixture *f, const char *extra, const char *note) {
    const char *args[] = {"--mix", "S+M", "--mode", "naive", "--window", "0.3", "--warmup-steps", "2", extra, NULL};
    assert_int_equal(run(f, args), 0);
    char dir[1024];
    suite_fixture_run_dir(f, dir, sizeof dir);
    cJSON *summary = summary_of(dir);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(summary, "window_energy_per_sample_j")));
    const cJSON *why = cJSON_GetObjectItemCaseSensitive(summary, "window_energy_note");
    assert_true(cJSON_IsString(why));
    if (!strstr(why->valuestring, note)) fprintf(stderr, "note: %s\n", why->valuestring);
    assert_non_null(strstr(why->valuestring, note));
    expect_gt(number(summary, "window_samples"), 0); /* the samples were measured; only the energy is missing */
    cJSON_Delete(summary);
    test_rmtree(f->results);
}

static void test_absent_says_why(void **state) {
    suite_fixture *f = *state;
    expect_absent(f, NULL, "no GPU monitor: "); /* the fixture keeps NVML out */
    standin(f);
    unsetenv("SUITE_NVML_STANDIN_POWER_W");
    expect_absent(f, NULL, "no energy counter");
    setenv("SUITE_NVML_STANDIN_POWER_W", "250", 1);
    expect_absent(f, "--no-monitor", "--no-monitor");
    unsetenv("SUITE_NVML_STANDIN_POWER_W");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_collocated_and_serial, suite_fixture_setup, suite_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_repeats_spread, suite_fixture_setup, suite_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_absent_says_why, suite_fixture_setup, suite_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
