/* The ranks of a data-parallel job that a launcher started (train --launcher) find each other here,
 * over TCP, as PyTorch's TCP store does it: rank 0 listens on the job's port (every address of its
 * host), each other rank connects to rank 0's host with retries until the timeout and says its rank
 * and the job's world size; rank 0 refuses a wrong world size, a rank out of range or a rank that
 * arrives twice (bad input, each named, and every rank that came is told why), or names the ranks
 * that did not arrive in time; when all have, it hands each the job's id (NCCL's unique id, as
 * text: opaque here) at once.
 *
 * The connections then stay open for the whole job, as its liveness channel and its event channel:
 * the other ranks send rank 0 their lines (the job's events), rank 0 releases them all at once
 * ("go": the start barrier) and ends the job; a rank that dies closes its connection (the kernel
 * does it for a killed process; TCP keepalive and an unacknowledged-data limit find a host that is
 * gone within about 20 s).
 * Rank 0 learns a rank's death or failure from its connection and tells every other rank; the
 * others learn rank 0's from theirs. The rank that learns it ends its own process from the
 * channel's watcher thread (after the on_failure hook), whatever its main thread is doing: a rank
 * blocked in an NCCL collective on a peer that is gone would otherwise wait for ever, and a process
 * that exits needs no communicator abort. So every rank exits non-zero within seconds of a death,
 * naming the rank that died.
 *
 * The wire is lines of text (rank 0's side first): "hello RANK WORLD" / "id HEX" or "refused CODE
 * WHY"; then "line TEXT", "done", "fail CODE WHY" from a rank, and "go", "end", "abort RANK CODE
 * WHY" from rank 0. Host only, no CUDA; one rendezvous per process. */
#ifndef SUITE_RENDEZVOUS_H
#define SUITE_RENDEZVOUS_H

#include <stddef.h>

#define RENDEZVOUS_ID_MAX 512       /* the id's text, at most */

typedef struct rendezvous_config {
    int rank, world;
    const char *host;       /* rank 0's host name or address (the others connect to it) */
    int port;
    double timeout_s;       /* rank 0: for every rank to arrive; the others: to reach rank 0, and again
                               for its answer; both: at the end, for the others to finish */
    const char *where;      /* where host and port came from, for messages ("MASTER_ADDR, MASTER_PORT");
                               NULL: not said */
} rendezvous_config;

typedef struct rendezvous rendezvous;

typedef struct rendezvous_hooks {
    /* rank 0: a line another rank sent (rendezvous_send), on the watcher thread */
    void (*on_line)(void *user, int rank, const char *line);
    /* the job ends: `rank` failed (why) or is gone; on the watcher thread, just before it ends the
     * process with code (rank 0: the failed rank's exit code; the failed rank itself: its own; the
     * others: 1). NULL: the message goes to stderr. */
    void (*on_failure)(void *user, int rank, int code, const char *why);
    void *user;
} rendezvous_hooks;

/* Joins the job: rank 0 hands out id, the others receive it in id_out (id_size bytes). NULL with a
 * message and *code: 2 for bad input (an address that does not resolve, a refused world size or
 * rank), 1 for a run-time failure (the port in use, ranks that did not arrive, rank 0 not
 * answering). */
rendezvous *rendezvous_join(const rendezvous_config *c, const char *id, char *id_out, size_t id_size, int *code,
                            char *err, size_t err_size);
/* Starts the watcher thread (the liveness channel) with its hooks. 0, or -1 with a message. */
int rendezvous_watch(rendezvous *r, const rendezvous_hooks *hooks, char *err, size_t err_size);
/* A rank other than 0: one line (no newline in it) to rank 0's on_line. Thread-safe. 0, or -1 when
 * rank 0 cannot be written to (its watcher then ends the process). */
int rendezvous_send(rendezvous *r, const char *line);
/* Rank 0: "go" to every other rank (the start barrier). */
void rendezvous_release(rendezvous *r);
/* A rank other than 0: waits for rank 0's "go". */
void rendezvous_wait_release(rendezvous *r);
/* This process ends the job itself: `rank` (this one, or one whose failure rank 0 saw in its lines)
 * failed with code (why). Rank 0 tells every other rank; another rank tells rank 0, which tells the
 * rest. The watcher stays quiet from then on; returns, and the caller exits. */
void rendezvous_abort(rendezvous *r, int rank, int code, const char *why);
/* The end of a rank that did its work: rank 0 waits (up to the timeout) for every other rank's
 * "done", then says "end" to them; another rank says "done" and waits for rank 0's "end". 0, or -1
 * with a message naming the ranks that did not finish. */
int rendezvous_finish(rendezvous *r, char *err, size_t err_size);
/* Stops the watcher and closes the connections. */
void rendezvous_close(rendezvous *r);

#endif
