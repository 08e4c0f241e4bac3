/* The ranks' rendezvous over TCP and their liveness channel (see rendezvous.h). */
#define _GNU_SOURCE
#include "runner/train/rendezvous.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

#define HELLO_MAX 128               /* a hello line, at most */
#define LINE_MAX_BYTES (1 << 20)    /* a rank's line, at most; a longer one is dropped */
#define WATCH_TICK_MS 200           /* the watcher looks at its stop flag this often */
#define RETRY_MS 200                /* between connection attempts */
#define SEND_TIMEOUT_S 10           /* a rank that takes no bytes for this long is stuck: the write fails */
#define KEEPALIVE_IDLE_S 5          /* an idle link is probed after 5 s, then every 2 s */
#define KEEPALIVE_INTERVAL_S 2
#define KEEPALIVE_PROBES 3
#define UNACKED_LIMIT_MS 15000      /* data or probes unanswered this long: the peer's host is gone (without
                                       it, data in flight to a dead host is retried for many minutes) */

typedef struct inbox {
    char *buf;
    size_t len, cap;
    int dropping;                   /* in an over-long line: skip to its end */
} inbox;

struct rendezvous {
    int rank, world;
    double timeout_s;
    char where[400];
    int *fds;                       /* rank 0: fds[k] is rank k's connection (fds[0] unused); else fds[0] */
    inbox *in;
    rendezvous_hooks hooks;
    pthread_t watcher;
    int watching;
    volatile int stopping;
    pthread_mutex_t lock, send_lock;
    pthread_cond_t changed;
    int released, ended, leaving;
    unsigned char *done;
    int done_count;
};

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int ms_until(double deadline) {
    double left = deadline - clock_monotonic();
    return left <= 0 ? 0 : left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

/* Writes all of text (a whole line), never raising SIGPIPE. 0, or -1. */
static int send_all(int fd, const char *text, size_t len) {
    while (len > 0) {
        ssize_t n = send(fd, text, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        text += n, len -= (size_t)n;
    }
    return 0;
}

/* One line "<fmt...>\n" to a connection: link >= 0 is r->fds[link], read under the send lock (several
 * threads write to the same ranks, and the watcher closes the links that ended); link < 0 is the
 * socket -1 - link of a connection still joining (one thread). */
static int send_line(rendezvous *r, int link, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int send_line(rendezvous *r, int link, const char *fmt, ...) {
    char small[1024], *text = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small - 1, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    if ((size_t)n >= sizeof small - 1) {
        text = malloc((size_t)n + 2);
        if (!text) return -1;
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    text[n] = '\n';
    pthread_mutex_lock(&r->send_lock);
    int fd = link >= 0 ? r->fds[link] : -1 - link;
    int rc = fd >= 0 ? send_all(fd, text, (size_t)n + 1) : -1;
    pthread_mutex_unlock(&r->send_lock);
    if (text != small) free(text);
    return rc;
}

/* The socket of a connection still joining, as send_line takes it. */
static int joining(int fd) { return -1 - fd; }

/* A message made one line: a newline in it would end the line early. */
static void one_line(char *text) {
    for (char *c = text; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

static void set_channel_options(int fd) {
    int on = 1, idle = KEEPALIVE_IDLE_S, interval = KEEPALIVE_INTERVAL_S, probes = KEEPALIVE_PROBES;
    unsigned unacked = UNACKED_LIMIT_MS;
    struct timeval send_timeout = {SEND_TIMEOUT_S, 0};
    /* failures here leave the defaults: a slower discovery of a lost host, never a wrong one */
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &unacked, sizeof unacked);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
}

static rendezvous *make(const rendezvous_config *c) {
    rendezvous *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->rank = c->rank, r->world = c->world, r->timeout_s = c->timeout_s;
    if (c->where) snprintf(r->where, sizeof r->where, "%s:%d (%s)", c->host, c->port, c->where);
    else snprintf(r->where, sizeof r->where, "%s:%d", c->host, c->port);
    int links = c->rank == 0 ? c->world : 1;
    r->fds = malloc((size_t)links * sizeof *r->fds);
    r->in = calloc((size_t)links, sizeof *r->in);
    r->done = calloc((size_t)c->world, 1);
    if (!r->fds || !r->in || !r->done) {
        free(r->fds), free(r->in), free(r->done), free(r);
        return NULL;
    }
    for (int k = 0; k < links; k++) r->fds[k] = -1;
    pthread_mutex_init(&r->lock, NULL);
    pthread_mutex_init(&r->send_lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    return r;
}

static void drop(rendezvous *r) {
    int links = r->rank == 0 ? r->world : 1;
    for (int k = 0; k < links; k++) {
        if (r->fds[k] >= 0) close(r->fds[k]);
        free(r->in[k].buf);
    }
    pthread_mutex_destroy(&r->lock);
    pthread_mutex_destroy(&r->send_lock);
    pthread_cond_destroy(&r->changed);
    free(r->fds), free(r->in), free(r->done), free(r);
}

/* The ranks in [1, world) that `seen` lacks, as "2, 5-7" (at most size bytes). */
static int list_missing(const rendezvous *r, const unsigned char *seen, char *out, size_t size) {
    size_t used = 0;
    int count = 0;
    out[0] = 0;
    for (int k = 1; k < r->world; k++) {
        if (seen[k]) continue;
        int end = k;
        while (end + 1 < r->world && !seen[end + 1]) end++;
        count += end - k + 1;
        if (used < size) {
            int n = end == k ? snprintf(out + used, size - used, "%s%d", used ? ", " : "", k)
                             : snprintf(out + used, size - used, "%s%d-%d", used ? ", " : "", k, end);
            used += n > 0 ? (size_t)n : 0;
        }
        k = end;
    }
    return count;
}

/* getaddrinfo for host:port; its failures sorted into bad input (the name names no host: 2) and the
 * rest (1). NULL with *code and err. */
static struct addrinfo *resolve(const rendezvous_config *c, int *code, char *err, size_t err_size) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *found = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", c->port);
    int rc = getaddrinfo(c->host, port, &hints, &found);
    if (rc == 0) return found;
    int no_such_host = rc == EAI_NONAME || rc == EAI_FAIL;
#ifdef EAI_NODATA
    no_such_host |= rc == EAI_NODATA;
#endif
    *code = no_such_host ? 2 : 1;
    snprintf(err, err_size, "rank 0's host '%s'%s%s%s does not resolve: %s", c->host, c->where ? " (" : "",
             c->where ? c->where : "", c->where ? ")" : "", gai_strerror(rc));
    return NULL;
}

/* --- rank 0 --------------------------------------------------------------------------------------- */

/* The listening socket on every address of this host (IPv6 with IPv4 mapped where the host has
 * IPv6, else IPv4): rank 0's host name may resolve to an address of one interface on another node. */
static int listen_on(const rendezvous_config *c, int *code, char *err, size_t err_size) {
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0), e = 0;
    int off = 0, on = 1;
    if (fd >= 0) {
        struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)c->port), .sin6_addr = in6addr_any};
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, SOMAXCONN) == 0) return fd;
        e = errno;
        close(fd);
        fd = -1;
    }
    if (e == 0 || e == EAFNOSUPPORT || e == EADDRNOTAVAIL) {
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c->port),
                                .sin_addr.s_addr = htonl(INADDR_ANY)};
        if (fd >= 0) (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
        if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, SOMAXCONN) == 0) return fd;
        e = errno;
        if (fd >= 0) close(fd);
    }
    *code = 1;
    if (e == EADDRINUSE)
        snprintf(err, err_size, "port %d%s%s%s is in use on this host: another program (or another job's rank 0) "
                 "listens there; give the job another port", c->port, c->where ? " (" : "", c->where ? c->where : "",
                 c->where ? ")" : "");
    else
        snprintf(err, err_size, "rank 0 cannot listen on port %d: %s", c->port, strerror(e));
    return -1;
}

