/* run_suite --gpus end to end with fake_train and a stated GPU memory (SUITE_GPU_MEMORY, no
 * NVML): the placement shown by --dry-run, refusals before launch (exit 2), and a run over two
 * GPUs with one run_suite per GPU, its own run folder each, and the merged summary. Bad input is
 * found before anything is written: "--gpus=LIST" is --gpus, --help wins anywhere, and an option
 * each GPU's run_suite would refuse is refused once, by the first GPU's dry run. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tests/support/testutil.h"

#if !defined(RUN_SUITE_PATH) || !defined(FAKE_TRAIN_PATH)
#error "RUN_SUITE_PATH and FAKE_TRAIN_PATH must be defined (CMake passes them)"
#endif

static char dir[512], out[65536], err[65536];

static int run(const char *const *args) {
    char *argv[40] = {RUN_SUITE_PATH};
    int n = 1;
    for (; *args && n < 36; args++) argv[n++] = (char *)*args;
    argv[n++] = "--train", argv[n++] = FAKE_TRAIN_PATH;
    argv[n] = NULL;
    return test_run(argv, out, sizeof out, err, sizeof err);
}

static int setup(void **state) {
    (void)state;
    test_tmpdir(dir, sizeof dir);
    char nomps[600];
    snprintf(nomps, sizeof nomps, "%s/no-mps", dir);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", nomps, 1);
    setenv("SUITE_GPU_MEMORY", "3G", 1);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=20;resnet152:footprint=2147483648", 1);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    test_rmtree(dir);
    return 0;
}

static void test_dry_run_plan(void **state) {
    (void)state;
    const char *args[] = {"--gpus", "0,1", "--mode", "mps", "--mix", "L+S+S+M", "--dry-run", "--json", NULL};
    assert_int_equal(run(args), 0);
    cJSON *plan = cJSON_Parse(out);
    assert_non_null(plan);
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(plan, "gpus");
    assert_int_equal(cJSON_GetArraySize(gpus), 2);
    /* L (2 GiB) alone on one GPU with one 1 GiB job; the other two jobs on the other */
    double fp0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(gpus, 0), "footprint_bytes")->valuedouble;
    double fp1 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(gpus, 1), "footprint_bytes")->valuedouble;
    expect_eq(fp0, 3.0 * (1 << 30)); expect_eq(fp1, 2.0 * (1 << 30));
    cJSON_Delete(plan);
}

static void test_refusals(void **state) {
    (void)state;
    struct { const char *args[12]; const char *message; } bad[] = {
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "L+L+S+S+S", NULL}, "does not fit beside the others"},
        {{"--gpus", "0,0", "--mode", "naive", "--mix", "S", NULL}, "GPU 0 is named twice"},
        {{"--gpus", "0,x", "--mode", "naive", "--mix", "S", NULL}, "--gpus: entry 2 of '0,x': expected a whole number from 0 to 1023, got 'x'"},
        {{"--gpus", "0,1", "--gpu", "1", "--mode", "naive", "--mix", "S", NULL}, "exclude each other"},
        {{"--gpus", "0,1", "--mode", "warp", "--mix", "S", NULL}, "--mode warp: expected one of"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "Q", NULL}, "--mix: "},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S[gpus=3]", NULL}, "data-parallel over 3 GPUs but --gpus gives 2"},
        {{"--gpus", "0,1", "--mode", "streams", "--mix", "S[gpus=2]+S", NULL}, "job 0 is data-parallel"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run(bad[i].args), 2);
        if (!strstr(err, bad[i].message)) fail_msg("case %zu: '%s' not in: %s", i, bad[i].message, err);
    }
    /* serial needs only the largest job per GPU */
    const char *serial[] = {"--gpus", "0,1", "--mode", "serial", "--mix", "L+L+S+S+S", "--dry-run", NULL};
    assert_int_equal(run(serial), 0);
}

static int occurrences(const char *text, const char *what) {
    int n = 0;
    for (const char *at = strstr(text, what); at; at = strstr(at + 1, what)) n++;
    return n;
}

static int exists(const char *path) {
    FILE *f = fopen(path, "r");
    if (f) fclose(f);
    return f != NULL;
}

