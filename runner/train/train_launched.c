/* train --launcher: one rank of ranks another program started (see train_launched.h). */
#include "runner/train/train_launched.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "kernels/knobs.h"
#include "models/core/ddp.h"
#include "runner/cli.h"
#include "runner/train/job.h"
#include "runner/train/rank_env.h"
#include "runner/train/rank_events.h"
#include "runner/train/rendezvous.h"
#include "runner/train/train_ddp.h"

#define MESSAGE_MAX 1024

/* What the rank's events and the rendezvous' watcher share. */
typedef struct launched {
    const train_events *job;     /* the process's own events: rank 0 speaks for the job there */
    rendezvous *r;
    int rank, world;
    /* rank 0: the job's events from every rank's (its own from the main thread, the others' from
     * the watcher), under lock */
    rank_events *events;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int all_ready;
    int reported;                /* rank 0: the job's error is said */
    int own_code;                /* this rank's own error event: its code and message */
    char own_message[MESSAGE_MAX];
} launched;

typedef struct timeout_value {
    double seconds;
} timeout_value;

/* SUITE_RENDEZVOUS_TIMEOUT, or its table fallback; -1 with a message when it is no number of seconds. */
static double rendezvous_timeout(char *err, size_t err_size) {
    const char *text = knob_text(KNOB_RENDEZVOUS_TIMEOUT);
    cli_option row = {knob_name(KNOB_RENDEZVOUS_TIMEOUT), NULL, "", CLI_REAL(timeout_value, seconds, 0.1, 86400)};
    timeout_value t;
    if (cli_parse_value(&row, text && *text ? text : knob_info(KNOB_RENDEZVOUS_TIMEOUT)->fallback, &t, err,
                        err_size) != 0)
        return -1;
    return t.seconds;
}

/* This rank's own error event, remembered for the rendezvous' "fail" (the others' come to rank 0). */
static void remember_error(launched *l, const char *line) {
    if (!strstr(line, "\"event\":\"error\"")) return;
    cJSON *e = cJSON_Parse(line);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message"), *code = cJSON_GetObjectItemCaseSensitive(e, "exit_code");
    pthread_mutex_lock(&l->lock);
    if (!l->own_code) {
        l->own_code = cJSON_IsNumber(code) && code->valueint == 2 ? 2 : 1;
        snprintf(l->own_message, sizeof l->own_message, "%s", cJSON_IsString(m) ? m->valuestring : "error");
    }
    pthread_mutex_unlock(&l->lock);
    cJSON_Delete(e);
}

/* --- rank 0 ------------------------------------------------------------------------------------- */

static void rank0_line(void *user, const char *line) {
    launched *l = user;
    remember_error(l, line);
    pthread_mutex_lock(&l->lock);
    rank_events_line(l->events, 0, line);
    pthread_mutex_unlock(&l->lock);
}

static void peer_line_at_rank0(void *user, int rank, const char *line) {
    launched *l = user;
    pthread_mutex_lock(&l->lock);
    rank_events_line(l->events, rank, line);
    pthread_mutex_unlock(&l->lock);
}

/* Every rank is ready (under lock): the start barrier opens for all at once. */
static void on_all_ready(void *user) {
    launched *l = user;
    rendezvous_release(l->r);
    l->all_ready = 1;
    pthread_cond_broadcast(&l->changed);
}

static int rank0_barrier(void *user) {
    launched *l = user;
    pthread_mutex_lock(&l->lock);
    while (!l->all_ready) pthread_cond_wait(&l->changed, &l->lock);
    pthread_mutex_unlock(&l->lock);
    return 0;
}

/* The job's error, as --gpus' launcher says it (rank < 0: no rank's own). */
static void job_failed(launched *l, int rank, int code, const char *why) {
    char message[MESSAGE_MAX + 128];
    if (rank >= 0)
        snprintf(message, sizeof message, "rank %d of %d: %s; the other ranks were told to stop", rank, l->world, why);
    else
        snprintf(message, sizeof message, "%s; the other ranks were told to stop", why);
    train_fail(l->job, code, message);
    l->reported = 1;
}

/* A rank's error event (under lock): the job ends now, as --gpus' launcher ends it. Another rank's
 * comes on the watcher thread, which ends this process whatever the main thread waits for; rank 0's
 * own comes on the thread that failed (the main thread, or the NCCL watchdog, which then exits),
 * and its main thread ends the process when it is back (finish). */
static void on_rank_failed(void *user, int rank, int code, const char *message) {
    launched *l = user;
    job_failed(l, rank, code, message);
    rendezvous_abort(l->r, rank, code, message);
    if (rank != 0) _exit(code);
}

/* A rank gone or failed, seen by the rendezvous' watcher (which then ends the process). */
static void on_failure(void *user, int rank, int code, const char *why) {
    launched *l = user;
    if (l->rank == 0) {
        pthread_mutex_lock(&l->lock); /* no event of the job's is half written */
        job_failed(l, rank, code, why);
        return; /* the lock stays held: the process ends */
    }
    fprintf(stderr, "train: rank %d of %d: %s; rank %d stops\n", rank, l->world, why, l->rank);
}

/* --- the other ranks ---------------------------------------------------------------------------- */

static void peer_line(void *user, const char *line) {
    launched *l = user;
    remember_error(l, line);
    rendezvous_send(l->r, line); /* a failure is rank 0's end: the watcher says so */
}

