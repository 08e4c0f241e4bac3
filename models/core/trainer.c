#include "models/core/trainer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/check.h"

void trainer_build(trainer *t, arena *a) {
    memset(t, 0, sizeof *t);
    t->lr = arena_take_floats(a, ARENA_SCRATCH, 1);
    t->step = arena_take(a, ARENA_SCRATCH, sizeof(int64_t));
    t->sums = arena_take_floats(a, ARENA_SCRATCH, 2);
}

/* How many of [from, to) lie below limit. */
static size_t part_below(size_t limit, size_t from, size_t to) {
    return limit <= from ? 0 : (limit < to ? limit : to) - from;
}

/* The optimizer over the trainable parameters [from, to) (floats from the arena's start), on
 * `stream`: what each element gets (decay, a bfloat16 copy and gradient) is decided by its place in
 * the whole, so any split gives the update of the whole. Parameter boundaries keep the vector
 * loads aligned (the arena's 256-byte blocks). */
static void update_range(trainer *t, size_t from, size_t to, cudaStream_t stream) {
    job_context *ctx = t->ctx;
    arena *a = &ctx->arena;
    if (to <= from) return;
    /* bf16: the update keeps the bfloat16 weight copy current and, unless hooks need the float32
     * gradients (ddp all-reduces them), reads the bfloat16 gradients, so the step's passes skip
     * both casts (model.c). */
    uint16_t *half_w = arena_half_weights(a);
    const uint16_t *half_g = half_w && !ctx->grad_hooks ? arena_half_grads(a) : NULL;
    size_t n = arena_trainable_floats(a), n_decay = t->opt.decay_all ? n : arena_decay_floats(a);
    size_t n_half = half_w ? arena_decay_floats(a) : 0;
    size_t len = to - from, part_decay = part_below(n_decay, from, to), part_half = part_below(n_half, from, to);
    void *w = part_half ? half_w + from : NULL;
    const void *g = part_half && half_g ? half_g + from : NULL;
    float *p = (float *)a->params + from, *grad = arena_grads(a) + from;
    /* the kernel trace's scope: one pass over the parameters, their gradients and the optimizer's
     * slots (read and written), and the bfloat16 copies */
    double slots = optimizer_slots(t->opt.kind);
    double bytes = (double)len * 4.0 * (3.0 + 2.0 * slots) + (w ? 2.0 * part_half : 0) + (g ? 2.0 * part_half : 0);
    int token = kernel_scope_enter(ctx->scopes, NULL, "optimizer", KPASS_UPDATE, KCLASS_OPTIMIZER,
                                   (double)len * (t->opt.kind == OPTIMIZER_ADAMW ? 12.0 : 4.0), bytes);
    if (t->opt.kind == OPTIMIZER_ADAMW)
        adamw_update(p, arena_slot(a, 0) + from, arena_slot(a, 1) + from, w, grad, g, t->lr, t->step, len,
                     part_decay, part_half, t->opt.beta1, t->opt.beta2, t->opt.eps,
                     t->opt.weight_decay, stream);
    else
        sgd_update(p, arena_slot(a, 0) + from, w, grad, g, t->lr, len, part_decay, part_half,
                   t->opt.momentum, t->opt.weight_decay, t->opt.nesterov, stream);
    kernel_scope_leave(token);
}

/* The softmax cross-entropy's forward and backward over the logits, as the kernel trace's loss. */
static void loss_forward_backward(trainer *t) {
    model *m = t->model;
    double logits = (double)m->config.batch * m->config.classes;
    int token = kernel_scope_enter(t->ctx->scopes, NULL, "loss", KPASS_NONE, KCLASS_LOSS, 0, 2.0 * logits * sizeof(float));
    softmax_ce_forward_backward(m->dlogits, &t->sums[0], &t->sums[1], m->logits, m->labels, m->config.batch,
                                m->config.classes, t->label_smoothing, t->ctx->stream);
    kernel_scope_leave(token);
}

/* A model's pass reports parameters final from `from` on (context.h's update_hook): update what
 * is new since the last report once it is worth a launch. */
