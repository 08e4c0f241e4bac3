/* run_suite's MIG planning, isolation pass and layout sweep as a program: dry runs with the real
 * `train --dry-run` (no GPU needed) show fill's layouts and why, compact keeps the smallest fits,
 * impossible plans exit 2; then end to end with tests/support/fake_train as the jobs: mig-emulate measures
 * each job alone in its partition (interference ratios in summary.json), --mig-layouts runs one
 * folder per layout plus layouts.csv, a mix of unlike jobs never shows a samples/s sum, and real
 * MIG (the NVML stand-in) runs each job alone on an instance of its own profile. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tests/support/testutil.h"

typedef struct fixture {
    char dir[256], results[512], bin[512], mps[512];
    char out[1 << 17], err[1 << 16];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    test_tmpdir(f->dir, sizeof f->dir);
    snprintf(f->results, sizeof f->results, "%s/results", f->dir);
    snprintf(f->bin, sizeof f->bin, "%s/bin", f->dir);
    snprintf(f->mps, sizeof f->mps, "%s/default-mps", f->dir);
    mkdir(f->bin, 0755);
    mkdir(f->mps, 0700);
    char link[600], path[4096];
    snprintf(link, sizeof link, "%s/nvidia-cuda-mps-control", f->bin);  /* fake_train plays MPS's control */
    assert_int_equal(symlink(test_binary("fake_train"), link), 0);
    snprintf(path, sizeof path, "%s:%s", f->bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", f->mps, 1);
    setenv("SUITE_JOB_HOST", test_binary("fake_job_host"), 1);  /* the in-process modes' jobs */
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    test_rmtree(f->dir);
    unsetenv("FAKE_TRAIN");
    free(f);
    return 0;
}

/* run_suite with the arguments (NULL-terminated), train (a binary's name) and --results. */
static int run(fixture *f, const char *train, const char *const *args) {
    char program[1024], train_path[1024];  /* test_binary's answer is overwritten by the next */
    snprintf(program, sizeof program, "%s", test_binary("run_suite"));
    snprintf(train_path, sizeof train_path, "%s", test_binary(train));
    const char *argv[64] = {program};
    int n = 1;
    int own_length = 0;
    for (; args[n - 1]; n++) {
        argv[n] = args[n - 1];
        /* a run that says nothing of its measurement's length gets a 1 s window, not 10 s */
        own_length |= !strcmp(argv[n], "--quick") || !strncmp(argv[n], "--window", 8) ||
                      !strcmp(argv[n], "--completion") || !strcmp(argv[n], "--dry-run");
    }
    if (!own_length) argv[n++] = "--window", argv[n++] = "1";
    argv[n++] = "--train", argv[n++] = train_path;
    argv[n++] = "--results", argv[n++] = f->results;
    argv[n] = NULL;
    return test_run((char *const *)argv, f->out, sizeof f->out, f->err, sizeof f->err);
}

static void expect(const char *text, const char *word) {
    if (!strstr(text, word)) fail_msg("output lacks \"%s\":\n%s", word, text);
}

static void run_dir(fixture *f, char *out, size_t size) {
    DIR *d = opendir(f->results);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') snprintf(out, size, "%s/%s", f->results, e->d_name), n++;
    closedir(d);
    assert_int_equal(n, 1);
}

static cJSON *load_json(const char *dir, const char *name) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *file = fopen(path, "r");
    if (!file) fail_msg("cannot read %s", path);
    static char text[1 << 18];
    size_t n = fread(text, 1, sizeof text - 1, file);
    text[n] = 0;
    fclose(file);
    cJSON *json = cJSON_Parse(text);
    if (!json) fail_msg("cannot parse %s", path);
    return json;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

static const cJSON *job(const cJSON *summary, int i) {
    return cJSON_GetArrayItem(cJSON_GetObjectItem(summary, "jobs"), i);
}

/* ---- dry runs with the real train's footprints and FLOPs -------------------------------------- */

