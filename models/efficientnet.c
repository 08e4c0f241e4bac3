/* The EfficientNetV2-S family (efficientnet.h): the stage table, the parameter table with timm's
 * state_dict names, set-up, and the model's forward and backward around the blocks of
 * efficientnet_blocks.c. Gradients flow through two block-boundary buffers (a block without a
 * skip writes the other one, a block with a skip adds onto the one it got) and three buffers for
 * the tensors inside a block, all shared by every block; one BN scratch, one depthwise scratch and
 * one set of SE gradient buffers serve the whole model. Activations and their gradients are of
 * one element type (model_activation_type): under --precision bf16 the float32 input is cast once
 * per forward and the float32 dlogits once per backward, the bfloat16 weight copies are refreshed
 * at the start of the forward and the float32 gradients made from the bfloat16 ones at the end of
 * the backward, as in models/resnet.c. */
#include "models/efficientnet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/activation.h"
#include "kernels/kernels.h"
#include "kernels/check.h"
#include "models/layers/layer_params.h"

#define STEM_CHANNELS 24
#define HEAD_CHANNELS 1280
#define STAGE_COUNT 6

/* timm's arch_def for efficientnetv2_s: cn_r2_k3_s1_e1_c24_skip, er_r4_k3_s2_e4_c48,
 * er_r4_k3_s2_e4_c64, ir_r6_k3_s2_e4_c128_se0.25, ir_r9_k3_s1_e6_c160_se0.25,
 * ir_r15_k3_s2_e6_c256_se0.25 */
static const struct {
    effnet_block_kind kind;
    int repeats, stride, expand, out_c;
} STAGES[STAGE_COUNT] = {
    {BLOCK_CONV_BN_ACT, 2, 1, 1, 24}, {BLOCK_FUSED_MBCONV, 4, 2, 4, 48}, {BLOCK_FUSED_MBCONV, 4, 2, 4, 64},
    {BLOCK_MBCONV, 6, 2, 4, 128},     {BLOCK_MBCONV, 9, 1, 6, 160},      {BLOCK_MBCONV, 15, 2, 6, 256},
};

typedef struct efficientnet {
    elem_type type;
    void *input_half, *dlogits_half; /* bfloat16 only */
    conv_layer conv_stem;
    batchnorm_layer bn1;
    void *z0, *a0;
    int stem_size, block_count;
    effnet_block *blocks;
    conv_layer conv_head;
    batchnorm_layer bn2;
    void *zh, *ah, *features;   /* head conv output, its BN + SiLU, pooled [batch, 1280] */
    linear_layer classifier;
    void *grad_boundary[2], *grad_features;
    effnet_grads grads;
    squeeze_grads se_grads;
    int drop_rows;              /* blocks whose branch may be dropped */
    float *drop_keep;           /* [drop_rows] keep probabilities (device) */
    float *drop_scale;          /* [drop_rows, batch] per-sample scales of this step */
    int64_t *drop_counter;      /* steps drawn so far (device) */
    conv_algo_cache cache;
    depthwise_cache dw_cache;
} efficientnet;

/* ---- parameter table -------------------------------------------------------------------------*/

static void add_param(model *m, const char *prefix, const char *leaf, param_kind kind, int ndim,
                      const int64_t *shape, int krsc, param_init init, int64_t fan, float *data) {
    param_entry e = {0};
    snprintf(e.name, sizeof e.name, "%s%s", prefix, leaf);
    e.kind = kind, e.ndim = ndim, e.krsc = krsc, e.init = init, e.fan = fan, e.data = data;
    for (int d = 0; d < ndim; d++) e.shape[d] = shape[d];
    param_table_add(&m->params, &e);
}

/* The depthwise conv: [C, 1, 3, 3], the same memory as ours; fan_out = 3 * 3 * C / C groups. */
static void add_depthwise(model *m, const char *prefix, const depthwise_layer *d) {
    int64_t shape[4] = {d->channels, 1, 3, 3};
    add_param(m, prefix, "weight", PARAM_WEIGHT, 4, shape, 0, PARAM_INIT_KAIMING_FAN_OUT, 9, d->weight);
}

