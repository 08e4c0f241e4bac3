/* Nothing outlives run_suite, and a stop acts at once. Each case starts run_suite (fake_train as
 * train, fake_train as the MPS control program, the NVML stand-in or none) with a mark of its own in
 * the environment, which every process it starts inherits: the jobs, the nested run_suite of
 * --study and --gpus, the MPS guardian and daemon, an in-process mode's job host and its jobs,
 * report.py. After `kill -9` of run_suite, no
 * process with the mark may be alive 5 s later; a SIGTERM to --study stops it within seconds with
 * the cells so far recorded and the rest never started, and one to --gpus stops runs that wait on
 * one another's warm-up. spawn.h itself: a failed exec, and a
 * guardian that acts when its runner dies and never when dismissed. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runner/suite/jobs/spawn.h"
#include "tests/support/testutil.h"

#if !defined(RUN_SUITE_PATH) || !defined(FAKE_TRAIN_PATH) || !defined(FAKE_JOB_HOST_PATH) || !defined(NVML_STANDIN_PATH)
#error "RUN_SUITE_PATH, FAKE_TRAIN_PATH, FAKE_JOB_HOST_PATH and NVML_STANDIN_PATH must be defined (CMake passes them)"
#endif

#define MARK_NAME "SUITE_ORPHANS_TEST_MARK"

typedef struct fixture {
    char dir[256], results[512], state[512], mark[600], report_script[600], err_path[600];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    test_tmpdir(f->dir, sizeof f->dir);
    snprintf(f->results, sizeof f->results, "%s/results", f->dir);
    snprintf(f->state, sizeof f->state, "%s/state", f->dir);
    snprintf(f->mark, sizeof f->mark, "%s=%s", MARK_NAME, f->dir); /* the folder is unique */
    snprintf(f->err_path, sizeof f->err_path, "%s/stderr", f->dir);
    char bin[600], mps_default[600];
    snprintf(mps_default, sizeof mps_default, "%s/default-mps", f->dir);
    mkdir(mps_default, 0700);
    setenv("CUDA_MPS_PIPE_DIRECTORY", mps_default, 1); /* never a real daemon's */
    setenv("SUITE_STATE_DIR", f->state, 1);
    test_fake_mps_on_path(f->dir, FAKE_TRAIN_PATH, bin, sizeof bin);
    /* a report that takes no time, so a stopped study ends at once */
    snprintf(f->report_script, sizeof f->report_script, "%s/report.sh", f->dir);
    FILE *s = fopen(f->report_script, "w");
    fprintf(s, "exit 0\n");
    fclose(s);
    setenv("SUITE_PYTHON", "/bin/sh", 1);
    setenv("SUITE_REPORT_SCRIPT", f->report_script, 1);
    *state = f;
    return 0;
}

static void kill_marked(const fixture *f);

static int teardown(void **state) {
    fixture *f = *state;
    kill_marked(f); /* what a failed case left */
    test_rmtree(f->dir);
    free(f);
    return 0;
}

/* Starts RUN_SUITE_PATH with args (NULL-terminated) and the mark; stdout to /dev/null, stderr to a
 * file. */
static pid_t start(fixture *f, const char *const *args) {
    pid_t pid = fork();
    expect_ge(pid, 0);
    if (pid == 0) {
        putenv(f->mark);
        int null = open("/dev/null", O_WRONLY), err = open(f->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(null, 1);
        dup2(err, 2);
        const char *argv[64] = {RUN_SUITE_PATH};
        int n = 1;
        for (; args[n - 1]; n++) argv[n] = args[n - 1];
        argv[n] = NULL;
        execv(RUN_SUITE_PATH, (char *const *)argv);
        _exit(127);
    }
    return pid;
}

/* 1 when /proc/<pid>/<file> (NUL-separated: environ, cmdline) holds entry. */
static int proc_holds(long pid, const char *file, const char *entry) {
    char path[64], text[1 << 16];
    snprintf(path, sizeof path, "/proc/%ld/%s", pid, file);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    if (fd >= 0) close(fd);
    if (n <= 0) return 0;
    text[n] = 0;
    for (ssize_t at = 0; at < n; at += (ssize_t)strlen(text + at) + 1)
        if (strcmp(text + at, entry) == 0) return 1;
    return 0;
}

/* Alive (not a zombie) processes holding the mark; with comm, only those of that name, and with
 * arg, only those with that argument. */
static int count_marked(const fixture *f, const char *comm, const char *arg) {
    DIR *d = opendir("/proc");
    int alive = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        long pid = atol(e->d_name);
        alive += test_process_alive(pid, comm, NULL) && proc_holds(pid, "environ", f->mark) &&
                 (!arg || proc_holds(pid, "cmdline", arg));
    }
    if (d) closedir(d);
    return alive;
}

