/* run_suite --slurm's batch script, on its text: the #SBATCH header, the per-task arguments, the
 * shell quoting (the script is also run by bash as array task 1 with echo standing in for
 * run_suite), option checks, and each task's request (its mix or study cell, its folder, the rest
 * the sweep's). The end-to-end run on a real slurmctld/slurmd is tests/test_slurm_cluster.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "runner/suite/multi/slurm.h"
#include "tests/testutil.h"

static const slurm_task TASKS[] = {
    {.args = {"--mix", "S+M"}}, {.args = {"--mix", "7*S"}},
    {.args = {"--mode", "mps", "--mix", "M[epochs=3,steps=100]", "--steps-per-epoch", "40"}}};

static int script_of(const slurm_options *o, const char *const *args, char *out, size_t size, char *err) {
    slurm_sweep s = {"/opt/suite/run_suite", args, TASKS, 3, "/data/results/slurm-1", "/home/me/suite"};
    return slurm_script(o, &s, out, size, err, 512);
}

static void test_header(void **state) {
    (void)state;
    char out[8192], err[512];
    const char *args[] = {"--mode", "mps", "--quick", NULL};
    slurm_options o = {.partition = "gpu", .gres = "gpu:4", .max_nodes = 2, .time_limit = "1:00:00"};
    assert_true(script_of(&o, args, out, sizeof out, err) > 0);
    assert_non_null(strstr(out, "#!/bin/bash\n#SBATCH --job-name=run_suite\n#SBATCH --array=0-2%2\n"));
    assert_non_null(strstr(out, "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --exclusive\n"));
    assert_non_null(strstr(out, "#SBATCH --partition=gpu\n#SBATCH --gres=gpu:4\n#SBATCH --time=1:00:00\n"));
    assert_non_null(strstr(out, "#SBATCH --chdir=/home/me/suite\n#SBATCH --output=/data/results/slurm-1/task-%a.out\n"));
    assert_non_null(strstr(out, "export NCCL_NVLS_ENABLE=0\n"));
    assert_non_null(strstr(out, "  0) set -- '--mix' 'S+M' ;;\n  1) set -- '--mix' '7*S' ;;\n"
                                "  2) set -- '--mode' 'mps' '--mix' 'M[epochs=3,steps=100]' '--steps-per-epoch' '40' ;;\n"));
    assert_non_null(strstr(out, "exec '/opt/suite/run_suite' '--mode' 'mps' '--quick' \"$@\"\n"));

    slurm_options plain = {0};
    assert_true(script_of(&plain, args, out, sizeof out, err) > 0);
    assert_non_null(strstr(out, "#SBATCH --array=0-2\n"));
    assert_null(strstr(out, "--partition"));
    assert_null(strstr(out, "--gres"));
    assert_null(strstr(out, "--time"));
}

static void test_limits(void **state) {
    (void)state;
    char out[8192], err[512];
    slurm_options o = {0};
    slurm_sweep none = {"/x/run_suite", NULL, TASKS, 0, "/r", "/w"};
    assert_int_equal(slurm_script(&o, &none, out, sizeof out, err, sizeof err), -1);
    assert_non_null(strstr(err, "1 to 1000 tasks"));
    assert_int_equal(script_of(&o, NULL, out, 64, err), -1);
    assert_non_null(strstr(err, "exceeds 64 bytes"));
}

/* The script as bash runs it for array task 1, echo standing in for run_suite: each argument
 * arrives whole, quotes and blanks included. */
