/* CaiT-XXS24: building (parameter table with timm's names, activation plan), set-up and the two
 * passes. The memory plan keeps, per block, what its backward pass reads: the LayerNorm outputs
 * and statistics, qkv, the scaled attention logits with their softmax statistics (the attention
 * weights are recomputed from them), the head outputs, the MLP pre-activation and its GELU, and
 * the residual stream; gradients flow through a few buffers shared by all blocks. The LayerScale
 * multiply and the residual add ride inside the GEMMs (models/layers/cait_layers.h), so a block's
 * forward pass is 2 LayerNorms, 6 GEMMs (2 of them batched over sample x head), the
 * talking-heads kernel, GELU and two tiny weight folds.
 * bf16 (--precision bf16) follows torch.autocast(dtype=torch.bfloat16): the GEMMs take bfloat16
 * operands (the arena's copies of the weights, LayerNorm outputs, qkv, logits, attention
 * weights, head outputs, MLP activations) with float accumulation; as under autocast the
 * residual streams (patch tokens and class token) stay float32, since timm adds the float32
 * pos_embed and gamma * branch to them, and so do their gradients; LayerNorm statistics, softmax,
 * parameters and the parameter gradients' masters are float32. Where it differs (for speed or
 * for precision, never coarser than autocast): the LayerScale fold rounds gamma * W to bfloat16
 * instead of W, and the branch is not rounded before it joins the float residual (the GEMM
 * writes the sum); the talking-heads mixes use the float32 mixing weights and keep the mixed
 * logits and softmax output in float inside the kernel (autocast rounds proj_l's output and
 * proj_w's input to bfloat16); the attention scale is applied in the GEMM's float alpha
 * (autocast rounds q * scale); the patch GEMM writes float32 (autocast's conv output is
 * bfloat16 before the float32 pos_embed is added); the class token's LayerNorm gradient adds
 * its query share in bfloat16 (autocast sums the cast-backs in float32). */
#include "models/cait.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "kernels/transformer.h"
#include "models/layers/cait_gemm.h"
#include "models/layers/cait_layers.h"
#include "kernels/check.h"

/* One call inside a kernel-trace scope (models/core/kernel_scope.h): layer norms are the class of
 * norms (batchnorm), the class token's attention is attention; what no scope names (GELU, the
 * residual adds) is the model's. */
#define SCOPED(ctx, key, name, pass, cls, call)                                                   \
    do {                                                                                          \
        int token_ = kernel_scope_enter((ctx)->scopes, key, name, pass, cls, 0, 0);               \
        call;                                                                                     \
        kernel_scope_leave(token_);                                                               \
    } while (0)

/* cait_xxs24_224 */
#define CAIT_DIM 192
#define CAIT_DEPTH 24
#define CAIT_HEADS 4
#define CAIT_MLP_RATIO 4
#define CAIT_DEPTH_TOKEN 2
#define CAIT_INIT_VALUES 1e-5f
#define CAIT_EPS 1e-6f
#define CAIT_PATCH 16
#define CAIT_MAX_TOKENS 4096  /* patch tokens: the [B, 4, N, N] logits of every block are kept */

typedef struct cait_block {        /* blocks.i */
    float *gamma_1, *gamma_2, *norm1_w, *norm1_b, *qkv_w, *qkv_b, *proj_w, *proj_b;
    float *mix_l_w, *mix_l_b, *mix_w_w, *mix_w_b; /* attn.proj_l, attn.proj_w (talking heads) */
    float *norm2_w, *norm2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    const float *x;                /* input: the embedding or the previous block's out */
    float *mean1, *rstd1, *stats, *x_mid, *mean2, *rstd2, *out; /* float32 always */
    void *h1, *qkv, *logits, *o, *h2, *f, *g;                   /* the model's element type */
    void *proj_ws, *fc2_ws;        /* gamma-folded weights of this step (element type) */
    float *proj_bs, *fc2_bs;
    th_core core;
} cait_block;

typedef struct cait_token_block {  /* blocks_token_only.i: class attention */
    float *gamma_1, *gamma_2, *norm1_w, *norm1_b, *q_w, *q_b, *kv_w, *kv_b, *proj_w, *proj_b;
    float *norm2_w, *norm2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    const float *cls_in;           /* [B, C] */
    float *mean1, *rstd1, *p, *cls_mid, *mean2, *rstd2, *cls_out; /* float32 always */
    void *hu, *q, *kv, *o, *h2, *f, *g;                           /* the model's element type */
    void *proj_ws, *fc2_ws;
    float *proj_bs, *fc2_bs;
} cait_token_block;

typedef struct param_fill {        /* a parameter set to a constant at set-up */
    float *data;
    size_t n;
    float value;
} param_fill;

/* Buffers declared void * are of the model's element type (model_activation_type); those declared
 * float * are float32 in both precisions. */