typedef struct pending {
    int fd;
    char line[HELLO_MAX];
    size_t len;
    char from[64];
} pending;

static void describe_peer(const struct sockaddr_storage *a, char *out, size_t size) {
    char host[NI_MAXHOST];
    if (getnameinfo((const struct sockaddr *)a, sizeof *a, host, sizeof host, NULL, 0, NI_NUMERICHOST) != 0)
        snprintf(host, sizeof host, "?");
    snprintf(out, size, "%s", !strncmp(host, "::ffff:", 7) ? host + 7 : host);
}

/* Rank 0 refuses the job: every rank that came (and the one refused) is told why; then closes. */
static rendezvous *refuse(rendezvous *r, pending *p, int np, int listen_fd, int code, const char *why, int *code_out,
                          char *err, size_t err_size) {
    char line[1024];
    snprintf(line, sizeof line, "%s", why);
    one_line(line);
    for (int k = 1; k < r->world; k++) send_line(r, k, "refused %d %s", code, line);
    for (int i = 0; i < np; i++) {
        if (p[i].fd < 0) continue;
        send_line(r, joining(p[i].fd), "refused %d %s", code, line);
        close(p[i].fd);
    }
    free(p);
    close(listen_fd);
    drop(r);
    *code_out = code;
    snprintf(err, err_size, "%s", why);
    return NULL;
}

