/* The training step: learning-rate value, forward, softmax cross-entropy, backward and the
 * optimizer's update (SGD or AdamW), the update in parts beside the backward pass where the model
 * reports weights final early (context.h's update_hook: ResNet's weight-gradient lane), the rest
 * after it; captured once in a CUDA graph and replayed; each step copies its batch into the
 * model's fixed input and label buffers on the job's stream first. Loss and accuracy accumulate on the device and
 * are read once per epoch, so steps never wait for the host. */
#ifndef SUITE_TRAINER_H
#define SUITE_TRAINER_H

#include <stdint.h>

#include "kernels/schedule.h"
#include "models/core/context.h"
#include "models/core/model.h"
#include "models/core/optimizer_kind.h"

/* Field order keeps SGD initialisers short: {OPTIMIZER_SGD, momentum, weight_decay, nesterov}. */
typedef struct optimizer_config {
    optimizer_kind kind;
    float momentum, weight_decay;  /* SGD momentum; weight decay (AdamW: decoupled, lr-scaled) */
    int nesterov;
    int decay_all;        /* 1: weight decay on BN/LayerNorm parameters and biases too */
    double beta1, beta2;           /* AdamW (0: 0.9, 0.999, as torch.optim.AdamW) */
    float eps;                     /* AdamW (0: 1e-8) */
} optimizer_config;

/* Copies of the parameters the optimizer keeps in the arena: SGD's momentum, AdamW's two moments. */
int optimizer_slots(optimizer_kind kind);

typedef struct trainer {
    model *model;
    job_context *ctx;
    optimizer_config opt;
    lr_schedule schedule;
    float label_smoothing;
    float *lr;            /* device scalar written by the graph */
    int64_t *step;        /* device step counter */
    size_t updated_from;  /* within a step: the weights from here on are updated (context.h) */
    float *sums;          /* device [loss_sum, correct] */
    int use_graph;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
} trainer;

/* Takes the trainer's device scalars from the arena (planning or real). */
void trainer_build(trainer *t, arena *a);
/* After the model's setup: warms up once (restoring the BN running statistics), then captures the
 * step into a graph when use_graph is set. */
void trainer_init(trainer *t, model *m, job_context *ctx, optimizer_config opt, lr_schedule schedule,
                  float label_smoothing, int use_graph);
/* Enqueues one training step on the job's stream; images and labels may be host memory (pinned,
 * for speed) or device memory (a GPU decoder's images). */
void trainer_step(trainer *t, const float *images, const int32_t *labels);
/* trainer_step in its two parts, so that a caller can mark (an event on the job's stream) the
 * moment the batch's memory may be written again: the copy into the model's input, then the step. */
void trainer_take_batch(trainer *t, const float *images, const int32_t *labels);
void trainer_run_step(trainer *t);
/* The same step enqueued kernel by kernel (no graph): the captured body. bf16: its optimizer
 * keeps the bfloat16 weight copy current (the step's forward does not cast) and, without grad
 * hooks, reads the bfloat16 gradients, so after it the float32 gradients of the weights with
 * decay are stale: model_grads_from_half makes them. Weights written outside a step reach the
 * next step only through a pass that casts (any forward outside a step, or model_weights_to_half). */
void trainer_step_body(trainer *t);
/* Enqueues an inference forward and accumulates loss and correct count over the first n rows. */
void trainer_eval_batch(trainer *t, const float *images, const int32_t *labels, int n);
/* Waits for the stream, returns the accumulated loss sum and correct count, and zeroes them. */
void trainer_take_sums(trainer *t, double *loss_sum, double *correct);
/* The learning rate the next step will use (host formula, for reporting). */
float trainer_current_lr(const trainer *t);
void trainer_free(trainer *t);

#endif
