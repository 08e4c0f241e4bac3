/* EfficientNetV2's pieces below the model (see efficientnet.h): the squeeze-excitation layer and
 * the three block kinds, each a forward over arena buffers and a backward through shared gradient
 * buffers. BN + SiLU is one fused pass (models/layers/batchnorm.h); the last BN of a block with a skip
 * adds the shortcut in the same pass, except in training with drop path, where the branch is
 * scaled per sample first (kernels/activation.h). A skip block's input gradient is accumulated
 * onto its output gradient in place (the first conv's backward-data adds into it), so the
 * shortcut costs no copy. Every layer takes the block's element type (float32 or bfloat16), so
 * the bf16 path is the same sequence of calls on tensors of half the size. */
#include "models/efficientnet_blocks.h"
#include "models/layers/layer_params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/activation.h"
#include "kernels/kernels.h"
#include "kernels/check.h"

/* ---- squeeze-excitation ---------------------------------------------------------------------*/

void squeeze_excite_init(squeeze_excite *se, arena *a, int batch, int hw, int channels, int reduced, elem_type type,
                         const squeeze_grads *shared) {
    memset(se, 0, sizeof *se);
    se->batch = batch, se->hw = hw, se->channels = channels, se->reduced = reduced, se->type = type;
    linear_init(&se->reduce, a, batch, channels, reduced);
    linear_init(&se->expand, a, batch, reduced, channels);
    se->reduce.type = se->expand.type = type;
    se->pooled = model_take_activations(a, type, (size_t)batch * channels);
    se->reduced_pre = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)batch * reduced);
    se->reduced_act = model_take_activations(a, type, (size_t)batch * reduced);
    se->gate_logits = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)batch * channels);
    if (shared) {
        se->grads = *shared;
    } else {
        se->grads.d_pooled = model_take_activations(a, type, (size_t)batch * channels);
        se->grads.d_reduced = model_take_activations(a, type, (size_t)batch * reduced);
        se->grads.d_gate = model_take_activations(a, type, (size_t)batch * channels);
    }
}

double squeeze_excite_flops(const squeeze_excite *se) {
    return linear_flops(&se->reduce) + linear_flops(&se->expand);
}

void squeeze_excite_setup(squeeze_excite *se, job_context *ctx) {
    linear_setup(&se->reduce, ctx);
    linear_setup(&se->expand, ctx);
}

void squeeze_excite_forward(squeeze_excite *se, void *y, const void *x, job_context *ctx) {
    int n = se->batch, c = se->channels;
    elem_type t = se->type;
    avgpool_global_forward(se->pooled, x, n, se->hw, c, t, ctx->stream);
    linear_forward(&se->reduce, se->reduced_pre, se->pooled, ctx);
    silu_forward(se->reduced_act, se->reduced_pre, (size_t)n * se->reduced, t, ctx->stream);
    linear_forward(&se->expand, se->gate_logits, se->reduced_act, ctx);
    se_scale_forward(y, x, se->gate_logits, n, se->hw, c, t, ctx->stream);
}

void squeeze_excite_backward(squeeze_excite *se, void *dx, const void *dy, const void *x, job_context *ctx) {
    int n = se->batch, c = se->channels;
    elem_type t = se->type;
    squeeze_grads *g = &se->grads;
    se_scale_backward_gate(g->d_gate, dy, x, se->gate_logits, n, se->hw, c, t, ctx->stream);
    linear_backward(&se->expand, g->d_reduced, g->d_gate, se->reduced_act, ctx);
    silu_backward(g->d_reduced, g->d_reduced, se->reduced_pre, (size_t)n * se->reduced, t, ctx->stream);
    linear_backward(&se->reduce, g->d_pooled, g->d_reduced, se->pooled, ctx);
    se_scale_backward_input(dx, dy, se->gate_logits, g->d_pooled, n, se->hw, c, t, ctx->stream);
}

void squeeze_excite_destroy(squeeze_excite *se) {
    linear_destroy(&se->reduce);
    linear_destroy(&se->expand);
}

/* ---- blocks -----------------------------------------------------------------------------------*/

static size_t max_z(size_t a, size_t b) { return a > b ? a : b; }