/* A hello line from a connection: its rank taken (0), a line that is no hello (1: the connection is
 * dropped), or the job refused (-1, why and code set). */
static int take_hello(rendezvous *r, pending *p, unsigned char *seen, char (*from_of)[64], char *why,
                      size_t why_size, int *code) {
    int rank, world, used = 0;
    if (sscanf(p->line, "hello %d %d%n", &rank, &world, &used) != 2 || p->line[used]) return 1;
    *code = 2;
    if (world != r->world) {
        snprintf(why, why_size, "rank %d (from %s) says the job has %d rank(s); rank 0 says %d: every rank must be "
                 "started with the same world size", rank, p->from, world, r->world);
        return -1;
    }
    if (rank == 0) {
        snprintf(why, why_size, "a second rank 0 (from %s) joined: two processes were given rank 0", p->from);
        return -1;
    }
    if (rank < 0 || rank >= r->world) {
        snprintf(why, why_size, "a process from %s says it is rank %d, but the job's ranks are 0 to %d", p->from, rank,
                 r->world - 1);
        return -1;
    }
    if (seen[rank]) {
        snprintf(why, why_size, "rank %d joined twice (from %s and from %s): two processes were given the same rank",
                 rank, from_of[rank], p->from);
        return -1;
    }
    seen[rank] = 1;
    r->fds[rank] = p->fd;
    snprintf(from_of[rank], sizeof from_of[rank], "%s", p->from); /* the pending entry moves on */
    p->fd = -1;
    return 0;
}

