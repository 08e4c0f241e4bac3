/* run_suite as a program (RUN_SUITE_PATH) with tests/support/fake_train as its train: bad options and
 * mixes (exit 2, a message naming what is valid, nothing written), --list, --dry-run --json, the
 * oversized-mix refusal and --force, naive / serial / mps / all runs end to end, a crashing job
 * (partial run), --baseline (these in the completion measurement, whose makespans and speed-ups they
 * check; tests/runner/test_window.c has the window measurement's), and SIGTERM during a run (no process or daemon left, results
 * written, exit 143). The MPS control program is fake_train under the name
 * nvidia-cuda-mps-control, first on PATH; NVML is kept out so the runs are the same everywhere. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runner/suite/run/suite.h"
#include "tests/support/testutil.h"

#ifndef RUN_SUITE_PATH
#error "RUN_SUITE_PATH and FAKE_TRAIN_PATH must be defined (CMake passes them)"
#endif

typedef struct fixture {
    const char *nvml;    /* NVML library for run_suite; NULL: none (the runs are the same everywhere) */
    char dir[256], results[512], bin[512], mps_default[512];
    char out[1 << 16], err[1 << 16];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    test_tmpdir(f->dir, sizeof f->dir);
    snprintf(f->results, sizeof f->results, "%s/results", f->dir);
    snprintf(f->bin, sizeof f->bin, "%s/bin", f->dir);
    snprintf(f->mps_default, sizeof f->mps_default, "%s/default-mps", f->dir);
    mkdir(f->bin, 0755);
    mkdir(f->mps_default, 0700);
    char link[600];
    snprintf(link, sizeof link, "%s/nvidia-cuda-mps-control", f->bin);
    assert_int_equal(symlink(FAKE_TRAIN_PATH, link), 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    test_rmtree(f->dir);
    free(f);
    return 0;
}

static void read_file(const char *path, char *out, size_t size) {
    out[0] = 0;
    FILE *file = fopen(path, "r");
    if (!file) return;
    size_t n = fread(out, 1, size - 1, file);
    out[n] = 0;
    fclose(file);
}

