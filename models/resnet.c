#include "models/resnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "models/layers/batchnorm.h"
#include "kernels/check.h"
#include "models/layers/conv.h"
#include "models/layers/layer_params.h"
#include "models/layers/linear.h"

typedef struct bottleneck {
    conv_layer conv1, conv2, conv3, ds_conv;
    batchnorm_layer bn1, bn2, bn3, ds_bn;
    int has_downsample;
    const void *x;            /* block input: the previous block's output */
    void *z1, *a1, *z2, *a2;  /* conv outputs and their BN+ReLU outputs */
    void *z3, *out;           /* conv3 output; relu(bn3(z3) + shortcut) (the last block's: forward
                                 only, in grad_boundary[1]) */
    void *zd, *ad;            /* downsample conv output and its BN output (forward only: in grad_zd) */
} bottleneck;

/* Activations and their gradients are of one element type (model_activation_type): float32, or
 * bfloat16 under --precision bf16, where the float32 input is cast once per forward (as autocast
 * casts a convolution's input) and the float32 dlogits once per backward. */
typedef struct resnet {
    elem_type type;
    conv_layer conv1;
    batchnorm_layer bn1;
    void *input_half, *dlogits_half; /* bfloat16 only */
    void *z0, *a0, *pooled;   /* a0: forward only, in grad_boundary[0] */
    uint8_t *argmax;
    int stem_size, pool_size;
    int block_count;
    bottleneck *blocks;
    void *features;           /* [batch, 2048] */
    linear_layer fc;
    /* gradients: block boundaries ping-pong; the rest are per-role buffers sized for the largest use:
     * of a block's activations a1, a2 (what a data gradient writes, then batch norm's backward
     * turns into grad_z1, grad_z2 in place, which a weight gradient reads) and of the shortcut
     * (grad_zd in place); conv3's output gradient goes over the block's output gradient (see
     * resnet_build) */
    void *grad_boundary[2], *grad_shortcut, *grad_a1, *grad_a2, *grad_z1, *grad_z2, *grad_zd;
    void *grad_a0, *grad_z0, *grad_features;
    void *bn_scratch;
    conv_algo_cache cache;
    int use_lane;             /* weight gradients beside the backward chain (SUITE_WGRAD_LANE) */
    wgrad_lane lane;
} resnet;

/* A weight gradient reads its convolution's output gradient (grad_z1..3, grad_zd), which the chain
 * overwrites in the next block (the next downsample block, for grad_zd). Until then the chain runs
 * at least two more convolutions' data gradients (the block's other ones), so the lane job issued
 * two jobs earlier is the one the chain must wait for. Two copies of those buffers, blocks taking
 * them in turn (a lag of 5), measured no faster, so the lag stays at what one copy allows. */
#define RESNET_LANE_LAG 2

static const int STAGE_BLOCKS[3][4] = {{2, 2, 2, 2}, {3, 4, 6, 3}, {3, 8, 36, 3}};

int resnet_depth_of(const char *name) {
    if (strcmp(name, "resnet26") == 0) return 26;
    if (strcmp(name, "resnet50") == 0) return 50;
    if (strcmp(name, "resnet152") == 0) return 152;
    return 0;
}

/* ---- parameter table -------------------------------------------------------------------------*/

static void add_linear_params(model *m, const char *prefix, const linear_layer *l) {
    param_entry w = {0}, b = {0};
    snprintf(w.name, sizeof w.name, "%sweight", prefix);
    w.kind = PARAM_WEIGHT, w.ndim = 2, w.shape[0] = l->out_features, w.shape[1] = l->in_features;
    w.init = PARAM_INIT_UNIFORM_FAN_IN, w.fan = l->in_features, w.data = l->weight;
    snprintf(b.name, sizeof b.name, "%sbias", prefix);
    b.kind = PARAM_NO_DECAY, b.ndim = 1, b.shape[0] = l->out_features;
    b.init = PARAM_INIT_UNIFORM_FAN_IN, b.fan = l->in_features, b.data = l->bias;
    param_table_add(&m->params, &w);
    param_table_add(&m->params, &b);
}

