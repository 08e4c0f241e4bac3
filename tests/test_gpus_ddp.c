/* run_suite --gpus with a data-parallel job beside each card's small jobs (M[gpus=2]+4*S), end to
 * end with fake_train and a stated GPU memory (no NVML): the dry run shows the job's own run and
 * its MPS choice; a run starts every job under ONE start barrier across the cards (their go times
 * agree), gives the data-parallel job CUDA_VISIBLE_DEVICES=0,1 and NCCL_NVLS_ENABLE=0 and counts it
 * once in the summary; a serial run of the mix is its reference; its failure hangs nothing; the
 * window measurement and the modes without one group of job processes are refused. */
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

#include "tests/testutil.h"

#if !defined(RUN_SUITE_PATH) || !defined(FAKE_TRAIN_PATH)
#error "RUN_SUITE_PATH and FAKE_TRAIN_PATH must be defined (CMake passes them)"
#endif

#define MIX "M[gpus=2]+4*S"

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
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=20;resnet50:setup_ms=300", 1);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    test_rmtree(dir);
    return 0;
}

static void test_dry_run(void **state) {
    (void)state;
    const char *text[] = {"--gpus", "0,1", "--mode", "mps", "--mix", MIX, "--completion", "--dry-run", NULL};
    assert_int_equal(run(text), 0);
    assert_non_null(strstr(out, "data-parallel job 0:M[gpus=2]: its own run, --mode naive, "
                                "CUDA_VISIBLE_DEVICES=0,1 NCCL_NVLS_ENABLE=0"));
    assert_non_null(strstr(out, "outside MPS (--ddp-under none)"));
    const char *json[] = {"--gpus", "0,1", "--mode", "mps", "--mix", MIX, "--completion", "--ddp-under", "mps",
                          "--dry-run", "--json", NULL};
    assert_int_equal(run(json), 0);
    cJSON *plan = cJSON_Parse(out);
    assert_non_null(plan);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(plan, "ddp_under")->valuestring, "mps");
    const cJSON *ddp = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(plan, "data_parallel"), 0);
    assert_non_null(ddp);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(ddp, "cuda_visible_devices")->valuestring, "0,1");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(ddp, "mode")->valuestring, "mps");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ddp, "gpus")), 2);
    /* each card's own run holds its two small jobs only */
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(plan, "gpus");
    for (int g = 0; g < 2; g++)
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(gpus, g), "mix")->valuestring,
                            "resnet26:cifar10@128+resnet26:cifar10@128");
    cJSON_Delete(plan);
}

static void test_refusals(void **state) {
    (void)state;
    struct { const char *args[12]; const char *message; } bad[] = {
        {{"--gpus", "0,1", "--mode", "naive", "--mix", MIX, NULL}, "runs with --completion only"},
        {{"--gpus", "0,1", "--mode", "streams", "--mix", MIX, "--completion", NULL}, "naive, mps or serial"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--completion", "--ddp-under", "mig", NULL},
         "--ddp-under mig: expected none or mps"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run(bad[i].args), 2);
        if (!strstr(err, bad[i].message)) fail_msg("case %zu: '%s' not in: %s", i, bad[i].message, err);
    }
}

/* The one run folder under results, its summary.json parsed. */
static cJSON *summary_of(const char *results, char *run_dir, size_t size) {
    DIR *d = opendir(results);
    assert_non_null(d);
    struct dirent *e;
    run_dir[0] = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') snprintf(run_dir, size, "%s/%s", results, e->d_name);
    closedir(d);
    char path[1400], msg[256];
    snprintf(path, sizeof path, "%s/summary.json", run_dir);
    char *text = test_read_text(path, msg, sizeof msg);
    if (!text) fail_msg("%s", msg);
    cJSON *s = cJSON_Parse(text);
    free(text);
    assert_non_null(s);
    return s;
}

/* Every job's go time, from each run's own summary.json; how many, and their spread. */
static int go_times(const cJSON *summary, double *spread) {
    double lo = INFINITY, hi = -INFINITY;
    int n = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, cJSON_GetObjectItemCaseSensitive(summary, "gpus")) {
        char path[1400], msg[256];
        snprintf(path, sizeof path, "%s/summary.json", cJSON_GetObjectItemCaseSensitive(run, "run_folder")->valuestring);
        char *text = test_read_text(path, msg, sizeof msg);
        if (!text) fail_msg("%s", msg);
        cJSON *one = cJSON_Parse(text), *job;
        free(text);
        cJSON_ArrayForEach(job, cJSON_GetObjectItemCaseSensitive(one, "jobs")) {
            const cJSON *go = cJSON_GetObjectItemCaseSensitive(job, "go_t");
            if (!cJSON_IsNumber(go)) continue;
            lo = fmin(lo, go->valuedouble), hi = fmax(hi, go->valuedouble), n++;
        }
        cJSON_Delete(one);
    }
    *spread = hi - lo;
    return n;
}