static void kill_marked(const fixture *f) {
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d));)
        if (atol(e->d_name) > 0 && proc_holds(atol(e->d_name), "environ", f->mark)) kill((pid_t)atol(e->d_name), SIGKILL);
    if (d) closedir(d);
}

/* Waits up to seconds for count_marked(f, comm, arg) to reach at least (want >= 0) or to fall to 0
 * (want < 0); returns the last count. */
static int wait_marked(const fixture *f, const char *comm, const char *arg, int want, double seconds) {
    int n = count_marked(f, comm, arg);
    for (int i = 0; i < (int)(seconds * 20) && (want >= 0 ? n < want : n > 0); i++) {
        usleep(50000);
        n = count_marked(f, comm, arg);
    }
    return n;
}

/* The exit status of pid, waiting at most seconds; -1 when it still runs (then it is killed). */
static int wait_exit(pid_t pid, double seconds) {
    int st;
    for (int i = 0; i < (int)(seconds * 20); i++) {
        if (waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(50000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
}

static void kill_and_expect_nothing_left(fixture *f, pid_t pid) {
    kill(pid, SIGKILL);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    int left = wait_marked(f, NULL, NULL, -1, 5.0);
    if (left) {
        char ps[8192], ignored[256];
        char *const argv[] = {"/bin/ps", "-eo", "pid,ppid,pgid,stat,args", NULL};
        test_run(argv, ps, sizeof ps, ignored, sizeof ignored);
        fprintf(stderr, "%d process(es) of the run left:\n%s\n", left, ps);
    }
    assert_int_equal(left, 0);
}


/* --study small --quick with cells of 1 and 2 jobs (serial alone; naive, mps and mig-emulate at 2)
 * whose epochs take a minute, once its first cell's job runs. */
static pid_t start_study(fixture *f) {
    setenv("SUITE_NVML_LIBRARY", NVML_STANDIN_PATH, 1);
    setenv("SUITE_NVML_STANDIN_GPU", "H100-80GB", 1);
    setenv("SUITE_NVML_STANDIN_MIG", "off", 1);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=60000", 1);
    const char *args[] = {"--study", "small", "--quick", "--degrees", "1,2", "--train", FAKE_TRAIN_PATH,
                          "--results", f->results, NULL};
    pid_t pid = start(f, args);
    assert_int_equal(wait_marked(f, "fake_train", "--wait-go", 1, 30.0), 1);
    return pid;
}

/* kill -9 of --study: the running cell's run_suite and its jobs go with it. */
static void test_study_killed(void **state) {
    fixture *f = *state;
    pid_t pid = start_study(f);
    expect_ge(count_marked(f, "run_suite", NULL), 2); /* the study and its cell */
    kill_and_expect_nothing_left(f, pid);
}

static cJSON *load_study(const fixture *f) {
    char *const find[] = {"/usr/bin/find", (char *)f->results, "-name", "study.json", NULL};
    char found[1024], ferr[64];
    assert_int_equal(test_run(find, found, sizeof found, ferr, sizeof ferr), 0);
    found[strcspn(found, "\n")] = 0;
    char err[256];
    char *text = test_read_text(found, err, sizeof err);
    assert_non_null(text);
    cJSON *root = cJSON_Parse(text);
    free(text);
    assert_non_null(root);
    return root;
}

/* SIGTERM to --study reaches the running cell at once: it stops its jobs and writes its results,
 * and no further cell starts. */
static void test_study_sigterm(void **state) {
    fixture *f = *state;
    pid_t pid = start_study(f);
    usleep(300000); /* past "go" */
    kill(pid, SIGTERM);
    assert_int_equal(wait_exit(pid, 5.0), 128 + SIGTERM);
    assert_int_equal(wait_marked(f, NULL, NULL, -1, 5.0), 0);
    cJSON *root = load_study(f);
    assert_string_equal(cJSON_GetObjectItem(root, "status")->valuestring, "interrupted");
    const cJSON *cells = cJSON_GetObjectItem(root, "cells");
    assert_int_equal(cJSON_GetArraySize(cells), 4); /* serial alone; naive, mps, mig-emulate at 2 */
    const cJSON *first = cJSON_GetArrayItem(cells, 0);
    assert_string_equal(cJSON_GetObjectItem(first, "status")->valuestring, "interrupted");
    assert_non_null(cJSON_GetObjectItem(first, "folder")); /* what it measured is written */
    for (int i = 1; i < 4; i++)
        assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cells, i), "status")->valuestring, "planned");
    cJSON_Delete(root);
}