/* ---- building --------------------------------------------------------------------------------*/

static size_t max_z(size_t a, size_t b) { return a > b ? a : b; }

typedef struct grad_sizes {
    size_t boundary, shortcut, mid2, mid1;
} grad_sizes;

/* last: the model's last block, whose output only the forward reads (resnet_build places it) */
static void build_block(bottleneck *blk, model *m, arena *a, const char *prefix, int batch, int in_c,
                        int planes, int stride, int size_in, int last, elem_type type, grad_sizes *gs) {
    int out_c = planes * 4, size_out = conv_out_size(size_in, 3, stride, 1);
    size_t rows_in = (size_t)batch * size_in * size_in, rows_out = (size_t)batch * size_out * size_out;
    char name[PARAM_NAME_MAX];
    blk->has_downsample = stride != 1 || in_c != out_c;

    model_conv_bn_init(&blk->conv1, &blk->bn1, a, conv_shape_nhwc(batch, in_c, planes, 1, 1, 0, size_in, size_in),
                       (int)rows_in, ACT_RELU, type);
    model_conv_bn_init(&blk->conv2, &blk->bn2, a,
                       conv_shape_nhwc(batch, planes, planes, 3, stride, 1, size_in, size_in),
                       (int)rows_out, ACT_RELU, type);
    model_conv_bn_init(&blk->conv3, &blk->bn3, a, conv_shape_nhwc(batch, planes, out_c, 1, 1, 0, size_out, size_out),
                       (int)rows_out, ACT_RELU, type);
    batchnorm_keep_relu_mask(&blk->bn3, a); /* it joins the shortcut: bits instead of a read of out */
    snprintf(name, sizeof name, "%sconv1.", prefix), layer_params_conv(m, name, &blk->conv1);
    snprintf(name, sizeof name, "%sbn1.", prefix), layer_params_batchnorm(m, name, &blk->bn1);
    snprintf(name, sizeof name, "%sconv2.", prefix), layer_params_conv(m, name, &blk->conv2);
    snprintf(name, sizeof name, "%sbn2.", prefix), layer_params_batchnorm(m, name, &blk->bn2);
    snprintf(name, sizeof name, "%sconv3.", prefix), layer_params_conv(m, name, &blk->conv3);
    snprintf(name, sizeof name, "%sbn3.", prefix), layer_params_batchnorm(m, name, &blk->bn3);
    if (blk->has_downsample) {
        model_conv_bn_init(&blk->ds_conv, &blk->ds_bn, a,
                           conv_shape_nhwc(batch, in_c, out_c, 1, stride, 0, size_in, size_in),
                           (int)rows_out, ACT_NONE, type);
        snprintf(name, sizeof name, "%sdownsample.0.", prefix), layer_params_conv(m, name, &blk->ds_conv);
        snprintf(name, sizeof name, "%sdownsample.1.", prefix), layer_params_batchnorm(m, name, &blk->ds_bn);
    }
    blk->z1 = model_take_activations(a, type, rows_in * planes);
    blk->a1 = model_take_activations(a, type, rows_in * planes);
    blk->z2 = model_take_activations(a, type, rows_out * planes);
    blk->a2 = model_take_activations(a, type, rows_out * planes);
    blk->z3 = model_take_activations(a, type, rows_out * out_c);
    if (!last) blk->out = model_take_activations(a, type, rows_out * out_c);
    if (blk->has_downsample) {
        blk->zd = model_take_activations(a, type, rows_out * out_c);
        gs->shortcut = max_z(gs->shortcut, rows_out * out_c);
    }
    gs->boundary = max_z(gs->boundary, max_z(rows_in * in_c, rows_out * out_c));
    gs->mid2 = max_z(gs->mid2, rows_out * planes);
    gs->mid1 = max_z(gs->mid1, rows_in * planes);
}

static void resnet_setup(model *m, job_context *ctx);
static void resnet_forward(model *m, int training, job_context *ctx);
static void resnet_backward(model *m, job_context *ctx);
static void resnet_destroy(model *m);