static void test_dry_run_layouts(void **state) {
    fixture *f = *state;
    struct { const char *gpu, *mix, *want; } cases[] = {
        {"A100-40GB", "S", "chosen    7g.40gb "},
        {"A100-40GB", "2*S", "chosen    3g.20gb,3g.20gb "},
        {"A100-40GB", "3*S", "chosen    2g.10gb,2g.10gb,2g.10gb "},
        {"A100-40GB", "7*S", "chosen    1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb,1g.5gb "},
        {"H100-80GB", "L", "chosen    7g.80gb "},
        {"H100-80GB", "2*M", "chosen    3g.40gb,3g.40gb "},
        {"H100-80GB", "3*M", "chosen    2g.20gb,2g.20gb,2g.20gb "},
        {"H100-80GB", "7*S", "chosen    1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb,1g.10gb "},
        {"H100-80GB", "S+M+M", "chosen    1g.20gb,2g.20gb,2g.20gb "},  /* M more than S */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"--mode", "mig", "--mix", cases[i].mix, "--mig-gpu", cases[i].gpu, "--dry-run", NULL};
        if (run(f, "train", args) != 0) fail_msg("%s on %s: %s", cases[i].mix, cases[i].gpu, f->err);
        expect(f->out, "MIG objective fill");
        expect(f->out, cases[i].want);
    }
    expect(f->out, "runner-up");
    expect(f->out, "no more SMs than one with less");  /* why 2g.20gb x3 lost */
    /* compact: today's smallest fits, 3 of 7 compute slices */
    const char *compact[] = {"--mode", "mig", "--mix", "S+M+M", "--mig-gpu", "H100-80GB", "--dry-run",
                             "--mig-objective", "compact", NULL};
    assert_int_equal(run(f, "train", compact), 0);
    expect(f->out, "MIG objective compact");
    expect(f->out, "largest free run: 5 slices");
    /* mig-emulate realises the same fill plan */
    const char *emulate[] = {"--mode", "mig-emulate", "--mix", "S+M+M", "--mig-gpu", "H100-80GB", "--dry-run", NULL};
    assert_int_equal(run(f, "train", emulate), 0);
    expect(f->out, "chosen    1g.20gb,2g.20gb,2g.20gb ");
}

static void test_impossible_plans_exit_2(void **state) {
    fixture *f = *state;
    const char *eight[] = {"--mode", "mig", "--mix", "8*S", "--mig-gpu", "A100-40GB", "--dry-run", NULL};
    assert_int_equal(run(f, "train", eight), 2);
    expect(f->err, "at most 7 jobs");
    const char *layout[] = {"--mode", "mig-emulate", "--mix", "S+M", "--mig-gpu", "H100-80GB", "--dry-run",
                            "--mig-layout", "4g.40gb,4g.40gb", NULL};
    assert_int_equal(run(f, "train", layout), 2);
    const char *sweep[] = {"--mode", "mig-emulate", "--mix", "S+M", "--mig-gpu", "H100-80GB", "--dry-run",
                           "--mig-layouts", "1g.10gb+3g.40gb;2g.20gb+9g.20gb", NULL};
    assert_int_equal(run(f, "train", sweep), 2);
    expect(f->err, "layout 2 \"2g.20gb+9g.20gb\"");
    const char *objective[] = {"--mode", "mps", "--mix", "S", "--mig-objective", "compact", "--dry-run", NULL};
    assert_int_equal(run(f, "train", objective), 2);
    const char *bad[] = {"--mode", "mig", "--mix", "S", "--mig-objective", "smallest", "--dry-run", NULL};
    assert_int_equal(run(f, "train", bad), 2);
    expect(f->err, "fill or compact");
    struct stat st;
    assert_int_equal(stat(f->results, &st), -1);  /* nothing ran, nothing written */
}

static void test_dry_run_sweep_lists_layouts(void **state) {
    fixture *f = *state;
    const char *args[] = {"--mode", "mig-emulate", "--mix", "S+M", "--mig-gpu", "H100-80GB", "--dry-run",
                          "--mig-layouts", "all", NULL};
    assert_int_equal(run(f, "train", args), 0);
    expect(f->out, "14 layout(s) of 2 instance(s) on H100-80GB");
    expect(f->out, "3g.40gb,4g.40gb");
    expect(f->out, "1g.10gb,1g.10gb");
}

