/* run_suite --gpus end to end with fake_train and a stated GPU memory (SUITE_GPU_MEMORY, no
 * NVML): the placement shown by --dry-run, refusals before launch (exit 2), and a run over two
 * GPUs with one run_suite per GPU, its own run folder each, and the merged summary. Bad input is
 * found before anything is written: "--gpus=LIST" is --gpus, --help wins anywhere, and an option
 * each GPU's run_suite would refuse is refused once, by the first GPU's dry run. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tests/testutil.h"

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
    assert_true(fp0 == 3.0 * (1 << 30) && fp1 == 2.0 * (1 << 30));
    cJSON_Delete(plan);
}

static void test_refusals(void **state) {
    (void)state;
    struct { const char *args[12]; const char *message; } bad[] = {
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "L+L+S+S+S", NULL}, "does not fit beside the others"},
        {{"--gpus", "0,0", "--mode", "naive", "--mix", "S", NULL}, "GPU 0 is named twice"},
        {{"--gpus", "0,x", "--mode", "naive", "--mix", "S", NULL}, "expected GPU indices"},
        {{"--gpus", "0,1", "--gpu", "1", "--mode", "naive", "--mix", "S", NULL}, "exclude each other"},
        {{"--gpus", "0,1", "--mode", "warp", "--mix", "S", NULL}, "--mode warp: expected one of"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "Q", NULL}, "--mix: "},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S[gpus=3]", NULL}, "data-parallel over 3 GPUs but --gpus gives 2"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S[gpus=2]+S", NULL}, "job 0 is data-parallel"},
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

static void test_run_over_two_gpus(void **state) {
    (void)state;
    char results[600];
    snprintf(results, sizeof results, "%s/results", dir);
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", "S+S+M+M", "--quick", "--completion", "--results", results, NULL};
    if (run(args) != 0) fail_msg("run_suite --gpus failed:\n%s\n%s", out, err);
    DIR *d = opendir(results);
    assert_non_null(d);
    struct dirent *e;
    char run_dir[1200] = "";
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') snprintf(run_dir, sizeof run_dir, "%s/%s", results, e->d_name);
    closedir(d);
    char path[1400];
    snprintf(path, sizeof path, "%s/summary.json", run_dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    fclose(f);
    out[n] = 0;
    cJSON *s = cJSON_Parse(out);
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(s, "gpus");
    assert_int_equal(cJSON_GetArraySize(gpus), 2);
    for (int g = 0; g < 2; g++) {
        const cJSON *one = cJSON_GetArrayItem(gpus, g);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(one, "status")->valuestring, "complete");
        assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(one, "gpu")->valuedouble, g);
        /* each GPU ran its two jobs in a run folder of its own */
        snprintf(path, sizeof path, "%s/jobs.csv", cJSON_GetObjectItemCaseSensitive(one, "run_folder")->valuestring);
        f = fopen(path, "r");
        assert_non_null(f);
        int lines = 0;
        while (fgets(err, sizeof err, f)) lines++;
        fclose(f);
        assert_int_equal(lines, 3);
    }
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(s, "total");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(total, "status")->valuestring, "complete");
    /* 4 jobs x 2 epochs x 10 steps x 128 (the completion measurement: every job to its end) */
    assert_int_equal((int)cJSON_GetObjectItemCaseSensitive(total, "total_samples")->valuedouble, 4 * 2 * 10 * 128);
    cJSON_Delete(s);
    snprintf(path, sizeof path, "%s/placement.json", run_dir);
    f = fopen(path, "r");
    assert_non_null(f);
    fclose(f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dry_run_plan),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_bad_input_before_anything_is_written),
        cmocka_unit_test(test_run_over_two_gpus),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
