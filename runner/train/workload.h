/* What a training job trains: the image models (all families through the model interface,
 * runner/train/workload_image.c) or the recommender (runner/train/workload_dlrm.c), behind one
 * set of operations, so that the job (runner/train/job.c) has one dry run, one set-up, one epoch
 * loop and one event writer (train_events.h) for both. The job calls the operations in this order:
 * plan, then either the dry run's (footprint, add_plan_fields or print_plan) or open_data, start,
 * load (with --load), prepare, the setup event's, and per epoch open_loader once, step and
 * batch_done per batch, take_sums, evaluate; then save (with --save); end always, after plan. */
#ifndef SUITE_WORKLOAD_H
#define SUITE_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "data/loader.h"
#include "models/catalog.h"
#include "models/core/context.h"
#include "models/core/model.h"
#include "runner/train/train_events.h"
#include "runner/train/train_options.h"

typedef struct workload workload;

typedef struct workload_eval {
    double loss, accuracy, auc;  /* auc: NaN where not measured */
} workload_eval;

typedef struct workload_ops {
    /* Host only: checks the options the workload takes and plans the sizes (no GPU). 0, or -1 with
     * a message (bad input, exit 2). Allocates w->impl. */
    int (*plan)(workload *w, char *err, size_t err_size);
    train_footprint (*footprint)(const workload *w);
    double (*flops_per_step)(const workload *w);
    /* The dry run: its JSON fields between "model" and "flops_per_step", or its text line. */
    void (*add_plan_fields)(const workload *w, cJSON *e);
    void (*print_plan)(const workload *w, FILE *out);
    /* Opens the data, sets steps_per_epoch and data_source. 0, or -1 with a message (exit 2). */
    int (*open_data)(workload *w, char *err, size_t err_size);
    /* On the GPU at the place: context and model; sets ctx and params. 0, or an exit code. */
    int (*start)(workload *w, const context_place *place, char *err, size_t err_size);
    int (*load)(workload *w, const char *path, char *err, size_t err_size); /* 0, or -1 */
    /* After the checkpoint: what the steps need (data parallelism, the captured step). 0, or 1. */
    int (*prepare)(workload *w, char *err, size_t err_size);
    /* The setup event: the parameters, the bytes it holds on the GPU (also each epoch's peak),
     * its own fields after the common ones, and its human line. */
    int64_t (*param_count)(const workload *w);
    size_t (*gpu_bytes)(const workload *w);
    void (*add_setup_fields)(const workload *w, cJSON *e);
    void (*print_setup)(const workload *w, const char *device, int sms, int mps, FILE *out);
    /* The training batches (shuffled, sharded for data parallelism). NULL with a message. */
    loader *(*open_loader)(workload *w, char *err, size_t err_size);
    /* Queues the training step on batch b (the index-th of the epoch, from 0) on ctx's stream... */
    void (*step)(workload *w, const loader_batch *b, long index);
    /* ...and returns once b's pinned buffers may be refilled (after the loader's next call). */
    void (*batch_done)(workload *w, long index);
    /* The host wrote the float32 weights (a NaN fault): refresh what is derived from them. NULL: nothing. */
    void (*weights_written)(workload *w);
    /* The training loss and correct predictions summed since the last call (waits for the stream). */
    void (*take_sums)(workload *w, double *loss_sum, double *correct);
    /* Held-out metrics after an epoch (diverged: its loss was not finite): 0 measured, 1 not
     * measured, -1 with a message. */
    int (*evaluate)(workload *w, int diverged, workload_eval *out, char *err, size_t err_size);
    double (*current_lr)(const workload *w);
    /* Images that failed to decode so far (epoch events of style.bad_images). */
    double (*bad_images)(const workload *w);
    /* Training images a GPU decoder left to the host so far (the epoch event's host_decoded); < 0
     * or NULL: no GPU decoder. */
    double (*host_decoded)(const workload *w);
    /* The window protocol, after each step: whether to stop, given this job's own "stop" (told).
     * A data-parallel rank answers what all its ranks agree on, at the same step on each. NULL:
     * told. */
    int (*agree_stop)(workload *w, int told, long step);
    /* After the last epoch of a job that did not fail: checks what must hold at the end (a
     * data-parallel job's replicas are the same bytes). 0, or -1 with a message. NULL: nothing. */
    int (*finish)(workload *w, char *err, size_t err_size);
    int (*save)(workload *w, const char *path, char *err, size_t err_size); /* 0, or -1 */
    /* Frees whatever plan and the later operations made (w->impl included). */
    void (*end)(workload *w);
    train_epoch_style style;
    int timed_blocks;           /* block events every --block-steps steps; a diverged block ends the epoch */
} workload_ops;

struct workload {
    const workload_ops *ops;
    const train_options *o;
    const train_events *ev;
    const model_spec *spec;     /* NULL: a name the catalog lacks (plan refuses it) */
    long steps_per_epoch;       /* open_data */
    const char *data_source;    /* open_data: "real" or "synthetic" */
    job_context *ctx;           /* start: the job's stream and place */
    param_table *params;        /* start: what an injected fault hits */
    void *impl;
};

extern const workload_ops workload_image_ops, workload_dlrm_ops;

#endif