static rendezvous *join_as_rank0(const rendezvous_config *c, const char *id, int *code, char *err, size_t err_size) {
    struct addrinfo *found = resolve(c, code, err, err_size); /* the others must find this host by it */
    if (!found) return NULL;
    freeaddrinfo(found);
    int listen_fd = listen_on(c, code, err, err_size);
    if (listen_fd < 0) return NULL;
    rendezvous *r = make(c);
    pending *p = calloc((size_t)c->world * 2 + 8, sizeof *p);
    char (*from_of)[64] = calloc((size_t)c->world, sizeof *from_of);
    if (!r || !p || !from_of) {
        if (r) drop(r);
        free(p), free(from_of);
        close(listen_fd);
        *code = 1;
        snprintf(err, err_size, "out of memory for the rendezvous of %d ranks", c->world);
        return NULL;
    }
    int np = 0, arrived = 1, cap = c->world * 2 + 8;
    double deadline = clock_monotonic() + c->timeout_s;
    char why[1024];
    int why_code = 1;
    struct pollfd *fds = calloc((size_t)cap + 1, sizeof *fds);
    if (!fds) {
        free(from_of);
        return refuse(r, p, np, listen_fd, 1, "out of memory for the rendezvous", code, err, err_size);
    }
    while (arrived < c->world) {
        int left = ms_until(deadline);
        if (left == 0) {
            char missing[600];
            int n = list_missing(r, r->done, missing, sizeof missing);
            snprintf(why, sizeof why, "rank%s %s of %d did not arrive within %.0f s (rank 0 listens on port %d; the "
                     "others connect to %s)", n == 1 ? "" : "s", missing, c->world, c->timeout_s, c->port, r->where);
            free(fds), free(from_of);
            return refuse(r, p, np, listen_fd, 1, why, code, err, err_size);
        }
        int nf = 0;
        fds[nf++] = (struct pollfd){listen_fd, POLLIN, 0};
        for (int i = 0; i < np; i++) fds[nf++] = (struct pollfd){p[i].fd, POLLIN, 0};
        if (poll(fds, (nfds_t)nf, left < WATCH_TICK_MS ? left : WATCH_TICK_MS) < 0 && errno != EINTR) break;
        for (int i = 1; i < nf; i++) {
            pending *q = &p[i - 1];
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t got = read(q->fd, q->line + q->len, sizeof q->line - 1 - q->len);
            if (got > 0) q->len += (size_t)got;
            q->line[q->len] = 0;
            char *nl = strchr(q->line, '\n');
            if (nl) *nl = 0;
            /* no whole line yet: wait for more, unless the connection ended or sent too much */
            int verdict = nl ? take_hello(r, q, r->done, from_of, why, sizeof why, &why_code)
                             : got <= 0 || q->len == sizeof q->line - 1 ? 1 : 2;
            if (verdict < 0) {
                free(fds), free(from_of);
                return refuse(r, p, np, listen_fd, why_code, why, code, err, err_size);
            }
            if (verdict == 0) arrived++;
            else if (verdict == 1 && q->fd >= 0) { /* not one of ours (a port scan, another program): dropped */
                close(q->fd);
                q->fd = -1;
            }
        }
        int kept = 0; /* pending connections without a hello yet */
        for (int i = 0; i < np; i++)
            if (p[i].fd >= 0) p[kept++] = p[i];
        np = kept;
        if ((fds[0].revents & POLLIN) && np < cap) {
            struct sockaddr_storage a;
            socklen_t len = sizeof a;
            int fd = accept4(listen_fd, (struct sockaddr *)&a, &len, SOCK_CLOEXEC);
            if (fd >= 0) {
                p[np] = (pending){.fd = fd};
                describe_peer(&a, p[np].from, sizeof p[np].from);
                np++;
            }
        }
    }
    free(fds);
    for (int i = 0; i < np; i++) close(p[i].fd);
    free(p), free(from_of);
    close(listen_fd);
    memset(r->done, 0, (size_t)c->world); /* from here: which ranks finished */
    for (int k = 1; k < c->world; k++) {
        set_channel_options(r->fds[k]);
        send_line(r, k, "id %s", id); /* one that fails is a rank gone: its watcher says so */
    }
    return r;
}

/* --- the other ranks ------------------------------------------------------------------------------ */

