/* A data-parallel rank in its job, however it was started (train --gpus N's launcher:
 * runner/train/train_ddp.h; another launcher: runner/train/train_launched.h): joining the job's NCCL
 * communicator, and the watchdog that aborts it when a peer fails, so no rank waits in a collective
 * forever. One rank per process: the watchdog is the process's. */
#ifndef SUITE_TRAIN_RANK_H
#define SUITE_TRAIN_RANK_H

#include <stddef.h>

#include "models/core/ddp.h"
#include "models/session.h"
#include "runner/train/train_events.h"
#include "runner/train/train_options.h"

/* In a rank, after the session's set-up and before trainer_init (which captures the step with
 * the all-reduces): joins the communicator, times the all-reduce of the whole gradient alone
 * (ev's human lines: what a step's backward pass has to hide) and starts the watchdog, whose error
 * event goes where ev's events go. 0, or 1 with a message. */
int train_rank_join(ddp *d, session *s, const train_options *o, const train_events *ev, char *err, size_t err_size);
/* After the last epoch, on every rank of a job that did not fail: whether the replicas are the
 * same bytes (parameters and buffers), said in ev's human lines. 0, or -1 with a message when they
 * differ (nothing when not joined). */
int train_rank_finish(ddp *d, const train_events *ev, char *err, size_t err_size);
/* Stops the watchdog and leaves the communicator (nothing when not joined). */
void train_rank_leave(ddp *d, const train_events *ev);

#endif