/* The study's Table 2 mix: shared by the planner on the A100-40GB, asked for on the H100. */
static void test_dry_run_shared_gpu_instance(void **state) {
    fixture *f = *state;
    const char *a100[] = {"--mode", "mig", "--mix", "XL+L", "--mig-gpu", "A100-40GB", "--dry-run", NULL};
    if (run(f, "train", a100) != 0) fail_msg("%s", f->err);
    expect(f->out, "no layout of separate GPU instances holds every job's memory");
    expect(f->out, "chosen    7g.40gb:3c+4c ");
    expect(f->out, "3c.7g.40gb");
    expect(f->out, "shared GPU instance 7g.40gb");
    const char *h100[] = {"--mode", "mig-emulate", "--mix", "XL+L", "--mig-gpu", "H100-80GB", "--dry-run",
                          "--mig-share-memory", NULL};
    assert_int_equal(run(f, "train", h100), 0);
    expect(f->out, "--mig-share-memory asks for it");
    expect(f->out, "chosen    7g.80gb:3c+4c ");
    expect(f->out, "no per-job memory limit");
    const char *json[] = {"--mode", "mig-emulate", "--mix", "XL+L", "--mig-gpu", "H100-80GB", "--dry-run",
                          "--mig-share-memory", "--json", NULL};
    assert_int_equal(run(f, "train", json), 0);
    expect(f->out, "\"compute_instance\":\t\"4c.7g.80gb\"");
    const char *plain[] = {"--mode", "mig-emulate", "--mix", "XL+L", "--mig-gpu", "H100-80GB", "--dry-run", NULL};
    assert_int_equal(run(f, "train", plain), 0);
    expect(f->out, "chosen    3g.40gb,4g.40gb ");  /* XL fits a 3g.40gb there */
    const char *sweep[] = {"--mode", "mig-emulate", "--mix", "S+M", "--mig-gpu", "H100-80GB", "--dry-run",
                           "--mig-layouts", "all", "--mig-share-memory", NULL};
    assert_int_equal(run(f, "train", sweep), 0);
    expect(f->out, "7g.80gb:");
    expect(f->out, "every job on a compute instance of one shared GPU instance");
    const char *listed[] = {"--mode", "mig-emulate", "--mix", "S+M", "--mig-gpu", "H100-80GB", "--dry-run",
                            "--mig-layouts", "3g.40gb:1c+2c;1g.10gb+3g.40gb", NULL};
    assert_int_equal(run(f, "train", listed), 0);
    expect(f->out, "3g.40gb:1c+2c ");
    const char *bad[] = {"--mode", "mig-emulate", "--mix", "S+M", "--mig-gpu", "H100-80GB", "--dry-run",
                         "--mig-layout", "7g.80gb:5c+2c", NULL};
    assert_int_equal(run(f, "train", bad), 2);
    expect(f->err, "7g.80gb:5c+2c");
    expect(f->err, "expected PROFILE:Nc+Nc");
    const char *both[] = {"--mode", "mig-emulate", "--mix", "S+M", "--dry-run", "--mig-share-memory",
                          "--mig-layout", "7g.80gb:3c+4c", NULL};
    assert_int_equal(run(f, "train", both), 2);
    expect(f->err, "not both");
}

/* ---- end to end with fake_train -------------------------------------------------------------- */

static void test_emulated_isolation_pass(void **state) {
    fixture *f = *state;
    setenv("FAKE_TRAIN", "*:epoch_ms=60", 1);
    const char *args[] = {"--mode", "mig-emulate", "--mix", "S+M", "--mig-gpu", "H100-80GB", NULL};
    assert_int_equal(run(f, "fake_train", args), 0);
    char dir[1024], solo[1200];
    run_dir(f, dir, sizeof dir);
    cJSON *summary = load_json(dir, "summary.json");
    for (int i = 0; i < 2; i++) {
        double ratio = num(job(summary, i), "interference_ratio");
        expect_gt(ratio, 0.8); expect_lt(ratio, 1.25);  /* fake jobs do not slow each other */
        expect_gt(num(job(summary, i), "solo_in_partition_samples_per_s"), 0);
    }
    assert_false(cJSON_IsNumber(cJSON_GetObjectItem(summary, "aggregate_samples_per_s")));  /* S and M */
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(summary, "same_workload")));
    cJSON_Delete(summary);
    /* each job ran alone with its own planned share: 3g.40gb (60 of 132 SMs) and 4g.40gb (64: 49%,
     * the least percent whose whole TPCs hold 64 SMs; 48% would give 62) */
    snprintf(solo, sizeof solo, "%s/alone-in-partition/job-1-M", dir);
    cJSON *run_json = load_json(solo, "run.json");
    const cJSON *env = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(run_json, "jobs"), 0), "cuda_env");
    int share = 0;
    for (int i = 0; i < cJSON_GetArraySize(env); i++)
        share |= strcmp(cJSON_GetArrayItem(env, i)->valuestring, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=49") == 0;
    assert_true(share);
    cJSON_Delete(run_json);
    expect(f->out, "interference ratio");
    expect(f->out, "their samples/s are not summed");
}

