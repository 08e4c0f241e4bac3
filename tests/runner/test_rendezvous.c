/* The ranks' rendezvous alone (runner/train/rendezvous.h): processes forked here on 127.0.0.1 call
 * its API as train --launcher does. Every rank gets rank 0's id, lines reach rank 0, and a
 * connection that is none of ours is dropped; a rank killed midway (or rank 0) ends every other rank
 * non-zero within the 30 s the issue allows, each naming it, while their main threads sleep as if
 * blocked in a collective; a rank's own failure reaches the others with its message; a wrong world
 * size, a rank given twice, a port in use, a rank that never arrives, a rank 0 that never answers
 * and a host that does not resolve are refused, each with its code and a message naming it. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "runner/train/rendezvous.h"
#include "tests/support/testutil.h"

#define LIVENESS_BOUND_S 30.0 /* the issue's: every other rank ends within it */
#define MAX_CHILDREN 8

typedef struct child {
    pid_t pid;
    int err_fd;
    char err[8192];
    size_t len;
    int status, ended;
    double ended_at;
} child;

/* What a forked rank does: its config and what it does once joined. */
typedef enum behaviour { FINISH, DIE_MIDWAY, SLEEP, FAIL_MIDWAY } behaviour;

typedef struct rank_plan {
    int rank, world, port;
    double timeout_s, start_after_s;
    const char *host;
    behaviour then;
} rank_plan;

static void print_line(void *user, int rank, const char *line) {
    (void)user;
    fprintf(stderr, "line from %d: %s\n", rank, line);
}

/* The body of a forked rank; its exit status is the outcome. */
static void run_rank(const rank_plan *p) {
    if (p->start_after_s > 0) usleep((useconds_t)(p->start_after_s * 1e6));
    rendezvous_config c = {p->rank, p->world, p->host ? p->host : "127.0.0.1", p->port, p->timeout_s, "the test"};
    char id[RENDEZVOUS_ID_MAX], err[2048];
    int code = 0;
    rendezvous *r = rendezvous_join(&c, "feedc0de-0123", id, sizeof id, &code, err, sizeof err);
    if (!r) {
        fprintf(stderr, "join failed (%d): %s\n", code, err);
        _exit(code);
    }
    fprintf(stderr, "id=%s\n", id);
    rendezvous_hooks hooks = {print_line, NULL, NULL};
    if (rendezvous_watch(r, &hooks, err, sizeof err) != 0) _exit(3);
    if (p->rank == 0) rendezvous_release(r);
    else rendezvous_wait_release(r);
    if (p->rank != 0) {
        char line[64];
        snprintf(line, sizeof line, "{\"event\":\"hello\",\"rank\":%d}", p->rank);
        rendezvous_send(r, line);
    }
    switch (p->then) {
    case DIE_MIDWAY:
        usleep(300000);
        raise(SIGKILL);
        break;
    case FAIL_MIDWAY:
        usleep(300000);
        rendezvous_abort(r, p->rank, 2, "the data set is missing on this node");
        _exit(2);
    case SLEEP: /* as a rank blocked in a collective: only the watcher can end it */
        sleep(120);
        _exit(4);
    case FINISH:
        break;
    }
    if (rendezvous_finish(r, err, sizeof err) != 0) {
        fprintf(stderr, "finish failed: %s\n", err);
        _exit(5);
    }
    rendezvous_close(r);
    fprintf(stderr, "finished\n");
    _exit(0);
}

static void spawn(child *c, const rank_plan *p) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    memset(c, 0, sizeof *c);
    c->pid = fork();
    assert_true(c->pid >= 0);
    if (c->pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        run_rank(p);
    }
    close(fds[1]);
    c->err_fd = fds[0];
}

/* Waits for every child, reading their stderr, at most bound_s; a child still running then is
 * killed and the test fails. */
