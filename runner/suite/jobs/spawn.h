/* The one way run_suite starts a child process: fork and exec (posix_spawn cannot ask for a
 * parent-death signal), argv only, never a shell. Between the two the child asks the kernel for a
 * signal when run_suite dies, so nothing it started outlives it, not even after `kill -9`: the
 * jobs, the job host, the dry runs, the nested run_suite of --study and --gpus (SIGTERM: they stop
 * their own jobs and daemon as on Ctrl-C), report.py and the MPS control program. What daemonises
 * itself (the MPS control daemon) leaves the process tree; its guardian stops it instead. */
#ifndef SUITE_SPAWN_H
#define SUITE_SPAWN_H

#include <sys/types.h>

/* Starts argv[0] (a path) with argv and envp; stdin/stdout/stderr from the given fds (-1: /dev/null
 * for stdin, inherited for the others), default signal handling, an empty signal mask and a
 * process group of its own (a terminal's Ctrl-C reaches only run_suite, which stops its children
 * in order). death_signal: what the child gets when the thread that started it dies, SIGKILL, or
 * SIGTERM for a child that must stop its own children first; a child whose parent died before it
 * asked exits at once. 0 with *pid, or the errno of what failed (the exec's included). */
int spawn_child(pid_t *pid, char *const argv[], char *const envp[], int in_fd, int out_fd, int err_fd,
                int death_signal);

/* A forked process that waits, holding the read end of a pipe whose write end only run_suite holds
 * (close-on-exec, so no job inherits it), and calls on_orphaned(user) when run_suite is gone (end of
 * file) and then exits. It runs in a process group of its own with stdin and stdout on /dev/null,
 * named "suite-guardian". */
typedef struct spawn_guardian {
    pid_t pid;          /* 0: none */
    int alive_fd;       /* the write end; -1: none */
} spawn_guardian;
/* 0, or -1 with errno. Call it while run_suite has one thread: the guardian is a fork without exec. */
int spawn_guardian_start(spawn_guardian *g, void (*on_orphaned)(void *user), void *user);
/* Run_suite's own stop: the guardian goes without acting (killed, then reaped). Idempotent. */
void spawn_guardian_dismiss(spawn_guardian *g);

#endif