/* Identical jobs on identical partitions run alone at the same rate: the isolation pass measures
 * one and says so for the other (3*S under fill on the H100: 2g.20gb, 2g.20gb and 3g.40gb, so
 * job 1 takes job 0's solo run and job 2 runs alone on its own larger partition). */
static void test_isolation_measures_identical_jobs_once(void **state) {
    fixture *f = *state;
    setenv("FAKE_TRAIN", "*:epoch_ms=40", 1);
    const char *args[] = {"--mode", "mig-emulate", "--mix", "3*S", "--mig-gpu", "H100-80GB", NULL};
    assert_int_equal(run(f, "fake_train", args), 0);
    char dir[1024], solo[1200];
    run_dir(f, dir, sizeof dir);
    cJSON *summary = load_json(dir, "summary.json");
    double first = num(job(summary, 0), "solo_in_partition_samples_per_s");
    expect_gt(first, 0);
    assert_null(cJSON_GetObjectItem(job(summary, 0), "solo_in_partition_from_job"));
    assert_true(num(job(summary, 1), "solo_in_partition_samples_per_s") == first);
    assert_int_equal((int)num(job(summary, 1), "solo_in_partition_from_job"), 0);
    expect_gt(num(job(summary, 1), "interference_ratio"), 0);
    expect_gt(num(job(summary, 2), "solo_in_partition_samples_per_s"), 0);
    assert_null(cJSON_GetObjectItem(job(summary, 2), "solo_in_partition_from_job"));
    cJSON_Delete(summary);
    struct stat st;
    snprintf(solo, sizeof solo, "%s/alone-in-partition/job-0-S", dir);
    assert_int_equal(stat(solo, &st), 0);
    snprintf(solo, sizeof solo, "%s/alone-in-partition/job-1-S", dir);
    assert_int_not_equal(stat(solo, &st), 0);
    snprintf(solo, sizeof solo, "%s/alone-in-partition/job-2-S", dir);
    assert_int_equal(stat(solo, &st), 0);
    expect(f->err, "job 1 is the same job in the same partition as job 0");
}

static void test_unlike_jobs_have_no_sum(void **state) {
    fixture *f = *state;
    setenv("FAKE_TRAIN", "*:epoch_ms=40", 1);
    /* S+M (S+XL on the GPU; fake_train plays recommender jobs only as far as their options go) */
    const char *args[] = {"--mode", "mps", "--mix", "S+M", NULL};
    assert_int_equal(run(f, "fake_train", args), 0);
    assert_null(strstr(f->out, "samples/s in total"));
    expect(f->out, "STP");
    char dir[1024];
    run_dir(f, dir, sizeof dir);
    cJSON *summary = load_json(dir, "summary.json");
    assert_null(cJSON_GetObjectItem(summary, "aggregate_samples_per_s"));
    assert_null(cJSON_GetObjectItem(summary, "timed_samples_per_s_sum"));
    cJSON_Delete(summary);
    /* identical jobs keep their sum */
    test_rmtree(f->results);
    const char *same[] = {"--mode", "naive", "--mix", "2*S", NULL};
    assert_int_equal(run(f, "fake_train", same), 0);
    expect(f->out, "samples/s in total");
    run_dir(f, dir, sizeof dir);
    summary = load_json(dir, "summary.json");
    expect_gt(num(summary, "aggregate_samples_per_s"), 0);
    cJSON_Delete(summary);
}

