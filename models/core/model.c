#include "models/core/model.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/cait.h"
#include "kernels/check.h"
#include "models/efficientnet.h"
#include "models/resnet.h"
#include "models/core/rng.h"

void param_table_add(param_table *t, const param_entry *e) {
    if (t->count == t->capacity) {
        t->capacity = t->capacity ? 2 * t->capacity : 64;
        t->entries = realloc(t->entries, (size_t)t->capacity * sizeof *t->entries);
        if (!t->entries) {
            fprintf(stderr, "out of host memory for the parameter table\n");
            exit(1);
        }
    }
    t->entries[t->count++] = *e;
}

int64_t param_numel(const param_entry *e) {
    int64_t n = 1;
    for (int i = 0; i < e->ndim; i++) n *= e->shape[i];
    return n;
}

void param_table_free(param_table *t) {
    free(t->entries);
    memset(t, 0, sizeof *t);
}

/* Every family of image models: its names and its builder. A family adds one row. */
typedef struct model_family {
    const char *names[4];
    model *(*build)(const model_config *config, arena *a, char *err, size_t err_size);
    int has_bf16; /* builds with --precision bf16 */
} model_family;

static const model_family FAMILIES[] = {
    {{"resnet26", "resnet50", "resnet152"}, resnet_build, 1},
    {{"cait_xxs24"}, cait_build, 1},
    {{"efficientnetv2_s"}, efficientnet_build, 1},
};
#define FAMILY_COUNT (sizeof FAMILIES / sizeof *FAMILIES)

/* Built once, whichever job thread asks first. */
static char model_name_list[256];
static pthread_once_t model_name_list_once = PTHREAD_ONCE_INIT;

static void build_model_name_list(void) {
    for (size_t f = 0; f < FAMILY_COUNT; f++)
        for (int i = 0; i < 4 && FAMILIES[f].names[i]; i++)
            snprintf(model_name_list + strlen(model_name_list), sizeof model_name_list - strlen(model_name_list),
                     "%s%s", model_name_list[0] ? ", " : "", FAMILIES[f].names[i]);
}

const char *model_names(void) {
    pthread_once(&model_name_list_once, build_model_name_list);
    return model_name_list;
}

static const model_family *family_of(const char *name) {
    for (size_t f = 0; f < FAMILY_COUNT; f++)
        for (int i = 0; i < 4 && FAMILIES[f].names[i]; i++)
            if (!strcmp(name, FAMILIES[f].names[i])) return &FAMILIES[f];
    return NULL;
}

int model_known(const char *name) { return family_of(name) != NULL; }
int model_runs_bf16(const char *name) { return family_of(name) && family_of(name)->has_bf16; }

static const char *PRECISION_NAMES[] = {[PRECISION_TF32] = "tf32", [PRECISION_FP32] = "fp32",
                                         [PRECISION_BF16] = "bf16"};

const char *precision_name(precision_kind p) {
    return (unsigned)p < sizeof PRECISION_NAMES / sizeof *PRECISION_NAMES ? PRECISION_NAMES[p] : "unknown";
}

int precision_parse(const char *name, precision_kind *out) {
    for (size_t i = 0; name && i < sizeof PRECISION_NAMES / sizeof *PRECISION_NAMES; i++)
        if (!strcmp(name, PRECISION_NAMES[i])) {
            *out = (precision_kind)i;
            return 0;
        }
    return -1;
}

static char bf16_model_list[256];
static pthread_once_t bf16_model_list_once = PTHREAD_ONCE_INIT;

static void build_bf16_model_list(void) {
    for (size_t f = 0; f < FAMILY_COUNT; f++)
        for (int i = 0; i < 4 && FAMILIES[f].has_bf16 && FAMILIES[f].names[i]; i++)
            snprintf(bf16_model_list + strlen(bf16_model_list), sizeof bf16_model_list - strlen(bf16_model_list),
                     "%s%s", bf16_model_list[0] ? ", " : "", FAMILIES[f].names[i]);
}

const char *precision_bf16_models(void) {
    pthread_once(&bf16_model_list_once, build_bf16_model_list);
    return bf16_model_list;
}

elem_type model_activation_type(const model_config *config) {
    return config->precision == PRECISION_BF16 ? ELEM_BF16 : ELEM_F32;
}

/* The checks are here, not in the models, so no model has to know about the trainer: inside
 * trainer_step_body the optimizer at the end of the previous step (or the eager warm-up pass in
 * trainer_init, which casts) has already written the copy, and this step's optimizer reads the
 * bfloat16 gradients itself. Data-parallel hooks all-reduce the float32 gradients, so with hooks
 * the gradients are still cast here. */