/* An SE 1x1 conv with bias as a linear layer: weight [out, in, 1, 1] (the linear [out, in]),
 * normal(0, sqrt(2 / out)); the bias starts at zero (set in efficientnet_setup). */
static void add_se_conv(model *m, const char *prefix, const linear_layer *l) {
    int64_t shape[4] = {l->out_features, l->in_features, 1, 1}, bias_shape[1] = {l->out_features};
    add_param(m, prefix, "weight", PARAM_WEIGHT, 4, shape, 0, PARAM_INIT_KAIMING_FAN_OUT, l->out_features, l->weight);
    add_param(m, prefix, "bias", PARAM_NO_DECAY, 1, bias_shape, 0, PARAM_INIT_NONE, 0, l->bias);
}

/* timm's module names inside each block kind, in state_dict order. */
static void add_block_params(model *m, const char *block_prefix, const effnet_block *b) {
    char p[PARAM_NAME_MAX];
#define NAMED(leaf) (snprintf(p, sizeof p, "%s%s", block_prefix, leaf), p)
    switch (b->kind) {
    case BLOCK_CONV_BN_ACT:
        layer_params_conv(m, NAMED("conv."), &b->conv_in);
        layer_params_batchnorm(m, NAMED("bn1."), &b->bn_in);
        break;
    case BLOCK_FUSED_MBCONV:
        layer_params_conv(m, NAMED("conv_exp."), &b->conv_in);
        layer_params_batchnorm(m, NAMED("bn1."), &b->bn_in);
        layer_params_conv(m, NAMED("conv_pwl."), &b->conv_pwl);
        layer_params_batchnorm(m, NAMED("bn2."), &b->bn_out);
        break;
    case BLOCK_MBCONV:
        layer_params_conv(m, NAMED("conv_pw."), &b->conv_in);
        layer_params_batchnorm(m, NAMED("bn1."), &b->bn_in);
        add_depthwise(m, NAMED("conv_dw."), &b->dw);
        layer_params_batchnorm(m, NAMED("bn2."), &b->bn_dw);
        add_se_conv(m, NAMED("se.conv_reduce."), &b->se.reduce);
        add_se_conv(m, NAMED("se.conv_expand."), &b->se.expand);
        layer_params_conv(m, NAMED("conv_pwl."), &b->conv_pwl);
        layer_params_batchnorm(m, NAMED("bn3."), &b->bn_out);
        break;
    }
#undef NAMED
}

/* ---- building --------------------------------------------------------------------------------*/

static size_t max_z(size_t a, size_t b) { return a > b ? a : b; }

static void efficientnet_setup(model *m, job_context *ctx);
static void efficientnet_forward(model *m, int training, job_context *ctx);
static void efficientnet_backward(model *m, job_context *ctx);
static void efficientnet_destroy(model *m);

/* BN layers of a block, for scratch sizing and resets. Returns how many (at most 3). */
static int block_bns(effnet_block *b, batchnorm_layer **out) {
    int n = 0;
    out[n++] = &b->bn_in;
    if (b->kind == BLOCK_MBCONV) out[n++] = &b->bn_dw;
    if (b->kind != BLOCK_CONV_BN_ACT) out[n++] = &b->bn_out;
    return n;
}

/* The SE gradient buffers, shared: sized for the widest block (a pass over the stage table). */
static void take_se_grads(squeeze_grads *g, arena *a, int batch, elem_type type) {
    int widest = 0, widest_reduced = 0, in_c = STEM_CHANNELS;
    for (int s = 0; s < STAGE_COUNT; s++) {
        if (STAGES[s].kind == BLOCK_MBCONV) {
            /* the first block's input is the previous stage's width, the rest this stage's */
            int first = in_c * STAGES[s].expand, rest = STAGES[s].out_c * STAGES[s].expand;
            widest = first > widest ? first : widest;
            widest = rest > widest ? rest : widest;
            int rd_first = (in_c + 3) / 4, rd_rest = (STAGES[s].out_c + 3) / 4;
            widest_reduced = rd_first > widest_reduced ? rd_first : widest_reduced;
            widest_reduced = rd_rest > widest_reduced ? rd_rest : widest_reduced;
        }
        in_c = STAGES[s].out_c;
    }
    g->d_pooled = model_take_activations(a, type, (size_t)batch * widest);
    g->d_reduced = model_take_activations(a, type, (size_t)batch * widest_reduced);
    g->d_gate = model_take_activations(a, type, (size_t)batch * widest);
}