static void test_bad_input_before_anything_is_written(void **state) {
    (void)state;
    char results[600];
    snprintf(results, sizeof results, "%s/not-written", dir);
    /* the "=" form places over both GPUs, as "--gpus 0,1" does */
    const char *eq[] = {"--gpus=0,1", "--mode=mps", "--mix=S+S", "--dry-run", "--json", NULL};
    assert_int_equal(run(eq), 0);
    cJSON *plan = cJSON_Parse(out);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(plan, "gpus")), 2);
    cJSON_Delete(plan);
    /* --help: the --gpus form's help, whatever else is on the line, and nothing run or written */
    const char *help_only[] = {"--gpus", "0,1", "--help", NULL};
    const char *help_last[] = {"--gpus", "0,1", "--mode", "naive", "--mix", "S", "--results", results, "--help", NULL};
    const char *help_bad[] = {"--gpus", "0,1", "--epochs", "0", "-h", "--results", results, NULL};
    const char *const *helps[] = {help_only, help_last, help_bad};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(run(helps[i]), 0);
        assert_non_null(strstr(out, "usage: run_suite --gpus LIST --mode MODE --mix MIX"));
        assert_false(exists(results));
    }
    /* what each GPU's run_suite would refuse is refused once, with exit 2, before the run folder */
    struct { const char *args[12]; const char *message; } bad[] = {
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S+S", "--bogus", "--results", results, NULL},
         "unknown option '--bogus'"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S+S", "--sample-ms=1", "--results", results, NULL},
         "--sample-ms: expected a whole number from 10 to 60000"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S+S", "--mps-sm", "50", "--results", results, NULL},
         "--mps-sm and --mps-mem go with --mode mps"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S+S", "--bogus", "--dry-run", NULL}, "unknown option '--bogus'"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S+S", "--gpu=1", NULL}, "exclude each other"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S+S", "--epochs", "0", NULL}, "--epochs: expected a whole number"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run(bad[i].args), 2);
        if (occurrences(err, bad[i].message) != 1) fail_msg("case %zu: '%s' not once in: %s", i, bad[i].message, err);
        assert_false(exists(results));
    }
}

/* The one run folder results holds (the newest when several), its summary.json parsed. */
static cJSON *run_summary(const char *results, char *run_dir, size_t size) {
    DIR *d = opendir(results);
    assert_non_null(d);
    struct dirent *e;
    char newest[256] = "";
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strcmp(e->d_name, newest) > 0) snprintf(newest, sizeof newest, "%s", e->d_name);
    closedir(d);
    snprintf(run_dir, size, "%s/%s", results, newest);
    char path[1400], msg[256];
    snprintf(path, sizeof path, "%s/summary.json", run_dir);
    cJSON *s = test_read_json(path, msg, sizeof msg);
    if (!s) fail_msg("%s", msg);
    return s;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* stp and antt finite (references) or null with a reason (none), never NaN. */
static void assert_metrics(const cJSON *o, int known) {
    const char *keys[] = {"stp", "antt"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        char reason[64];
        snprintf(reason, sizeof reason, "%s_null_reason", keys[i]);
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(o, reason);
        if (known) {
            assert_true(cJSON_IsNumber(v)); expect_gt(v->valuedouble, 0); expect_lt(v->valuedouble, 100);
            assert_null(why);
        } else {
            assert_true(cJSON_IsNull(v));
            assert_true(cJSON_IsString(why) && strstr(why->valuestring, "reference"));
        }
    }
}

