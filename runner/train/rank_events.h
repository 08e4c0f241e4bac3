/* A data-parallel job's events from its ranks' (train --gpus N's launcher, or rank 0 of ranks a
 * launcher started: train --launcher): each rank's own events are passed on renamed rank_<event>
 * with "rank", and the job's are made when every rank has sent its own: setup (the largest
 * footprint, every rank's device), epoch (samples summed, seconds the slowest rank's, loss and
 * accuracy the ranks' mean, "gpus"; with a human line "epoch K (N GPUs): ..."), window (samples
 * summed, the slowest rank's steps) and rank 0's step times as the job's. A line that is no event is
 * a rank's human line, printed as "rank R: ...". Not thread-safe: one caller at a time. */
#ifndef SUITE_RANK_EVENTS_H
#define SUITE_RANK_EVENTS_H

#include <cjson/cJSON.h>

#include "runner/train/train_events.h"

typedef struct rank_events_hooks {
    void (*all_ready)(void *user);  /* every rank said ready (the start barrier may open) */
    /* a rank's error event: its message and exit code ("exit_code", else 1) */
    void (*failed)(void *user, int rank, int code, const char *message);
    void *user;
} rank_events_hooks;

typedef struct rank_events rank_events;

/* The job's events go to `job` (kept); ranks and epochs size the tables. NULL without memory. */
rank_events *rank_events_open(const train_events *job, int ranks, int epochs, const rank_events_hooks *hooks);
/* One line of rank r's output. */
void rank_events_line(rank_events *a, int rank, const char *line);
/* Whether rank r has said done. */
int rank_events_done(const rank_events *a, int rank);
void rank_events_close(rank_events *a);

/* The job's event from the ranks' events of one kind ("setup", "epoch", "window"), all present
 * (pure). */
cJSON *rank_events_aggregate(const char *event, cJSON *const *per_rank, int ranks);

#endif
