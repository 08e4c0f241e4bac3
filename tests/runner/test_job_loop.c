/* The pieces jobs_run_group composes (runner/suite/jobs/): the start barrier, the go relay's run
 * end, the watchdog and its kill escalation, each on its own with pipes standing in for the jobs
 * and the --gpus process. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner/suite/jobs/go_relay.h"
#include "runner/suite/jobs/start_barrier.h"
#include "runner/suite/jobs/watchdog.h"

static void job_with(job_record *job, job_process *p, job_phase phase) {
    memset(job, 0, sizeof *job);
    memset(p, 0, sizeof *p);
    p->stdin_fd = p->out_fd = p->err_fd = p->log_fd = -1;
    p->phase = phase;
    job->proc = p;
    job->t_go = NAN;
}

static void read_all(int fd, char *out, size_t size) {
    ssize_t n = read(fd, out, size - 1);
    out[n > 0 ? n : 0] = 0;
}

static void test_barrier_releases_the_ready(void **state) {
    (void)state;
    job_record jobs[3];
    job_process p[3];
    int pipes[3][2];
    for (int i = 0; i < 3; i++) {
        job_with(&jobs[i], &p[i], i == 2 ? JOB_FINISHED : JOB_READY);
        assert_int_equal(pipe(pipes[i]), 0);
        p[i].stdin_fd = pipes[i][1];
    }
    assert_int_equal(barrier_waiting(jobs, 3), 0);
    p[0].phase = JOB_STARTED;
    assert_int_equal(barrier_waiting(jobs, 3), 1);
    p[0].phase = JOB_READY;
    double t = barrier_release(jobs, 3, 0);
    char line[16];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(p[i].phase, JOB_TRAINING);
        assert_true(jobs[i].t_go == t);
        assert_int_equal(p[i].stdin_fd, -1); /* no windows: stdin closes after go */
        read_all(pipes[i][0], line, sizeof line);
        assert_string_equal(line, "go\n");
    }
    assert_int_equal(p[2].phase, JOB_FINISHED); /* an ended job gets nothing */
    assert_true(isnan(jobs[2].t_go));
    /* with windows stdin stays open for the window lines */
    job_with(&jobs[0], &p[0], JOB_READY);
    p[0].stdin_fd = pipes[2][1];
    barrier_release(jobs, 1, 1);
    assert_int_equal(p[0].stdin_fd, pipes[2][1]);
    for (int i = 0; i < 3; i++) close(pipes[i][0]);
    close(pipes[2][1]);
}

static void test_relay_holds_the_go(void **state) {
    (void)state;
    int to_run[2], from_run[2];
    assert_int_equal(pipe(to_run), 0);
    assert_int_equal(pipe(from_run), 0);
    jobs_relay fds = {.go_fd = to_run[0], .ready_fd = from_run[1]};
    fcntl(fds.go_fd, F_SETFL, O_NONBLOCK);
    go_relay r;
    go_relay_init(&r, &fds);
    job_window_clock clock = {.from_relay = 0};
    assert_int_equal(go_relay_ready(&r), 0); /* said ready, heard nothing yet */
    char line[32];
    read_all(from_run[0], line, sizeof line);
    assert_string_equal(line, "ready\n");
    assert_int_equal(go_relay_fd(&r, 0, &clock), to_run[0]);
    assert_int_equal(go_relay_ready(&r), 0);
    assert_int_equal(write(to_run[1], "go\n", 3), 3);
    assert_int_equal(go_relay_ready(&r), 1);
    assert_int_equal(go_relay_fd(&r, 1, &clock), -1); /* released: nothing awaited */
    /* no relay: the barrier is the run's own */
    go_relay none;
    go_relay_init(&none, NULL);
    assert_int_equal(go_relay_ready(&none), 1);
    close(to_run[1]);
    close(to_run[0]);
    close(from_run[0]);
    close(from_run[1]);
}

static void test_relay_gone_releases(void **state) {
    (void)state;
    int to_run[2], from_run[2];
    assert_int_equal(pipe(to_run), 0);
    assert_int_equal(pipe(from_run), 0);
    jobs_relay fds = {.go_fd = to_run[0], .ready_fd = from_run[1]};
    go_relay r;
    go_relay_init(&r, &fds);
    close(to_run[1]); /* the --gpus process gave up */
    assert_int_equal(go_relay_ready(&r), 1);
    assert_true(r.gone);
    close(to_run[0]);
    close(from_run[0]);
    close(from_run[1]);
}

static void test_watchdog_stops_the_silent_and_escalates(void **state) {
    (void)state;
    job_record job;
    job_process p;
    job_with(&job, &p, JOB_TRAINING);
    jobs_settings s = {.stall_timeout_s = 5};
    char why[160];
    p.last_event_mono = 100;
    assert_int_equal(watchdog_stalled(&job, &s, 104, why, sizeof why), 0);
    assert_int_equal(watchdog_stalled(&job, &s, 106, why, sizeof why), 1);
    assert_non_null(strstr(why, "no event for 6 s"));
    p.phase = JOB_READY; /* before go the barrier's timeout holds, not the watchdog */
    assert_int_equal(watchdog_stalled(&job, &s, 200, why, sizeof why), 0);
    s.stall_timeout_s = -1; /* off */
    p.phase = JOB_TRAINING;
    assert_int_equal(watchdog_stalled(&job, &s, 1e9, why, sizeof why), 0);

    /* a real child that ignores SIGTERM: SIGKILL once its grace has passed */
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGTERM, SIG_IGN);
        if (write(ready[1], "r", 1) != 1) _exit(1);
        for (;;) pause();
    }
    setpgid(pid, pid);
    char r;
    assert_int_equal(read(ready[0], &r, 1), 1); /* it ignores SIGTERM from here on */
    close(ready[0]);
    close(ready[1]);
    p.pid = pid;
    watchdog_terminate(&job, 30, "asked to stop");
    assert_true(p.term_sent);
    assert_string_equal(job.reason, "asked to stop");
    watchdog_escalate(&job, p.kill_at - 1);
    assert_false(p.kill_sent);
    watchdog_escalate(&job, p.kill_at);
    assert_true(p.kill_sent);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_barrier_releases_the_ready),
        cmocka_unit_test(test_relay_holds_the_go),
        cmocka_unit_test(test_relay_gone_releases),
        cmocka_unit_test(test_watchdog_stops_the_silent_and_escalates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
