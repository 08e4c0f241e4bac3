/* The runner's protocol, spoken by every kind of training job (image models in train.c, the
 * recommender in train_dlrm.c): with --json, one JSON object per line on stdout (setup, ready,
 * epoch or block, done, error); human-readable lines go to `human` (stderr then, else stdout). */
#ifndef SUITE_TRAIN_EVENTS_H
#define SUITE_TRAIN_EVENTS_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "models/core/context.h"

typedef struct train_events {
    int json;      /* 1: events on stdout */
    FILE *human;   /* where the human-readable lines go */
    /* In the job host (several jobs in one process), set by it: each event line goes to
     * write_line instead of stdout, and the start barrier is go_barrier instead of stdin
     * (0 go, else the job does not start). NULL: a process of its own. */
    void (*write_line)(void *user, const char *line);
    int (*go_barrier)(void *user);
    void *user;
} train_events;

double train_wall_seconds(void);
/* Prints the event (when json) and deletes it. */
void train_emit(const train_events *ev, cJSON *event);
/* Reports an error event and a message on stderr; returns code (the process's exit code). */
int train_fail(const train_events *ev, int code, const char *message);
/* Emits "ready"; with wait_go, waits for "go" on stdin. 0, or 1 when stdin closed. */
int train_wait_for_go(const train_events *ev, int wait_go);
/* Adds what the runner records about where the job runs: device name, SM count, whether it runs
 * as an MPS client and on a MIG instance, its pid. Returns the device name's SM count. */
int train_add_device_fields(cJSON *event, int device, char *name, size_t name_size, int *mps);
/* The same for a job's context: inside a green context, sm_count is the partition's and
 * "green" is true. Returns the SMs the job may use. */
int train_add_place_fields(cJSON *event, const job_context *ctx, char *name, size_t name_size, int *mps);

/* In-epoch progress for long epochs: a "progress" event (epoch, step, steps, samples/s so far,
 * eta_s of the epoch) at most every TRAIN_PROGRESS_S seconds. One train_progress per epoch,
 * zeroed at its start; call after every step. */
#define TRAIN_PROGRESS_S 3.0
typedef struct train_progress {
    double t_last;
} train_progress;
void train_progress_tick(const train_events *ev, train_progress *p, int epoch, long step, long steps,
                         int batch, double t_start);

#endif