/* Starts run_suite with args (NULL-terminated) and FAKE_TRAIN=fake; stdout/stderr to files. */
static pid_t start(fixture *f, const char *fake, const char *const *args) {
    char out[600], err[600];
    snprintf(out, sizeof out, "%s/stdout", f->dir);
    snprintf(err, sizeof err, "%s/stderr", f->dir);
    pid_t pid = fork();
    expect_ge(pid, 0);
    if (pid == 0) {
        char path[4096];
        snprintf(path, sizeof path, "%s:%s", f->bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        setenv("PATH", path, 1);
        setenv("SUITE_NVML_LIBRARY", f->nvml ? f->nvml : "/nonexistent/libnvidia-ml.so.1", 1);
        setenv("CUDA_MPS_PIPE_DIRECTORY", f->mps_default, 1); /* never a real daemon's */
        setenv("SUITE_JOB_HOST", FAKE_JOB_HOST_PATH, 1);     /* the in-process modes' jobs as fake_train */
        if (fake) setenv("FAKE_TRAIN", fake, 1);
        else unsetenv("FAKE_TRAIN");
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(o, 1);
        dup2(e, 2);
        const char *argv[64] = {RUN_SUITE_PATH};
        int n = 1, own_train = 0, own_results = 0, own_length = 0;
        for (; args[n - 1]; n++) {
            argv[n] = args[n - 1];
            own_train |= strcmp(argv[n], "--train") == 0;
            own_results |= strcmp(argv[n], "--results") == 0;
            /* a run that says nothing of its measurement's length gets a 1 s window, not 10 s */
            own_length |= !strcmp(argv[n], "--quick") || !strncmp(argv[n], "--window", 8) ||
                          !strcmp(argv[n], "--completion") || !strcmp(argv[n], "--dry-run") ||
                          !strcmp(argv[n], "--help") || !strcmp(argv[n], "--list");
        }
        int list = 0; /* --list takes no other option */
        for (int k = 1; k < n; k++) list |= !strcmp(argv[k], "--list");
        if (!own_length && !list) argv[n++] = "--window", argv[n++] = "1";
        if (!own_train && !list) argv[n++] = "--train", argv[n++] = FAKE_TRAIN_PATH;
        if (!own_results && !list) argv[n++] = "--results", argv[n++] = f->results;
        argv[n] = NULL;
        execv(RUN_SUITE_PATH, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

static int finish(fixture *f, pid_t pid) {
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    char path[600];
    snprintf(path, sizeof path, "%s/stdout", f->dir);
    read_file(path, f->out, sizeof f->out);
    snprintf(path, sizeof path, "%s/stderr", f->dir);
    read_file(path, f->err, sizeof f->err);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run(fixture *f, const char *fake, const char *const *args) { return finish(f, start(f, fake, args)); }

/* The only run folder under f->results (asserted). */
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
    static char text[1 << 18];
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    read_file(path, text, sizeof text);
    cJSON *json = cJSON_Parse(text);
    if (!json) fprintf(stderr, "cannot parse %s\n", path);
    assert_non_null(json);
    return json;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItem(o, key);
    return cJSON_IsString(item) ? item->valuestring : "";
}

static double num(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

static void test_usage_errors(void **state) {
    fixture *f = *state;
    struct { const char *args[12]; const char *message; } cases[] = {
        {{NULL}, "--mode is required"},
        {{"--mode", "bogus", "--mix", "S", NULL}, "serial, naive, mps, mig, mig-emulate, streams, green, all"},
        {{"--mode", "naive", NULL}, "--mix is required"},
        {{"--mode", "naive", "--mix", "S+Q", NULL}, "unknown job \"Q\""},
        {{"--mode", "naive", "--mix", "S", "--mps-sm", "50", NULL}, "go with --mode mps"},
        {{"--mode", "mps", "--mix", "S+S+S", "--mps-sm", "25,25", NULL}, "2 entries for 3 job(s)"},
        {{"--mode", "mps", "--mix", "S", "--mps-mem", "4X", NULL}, "expected a size from 1M to 1024T, got '4X'"},
        {{"--mode", "naive", "--mix", "S", "--epochs", "0", NULL}, "--epochs: expected a whole number from 1"},
        {{"--mode", "naive", "--mix", "S", "--epochs", NULL}, "missing its value"},
        {{"--mode", "naive", "--mix", "S", "--bogus", NULL}, "unknown option '--bogus'"},
        {{"--mode", "mig", "--mix", "S", "--mig-gpu", "Z100", NULL}, "unknown GPU"},
        {{"--mode", "naive", "--mix", "S", "--json", NULL}, "--json goes with --dry-run"},
        {{"--mode", "naive", "--mix", "S", "--mig-emulate", NULL}, "--mig-emulate goes with"},
        {{"--mode", "naive", "--mix", "S", "--baseline", "/nonexistent", NULL}, "not a folder"},
        {{"--mode", "naive", "--mix", "S", "--skip", "green", NULL}, "--skip goes with --mode all"},
        {{"--mode", "all", "--mix", "S", "--skip", "streams,gren", NULL}, "--skip streams,gren: expected modes"},
        {{"--mode", "all", "--mix", "S", "--skip", "", NULL}, "--skip: expected a value (not empty), got ''"},
        /* options that repeat, contradict each other or apply to nothing: refused, both named (issue 46) */
        {{"--mode", "all", "--mix", "S", "--skip", "naive,naive", NULL}, "--skip naive,naive: naive named twice"},
        {{"--mode", "all", "--mix", "S", "--skip", "naive,,green", NULL}, "--skip 'naive,,green': entry 2 is empty"},
        {{"--mode", "naive", "--mix", "S", "--sample-ms", "50", "--no-monitor", NULL},
         "--sample-ms sets the GPU sampler's period; --no-monitor turns the sampler off"},
        {{"--list", "--mode", "mps", "--mix", "S", NULL}, "--mode does not go with --list"},
        {{"--list", "--json", "--mix=S", NULL}, "--mix does not go with --list"},
        {{"--mode", "naive", "--mix", "S", "--completion", "--epochs", "1", NULL},
         "--completion times each job's second epoch (its first warms up): --epochs 1 runs one epoch"},
        {{"--mode", "naive", "--mix", "S+S[epochs=1]", "--completion", NULL}, "S[epochs=1] runs one epoch"},
        {{"--mode", "mps", "--mix", "S", "--mps-mem", "1M", NULL},
         "--mps-mem 1M: job 0 (S) needs 1.00 GiB (its footprint) but its limit is 1 MiB"},
        {{"--mode", "mps", "--mix", "S", "--mps-mem", "1M", "--force", NULL}, "its limit is 1 MiB"},
        {{"--mode", "mps", "--mix", "S", "--mps-mem", "99999999T", NULL},
         "--mps-mem: entry 1 of '99999999T': expected a size from 1M to 1024T, got '99999999T' (more than 1024T)"},
        {{"--mode", "mps", "--mix", "S", "--mps-pipe", "/", NULL}, "--mps-pipe /: no MPS control daemon answers there"},
        {{"--mode", "naive", "--mix", "S", "--window", "0x10", NULL}, "(hexadecimal is not read: decimal only)"},
        {{"--mode", "naive", "--mix", "S", "--windows", " 3", NULL}, "(blanks are not read)"},
        {{"--mode", "naive", "--mix", "S", "--windows", "+3", NULL}, "(no sign '+')"},
        {{"--mode", "naive", "--mix", "S", "--windows", "2 ", NULL}, "(blanks are not read)"},
        {{"--mode", "naive", "--mix", "S+\x01M", NULL}, "mix \"S+\\x01M\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = run(f, NULL, cases[i].args);
        if (rc != 2 || !strstr(f->err, cases[i].message))
            fprintf(stderr, "case %zu: exit %d, stderr: %s\n", i, rc, f->err);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(f->err, cases[i].message));
    }
    const char *bad_train[] = {"--mode", "naive", "--mix", "S", "--train", "/nonexistent/train", NULL};
    assert_int_equal(run(f, NULL, bad_train), 2);
    assert_non_null(strstr(f->err, "cannot run the train program at /nonexistent/train"));
    struct stat st;
    assert_int_equal(stat(f->results, &st), -1); /* nothing was written */
    /* a symbolic link loop as --results: its true reason, not "is not a folder" */
    char loop[600];
    snprintf(loop, sizeof loop, "%s/loop", f->dir);
    assert_int_equal(symlink(loop, loop), 0);
    const char *looped[] = {"--mode", "naive", "--mix", "S", "--results", loop, NULL};
    assert_int_equal(run(f, NULL, looped), 2);
    assert_non_null(strstr(f->err, "symbolic link"));
    assert_null(strstr(f->err, "is not a folder"));
    unlink(loop);
}

static void test_list(void **state) {
    fixture *f = *state;
    const char *args[] = {"--list", NULL};
    assert_int_equal(run(f, NULL, args), 0);
    assert_non_null(strstr(f->out, "resnet26"));
    assert_non_null(strstr(f->out, "mig-emulate"));
    const char *json[] = {"--list", "--json", NULL};
    assert_int_equal(run(f, NULL, json), 0);
    cJSON *list = cJSON_Parse(f->out);
    expect_ge(cJSON_GetArraySize(list), 4);
    cJSON_Delete(list);
}

static void test_dry_run_json(void **state) {
    fixture *f = *state;
    setenv("SUITE_GPU_MEMORY", "1G", 1);
    const char *args[] = {"--mode", "naive", "--mix", "S+M+S", "--dry-run", "--json", "--quick", NULL};
    int rc = run(f, "resnet26:footprint=1000000;resnet50:footprint=2000000000", args);
    unsetenv("SUITE_GPU_MEMORY");
    assert_int_equal(rc, 2); /* the dry run refuses what the run would (the mix does not fit), with its JSON */
    cJSON *root = cJSON_Parse(f->out);
    assert_non_null(root);
    cJSON *jobs = cJSON_GetObjectItem(root, "jobs");
    assert_int_equal(cJSON_GetArraySize(jobs), 3);
    assert_true(num(cJSON_GetObjectItem(cJSON_GetArrayItem(jobs, 1), "footprint"), "total") == 2e9);
    assert_true(num(cJSON_GetObjectItem(cJSON_GetArrayItem(jobs, 0), "footprint"), "total") == 1e6);
    cJSON *argv = cJSON_GetObjectItem(cJSON_GetArrayItem(jobs, 0), "argv");
    char joined[1024] = "";
    for (int i = 0; i < cJSON_GetArraySize(argv); i++)
        strcat(joined, cJSON_GetArrayItem(argv, i)->valuestring), strcat(joined, " ");
    /* --quick under the window measurement: a 10-step warm-up, the epochs after it whole */
    assert_non_null(strstr(joined, "--epochs 2 --json --wait-go --window-protocol --warmup-steps 10"));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(root, "fits")));   /* 2 GB > 1 GiB */
    assert_true(num(cJSON_GetObjectItem(root, "gpu"), "memory_bytes") == 1073741824.0);
    cJSON_Delete(root);
    struct stat st;
    assert_int_equal(stat(f->results, &st), -1); /* a dry run writes nothing */
}

static void test_oversized_mix(void **state) {
    fixture *f = *state;
    const char *fake = "*:footprint=2147483648,epoch_ms=10";
    setenv("SUITE_GPU_MEMORY", "3G", 1);
    const char *naive[] = {"--mode", "naive", "--mix", "S+M", NULL};
    assert_int_equal(run(f, fake, naive), 2);
    assert_non_null(strstr(f->err, "refused"));
    assert_non_null(strstr(f->err, "4.00 GiB"));
    assert_non_null(strstr(f->err, "3.00 GiB"));
    assert_non_null(strstr(f->err, "--force"));
    struct stat st;
    assert_int_equal(stat(f->results, &st), -1);
    const char *serial[] = {"--mode", "serial", "--mix", "S+M", NULL}; /* one at a time fits */
    assert_int_equal(run(f, fake, serial), 0);
    const char *forced[] = {"--mode", "naive", "--mix", "S+M", "--force", NULL};
    assert_int_equal(run(f, fake, forced), 0);
    assert_non_null(strstr(f->err, "running anyway"));
    unsetenv("SUITE_GPU_MEMORY");
    char err[512];
    double fps[] = {3e9, 1e9};
    long long limits[] = {2000000000LL, 0};
    assert_int_equal(suite_check_fit(0, fps, limits, 2, 1e12, err, sizeof err), -1);
    assert_non_null(strstr(err, "job 0"));
    assert_int_equal(suite_check_fit(MODE_SEQUENTIAL, fps, NULL, 2, 3.5e9, err, sizeof err), 0);
    assert_int_equal(suite_check_fit(0, fps, NULL, 2, 3.5e9, err, sizeof err), -1);
    assert_int_equal(suite_check_fit(0, fps, NULL, 2, NAN, err, sizeof err), 0);
}

static void test_naive_and_serial_runs(void **state) {
    fixture *f = *state;
    char dir[1024];
    const char *naive[] = {"--mode", "naive", "--mix", "S+M+S", "--completion", NULL};
    assert_int_equal(run(f, "*:epoch_ms=300;resnet50:setup_ms=300", naive), 0);
    run_dir(f, dir, sizeof dir);
    assert_non_null(strstr(dir, "-naive-S+M+S"));
    cJSON *run_json = load_json(dir, "run.json");
    assert_string_equal(str(run_json, "mode"), "naive");
    assert_string_equal(str(run_json, "status"), "complete");
    assert_non_null(strstr(cJSON_GetArrayItem(cJSON_GetObjectItem(run_json, "command"), 0)->valuestring, "run_suite"));
    cJSON_Delete(run_json);
    cJSON *summary = load_json(dir, "summary.json");
    assert_string_equal(str(summary, "status"), "complete");
    cJSON *jobs = cJSON_GetObjectItem(summary, "jobs");
    double go = num(cJSON_GetArrayItem(jobs, 0), "go_t"), first_end = INFINITY;
    for (int i = 0; i < 3; i++) {
        cJSON *j = cJSON_GetArrayItem(jobs, i);
        assert_true(num(j, "go_t") == go); /* one barrier for all */
        if (num(j, "end_t") < first_end) first_end = num(j, "end_t");
        assert_true(num(j, "timed_epoch") == 2);
    }
    for (int i = 0; i < 3; i++) /* overlapped, not one after another: every job went before any ended */
        expect_lt(num(cJSON_GetArrayItem(jobs, i), "go_t"), first_end);
    cJSON_Delete(summary);
    char path[1200], text[4096];
    snprintf(path, sizeof path, "%s/job-1-M.log", dir);
    read_file(path, text, sizeof text);
    assert_non_null(strstr(text, "\"event\":\"ready\""));
    assert_non_null(strstr(text, "fake_train: done"));
    assert_non_null(strstr(f->out, "naive: 3 ok"));
    test_rmtree(f->dir); /* fresh results for the serial run */
    mkdir(f->dir, 0700), mkdir(f->bin, 0755), mkdir(f->mps_default, 0700);
    char link[600];
    snprintf(link, sizeof link, "%s/nvidia-cuda-mps-control", f->bin);
    assert_int_equal(symlink(FAKE_TRAIN_PATH, link), 0);
    const char *serial[] = {"--mode", "serial", "--mix", "S+M+S", "--completion", NULL};
    assert_int_equal(run(f, "*:epoch_ms=100", serial), 0);
    run_dir(f, dir, sizeof dir);
    summary = load_json(dir, "summary.json");
    jobs = cJSON_GetObjectItem(summary, "jobs");
    for (int i = 1; i < 3; i++)
        expect_ge(num(cJSON_GetArrayItem(jobs, i), "go_t"), num(cJSON_GetArrayItem(jobs, i - 1), "end_t"));
    assert_true(num(cJSON_GetArrayItem(jobs, 0), "slowdown") == 1.0);
    cJSON_Delete(summary);
    /* a naive run against that serial run */
    char serial_dir[1024];
    snprintf(serial_dir, sizeof serial_dir, "%s", dir);
    const char *against[] = {"--mode", "naive", "--mix", "S+M+S", "--completion", "--baseline", serial_dir, "--results", f->dir, NULL};
    assert_int_equal(run(f, "*:epoch_ms=100", against), 0);
    cJSON *compared = NULL;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, "-naive-")) {
            char naive_dir[1100];
            snprintf(naive_dir, sizeof naive_dir, "%s/%s", f->dir, e->d_name);
            compared = load_json(naive_dir, "summary.json");
        }
    closedir(d);
    assert_non_null(compared);
    expect_gt(num(compared, "speedup_vs_serial"), 1.5); /* 3 jobs at once vs one after another */
    expect_gt(num(cJSON_GetArrayItem(cJSON_GetObjectItem(compared, "jobs"), 2), "slowdown"), 0.5);
    cJSON_Delete(compared);
    const char *other_mix[] = {"--mode", "naive", "--mix", "S+M", "--baseline", serial_dir, NULL};
    assert_int_equal(run(f, "*:epoch_ms=100", other_mix), 2);
    assert_non_null(strstr(f->err, "this mix has 2"));
}

static void test_crash_marks_partial(void **state) {
    fixture *f = *state;
    const char *args[] = {"--mode", "naive", "--mix", "S+M+S", NULL};
    assert_int_equal(run(f, "*:epoch_ms=100;resnet50:crash=6/1", args), 3);
    char dir[1024];
    run_dir(f, dir, sizeof dir);
    cJSON *summary = load_json(dir, "summary.json");
    assert_string_equal(str(summary, "status"), "partial");
    assert_true(num(summary, "jobs_failed") == 1 && num(summary, "jobs_ok") == 2);
    cJSON *crashed = cJSON_GetArrayItem(cJSON_GetObjectItem(summary, "jobs"), 1);
    assert_non_null(strstr(str(crashed, "reason"), "killed by signal 6"));
    cJSON_Delete(summary);
    char path[1200], csv[8192];
    snprintf(path, sizeof path, "%s/jobs.csv", dir);
    read_file(path, csv, sizeof csv);
    assert_non_null(strstr(csv, ",failed,killed by signal 6"));
}

static int log_has_ready(const char *dir, int job, const char *label) {
    char path[1200], text[8192];
    snprintf(path, sizeof path, "%s/job-%d-%s.log", dir, job, label);
    read_file(path, text, sizeof text);
    return strstr(text, "\"event\":\"ready\"") != NULL;
}

static void test_sigterm_cleans_up(void **state) {
    fixture *f = *state;
    /* Orphans (the MPS daemon, a job run_suite forgot) would become our children. */
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    const char *args[] = {"--mode", "mps", "--mix", "S+M+S", "--grace", "1", NULL};
    pid_t pid = start(f, "*:epoch_ms=30000;resnet50:ignore_term", args);
    char dir[1024] = "";
    int ready = 0;
    for (int i = 0; i < 200 && !ready; i++) {
        usleep(50000);
        DIR *d = opendir(f->results);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.') snprintf(dir, sizeof dir, "%s/%s", f->results, e->d_name);
        if (d) closedir(d);
        ready = dir[0] && log_has_ready(dir, 0, "S") && log_has_ready(dir, 1, "M") && log_has_ready(dir, 2, "S");
    }
    assert_true(ready);
    usleep(200000); /* past "go" */
    kill(pid, SIGTERM);
    assert_int_equal(finish(f, pid), 128 + SIGTERM);
    assert_non_null(strstr(f->out, "interrupted"));
    int st;
    pid_t left = waitpid(-1, &st, WNOHANG);
    while (left > 0) left = waitpid(-1, &st, WNOHANG); /* reap exited orphans */
    assert_int_equal(left, -1);                         /* ECHILD: nothing left running */
    assert_int_equal(errno, ECHILD);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
    cJSON *summary = load_json(dir, "summary.json");
    assert_string_equal(str(summary, "status"), "interrupted");
    cJSON *jobs = cJSON_GetObjectItem(summary, "jobs");
    for (int i = 0; i < 3; i++) {
        cJSON *j = cJSON_GetArrayItem(jobs, i);
        assert_string_equal(str(j, "status"), "failed");
        assert_non_null(strstr(str(j, "reason"), "stopped by run_suite"));
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "mps"))); /* they were MPS clients */
    }
    cJSON_Delete(summary);
    cJSON *run_json = load_json(dir, "run.json");
    assert_string_equal(str(run_json, "status"), "interrupted");
    const char *pipe = str(cJSON_GetObjectItem(run_json, "mps"), "pipe_dir");
    struct stat sb;
    assert_true(pipe[0]); expect_eq(stat(pipe, &sb), -1); /* the daemon quit and its folder is gone */
    cJSON_Delete(run_json);
}

