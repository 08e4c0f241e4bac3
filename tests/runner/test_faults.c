/* Faults, without a GPU, against tests/support/fake_train (FAKE_TRAIN_PATH; also the fake MPS control
 * program under the name nvidia-cuda-mps-control): the KIND@STEP grammar of train and of the mix,
 * each injected kind's record, the watchdog (explicit and derived limits), the collateral rule
 * (MPS: one client's fatal fault takes the others; naive: it does not), the MPS server's log line
 * as evidence, no job left running after a SIGKILL of the runner, and the stale daemon of a killed
 * runner stopped by the next one. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "results/faults.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/gpu/mps.h"
#include "runner/train/fault.h"
#include "tests/support/testutil.h"

#ifndef FAKE_TRAIN_PATH
#error "FAKE_TRAIN_PATH must name the fake_train program (CMake passes it)"
#endif

static void test_fault_grammar(void **state) {
    train_fault f;
    char err[256], text[64];
    static const char *good[] = {"oom@1", "illegal-address@50", "nan@7", "exit@3", "hang@1000000000", "sigkill@2"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        assert_int_equal(fault_parse(good[i], strlen(good[i]), &f, err, sizeof err), 0);
        expect_ne(f.kind, FAULT_NONE);
        fault_format(&f, text, sizeof text);
        assert_string_equal(text, good[i]);
    }
    assert_int_equal(fault_parse("Illegal-Address@5", 17, &f, err, sizeof err), 0);
    assert_int_equal(f.kind, FAULT_ILLEGAL_ADDRESS);
    assert_int_equal(f.step, 5);
    static const char *bad[] = {"", "oom", "oom@", "oom@0", "oom@-1", "oom@1x", "oom@1000000001",
                                "segfault@3", "@3", "oom@99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(fault_parse(bad[i], strlen(bad[i]), &f, err, sizeof err), -1);
        assert_int_equal(f.kind, FAULT_NONE);
        assert_non_null(strstr(err, "fault"));
    }
    assert_int_equal(fault_parse("segfault@3", 10, &f, err, sizeof err), -1);
    assert_non_null(strstr(err, FAULT_KINDS));
    f.kind = FAULT_NONE;
    assert_int_equal(fault_format(&f, text, sizeof text), 0);
}

static void test_mix_fault_override(void **state) {
    mix m;
    char err[1024], text[256];
    assert_int_equal(mix_parse(&m, "S[fault=illegal-address@50]+2*S", err, sizeof err), 0);
    assert_int_equal(m.count, 3);
    assert_int_equal(m.jobs[0].fault.kind, FAULT_ILLEGAL_ADDRESS);
    assert_int_equal(m.jobs[0].fault.step, 50);
    assert_int_equal(m.jobs[1].fault.kind, FAULT_NONE);
    mix_job_format(&m.jobs[0], text, sizeof text);
    assert_non_null(strstr(text, "fault=illegal-address@50"));
    mix again; /* the canonical form reads back to the same job */
    assert_int_equal(mix_parse(&again, text, err, sizeof err), 0);
    assert_int_equal(again.jobs[0].fault.kind, FAULT_ILLEGAL_ADDRESS);
    assert_int_equal(again.jobs[0].fault.step, 50);
    assert_int_equal(mix_parse(&m, "M[epochs=3, fault = hang@7]", err, sizeof err), 0);
    assert_int_equal(m.jobs[0].fault.kind, FAULT_HANG);
    assert_int_equal(mix_parse(&m, "S[fault=boom@5]", err, sizeof err), -1);
    assert_non_null(strstr(err, "boom@5"));
    assert_non_null(strstr(err, "illegal-address"));
    assert_int_equal(mix_parse(&m, "S[fault=oom@0]", err, sizeof err), -1);
    assert_int_equal(m.count, 0);
    /* the longest form of every override still fits the canonical text */
    assert_int_equal(mix_parse(&m, "dlrm:criteo-terabyte@2048[epochs=100000,steps=1000000000,rows=2147483647,"
                                   "fault=illegal-address@1000000000]", err, sizeof err), 0);
    mix_job_format(&m.jobs[0], text, sizeof text);
    assert_non_null(strstr(text, "rows=2147483647,fault=illegal-address@1000000000]"));
    /* train gets it as --inject-fault, the dry run does not */
    assert_int_equal(mix_parse(&m, "S[fault=sigkill@4]", err, sizeof err), 0);
    const run_request run = {.train_path = "/x/train", .epochs = 2};
    char **argv = job_build_argv(&run, &m.jobs[0], JOB_ARGV_RUN, NULL);
    int found = 0;
    for (char **a = argv; *a; a++)
        if (!strcmp(*a, "--inject-fault")) found = !strcmp(a[1], "sigkill@4");
    assert_true(found);
    job_free_strv(argv);
    argv = job_build_argv(&run, &m.jobs[0], JOB_ARGV_DRY_RUN, NULL);
    for (char **a = argv; *a; a++) assert_string_not_equal(*a, "--inject-fault");
    job_free_strv(argv);
}