size_t effnet_block_init(effnet_block *b, arena *a, effnet_block_kind kind, int batch, int in_c, int out_c,
                         int expand, int stride, int size_in, float keep, elem_type type,
                         const squeeze_grads *se_grads) {
    memset(b, 0, sizeof *b);
    b->kind = kind, b->type = type, b->batch = batch, b->in_c = in_c, b->out_c = out_c, b->stride = stride;
    b->mid_c = kind == BLOCK_CONV_BN_ACT ? out_c : in_c * expand;
    b->size_in = size_in, b->size_out = conv_out_size(size_in, 3, stride, 1);
    b->has_skip = stride == 1 && in_c == out_c;
    b->keep = b->has_skip ? keep : 1.0f;
    b->drop_row = -1;
    int mid = b->mid_c;
    size_t rows_in = (size_t)batch * size_in * size_in, rows_out = (size_t)batch * b->size_out * b->size_out;
    size_t largest = rows_out * out_c;
    switch (kind) {
    case BLOCK_CONV_BN_ACT:
        model_conv_bn_init(&b->conv_in, &b->bn_in, a,
                           conv_shape_nhwc(batch, in_c, out_c, 3, stride, 1, size_in, size_in),
                           (int)rows_out, ACT_SILU, type);
        b->z1 = model_take_activations(a, type, rows_out * out_c);
        break;
    case BLOCK_FUSED_MBCONV:
        model_conv_bn_init(&b->conv_in, &b->bn_in, a, conv_shape_nhwc(batch, in_c, mid, 3, stride, 1, size_in, size_in),
                           (int)rows_out, ACT_SILU, type);
        model_conv_bn_init(&b->conv_pwl, &b->bn_out, a,
                           conv_shape_nhwc(batch, mid, out_c, 1, 1, 0, b->size_out, b->size_out), (int)rows_out,
                           ACT_NONE, type);
        b->z1 = model_take_activations(a, type, rows_out * mid);
        b->a1 = model_take_activations(a, type, rows_out * mid);
        b->z2 = model_take_activations(a, type, rows_out * out_c);
        largest = max_z(largest, rows_out * mid);
        break;
    case BLOCK_MBCONV: {
        /* timm: round(mid * 0.25 / expand), Python's round (half to even, as nearbyint) */
        int reduced = (int)nearbyint(mid * (0.25 / expand));
        model_conv_bn_init(&b->conv_in, &b->bn_in, a, conv_shape_nhwc(batch, in_c, mid, 1, 1, 0, size_in, size_in),
                           (int)rows_in, ACT_SILU, type);
        depthwise_layer_init(&b->dw, a, batch, mid, size_in, stride);
        b->dw.type = type;
        batchnorm_init(&b->bn_dw, a, (int)rows_out, mid, ACT_SILU);
        b->bn_dw.type = type;
        squeeze_excite_init(&b->se, a, batch, b->size_out * b->size_out, mid, reduced > 0 ? reduced : 1, type,
                            se_grads);
        model_conv_bn_init(&b->conv_pwl, &b->bn_out, a,
                           conv_shape_nhwc(batch, mid, out_c, 1, 1, 0, b->size_out, b->size_out), (int)rows_out,
                           ACT_NONE, type);
        b->z1 = model_take_activations(a, type, rows_in * mid);
        b->a1 = model_take_activations(a, type, rows_in * mid);
        b->z2 = model_take_activations(a, type, rows_out * mid);
        b->a2 = model_take_activations(a, type, rows_out * mid);
        b->a3 = model_take_activations(a, type, rows_out * mid);
        b->z3 = model_take_activations(a, type, rows_out * out_c);
        largest = max_z(largest, max_z(rows_in * mid, rows_out * mid));
        break;
    }
    }
    if (b->keep < 1.0f) b->branch = model_take_activations(a, type, rows_out * out_c);
    b->out = model_take_activations(a, type, rows_out * out_c);
    return largest;
}

double effnet_block_flops(const effnet_block *b) {
    double f = conv_flops(&b->conv_in);
    if (b->kind != BLOCK_CONV_BN_ACT) f += conv_flops(&b->conv_pwl);
    if (b->kind == BLOCK_MBCONV) f += depthwise_layer_flops(&b->dw) + squeeze_excite_flops(&b->se);
    return f;
}

/* The BN whose output is the block's (before the shortcut) and what it normalises. */
static batchnorm_layer *last_bn(effnet_block *b) { return b->kind == BLOCK_CONV_BN_ACT ? &b->bn_in : &b->bn_out; }
static const void *last_z(const effnet_block *b) {
    return b->kind == BLOCK_CONV_BN_ACT ? b->z1 : b->kind == BLOCK_FUSED_MBCONV ? b->z2 : b->z3;
}

size_t effnet_block_setup(effnet_block *b, void *dx, const effnet_grads *g, conv_algo_cache *cache,
                          depthwise_cache *dw_cache, job_context *ctx) {
    conv_setup(&b->conv_in, b->z1, b->x, dx, b->has_skip, cache, ctx);
    size_t workspace = b->conv_in.algos.workspace_bytes;
    if (b->kind == BLOCK_FUSED_MBCONV) {
        conv_setup(&b->conv_pwl, b->z2, b->a1, g->g[1], 0, cache, ctx);
        workspace = max_z(workspace, b->conv_pwl.algos.workspace_bytes);
    } else if (b->kind == BLOCK_MBCONV) {
        depthwise_layer_setup(&b->dw, b->z2, b->a1, g->g[1], dw_cache, ctx);
        conv_setup(&b->conv_pwl, b->z3, b->a3, g->g[1], 0, cache, ctx);
        workspace = max_z(workspace, max_z(b->dw.choice.workspace_bytes, b->conv_pwl.algos.workspace_bytes));
    }
    return workspace;
}