/* One job's illegal address: contained by naive (the others finish), not by MPS, whose other
 * clients are recorded as its collateral with the server's log line; summary.json says which. */
static void test_fault_contained_or_collateral(void **state) {
    fixture *f = *state;
    static const char *modes[] = {"naive", "mps"};
    for (int m = 0; m < 2; m++) {
        char results[600];
        snprintf(results, sizeof results, "%s/%s", f->results, modes[m]);
        const char *args[] = {"--mode", modes[m], "--mix", "S[fault=illegal-address@5]+S+S", "--quick",
                              "--results", results, NULL};
        assert_int_equal(run(f, "*:epoch_ms=300", args), 3);
        DIR *d = opendir(results);
        char dir[1200] = "";
        for (struct dirent *e; d && (e = readdir(d));)
            if (e->d_name[0] != '.') snprintf(dir, sizeof dir, "%s/%s", results, e->d_name);
        if (d) closedir(d);
        cJSON *summary = load_json(dir, "summary.json");
        cJSON *faults = cJSON_GetObjectItem(summary, "faults");
        cJSON *jobs = cJSON_GetObjectItem(summary, "jobs");
        cJSON *faulty = cJSON_GetArrayItem(jobs, 0), *other = cJSON_GetArrayItem(jobs, 1);
        assert_non_null(strstr(str(faulty, "reason"), "cudaErrorIllegalAddress"));
        assert_string_equal(str(faulty, "fault"), "illegal-address@5");
        if (m == 0) {
            assert_true(cJSON_IsTrue(cJSON_GetObjectItem(faults, "contained")));
            assert_string_equal(str(other, "status"), "ok");
            assert_true(cJSON_IsNull(cJSON_GetObjectItem(other, "collateral_of")));
            assert_non_null(strstr(f->out, "the fault was contained"));
        } else {
            assert_true(cJSON_IsFalse(cJSON_GetObjectItem(faults, "contained")));
            assert_true(num(faults, "collateral") == 2);
            assert_true(num(other, "collateral_of") == 0);
            assert_non_null(strstr(str(other, "reason"), "collateral of job 0 (mode mps)"));
            assert_non_null(strstr(str(other, "evidence"), "fatal GPU error"));
            assert_non_null(strstr(f->out, "NOT contained"));
        }
        cJSON_Delete(summary);
    }
}

