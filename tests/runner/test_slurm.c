/* run_suite --slurm's batch script, on its text: the #SBATCH header, the per-task arguments, the
 * shell quoting (the script is also run by bash as array task 1 with echo standing in for
 * run_suite), option checks, and each task's request (its mix or study cell, its folder, the rest
 * the sweep's); a data-parallel job alone in a mix: its shape over nodes from --nodes,
 * --ntasks-per-node and --gpus-per-node (table-driven), its own batch script (srun of train
 * --launcher slurm), and the refusals. The end-to-end run on a real slurmctld/slurmd is
 * tests/runner/test_slurm_cluster.c. */
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
#include "tests/support/testutil.h"

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
    expect_gt(script_of(&o, args, out, sizeof out, err), 0);
    assert_non_null(strstr(out, "#!/bin/bash\n#SBATCH --job-name=run_suite\n#SBATCH --array=0-2%2\n"));
    assert_non_null(strstr(out, "#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --exclusive\n"));
    assert_non_null(strstr(out, "#SBATCH --partition=gpu\n#SBATCH --gres=gpu:4\n#SBATCH --time=1:00:00\n"));
    assert_non_null(strstr(out, "#SBATCH --chdir=/home/me/suite\n#SBATCH --output=/data/results/slurm-1/task-%a.out\n"));
    assert_non_null(strstr(out, "export NCCL_NVLS_ENABLE=0\n"));
    assert_non_null(strstr(out, "  0) set -- '--mix' 'S+M' ;;\n  1) set -- '--mix' '7*S' ;;\n"
                                "  2) set -- '--mode' 'mps' '--mix' 'M[epochs=3,steps=100]' '--steps-per-epoch' '40' ;;\n"));
    assert_non_null(strstr(out, "exec '/opt/suite/run_suite' '--mode' 'mps' '--quick' \"$@\"\n"));

    slurm_options plain = {0};
    expect_gt(script_of(&plain, args, out, sizeof out, err), 0);
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
    expect_gt(len, 0);
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
        {.partition = "a b"}, {.partition = ""}, {.time_limit = "1h"}, {.max_nodes = -1}, {.job_name = "a;b"},
        {.ntasks_per_node = -1}, {.gpus_per_node = -2}};
    const char *names[] = {"--gres", "--gres", "--gres", "--gres", "--partition", "--partition", "--time",
                           "--nodes", "--job-name", "--ntasks-per-node -1", "--gpus-per-node -2"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(slurm_check_options(&bad[i], err, sizeof err), -1);
        assert_non_null(strstr(err, names[i]));
        assert_non_null(strstr(err, "expected"));
    }
    /* Slurm's time grammar, each field by the number rule (zero padding allowed, as clocks are written) */
    const char *times_ok[] = {"30", "90:00", "1:00:00", "01:30:00", "2-0", "2-12:30", "1-00:00:00", "7-23:59:59"};
    for (size_t i = 0; i < sizeof times_ok / sizeof times_ok[0]; i++) {
        slurm_options t = {.time_limit = times_ok[i]};
        if (slurm_check_options(&t, err, sizeof err) != 0) fail_msg("--time %s refused: %s", times_ok[i], err);
    }
    struct { const char *text, *why; } times_bad[] = {
        {"-5", "days: expected a whole number from 0 to 365, got ''"},
        {"99999999999999999999", "minutes: expected a whole number from 0 to 5256000, got '99999999999999999999' (more "
                                 "than 5256000)"},
        {"0", "of more than nothing"},
        {"1:60:00", "minutes: expected a whole number from 0 to 59, got '60' (more than 59)"},
        {"1-24", "hours: expected a whole number from 0 to 23, got '24' (more than 23)"},
        {"1::00", "entry 2 is empty"},
        {"1:00:00:00", "more than 3 entries"},
        {"+30", "(no sign '+')"},
        {"1h", "got '1h'"},
        {"0x10", "(hexadecimal is not read"},
    };
    for (size_t i = 0; i < sizeof times_bad / sizeof times_bad[0]; i++) {
        slurm_options t = {.time_limit = times_bad[i].text};
        assert_int_equal(slurm_check_options(&t, err, sizeof err), -1);
        if (!strstr(err, "--time") || !strstr(err, times_bad[i].why))
            fail_msg("--time %s: '%s' lacks '%s'", times_bad[i].text, err, times_bad[i].why);
    }
}