model *resnet_build(const model_config *config, arena *a, char *err, size_t err_size) {
    int depth = resnet_depth_of(config->name);
    if (depth == 0) {
        snprintf(err, err_size, "unknown ResNet '%s': expected resnet26, resnet50 or resnet152", config->name);
        return NULL;
    }
    if (config->image_size < 8 || config->image_size > 2048 || config->batch < 1 ||
        config->batch > 65536 || config->classes < 1 || config->classes > 1000000 ||
        config->in_channels < 1 || config->in_channels > 64) {
        snprintf(err, err_size, "%s: impossible sizes (image %d, batch %d, classes %d, channels %d): "
                 "expected image 8..2048, batch 1..65536, classes 1..1000000, channels 1..64",
                 config->name, config->image_size, config->batch, config->classes, config->in_channels);
        return NULL;
    }
    const int *stage_blocks = STAGE_BLOCKS[depth == 26 ? 0 : depth == 50 ? 1 : 2];
    model *m = calloc(1, sizeof *m);
    resnet *r = calloc(1, sizeof *r);
    if (!m || !r) {
        snprintf(err, err_size, "out of host memory building %s", config->name);
        free(m), free(r);
        return NULL;
    }
    m->config = *config;
    m->impl = r;
    m->setup = resnet_setup, m->forward = resnet_forward, m->backward = resnet_backward;
    m->destroy = resnet_destroy;
    int n = config->batch, s = config->image_size;
    elem_type type = r->type = model_activation_type(config);
    r->use_lane = wgrad_lane_asked(); /* the plan holds the lane's workspace wherever it is asked for */
    m->side_workspaces = r->use_lane;

    size_t input_floats = (size_t)n * s * s * config->in_channels;
    m->input = arena_take_floats(a, ARENA_ACTIVATIONS, input_floats);
    if (type == ELEM_BF16) r->input_half = model_take_activations(a, type, input_floats);
    conv_shape stem = conv_shape_nhwc(n, config->in_channels, 64, 7, 2, 3, s, s);
    r->stem_size = stem.h_out;
    r->pool_size = conv_out_size(r->stem_size, 3, 2, 1);
    size_t stem_rows = (size_t)n * r->stem_size * r->stem_size;
    model_conv_bn_init(&r->conv1, &r->bn1, a, stem, (int)stem_rows, ACT_RELU, type);
    layer_params_conv(m, "conv1.", &r->conv1);
    layer_params_batchnorm(m, "bn1.", &r->bn1);
    r->z0 = model_take_activations(a, type, stem_rows * 64);
    r->pooled = model_take_activations(a, type, (size_t)n * r->pool_size * r->pool_size * 64);
    r->argmax = arena_take(a, ARENA_ACTIVATIONS, (size_t)n * r->pool_size * r->pool_size * 64);

    for (int i = 0; i < 4; i++) r->block_count += stage_blocks[i];
    r->blocks = calloc((size_t)r->block_count, sizeof *r->blocks);
    grad_sizes gs = {(size_t)n * r->pool_size * r->pool_size * 64, 0, 0, 0};
    int in_c = 64, size = r->pool_size, b = 0;
    for (int stage = 0; stage < 4; stage++) {
        int planes = 64 << stage;
        for (int i = 0; i < stage_blocks[stage]; i++, b++) {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "layer%d.%d.", stage + 1, i);
            int stride = (i == 0 && stage > 0) ? 2 : 1;
            build_block(&r->blocks[b], m, a, prefix, n, in_c, planes, stride, size, b == r->block_count - 1, type,
                        &gs);
            r->blocks[b].x = b == 0 ? r->pooled : r->blocks[b - 1].out;
            size = r->blocks[b].conv2.shape.h_out;
            in_c = planes * 4;
        }
    }
    r->features = model_take_activations(a, type, (size_t)n * in_c);
    linear_init(&r->fc, a, n, in_c, config->classes);
    r->fc.type = type;
    add_linear_params(m, "fc.", &r->fc);
    m->logits = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)n * config->classes);
    m->dlogits = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)n * config->classes);
    if (type == ELEM_BF16) r->dlogits_half = model_take_activations(a, type, (size_t)n * config->classes);
    m->labels = arena_take(a, ARENA_SCRATCH, (size_t)n * sizeof(int32_t));

    /* The gradient buffers are dead during the forward pass, so they also hold what only the
     * forward reads: the stem's BN output (maxpool's backward reads its argmax; BN's backward
     * recomputes the ReLU's mask from z0), the downsample BN outputs (the shortcut's BN has no
     * activation to mask) and the last block's output (the pooling reads it; its BN's backward
     * reads the ReLU's mask bits instead).
     * Batch norm's backward writes its input gradient over its output gradient (each element is
     * read, then written, by one thread), and a weight gradient on the lane reads it there until
     * the chain next writes that buffer, at least RESNET_LANE_LAG jobs later: bn1 and bn2 turn
     * grad_a1, grad_a2 into grad_z1, grad_z2 (the next writers: the next block's conv2 and conv3
     * data gradients); bn3 turns the block's output gradient into grad_z3 (the next writer: the
     * next block's bn3 or downsample data gradient, after this block's conv1 job), the
     * shortcut's BN grad_shortcut into grad_zd (until the next downsample block) and the stem's
     * the boundary buffer the first block did not read its output gradient from. */
    size_t stem_floats = stem_rows * 64;
    gs.boundary = max_z(gs.boundary, stem_floats);
    for (int i = 0; i < 2; i++) r->grad_boundary[i] = model_take_activations(a, type, gs.boundary);
    r->grad_a2 = model_take_activations(a, type, gs.mid2);
    r->grad_a1 = model_take_activations(a, type, gs.mid1);
    r->grad_z2 = r->grad_a2;
    r->grad_z1 = r->grad_a1;
    r->grad_shortcut = r->grad_zd = model_take_activations(a, type, gs.shortcut);
    r->a0 = r->grad_boundary[0];
    r->blocks[r->block_count - 1].out = r->grad_boundary[1];
    for (b = 0; b < r->block_count; b++)
        if (r->blocks[b].has_downsample) r->blocks[b].ad = r->grad_zd;
    /* resnet_backward's boundaries alternate, one per block: the stem's output gradient arrives in
     * grad_boundary[block_count % 2] */
    r->grad_a0 = r->grad_z0 = r->grad_boundary[1 - r->block_count % 2];
    r->grad_features = model_take_activations(a, type, (size_t)n * in_c);

    /* One BN scratch for the whole model: all BN layers run one after another on one stream. */
    size_t scratch = batchnorm_scratch_bytes(&r->bn1);
    for (b = 0; b < r->block_count; b++) {
        bottleneck *blk = &r->blocks[b];
        scratch = max_z(scratch, max_z(batchnorm_scratch_bytes(&blk->bn1), batchnorm_scratch_bytes(&blk->bn2)));
        scratch = max_z(scratch, batchnorm_scratch_bytes(&blk->bn3));
    }
    r->bn_scratch = arena_take(a, ARENA_SCRATCH, scratch);
    batchnorm_attach_scratch(&r->bn1, r->bn_scratch);
    for (b = 0; b < r->block_count; b++) {
        bottleneck *blk = &r->blocks[b];
        batchnorm_attach_scratch(&blk->bn1, r->bn_scratch);
        batchnorm_attach_scratch(&blk->bn2, r->bn_scratch);
        batchnorm_attach_scratch(&blk->bn3, r->bn_scratch);
        if (blk->has_downsample) batchnorm_attach_scratch(&blk->ds_bn, r->bn_scratch);
    }

    m->flops_per_step_forward = conv_flops(&r->conv1) + linear_flops(&r->fc);
    for (b = 0; b < r->block_count; b++) {
        bottleneck *blk = &r->blocks[b];
        m->flops_per_step_forward += conv_flops(&blk->conv1) + conv_flops(&blk->conv2) + conv_flops(&blk->conv3);
        if (blk->has_downsample) m->flops_per_step_forward += conv_flops(&blk->ds_conv);
    }
    return m;
}

