/* A data-parallel rank in its job: the communicator and its watchdog (runner/train/train_rank.h). */
#include "runner/train/train_rank.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* One rank per process: its watchdog is the process's. */
static struct {
    ddp *d;
    const train_events *ev;
    pthread_t thread;
    int running;
    volatile int stop;
} watchdog;

static void *watch(void *arg) {
    (void)arg;
    char err[512], line[700];
    while (!watchdog.stop) {
        if (ddp_check(watchdog.d, err, sizeof err) != 0) {
            /* one write: the main thread may be printing an event at the same time (an event hook,
             * write_line, takes whole lines under its own lock) */
            const train_events *ev = watchdog.ev;
            int n = snprintf(line, sizeof line - 1, "{\"event\":\"error\",\"message\":\"%s; communicator aborted\"}", err);
            if (n < 0 || n > (int)sizeof line - 2) n = (int)sizeof line - 2;
            if (ev && ev->write_line) {
                ev->write_line(ev->user, line);
            } else {
                line[n] = '\n';
                if (write(1, line, (size_t)n + 1) < 0) { /* stdout gone: the launcher is gone too */ }
            }
            fprintf(stderr, "train: %s; communicator aborted\n", err);
            _exit(1);
        }
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

int train_rank_join(ddp *d, session *s, const train_options *o, const train_events *ev, char *err, size_t err_size) {
    if (ddp_init(d, &s->ctx, s->model, o->ddp_rank, o->ddp_world, o->ddp_id, err, err_size) != 0) return 1;
    double ms = ddp_time_allreduce(d);
    fprintf(ev->human, "train: rank %d of %d: the all-reduce of the whole gradient (%.1f MB in %d bucket(s)) alone: "
            "%.3f ms (median of 9)\n", d->rank, d->world, (double)d->count * sizeof(float) / 1e6, d->bucket_count, ms);
    watchdog.d = d;
    watchdog.ev = ev;
    watchdog.stop = 0;
    watchdog.running = pthread_create(&watchdog.thread, NULL, watch, NULL) == 0;
    if (!watchdog.running) {
        snprintf(err, err_size, "cannot start the NCCL watchdog thread");
        return 1;
    }
    return 0;
}

int train_rank_finish(ddp *d, const train_events *ev, char *err, size_t err_size) {
    if (!d->comm) return 0;
    uint64_t hash;
    int same = ddp_state_identical(d, &hash, err, err_size);
    if (same < 0) return -1;
    fprintf(ev->human, "train: rank %d of %d: parameters and buffers at the end %s on every rank (FNV-1a %016llx)\n",
            d->rank, d->world, same ? "identical" : "NOT identical", (unsigned long long)hash);
    if (!same) {
        snprintf(err, err_size, "rank %d of %d: the replicas' parameters or buffers differ at the end", d->rank, d->world);
        return -1;
    }
    return 0;
}

void train_rank_leave(ddp *d, const train_events *ev) {
    if (d->bucket_count)
        fprintf(ev->human, "train: rank %d of %d: %d gradient bucket(s) over %.1f MB, %d of them all-reduced during the "
                "backward pass (the rest after it)\n", d->rank, d->world, d->bucket_count,
                (double)d->count * sizeof(float) / 1e6, d->launches_early);
    if (d->exposed_count)
        fprintf(ev->human, "train: rank %d of %d: communication exposed after the backward pass: %.3f ms (median over %d "
                "epoch ends); the whole all-reduce alone: %.3f ms, so %.0f%% of it hidden\n", d->rank, d->world,
                ddp_exposed_ms(d), d->exposed_count, d->allreduce_alone_ms,
                100 * fmax(0.0, fmin(1.0, 1 - ddp_exposed_ms(d) / d->allreduce_alone_ms)));
    else if (d->comm && d->exposed_error)
        fprintf(ev->human, "train: rank %d of %d: the exposed communication could not be read: %s\n", d->rank, d->world,
                d->exposed_error);
    if (watchdog.running && watchdog.d == d) {
        watchdog.stop = 1;
        pthread_join(watchdog.thread, NULL);
        watchdog.running = 0;
    }
    ddp_free(d);
}