static void wait_all(child *c, int n, double bound_s) {
    double deadline = clock_monotonic() + bound_s;
    int left = n;
    while (left > 0) {
        struct pollfd fds[MAX_CHILDREN];
        for (int i = 0; i < n; i++) fds[i] = (struct pollfd){c[i].err_fd, POLLIN, 0};
        poll(fds, (nfds_t)n, 50);
        for (int i = 0; i < n; i++) {
            if (c[i].err_fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
            ssize_t got = read(c[i].err_fd, c[i].err + c[i].len, sizeof c[i].err - 1 - c[i].len);
            if (got > 0) c[i].len += (size_t)got, c[i].err[c[i].len] = 0;
            else close(c[i].err_fd), c[i].err_fd = -1;
        }
        for (int i = 0; i < n; i++)
            if (!c[i].ended && waitpid(c[i].pid, &c[i].status, WNOHANG) == c[i].pid)
                c[i].ended = 1, c[i].ended_at = clock_monotonic(), left--;
        if (clock_monotonic() > deadline) {
            for (int i = 0; i < n; i++)
                if (!c[i].ended) kill(c[i].pid, SIGKILL), waitpid(c[i].pid, &c[i].status, 0);
            for (int i = 0; i < n; i++) fprintf(stderr, "child %d: %s\n", i, c[i].err);
            fail_msg("%d rank(s) still running after %.0f s", left, bound_s);
        }
    }
    for (int i = 0; i < n; i++) {
        while (c[i].err_fd >= 0) {
            ssize_t got = read(c[i].err_fd, c[i].err + c[i].len, sizeof c[i].err - 1 - c[i].len);
            if (got > 0) c[i].len += (size_t)got, c[i].err[c[i].len] = 0;
            else close(c[i].err_fd), c[i].err_fd = -1;
        }
    }
}

static int exit_code(const child *c) { return WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1; }

static void expect(const child *c, int code, const char *text) {
    if (exit_code(c) != code || (text && !strstr(c->err, text)))
        fail_msg("expected exit %d with '%s', got status %d: %s", code, text ? text : "", c->status, c->err);
}

static void test_exchange(void **state) {
    (void)state;
    int port = test_free_port();
    child c[4];
    /* the others start first: they retry until rank 0 listens */
    for (int k = 1; k < 4; k++) spawn(&c[k], &(rank_plan){k, 4, port, 20, 0, NULL, FINISH});
    spawn(&c[0], &(rank_plan){0, 4, port, 20, 0.5, NULL, FINISH});
    /* a connection that is none of ours, while rank 0 waits for the ranks: dropped */
    usleep(700000);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && write(fd, "GET / HTTP/1.0\n\n", 16) < 0) {}
    if (fd >= 0) close(fd);
    wait_all(c, 4, LIVENESS_BOUND_S);
    for (int k = 0; k < 4; k++) {
        expect(&c[k], 0, "id=feedc0de-0123\n");
        expect(&c[k], 0, "finished\n");
    }
    for (int k = 1; k < 4; k++) {
        char line[96];
        snprintf(line, sizeof line, "line from %d: {\"event\":\"hello\",\"rank\":%d}\n", k, k);
        if (!strstr(c[0].err, line)) fail_msg("rank 0 lacks '%s': %s", line, c[0].err);
    }
}

/* A rank killed midway: every other rank, asleep as if in a collective, ends non-zero within the
 * bound, naming it; so does every rank when rank 0 is the one. */
static void test_rank_dies(void **state) {
    (void)state;
    for (int dead = 2; dead >= 0; dead -= 2) {
        int port = test_free_port();
        child c[4];
        for (int k = 0; k < 4; k++) spawn(&c[k], &(rank_plan){k, 4, port, 20, 0, NULL, k == dead ? DIE_MIDWAY : SLEEP});
        wait_all(c, 4, LIVENESS_BOUND_S + 5);
        assert_true(WIFSIGNALED(c[dead].status) && WTERMSIG(c[dead].status) == SIGKILL);
        char named[64];
        snprintf(named, sizeof named, "rendezvous: rank %d of 4: ", dead);
        for (int k = 0; k < 4; k++) {
            if (k == dead) continue;
            expect(&c[k], 1, named);
            expect(&c[k], 1, dead == 0 ? "rank 0 is gone: its connection closed" : "its connection to rank 0 closed");
            double after = c[k].ended_at - c[dead].ended_at;
            if (after > LIVENESS_BOUND_S) fail_msg("rank %d ended %.1f s after rank %d died", k, after, dead);
        }
    }
}

/* A rank that fails by itself says why; every other rank ends naming it, rank 0 with its code. */
static void test_failure_relayed(void **state) {
    (void)state;
    int port = test_free_port();
    child c[3];
    for (int k = 0; k < 3; k++) spawn(&c[k], &(rank_plan){k, 3, port, 20, 0, NULL, k == 1 ? FAIL_MIDWAY : SLEEP});
    wait_all(c, 3, LIVENESS_BOUND_S);
    expect(&c[1], 2, NULL);
    expect(&c[0], 2, "rendezvous: rank 1 of 3: the data set is missing on this node");
    expect(&c[2], 1, "rendezvous: rank 1 of 3: the data set is missing on this node");
}

static void test_wrong_world_size(void **state) {
    (void)state;
    int port = test_free_port();
    child c[2];
    spawn(&c[0], &(rank_plan){0, 2, port, 20, 0, NULL, FINISH});
    spawn(&c[1], &(rank_plan){1, 3, port, 20, 0, NULL, FINISH});
    wait_all(c, 2, LIVENESS_BOUND_S);
    expect(&c[0], 2, "join failed (2): rank 1 (from 127.0.0.1) says the job has 3 rank(s); rank 0 says 2");
    expect(&c[1], 2, "join failed (2): rank 0 refused the job: rank 1 (from 127.0.0.1) says the job has 3 rank(s)");
}