/* kill -9 of --gpus: every GPU's run_suite and its jobs go with it. */
static void test_gpus_killed(void **state) {
    fixture *f = *state;
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("SUITE_GPU_MEMORY", "3G", 1);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=60000", 1);
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", "S+S+S+S", "--train", FAKE_TRAIN_PATH,
                          "--results", f->results, NULL};
    pid_t pid = start(f, args);
    assert_int_equal(wait_marked(f, "fake_train", "--wait-go", 4, 30.0), 4);
    assert_int_equal(count_marked(f, "run_suite", NULL), 3); /* this one and one per GPU */
    kill_and_expect_nothing_left(f, pid);
    unsetenv("SUITE_GPU_MEMORY");
}

/* SIGTERM to --gpus while its runs wait on one another through the go relay (the window
 * measurement; the cards' jobs have warmed up, the data-parallel job warms up for a minute): every
 * run stops at once, and --gpus exits on the signal with nothing left behind. */
static void test_gpus_sigterm_while_warming(void **state) {
    fixture *f = *state;
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("SUITE_GPU_MEMORY", "3G", 1);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=20;resnet50:epoch_ms=60000", 1);
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", "M[gpus=2]+4*S", "--quick", "--window", "1",
                          "--train", FAKE_TRAIN_PATH, "--results", f->results, NULL};
    pid_t pid = start(f, args);
    assert_int_equal(wait_marked(f, "fake_train", "--window-protocol", 5, 30.0), 5);
    usleep(500000); /* past go and the small jobs' warm-up */
    kill(pid, SIGTERM);
    assert_int_equal(wait_exit(pid, 10.0), 128 + SIGTERM);
    assert_int_equal(wait_marked(f, NULL, NULL, -1, 5.0), 0);
    unsetenv("SUITE_GPU_MEMORY");
}

/* kill -9 of a run under MPS: the jobs die with it, and the guardian quits the daemon (which then
 * leaves no record for the next run_suite to stop). */
static void test_mps_daemon_quit_by_guardian(void **state) {
    fixture *f = *state;
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=60000", 1);
    const char *args[] = {"--mode", "mps", "--mix", "S+S", "--train", FAKE_TRAIN_PATH, "--results", f->results,
                          NULL};
    pid_t pid = start(f, args);
    assert_int_equal(wait_marked(f, "fake_train", "--wait-go", 2, 30.0), 2);
    assert_int_equal(count_marked(f, "nvidia-cuda-mps", NULL), 1); /* the fake daemon */
    assert_int_equal(count_marked(f, "suite-guardian", NULL), 1);
    kill_and_expect_nothing_left(f, pid);
    char err[256];
    char *text = test_read_text(f->err_path, err, sizeof err);
    assert_non_null(text);
    assert_non_null(strstr(text, "its guardian stopped it"));
    free(text);
    DIR *sd = opendir(f->state);
    int entries = 0;
    for (struct dirent *e; sd && (e = readdir(sd));) entries += e->d_name[0] != '.';
    if (sd) closedir(sd);
    assert_int_equal(entries, 0);
}

/* kill -9 of an in-process mode's run (streams, green: one job_host process holding every job; here
 * the stand-in, which runs each job as a fake_train child of its own): the host and its jobs go with
 * it. A runner that started the host without its parent-death signal would leave them all. */