/* One connection attempt to one address, bounded by the deadline. The socket, or -1. */
static int try_connect(const struct addrinfo *a, double deadline) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) return -1;
    if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            close(fd);
            return -1;
        }
        struct pollfd w = {fd, POLLOUT, 0};
        int wait = ms_until(deadline);
        int error = 0;
        socklen_t len = sizeof error;
        if (poll(&w, 1, wait < 2000 ? wait : 2000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0 ||
            error != 0) {
            close(fd);
            return -1;
        }
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* One line from fd before the deadline into line; 1 with it, 0 at the end of the stream, -1 past
 * the deadline. */
static int read_reply(int fd, char *line, size_t size, double deadline) {
    size_t len = 0;
    while (len < size - 1) {
        struct pollfd w = {fd, POLLIN, 0};
        int wait = ms_until(deadline);
        if (wait == 0) return -1;
        int ready = poll(&w, 1, wait);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return -1;
        ssize_t got = read(fd, line + len, 1); /* byte by byte: nothing after the line is taken from the stream */
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return 0;
        if (line[len] == '\n') break;
        len++;
    }
    line[len] = 0;
    return 1;
}

static rendezvous *join_as_peer(const rendezvous_config *c, char *id_out, size_t id_size, int *code, char *err,
                                size_t err_size) {
    double deadline = clock_monotonic() + c->timeout_s;
    struct addrinfo *found = NULL;
    while (!(found = resolve(c, code, err, err_size))) { /* a temporary failure of the resolver is retried */
        if (*code == 2 || clock_monotonic() > deadline) return NULL;
        sleep_ms(RETRY_MS);
    }
    int fd = -1;
    while (fd < 0 && clock_monotonic() < deadline) {
        for (const struct addrinfo *a = found; a && fd < 0; a = a->ai_next) fd = try_connect(a, deadline);
        if (fd < 0) sleep_ms(RETRY_MS);
    }
    freeaddrinfo(found);
    rendezvous *r = NULL;
    *code = 1;
    if (fd < 0) {
        char where[400];
        snprintf(where, sizeof where, "%s:%d%s%s%s", c->host, c->port, c->where ? " (" : "", c->where ? c->where : "",
                 c->where ? ")" : "");
        snprintf(err, err_size, "rank 0 did not answer at %s within %.0f s: is rank 0 running, and on that host?",
                 where, c->timeout_s);
        return NULL;
    }
    if (!(r = make(c))) {
        close(fd);
        snprintf(err, err_size, "out of memory for the rendezvous");
        return NULL;
    }
    r->fds[0] = fd;
    char line[RENDEZVOUS_ID_MAX + 1100];
    /* rank 0 answers when every rank has arrived, within its own timeout */
    int got = send_line(r, 0, "hello %d %d", c->rank, c->world) == 0
                  ? read_reply(fd, line, sizeof line, clock_monotonic() + c->timeout_s + 10) : 0;
    int refused_code = 0, used = 0;
    if (got == 1 && !strncmp(line, "id ", 3) && strlen(line + 3) < id_size) {
        snprintf(id_out, id_size, "%s", line + 3);
        set_channel_options(fd);
        return r;
    }
    if (got == 1 && sscanf(line, "refused %d %n", &refused_code, &used) == 1 && used > 0) {
        *code = refused_code == 2 ? 2 : 1;
        snprintf(err, err_size, "rank 0 refused the job: %s", line + used);
    } else if (got == 1) {
        snprintf(err, err_size, "rank 0 at %s answered something else than the job's id: '%.80s'", r->where, line);
    } else if (got == 0) {
        snprintf(err, err_size, "rank 0 at %s closed the connection before sending the job's id", r->where);
    } else {
        snprintf(err, err_size, "rank 0 at %s did not send the job's id within %.0f s", r->where, c->timeout_s + 10);
    }
    drop(r);
    return NULL;
}

rendezvous *rendezvous_join(const rendezvous_config *c, const char *id, char *id_out, size_t id_size, int *code,
                            char *err, size_t err_size) {
    *code = 2;
    if (c->world < 1 || c->rank < 0 || c->rank >= c->world || c->port < 1 || c->port > 65535 || !c->host) {
        snprintf(err, err_size, "rendezvous: rank %d of %d on port %d is no rank of a job", c->rank, c->world, c->port);
        return NULL;
    }
    if (c->rank == 0 && (!id || strlen(id) >= RENDEZVOUS_ID_MAX || strchr(id, '\n'))) {
        snprintf(err, err_size, "rendezvous: rank 0 has no id of at most %d characters to hand out", RENDEZVOUS_ID_MAX - 1);
        return NULL;
    }
    rendezvous *r = c->rank == 0 ? join_as_rank0(c, id, code, err, err_size)
                                 : join_as_peer(c, id_out, id_size, code, err, err_size);
    if (r && c->rank == 0 && id_out && id_out != id) snprintf(id_out, id_size, "%s", id);
    return r;
}

/* --- the channel -------------------------------------------------------------------------------- */

/* The job ends because `rank` failed or is gone: from the watcher thread, whatever the main thread
 * is doing (it may wait in a collective for that rank for ever). */
static void end_process(rendezvous *r, int rank, int code, const char *why) {
    pthread_mutex_lock(&r->lock);
    int quiet = r->leaving;
    r->leaving = 1;
    pthread_mutex_unlock(&r->lock);
    if (quiet) return; /* this process is ending the job itself */
    if (r->rank == 0)
        for (int k = 1; k < r->world; k++)
            if (k != rank) send_line(r, k, "abort %d %d %s", rank, code, why);
    int exit_code = r->rank == 0 || rank == r->rank ? (code ? code : 1) : 1;
    if (r->hooks.on_failure) {
        r->hooks.on_failure(r->hooks.user, rank, exit_code, why);
    } else {
        char line[1400];
        int n = snprintf(line, sizeof line, "rendezvous: rank %d of %d: %s\n", rank, r->world, why);
        if (write(2, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1)) < 0) { /* stderr gone */ }
    }
    _exit(exit_code);
}

