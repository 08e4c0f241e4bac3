/* The go relay, a run's end (go_relay.h; the protocol is jobs_relay's, job_process.h). */
#define _GNU_SOURCE
#include "runner/suite/jobs/go_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/knobs.h"

int jobs_relay_from_env(jobs_relay *r, char *err, size_t err_size) {
    const char *text = knob_text(KNOB_GO_RELAY);
    if (!text || !*text) return 0;
    char *end;
    long go = strtol(text, &end, 10), ready = *end == ',' ? strtol(end + 1, &end, 10) : -1;
    if (*end || go < 0 || ready < 0 || fcntl((int)go, F_GETFD) < 0 || fcntl((int)ready, F_GETFD) < 0) {
        snprintf(err, err_size, "%s=%s: expected two open file descriptors G,R (run_suite --gpus sets it)",
                 knob_name(KNOB_GO_RELAY), text);
        return -1;
    }
    r->go_fd = (int)go, r->ready_fd = (int)ready;
    fcntl(r->go_fd, F_SETFD, FD_CLOEXEC), fcntl(r->ready_fd, F_SETFD, FD_CLOEXEC);
    fcntl(r->go_fd, F_SETFL, fcntl(r->go_fd, F_GETFL) | O_NONBLOCK);
    return 1;
}

/* Writes one line to the --gpus process; one it cannot take (it closed its end) means it is gone. */
static void relay_say(go_relay *r, const char *line) {
    ssize_t w;
    do w = write(r->fds->ready_fd, line, strlen(line));
    while (w < 0 && errno == EINTR);
    if (w == (ssize_t)strlen(line)) return;
    fprintf(stderr, "warning: the go relay did not take \"%.*s\" (%s): this run goes on by itself\n",
            (int)strlen(line) - 1, line, w < 0 ? strerror(errno) : "a short write");
    r->gone = r->go = 1;
}

/* Reads what the relay has said, never waiting. */
static void relay_listen(go_relay *r) {
    char line[128];
    int got;
    while (!r->gone && (got = line_reader_next(&r->heard, 0, line, sizeof line)) != 0) {
        if (got < 0) {
            r->gone = r->go = 1;
            break;
        }
        char *end = line;
        double t0 = strncmp(line, "window-start ", 13) == 0 ? strtod(line + 13, &end) : NAN;
        if (strcmp(line, "go") == 0) r->go = 1;
        else if (!isnan(t0) && *end == 0) r->window_start = t0;
    }
}

void go_relay_window(go_relay *r, job_window_clock *clock, const job_record *jobs, int count) {
    if (!r->said_warm && !r->gone && job_window_warm(jobs, count)) {
        relay_say(r, "warm\n");
        r->said_warm = 1;
    }
    relay_listen(r);
    if (!isnan(r->window_start)) clock->t0 = r->window_start;
    if (!isnan(r->window_start) || r->gone) clock->from_relay = 0;
}

void go_relay_init(go_relay *r, const jobs_relay *fds) {
    *r = (go_relay){.fds = fds, .heard = {.fd = fds ? fds->go_fd : -1}, .window_start = NAN};
}

int go_relay_ready(go_relay *r) {
    if (!r->fds) return 1;
    if (!r->said_ready) { /* the other cards' runs wait too: one barrier for all */
        relay_say(r, "ready\n");
        r->said_ready = 1;
    }
    relay_listen(r);
    return r->go;
}

int go_relay_fd(const go_relay *r, int released, const job_window_clock *clock) {
    /* woken by the relay's go, or its window-start */
    if (!r->gone && ((r->said_ready && !released) || (r->said_warm && clock->from_relay))) return r->fds->go_fd;
    return -1;
}