/* The last BN, then the shortcut: fused into the BN pass, or after a per-sample drop-path scale. */
static void finish_forward(effnet_block *b, int training, const float *drop_scale, job_context *ctx) {
    batchnorm_layer *bn = last_bn(b);
    if (training && b->drop_row >= 0) {
        int hw = b->size_out * b->size_out;
        batchnorm_forward(bn, b->branch, last_z(b), NULL, training, ctx);
        drop_path_add_forward(b->out, b->x, b->branch, drop_scale + (size_t)b->drop_row * b->batch, b->batch, hw,
                              b->out_c, b->type, ctx->stream);
    } else {
        batchnorm_forward(bn, b->out, last_z(b), b->has_skip ? b->x : NULL, training, ctx);
    }
}

void effnet_block_forward(effnet_block *b, int training, const float *drop_scale, job_context *ctx) {
    conv_forward(&b->conv_in, b->z1, b->x, ctx);
    if (b->kind == BLOCK_FUSED_MBCONV) {
        batchnorm_forward(&b->bn_in, b->a1, b->z1, NULL, training, ctx);
        conv_forward(&b->conv_pwl, b->z2, b->a1, ctx);
    } else if (b->kind == BLOCK_MBCONV) {
        batchnorm_forward(&b->bn_in, b->a1, b->z1, NULL, training, ctx);
        depthwise_layer_forward(&b->dw, b->z2, b->a1, ctx);
        batchnorm_forward(&b->bn_dw, b->a2, b->z2, NULL, training, ctx);
        squeeze_excite_forward(&b->se, b->a3, b->a2, ctx);
        conv_forward(&b->conv_pwl, b->z3, b->a3, ctx);
    }
    finish_forward(b, training, drop_scale, ctx);
}

/* Gradient of the last BN's input into g[0]; the drop-path scale first goes through g[1]. */
static void start_backward(effnet_block *b, void *dout, const effnet_grads *g, job_context *ctx) {
    const void *dy = dout;
    if (b->drop_row >= 0) {
        int hw = b->size_out * b->size_out;
        drop_path_backward(g->g[1], dout, g->drop_scale + (size_t)b->drop_row * b->batch, b->batch, hw, b->out_c,
                           b->type, ctx->stream);
        dy = g->g[1];
    }
    batchnorm_backward(last_bn(b), g->g[0], NULL, dy, last_z(b), b->drop_row >= 0 ? b->branch : b->out, ctx);
}

void effnet_block_backward(effnet_block *b, void *dx, void *dout, const effnet_grads *g, job_context *ctx) {
    if (b->has_skip && dx != dout) {
        fprintf(stderr, "effnet_block_backward: a block with a skip accumulates its input gradient onto its "
                "output gradient, so dx must be dout\n");
        exit(2);
    }
    void *g0 = g->g[0], *g1 = g->g[1], *g2 = g->g[2];
    start_backward(b, dout, g, ctx);
    if (b->kind == BLOCK_CONV_BN_ACT) {
        conv_backward(&b->conv_in, dx, g0, b->x, ctx);
        return;
    }
    if (b->kind == BLOCK_FUSED_MBCONV) {
        conv_backward(&b->conv_pwl, g1, g0, b->a1, ctx);
        batchnorm_backward(&b->bn_in, g2, NULL, g1, b->z1, b->a1, ctx);
    } else {
        conv_backward(&b->conv_pwl, g1, g0, b->a3, ctx);
        squeeze_excite_backward(&b->se, g2, g1, b->a2, ctx);
        batchnorm_backward(&b->bn_dw, g0, NULL, g2, b->z2, b->a2, ctx);
        depthwise_layer_backward(&b->dw, g1, g0, b->a1, ctx);
        batchnorm_backward(&b->bn_in, g2, NULL, g1, b->z1, b->a1, ctx);
    }
    conv_backward(&b->conv_in, dx, g2, b->x, ctx); /* with a skip: adds onto dout, the shortcut's gradient */
}

void effnet_block_destroy(effnet_block *b) {
    conv_destroy(&b->conv_in);
    conv_destroy(&b->conv_pwl);
    depthwise_layer_destroy(&b->dw);
    if (b->kind == BLOCK_MBCONV) squeeze_excite_destroy(&b->se);
}
