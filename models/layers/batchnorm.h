/* Batch normalisation layer over NHWC activations ([rows, C]), fused with an optional residual
 * add and an activation (kernels/batchnorm.cu): ACT_NONE, ACT_RELU (the residual joins before the
 * ReLU, as in ResNet) or ACT_SILU (the residual joins after the SiLU, as in EfficientNet's skip
 * blocks); see kernels/kernels.h. gamma/beta are trainable without weight decay; the running
 * statistics are buffers saved in checkpoints; mean/invstd of the last training forward are kept
 * for the backward pass. PyTorch defaults: eps 1e-5, momentum 0.1. Activations are float32, or
 * bfloat16 when the model sets type = ELEM_BF16 after init (statistics and parameters stay
 * float32). */
#ifndef SUITE_BATCHNORM_H
#define SUITE_BATCHNORM_H

#include <stdint.h>

#include "kernels/kernels.h"
#include "models/core/arena.h"
#include "models/core/context.h"

typedef struct batchnorm_layer {
    int rows, channels;
    act_kind act;
    elem_type type;  /* of x, residual, y and their gradients; ELEM_F32 after init */
    float eps, momentum;
    float *gamma, *beta, *gamma_grad, *beta_grad;
    float *running_mean, *running_var;
    float *mean, *invstd;
    uint32_t *relu_mask;  /* the ReLU's mask as bits, for a layer that joins a residual
                             (batchnorm_keep_relu_mask); NULL otherwise */
    int joined_residual;  /* the last training forward joined one: the mask is not x's alone */
    void *scratch; /* shared by every BN layer of a model (one stream): see batchnorm_attach_scratch */
} batchnorm_layer;

void batchnorm_init(batchnorm_layer *b, arena *a, int rows, int channels, act_kind act);
/* For a ReLU layer that will join a residual: keep the ReLU's mask as bits (rows * C / 8 bytes of
 * activations), which its backward reads instead of y. Nothing where the layout does not fit C
 * (bn_relu_mask_bytes); a ReLU without a residual needs neither, its mask is recomputed from x. */
void batchnorm_keep_relu_mask(batchnorm_layer *b, arena *a);
/* Scratch each layer needs; a model takes the maximum once and attaches it to all its layers. */
size_t batchnorm_scratch_bytes(const batchnorm_layer *b);
void batchnorm_attach_scratch(batchnorm_layer *b, void *scratch);
/* Sets gamma = gamma_value, beta = 0, running mean 0 and variance 1 (PyTorch's reset). */
void batchnorm_reset(batchnorm_layer *b, float gamma_value, job_context *ctx);

void batchnorm_forward(batchnorm_layer *b, void *y, const void *x, const void *residual, int training,
                       job_context *ctx);
void batchnorm_backward(batchnorm_layer *b, void *dx, void *dresidual, const void *dy, const void *x,
                        const void *y, job_context *ctx);

#endif
