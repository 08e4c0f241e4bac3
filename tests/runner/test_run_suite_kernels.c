/* run_suite --kernels as a program (RUN_SUITE_PATH) with tests/support/fake_train as its train, which answers
 * "trace T0 T1" with synthetic traced files: each job gets --kernels <run>/kernels/job<i>, the traced
 * window follows the measured one (its T0 after the window's end) and "stop" waits for every job's
 * kernels event; jobs.csv, run.json and summary.json carry it; kernels.csv and interference.csv are
 * written in serial, mps and every mode of --mode all (and its top folder), a collocated mode's
 * alone being the serial run's; a job that cannot trace is said and the run goes on; the options'
 * refusals; request.json carries the request. NVML is kept out so the runs are the same everywhere. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tests/support/suite_fixture.h"
#include "tests/support/testutil.h"

typedef suite_fixture fixture;

static char *text_of(const char *dir, const char *name) {
    char path[PATH_MAX], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = test_read_text(path, err, sizeof err);
    if (!text) fprintf(stderr, "%s\n", err);
    assert_non_null(text);
    return text;
}

/* A mode's folder traced: its jobs' files, the event in jobs.csv, run.json and summary.json, and the
 * attribution's two files, alone taken from `source` ("self" for serial). */
static void check_mode(const char *dir, const char *mode, int jobs, const char *source) {
    for (int j = 0; j < jobs; j++) {
        char path[PATH_MAX];
        struct stat st;
        snprintf(path, sizeof path, "%s/kernels/job%d.kernels.csv", dir, j);
        /* the serial run measures a repeated spec once: only the first has files */
        if (strcmp(mode, "serial") || j < 2) assert_int_equal(stat(path, &st), 0);
    }
    char *text = text_of(dir, "jobs.csv");
    assert_non_null(strstr(text, ",kernels_file,kernels_error,traced_kernels,traced_dropped,traced_steps,"));
    assert_non_null(strstr(text, "/kernels/job0.kernels.csv,"));
    free(text);
    cJSON *summary = cJSON_Parse(text = text_of(dir, "summary.json"));
    free(text);
    const cJSON *k = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(summary, "jobs"), 0), "kernels");
    assert_true(cJSON_IsString(cJSON_GetObjectItem(k, "file")));
    double t0 = cJSON_GetObjectItem(k, "t0")->valuedouble;
    const cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(summary, "jobs"), 0), "windows"), 0);
    assert_true(t0 >= cJSON_GetObjectItem(w, "t1")->valuedouble); /* the measured window stays untraced */
    assert_true(cJSON_GetObjectItem(k, "steps")->valuedouble > 0);
    cJSON_Delete(summary);
    cJSON *run = cJSON_Parse(text = text_of(dir, "run.json"));
    free(text);
    const cJSON *job0 = cJSON_GetArrayItem(cJSON_GetObjectItem(run, "jobs"), 0);
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(job0, "kernels")));
    int saw_prefix = 0;
    const cJSON *argv = cJSON_GetObjectItem(job0, "argv");
    for (int a = 0; a + 1 < cJSON_GetArraySize(argv); a++)
        saw_prefix |= !strcmp(cJSON_GetArrayItem(argv, a)->valuestring, "--kernels") &&
                      strstr(cJSON_GetArrayItem(argv, a + 1)->valuestring, "/kernels/job0");
    assert_true(saw_prefix);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(run, "settings"), "kernels")));
    cJSON_Delete(run);
    text = text_of(dir, "kernels.csv");
    char row[128];
    snprintf(row, sizeof row, "\n%s,0,S,step,step,,,", mode);
    assert_non_null(strstr(text, row));
    snprintf(row, sizeof row, ",%s,traced\n", source);
    assert_non_null(strstr(text, row));
    snprintf(row, sizeof row, "\n%s,%d,", mode, jobs - 1);
    assert_non_null(strstr(text, row));
    free(text);
    free(text_of(dir, "interference.csv"));
}

static void test_serial_and_mps(void **state) {
    fixture *f = *state;
    const char *serial[] = {"--mode", "serial", "--mix", "S+M+M", "--window", "0.5", "--warmup-steps", "3",
                            "--kernels", "--kernels-window", "0.4", NULL};
    assert_int_equal(suite_fixture_run(f, "*:epoch_ms=40", serial), 0);
    char dir[PATH_MAX];
    suite_fixture_run_dir(f, dir, sizeof dir);
    assert_non_null(strstr(f->err, "traced "));
    check_mode(dir, "serial", 3, "self");
    char *text = text_of(dir, "request.json");
    assert_non_null(strstr(text, "\"kernels\":\ttrue"));
    assert_non_null(strstr(text, "\"kernels_window_s\":\t0.4"));
    free(text);
    /* mps against it (--baseline): alone from the serial run's files */
    const char *mps[] = {"--mode", "mps", "--mix", "S+M+M", "--window", "0.5", "--warmup-steps", "3", "--kernels",
                         "--baseline", dir, "--results", NULL};
    char results[600];
    snprintf(results, sizeof results, "%s/mps-results", f->dir);
    const char *args[16];
    int n = 0;
    for (; mps[n]; n++) args[n] = mps[n];
    args[n++] = results, args[n] = NULL;
    char *argv[64] = {(char *)RUN_SUITE_PATH};
    for (int k = 0; k < n; k++) argv[k + 1] = (char *)args[k];
    argv[n + 1] = "--train", argv[n + 2] = FAKE_TRAIN_PATH, argv[n + 3] = NULL;
    setenv("FAKE_TRAIN", "*:epoch_ms=40", 1);
    int rc = test_run(argv, f->out, sizeof f->out, f->err, sizeof f->err);
    if (rc) fprintf(stderr, "%s\n", f->err);
    assert_int_equal(rc, 0);
    DIR *d = opendir(results);
    assert_non_null(d);
    char mps_dir[PATH_MAX] = "";
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') snprintf(mps_dir, sizeof mps_dir, "%s/%s", results, e->d_name);
    closedir(d);
    check_mode(mps_dir, "mps", 3, "baseline");
}