static void test_quoting_under_bash(void **state) {
    (void)state;
    if (access("/bin/bash", X_OK) != 0) skip();
    char dir[512], script[1024], out[8192], err[512];
    test_tmpdir(dir, sizeof dir);
    const char *args[] = {"--data-root", "/d/it's here", "--mode", "naive", NULL};
    const slurm_task tasks[] = {{.args = {"--mix", "S"}}, {.args = {"--mix", "2 * S + M"}}};
    slurm_sweep s = {"/bin/echo", args, tasks, 2, dir, dir};
    slurm_options o = {0};
    int len = slurm_script(&o, &s, out, sizeof out, err, sizeof err);
    assert_true(len > 0);
    snprintf(script, sizeof script, "%s/sweep.sbatch", dir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fwrite(out, 1, (size_t)len, f);
    fclose(f);
    setenv("SLURM_ARRAY_TASK_ID", "1", 1);
    char *const argv[] = {"/bin/bash", script, NULL};
    char got[2048], got_err[2048];
    assert_int_equal(test_run(argv, got, sizeof got, got_err, sizeof got_err), 0);
    char want[2048];
    snprintf(want, sizeof want, "--data-root /d/it's here --mode naive --mix 2 * S + M\n");
    assert_string_equal(got, want);
    setenv("SLURM_ARRAY_TASK_ID", "7", 1);
    assert_int_equal(test_run(argv, got, sizeof got, got_err, sizeof got_err), 2);
    assert_non_null(strstr(got_err, "no task 7 in this sweep"));
    unsetenv("SLURM_ARRAY_TASK_ID");
    test_rmtree(dir);
}

static void test_check_options(void **state) {
    (void)state;
    char err[512];
    slurm_options ok = {.partition = "gpu,debug", .gres = "gpu:h100:8", .max_nodes = 4, .time_limit = "1-00:00:00",
                        .job_name = "sweep.1"};
    assert_int_equal(slurm_check_options(&ok, err, sizeof err), 0);
    const slurm_options bad[] = {
        {.gres = "gpu"}, {.gres = "gpu:0"}, {.gres = ":4"}, {.gres = "gpu:4x"},
        {.partition = "a b"}, {.partition = ""}, {.time_limit = "1h"}, {.max_nodes = -1}, {.job_name = "a;b"}};
    const char *names[] = {"--gres", "--gres", "--gres", "--gres", "--partition", "--partition", "--time",
                           "--nodes", "--job-name"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(slurm_check_options(&bad[i], err, sizeof err), -1);
        assert_non_null(strstr(err, names[i]));
        assert_non_null(strstr(err, "expected"));
    }
}

#if defined(RUN_SUITE_PATH) && defined(FAKE_TRAIN_PATH)
static int run_suite(char *out, size_t size, char *err, size_t err_size, char *const *args) {
    char *argv[32] = {RUN_SUITE_PATH, "--slurm"};
    int n = 2;
    for (; *args && n < 29; args++) argv[n++] = *args;
    argv[n++] = "--train", argv[n++] = FAKE_TRAIN_PATH;
    argv[n] = NULL;
    return test_run(argv, out, size, err, err_size);
}

/* Bad input is refused with exit 2 before anything is written or submitted; --dry-run writes the
 * script, the tasks' options checked by run_suite itself. */
static void test_cli(void **state) {
    (void)state;
    char dir[512], out[8192], err[8192];
    test_tmpdir(dir, sizeof dir);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    struct { char *args[12]; const char *message; } bad[] = {
        {{"--mode", "naive", "--mix", "S", "--gres", "gpu", NULL}, "--gres gpu: expected NAME[:TYPE]:COUNT"},
        {{"--mode", "naive", "--mix", "S", "--nodes", "0", NULL}, "--nodes: expected a whole number from 1 to 100000"},
        {{"--mode", "naive", "--mix", "S", "--mixes", "S;M", NULL}, "one of --mix MIX, --mixes"},
        {{"--mode", "naive", NULL}, "one of --mix MIX, --mixes"},
        {{"--mode", "naive", "--mixes", "S;Q", NULL}, "--mix Q: "},
        {{"--mode", "naive", "--study", "nothing", NULL}, "--study nothing: unknown set"},
        {{"--mode", "naive", "--mix", "S", "--time", NULL}, "--time: expected a value (not empty); missing its value"},
        {{"--mode", "warp", "--mixes", "S;M", "--results", dir, NULL}, "--mode warp: expected one of"},
        {{"--mode", "naive", "--mixes", "S;M", "--bogus", "--results", dir, NULL},
         "unknown option '--bogus' (run_suite --slurm --help lists them)"},
        {{"--mode", "naive", "--mixes", "S;M", "--mps-sm", "50", "--results", dir, NULL},
         "--mps-sm and --mps-mem go with --mode mps"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run_suite(out, sizeof out, err, sizeof err, bad[i].args), 2);
        if (!strstr(err, bad[i].message)) fail_msg("case %zu: '%s' not in: %s", i, bad[i].message, err);
    }
    char *ok[] = {"--mode", "naive", "--mixes", "S; 2*S+M", "--partition", "gpu", "--gres", "gpu:8", "--nodes", "2",
                  "--results", dir, "--quick", "--dry-run", NULL};
    assert_int_equal(run_suite(out, sizeof out, err, sizeof err, ok), 0);
    char path[1024];
    assert_int_equal(sscanf(out, "wrote %1023s", path), 1);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char script[8192];
    size_t n = fread(script, 1, sizeof script - 1, f);
    fclose(f);
    script[n] = 0;
    assert_non_null(strstr(script, "#SBATCH --array=0-1%2\n"));
    assert_non_null(strstr(script, "#SBATCH --gres=gpu:8\n"));
    char task[1200], want[1400];
    snprintf(task, sizeof task, "%.*s/task-1/request.json", (int)(strrchr(path, '/') - path), path);
    snprintf(want, sizeof want, "  1) set -- '--request' '%s' ;;\n", task);
    assert_non_null(strstr(script, want));
    assert_non_null(strstr(script, "exec '" RUN_SUITE_PATH "' \"$@\"\n"));
    assert_null(strstr(script, "--dry-run"));
    /* task 1's request: its own mix and folder, the rest the sweep's, to be run (not dry) */
    cJSON *r = test_read_json(task, err, sizeof err);
    assert_non_null(r);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(r, "mix")->valuestring, "2*S+M");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(r, "mode")->valuestring, "naive");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "jobs")), 3);
    const cJSON *length = cJSON_GetObjectItemCaseSensitive(r, "length"), *where = cJSON_GetObjectItemCaseSensitive(r, "where");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(length, "quick")));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(where, "train")->valuestring, FAKE_TRAIN_PATH);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "control"), "dry_run")));
    snprintf(want, sizeof want, "%.*s", (int)(strrchr(task, '/') - task), task);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "outputs"), "results")
                            ->valuestring, want);
    cJSON_Delete(r);
    /* "--opt=value" everywhere, a study's cells as the tasks */
    char results_eq[600];
    snprintf(results_eq, sizeof results_eq, "--results=%s", dir);
    char *eq[] = {"--mode=naive", "--study=small", "--nodes=2", results_eq, "--quick", "--dry-run", NULL};
    assert_int_equal(run_suite(out, sizeof out, err, sizeof err, eq), 0);
    assert_int_equal(sscanf(out, "wrote %1023s", path), 1);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(script, 1, sizeof script - 1, f);
    fclose(f);
    script[n] = 0;
    assert_non_null(strstr(script, "#SBATCH --array=0-9%2\n"));
    /* each cell runs under its own mode (the one given is the sweep's, which each cell replaces) */
    snprintf(task, sizeof task, "%.*s/task-9/request.json", (int)(strrchr(path, '/') - path), path);
    r = test_read_json(task, err, sizeof err);
    assert_non_null(r);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(r, "mode")->valuestring, "mig-emulate");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(r, "mix")->valuestring, "7*S");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "length"), "quick")));
    cJSON_Delete(r);
    /* --help anywhere: the --slurm form's help, over bad values too, and nothing written */
    char fresh[600];
    snprintf(fresh, sizeof fresh, "%s/fresh", dir);
    char *help[] = {"--mode", "naive", "--mixes", "S;M", "--nodes", "0", "--results", fresh, "--help", NULL};
    assert_int_equal(run_suite(out, sizeof out, err, sizeof err, help), 0);
    assert_non_null(strstr(out, "usage: run_suite --slurm"));
    assert_int_not_equal(access(fresh, F_OK), 0);
    unsetenv("SUITE_NVML_LIBRARY");
    test_rmtree(dir);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header),          cmocka_unit_test(test_limits),
        cmocka_unit_test(test_quoting_under_bash), cmocka_unit_test(test_check_options),
#if defined(RUN_SUITE_PATH) && defined(FAKE_TRAIN_PATH)
        cmocka_unit_test(test_cli),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