static job_record *prepare(int count, const char *dir, int epochs, const char *const faults[]) {
    static const char *models[] = {"resnet26", "resnet50", "resnet152"};
    job_record *jobs = calloc((size_t)count, sizeof *jobs);
    assert_non_null(jobs);
    for (int i = 0; i < count; i++) {
        job_spec s;
        memset(&s, 0, sizeof s);
        snprintf(s.label, sizeof s.label, "%s", models[i]);
        snprintf(s.model, sizeof s.model, "%s", models[i]);
        snprintf(s.data, sizeof s.data, "cifar10");
        s.image_size = 32, s.classes = 10, s.batch = 32;
        char err[256];
        if (faults && faults[i]) assert_int_equal(fault_parse(faults[i], strlen(faults[i]), &s.fault, err, sizeof err), 0);
        const run_request run = {.train_path = FAKE_TRAIN_PATH, .epochs = epochs};
        assert_int_equal(job_prepare(&jobs[i], i, &s, &run, NULL, dir, err, sizeof err), 0);
    }
    return jobs;
}

static void release(job_record *jobs, int count) {
    for (int i = 0; i < count; i++) job_release(&jobs[i]);
    free(jobs);
}

/* Every kind on its own next to a healthy job (naive): the faulty job's record names the kind, the
 * step and what it saw; the other job finishes. */
static void test_each_kind_recorded(void **state) {
    char dir[256];
    test_tmpdir(dir, sizeof dir);
    setenv("FAKE_TRAIN", "*:epoch_ms=100,steps=10", 1);
    static const struct { const char *fault, *expect; job_status status; } cases[] = {
        {"oom@3", "exit 1 at step 3", JOB_FAILED},
        {"illegal-address@12", "cudaErrorIllegalAddress", JOB_FAILED},
        {"nan@4", "loss became NaN in epoch 1", JOB_DIVERGED},
        {"exit@5", "exit 1 at step 5 (injected fault exit)", JOB_FAILED},
        {"sigkill@6", "killed by signal 9 (Killed) at step 6 (injected fault sigkill)", JOB_FAILED},
        {"hang@2", "stopped by the watchdog: no event for", JOB_FAILED},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *faults[] = {cases[c].fault, NULL};
        job_record *jobs = prepare(2, dir, 2, faults);
        jobs_settings s = {.ready_timeout_s = 30, .grace_s = 0.5, .stall_timeout_s = 1.0};
        assert_int_equal(jobs_run_group(jobs, 2, &s), GROUP_PARTIAL);
        if (!strstr(jobs[0].reason, cases[c].expect)) fail_msg("%s: reason \"%s\"", cases[c].fault, jobs[0].reason);
        assert_int_equal(jobs[0].status, cases[c].status);
        assert_true(jobs[0].fault_kind[0]);
        assert_int_equal(jobs[0].stalled, strncmp(cases[c].fault, "hang", 4) == 0);
        assert_int_equal(jobs[1].status, JOB_OK);
        assert_int_equal(jobs[1].epoch_count, 2);
        assert_int_equal(jobs_classify_collateral(jobs, 2, "naive", 0, NULL), 0);
        assert_int_equal(results_first_failure(jobs, 2), 0);
        release(jobs, 2);
    }
    unsetenv("FAKE_TRAIN");
    test_rmtree(dir);
}