void model_weights_to_half(job_context *ctx) {
    if (ctx->optimizer_owns_half) return;
    cast_f32_to_bf16(arena_half_weights(&ctx->arena), (const float *)ctx->arena.params,
                     arena_decay_floats(&ctx->arena), ctx->stream);
}

void model_grads_from_half(job_context *ctx) {
    if (ctx->optimizer_owns_half && !ctx->grad_hooks) return;
    cast_bf16_to_f32(arena_grads(&ctx->arena), arena_half_grads(&ctx->arena), arena_decay_floats(&ctx->arena),
                     ctx->stream);
}

void *model_take_activations(arena *a, elem_type type, size_t n) {
    return arena_take(a, ARENA_ACTIVATIONS, n * elem_bytes(type));
}

void model_conv_bn_init(conv_layer *c, batchnorm_layer *bn, arena *a, conv_shape shape, int bn_rows, act_kind act,
                        elem_type type) {
    shape.data_type = type == ELEM_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    conv_init(c, a, shape);
    batchnorm_init(bn, a, bn_rows, shape.out_c, act);
    bn->type = type;
}

model *model_build(const model_config *config, arena *a, char *err, size_t err_size) {
    const model_family *family = family_of(config->name);
    if (family && config->precision == PRECISION_BF16 && !family->has_bf16) {
        snprintf(err, err_size, "%s does not run in bf16 yet: --precision bf16 is for %s", config->name,
                 precision_bf16_models());
        return NULL;
    }
    if (family && (unsigned)config->precision > PRECISION_BF16) {
        snprintf(err, err_size, "precision %d: expected tf32, fp32 or bf16", (int)config->precision);
        return NULL;
    }
    int half = config->precision == PRECISION_BF16;
    if (family && a->planning) a->half_weights = half;
    if (family && !a->planning && a->half_weights != half) {
        snprintf(err, err_size, "%s: the arena was planned for %s weights, the model is %s", config->name,
                 a->half_weights ? "bf16" : "float32", precision_name(config->precision));
        return NULL;
    }
    if (family) return family->build(config, a, err, err_size);
    snprintf(err, err_size, "unknown model '%s': expected one of %s", config->name, model_names());
    return NULL;
}

void model_free(model *m) {
    if (!m) return;
    if (m->destroy) m->destroy(m);
    param_table_free(&m->params);
    free(m);
}

int64_t model_param_count(const model *m) {
    int64_t n = 0;
    for (int i = 0; i < m->params.count; i++)
        if (m->params.entries[i].kind == PARAM_WEIGHT || m->params.entries[i].kind == PARAM_NO_DECAY)
            n += param_numel(&m->params.entries[i]);
    return n;
}

void model_init_params(model *m, job_context *ctx) {
    uint64_t state = m->config.seed * 0x2545F4914F6CDD1Dull + 1;
    size_t capacity = 0;
    float *host = NULL;
    for (int i = 0; i < m->params.count; i++) {
        const param_entry *e = &m->params.entries[i];
        if (e->init == PARAM_INIT_NONE) continue;
        size_t n = (size_t)param_numel(e);
        if (n > capacity) {
            free(host);
            capacity = n;
            host = malloc(n * sizeof *host);
            if (!host) {
                fprintf(stderr, "out of host memory initialising %s\n", e->name);
                exit(1);
            }
        }
        /* Elements are i.i.d., so the storage order (KRSC or not) does not change the draw's law. */
        if (e->init == PARAM_INIT_TRUNC_NORMAL_002) {
            for (size_t j = 0; j < n; j++) {
                float v;
                do v = rng_normal(&state); while (v < -100.0f || v > 100.0f); /* |0.02 v| <= 2 */
                host[j] = 0.02f * v;
            }
        } else if (e->init == PARAM_INIT_KAIMING_FAN_OUT) {
            float std = sqrtf(2.0f / (float)e->fan);
            for (size_t j = 0; j < n; j++) host[j] = std * rng_normal(&state);
        } else {
            float bound = 1.0f / sqrtf((float)e->fan);
            for (size_t j = 0; j < n; j++) host[j] = bound * (2.0f * rng_uniform(&state) - 1.0f);
        }
        CHECK_CUDA(cudaMemcpyAsync(e->data, host, n * sizeof *host, cudaMemcpyHostToDevice, ctx->stream));
        CHECK_CUDA(cudaStreamSynchronize(ctx->stream)); /* host buffer is reused next iteration */
    }
    free(host);
}

void model_backward(model *m, job_context *ctx) {
    grad_hooks *h = ctx->grad_hooks;
    if (h) h->begin(h->user);
    m->backward(m, ctx);
    if (h) h->end(h->user);
}