static void test_streams_killed(void **state) {
    fixture *f = *state;
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("SUITE_JOB_HOST", FAKE_JOB_HOST_PATH, 1);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=60000", 1);
    /* run to completion: past "go" the jobs train their minute-long epoch without reading stdin, so
       its end (the host's death closing their pipes) would not stop them */
    const char *args[] = {"--mode", "streams", "--mix", "S+S", "--completion", "--train", FAKE_TRAIN_PATH,
                          "--results", f->results, NULL};
    pid_t pid = start(f, args);
    assert_int_equal(wait_marked(f, "fake_train", "--wait-go", 2, 30.0), 2);
    assert_int_equal(count_marked(f, "fake_job_host", NULL), 1);
    usleep(500000); /* past go: training */
    kill_and_expect_nothing_left(f, pid);
    unsetenv("SUITE_JOB_HOST");
}

/* run_suite report killed: report.py goes too, after kill -9 and after SIGTERM. */
static void test_report_killed(void **state) {
    fixture *f = *state;
    char slow[700];
    snprintf(slow, sizeof slow, "%s/slow-report.sh", f->dir);
    FILE *s = fopen(slow, "w");
    fprintf(s, "while :; do sleep 0.1; done\n");
    fclose(s);
    setenv("SUITE_REPORT_SCRIPT", slow, 1);
    const char *args[] = {"report", f->dir, NULL};
    for (int sig = 0; sig < 2; sig++) {
        pid_t pid = start(f, args);
        assert_int_equal(wait_marked(f, "sh", slow, 1, 10.0), 1);
        if (sig == 0) {
            kill_and_expect_nothing_left(f, pid);
        } else {
            kill(pid, SIGTERM);
            assert_int_not_equal(wait_exit(pid, 5.0), -1);
            assert_int_equal(wait_marked(f, NULL, NULL, -1, 5.0), 0);
        }
    }
    setenv("SUITE_REPORT_SCRIPT", f->report_script, 1);
}

static void touch(void *user) {
    FILE *f = fopen(user, "w");
    if (f) fclose(f);
}

/* spawn.h itself: an exec that fails is its errno; a guardian acts when its runner is gone, never
 * when dismissed. */
static void test_spawn_and_guardian(void **state) {
    fixture *f = *state;
    char *const missing[] = {"/nonexistent/program", NULL};
    pid_t pid;
    assert_int_equal(spawn_child(&pid, missing, NULL, -1, -1, -1, SIGKILL), ENOENT);

    char acted[700], dismissed[700];
    snprintf(acted, sizeof acted, "%s/acted", f->dir);
    snprintf(dismissed, sizeof dismissed, "%s/dismissed", f->dir);
    spawn_guardian g;
    assert_int_equal(spawn_guardian_start(&g, touch, dismissed), 0);
    expect_gt(g.pid, 0);
    spawn_guardian_dismiss(&g);
    assert_int_equal(g.pid, 0);
    spawn_guardian_dismiss(&g); /* idempotent */

    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t runner = fork();
    if (runner == 0) {
        spawn_guardian mine;
        if (spawn_guardian_start(&mine, touch, acted) != 0) _exit(1);
        ssize_t w = write(ready[1], "x", 1);
        (void)w;
        pause();
        _exit(0);
    }
    close(ready[1]);
    char byte;
    assert_int_equal(read(ready[0], &byte, 1), 1);
    close(ready[0]);
    struct stat st;
    usleep(200000);
    assert_int_not_equal(stat(acted, &st), 0); /* its runner still runs */
    kill(runner, SIGKILL);
    waitpid(runner, NULL, 0);
    for (int i = 0; i < 100 && stat(acted, &st) != 0; i++) usleep(50000);
    assert_int_equal(stat(acted, &st), 0);
    assert_int_not_equal(stat(dismissed, &st), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_spawn_and_guardian, setup, teardown),
        cmocka_unit_test_setup_teardown(test_study_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_study_sigterm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpus_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gpus_sigterm_while_warming, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mps_daemon_quit_by_guardian, setup, teardown),
        cmocka_unit_test_setup_teardown(test_streams_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_report_killed, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