/* A job that hangs inside the job host (streams): the watchdog stops it, and with it the process
 * that holds every job, whose other jobs are recorded as the hung job's collateral. */
static void test_hang_in_job_host_stopped_by_watchdog(void **state) {
    fixture *f = *state;
    const char *args[] = {"--mode", "streams", "--mix", "S[fault=hang@5]+S", "--epochs", "2",
                          "--steps-per-epoch", "1000000", "--stall-timeout", "2", "--grace", "1", NULL};
    time_t t0 = time(NULL);
    assert_int_equal(run(f, "*:epoch_ms=200", args), 3);
    expect_lt(time(NULL) - t0, 30);
    DIR *d = opendir(f->results);
    char dir[1200] = "";
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') snprintf(dir, sizeof dir, "%s/%s", f->results, e->d_name);
    if (d) closedir(d);
    cJSON *summary = load_json(dir, "summary.json");
    cJSON *jobs = cJSON_GetObjectItem(summary, "jobs");
    cJSON *hung = cJSON_GetArrayItem(jobs, 0), *other = cJSON_GetArrayItem(jobs, 1);
    assert_non_null(strstr(str(hung, "reason"), "stopped by the watchdog"));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(hung, "stalled")));
    assert_true(num(other, "collateral_of") == 0);
    assert_non_null(strstr(str(other, "reason"), "collateral of job 0 (mode streams): no progress"));
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(summary, "faults"), "contained")));
    cJSON_Delete(summary);
}