static void test_one_barrier_over_the_cards(void **state) {
    (void)state;
    char results[600], records[600], run_dir[1200];
    snprintf(results, sizeof results, "%s/results", dir);
    snprintf(records, sizeof records, "%s/records", dir);
    assert_int_equal(mkdir(records, 0700), 0);
    setenv("FAKE_TRAIN_RECORD", records, 1);
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--quick", "--completion", "--results",
                          results, NULL};
    int rc = run(args);
    unsetenv("FAKE_TRAIN_RECORD");
    if (rc != 0) fail_msg("run_suite --gpus failed:\n%s\n%s", out, err);
    cJSON *s = summary_of(results, run_dir, sizeof run_dir);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(s, "gpus");
    assert_int_equal(cJSON_GetArraySize(runs), 3);
    const cJSON *ddp = cJSON_GetArrayItem(runs, 2);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(ddp, "data_parallel_job")->valueint, 0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(ddp, "status")->valuestring, "complete");
    /* the data-parallel job took 300 ms longer to be ready: the small jobs waited for it */
    double spread;
    assert_int_equal(go_times(s, &spread), 5);
    if (!(spread < 0.25)) fail_msg("go times spread over %.3f s", spread);
    /* counted once in the whole run: one resnet50 job among the samples */
    const cJSON *by, *w;
    int resnet50 = 0;
    by = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "total"), "samples_by_workload");
    cJSON_ArrayForEach(w, by)
        if (strstr(cJSON_GetObjectItemCaseSensitive(w, "workload")->valuestring, "resnet50"))
            resnet50 += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(w, "jobs"));
    assert_int_equal(resnet50, 1);
    cJSON_Delete(s);
    /* the data-parallel job's environment */
    DIR *d = opendir(records);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1400], msg[256];
        snprintf(path, sizeof path, "%s/%s", records, e->d_name);
        char *text = test_read_text(path, msg, sizeof msg);
        assert_non_null(text);
        if (strstr(text, "argv --gpus\nargv 2\n") && !strstr(text, "argv --dry-run")) {
            assert_non_null(strstr(text, "env CUDA_VISIBLE_DEVICES=0,1\n"));
            assert_non_null(strstr(text, "env NCCL_NVLS_ENABLE=0\n"));
            found++;
        }
        free(text);
    }
    closedir(d);
    assert_int_equal(found, 1);
}

/* A serial run of the mix (the data-parallel job alone first, then each card's jobs) is every
 * job's reference: STP per card and for the whole run, the data-parallel job's own. */
static void test_serial_reference(void **state) {
    (void)state;
    char base[600], results[600], base_run[1200], run_dir[1200];
    snprintf(base, sizeof base, "%s/base", dir);
    snprintf(results, sizeof results, "%s/against", dir);
    const char *serial[] = {"--gpus", "0,1", "--mode", "serial", "--mix", MIX, "--quick", "--completion",
                            "--results", base, NULL};
    if (run(serial) != 0) fail_msg("serial run failed:\n%s\n%s", out, err);
    cJSON *s = summary_of(base, base_run, sizeof base_run);
    cJSON_Delete(s);
    const char *against[] = {"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--quick", "--completion",
                             "--baseline", base_run, "--results", results, NULL};
    if (run(against) != 0) fail_msg("run against the baseline failed:\n%s\n%s", out, err);
    s = summary_of(results, run_dir, sizeof run_dir);
    const cJSON *one;
    cJSON_ArrayForEach(one, cJSON_GetObjectItemCaseSensitive(s, "gpus"))
        assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(one, "stp")));
    assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "total"), "stp")));
    cJSON_Delete(s);
}

/* The data-parallel job failing before it is ready releases the cards' jobs all the same. */
static void test_failure_hangs_nothing(void **state) {
    (void)state;
    char results[600], run_dir[1200];
    snprintf(results, sizeof results, "%s/failing", dir);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=20;resnet50:never_ready", 1);
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--quick", "--completion",
                          "--ready-timeout", "2", "--results", results, NULL};
    int rc = run(args);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=20;resnet50:setup_ms=300", 1);
    assert_int_equal(rc, 3);
    cJSON *s = summary_of(results, run_dir, sizeof run_dir);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(s, "gpus");
    for (int g = 0; g < 2; g++)
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(runs, g), "status")->valuestring,
                            "complete");
    assert_string_not_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(runs, 2), "status")->valuestring,
                            "complete");
    cJSON_Delete(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dry_run),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_one_barrier_over_the_cards),
        cmocka_unit_test(test_serial_reference),
        cmocka_unit_test(test_failure_hangs_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