model *efficientnet_build(const model_config *config, arena *a, char *err, size_t err_size) {
    if (strcmp(config->name, "efficientnetv2_s") != 0) {
        snprintf(err, err_size, "unknown EfficientNet '%s': expected efficientnetv2_s", config->name);
        return NULL;
    }
    if (config->image_size < 8 || config->image_size > 2048 || config->batch < 1 || config->batch > 65536 ||
        config->classes < 1 || config->classes > 1000000 || config->in_channels < 1 || config->in_channels > 64) {
        snprintf(err, err_size, "%s: impossible sizes (image %d, batch %d, classes %d, channels %d): "
                 "expected image 8..2048, batch 1..65536, classes 1..1000000, channels 1..64",
                 config->name, config->image_size, config->batch, config->classes, config->in_channels);
        return NULL;
    }
    if (!(config->drop_path >= 0.0f && config->drop_path < 1.0f)) {
        snprintf(err, err_size, "%s: drop path rate %g: expected 0 <= rate < 1", config->name, config->drop_path);
        return NULL;
    }
    int block_count = 0;
    for (int s = 0; s < STAGE_COUNT; s++) block_count += STAGES[s].repeats;
    model *m = calloc(1, sizeof *m);
    efficientnet *e = calloc(1, sizeof *e);
    effnet_block *blocks = calloc((size_t)block_count, sizeof *blocks);
    if (!m || !e || !blocks) {
        snprintf(err, err_size, "out of host memory building %s", config->name);
        free(m), free(e), free(blocks);
        return NULL;
    }
    e->blocks = blocks, e->block_count = block_count;
    m->config = *config;
    m->impl = e;
    m->setup = efficientnet_setup, m->forward = efficientnet_forward, m->backward = efficientnet_backward;
    m->destroy = efficientnet_destroy;
    int n = config->batch, size = config->image_size;
    elem_type type = e->type = model_activation_type(config);

    size_t input_floats = (size_t)n * size * size * config->in_channels;
    m->input = arena_take_floats(a, ARENA_ACTIVATIONS, input_floats);
    if (type == ELEM_BF16) e->input_half = model_take_activations(a, type, input_floats);
    conv_shape stem = conv_shape_nhwc(n, config->in_channels, STEM_CHANNELS, 3, 2, 1, size, size);
    e->stem_size = stem.h_out;
    size_t stem_rows = (size_t)n * e->stem_size * e->stem_size;
    model_conv_bn_init(&e->conv_stem, &e->bn1, a, stem, (int)stem_rows, ACT_SILU, type);
    layer_params_conv(m, "conv_stem.", &e->conv_stem);
    layer_params_batchnorm(m, "bn1.", &e->bn1);
    e->z0 = model_take_activations(a, type, stem_rows * STEM_CHANNELS);
    e->a0 = model_take_activations(a, type, stem_rows * STEM_CHANNELS);
    take_se_grads(&e->se_grads, a, n, type);

    /* blocks: timm's drop-path rate of block i is drop_path * i / block_count */
    size_t boundary = stem_rows * STEM_CHANNELS, inner = stem_rows * STEM_CHANNELS;
    int in_c = STEM_CHANNELS, b = 0;
    size = e->stem_size;
    for (int s = 0; s < STAGE_COUNT; s++)
        for (int i = 0; i < STAGES[s].repeats; i++, b++) {
            effnet_block *blk = &e->blocks[b];
            int stride = i == 0 ? STAGES[s].stride : 1;
            float keep = 1.0f - config->drop_path * (float)b / (float)e->block_count;
            inner = max_z(inner, effnet_block_init(blk, a, STAGES[s].kind, n, in_c, STAGES[s].out_c,
                                                   STAGES[s].expand, stride, size, keep, type, &e->se_grads));
            if (blk->keep < 1.0f) blk->drop_row = e->drop_rows++;
            blk->x = b == 0 ? e->a0 : e->blocks[b - 1].out;
            char prefix[32];
            snprintf(prefix, sizeof prefix, "blocks.%d.%d.", s, i);
            add_block_params(m, prefix, blk);
            size_t rows_in = (size_t)n * size * size;
            size = blk->size_out;
            boundary = max_z(boundary, max_z(rows_in * in_c, (size_t)n * size * size * blk->out_c));
            in_c = blk->out_c;
        }

    size_t head_rows = (size_t)n * size * size;
    model_conv_bn_init(&e->conv_head, &e->bn2, a, conv_shape_nhwc(n, in_c, HEAD_CHANNELS, 1, 1, 0, size, size),
                       (int)head_rows, ACT_SILU, type);
    layer_params_conv(m, "conv_head.", &e->conv_head);
    layer_params_batchnorm(m, "bn2.", &e->bn2);
    e->zh = model_take_activations(a, type, head_rows * HEAD_CHANNELS);
    e->ah = model_take_activations(a, type, head_rows * HEAD_CHANNELS);
    e->features = model_take_activations(a, type, (size_t)n * HEAD_CHANNELS);
    linear_init(&e->classifier, a, n, HEAD_CHANNELS, config->classes);
    e->classifier.type = type;
    {   /* timm's _init_weight_goog: Linear weight U(+-1/sqrt(fan_out)), bias zero */
        int64_t w_shape[2] = {config->classes, HEAD_CHANNELS}, b_shape[1] = {config->classes};
        add_param(m, "classifier.", "weight", PARAM_WEIGHT, 2, w_shape, 0, PARAM_INIT_UNIFORM_FAN_IN, config->classes,
                  e->classifier.weight);
        add_param(m, "classifier.", "bias", PARAM_NO_DECAY, 1, b_shape, 0, PARAM_INIT_NONE, 0, e->classifier.bias);
    }
    m->logits = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)n * config->classes);
    m->dlogits = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)n * config->classes);
    if (type == ELEM_BF16) e->dlogits_half = model_take_activations(a, type, (size_t)n * config->classes);
    m->labels = arena_take(a, ARENA_SCRATCH, (size_t)n * sizeof(int32_t));

    inner = max_z(inner, head_rows * HEAD_CHANNELS);
    for (int i = 0; i < 2; i++) e->grad_boundary[i] = model_take_activations(a, type, boundary);
    for (int i = 0; i < 3; i++) e->grads.g[i] = model_take_activations(a, type, inner);
    e->grad_features = model_take_activations(a, type, (size_t)n * HEAD_CHANNELS);
    if (e->drop_rows) {
        e->drop_keep = arena_take_floats(a, ARENA_SCRATCH, (size_t)e->drop_rows);
        e->drop_scale = arena_take_floats(a, ARENA_SCRATCH, (size_t)e->drop_rows * n);
        e->drop_counter = arena_take(a, ARENA_SCRATCH, sizeof(int64_t));
    }
    e->grads.drop_scale = e->drop_scale;

    /* One BN scratch and one depthwise scratch for the whole model: all layers run in order on one
     * stream. */
    size_t bn_scratch = max_z(batchnorm_scratch_bytes(&e->bn1), batchnorm_scratch_bytes(&e->bn2)), dw_scratch = 0;
    for (b = 0; b < e->block_count; b++) {
        batchnorm_layer *bns[3];
        int count = block_bns(&e->blocks[b], bns);
        for (int k = 0; k < count; k++) bn_scratch = max_z(bn_scratch, batchnorm_scratch_bytes(bns[k]));
        if (e->blocks[b].kind == BLOCK_MBCONV)
            dw_scratch = max_z(dw_scratch, depthwise_layer_scratch_bytes(&e->blocks[b].dw));
    }
    void *bn_mem = arena_take(a, ARENA_SCRATCH, bn_scratch), *dw_mem = arena_take(a, ARENA_SCRATCH, dw_scratch);
    batchnorm_attach_scratch(&e->bn1, bn_mem);
    batchnorm_attach_scratch(&e->bn2, bn_mem);
    for (b = 0; b < e->block_count; b++) {
        batchnorm_layer *bns[3];
        int count = block_bns(&e->blocks[b], bns);
        for (int k = 0; k < count; k++) batchnorm_attach_scratch(bns[k], bn_mem);
        if (e->blocks[b].kind == BLOCK_MBCONV) depthwise_layer_attach_scratch(&e->blocks[b].dw, dw_mem);
    }

    m->flops_per_step_forward = conv_flops(&e->conv_stem) + conv_flops(&e->conv_head) + linear_flops(&e->classifier);
    for (b = 0; b < e->block_count; b++) m->flops_per_step_forward += effnet_block_flops(&e->blocks[b]);
    return m;
}