/* ---- set-up: descriptors, algorithm search, initial values ----------------------------------*/

static void resnet_setup(model *m, job_context *ctx) {
    resnet *r = m->impl;
    /* The search runs the candidates on the real buffers: give them non-zero contents. */
    fill_float((float *)ctx->arena.activations, 0.5f, ctx->arena.planned[ARENA_ACTIVATIONS] / sizeof(float),
               ctx->stream);
    context_reserve_workspace(ctx, ctx->workspace_limit);
    conv_setup(&r->conv1, r->z0, r->type == ELEM_BF16 ? r->input_half : m->input, NULL, 0, &r->cache, ctx);
    size_t workspace = r->conv1.algos.workspace_bytes;
    for (int b = 0; b < r->block_count; b++) {
        bottleneck *blk = &r->blocks[b];
        conv_setup(&blk->conv1, blk->z1, blk->x, r->grad_boundary[0], 1, &r->cache, ctx);
        conv_setup(&blk->conv2, blk->z2, blk->a1, r->grad_a1, 0, &r->cache, ctx);
        conv_setup(&blk->conv3, blk->z3, blk->a2, r->grad_a2, 0, &r->cache, ctx);
        workspace = max_z(workspace, max_z(blk->conv1.algos.workspace_bytes, blk->conv2.algos.workspace_bytes));
        workspace = max_z(workspace, blk->conv3.algos.workspace_bytes);
        if (blk->has_downsample) {
            conv_setup(&blk->ds_conv, blk->zd, blk->x, r->grad_boundary[0], 0, &r->cache, ctx);
            workspace = max_z(workspace, blk->ds_conv.algos.workspace_bytes);
        }
    }
    context_set_workspace(ctx, workspace);
    m->wgrad_lane = wgrad_lane_choose(ctx);
    r->use_lane = m->side_workspaces = m->wgrad_lane.in_effect;
    if (r->use_lane) {
        /* the lane runs weight gradients only: its workspace holds the largest of those alone */
        size_t lane_workspace = r->conv1.wgrad_workspace_bytes;
        for (int b = 0; b < r->block_count; b++) {
            const bottleneck *blk = &r->blocks[b];
            lane_workspace = max_z(lane_workspace, max_z(blk->conv1.wgrad_workspace_bytes,
                                                         blk->conv2.wgrad_workspace_bytes));
            lane_workspace = max_z(lane_workspace, blk->conv3.wgrad_workspace_bytes);
            if (blk->has_downsample) lane_workspace = max_z(lane_workspace, blk->ds_conv.wgrad_workspace_bytes);
        }
        wgrad_lane_init(&r->lane, ctx, lane_workspace, RESNET_LANE_LAG);
        m->side_workspace_bytes = lane_workspace;
    }
    linear_setup(&r->fc, ctx);

    model_init_params(m, ctx);
    batchnorm_reset(&r->bn1, 1.0f, ctx);
    for (int b = 0; b < r->block_count; b++) {
        bottleneck *blk = &r->blocks[b];
        batchnorm_reset(&blk->bn1, 1.0f, ctx);
        batchnorm_reset(&blk->bn2, 1.0f, ctx);
        batchnorm_reset(&blk->bn3, 0.0f, ctx); /* timm zero_init_last */
        if (blk->has_downsample) batchnorm_reset(&blk->ds_bn, 1.0f, ctx);
    }
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
}

