/* Whether an MPS control daemon answers, without the runner: run_suite asks before it starts or
 * attaches to one, and a training job asks before its CUDA context exists (a client's hardware
 * work queues come out of the server's budget: runner/train/workload_image.c). Host only. */
#include "runner/mps_probe.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int is_socket(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

long mps_daemon_pid(const char *pipe_dir) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/nvidia-cuda-mps-control.pid", pipe_dir);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (f) {
        if (fscanf(f, "%ld", &pid) != 1) pid = 0;
        fclose(f);
    }
    return pid;
}

const char *mps_proc_stat(long pid, char *line, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t n = fread(line, 1, size - 1, f);
    fclose(f);
    line[n] = 0;
    return strrchr(line, ')'); /* "pid (comm) S ...": the name may hold spaces and parentheses */
}

int mps_pid_alive(long pid) {
    if (pid <= 0) return 0;
    /* run_suite is a subreaper: the daemon, orphaned by its own fork, is our child; reap it */
    if (waitpid((pid_t)pid, NULL, WNOHANG) == (pid_t)pid) return 0;
    if (kill((pid_t)pid, 0) != 0 && errno != EPERM) return 0;
    char stat_line[512];
    const char *after_name = mps_proc_stat(pid, stat_line, sizeof stat_line);
    if (!after_name) return 1; /* no /proc to ask: kill said it is there */
    return !(after_name[0] == ')' && after_name[1] == ' ' && after_name[2] == 'Z');
}

int mps_daemon_running(const char *pipe_dir) {
    char control[PATH_MAX + 16];
    snprintf(control, sizeof control, "%s/control", pipe_dir);
    if (!is_socket(control)) return 0;
    long pid = mps_daemon_pid(pipe_dir);
    return pid == 0 || mps_pid_alive(pid); /* no pid file: trust the socket */
}

const char *mps_default_pipe_dir(void) {
    const char *dir = getenv("CUDA_MPS_PIPE_DIRECTORY");
    return dir && *dir ? dir : MPS_DEFAULT_PIPE_DIR;
}
