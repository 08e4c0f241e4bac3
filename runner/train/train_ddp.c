/* train --gpus N: the launcher of the ranks, the rank's side, and the job's events (see
 * train_ddp.h). */
#define _GNU_SOURCE
#include "runner/train/train_ddp.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/line_reader.h"
#include "models/core/ddp.h"
#include "kernels/knobs.h"
#include "runner/cli.h"
#include "runner/train/job.h"
#include "runner/train/rank_events.h"

extern char **environ;

#define RANK_LINE_MAX 65536
#define STOP_GRACE_S 10.0

/* --- the rank ---------------------------------------------------------------------------------- */

/* SUITE_DDP_RANK and SUITE_DDP_WORLD, checked as the command line's numbers are. */
typedef struct rank_numbers {
    int rank, world;
} rank_numbers;

static int run_rank(train_options *o, const train_events *ev, const char *rank_text) {
    const char *world = knob_text(KNOB_DDP_WORLD), *id = knob_text(KNOB_DDP_ID), *parent = knob_text(KNOB_DDP_PARENT);
    const cli_option rows[] = {
        {knob_name(KNOB_DDP_WORLD), NULL, "", CLI_INT(rank_numbers, world, o->gpus, o->gpus)},
        {knob_name(KNOB_DDP_RANK), NULL, "", CLI_INT(rank_numbers, rank, 0, o->gpus - 1)}};
    rank_numbers n;
    char err[512], message[700];
    if (cli_parse_value(&rows[0], world ? world : "", &n, err, sizeof err) != 0 ||
        cli_parse_value(&rows[1], rank_text, &n, err, sizeof err) != 0 || !id) {
        snprintf(message, sizeof message, "%s: the launcher's SUITE_DDP_RANK/WORLD/ID do not describe a rank of this "
                 "--gpus %d job", id ? err : "SUITE_DDP_ID is not set", o->gpus);
        return train_fail(ev, 2, message);
    }
    /* the launcher's death is this rank's: no orphan left waiting in a collective */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (parent && getppid() != (pid_t)atol(parent)) return train_fail(ev, 1, "the launcher is gone");
    return train_ddp_rank(o, ev, n.rank, n.world, id, o->device + n.rank);
}

int train_ddp_rank(train_options *o, const train_events *ev, int rank, int world, const char *id, int device) {
    o->ddp_rank = rank, o->ddp_world = world;
    snprintf(o->ddp_id, sizeof o->ddp_id, "%s", id);
    /* an injected fault hits the last rank only: its peers are the ones that must not hang */
    if (rank != world - 1) o->fault.kind = FAULT_NONE;
    o->device = device;
    context_place place = {.device = device};
    return train_job_run(o, ev, &place);
}

/* --- the launcher ------------------------------------------------------------------------------ */

typedef struct rank_proc {
    pid_t pid;
    int in_fd, out_fd;
    char line[RANK_LINE_MAX];
    size_t len;
    int reaped, status;
} rank_proc;

typedef struct launcher {
    const train_options *o;
    const train_events *ev;
    int n;
    rank_proc *ranks;
    rank_events *events;    /* the job's from the ranks' */
    line_reader commands;   /* the runner's lines on stdin (the window protocol) */
    int stdin_open;
    int released;
    int failed_rank;
    char failure[768];
    int exit_code;
} launcher;

static volatile sig_atomic_t stop_signal;
static void on_stop(int signo) { stop_signal = signo; }

static void fail_once(launcher *l, int rank, int code, const char *message) {
    if (l->failed_rank >= 0 || stop_signal) return;
    l->failed_rank = rank;
    l->exit_code = code;
    snprintf(l->failure, sizeof l->failure, "rank %d of %d: %s", rank, l->n, message);
}

static void release(launcher *l) {
    if (train_wait_for_go(l->ev, l->o->wait_go) != 0) {
        fail_once(l, -1, 1, "the start barrier did not say go");
        return;
    }
    for (int r = 0; r < l->n; r++)
        if (write(l->ranks[r].in_fd, "go\n", 3) != 3) fail_once(l, r, 1, "cannot release it (its stdin is closed)");
    l->released = 1;
}

static void on_all_ready(void *user) { release(user); }