/* A run folder too deep for MPS's socket names: the empty pipe folder that keeps plain processes
 * off MPS moves to /tmp (a CUDA client given a longer one lost its stdin), and is gone after. */
static void test_plain_mode_pipe_folder_fits_a_socket(void **state) {
    fixture *f = *state;
    char deep[700];
    snprintf(deep, sizeof deep, "%s/a-results-folder-whose-name-goes-on/and-on-to-pass-the-socket-limit", f->results);
    const char *args[] = {"--mode", "naive", "--mix", "S", "--quick", "--results", deep, NULL};
    assert_int_equal(run(f, "*:epoch_ms=20", args), 0);
    DIR *d = opendir(deep);
    char dir[1200] = "";
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') snprintf(dir, sizeof dir, "%s/%s", deep, e->d_name);
    if (d) closedir(d);
    cJSON *run_json = load_json(dir, "run.json");
    const cJSON *env = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(run_json, "jobs"), 0), "cuda_env");
    const char *pipe = NULL;
    for (int i = 0; i < cJSON_GetArraySize(env); i++)
        if (!strncmp(cJSON_GetArrayItem(env, i)->valuestring, "CUDA_MPS_PIPE_DIRECTORY=", 24))
            pipe = cJSON_GetArrayItem(env, i)->valuestring + 24;
    assert_non_null(pipe);
    assert_true(strncmp(pipe, "/tmp/suite-no-mps-", 18) == 0);
    expect_lt(strlen(pipe) + sizeof "/control_privileged", 108);
    struct stat st;
    assert_int_not_equal(stat(pipe, &st), 0); /* removed by stop */
    cJSON_Delete(run_json);
}