static int peer_barrier(void *user) {
    rendezvous_wait_release(((launched *)user)->r);
    return 0;
}

/* --- the rank ----------------------------------------------------------------------------------- */

/* The rank's end after its job returned rc. */
static int finish(launched *l, int rc) {
    char err[MESSAGE_MAX];
    if (rc != 0) {
        pthread_mutex_lock(&l->lock);
        int code = l->own_code ? l->own_code : rc;
        char why[MESSAGE_MAX];
        snprintf(why, sizeof why, "%s", l->own_code ? l->own_message : "it failed");
        if (l->rank == 0 && !l->reported) job_failed(l, 0, code, why);
        pthread_mutex_unlock(&l->lock);
        rendezvous_abort(l->r, l->rank, code, why);
        rendezvous_close(l->r);
        return rc;
    }
    if (rendezvous_finish(l->r, err, sizeof err) != 0) {
        if (l->rank == 0) {
            pthread_mutex_lock(&l->lock);
            job_failed(l, -1, 1, err);
            pthread_mutex_unlock(&l->lock);
        } else {
            fprintf(stderr, "train: %s\n", err);
        }
        rendezvous_abort(l->r, l->rank, 1, err);
        rendezvous_close(l->r);
        return 1;
    }
    if (l->rank == 0) { /* every rank is done: the job is */
        cJSON *done = cJSON_CreateObject();
        cJSON_AddStringToObject(done, "event", "done");
        cJSON_AddNumberToObject(done, "t", clock_unix());
        cJSON_AddNumberToObject(done, "gpus", l->world);
        train_emit(l->job, done);
    }
    rendezvous_close(l->r);
    return 0;
}

int train_launched_main(train_options *o, const train_events *ev) {
    if (o->dry_run) { /* every rank holds the same: one rank's footprint, on each GPU */
        context_place place = {.device = o->device};
        return train_job_run(o, ev, &place);
    }
    char err[MESSAGE_MAX], message[MESSAGE_MAX + 128];
    rank_env env;
    double timeout_s = rendezvous_timeout(err, sizeof err);
    if (timeout_s < 0) return train_fail(ev, 2, err);
    if (rank_env_read(o->launcher, rank_env_getenv, NULL, &env, err, sizeof err) != 0) return train_fail(ev, 2, err);
    setenv("NCCL_NVLS_ENABLE", "0", 1); /* NVLink multicast stays off wherever this runs, as for --gpus */
    char id[RENDEZVOUS_ID_MAX] = "";
    if (env.rank == 0 && ddp_make_id(id, sizeof id, err, sizeof err) != 0) return train_fail(ev, 1, err);
    char where[200];
    snprintf(where, sizeof where, "%s; port from %s", env.addr_from, env.port_from);
    rendezvous_config c = {env.rank, env.world, env.master_addr, env.master_port, timeout_s, where};
    int code;
    rendezvous *r = rendezvous_join(&c, id, id, sizeof id, &code, err, sizeof err);
    if (!r) {
        snprintf(message, sizeof message, "rank %d of %d (--launcher %s): %s", env.rank, env.world,
                 rank_env_launcher_name(o->launcher), err);
        return train_fail(ev, code, message);
    }
    static launched l; /* the watcher may end the process while it is in use */
    l = (launched){.job = ev, .r = r, .rank = env.rank, .world = env.world};
    pthread_mutex_init(&l.lock, NULL);
    pthread_cond_init(&l.changed, NULL);
    train_events rank_ev = {.json = 1, .human = stderr, .user = &l};
    rendezvous_hooks hooks = {peer_line_at_rank0, on_failure, &l};
    if (env.rank == 0) {
        rank_events_hooks job_hooks = {on_all_ready, on_rank_failed, &l};
        if (!(l.events = rank_events_open(ev, env.world, o->epochs, &job_hooks))) {
            rendezvous_abort(r, 0, 1, "out of memory for the job's events");
            return train_fail(ev, 1, "out of memory for the job's events");
        }
        rank_ev.write_line = rank0_line, rank_ev.go_barrier = rank0_barrier;
        fprintf(ev->human, "train: rank 0 of %d (--launcher %s): every rank arrived at port %d; NCCL's id handed out\n",
                env.world, rank_env_launcher_name(o->launcher), env.master_port);
        fflush(ev->human);
    } else {
        rank_ev.write_line = peer_line, rank_ev.go_barrier = peer_barrier;
        rank_ev.human = fopen("/dev/null", "w"); /* quiet unless it fails (stderr) */
        if (!rank_ev.human) rank_ev.human = stderr;
    }
    if (rendezvous_watch(r, &hooks, err, sizeof err) != 0) {
        rendezvous_abort(r, env.rank, 1, err);
        return train_fail(ev, 1, err);
    }
    o->wait_go = 1; /* behind the ranks' own start barrier */
    int rc = train_ddp_rank(o, &rank_ev, env.rank, env.world, id, o->device + env.local_rank);
    rc = finish(&l, rc);
    if (env.rank == 0) {
        pthread_mutex_lock(&l.lock);
        rank_events_close(l.events);
        l.events = NULL;
        pthread_mutex_unlock(&l.lock);
    } else if (rank_ev.human != stderr) {
        fclose(rank_ev.human);
    }
    return rc;
}