typedef struct cait {
    int batch, size, in_c, patch, grid, tokens, dim, heads, head_dim, hidden, classes;
    elem_type type;
    float *patch_w, *patch_b, *pos_embed, *cls_token, *norm_w, *norm_b, *head_w, *head_b;
    void *patches, *normed;
    float *x0, *cls0, *mean_f, *rstd_f;
    cait_block blocks[CAIT_DEPTH];
    cait_token_block token_blocks[CAIT_DEPTH_TOKEN];
    /* gradients shared by the blocks */
    float *d_res, *d_cls;          /* residual streams [B*N, C] and [B, C] */
    void *d_res_half, *d_cls_half; /* bf16: their bfloat16 copies, which the GEMMs read */
    void *dh, *dF, *dO, *dqkv, *attn, *dq, *ones;
    float *ln_scratch, *th_scratch, *ls_scratch;
    /* bf16: the bfloat16 copy of the no-decay parameters (the biases a bfloat16-output GEMM adds
     * are among them), refreshed with the weights' each forward, and of dlogits */
    const float *no_decay;         /* the first no-decay parameter: the region starts there */
    size_t no_decay_floats;
    void *no_decay_half, *dlogits_half;
    param_fill *fills;
    int fill_count, fill_capacity;
    gemm_engine gemm;
} cait;

/* ---- parameter table ---------------------------------------------------------------------------*/

/* Adds one parameter named prefix+name; its storage is *at when `at` is given (NULL while
 * planning), else taken from the region its kind says. init NONE parameters are set to `value` at
 * set-up. */