/* ---- set-up: descriptors, algorithm measurements, initial values ------------------------------*/

static void efficientnet_setup(model *m, job_context *ctx) {
    efficientnet *e = m->impl;
    effnet_block *last = &e->blocks[e->block_count - 1];
    /* The searches run the candidates on the real buffers: give them non-zero contents. */
    fill_float((float *)ctx->arena.activations, 0.5f, ctx->arena.planned[ARENA_ACTIVATIONS] / sizeof(float),
               ctx->stream);
    context_reserve_workspace(ctx, ctx->workspace_limit);
    conv_setup(&e->conv_stem, e->z0, e->type == ELEM_BF16 ? e->input_half : m->input, NULL, 0, &e->cache, ctx);
    size_t workspace = e->conv_stem.algos.workspace_bytes;
    for (int b = 0; b < e->block_count; b++)
        workspace = max_z(workspace, effnet_block_setup(&e->blocks[b], e->grad_boundary[0], &e->grads, &e->cache,
                                                        &e->dw_cache, ctx));
    conv_setup(&e->conv_head, e->zh, last->out, e->grad_boundary[0], 0, &e->cache, ctx);
    workspace = max_z(workspace, e->conv_head.algos.workspace_bytes);
    context_set_workspace(ctx, workspace);
    for (int b = 0; b < e->block_count; b++)
        if (e->blocks[b].kind == BLOCK_MBCONV) squeeze_excite_setup(&e->blocks[b].se, ctx);
    linear_setup(&e->classifier, ctx);

    model_init_params(m, ctx);
    batchnorm_reset(&e->bn1, 1.0f, ctx);
    batchnorm_reset(&e->bn2, 1.0f, ctx);
    for (int b = 0; b < e->block_count; b++) {
        effnet_block *blk = &e->blocks[b];
        batchnorm_layer *bns[3];
        int count = block_bns(blk, bns);
        for (int k = 0; k < count; k++) batchnorm_reset(bns[k], 1.0f, ctx);
        if (blk->kind == BLOCK_MBCONV) {
            fill_float(blk->se.reduce.bias, 0.0f, (size_t)blk->se.reduced, ctx->stream);
            fill_float(blk->se.expand.bias, 0.0f, (size_t)blk->se.channels, ctx->stream);
        }
    }
    fill_float(e->classifier.bias, 0.0f, (size_t)m->config.classes, ctx->stream);
    if (e->drop_rows) {
        float *keep = malloc((size_t)e->drop_rows * sizeof *keep);
        if (!keep) {
            fprintf(stderr, "out of host memory setting up %s\n", m->config.name);
            exit(1);
        }
        for (int b = 0; b < e->block_count; b++)
            if (e->blocks[b].drop_row >= 0) keep[e->blocks[b].drop_row] = e->blocks[b].keep;
        CHECK_CUDA(cudaMemcpyAsync(e->drop_keep, keep, (size_t)e->drop_rows * sizeof *keep, cudaMemcpyHostToDevice,
                                   ctx->stream));
        CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
        free(keep);
    }
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
}