static void test_stall_limit(void **state) {
    job_record job;
    job_process proc;
    memset(&job, 0, sizeof job);
    memset(&proc, 0, sizeof proc);
    job.proc = &proc;
    jobs_settings s = {.ready_timeout_s = 30, .grace_s = 1, .stall_timeout_s = 0};
    expect_eq(jobs_stall_limit(&job, &s), JOBS_STALL_FIRST_S); /* nothing measured yet */
    jobs_note_event(&job, 100.0);
    jobs_note_event(&job, 100.5);
    expect_lt(fabs(job.proc->longest_gap_s - 0.5), 1e-9);
    expect_eq(jobs_stall_limit(&job, &s), JOBS_STALL_MIN_S); /* 8 x 0.5 s is under the floor */
    jobs_note_event(&job, 120.5);
    expect_lt(fabs(jobs_stall_limit(&job, &s) - JOBS_STALL_FACTOR * 20.0), 1e-9);
    s.stall_timeout_s = 5;
    expect_eq(jobs_stall_limit(&job, &s), 5);
    s.stall_timeout_s = -1;
    assert_true(isinf(jobs_stall_limit(&job, &s)));
}

/* An explicit limit stops a job whose events come slower than it; the derived limit (at least
 * JOBS_STALL_MIN_S) leaves the same job alone and has measured its pace. */
static void test_watchdog_off_leaves_quiet_jobs(void **state) {
    char dir[256];
    test_tmpdir(dir, sizeof dir);
    setenv("FAKE_TRAIN", "*:epoch_ms=600,steps=2", 1);
    job_record *jobs = prepare(1, dir, 2, NULL);
    jobs_settings s = {.ready_timeout_s = 30, .grace_s = 0.5, .stall_timeout_s = 0.2}; /* events every 0.3 s: too slow for 0.2 s */
    assert_int_equal(jobs_run_group(jobs, 1, &s), GROUP_PARTIAL);
    assert_int_equal(jobs[0].stalled, 1);
    release(jobs, 1);
    jobs = prepare(1, dir, 2, NULL);
    s.stall_timeout_s = 0; /* derived: at least 30 s, so this job is left alone */
    assert_int_equal(jobs_run_group(jobs, 1, &s), GROUP_COMPLETE);
    expect_gt(jobs[0].proc->longest_gap_s, 0.2); /* measured: at least the 0.3 s its job sleeps between events */
    release(jobs, 1);
    unsetenv("FAKE_TRAIN");
    test_rmtree(dir);
}

/* MPS (the fake daemon): an illegal address in one client takes the other clients down; they are
 * recorded as its collateral with the server's log line and their own error. */
static void test_mps_collateral(void **state) {
    char dir[256], bin[300], err[512], state_dir[300];
    test_tmpdir(dir, sizeof dir);
    char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    test_fake_mps_on_path(dir, FAKE_TRAIN_PATH, bin, sizeof bin);
    snprintf(state_dir, sizeof state_dir, "%s/state", dir);
    setenv("SUITE_STATE_DIR", state_dir, 1);
    mps_daemon d;
    memset(&d, 0, sizeof d);
    assert_int_equal(mps_start(&d, dir, "", err, sizeof err), 0);
    job_env env = {0};
    assert_int_equal(mps_client_env(&d, 0, 0, 0, &env), 0);
    setenv("FAKE_TRAIN", "*:epoch_ms=200,steps=10", 1);
    const char *faults[] = {NULL, "illegal-address@5", NULL};
    job_record *jobs = calloc(3, sizeof *jobs);
    static const char *models[] = {"resnet26", "resnet50", "resnet152"};
    for (int i = 0; i < 3; i++) {
        job_spec s;
        memset(&s, 0, sizeof s);
        snprintf(s.label, sizeof s.label, "%s", models[i]);
        snprintf(s.model, sizeof s.model, "%s", models[i]);
        snprintf(s.data, sizeof s.data, "cifar10");
        s.image_size = 32, s.classes = 10, s.batch = 32;
        if (faults[i]) assert_int_equal(fault_parse(faults[i], strlen(faults[i]), &s.fault, err, sizeof err), 0);
        const run_request run = {.train_path = FAKE_TRAIN_PATH, .epochs = 2};
        assert_int_equal(job_prepare(&jobs[i], i, &s, &run, &env, dir, err, sizeof err), 0);
    }
    jobs_settings s = {.ready_timeout_s = 30, .grace_s = 0.5, .stall_timeout_s = 5};
    assert_int_equal(jobs_run_group(jobs, 3, &s), GROUP_PARTIAL);
    char evidence[768];
    mps_fault_evidence(&d, evidence, sizeof evidence);
    assert_non_null(strstr(evidence, "fatal GPU error"));
    assert_int_equal(results_first_failure(jobs, 3), 1);
    assert_int_equal(jobs_classify_collateral(jobs, 3, "mps", 1, evidence), 2);
    for (int i = 0; i < 3; i += 2) {
        assert_int_equal(jobs[i].status, JOB_FAILED);
        assert_int_equal(jobs[i].collateral_of, 1);
        assert_non_null(strstr(jobs[i].reason, "collateral of job 1 (mode mps)"));
        assert_non_null(strstr(jobs[i].evidence, "fatal GPU error"));
        assert_non_null(strstr(jobs[i].evidence, "CUDA error 808"));
    }
    assert_int_equal(jobs[1].collateral_of, -1);
    assert_non_null(strstr(jobs[1].reason, "cudaErrorIllegalAddress"));
    release(jobs, 3);
    assert_int_equal(mps_stop(&d, err, sizeof err), 0);
    assert_false(mps_daemon_running(d.pipe_dir));
    setenv("PATH", old_path, 1);
    free(old_path);
    unsetenv("FAKE_TRAIN");
    unsetenv("SUITE_STATE_DIR");
    test_rmtree(dir);
}