/* ---- passes ----------------------------------------------------------------------------------*/

/* The kernel trace's scope of work that is not a layer's own (models/core/kernel_scope.h); bytes:
 * `elements` read or written once in the activations' type. */
static int mark(const resnet *r, job_context *ctx, const char *name, kernel_pass pass, kernel_class cls,
                double elements) {
    return kernel_scope_enter(ctx->scopes, NULL, name, pass, cls, 0, elements * (double)elem_bytes(r->type));
}

static double stem_elements(const resnet *r) {
    const conv_shape *stem = &r->conv1.shape;
    return (double)stem->batch * 64 * (r->stem_size * r->stem_size + 2.0 * r->pool_size * r->pool_size);
}

static double features_elements(const resnet *r) {
    const conv_shape *last = &r->blocks[r->block_count - 1].conv3.shape;
    return (double)last->batch * last->out_c * (last->h_out * last->w_out + 1.0);
}

static void resnet_forward(model *m, int training, job_context *ctx) {
    resnet *r = m->impl;
    const conv_shape *stem = &r->conv1.shape;
    const void *input = m->input;
    if (r->type == ELEM_BF16) {
        model_weights_to_half(ctx);
        size_t input_floats = (size_t)stem->batch * stem->h_in * stem->w_in * stem->in_c;
        int token = mark(r, ctx, "input.to_bf16", KPASS_FORWARD, KCLASS_ELEMENTWISE, 3.0 * (double)input_floats);
        cast_f32_to_bf16(r->input_half, m->input, input_floats, ctx->stream);
        kernel_scope_leave(token);
        input = r->input_half;
    }
    conv_forward(&r->conv1, r->z0, input, ctx);
    batchnorm_forward(&r->bn1, r->a0, r->z0, NULL, training, ctx);
    int token = mark(r, ctx, "maxpool", KPASS_FORWARD, KCLASS_POOLING, stem_elements(r));
    maxpool_forward(r->pooled, r->argmax, r->a0, stem->batch, r->stem_size, r->stem_size, 64, 3, 2, 1,
                    r->pool_size, r->pool_size, r->type, ctx->stream);
    kernel_scope_leave(token);
    for (int b = 0; b < r->block_count; b++) {
        bottleneck *blk = &r->blocks[b];
        conv_forward(&blk->conv1, blk->z1, blk->x, ctx);
        batchnorm_forward(&blk->bn1, blk->a1, blk->z1, NULL, training, ctx);
        conv_forward(&blk->conv2, blk->z2, blk->a1, ctx);
        batchnorm_forward(&blk->bn2, blk->a2, blk->z2, NULL, training, ctx);
        conv_forward(&blk->conv3, blk->z3, blk->a2, ctx);
        const void *shortcut = blk->x;
        if (blk->has_downsample) {
            conv_forward(&blk->ds_conv, blk->zd, blk->x, ctx);
            batchnorm_forward(&blk->ds_bn, blk->ad, blk->zd, NULL, training, ctx);
            shortcut = blk->ad;
        }
        batchnorm_forward(&blk->bn3, blk->out, blk->z3, shortcut, training, ctx);
    }
    const conv_shape *last = &r->blocks[r->block_count - 1].conv3.shape;
    token = mark(r, ctx, "global_pool", KPASS_FORWARD, KCLASS_POOLING, features_elements(r));
    avgpool_global_forward(r->features, r->blocks[r->block_count - 1].out, last->batch,
                           last->h_out * last->w_out, last->out_c, r->type, ctx->stream);
    kernel_scope_leave(token);
    linear_forward(&r->fc, m->logits, r->features, ctx);
}