static void on_message(rendezvous *r, int from, char *line) {
    int rank, code, used = 0;
    if (r->rank == 0) {
        if (!strncmp(line, "line ", 5)) {
            if (r->hooks.on_line) r->hooks.on_line(r->hooks.user, from, line + 5);
        } else if (!strcmp(line, "done")) {
            pthread_mutex_lock(&r->lock);
            if (!r->done[from]) r->done[from] = 1, r->done_count++;
            pthread_cond_broadcast(&r->changed);
            pthread_mutex_unlock(&r->lock);
        } else if (sscanf(line, "fail %d %n", &code, &used) == 1 && used > 0) {
            end_process(r, from, code, line + used);
        }
        return;
    }
    if (!strcmp(line, "go") || !strcmp(line, "end")) {
        pthread_mutex_lock(&r->lock);
        if (line[0] == 'g') r->released = 1;
        else r->ended = 1;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
    } else if (sscanf(line, "abort %d %d %n", &rank, &code, &used) == 2 && used > 0) {
        end_process(r, rank, code, line + used);
    }
}

/* Reads what fds[k] has; 0, or -1 at its end (closed, reset, keepalive failed). */
static int read_link(rendezvous *r, int k) {
    inbox *b = &r->in[k];
    if (b->cap - b->len < 4096) {
        size_t cap = b->cap ? b->cap * 2 : 8192;
        if (cap > LINE_MAX_BYTES + 8192) cap = LINE_MAX_BYTES + 8192;
        char *grown = cap > b->cap ? realloc(b->buf, cap) : b->buf;
        if (grown) b->buf = grown, b->cap = cap;
    }
    if (b->cap - b->len < 2) b->len = 0, b->dropping = 1; /* an over-long line: dropped */
    ssize_t got = read(r->fds[k], b->buf + b->len, b->cap - b->len - 1);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (got <= 0) return -1;
    b->len += (size_t)got;
    char *start = b->buf, *nl;
    while ((nl = memchr(start, '\n', b->len - (size_t)(start - b->buf)))) {
        *nl = 0;
        if (!b->dropping) on_message(r, k, start);
        b->dropping = 0;
        start = nl + 1;
    }
    b->len -= (size_t)(start - b->buf);
    memmove(b->buf, start, b->len);
    return 0;
}

static void *watch(void *arg) {
    rendezvous *r = arg;
    int links = r->rank == 0 ? r->world : 1;
    struct pollfd *fds = calloc((size_t)links, sizeof *fds);
    int *which = calloc((size_t)links, sizeof *which);
    if (!fds || !which) end_process(r, r->rank, 1, "out of memory for the liveness channel");
    while (!r->stopping) {
        int nf = 0;
        for (int k = r->rank == 0 ? 1 : 0; k < links; k++)
            if (r->fds[k] >= 0) fds[nf] = (struct pollfd){r->fds[k], POLLIN, 0}, which[nf++] = k;
        if (nf == 0) {
            sleep_ms(WATCH_TICK_MS);
            continue;
        }
        if (poll(fds, (nfds_t)nf, WATCH_TICK_MS) <= 0) continue;
        for (int i = 0; i < nf && !r->stopping; i++) {
            int k = which[i];
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)) || read_link(r, k) == 0) continue;
            int saved = errno;
            pthread_mutex_lock(&r->lock);
            int expected = r->rank == 0 ? r->done[k] : r->ended; /* an end after the handshake is no failure */
            pthread_mutex_unlock(&r->lock);
            if (expected || r->stopping) {
                pthread_mutex_lock(&r->send_lock);
                close(r->fds[k]);
                r->fds[k] = -1;
                pthread_mutex_unlock(&r->send_lock);
                continue;
            }
            char why[300];
            if (r->rank == 0)
                snprintf(why, sizeof why, "its connection to rank 0 closed (%s): the process died or was killed, or "
                         "its host is gone", saved && saved != EAGAIN ? strerror(saved) : "end of stream");
            else
                snprintf(why, sizeof why, "rank 0 is gone: its connection closed (%s)",
                         saved && saved != EAGAIN ? strerror(saved) : "end of stream");
            end_process(r, r->rank == 0 ? k : 0, 1, why);
        }
    }
    free(fds), free(which);
    return NULL;
}

