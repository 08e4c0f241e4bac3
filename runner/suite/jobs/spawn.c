/* Child processes that die with run_suite (see spawn.h). */
#define _GNU_SOURCE
#include "runner/suite/jobs/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* The handlers run_suite installs (jobs.c's stop signals, --gpus' pass-on): a child starts with
 * the defaults instead, its mask emptied after. */
static void default_signals(void) {
    static const int reset[] = {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD};
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) sigaction(reset[i], &dfl, NULL);
}

/* Between fork and exec only async-signal-safe calls run. An exec failure comes back as errno
 * through a close-on-exec pipe. */
int spawn_child(pid_t *pid, char *const argv[], char *const envp[], int in_fd, int out_fd, int err_fd,
                int death_signal) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) return errno;
    pid_t parent = getpid();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* no handler of ours may run in the child */
    pid_t child = fork();
    if (child == 0) {
        default_signals();
        int e = 0;
        if (prctl(PR_SET_PDEATHSIG, death_signal) != 0) e = errno;
        if (!e && getppid() != parent) _exit(127); /* run_suite died before the request: nothing to do */
        if (!e && setpgid(0, 0) != 0) e = errno;
        if (!e && in_fd < 0) {
            int null = open("/dev/null", O_RDONLY);
            if (null < 0 || dup2(null, 0) < 0) e = errno;
        } else if (!e && dup2(in_fd, 0) < 0) {
            e = errno;
        }
        if (!e && out_fd >= 0 && dup2(out_fd, 1) < 0) e = errno;
        if (!e && err_fd >= 0 && dup2(err_fd, 2) < 0) e = errno;
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (!e) execve(argv[0], argv, envp);
        if (!e) e = errno;
        ssize_t ignored = write(report[1], &e, sizeof e);
        (void)ignored;
        _exit(127);
    }
    int rc = child < 0 ? errno : 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(report[1]);
    if (child > 0) {
        int e = 0;
        ssize_t n;
        do n = read(report[0], &e, sizeof e);
        while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof e) { /* exec failed: reap it, report why */
            while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {}
            rc = e;
        } else {
            *pid = child;
        }
    }
    close(report[0]);
    return rc;
}

int spawn_guardian_start(spawn_guardian *g, void (*on_orphaned)(void *user), void *user) {
    g->pid = 0;
    g->alive_fd = -1;
    int alive[2];
    if (pipe2(alive, O_CLOEXEC) != 0) return -1;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    pid_t child = fork();
    if (child == 0) {
        default_signals();
        /* Outlive what ends run_suite: the terminal's Ctrl-C and hang-up are not for it (a stop that
         * run_suite survives dismisses it), and a quit written to a gone control program must not
         * end it. */
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGPIPE, SIG_IGN);
        setpgid(0, 0);
        prctl(PR_SET_NAME, "suite-guardian");
        /* Only the read end stays open: another guardian's write end held here would keep that
         * guardian from ever seeing run_suite go. */
        if (alive[0] != 3 && dup2(alive[0], 3) != 3) _exit(1); /* cannot watch: never act */
        close_range(4, ~0U, 0);
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) dup2(null, 0), dup2(null, 1), close(null);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        g->pid = 0; /* this copy guards nothing: on_orphaned may call the dismiss */
        g->alive_fd = -1;
        char byte;
        ssize_t n;
        do n = read(3, &byte, 1);
        while (n < 0 && errno == EINTR);
        on_orphaned(user); /* nothing is ever written: end of file means run_suite is gone */
        _exit(0);
    }
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(alive[0]);
    if (child < 0) {
        close(alive[1]);
        errno = e;
        return -1;
    }
    g->pid = child;
    g->alive_fd = alive[1];
    return 0;
}

void spawn_guardian_dismiss(spawn_guardian *g) {
    if (g->pid <= 0) return; /* none (a zeroed struct included) */
    kill(g->pid, SIGKILL);   /* before the write end closes, so it never takes the end for our death */
    while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR) {}
    close(g->alive_fd);
    g->pid = 0;
    g->alive_fd = -1;
}