/* ---- passes ----------------------------------------------------------------------------------*/

static void efficientnet_forward(model *m, int training, job_context *ctx) {
    efficientnet *e = m->impl;
    int n = m->config.batch;
    const void *input = m->input;
    if (e->type == ELEM_BF16) {
        model_weights_to_half(ctx);
        const conv_shape *stem = &e->conv_stem.shape;
        cast_f32_to_bf16(e->input_half, m->input, (size_t)n * stem->h_in * stem->w_in * stem->in_c, ctx->stream);
        input = e->input_half;
    }
    conv_forward(&e->conv_stem, e->z0, input, ctx);
    batchnorm_forward(&e->bn1, e->a0, e->z0, NULL, training, ctx);
    if (training && e->drop_rows)
        drop_path_masks(e->drop_scale, e->drop_counter, e->drop_keep, e->drop_rows, n, m->config.seed, ctx->stream);
    for (int b = 0; b < e->block_count; b++) effnet_block_forward(&e->blocks[b], training, e->drop_scale, ctx);
    const effnet_block *last = &e->blocks[e->block_count - 1];
    conv_forward(&e->conv_head, e->zh, last->out, ctx);
    batchnorm_forward(&e->bn2, e->ah, e->zh, NULL, training, ctx);
    avgpool_global_forward(e->features, e->ah, n, last->size_out * last->size_out, HEAD_CHANNELS, e->type, ctx->stream);
    linear_forward(&e->classifier, m->logits, e->features, ctx);
}