/* A results folder that cannot be written is bad input, found before any job starts. */
static void test_results_unwritable(void **state) {
    fixture *f = *state;
    char in_the_way[600];
    snprintf(in_the_way, sizeof in_the_way, "%s/a-file", f->dir);
    FILE *file = fopen(in_the_way, "w");
    fclose(file);
    const char *args[] = {"--mode", "naive", "--mix", "S", "--quick", "--results", in_the_way, NULL};
    assert_int_equal(run(f, NULL, args), 2);
    assert_non_null(strstr(f->err, "a-file"));
    assert_null(strstr(f->err, "started (pid"));
}

/* The guardian that run_suite forked for its MPS daemon (named suite-guardian), or 0. */
static pid_t guardian_of(pid_t runner) {
    pid_t found = 0;
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d)) && !found;) {
        long ppid = 0;
        if (test_process_alive(atol(e->d_name), "suite-guardian", &ppid) && ppid == runner)
            found = (pid_t)atol(e->d_name);
    }
    if (d) closedir(d);
    return found;
}

/* kill -9 of run_suite and of its daemon's guardian: its jobs die with it, its MPS daemon stays
 * until the next run_suite, which stops it and says so. (Its guardian alone would have stopped it:
 * tests/runner/test_orphans.c.) */
static void test_killed_runner_cleaned_up_next_time(void **state) {
    fixture *f = *state;
    char state_dir[600], record[600];
    snprintf(state_dir, sizeof state_dir, "%s/state", f->dir);
    snprintf(record, sizeof record, "%s/pids", f->dir);
    mkdir(record, 0755);
    setenv("SUITE_STATE_DIR", state_dir, 1);
    setenv("FAKE_TRAIN_RECORD", record, 1);
    const char *args[] = {"--mode", "mps", "--mix", "3*S", NULL};
    pid_t pid = start(f, "*:epoch_ms=30000", args);
    int recorded = 0;
    for (int i = 0; i < 200 && recorded < 3; i++) {
        usleep(50000);
        recorded = 0;
        DIR *d = opendir(record);
        for (struct dirent *e; d && (e = readdir(d));) recorded += e->d_name[0] != '.';
        if (d) closedir(d);
    }
    assert_int_equal(recorded, 3);
    usleep(300000);
    pid_t guardian = guardian_of(pid);
    expect_gt(guardian, 0);
    kill(guardian, SIGKILL); /* first: it would quit the daemon once run_suite is gone */
    kill(pid, SIGKILL);
    finish(f, pid);
    usleep(500000);
    DIR *d = opendir(record);
    for (struct dirent *e; d && (e = readdir(d));) { /* gone, or a zombie nobody reaped yet */
        char path[64], line[256] = "";
        snprintf(path, sizeof path, "/proc/%ld/stat", atol(e->d_name));
        FILE *st = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
        if (st && !fgets(line, sizeof line, st)) line[0] = 0;
        if (st) fclose(st);
        const char *after = strrchr(line, ')');
        assert_true(!after || after[2] == 'Z');
    }
    if (d) closedir(d);
    unsetenv("FAKE_TRAIN_RECORD");
    const char *next[] = {"--mode", "naive", "--mix", "S", "--quick", NULL};
    assert_int_equal(run(f, NULL, next), 0);
    assert_non_null(strstr(f->err, "stopped a stale MPS control daemon"));
    DIR *sd = opendir(state_dir);
    int entries = 0;
    for (struct dirent *e; sd && (e = readdir(sd));) entries += e->d_name[0] != '.';
    if (sd) closedir(sd);
    assert_int_equal(entries, 0);
    unsetenv("SUITE_STATE_DIR");
}