static void test_ddp_shape(void **state) {
    (void)state;
    static const struct {
        int nodes, per_node, gpus, ranks;
        int want_nodes, want_per_node, want_gpus; /* 0: refused with `error` */
        const char *error;
    } cases[] = {
        {0, 0, 0, 8, 1, 8, 8, NULL},           /* nothing said: one node */
        {2, 0, 0, 8, 2, 4, 4, NULL},           /* --nodes */
        {0, 4, 0, 8, 2, 4, 4, NULL},           /* --ntasks-per-node */
        {0, 0, 4, 8, 2, 4, 4, NULL},           /* --gpus-per-node: one rank per GPU */
        {2, 4, 0, 8, 2, 4, 4, NULL},
        {2, 0, 8, 8, 2, 4, 8, NULL},           /* more GPUs than ranks on a node: allowed */
        {0, 2, 4, 8, 4, 2, 4, NULL},
        {4, 4, 0, 8, 0, 0, 0, "M[gpus=8]: --nodes 4 x --ntasks-per-node 4 is 16 ranks, but the job has 8 (gpus=8)"},
        {3, 0, 0, 8, 0, 0, 0, "M[gpus=8]: its 8 ranks (gpus=8) do not divide evenly by --nodes 3"},
        {0, 3, 0, 8, 0, 0, 0, "do not divide evenly by --ntasks-per-node 3"},
        {0, 0, 3, 8, 0, 0, 0, "do not divide evenly by --gpus-per-node 3"},
        {2, 0, 2, 8, 0, 0, 0, "M[gpus=8]: --gpus-per-node 2 is fewer than its 4 ranks per node: each rank trains on a "
                              "GPU of its own"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        slurm_options o = {.max_nodes = cases[i].nodes, .ntasks_per_node = cases[i].per_node,
                           .gpus_per_node = cases[i].gpus};
        slurm_shape shape;
        char err[512] = "";
        int rc = slurm_ddp_shape(&o, cases[i].ranks, "M[gpus=8]", &shape, err, sizeof err);
        if (!cases[i].want_nodes) {
            if (rc != -1 || !strstr(err, cases[i].error)) fail_msg("case %zu: expected '%s', got %d '%s'", i, cases[i].error, rc, err);
            continue;
        }
        if (rc != 0) fail_msg("case %zu: refused: %s", i, err);
        assert_int_equal(shape.nodes, cases[i].want_nodes);
        assert_int_equal(shape.tasks_per_node, cases[i].want_per_node);
        assert_int_equal(shape.gpus_per_node, cases[i].want_gpus);
    }
}

static void test_ddp_script(void **state) {
    (void)state;
    char out[8192], err[512];
    const char *argv[] = {"/opt/suite/train", "--model", "resnet50", "--data", "imagenet", "--data-root", "/d/it's",
                          "--launcher", "slurm", "--epochs", "90", NULL};
    slurm_options o = {.partition = "gpu", .gres = "gpu:4", .time_limit = "2-00:00:00", .job_name = "rn50"};
    slurm_shape shape = {2, 4, 4};
    int len = slurm_ddp_script(&o, &shape, argv, "M[gpus=8]", 1, "/data/results/slurm-1", "/home/me/suite", out,
                               sizeof out, err, sizeof err);
    assert_true(len > 0);
    assert_non_null(strstr(out, "#!/bin/bash\n#SBATCH --job-name=rn50\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n"
                                "#SBATCH --gpus-per-node=4\n#SBATCH --exclusive\n#SBATCH --partition=gpu\n"
                                "#SBATCH --time=2-00:00:00\n#SBATCH --chdir=/home/me/suite\n"
                                "#SBATCH --output=/data/results/slurm-1/ddp-1.out\n"));
    assert_null(strstr(out, "--gres")); /* GPUs per node are --gpus-per-node here */
    assert_null(strstr(out, "--array"));
    assert_non_null(strstr(out, "# Written by run_suite --slurm: the data-parallel job M[gpus=8] as 8 ranks over 2 node(s), 4 "
                                "per node,\n"));
    assert_non_null(strstr(out, "export NCCL_NVLS_ENABLE=0\nexec srun '/opt/suite/train' '--model' 'resnet50' '--data' "
                                "'imagenet' '--data-root' '/d/it'\\''s' '--launcher' 'slurm' '--epochs' '90'\n"));
    assert_int_equal(slurm_ddp_script(&o, &shape, argv, "M[gpus=8]", 1, "/r", "/w", out, 64, err, sizeof err), -1);
    assert_non_null(strstr(err, "the batch script of M[gpus=8] exceeds 64 bytes"));
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
        {{"--mode", "naive", "--mixes", "S;Q", NULL}, "mix \"Q\", part 1 \"Q\": unknown job \"Q\""},
        {{"--mode", "naive", "--study", "nothing", NULL}, "--study nothing: unknown set"},
        {{"--mode", "naive", "--mix", "S", "--time", NULL}, "--time: expected a value (not empty); missing its value"},
        {{"--mode", "warp", "--mixes", "S;M", "--results", dir, NULL}, "--mode warp: expected one of"},
        {{"--mode", "naive", "--mixes", "S;M", "--bogus", "--results", dir, NULL},
         "unknown option '--bogus' (run_suite --slurm --help lists them)"},
        {{"--mode", "naive", "--mixes", "S;M", "--mps-sm", "50", "--results", dir, NULL},
         "--mps-sm and --mps-mem go with --mode mps"},
        /* every task is checked by its dry run on this login node, not only the first: no task can use this
           --baseline */
        {{"--mode", "naive", "--mixes", "S;M", "--baseline", "/", "--results", dir, NULL}, "array task 0 is refused"},
        {{"--mode", "naive", "--mix", "S", "--results", "/dev/null", NULL}, "--results /dev/null"},
        {{"--mode", "naive", "--mix", "S+M", "--gpus-per-node", "4", NULL},
         "--gpus-per-node shapes a data-parallel job's nodes: give a mix that is one data-parallel job alone"},
        {{"--mode", "naive", "--mixes", "S;M[gpus=8]", "--nodes", "3", NULL}, "its 8 ranks (gpus=8) do not divide evenly"},
        /* the list rule of every grammar: an empty mix is refused, never dropped */
        {{"--mode", "naive", "--mixes", "S;;M", NULL}, "--mixes 'S;;M': entry 2 is empty (between two ';')"},
        {{"--mode", "naive", "--mixes", "S;", NULL}, "--mixes 'S;': entry 2 is empty (after the last ';')"},
        {{"--mode", "naive", "--mixes", "S; ;M", NULL}, "entry 2 is empty"},
        {{"--mode", "naive", "--mix", "S", "--time", "-5", NULL}, "--time '-5': expected Slurm's time limit"},
        {{"--mode", "naive", "--mix", "M[gpus=2]", "--window", "5", "--results", dir, NULL},
         "the data-parallel job M[gpus=2] runs to completion: --window, --windows and --warmup-steps are the window "
         "measurement's"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run_suite(out, sizeof out, err, sizeof err, bad[i].args), 2);
        if (!strstr(err, bad[i].message)) fail_msg("case %zu: '%s' not in: %s", i, bad[i].message, err);
    }
    /* task 0 fits the GPU's memory, task 1 does not: the checks reach past the first task */
    setenv("SUITE_GPU_MEMORY", "1G", 1);
    char *second[] = {"--mode", "naive", "--mixes", "S;S+S", "--results", dir, "--dry-run", NULL};
    assert_int_equal(run_suite(out, sizeof out, err, sizeof err, second), 2);
    if (!strstr(err, "array task 1 is refused") || !strstr(err, "refused: the mix needs 2.00 GiB"))
        fail_msg("the second task's refusal: %s", err);
    unsetenv("SUITE_GPU_MEMORY");
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
    assert_non_null(strstr(out, "left to each node: that its GPUs exist"));
    /* on a login node whose NVML counts one GPU, a task's --gpu 5 is the compute node's to judge */
    setenv("SUITE_NVML_LIBRARY", NVML_STANDIN_PATH, 1);
    char *gpu5[] = {"--mode", "naive", "--mix", "S", "--gpu", "5", "--results", dir, "--dry-run", NULL};
    assert_int_equal(run_suite(out, sizeof out, err, sizeof err, gpu5), 0);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
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
    /* a mix that is one data-parallel job alone: its own script, over nodes, beside the array's */
    char *ddp[] = {"--mode", "naive", "--mixes", "S;M[gpus=4,epochs=3]", "--gpus-per-node", "2", "--results", dir,
                   "--quick", "--dry-run", NULL};
    assert_int_equal(run_suite(out, sizeof out, err, sizeof err, ddp), 0);
    assert_non_null(strstr(out, "(1 array task(s))"));
    const char *line = strstr(out, "\nwrote ");
    assert_non_null(line);
    assert_int_equal(sscanf(line, "\nwrote %1023s (M[gpus=4,epochs=3]: 4 ranks over 2 node(s));", path), 1);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(script, 1, sizeof script - 1, f);
    fclose(f);
    script[n] = 0;
    assert_non_null(strstr(script, "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=2\n#SBATCH --gpus-per-node=2\n"));
    /* run_suite's own command for the job, to completion (--quick: 10 steps), as srun starts each rank */
    assert_non_null(strstr(script, "exec srun '" FAKE_TRAIN_PATH "' '--model' 'resnet50' '--data' 'imagenet64' "
                                   "'--batch' '128' '--image-size' '64' '--classes' '1000' '--launcher' 'slurm' "
                                   "'--epochs' '3' '--steps-per-epoch' '10'\n"));
    assert_null(strstr(script, "--wait-go"));
    assert_null(strstr(script, "--json"));
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
        cmocka_unit_test(test_ddp_shape),       cmocka_unit_test(test_ddp_script),
#if defined(RUN_SUITE_PATH) && defined(FAKE_TRAIN_PATH)
        cmocka_unit_test(test_cli),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