/* dout: the block's output gradient, which becomes conv3's (grad_z3) in place */
static void block_backward(resnet *r, bottleneck *blk, void *dx, void *dout, wgrad_lane *lane, job_context *ctx) {
    void *grad_z3 = dout;
    if (blk->has_downsample) {
        batchnorm_backward(&blk->bn3, grad_z3, r->grad_shortcut, dout, blk->z3, blk->out, ctx);
        batchnorm_backward(&blk->ds_bn, r->grad_zd, NULL, r->grad_shortcut, blk->zd, blk->ad, ctx);
        conv_backward_lane(&blk->ds_conv, dx, r->grad_zd, blk->x, lane, ctx);
    } else {
        batchnorm_backward(&blk->bn3, grad_z3, dx, dout, blk->z3, blk->out, ctx);
    }
    conv_backward_lane(&blk->conv3, r->grad_a2, grad_z3, blk->a2, lane, ctx);
    batchnorm_backward(&blk->bn2, r->grad_z2, NULL, r->grad_a2, blk->z2, blk->a2, ctx);
    conv_backward_lane(&blk->conv2, r->grad_a1, r->grad_z2, blk->a1, lane, ctx);
    batchnorm_backward(&blk->bn1, r->grad_z1, NULL, r->grad_a1, blk->z1, blk->a1, ctx);
    conv_backward_lane(&blk->conv1, dx, r->grad_z1, blk->x, lane, ctx); /* adds onto the shortcut's gradient */
}