#define UPDATE_PART_FLOATS ((size_t)1 << 21)

static void update_final_from(void *user, const float *from_param, cudaStream_t stream) {
    trainer *t = user;
    size_t from = (size_t)(from_param - (const float *)t->ctx->arena.params);
    if (from >= t->updated_from || t->updated_from - from < UPDATE_PART_FLOATS) return;
    update_range(t, from, t->updated_from, stream);
    t->updated_from = from;
}

void trainer_step_body(trainer *t) {
    model *m = t->model;
    job_context *ctx = t->ctx;
    arena *a = &ctx->arena;
    size_t n = arena_trainable_floats(a), weights_end = arena_decay_floats(a);
    /* Set for this body only: any pass outside a step (the warm-up in trainer_init, evaluation, a
     * test's forward after writing weights) still casts, and updates nothing. */
    ctx->optimizer_owns_half = arena_half_weights(a) != NULL;
    update_hook hook = {t, update_final_from};
    t->updated_from = weights_end;
    if (!ctx->grad_hooks) ctx->update_hook = &hook; /* data-parallel: after the all-reduces only */
    int token = kernel_scope_enter(ctx->scopes, NULL, "lr_schedule", KPASS_UPDATE, KCLASS_OPTIMIZER, 0, 0);
    lr_schedule_step(t->lr, t->step, t->schedule, ctx->stream); /* first: updates may start mid-pass */
    kernel_scope_leave(token);
    /* what no layer marks (a family's own kernels) is the model's forward in the kernel trace */
    token = kernel_scope_enter(ctx->scopes, NULL, "model", KPASS_FORWARD, KCLASS_OTHER, 0, 0);
    m->forward(m, 1, ctx);
    kernel_scope_leave(token);
    loss_forward_backward(t);
    model_backward(m, ctx); /* with a data-parallel job's all-reduces (models/core/ddp.h) */
    if (t->updated_from == weights_end) {
        update_range(t, 0, n, ctx->stream);
    } else {
        update_range(t, 0, t->updated_from, ctx->stream);
        update_range(t, weights_end, n, ctx->stream);
    }
    ctx->update_hook = NULL;
    ctx->optimizer_owns_half = 0;
}

int optimizer_slots(optimizer_kind kind) { return kind == OPTIMIZER_ADAMW ? 2 : 1; }