static void test_run_over_two_gpus(void **state) {
    (void)state;
    char results[600], records[600];
    snprintf(results, sizeof results, "%s/results", dir);
    snprintf(records, sizeof records, "%s/records", dir);
    assert_int_equal(mkdir(records, 0700), 0);
    setenv("FAKE_TRAIN_RECORD", records, 1);
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", "S+S+M+M", "--quick", "--completion", "--results", results, NULL};
    int rc = run(args);
    unsetenv("FAKE_TRAIN_RECORD");
    if (rc != 0) fail_msg("run_suite --gpus failed:\n%s\n%s", out, err);
    assert_null(strstr(out, "nan"));
    assert_non_null(strstr(out, "STP -: no reference"));
    char run_dir[1200], path[1400];
    cJSON *s = run_summary(results, run_dir, sizeof run_dir);
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(s, "gpus");
    assert_int_equal(cJSON_GetArraySize(gpus), 2);
    for (int g = 0; g < 2; g++) {
        const cJSON *one = cJSON_GetArrayItem(gpus, g);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(one, "status")->valuestring, "complete");
        assert_int_equal((int)num(one, "gpu"), g);
        assert_metrics(one, 0);
        /* S and M are unlike workloads: counted apart, never summed */
        assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(one, "total_samples")));
        const cJSON *by = cJSON_GetObjectItemCaseSensitive(one, "samples_by_workload");
        assert_int_equal(cJSON_GetArraySize(by), 2);
        for (int w = 0; w < 2; w++) assert_int_equal((int)num(cJSON_GetArrayItem(by, w), "samples"), 2 * 10 * 128);
        /* each GPU ran its two jobs in a run folder of its own */
        snprintf(path, sizeof path, "%s/jobs.csv", cJSON_GetObjectItemCaseSensitive(one, "run_folder")->valuestring);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        int lines = 0;
        while (fgets(err, sizeof err, f)) lines++;
        fclose(f);
        assert_int_equal(lines, 3);
    }
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(s, "total");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(total, "status")->valuestring, "complete");
    assert_metrics(total, 0);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(total, "total_samples")));
    const cJSON *by = cJSON_GetObjectItemCaseSensitive(total, "samples_by_workload");
    assert_int_equal(cJSON_GetArraySize(by), 2);
    for (int w = 0; w < 2; w++) {
        assert_int_equal((int)num(cJSON_GetArrayItem(by, w), "samples"), 2 * 2 * 10 * 128);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(by, w), "jobs")), 2);
    }
    cJSON_Delete(s);
    snprintf(path, sizeof path, "%s/placement.json", run_dir);
    assert_true(exists(path));
    /* NVLink multicast is off in every job a run over several GPUs starts */
    DIR *d = opendir(records);
    struct dirent *e;
    int jobs = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", records, e->d_name);
        char msg[256], *text = test_read_text(path, msg, sizeof msg);
        assert_non_null(text);
        if (strstr(text, "argv --dry-run")) { /* the footprint queries run no job */
            free(text);
            continue;
        }
        assert_non_null(strstr(text, "env NCCL_NVLS_ENABLE=0\n"));
        free(text);
        jobs++;
    }
    closedir(d);
    assert_int_equal(jobs, 4);
}

/* With references (a serial --gpus run given as --baseline, or --mode all's serial part) STP and
 * ANTT are numbers per GPU and for the whole run; one mix of one workload sums its samples. */