static void on_rank_failed(void *user, int rank, int code, const char *message) {
    fail_once(user, rank, code, message);
}

static void read_rank(launcher *l, int r) {
    rank_proc *p = &l->ranks[r];
    ssize_t got = read(p->out_fd, p->line + p->len, sizeof p->line - 1 - p->len);
    if (got <= 0) {
        if (got < 0 && errno == EINTR) return;
        close(p->out_fd);
        p->out_fd = -1;
        return;
    }
    p->len += (size_t)got;
    char *start = p->line, *nl;
    while ((nl = memchr(start, '\n', p->len - (size_t)(start - p->line)))) {
        *nl = 0;
        rank_events_line(l->events, r, start);
        start = nl + 1;
    }
    p->len -= (size_t)(start - p->line);
    memmove(p->line, start, p->len);
    if (p->len == sizeof p->line - 1) p->len = 0; /* an over-long line is dropped */
}

/* The window protocol: the runner's lines ("window T0 T1", "stop") go to every rank as they come;
 * the end of the runner's input is every rank's (their stdin closed: they stop). The ranks agree on
 * the step they stop at among themselves (ddp_agree_stop). */
static void forward_commands(launcher *l) {
    char line[sizeof l->commands.buf + 1];
    int got;
    while ((got = line_reader_next(&l->commands, 0, line, sizeof line - 1)) == 1) {
        size_t len = strlen(line);
        line[len++] = '\n';
        for (int r = 0; r < l->n; r++)
            if (l->ranks[r].in_fd >= 0 && write(l->ranks[r].in_fd, line, len) != (ssize_t)len)
                fail_once(l, r, 1, "cannot pass it the runner's window line (its stdin is closed)");
    }
    if (got < 0) {
        l->stdin_open = 0;
        for (int r = 0; r < l->n; r++)
            if (l->ranks[r].in_fd >= 0) close(l->ranks[r].in_fd), l->ranks[r].in_fd = -1;
    }
}

static void stop_ranks(launcher *l, int signo) {
    for (int r = 0; r < l->n; r++)
        if (!l->ranks[r].reaped && l->ranks[r].pid > 0) kill(l->ranks[r].pid, signo);
}