int rendezvous_watch(rendezvous *r, const rendezvous_hooks *hooks, char *err, size_t err_size) {
    if (hooks) r->hooks = *hooks;
    if (pthread_create(&r->watcher, NULL, watch, r) != 0) {
        snprintf(err, err_size, "cannot start the rendezvous' watcher thread");
        return -1;
    }
    r->watching = 1;
    return 0;
}

int rendezvous_send(rendezvous *r, const char *line) {
    if (r->rank == 0) return -1;
    return send_line(r, 0, "line %s", line);
}

void rendezvous_release(rendezvous *r) {
    for (int k = 1; k < r->world && r->rank == 0; k++) send_line(r, k, "go");
}

void rendezvous_wait_release(rendezvous *r) {
    pthread_mutex_lock(&r->lock);
    while (!r->released) pthread_cond_wait(&r->changed, &r->lock);
    pthread_mutex_unlock(&r->lock);
}

void rendezvous_abort(rendezvous *r, int rank, int code, const char *why) {
    pthread_mutex_lock(&r->lock);
    int already = r->leaving;
    r->leaving = 1;
    pthread_mutex_unlock(&r->lock);
    if (already) return;
    char line[1024];
    snprintf(line, sizeof line, "%s", why);
    one_line(line);
    if (r->rank == 0) /* the failed rank is told too: it may be stuck after its error */
        for (int k = 1; k < r->world; k++) send_line(r, k, "abort %d %d %s", rank, code, line);
    else
        send_line(r, 0, "fail %d %s", code, line);
}

/* Waits on the condition until pred holds or the deadline passes; 1 when it holds. */
static int wait_until(rendezvous *r, double deadline, int (*pred)(const rendezvous *)) {
    pthread_mutex_lock(&r->lock);
    while (!pred(r)) {
        double left = deadline - clock_monotonic();
        if (left <= 0) break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double step = left < 1.0 ? left : 1.0;
        until.tv_sec += (time_t)step;
        until.tv_nsec += (long)((step - (double)(time_t)step) * 1e9);
        if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&r->changed, &r->lock, &until);
    }
    int held = pred(r);
    pthread_mutex_unlock(&r->lock);
    return held;
}

static int all_done(const rendezvous *r) { return r->done_count == r->world - 1; }
static int ended(const rendezvous *r) { return r->ended; }

int rendezvous_finish(rendezvous *r, char *err, size_t err_size) {
    double deadline = clock_monotonic() + r->timeout_s;
    if (r->rank != 0) {
        if (send_line(r, 0, "done") != 0 || !wait_until(r, deadline, ended)) {
            snprintf(err, err_size, "rank 0 did not end the job within %.0f s after rank %d finished", r->timeout_s,
                     r->rank);
            return -1;
        }
        return 0;
    }
    if (!wait_until(r, deadline, all_done)) {
        char missing[600];
        pthread_mutex_lock(&r->lock);
        int n = list_missing(r, r->done, missing, sizeof missing);
        pthread_mutex_unlock(&r->lock);
        snprintf(err, err_size, "rank%s %s of %d did not finish within %.0f s after rank 0 did", n == 1 ? "" : "s",
                 missing, r->world, r->timeout_s);
        return -1;
    }
    for (int k = 1; k < r->world; k++) send_line(r, k, "end");
    return 0;
}

void rendezvous_close(rendezvous *r) {
    if (!r) return;
    r->stopping = 1;
    if (r->watching) pthread_join(r->watcher, NULL);
    drop(r);
}