static void efficientnet_backward(model *m, job_context *ctx) {
    efficientnet *e = m->impl;
    int n = m->config.batch;
    const effnet_block *last = &e->blocks[e->block_count - 1];
    void *g0 = e->grads.g[0], *g1 = e->grads.g[1];
    const void *dlogits = m->dlogits;
    if (e->type == ELEM_BF16) {
        cast_f32_to_bf16(e->dlogits_half, m->dlogits, (size_t)n * m->config.classes, ctx->stream);
        dlogits = e->dlogits_half;
    }
    linear_backward(&e->classifier, e->grad_features, dlogits, e->features, ctx);
    avgpool_global_backward(g0, e->grad_features, n, last->size_out * last->size_out, HEAD_CHANNELS, e->type,
                            ctx->stream);
    batchnorm_backward(&e->bn2, g1, NULL, g0, e->zh, e->ah, ctx);
    int current = 0;
    conv_backward(&e->conv_head, e->grad_boundary[current], g1, last->out, ctx);
    for (int b = e->block_count - 1; b >= 0; b--) {
        effnet_block *blk = &e->blocks[b];
        if (blk->has_skip) {
            effnet_block_backward(blk, e->grad_boundary[current], e->grad_boundary[current], &e->grads, ctx);
        } else {
            effnet_block_backward(blk, e->grad_boundary[1 - current], e->grad_boundary[current], &e->grads, ctx);
            current = 1 - current;
        }
    }
    batchnorm_backward(&e->bn1, g0, NULL, e->grad_boundary[current], e->z0, e->a0, ctx);
    conv_backward(&e->conv_stem, NULL, g0, e->type == ELEM_BF16 ? e->input_half : m->input, ctx);
    if (e->type == ELEM_BF16) model_grads_from_half(ctx);
}

static void efficientnet_destroy(model *m) {
    efficientnet *e = m->impl;
    if (!e) return;
    conv_destroy(&e->conv_stem);
    conv_destroy(&e->conv_head);
    for (int b = 0; b < e->block_count; b++) effnet_block_destroy(&e->blocks[b]);
    linear_destroy(&e->classifier);
    conv_algo_cache_free(&e->cache);
    free(e->blocks);
    free(e);
    m->impl = NULL;
}

const depthwise_layer *efficientnet_depthwise(const model *m, int index) {
    const efficientnet *e = m->impl;
    for (int b = 0; b < e->block_count; b++)
        if (e->blocks[b].kind == BLOCK_MBCONV && index-- == 0) return &e->blocks[b].dw;
    return NULL;
}
