/* A stand-in for job_host (runner/train/job_host.c) that speaks its protocol without a GPU, so the
 * in-process modes (streams, green, mig-emulate --via green) are tested end to end on any machine:
 * each --job runs as tests/support/fake_train (FAKE_TRAIN_PATH, behaviour from $FAKE_TRAIN as usual), and
 * the host does what the real one does around its jobs: every event line gets "job": <index>,
 * "go" on stdin is passed to all jobs at once (and, in the window measurement, every later line:
 * "window T0 T1", "stop"; stdin's end closes theirs), and a job's end is an "exit" event with its code.
 * --probe answers as an H100 does (132 SMs in 16 groups of 8); --green is checked and recorded in
 * $FAKE_TRAIN_RECORD/job_host.txt when that is set. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef FAKE_TRAIN_PATH
#error "FAKE_TRAIN_PATH must be defined (CMake passes it)"
#endif

#define MAX_JOBS 16

typedef struct child {
    pid_t pid;
    int in, out;
    char line[16384];
    size_t len;
    int code, ended;
} child;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void emit_line(int job, const char *line) {
    if (line[0] != '{') return;
    printf("{\"job\":%d,%s\n", job, line + 1);
    fflush(stdout);
}

static void record_green(const char *list) {
    const char *dir = getenv("FAKE_TRAIN_RECORD");
    if (!dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/job_host.txt", dir);
    FILE *f = fopen(path, "w");
    if (f) fprintf(f, "green %s\n", list), fclose(f);
}

static int start(child *c, char **argv) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) return -1;
    pid_t host = getpid();
    c->pid = fork();
    if (c->pid == 0) {
        /* as the real job_host's jobs (threads of it) end with it: killed with the host, never left
           behind, so the orphan test sees a runner that fails to take its host down */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != host) _exit(127);
        dup2(in[0], 0);
        dup2(out[1], 1);
        execv(FAKE_TRAIN_PATH, argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->in = in[1];
    c->out = out[0];
    return c->pid > 0 ? 0 : -1;
}

static void read_child(child *c, int index) {
    char buf[4096];
    ssize_t n = read(c->out, buf, sizeof buf);
    if (n < 0 && errno == EINTR) return;
    if (n <= 0) {
        close(c->out);
        c->out = -1;
        int st = 0;
        waitpid(c->pid, &st, 0);
        c->code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        c->ended = 1;
        printf("{\"job\":%d,\"event\":\"exit\",\"code\":%d,\"poisoned\":false,\"t\":%.6f}\n", index, c->code, now());
        fflush(stdout);
        return;
    }
    for (ssize_t k = 0; k < n; k++) {
        if (buf[k] == '\n') {
            c->line[c->len] = 0;
            emit_line(index, c->line);
            c->len = 0;
        } else if (c->len + 1 < sizeof c->line) {
            c->line[c->len++] = buf[k];
        }
    }
}

int main(int argc, char **argv) {
    child jobs[MAX_JOBS];
    int count = 0, a = 1;
    signal(SIGPIPE, SIG_IGN); /* a line for a job that has ended */
    for (; a < argc && strcmp(argv[a], "--job") != 0; a++) {
        if (!strcmp(argv[a], "--probe")) {
            printf("{\"device\":0,\"device_sms\":132,\"unit\":8,\"groups\":16}\n");
            return 0;
        }
        if (!strcmp(argv[a], "--green") && a + 1 < argc) record_green(argv[++a]);
        else if (!strcmp(argv[a], "--device") && a + 1 < argc) a++;
        else {
            fprintf(stderr, "fake job_host: unknown option %s\n", argv[a]);
            return 2;
        }
    }
    while (a < argc && count < MAX_JOBS) {
        int end = a + 1;
        while (end < argc && strcmp(argv[end], "--job") != 0) end++;
        char *saved = argv[end < argc ? end : argc];
        argv[a] = FAKE_TRAIN_PATH;
        if (end < argc) argv[end] = NULL;
        memset(&jobs[count], 0, sizeof jobs[count]);
        if (start(&jobs[count], argv + a) != 0) return 1;
        if (end < argc) argv[end] = saved;
        count++;
        a = end;
    }
    int stdin_open = 1, left = count, worst = 0;
    while (left > 0) {
        struct pollfd p[MAX_JOBS + 1];
        int n = 0;
        p[n++] = (struct pollfd){stdin_open ? 0 : -1, POLLIN, 0};
        for (int i = 0; i < count; i++) p[n++] = (struct pollfd){jobs[i].out, POLLIN, 0};
        if (poll(p, (nfds_t)n, 1000) < 0 && errno != EINTR) return 1;
        if (stdin_open && p[0].revents) { /* "go", the window lines (or EOF): to every job at once */
            char line[512];
            ssize_t r = read(0, line, sizeof line);
            for (int i = 0; i < count; i++) {
                if (r > 0 && jobs[i].in >= 0 && write(jobs[i].in, line, (size_t)r) < 0)
                    fprintf(stderr, "fake job_host: job %d took no line\n", i);
                if (r <= 0 && jobs[i].in >= 0) close(jobs[i].in), jobs[i].in = -1;
            }
            stdin_open = r > 0;
        }
        for (int i = 0; i < count; i++)
            if (jobs[i].out >= 0 && p[i + 1].revents) {
                read_child(&jobs[i], i);
                if (jobs[i].ended) left--, worst |= jobs[i].code != 0;
            }
    }
    return worst;
}