static void test_rank_given_twice(void **state) {
    (void)state;
    int port = test_free_port();
    child c[3];
    spawn(&c[0], &(rank_plan){0, 3, port, 20, 0, NULL, FINISH});
    spawn(&c[1], &(rank_plan){1, 3, port, 20, 0, NULL, FINISH});
    spawn(&c[2], &(rank_plan){1, 3, port, 20, 0.5, NULL, FINISH});
    wait_all(c, 3, LIVENESS_BOUND_S);
    for (int k = 0; k < 3; k++) expect(&c[k], 2, "rank 1 joined twice (from 127.0.0.1 and from 127.0.0.1)");
}

static void test_port_in_use(void **state) {
    (void)state;
    int fd = socket(AF_INET6, SOCK_STREAM, 0), off = 0;
    struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = in6addr_any};
    socklen_t len = sizeof a;
    if (fd < 0) { /* a host without IPv6 */
        fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a4 = {.sin_family = AF_INET};
        len = sizeof a4;
        assert_true(bind(fd, (struct sockaddr *)&a4, sizeof a4) == 0 && getsockname(fd, (struct sockaddr *)&a4, &len) == 0);
        a.sin6_port = a4.sin_port;
    } else {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
        assert_true(bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    }
    assert_int_equal(listen(fd, 4), 0);
    int port = ntohs(a.sin6_port);
    child c[1];
    spawn(&c[0], &(rank_plan){0, 2, port, 20, 0, NULL, FINISH});
    wait_all(c, 1, LIVENESS_BOUND_S);
    char text[160];
    snprintf(text, sizeof text, "join failed (1): port %d (the test) is in use on this host", port);
    expect(&c[0], 1, text);
    close(fd);
}

/* Rank 2 never comes: rank 0 refuses the job after its timeout naming it, and says so to rank 1. */
static void test_rank_never_arrives(void **state) {
    (void)state;
    int port = test_free_port();
    child c[2];
    spawn(&c[0], &(rank_plan){0, 3, port, 1, 0, NULL, FINISH});
    spawn(&c[1], &(rank_plan){1, 3, port, 1, 0, NULL, FINISH});
    wait_all(c, 2, LIVENESS_BOUND_S);
    expect(&c[0], 1, "join failed (1): rank 2 of 3 did not arrive within 1 s");
    expect(&c[1], 1, "join failed (1): rank 0 refused the job: rank 2 of 3 did not arrive within 1 s");
    /* several missing are listed as ranges */
    port = test_free_port();
    spawn(&c[0], &(rank_plan){0, 6, port, 1, 0, NULL, FINISH});
    spawn(&c[1], &(rank_plan){3, 6, port, 1, 0, NULL, FINISH});
    wait_all(c, 2, LIVENESS_BOUND_S);
    expect(&c[0], 1, "ranks 1-2, 4-5 of 6 did not arrive within 1 s");
}

static void test_rank0_never_answers(void **state) {
    (void)state;
    int port = test_free_port();
    child c[1];
    spawn(&c[0], &(rank_plan){1, 2, port, 1, 0, NULL, FINISH});
    wait_all(c, 1, LIVENESS_BOUND_S);
    char text[200];
    snprintf(text, sizeof text, "join failed (1): rank 0 did not answer at 127.0.0.1:%d (the test) within 1 s", port);
    expect(&c[0], 1, text);
}

static void test_host_does_not_resolve(void **state) {
    (void)state;
    const char *host = "no-such-host.invalid";
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *found = NULL;
    int rc = getaddrinfo(host, "80", &hints, &found);
    if (rc == 0) freeaddrinfo(found);
    if (rc != EAI_NONAME) skip(); /* this resolver cannot tell (no DNS answers at all) */
    for (int rank = 0; rank < 2; rank++) {
        child c[1];
        spawn(&c[0], &(rank_plan){rank, 2, test_free_port(), 1, 0, host, FINISH});
        wait_all(c, 1, LIVENESS_BOUND_S);
        expect(&c[0], 2, "join failed (2): rank 0's host 'no-such-host.invalid' (the test) does not resolve");
    }
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exchange),          cmocka_unit_test(test_rank_dies),
        cmocka_unit_test(test_failure_relayed),   cmocka_unit_test(test_wrong_world_size),
        cmocka_unit_test(test_rank_given_twice),  cmocka_unit_test(test_port_in_use),
        cmocka_unit_test(test_rank_never_arrives), cmocka_unit_test(test_rank0_never_answers),
        cmocka_unit_test(test_host_does_not_resolve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