static void test_references(void **state) {
    (void)state;
    char base[600], results[600], all[600], run_dir[1200];
    snprintf(base, sizeof base, "%s/base", dir);
    snprintf(results, sizeof results, "%s/against", dir);
    snprintf(all, sizeof all, "%s/all", dir);
    const char *serial[] = {"--gpus", "0,1", "--mode", "serial", "--mix", "S+S+M+M", "--quick", "--results", base, NULL};
    if (run(serial) != 0) fail_msg("serial failed:\n%s\n%s", out, err);
    cJSON *s = run_summary(base, run_dir, sizeof run_dir);
    assert_metrics(cJSON_GetObjectItemCaseSensitive(s, "total"), 1);
    assert_int_equal((int)num(cJSON_GetObjectItemCaseSensitive(s, "total"), "stp"), 2); /* 1 per card */
    cJSON_Delete(s);
    char base_run[1200];
    snprintf(base_run, sizeof base_run, "%s", run_dir);
    const char *dry[] = {"--gpus", "0,1", "--mode", "naive", "--mix", "S+S+M+M", "--quick", "--baseline", base_run,
                         "--dry-run", NULL};
    assert_int_equal(run(dry), 0);
    assert_non_null(strstr(out, "references (each job alone on its GPU, for STP and ANTT): --baseline"));
    const char *against[] = {"--gpus", "0,1", "--mode", "naive", "--mix", "S+S+M+M", "--quick", "--baseline", base_run,
                             "--results", results, NULL};
    if (run(against) != 0) fail_msg("naive against the baseline failed:\n%s\n%s", out, err);
    assert_null(strstr(out, "nan"));
    s = run_summary(results, run_dir, sizeof run_dir);
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(s, "gpus");
    double per_gpu = 0;
    for (int g = 0; g < 2; g++) {
        assert_metrics(cJSON_GetArrayItem(gpus, g), 1);
        per_gpu += num(cJSON_GetArrayItem(gpus, g), "stp");
    }
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(s, "total");
    assert_metrics(total, 1);
    expect_lt(fabs(num(total, "stp") - per_gpu), 1e-9); /* every job's normalized progress, summed */
    cJSON_Delete(s);
    /* a baseline of other jobs is refused before anything runs */
    const char *other[] = {"--gpus", "0,1", "--mode", "naive", "--mix", "S+S+S", "--quick", "--baseline", base_run,
                           "--results", results, NULL};
    assert_int_equal(run(other), 2);
    assert_non_null(strstr(err, "ran other jobs than this placement gives that GPU"));
    /* --mode all: each GPU's serial part is the reference of every mode */
    const char *modes[] = {"--gpus", "0,1", "--mode", "all", "--skip", "mps,streams,green", "--mix", "S+S", "--quick",
                           "--results", all, NULL};
    if (run(modes) != 0) fail_msg("--mode all failed:\n%s\n%s", out, err);
    s = run_summary(all, run_dir, sizeof run_dir);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(s, "modes");
    expect_ge(cJSON_GetArraySize(list), 2);
    const cJSON *mode;
    cJSON_ArrayForEach(mode, list) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(mode, "total");
        assert_metrics(t, 1);
        /* one workload: summed; at least the planned samples (in the window measurement jobs train on until stop) */
        expect_ge(num(t, "total_samples"), 2 * 2 * 10 * 128);
    }
    cJSON_Delete(s);
}

/* --study over two GPUs: the dry run says so; the cells run on both, two at once. */
static void test_study_over_two_gpus(void **state) {
    (void)state;
    char results[600], run_dir[1200], path[1400], msg[256];
    snprintf(results, sizeof results, "%s/study", dir);
    const char *dry[] = {"--study", "small", "--quick", "--degrees", "2", "--gpus", "0,1", "--dry-run", NULL};
    assert_int_equal(run(dry), 0);
    assert_non_null(strstr(out, "cells at once: 2, one per GPU (0,1)"));
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=300", 1);
    const char *args[] = {"--study", "small", "--quick", "--degrees", "2", "--gpus", "0,1", "--results", results, NULL};
    run(args); /* mps and mig-emulate cannot run here; serial and naive do */
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=20;resnet152:footprint=2147483648", 1);
    DIR *d = opendir(results);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') snprintf(run_dir, sizeof run_dir, "%s/%s", results, e->d_name);
    closedir(d);
    snprintf(path, sizeof path, "%s/study.json", run_dir);
    char *text = test_read_text(path, msg, sizeof msg);
    assert_non_null(text);
    cJSON *s = cJSON_Parse(text);
    free(text);
    assert_int_equal((int)num(s, "cells_at_once"), 2);
    /* two cells that ran (any status but planned or refused) on different GPUs at overlapping times */
    double from[2] = {-1, -1}, to[2] = {-1, -1};
    const cJSON *cell;
    cJSON_ArrayForEach(cell, cJSON_GetObjectItemCaseSensitive(s, "cells")) {
        if (num(cell, "wall_s") < 0) continue;
        int g = (int)num(cell, "gpu") == 1;
        if (from[g] < 0) from[g] = num(cell, "start_s"), to[g] = from[g] + num(cell, "wall_s");
    }
    expect_ge(from[0], 0); expect_ge(from[1], 0);
    expect_lt(from[0], to[1]); expect_lt(from[1], to[0]);
    cJSON_Delete(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dry_run_plan),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_bad_input_before_anything_is_written),
        cmocka_unit_test(test_run_over_two_gpus),
        cmocka_unit_test(test_references),
        cmocka_unit_test(test_study_over_two_gpus),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