static int spawn_rank(launcher *l, int r, char **argv, const char *id) {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    int count = 0;
    while (environ[count]) count++;
    char **env = calloc((size_t)count + 8, sizeof *env);
    char rank[48], world[48], parent[48], ident[300];
    snprintf(rank, sizeof rank, "SUITE_DDP_RANK=%d", r);
    snprintf(world, sizeof world, "SUITE_DDP_WORLD=%d", l->n);
    snprintf(parent, sizeof parent, "SUITE_DDP_PARENT=%d", (int)getpid());
    snprintf(ident, sizeof ident, "SUITE_DDP_ID=%s", id);
    int n = 0;
    for (int i = 0; env && i < count; i++)
        if (strncmp(environ[i], "SUITE_DDP_", 10) && strncmp(environ[i], "NCCL_NVLS_ENABLE=", 17)) env[n++] = environ[i];
    if (env) {
        env[n++] = rank, env[n++] = world, env[n++] = parent, env[n++] = ident;
        env[n++] = "NCCL_NVLS_ENABLE=0"; /* NVLink multicast stays off wherever this runs */
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = 0;
    int rc = env && len > 0 ? posix_spawn(&l->ranks[r].pid, self, &fa, NULL, argv, env) : -1;
    posix_spawn_file_actions_destroy(&fa);
    free(env);
    close(in[0]), close(out[1]);
    l->ranks[r].in_fd = in[1], l->ranks[r].out_fd = out[0];
    return rc;
}

static int launch(const train_options *o, const train_events *ev, int argc, char **argv) {
    char id[2 * DDP_ID_BYTES + 8], err[512];
    if (ddp_make_id(id, sizeof id, err, sizeof err) != 0) return train_fail(ev, 1, err);
    launcher l = {.o = o, .ev = ev, .n = o->gpus, .failed_rank = -1};
    rank_events_hooks hooks = {on_all_ready, on_rank_failed, &l};
    l.ranks = calloc((size_t)l.n, sizeof *l.ranks);
    l.events = rank_events_open(ev, l.n, o->epochs, &hooks);
    l.stdin_open = o->window_protocol;
    l.commands.fd = 0;
    char **child = calloc((size_t)argc + 3, sizeof *child);
    if (!l.ranks || !l.events || !child) return train_fail(ev, 1, "out of memory for the ranks");
    int has_json = 0, has_wait = 0, c = 0;
    for (int i = 0; i < argc; i++) {
        has_json |= !strcmp(argv[i], "--json"), has_wait |= !strcmp(argv[i], "--wait-go");
        child[c++] = argv[i];
    }
    if (!has_json) child[c++] = "--json"; /* ranks always speak the protocol to the launcher */
    if (!has_wait) child[c++] = "--wait-go";
    struct sigaction sa = {.sa_handler = on_stop};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL), sigaction(SIGINT, &sa, NULL), sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    for (int r = 0; r < l.n; r++) {
        l.ranks[r].in_fd = l.ranks[r].out_fd = -1;
        if (spawn_rank(&l, r, child, id) != 0) {
            fail_once(&l, r, 1, "cannot start its process");
            l.ranks[r].reaped = 1;
        }
    }
    double kill_at = 0;
    int stopping = 0, running = l.n;
    while (running > 0) {
        if ((l.failed_rank >= 0 || stop_signal) && !stopping) { /* one rank's end is everyone's */
            stopping = 1;
            stop_ranks(&l, SIGTERM);
            kill_at = clock_monotonic() + STOP_GRACE_S;
        }
        if (stopping && clock_monotonic() > kill_at) stop_ranks(&l, SIGKILL);
        struct pollfd fds[65];
        int map[65], nf = 0;
        for (int r = 0; r < l.n && nf < 64; r++)
            if (l.ranks[r].out_fd >= 0) fds[nf] = (struct pollfd){l.ranks[r].out_fd, POLLIN, 0}, map[nf++] = r;
        /* the runner's window lines come after go (train_wait_for_go has read go itself) */
        if (l.released && l.stdin_open) fds[nf] = (struct pollfd){0, POLLIN, 0}, map[nf++] = -1;
        if (nf) poll(fds, (nfds_t)nf, 100);
        else usleep(50000);
        for (int i = 0; i < nf; i++) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            if (map[i] < 0) forward_commands(&l);
            else read_rank(&l, map[i]);
        }
        for (int r = 0; r < l.n; r++) {
            rank_proc *p = &l.ranks[r];
            if (p->reaped || p->out_fd >= 0 || waitpid(p->pid, &p->status, WNOHANG) != p->pid) continue;
            p->reaped = 1;
            running--;
            if (p->in_fd >= 0) close(p->in_fd), p->in_fd = -1;
            int code = WIFEXITED(p->status) ? WEXITSTATUS(p->status) : 1;
            if (WIFEXITED(p->status) && code == 0 && rank_events_done(l.events, r)) continue;
            char why[96];
            if (WIFSIGNALED(p->status)) snprintf(why, sizeof why, "killed by signal %d", WTERMSIG(p->status));
            else snprintf(why, sizeof why, "exited with status %d", code);
            fail_once(&l, r, code == 2 ? 2 : 1, why);
        }
    }
    rank_events_close(l.events);
    free(l.ranks), free(child);
    if (stop_signal && l.failed_rank < 0) return 128 + stop_signal;
    if (l.failed_rank >= 0 || l.exit_code) {
        char message[1024];
        snprintf(message, sizeof message, "%s; the other ranks were stopped", l.failure[0] ? l.failure : "a rank failed");
        return train_fail(ev, l.exit_code ? l.exit_code : 1, message);
    }
    cJSON *done = cJSON_CreateObject();
    cJSON_AddStringToObject(done, "event", "done");
    cJSON_AddNumberToObject(done, "t", clock_unix());
    cJSON_AddNumberToObject(done, "gpus", l.n);
    train_emit(ev, done);
    return 0;
}

int train_ddp_main(train_options *o, const train_events *ev, int argc, char **argv) {
    const char *rank = knob_text(KNOB_DDP_RANK);
    if (rank) return run_rank(o, ev, rank);
    if (o->dry_run) { /* every rank holds the same: one rank's footprint, on each GPU */
        context_place place = {.device = o->device};
        return train_job_run(o, ev, &place);
    }
    return launch(o, ev, argc, argv);
}