static void test_layout_sweep(void **state) {
    fixture *f = *state;
    setenv("FAKE_TRAIN", "*:epoch_ms=40", 1);
    const char *args[] = {"--mode", "mig-emulate", "--mix", "S+M", "--mig-gpu", "H100-80GB",
                          "--mig-layouts", "1g.10gb+3g.40gb;2g.20gb+2g.20gb", NULL};
    assert_int_equal(run(f, "fake_train", args), 0);
    char dir[1024], sub[1200];
    run_dir(f, dir, sizeof dir);
    const char *folders[] = {"serial", "layout-01-1g.10gb_3g.40gb", "layout-02-2g.20gb_2g.20gb"};
    for (int i = 0; i < 3; i++) {
        struct stat st;
        snprintf(sub, sizeof sub, "%s/%s", dir, folders[i]);
        if (stat(sub, &st) != 0) fail_msg("no folder %s", sub);
    }
    snprintf(sub, sizeof sub, "%s/layout-02-2g.20gb_2g.20gb/alone-in-partition/job-0-S", dir);
    cJSON *solo = load_json(sub, "summary.json");
    cJSON_Delete(solo);
    cJSON *layouts = load_json(dir, "layouts.json");
    assert_int_equal(cJSON_GetArraySize(layouts), 2);
    const cJSON *second = cJSON_GetArrayItem(layouts, 1);
    assert_string_equal(cJSON_GetObjectItem(second, "layout")->valuestring, "2g.20gb,2g.20gb");
    assert_int_equal((int)num(second, "sms"), 64);
    expect_gt(num(second, "stp"), 1.5);  /* fake jobs: no slow-down side by side */
    expect_gt(num(second, "interference_ratio_mean"), 0.8);
    cJSON_Delete(layouts);
    expect(f->out, "layout (job order)");
    /* the sweep needs a MIG mode */
    const char *wrong[] = {"--mode", "mps", "--mix", "S+M", "--mig-layouts", "all", NULL};
    assert_int_equal(run(f, "fake_train", wrong), 2);
}

#ifdef NVML_STANDIN_PATH
/* Real MIG (the stand-in's H100): each job again alone, on an instance of its own profile. */
static void test_mig_isolation_on_instances(void **state) {
    fixture *f = *state;
    setenv("SUITE_NVML_LIBRARY", NVML_STANDIN_PATH, 1);
    setenv("SUITE_NVML_STANDIN_GPU", "H100-80GB", 1);
    setenv("SUITE_NVML_STANDIN_MIG", "on", 1);
    setenv("FAKE_TRAIN", "*:epoch_ms=40", 1);
    const char *args[] = {"--mode", "mig", "--mix", "S+M", "--mig-create", NULL};
    int rc = run(f, "fake_train", args);
    if (rc != 0) fail_msg("exit %d: %s", rc, f->err);
    assert_null(strstr(f->err, "warning"));  /* every instance destroyed */
    char dir[1024], solo[1200];
    run_dir(f, dir, sizeof dir);
    cJSON *run_json = load_json(dir, "run.json");
    const cJSON *devices = cJSON_GetObjectItem(run_json, "mig_devices");
    int sms[2] = {(int)num(cJSON_GetArrayItem(devices, 0), "sm_count"), (int)num(cJSON_GetArrayItem(devices, 1), "sm_count")};
    assert_int_equal(sms[0], 60);  /* fill: 3g.40gb and 4g.40gb */
    assert_int_equal(sms[1], 64);
    cJSON_Delete(run_json);
    const char *names[] = {"job-0-S", "job-1-M"};
    for (int i = 0; i < 2; i++) {
        snprintf(solo, sizeof solo, "%s/alone-in-partition/%s", dir, names[i]);
        cJSON *alone = load_json(solo, "run.json");
        const cJSON *d = cJSON_GetArrayItem(cJSON_GetObjectItem(alone, "mig_devices"), 0);
        assert_int_equal((int)num(d, "sm_count"), sms[i]);
        cJSON_Delete(alone);
    }
    cJSON *summary = load_json(dir, "summary.json");
    for (int i = 0; i < 2; i++) expect_gt(num(job(summary, i), "interference_ratio"), 0.8);
    cJSON_Delete(summary);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    unsetenv("SUITE_NVML_STANDIN_GPU");
    unsetenv("SUITE_NVML_STANDIN_MIG");
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dry_run_layouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_impossible_plans_exit_2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dry_run_sweep_lists_layouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dry_run_shared_gpu_instance, setup, teardown),
        cmocka_unit_test_setup_teardown(test_emulated_isolation_pass, setup, teardown),
        cmocka_unit_test_setup_teardown(test_isolation_measures_identical_jobs_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlike_jobs_have_no_sum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layout_sweep, setup, teardown),
#ifdef NVML_STANDIN_PATH
        cmocka_unit_test_setup_teardown(test_mig_isolation_on_instances, setup, teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