/* Without the spreading (naive), the same failures stay each job's own. */
static void test_no_collateral_where_isolated(void **state) {
    job_record jobs[2];
    job_process procs[2];
    memset(jobs, 0, sizeof jobs);
    memset(procs, 0, sizeof procs);
    for (int i = 0; i < 2; i++) {
        jobs[i].proc = &procs[i], procs[i].phase = JOB_FINISHED;
        jobs[i].status = JOB_FAILED, jobs[i].collateral_of = -1;
        jobs[i].t_fault = NAN, jobs[i].t_exit = 10.0 + i;
        snprintf(jobs[i].reason, sizeof jobs[i].reason, "exit 1");
    }
    assert_int_equal(results_first_failure(jobs, 2), 0);
    assert_int_equal(jobs_classify_collateral(jobs, 2, "naive", 0, "x"), 0);
    assert_int_equal(jobs[1].collateral_of, -1);
    /* spreading, but the second job failed before the first job's fault: its own */
    snprintf(jobs[0].fault_kind, sizeof jobs[0].fault_kind, "oom");
    jobs[0].t_fault = 12.0;
    assert_int_equal(jobs_classify_collateral(jobs, 2, "mps", 1, "x"), 0);
    /* stopped by the runner's own signal: nobody's collateral */
    jobs[0].t_fault = 5.0;
    snprintf(jobs[1].reason, sizeof jobs[1].reason, "stopped by run_suite (Terminated)");
    assert_int_equal(jobs_classify_collateral(jobs, 2, "mps", 1, "x"), 0);
    snprintf(jobs[1].reason, sizeof jobs[1].reason, "exit 1");
    assert_int_equal(jobs_classify_collateral(jobs, 2, "mps", 1, NULL), 1);
    assert_string_equal(jobs[1].evidence, "job 1 saw: exit 1");
}

static int count_alive(const char *record_dir) {
    DIR *d = opendir(record_dir);
    int alive = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        alive += test_process_alive(atol(e->d_name), NULL, NULL);
    }
    if (d) closedir(d);
    return alive;
}

