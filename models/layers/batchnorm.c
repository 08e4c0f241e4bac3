#include "models/layers/batchnorm.h"

#include <string.h>

#include "kernels/kernels.h"

void batchnorm_init(batchnorm_layer *b, arena *a, int rows, int channels, act_kind act) {
    memset(b, 0, sizeof *b);
    b->rows = rows, b->channels = channels, b->act = act;
    b->eps = 1e-5f, b->momentum = 0.1f;
    b->gamma = arena_take_floats(a, ARENA_NO_DECAY, channels);
    b->beta = arena_take_floats(a, ARENA_NO_DECAY, channels);
    b->running_mean = arena_take_floats(a, ARENA_BUFFERS, channels);
    b->running_var = arena_take_floats(a, ARENA_BUFFERS, channels);
    b->mean = arena_take_floats(a, ARENA_SCRATCH, channels);
    b->invstd = arena_take_floats(a, ARENA_SCRATCH, channels);
    if (!a->planning) {
        b->gamma_grad = arena_grad_of(a, b->gamma);
        b->beta_grad = arena_grad_of(a, b->beta);
    }
}

void batchnorm_keep_relu_mask(batchnorm_layer *b, arena *a) {
    size_t bytes = b->act == ACT_RELU ? bn_relu_mask_bytes(b->rows, b->channels) : 0;
    if (bytes) b->relu_mask = arena_take(a, ARENA_ACTIVATIONS, bytes);
}

size_t batchnorm_scratch_bytes(const batchnorm_layer *b) { return bn_scratch_bytes(b->rows, b->channels); }
void batchnorm_attach_scratch(batchnorm_layer *b, void *scratch) { b->scratch = scratch; }

void batchnorm_reset(batchnorm_layer *b, float gamma_value, job_context *ctx) {
    fill_float(b->gamma, gamma_value, b->channels, ctx->stream);
    fill_float(b->beta, 0.0f, b->channels, ctx->stream);
    fill_float(b->running_mean, 0.0f, b->channels, ctx->stream);
    fill_float(b->running_var, 1.0f, b->channels, ctx->stream);
}

/* The kernel trace's bytes per pass (models/core/kernel_scope.h): the training forward reads x
 * twice (statistics, then the normalisation) and the residual, and writes y; the backward reads dy
 * and x twice (the reductions, then the input gradient) and writes dx and the residual's. No FLOPs:
 * a few per element, next to the bytes. */
static double bn_bytes(const batchnorm_layer *b, int backward, int residual) {
    double n = (double)b->rows * b->channels * (double)elem_bytes(b->type);
    return backward ? n * (4 + 1 + residual) : n * (2 + 1 + residual);
}

void batchnorm_forward(batchnorm_layer *b, void *y, const void *x, const void *residual, int training,
                       job_context *ctx) {
    int token = ctx->scopes ? kernel_scope_enter(ctx->scopes, b->gamma, NULL, KPASS_FORWARD, KCLASS_BATCHNORM, 0,
                                                 bn_bytes(b, 0, residual != NULL))
                            : -1;
    if (!training) {
        bn_act_forward_infer(y, x, residual, b->gamma, b->beta, b->running_mean, b->running_var, b->rows,
                             b->channels, b->eps, b->act, b->type, ctx->stream);
    } else {
        b->joined_residual = residual != NULL;
        bn_act_forward_train(y, b->relu_mask, b->mean, b->invstd, b->running_mean, b->running_var, x, residual,
                             b->gamma, b->beta, b->rows, b->channels, b->eps, b->momentum, b->act, b->type,
                             b->scratch, ctx->stream);
    }
    kernel_scope_leave(token);
}

void batchnorm_backward(batchnorm_layer *b, void *dx, void *dresidual, const void *dy, const void *x,
                        const void *y, job_context *ctx) {
    /* The mask comes from the bits, else from x where no residual joined, else from y. */
    const void *mask_y = b->relu_mask || !b->joined_residual ? NULL : y;
    int token = ctx->scopes ? kernel_scope_enter(ctx->scopes, b->gamma, NULL, KPASS_BACKWARD, KCLASS_BATCHNORM, 0,
                                                 bn_bytes(b, 1, dresidual != NULL))
                            : -1;
    bn_act_backward(dx, dresidual, b->gamma_grad, b->beta_grad, dy, x, mask_y, b->relu_mask, b->gamma, b->beta,
                    b->mean, b->invstd, b->rows, b->channels, b->act, b->type, b->scratch, ctx->stream);
    kernel_scope_leave(token);
    context_grad_ready(ctx, b->gamma), context_grad_ready(ctx, b->beta);
}