void trainer_init(trainer *t, model *m, job_context *ctx, optimizer_config opt, lr_schedule schedule,
                  float label_smoothing, int use_graph) {
    if (opt.kind == OPTIMIZER_ADAMW) {
        if (opt.beta1 == 0.0) opt.beta1 = 0.9;
        if (opt.beta2 == 0.0) opt.beta2 = 0.999;
        if (opt.eps == 0.0f) opt.eps = 1e-8f;
    }
    if (ctx->arena.optimizer_slots < optimizer_slots(opt.kind)) {
        fprintf(stderr, "trainer_init: the arena keeps %d optimizer slots, %s needs %d\n",
                ctx->arena.optimizer_slots, opt.kind == OPTIMIZER_ADAMW ? "AdamW" : "SGD",
                optimizer_slots(opt.kind));
        exit(1);
    }
    t->model = m, t->ctx = ctx, t->opt = opt, t->schedule = schedule;
    t->label_smoothing = label_smoothing, t->use_graph = use_graph;
    arena *a = &ctx->arena;
    /* Libraries set themselves up on first use, which must not happen during capture: run the
     * passes once eagerly. The BN running statistics that pass moves are put back afterwards. */
    size_t buffer_bytes = a->planned[ARENA_BUFFERS];
    void *saved = NULL;
    if (buffer_bytes) {
        CHECK_CUDA(cudaMalloc(&saved, buffer_bytes));
        CHECK_CUDA(cudaMemcpyAsync(saved, a->buffers, buffer_bytes, cudaMemcpyDeviceToDevice, ctx->stream));
    }
    m->forward(m, 1, ctx);
    softmax_ce_forward_backward(m->dlogits, &t->sums[0], &t->sums[1], m->logits, m->labels,
                                m->config.batch, m->config.classes, label_smoothing, ctx->stream);
    model_backward(m, ctx); /* with a data-parallel job's all-reduces (models/core/ddp.h) */
    if (buffer_bytes) {
        CHECK_CUDA(cudaMemcpyAsync(a->buffers, saved, buffer_bytes, cudaMemcpyDeviceToDevice, ctx->stream));
        CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
        CHECK_CUDA(cudaFree(saved));
    }
    CHECK_CUDA(cudaMemsetAsync(t->sums, 0, 2 * sizeof(float), ctx->stream));
    CHECK_CUDA(cudaMemsetAsync(t->step, 0, sizeof(int64_t), ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    if (!use_graph) return;
    CHECK_CUDA(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));
    trainer_step_body(t);
    CHECK_CUDA(cudaStreamEndCapture(ctx->stream, &t->graph));
    /* Node priorities: a weight-gradient lane's kernels (low priority) yield SMs to the chain. */
    CHECK_CUDA(cudaGraphInstantiate(&t->exec, t->graph, cudaGraphInstantiateFlagUseNodePriority));
    CHECK_CUDA(cudaGraphUpload(t->exec, ctx->stream));
}

static void copy_batch(trainer *t, const float *images, const int32_t *labels, int n) {
    model *m = t->model;
    size_t image_floats = (size_t)m->config.image_size * m->config.image_size * m->config.in_channels;
    size_t bytes = (size_t)n * (image_floats * sizeof(float) + sizeof(int32_t));
    int token = kernel_scope_enter(t->ctx->scopes, NULL, "input", KPASS_NONE, KCLASS_COPY, 0, 2.0 * (double)bytes);
    /* cudaMemcpyDefault: host batches from the loader, or images a GPU decoder made */
    CHECK_CUDA(cudaMemcpyAsync(m->input, images, (size_t)n * image_floats * sizeof(float), cudaMemcpyDefault,
                               t->ctx->stream));
    CHECK_CUDA(cudaMemcpyAsync(m->labels, labels, (size_t)n * sizeof(int32_t), cudaMemcpyDefault,
                               t->ctx->stream));
    kernel_scope_leave(token);
}

void trainer_take_batch(trainer *t, const float *images, const int32_t *labels) {
    copy_batch(t, images, labels, t->model->config.batch);
}

void trainer_run_step(trainer *t) {
    if (t->use_graph) CHECK_CUDA(cudaGraphLaunch(t->exec, t->ctx->stream));
    else trainer_step_body(t);
    t->model->num_batches_tracked++;
}

void trainer_step(trainer *t, const float *images, const int32_t *labels) {
    trainer_take_batch(t, images, labels);
    trainer_run_step(t);
}

void trainer_eval_batch(trainer *t, const float *images, const int32_t *labels, int n) {
    model *m = t->model;
    copy_batch(t, images, labels, n);
    m->forward(m, 0, t->ctx);
    softmax_ce_eval(&t->sums[0], &t->sums[1], m->logits, m->labels, n, m->config.classes,
                    t->label_smoothing, t->ctx->stream);
}

void trainer_take_sums(trainer *t, double *loss_sum, double *correct) {
    float host[2];
    CHECK_CUDA(cudaMemcpyAsync(host, t->sums, sizeof host, cudaMemcpyDeviceToHost, t->ctx->stream));
    CHECK_CUDA(cudaMemsetAsync(t->sums, 0, sizeof host, t->ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(t->ctx->stream));
    *loss_sum = host[0], *correct = host[1];
}

float trainer_current_lr(const trainer *t) {
    return lr_at(&t->schedule, (long)t->model->num_batches_tracked);
}

void trainer_free(trainer *t) {
    if (t->exec) CHECK_CUDA(cudaGraphExecDestroy(t->exec));
    if (t->graph) CHECK_CUDA(cudaGraphDestroy(t->graph));
    t->exec = NULL, t->graph = NULL;
}