/* A runner killed with SIGKILL leaves no job: each child asked for SIGKILL on its parent's death. */
static void test_runner_killed_leaves_no_job(void **state) {
    char dir[256], record[300];
    test_tmpdir(dir, sizeof dir);
    snprintf(record, sizeof record, "%s/pids", dir);
    mkdir(record, 0755);
    setenv("FAKE_TRAIN", "*:epoch_ms=60000", 1);
    setenv("FAKE_TRAIN_RECORD", record, 1);
    pid_t runner = fork();
    expect_ge(runner, 0);
    if (runner == 0) {
        job_record *jobs = prepare(3, dir, 2, NULL);
        jobs_settings s = {.ready_timeout_s = 30, .grace_s = 0.5, .stall_timeout_s = 0};
        jobs_run_group(jobs, 3, &s);
        _exit(1);
    }
    for (int i = 0; i < 100 && count_alive(record) < 3; i++) usleep(50000);
    assert_int_equal(count_alive(record), 3);
    kill(runner, SIGKILL);
    int st;
    assert_int_equal(waitpid(runner, &st, 0), runner);
    for (int i = 0; i < 100 && count_alive(record) > 0; i++) usleep(50000);
    assert_int_equal(count_alive(record), 0);
    unsetenv("FAKE_TRAIN");
    unsetenv("FAKE_TRAIN_RECORD");
    test_rmtree(dir);
}

/* The daemon of a runner killed with SIGKILL together with its guardian is found and stopped by
 * the next one, which says so; a live runner's daemon is left alone. */
static void test_stale_daemon_stopped(void **state) {
    char dir[256], bin[300], err[512], state_dir[300], pipe_dir[PATH_MAX];
    test_tmpdir(dir, sizeof dir);
    char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    test_fake_mps_on_path(dir, FAKE_TRAIN_PATH, bin, sizeof bin);
    snprintf(state_dir, sizeof state_dir, "%s/state", dir);
    setenv("SUITE_STATE_DIR", state_dir, 1);
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t runner = fork();
    if (runner == 0) {
        mps_daemon d;
        memset(&d, 0, sizeof d);
        char run_dir[300];
        snprintf(run_dir, sizeof run_dir, "%s/run", dir);
        mkdir(run_dir, 0755);
        if (mps_start(&d, run_dir, "", err, sizeof err) != 0) _exit(1);
        ssize_t w = write(ready[1], &d.guardian.pid, sizeof d.guardian.pid);
        w = write(ready[1], d.pipe_dir, strlen(d.pipe_dir) + 1);
        (void)w;
        pause();
        _exit(0);
    }
    close(ready[1]);
    pid_t guardian = 0;
    assert_int_equal(read(ready[0], &guardian, sizeof guardian), (ssize_t)sizeof guardian);
    ssize_t n = read(ready[0], pipe_dir, sizeof pipe_dir);
    close(ready[0]);
    expect_gt(n, 0);
    expect_gt(guardian, 0);
    assert_true(mps_daemon_running(pipe_dir));
    FILE *msg = tmpfile(); /* what mps_stop_stale tells the user, read back below */
    assert_non_null(msg);
    assert_int_equal(mps_stop_stale(msg), 0); /* its owner still runs */
    assert_true(mps_daemon_running(pipe_dir));
    kill(guardian, SIGKILL); /* first: it would quit the daemon once the runner is gone */
    kill(runner, SIGKILL);
    waitpid(runner, NULL, 0);
    assert_int_equal(mps_stop_stale(msg), 1);
    assert_false(mps_daemon_running(pipe_dir));
    rewind(msg);
    char line[1024] = "";
    assert_non_null(fgets(line, sizeof line, msg));
    assert_non_null(strstr(line, "stopped a stale MPS control daemon"));
    assert_non_null(strstr(line, pipe_dir));
    fclose(msg);
    assert_int_equal(mps_stop_stale(stderr), 0); /* the record is gone too */
    DIR *sd = opendir(state_dir);
    int entries = 0;
    for (struct dirent *e; sd && (e = readdir(sd));) entries += e->d_name[0] != '.';
    if (sd) closedir(sd);
    assert_int_equal(entries, 0);
    setenv("PATH", old_path, 1);
    free(old_path);
    unsetenv("SUITE_STATE_DIR");
    test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fault_grammar),
        cmocka_unit_test(test_mix_fault_override),
        cmocka_unit_test(test_each_kind_recorded),
        cmocka_unit_test(test_stall_limit),
        cmocka_unit_test(test_watchdog_off_leaves_quiet_jobs),
        cmocka_unit_test(test_mps_collateral),
        cmocka_unit_test(test_no_collateral_where_isolated),
        cmocka_unit_test(test_runner_killed_leaves_no_job),
        cmocka_unit_test(test_stale_daemon_stopped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