static void test_mode_all(void **state) {
    fixture *f = *state;
    const char *args[] = {"--mode", "all", "--mig-emulate", "--mig-gpu", "H100-80GB", "--mix", "S+M", "--window",
                          "0.4", "--warmup-steps", "3", "--kernels", NULL};
    int rc = suite_fixture_run(f, "*:epoch_ms=40", args);
    if (rc) fprintf(stderr, "%s\n", f->err);
    assert_int_equal(rc, 0);
    char dir[PATH_MAX], mode_dir[PATH_MAX + 32];
    suite_fixture_run_dir(f, dir, sizeof dir);
    static const char *const collocated[] = {"naive", "mps", "streams"};
    snprintf(mode_dir, sizeof mode_dir, "%s/serial", dir);
    check_mode(mode_dir, "serial", 2, "self");
    for (size_t m = 0; m < sizeof collocated / sizeof collocated[0]; m++) {
        snprintf(mode_dir, sizeof mode_dir, "%s/%s", dir, collocated[m]);
        check_mode(mode_dir, collocated[m], 2, "serial");
    }
    /* partitioned: each job against itself alone in its partition (a MIG instance emulated, green SMs) */
    static const char *const partitioned[] = {"mig-emulate", "green"};
    for (size_t m = 0; m < sizeof partitioned / sizeof partitioned[0]; m++) {
        snprintf(mode_dir, sizeof mode_dir, "%s/%s", dir, partitioned[m]);
        check_mode(mode_dir, partitioned[m], 2, "partition");
    }
    char *text = text_of(dir, "kernels.csv");
    assert_non_null(strstr(text, "\nserial,0,S,step,"));
    assert_non_null(strstr(text, "\ngreen,1,M,step,"));
    assert_non_null(strstr(text, "\nmig-emulate,1,M,step,"));
    free(text);
    free(text_of(dir, "interference.csv"));
}

/* A job that cannot trace says so; the others are attributed and the run ends as it would. */
static void test_cannot_trace(void **state) {
    fixture *f = *state;
    const char *args[] = {"--mode", "naive", "--mix", "S+M", "--window", "0.4", "--warmup-steps", "3", "--kernels", NULL};
    assert_int_equal(suite_fixture_run(f, "*:epoch_ms=40;resnet26:trace_error", args), 0);
    assert_non_null(strstr(f->err, "not traced: CUPTI cannot trace here"));
    char dir[PATH_MAX];
    suite_fixture_run_dir(f, dir, sizeof dir);
    char *text = text_of(dir, "jobs.csv");
    assert_non_null(strstr(text, "CUPTI cannot trace here"));
    free(text);
    text = text_of(dir, "kernels.csv");
    assert_null(strstr(text, "\nnaive,0,"));
    assert_non_null(strstr(text, "\nnaive,1,M,step,"));
    free(text);
}

static void test_refused(void **state) {
    fixture *f = *state;
    struct { const char *args[10]; const char *message; } cases[] = {
        {{"--mode", "naive", "--mix", "S", "--kernels", "--completion", NULL}, "--kernels traces a window after"},
        {{"--mode", "naive", "--mix", "S", "--kernels-window", "2", NULL}, "give --kernels"},
        {{"--mode", "naive", "--mix", "S", "--kernels", "--kernels-window", "0", NULL}, "--kernels-window"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        assert_int_equal(suite_fixture_run(f, NULL, cases[k].args), 2);
        if (!strstr(f->err, cases[k].message)) fprintf(stderr, "case %zu: %s\n", k, f->err);
        assert_non_null(strstr(f->err, cases[k].message));
        assert_int_equal(access(f->results, F_OK), -1);
    }
    /* the dry run says the traced window and where each job will write it */
    const char *dry[] = {"--mode", "naive", "--mix", "S+S", "--kernels", "--kernels-window", "2", "--dry-run", NULL};
    assert_int_equal(suite_fixture_run(f, NULL, dry), 0);
    assert_non_null(strstr(f->out, "then a traced window of 2 s (--kernels"));
    assert_non_null(strstr(f->out, " --kernels <run>/kernels/job1"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refused, suite_fixture_setup, suite_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_serial_and_mps, suite_fixture_setup, suite_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_mode_all, suite_fixture_setup, suite_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_cannot_trace, suite_fixture_setup, suite_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