static void resnet_backward(model *m, job_context *ctx) {
    resnet *r = m->impl;
    const conv_shape *last = &r->blocks[r->block_count - 1].conv3.shape;
    const void *dlogits = m->dlogits;
    wgrad_lane *lane = r->use_lane && !ctx->grad_hooks ? &r->lane : NULL;
    if (r->type == ELEM_BF16) {
        size_t n = (size_t)m->config.batch * m->config.classes;
        int token = mark(r, ctx, "dlogits.to_bf16", KPASS_BACKWARD, KCLASS_ELEMENTWISE, 3.0 * (double)n);
        cast_f32_to_bf16(r->dlogits_half, m->dlogits, n, ctx->stream);
        kernel_scope_leave(token);
        dlogits = r->dlogits_half;
    }
    linear_backward(&r->fc, r->grad_features, dlogits, r->features, ctx);
    int current = 0;
    int token = mark(r, ctx, "global_pool", KPASS_BACKWARD, KCLASS_POOLING, features_elements(r));
    avgpool_global_backward(r->grad_boundary[current], r->grad_features, last->batch,
                            last->h_out * last->w_out, last->out_c, r->type, ctx->stream);
    kernel_scope_leave(token);
    for (int b = r->block_count - 1; b >= 0; b--) {
        block_backward(r, &r->blocks[b], r->grad_boundary[1 - current], r->grad_boundary[current], lane, ctx);
        current = 1 - current;
        /* This block's and all later weights are final once the lane has their gradients (its
         * order) and the chain is past their data gradients (the follow point). */
        if (lane && ctx->update_hook)
            ctx->update_hook->final_from(ctx->update_hook->user, r->blocks[b].conv1.weight,
                                         wgrad_lane_follow(lane, ctx->stream));
    }
    const conv_shape *stem = &r->conv1.shape;
    token = mark(r, ctx, "maxpool", KPASS_BACKWARD, KCLASS_POOLING, stem_elements(r));
    maxpool_backward(r->grad_a0, r->grad_boundary[current], r->argmax, stem->batch, r->stem_size,
                     r->stem_size, 64, 3, 2, 1, r->pool_size, r->pool_size, r->type, ctx->stream);
    kernel_scope_leave(token);
    batchnorm_backward(&r->bn1, r->grad_z0, NULL, r->grad_a0, r->z0, r->a0, ctx);
    conv_backward_lane(&r->conv1, NULL, r->grad_z0, r->type == ELEM_BF16 ? r->input_half : m->input, lane, ctx);
    if (lane) wgrad_lane_join(lane, ctx->stream);
    if (r->type == ELEM_BF16) model_grads_from_half(ctx);
}

static void resnet_destroy(model *m) {
    resnet *r = m->impl;
    if (!r) return;
    conv_destroy(&r->conv1);
    for (int b = 0; b < r->block_count; b++) {
        conv_destroy(&r->blocks[b].conv1);
        conv_destroy(&r->blocks[b].conv2);
        conv_destroy(&r->blocks[b].conv3);
        conv_destroy(&r->blocks[b].ds_conv);
    }
    linear_destroy(&r->fc);
    conv_algo_cache_free(&r->cache);
    wgrad_lane_free(&r->lane);
    free(r->blocks);
    free(r);
    m->impl = NULL;
}

int resnet_conv_shapes(const model *m, conv_shape *shapes, int max) {
    const resnet *r = m->impl;
    int n = 0;
#define PUT(layer) do { if (n < max) shapes[n] = (layer).shape; n++; } while (0)
    PUT(r->conv1);
    for (int b = 0; b < r->block_count; b++) {
        PUT(r->blocks[b].conv1);
        PUT(r->blocks[b].conv2);
        PUT(r->blocks[b].conv3);
        if (r->blocks[b].has_downsample) PUT(r->blocks[b].ds_conv);
    }
#undef PUT
    return n;
}
