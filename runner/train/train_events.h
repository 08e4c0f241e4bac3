/* The runner's protocol, spoken by every kind of training job (runner/train/job.c, whichever
 * workload it runs): with --json, one JSON object per line on stdout (setup, ready, epoch or
 * block, done, error; the window measurement's window and each step's time: step_window.h);
 * human-readable lines go to `human` (stderr then, else stdout). */
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
    /* The runner's lines after "go" (--window-protocol), never waiting: 1 with a line, 0 none
     * yet, -1 no more. NULL: read from stdin. */
    int (*next_command)(void *user, char *line, size_t size);
    void *user;
} train_events;

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

/* What the job's libraries were told of its SMs (models/core/context.h's context_sm_target), as the
 * setup event's "sm_target": {"sms": told (0: nothing, the device's count), "from": whole | green |
 * mps | seen | off, and for an MPS share "percent", "device_sms" (the count the device reports to the client) and "context_sms" (the
 * driver's)}. */
cJSON *train_sm_target_json(const context_sm_target *t);
/* The same as the dry run can say it without a GPU: from this process's environment (SUITE_SM_TARGET,
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), "sms" 0 where nothing would be told and null for a share,
 * whose count needs the device (the rule of base/sm_target.h over its SMs). */
cJSON *train_sm_target_dry_json(void);

/* In-epoch progress for long epochs: a "progress" event (epoch, step, steps, samples/s so far,
 * eta_s of the epoch) at most every TRAIN_PROGRESS_S seconds. One train_progress per epoch,
 * zeroed at its start; call after every step. */
#define TRAIN_PROGRESS_S 3.0
typedef struct train_progress {
    double t_last;
} train_progress;
void train_progress_tick(const train_events *ev, train_progress *p, int epoch, long step, long steps,
                         int batch, double t_start);

/* The planned GPU footprint in bytes, as the dry run reports it; embeddings < 0: none. */
typedef struct train_footprint {
    double parameters, gradients, optimizer, buffers, activations, scratch, workspace, total, embeddings;
} train_footprint;
cJSON *train_footprint_json(const train_footprint *f);

/* The "setup" event's fields every job has (event, model, params, footprint_bytes, flops_per_step,
 * where it runs and the SMs its libraries were told, workspace_bytes, steps_per_epoch, data, data_source), not emitted yet: the workload adds its
 * own. The device's name and SMs and whether it runs under MPS come back for the human line. */
cJSON *train_setup_event(const char *model, double params, double footprint_bytes, double flops_per_step,
                         const job_context *ctx, long steps_per_epoch, const char *data, const char *data_source,
                         char *device, size_t device_size, int *sms, int *mps);

/* How a workload's epochs read (its events have always been so): the recommender puts "warmup"
 * after the training figures and reports AUC on held-out rows, the image models report a test
 * set and the images that failed to decode. */
typedef struct train_epoch_style {
    int warmup_last;        /* "warmup" after "train_accuracy" instead of after "epoch" */
    int held_out_auc;       /* "auc" after the held-out metrics; the human line says "held-out" */
    int bad_images;         /* "bad_images" before "t_start" */
    int loss_digits, step_ms_digits; /* in the human line */
} train_epoch_style;

/* One epoch's figures (the epoch event's and its human line's). */
typedef struct train_epoch_record {
    int epoch;
    long steps;
    int batch;
    double seconds, loss_sum, correct;
    int evaluated;          /* held-out figures measured (with --eval) */
    double accuracy, test_loss, auc;
    double lr;
    float step_ms_median, step_ms_p10, step_ms_p90;
    double peak_bytes, device_used_bytes, loader_wait_s, loader_samples_per_s, bad_images, t_start, t_end;
    double cpu_cores;       /* the process's CPU time over the epoch's wall time (loader threads too) */
    double host_decoded;    /* < 0: no GPU decoder; else the images it left to the host so far */
} train_epoch_record;
void train_emit_epoch(const train_events *ev, const train_epoch_style *style, const train_epoch_record *r);

/* A block of steps within an epoch (timed blocks: the recommender's Terabyte epochs are billions of
 * rows). block counts the job's blocks from 1. */
typedef struct train_block_record {
    int epoch;
    long block, steps;
    int batch;
    double seconds, loss_sum, correct, lr, t_end;
} train_block_record;
void train_emit_block(const train_events *ev, const train_block_record *r);

#endif