/* --mode all --skip: the listed modes are left out, the others run as before. */
static void test_all_modes_skip(void **state) {
    fixture *f = *state;
    const char *args[] = {"--mode", "all", "--mix", "S+S", "--skip", "streams,green", "--quick", NULL};
    assert_int_equal(run(f, "*:epoch_ms=50", args), 0);
    char dir[1024];
    run_dir(f, dir, sizeof dir);
    cJSON *cmp = load_json(dir, "comparison.json");
    const char *modes[] = {"serial", "naive", "mps", "mig"};
    assert_int_equal(cJSON_GetArraySize(cmp), 4);
    for (int i = 0; i < 4; i++) assert_string_equal(str(cJSON_GetArrayItem(cmp, i), "mode"), modes[i]);
    cJSON_Delete(cmp);
}

static void test_all_modes(void **state) {
    fixture *f = *state;
    const char *args[] = {"--mode", "all", "--mix", "S+M", "--mps-sm", "50", "--completion", NULL};
    assert_int_equal(run(f, "*:epoch_ms=200", args), 0);
    char dir[1024];
    run_dir(f, dir, sizeof dir);
    cJSON *cmp = load_json(dir, "comparison.json");
    assert_int_equal(cJSON_GetArraySize(cmp), 6);
    const char *modes[] = {"serial", "naive", "mps", "mig", "streams", "green"};
    for (int i = 0; i < 6; i++) assert_string_equal(str(cJSON_GetArrayItem(cmp, i), "mode"), modes[i]);
    assert_string_equal(str(cJSON_GetArrayItem(cmp, 3), "status"), "skipped"); /* no NVML here */
    for (int i = 1; i < 6; i++)
        if (i != 3) expect_gt(num(cJSON_GetArrayItem(cmp, i), "speedup_vs_serial"), 1.4);
    cJSON_Delete(cmp);
    char sub[1100];
    snprintf(sub, sizeof sub, "%s/mps", dir);
    cJSON *run_json = load_json(sub, "run.json");
    cJSON *env = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(run_json, "jobs"), 0), "cuda_env");
    int share = 0;
    for (int i = 0; i < cJSON_GetArraySize(env); i++)
        share |= strcmp(cJSON_GetArrayItem(env, i)->valuestring, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50") == 0;
    assert_true(share);
    cJSON_Delete(run_json);
    snprintf(sub, sizeof sub, "%s/naive", dir);
    cJSON *summary = load_json(sub, "summary.json");
    assert_string_equal(str(cJSON_GetObjectItem(summary, "serial_baseline"), "source"), "serial part of this run");
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(summary, "jobs"), 0), "mps")));
    cJSON_Delete(summary);
    assert_non_null(strstr(f->out, "mean slowdown"));
}

#ifdef NVML_STANDIN_PATH
static int has_string(const cJSON *array, const char *prefix) {
    for (int i = 0; i < cJSON_GetArraySize(array); i++)
        if (strncmp(cJSON_GetArrayItem(array, i)->valuestring, prefix, strlen(prefix)) == 0) return 1;
    return 0;
}