static float *add_param(model *m, cait *c, arena *a, const char *prefix, const char *name, param_kind kind,
                        int ndim, const int64_t *shape, param_init init, int64_t fan, float value, float *const *at) {
    param_entry e = {0};
    snprintf(e.name, sizeof e.name, "%s%s", prefix, name);
    e.kind = kind, e.ndim = ndim, e.init = init, e.fan = fan;
    for (int i = 0; i < ndim; i++) e.shape[i] = shape[i];
    size_t n = (size_t)param_numel(&e);
    e.data = at ? *at : arena_take_floats(a, kind == PARAM_WEIGHT ? ARENA_WEIGHTS : ARENA_NO_DECAY, n);
    param_table_add(&m->params, &e);
    if (init == PARAM_INIT_NONE) {
        if (c->fill_count == c->fill_capacity) {
            c->fill_capacity = c->fill_capacity ? 2 * c->fill_capacity : 128;
            c->fills = realloc(c->fills, (size_t)c->fill_capacity * sizeof *c->fills);
            if (!c->fills) {
                fprintf(stderr, "out of host memory for the parameter table\n");
                exit(1);
            }
        }
        c->fills[c->fill_count++] = (param_fill){e.data, n, value};
    }
    return e.data;
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* Linear: weight [out, in] (decay, trunc normal), bias [out] (no decay, 0). */
static void add_linear(model *m, cait *c, arena *a, const char *prefix, const char *name, int in, int out,
                       float **w, float **b, float *const *w_at, float *const *b_at) {
    char full[PARAM_NAME_MAX];
    snprintf(full, sizeof full, "%s.weight", name);
    *w = add_param(m, c, a, prefix, full, PARAM_WEIGHT, 2, SHAPE(out, in), PARAM_INIT_TRUNC_NORMAL_002, in, 0.0f,
                   w_at);
    snprintf(full, sizeof full, "%s.bias", name);
    *b = add_param(m, c, a, prefix, full, PARAM_NO_DECAY, 1, SHAPE(out), PARAM_INIT_NONE, 0, 0.0f, b_at);
}

static void add_norm(model *m, cait *c, arena *a, const char *prefix, const char *name, float **w, float **b) {
    char full[PARAM_NAME_MAX];
    snprintf(full, sizeof full, "%s.weight", name);
    *w = add_param(m, c, a, prefix, full, PARAM_NO_DECAY, 1, SHAPE(c->dim), PARAM_INIT_NONE, 0, 1.0f, NULL);
    snprintf(full, sizeof full, "%s.bias", name);
    *b = add_param(m, c, a, prefix, full, PARAM_NO_DECAY, 1, SHAPE(c->dim), PARAM_INIT_NONE, 0, 0.0f, NULL);
}

static float *add_gamma(model *m, cait *c, arena *a, const char *prefix, const char *name) {
    return add_param(m, c, a, prefix, name, PARAM_NO_DECAY, 1, SHAPE(c->dim), PARAM_INIT_NONE, 0,
                     CAIT_INIT_VALUES, NULL);
}

/* ---- building ------------------------------------------------------------------------------------*/

static float *act(arena *a, size_t n) { return arena_take_floats(a, ARENA_ACTIVATIONS, n); }
static void *tact(arena *a, elem_type type, size_t n) { return arena_take(a, ARENA_ACTIVATIONS, n * elem_bytes(type)); }

static void build_block(model *m, cait *c, arena *a, cait_block *b, int index) {
    char p[48];
    snprintf(p, sizeof p, "blocks.%d.", index);
    int C = c->dim, H = c->heads, N = c->tokens, Hd = c->hidden;
    size_t T = (size_t)c->batch * N;
    b->gamma_1 = add_gamma(m, c, a, p, "gamma_1");
    b->gamma_2 = add_gamma(m, c, a, p, "gamma_2");
    add_norm(m, c, a, p, "norm1", &b->norm1_w, &b->norm1_b);
    add_linear(m, c, a, p, "attn.qkv", C, 3 * C, &b->qkv_w, &b->qkv_b, NULL, NULL);
    add_linear(m, c, a, p, "attn.proj", C, C, &b->proj_w, &b->proj_b, NULL, NULL);
    add_linear(m, c, a, p, "attn.proj_l", H, H, &b->mix_l_w, &b->mix_l_b, NULL, NULL);
    add_linear(m, c, a, p, "attn.proj_w", H, H, &b->mix_w_w, &b->mix_w_b, NULL, NULL);
    add_norm(m, c, a, p, "norm2", &b->norm2_w, &b->norm2_b);
    add_linear(m, c, a, p, "mlp.fc1", C, Hd, &b->fc1_w, &b->fc1_b, NULL, NULL);
    add_linear(m, c, a, p, "mlp.fc2", Hd, C, &b->fc2_w, &b->fc2_b, NULL, NULL);

    elem_type t = c->type;
    b->mean1 = act(a, T), b->rstd1 = act(a, T), b->h1 = tact(a, t, T * C);
    b->qkv = tact(a, t, T * 3 * C);
    b->logits = tact(a, t, (size_t)c->batch * H * N * N);
    b->stats = act(a, (size_t)c->batch * H * N * 2);
    b->o = tact(a, t, T * C), b->x_mid = act(a, T * C);
    b->mean2 = act(a, T), b->rstd2 = act(a, T), b->h2 = tact(a, t, T * C);
    b->f = tact(a, t, T * Hd), b->g = tact(a, t, T * Hd), b->out = act(a, T * C);
    b->proj_ws = tact(a, t, (size_t)C * C), b->proj_bs = act(a, C);
    b->fc2_ws = tact(a, t, (size_t)C * Hd), b->fc2_bs = act(a, C);
    th_core_init(&b->core, c->batch, N, H, c->head_dim, t);
}

static void build_token_block(model *m, cait *c, arena *a, cait_token_block *b, int index) {
    char p[48];
    snprintf(p, sizeof p, "blocks_token_only.%d.", index);
    int C = c->dim, H = c->heads, B = c->batch, Hd = c->hidden;
    size_t U = (size_t)B * (c->tokens + 1);
    b->gamma_1 = add_gamma(m, c, a, p, "gamma_1");
    b->gamma_2 = add_gamma(m, c, a, p, "gamma_2");
    add_norm(m, c, a, p, "norm1", &b->norm1_w, &b->norm1_b);
    add_linear(m, c, a, p, "attn.q", C, C, &b->q_w, &b->q_b, NULL, NULL);
    /* k and v side by side: one [2C, C] GEMM over all tokens */
    b->kv_w = arena_take_floats(a, ARENA_WEIGHTS, (size_t)2 * C * C);
    b->kv_b = arena_take_floats(a, ARENA_NO_DECAY, (size_t)2 * C);
    float *v_w = b->kv_w ? b->kv_w + (size_t)C * C : NULL, *v_b = b->kv_b ? b->kv_b + C : NULL, *w, *bias;
    add_linear(m, c, a, p, "attn.k", C, C, &w, &bias, &b->kv_w, &b->kv_b);
    add_linear(m, c, a, p, "attn.v", C, C, &w, &bias, &v_w, &v_b);
    add_linear(m, c, a, p, "attn.proj", C, C, &b->proj_w, &b->proj_b, NULL, NULL);
    add_norm(m, c, a, p, "norm2", &b->norm2_w, &b->norm2_b);
    add_linear(m, c, a, p, "mlp.fc1", C, Hd, &b->fc1_w, &b->fc1_b, NULL, NULL);
    add_linear(m, c, a, p, "mlp.fc2", Hd, C, &b->fc2_w, &b->fc2_b, NULL, NULL);

    elem_type t = c->type;
    b->mean1 = act(a, U), b->rstd1 = act(a, U), b->hu = tact(a, t, U * C);
    b->q = tact(a, t, (size_t)B * C), b->kv = tact(a, t, U * 2 * C);
    b->p = act(a, (size_t)B * H * (c->tokens + 1));
    b->o = tact(a, t, (size_t)B * C), b->cls_mid = act(a, (size_t)B * C);
    b->mean2 = act(a, B), b->rstd2 = act(a, B), b->h2 = tact(a, t, (size_t)B * C);
    b->f = tact(a, t, (size_t)B * Hd), b->g = tact(a, t, (size_t)B * Hd), b->cls_out = act(a, (size_t)B * C);
    b->proj_ws = tact(a, t, (size_t)C * C), b->proj_bs = act(a, C);
    b->fc2_ws = tact(a, t, (size_t)C * Hd), b->fc2_bs = act(a, C);
}

static size_t max_z(size_t a, size_t b) { return a > b ? a : b; }

static double forward_flops(const cait *c) {
    double B = c->batch, N = c->tokens, C = c->dim, H = c->heads, D = c->head_dim, Hd = c->hidden;
    double T = B * N, U = B * (N + 1), width = (double)c->patch * c->patch * c->in_c;
    double block = 2 * T * C * 3 * C + 2 * 2 * B * H * N * N * D + 2 * 2 * B * N * N * H * H + 2 * T * C * C +
                   2 * 2 * T * C * Hd;
    double token_block = 2 * B * C * C + 2 * U * C * 2 * C + 2 * 2 * B * H * (N + 1) * D + 2 * B * C * C +
                         2 * 2 * B * C * Hd;
    return 2 * T * width * C + CAIT_DEPTH * block + CAIT_DEPTH_TOKEN * token_block + 2 * B * C * c->classes;
}

static void cait_setup(model *m, job_context *ctx);
static void cait_forward(model *m, int training, job_context *ctx);
static void cait_backward(model *m, job_context *ctx);
static void cait_destroy(model *m);

static int check_config(const model_config *config, int patch, char *err, size_t err_size) {
    if (strcmp(config->name, "cait_xxs24") != 0) {
        snprintf(err, err_size, "unknown CaiT '%s': expected cait_xxs24", config->name);
        return -1;
    }
    if (config->batch < 1 || config->batch > 65536 || config->classes < 1 || config->classes > 1000000 ||
        config->in_channels < 1 || config->in_channels > 64 || config->image_size < 1 || config->image_size > 4096) {
        snprintf(err, err_size, "%s: impossible sizes (image %d, batch %d, classes %d, channels %d): expected image "
                 "1..4096, batch 1..65536, classes 1..1000000, channels 1..64", config->name, config->image_size,
                 config->batch, config->classes, config->in_channels);
        return -1;
    }
    if (patch < 1 || patch > config->image_size || config->image_size % patch != 0) {
        snprintf(err, err_size, "%s: image size %d is not a multiple of the patch size %d (choose --patch-size so "
                 "that it divides the image, e.g. 16 at 224, 4 at 32)", config->name, config->image_size, patch);
        return -1;
    }
    long grid = config->image_size / patch;
    if (grid * grid > CAIT_MAX_TOKENS) {
        snprintf(err, err_size, "%s: image %d with patch %d gives %ld tokens: at most %d (the per-block attention "
                 "logits grow with their square); use a larger patch size", config->name, config->image_size, patch,
                 grid * grid, CAIT_MAX_TOKENS);
        return -1;
    }
    if ((double)config->batch * CAIT_HEADS * grid * grid > (double)(1 << 30)) {
        snprintf(err, err_size, "%s: batch %d x %ld tokens is too large for one job", config->name, config->batch,
                 grid * grid);
        return -1;
    }
    if (config->drop_path != 0.0f) {
        snprintf(err, err_size, "%s: stochastic depth (drop_path %g) is not implemented; timm's cait_xxs24_224 "
                 "default is 0", config->name, config->drop_path);
        return -1;
    }
    return 0;
}

model *cait_build(const model_config *config, arena *a, char *err, size_t err_size) {
    int patch = config->patch_size ? config->patch_size : CAIT_PATCH;
    if (check_config(config, patch, err, err_size)) return NULL;
    model *m = calloc(1, sizeof *m);
    cait *c = calloc(1, sizeof *c);
    if (!m || !c) {
        snprintf(err, err_size, "out of host memory building %s", config->name);
        free(m), free(c);
        return NULL;
    }
    m->config = *config;
    m->impl = c;
    m->setup = cait_setup, m->forward = cait_forward, m->backward = cait_backward, m->destroy = cait_destroy;
    c->batch = config->batch, c->size = config->image_size, c->in_c = config->in_channels, c->patch = patch;
    c->grid = config->image_size / patch, c->tokens = c->grid * c->grid;
    c->dim = CAIT_DIM, c->heads = CAIT_HEADS, c->head_dim = CAIT_DIM / CAIT_HEADS;
    c->hidden = CAIT_DIM * CAIT_MLP_RATIO, c->classes = config->classes;
    elem_type t = c->type = model_activation_type(config);
    int B = c->batch, N = c->tokens, C = c->dim, width = patch * patch * c->in_c;
    size_t T = (size_t)B * N, U = (size_t)B * (N + 1), no_decay_start = a->used[ARENA_NO_DECAY];

    m->input = act(a, (size_t)B * c->size * c->size * c->in_c);
    c->cls_token = add_param(m, c, a, "", "cls_token", PARAM_NO_DECAY, 3, SHAPE(1, 1, C), PARAM_INIT_TRUNC_NORMAL_002,
                             0, 0.0f, NULL);
    c->no_decay = c->cls_token; /* the model's first take from ARENA_NO_DECAY */
    c->pos_embed = add_param(m, c, a, "", "pos_embed", PARAM_NO_DECAY, 3, SHAPE(1, N, C), PARAM_INIT_TRUNC_NORMAL_002,
                             0, 0.0f, NULL);
    c->patch_w = add_param(m, c, a, "", "patch_embed.proj.weight", PARAM_WEIGHT, 4, SHAPE(C, c->in_c, patch, patch),
                           PARAM_INIT_UNIFORM_FAN_IN, width, 0.0f, NULL);
    m->params.entries[m->params.count - 1].krsc = 1;
    c->patch_b = add_param(m, c, a, "", "patch_embed.proj.bias", PARAM_NO_DECAY, 1, SHAPE(C), PARAM_INIT_UNIFORM_FAN_IN,
                           width, 0.0f, NULL);
    for (int l = 0; l < CAIT_DEPTH; l++) {
        build_block(m, c, a, &c->blocks[l], l);
        c->blocks[l].x = l == 0 ? NULL : c->blocks[l - 1].out; /* block 0 reads x0, set below */
    }
    for (int k = 0; k < CAIT_DEPTH_TOKEN; k++) build_token_block(m, c, a, &c->token_blocks[k], k);
    add_norm(m, c, a, "", "norm", &c->norm_w, &c->norm_b);
    add_linear(m, c, a, "", "head", C, c->classes, &c->head_w, &c->head_b, NULL, NULL);

    c->no_decay_floats = (a->used[ARENA_NO_DECAY] - no_decay_start) / sizeof(float);

    c->patches = tact(a, t, T * width);
    c->x0 = act(a, T * C);
    c->blocks[0].x = c->x0;
    c->cls0 = act(a, (size_t)B * C);
    c->token_blocks[0].cls_in = c->cls0;
    for (int k = 1; k < CAIT_DEPTH_TOKEN; k++) c->token_blocks[k].cls_in = c->token_blocks[k - 1].cls_out;
    c->mean_f = act(a, B), c->rstd_f = act(a, B), c->normed = tact(a, t, (size_t)B * C);
    m->logits = act(a, (size_t)B * c->classes);
    m->dlogits = act(a, (size_t)B * c->classes);
    m->labels = arena_take(a, ARENA_SCRATCH, (size_t)B * sizeof(int32_t));

    c->d_res = act(a, T * C);
    c->dh = tact(a, t, U * C);
    c->dF = tact(a, t, T * c->hidden);
    c->dO = tact(a, t, T * C);
    c->dqkv = tact(a, t, max_z(T * 3 * C, U * 2 * C));
    c->attn = tact(a, t, (size_t)B * c->heads * N * N);
    c->d_cls = act(a, (size_t)B * C);
    c->dq = tact(a, t, (size_t)B * C);
    if (t == ELEM_BF16) {
        c->d_res_half = tact(a, t, T * C);
        c->d_cls_half = tact(a, t, (size_t)B * C);
        c->no_decay_half = tact(a, t, c->no_decay_floats);
        c->dlogits_half = tact(a, t, (size_t)B * c->classes);
    }
    c->ones = arena_take(a, ARENA_SCRATCH, U * elem_bytes(t));
    c->ln_scratch = arena_take_floats(a, ARENA_SCRATCH, layernorm_backward_scratch_floats((int)U, C));
    c->th_scratch = arena_take_floats(a, ARENA_SCRATCH, talking_heads_backward_scratch_floats(B, c->heads, N));
    c->ls_scratch = arena_take_floats(a, ARENA_SCRATCH, max_z(ls_linear_scratch_floats(c->hidden, C),
                                                              ls_linear_scratch_floats(C, C)));
    m->flops_per_step_forward = forward_flops(c);
    return m;
}

/* ---- set-up ----------------------------------------------------------------------------------------*/

static void cait_setup(model *m, job_context *ctx) {
    cait *c = m->impl;
    gemm_engine_init(&c->gemm, ctx);
    c->gemm.type = c->type;
    for (int l = 0; l < CAIT_DEPTH; l++) {
        cait_block *b = &c->blocks[l];
        th_core_bind(&b->core, b->qkv, b->logits, b->stats, b->o, c->attn, c->dO, c->dqkv);
    }
    size_t U = (size_t)c->batch * (c->tokens + 1);
    if (c->type == ELEM_BF16) fill_bf16(c->ones, 1.0f, U, ctx->stream);
    else fill_float(c->ones, 1.0f, U, ctx->stream);
    model_init_params(m, ctx);
    for (int i = 0; i < c->fill_count; i++) fill_float(c->fills[i].data, c->fills[i].value, c->fills[i].n, ctx->stream);
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
}

/* ---- passes ----------------------------------------------------------------------------------------*/

#define GRAD(p) arena_grad_of(&ctx->arena, (p))

/* The residual gradients as the GEMMs read them: their bfloat16 copies under bf16. */
static const void *res_run(const cait *c) { return c->type == ELEM_BF16 ? c->d_res_half : (const void *)c->d_res; }
static const void *cls_run(const cait *c) { return c->type == ELEM_BF16 ? c->d_cls_half : (const void *)c->d_cls; }

/* The bias of a GEMM whose output is of the model's type: the bfloat16 copy under bf16 (cuBLASLt
 * adds a bias of the output's type; autocast's linear casts it the same way). */
static const void *typed_bias(const cait *c, const float *b) {
    if (c->type != ELEM_BF16) return b;
    return (const char *)c->no_decay_half + (size_t)(b - c->no_decay) * elem_bytes(ELEM_BF16);
}

static void block_forward(cait *c, cait_block *b, job_context *ctx) {
    gemm_engine *g = &c->gemm;
    elem_type t = c->type;
    int C = c->dim, Hd = c->hidden, T = c->batch * c->tokens;
    SCOPED(ctx, b->norm1_w, NULL, KPASS_FORWARD, KCLASS_BATCHNORM,
           layernorm_forward(b->h1, b->mean1, b->rstd1, b->x, b->norm1_w, b->norm1_b, T, C, CAIT_EPS, t, ctx->stream));
    dense_forward(g, ctx, b->qkv, b->h1, C, b->qkv_w, typed_bias(c, b->qkv_b), T, C, 3 * C, t);
    th_core_forward(&b->core, g, ctx, b->mix_l_w, b->mix_l_b, b->mix_w_w, b->mix_w_b);
    ls_linear_forward(g, ctx, b->x_mid, b->proj_ws, b->proj_bs, b->x, b->o, b->proj_w, b->proj_b, b->gamma_1, T, C,
                      C);
    SCOPED(ctx, b->norm2_w, NULL, KPASS_FORWARD, KCLASS_BATCHNORM,
           layernorm_forward(b->h2, b->mean2, b->rstd2, b->x_mid, b->norm2_w, b->norm2_b, T, C, CAIT_EPS, t, ctx->stream));
    dense_forward(g, ctx, b->f, b->h2, C, b->fc1_w, typed_bias(c, b->fc1_b), T, C, Hd, t);
    gelu_forward(b->g, b->f, (size_t)T * Hd, t, ctx->stream);
    ls_linear_forward(g, ctx, b->out, b->fc2_ws, b->fc2_bs, b->x_mid, b->g, b->fc2_w, b->fc2_b, b->gamma_2, T, Hd,
                      C);
}

/* d_res holds dL/d(out) on entry and dL/d(x) on return (with its bfloat16 copy under bf16). */
static void block_backward(cait *c, cait_block *b, job_context *ctx) {
    gemm_engine *g = &c->gemm;
    elem_type t = c->type;
    int C = c->dim, Hd = c->hidden, T = c->batch * c->tokens;
    ls_linear_backward(g, ctx, c->dF, GRAD(b->fc2_w), GRAD(b->fc2_b), GRAD(b->gamma_2), res_run(c), b->g, b->fc2_ws,
                       b->fc2_w, b->fc2_b, b->gamma_2, c->ones, T, Hd, C, c->ls_scratch);
    gelu_backward(c->dF, c->dF, b->f, (size_t)T * Hd, t, ctx->stream);
    dense_backward(g, ctx, c->dh, C, 0.0f, GRAD(b->fc1_w), GRAD(b->fc1_b), c->dF, b->h2, C, b->fc1_w, c->ones, T, C,
                   Hd);
    SCOPED(ctx, b->norm2_w, NULL, KPASS_BACKWARD, KCLASS_BATCHNORM,
           layernorm_backward(c->d_res, c->d_res_half, GRAD(b->norm2_w), GRAD(b->norm2_b), c->dh, b->x_mid, b->mean2,
                       b->rstd2, b->norm2_w, T, C, 1, t, c->ln_scratch, ctx->stream));
    ls_linear_backward(g, ctx, c->dO, GRAD(b->proj_w), GRAD(b->proj_b), GRAD(b->gamma_1), res_run(c), b->o,
                       b->proj_ws, b->proj_w, b->proj_b, b->gamma_1, c->ones, T, C, C, c->ls_scratch);
    th_core_backward(&b->core, g, ctx, GRAD(b->mix_l_w), GRAD(b->mix_l_b), GRAD(b->mix_w_w), GRAD(b->mix_w_b),
                     b->mix_l_w, b->mix_l_b, b->mix_w_w, b->mix_w_b, c->th_scratch);
    dense_backward(g, ctx, c->dh, C, 0.0f, GRAD(b->qkv_w), GRAD(b->qkv_b), c->dqkv, b->h1, C, b->qkv_w, c->ones, T, C,
                   3 * C);
    SCOPED(ctx, b->norm1_w, NULL, KPASS_BACKWARD, KCLASS_BATCHNORM,
           layernorm_backward(c->d_res, c->d_res_half, GRAD(b->norm1_w), GRAD(b->norm1_b), c->dh, b->x, b->mean1, b->rstd1,
                       b->norm1_w, T, C, 1, t, c->ln_scratch, ctx->stream));
}

/* x: the patch tokens after the last block [B*N, C]. */
static void token_block_forward(cait *c, cait_token_block *b, const float *x, job_context *ctx) {
    gemm_engine *g = &c->gemm;
    elem_type t = c->type;
    int B = c->batch, C = c->dim, Hd = c->hidden, tokens = c->tokens + 1, U = B * tokens;
    SCOPED(ctx, b->norm1_w, NULL, KPASS_FORWARD, KCLASS_BATCHNORM,
           layernorm_cat_forward(b->hu, b->mean1, b->rstd1, b->cls_in, x, tokens, b->norm1_w, b->norm1_b, U, C, CAIT_EPS,
                          t, ctx->stream));
    /* the class rows only */
    dense_forward(g, ctx, b->q, b->hu, tokens * C, b->q_w, typed_bias(c, b->q_b), B, C, C, t);
    dense_forward(g, ctx, b->kv, b->hu, C, b->kv_w, typed_bias(c, b->kv_b), U, C, 2 * C, t);
    SCOPED(ctx, NULL, "class_attention", KPASS_FORWARD, KCLASS_ATTENTION,
           class_attention_forward(b->o, b->p, b->q, b->kv, B, c->heads, tokens, c->head_dim,
                            1.0f / sqrtf((float)c->head_dim), t, ctx->stream));
    ls_linear_forward(g, ctx, b->cls_mid, b->proj_ws, b->proj_bs, b->cls_in, b->o, b->proj_w, b->proj_b, b->gamma_1,
                      B, C, C);
    SCOPED(ctx, b->norm2_w, NULL, KPASS_FORWARD, KCLASS_BATCHNORM,
           layernorm_forward(b->h2, b->mean2, b->rstd2, b->cls_mid, b->norm2_w, b->norm2_b, B, C, CAIT_EPS, t, ctx->stream));
    dense_forward(g, ctx, b->f, b->h2, C, b->fc1_w, typed_bias(c, b->fc1_b), B, C, Hd, t);
    gelu_forward(b->g, b->f, (size_t)B * Hd, t, ctx->stream);
    ls_linear_forward(g, ctx, b->cls_out, b->fc2_ws, b->fc2_bs, b->cls_mid, b->g, b->fc2_w, b->fc2_b, b->gamma_2, B,
                      Hd, C);
}

/* d_cls holds dL/d(cls_out) on entry and dL/d(cls_in) on return; the patch tokens' gradient is
 * written to d_res (accumulate_x 0) or added to it (with the bfloat16 copies under bf16). */
static void token_block_backward(cait *c, cait_token_block *b, const float *x, int accumulate_x, job_context *ctx) {
    gemm_engine *g = &c->gemm;
    elem_type t = c->type;
    int B = c->batch, C = c->dim, Hd = c->hidden, tokens = c->tokens + 1, U = B * tokens;
    ls_linear_backward(g, ctx, c->dF, GRAD(b->fc2_w), GRAD(b->fc2_b), GRAD(b->gamma_2), cls_run(c), b->g, b->fc2_ws,
                       b->fc2_w, b->fc2_b, b->gamma_2, c->ones, B, Hd, C, c->ls_scratch);
    gelu_backward(c->dF, c->dF, b->f, (size_t)B * Hd, t, ctx->stream);
    dense_backward(g, ctx, c->dh, C, 0.0f, GRAD(b->fc1_w), GRAD(b->fc1_b), c->dF, b->h2, C, b->fc1_w, c->ones, B, C,
                   Hd);
    SCOPED(ctx, b->norm2_w, NULL, KPASS_BACKWARD, KCLASS_BATCHNORM,
           layernorm_backward(c->d_cls, c->d_cls_half, GRAD(b->norm2_w), GRAD(b->norm2_b), c->dh, b->cls_mid, b->mean2,
                       b->rstd2, b->norm2_w, B, C, 1, t, c->ln_scratch, ctx->stream));
    ls_linear_backward(g, ctx, c->dO, GRAD(b->proj_w), GRAD(b->proj_b), GRAD(b->gamma_1), cls_run(c), b->o,
                       b->proj_ws, b->proj_w, b->proj_b, b->gamma_1, c->ones, B, C, C, c->ls_scratch);
    SCOPED(ctx, NULL, "class_attention", KPASS_BACKWARD, KCLASS_ATTENTION,
           class_attention_backward(c->dq, c->dqkv, c->dO, b->p, b->q, b->kv, B, c->heads, tokens, c->head_dim,
                             1.0f / sqrtf((float)c->head_dim), t, ctx->stream));
    dense_backward(g, ctx, c->dh, C, 0.0f, GRAD(b->kv_w), GRAD(b->kv_b), c->dqkv, b->hu, C, b->kv_w, c->ones, U, C,
                   2 * C);
    /* the query's share goes to the class rows of dh (beta = 1) */
    dense_backward(g, ctx, c->dh, tokens * C, 1.0f, GRAD(b->q_w), GRAD(b->q_b), c->dq, b->hu, tokens * C, b->q_w,
                   c->ones, B, C, C);
    SCOPED(ctx, b->norm1_w, NULL, KPASS_BACKWARD, KCLASS_BATCHNORM,
           layernorm_cat_backward(c->d_cls, c->d_cls_half, c->d_res, c->d_res_half, GRAD(b->norm1_w), GRAD(b->norm1_b),
                           c->dh, b->cls_in, x, tokens, b->mean1, b->rstd1, b->norm1_w, U, C, 1, accumulate_x, t,
                           c->ln_scratch, ctx->stream));
}

static void cait_forward(model *m, int training, job_context *ctx) {
    (void)training; /* no dropout, no batch statistics: both passes compute the same */
    cait *c = m->impl;
    int B = c->batch, C = c->dim;
    if (c->type == ELEM_BF16) {
        model_weights_to_half(ctx);
        cast_f32_to_bf16(c->no_decay_half, c->no_decay, c->no_decay_floats, ctx->stream);
    }
    patch_embed_forward(&c->gemm, ctx, c->x0, c->patches, m->input, c->patch_w, c->patch_b, c->pos_embed, B, c->size,
                        c->in_c, c->patch, C);
    for (int l = 0; l < CAIT_DEPTH; l++) block_forward(c, &c->blocks[l], ctx);
    broadcast_copy(c->cls0, c->cls_token, B, (size_t)C, ctx->stream);
    const float *x = c->blocks[CAIT_DEPTH - 1].out;
    for (int k = 0; k < CAIT_DEPTH_TOKEN; k++) token_block_forward(c, &c->token_blocks[k], x, ctx);
    /* timm normalises every token, but only the class token reaches the head */
    SCOPED(ctx, c->norm_w, NULL, KPASS_FORWARD, KCLASS_BATCHNORM,
           layernorm_forward(c->normed, c->mean_f, c->rstd_f, c->token_blocks[CAIT_DEPTH_TOKEN - 1].cls_out, c->norm_w,
                      c->norm_b, B, C, CAIT_EPS, c->type, ctx->stream));
    /* float logits (the loss reads them), as models/layers/linear.c */
    dense_forward(&c->gemm, ctx, m->logits, c->normed, C, c->head_w, c->head_b, B, C, c->classes, ELEM_F32);
}

static void cait_backward(model *m, job_context *ctx) {
    cait *c = m->impl;
    int B = c->batch, C = c->dim;
    const void *dlogits = m->dlogits;
    if (c->type == ELEM_BF16) {
        cast_f32_to_bf16(c->dlogits_half, m->dlogits, (size_t)B * c->classes, ctx->stream);
        dlogits = c->dlogits_half;
    }
    dense_backward(&c->gemm, ctx, c->dh, C, 0.0f, GRAD(c->head_w), GRAD(c->head_b), dlogits, c->normed, C,
                   c->head_w, c->ones, B, C, c->classes);
    SCOPED(ctx, c->norm_w, NULL, KPASS_BACKWARD, KCLASS_BATCHNORM,
           layernorm_backward(c->d_cls, c->d_cls_half, GRAD(c->norm_w), GRAD(c->norm_b), c->dh,
                       c->token_blocks[CAIT_DEPTH_TOKEN - 1].cls_out, c->mean_f, c->rstd_f, c->norm_w, B, C, 0, c->type,
                       c->ln_scratch, ctx->stream));
    const float *x = c->blocks[CAIT_DEPTH - 1].out;
    for (int k = CAIT_DEPTH_TOKEN - 1; k >= 0; k--)
        token_block_backward(c, &c->token_blocks[k], x, k != CAIT_DEPTH_TOKEN - 1, ctx);
    column_sum(GRAD(c->cls_token), c->d_cls, B, C, (size_t)C, ctx->stream);
    for (int l = CAIT_DEPTH - 1; l >= 0; l--) block_backward(c, &c->blocks[l], ctx);
    patch_embed_backward(&c->gemm, ctx, GRAD(c->patch_w), GRAD(c->patch_b), GRAD(c->pos_embed), c->d_res, res_run(c),
                         c->patches, c->patch_w, c->ones, B, c->size, c->in_c, c->patch, C);
    if (c->type == ELEM_BF16) model_grads_from_half(ctx);
}

static void cait_destroy(model *m) {
    cait *c = m->impl;
    if (!c) return;
    gemm_engine_destroy(&c->gemm);
    free(c->fills);
    free(c);
    m->impl = NULL;
}