/* --mode mig against the stand-in NVML (an H100 80GB with MIG): off, missing instances,
 * instances created for the run and destroyed after it, each job on its own MIG device. */
static void test_mig_with_standin(void **state) {
    fixture *f = *state;
    f->nvml = NVML_STANDIN_PATH;
    setenv("SUITE_NVML_STANDIN_GPU", "H100-80GB", 1);
    setenv("SUITE_NVML_STANDIN_MIG", "off", 1);
    const char *create[] = {"--mode", "mig", "--mix", "S+M", "--mig-create", "--completion", NULL};
    assert_int_equal(run(f, "*:epoch_ms=50", create), 1);
    assert_non_null(strstr(f->err, "MIG mode is off"));
    struct stat st;
    assert_int_equal(stat(f->results, &st), -1); /* refused before a run folder was made */
    setenv("SUITE_NVML_STANDIN_MIG", "on", 1);
    const char *no_create[] = {"--mode", "mig", "--mix", "S+M", "--results", f->dir, NULL};
    assert_int_equal(run(f, "*:epoch_ms=50", no_create), 1);
    assert_non_null(strstr(f->err, "--mig-create"));
    assert_int_equal(run(f, "*:epoch_ms=50", create), 0);
    assert_null(strstr(f->err, "warning")); /* nothing left behind by the destruction */
    char dir[1024];
    run_dir(f, dir, sizeof dir);
    assert_non_null(strstr(dir, "-mig-S+M"));
    cJSON *run_json = load_json(dir, "run.json");
    cJSON *devices = cJSON_GetObjectItem(run_json, "mig_devices");
    assert_int_equal(cJSON_GetArraySize(devices), 2);
    for (int i = 0; i < 2; i++) {
        cJSON *d = cJSON_GetArrayItem(devices, i);
        assert_int_equal(strncmp(str(d, "uuid"), "MIG-", 4), 0);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "created_by_run")));
        cJSON *env = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(run_json, "jobs"), i), "cuda_env");
        assert_true(has_string(env, "CUDA_VISIBLE_DEVICES=MIG-"));
    }
    assert_string_not_equal(str(cJSON_GetArrayItem(devices, 0), "uuid"), str(cJSON_GetArrayItem(devices, 1), "uuid"));
    cJSON_Delete(run_json);
    cJSON *summary = load_json(dir, "summary.json");
    assert_string_equal(str(summary, "status"), "complete");
    for (int i = 0; i < 2; i++)
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(summary, "jobs"), i), "mig")));
    cJSON_Delete(summary);
    char path[1200], text[1 << 14];
    snprintf(path, sizeof path, "%s/timeline.csv", dir); /* the GPU and its instances */
    read_file(path, text, sizeof text);
    assert_non_null(strstr(text, ",gpu0,"));
    assert_non_null(strstr(text, ",gpu0-gi"));
    assert_non_null(strstr(text, "job1:end"));
    unsetenv("SUITE_NVML_STANDIN_GPU");
    unsetenv("SUITE_NVML_STANDIN_MIG");
}

/* The footprint check from NVML's memory (the stand-in's 80 GB), without any test hook. */
static void test_fit_from_nvml(void **state) {
    fixture *f = *state;
    f->nvml = NVML_STANDIN_PATH;
    setenv("SUITE_NVML_STANDIN_GPU", "H100-80GB", 1);
    const char *naive[] = {"--mode", "naive", "--mix", "S+M", NULL};
    assert_int_equal(run(f, "*:footprint=50000000000", naive), 2);
    assert_non_null(strstr(f->err, "refused"));
    const char *all[] = {"--mode", "all", "--mix", "S+M", "--mig-create", NULL};
    assert_int_equal(run(f, "*:epoch_ms=100", all), 0);
    char dir[1024];
    run_dir(f, dir, sizeof dir);
    cJSON *cmp = load_json(dir, "comparison.json");
    assert_string_equal(str(cJSON_GetArrayItem(cmp, 3), "mode"), "mig");
    assert_string_equal(str(cJSON_GetArrayItem(cmp, 3), "status"), "complete");
    cJSON_Delete(cmp);
    cJSON *run_json = load_json(dir, "run.json");
    assert_string_equal(str(cJSON_GetObjectItem(run_json, "gpu"), "uuid"), "GPU-5a1e0000-0000-4000-8000-000000000000");
    cJSON_Delete(run_json);
    unsetenv("SUITE_NVML_STANDIN_GPU");
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dry_run_json, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized_mix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_naive_and_serial_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_marks_partial, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sigterm_cleans_up, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_contained_or_collateral, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hang_in_job_host_stopped_by_watchdog, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_modes_skip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_mode_pipe_folder_fits_a_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_results_unwritable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_runner_cleaned_up_next_time, setup, teardown),
#ifdef NVML_STANDIN_PATH
        cmocka_unit_test_setup_teardown(test_mig_with_standin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fit_from_nvml, setup, teardown),
#endif
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
