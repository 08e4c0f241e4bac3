/* A model: what every family (resnet.c, and later efficientnet.c, cait.c, dlrm.c) builds. It owns
 * its layers (in `impl`), exposes a parameter table with timm/PyTorch state_dict names for
 * checkpoints and counting, fixed input/label/logit buffers for the captured training step, and
 * three passes. Built once against a planning arena (sizes only, no GPU), then against the real
 * one; setup() then creates descriptors and measures algorithms. */
#ifndef SUITE_MODEL_H
#define SUITE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "models/core/arena.h"
#include "models/layers/batchnorm.h"
#include "models/core/context.h"
#include "models/layers/conv.h"

/* Numerics of a job. tf32 (the default, 0): float32 tensors, TF32 tensor-core convolutions and
 * matmuls; fp32: strict float32; bf16: mixed precision as torch.autocast(dtype=torch.bfloat16)
 * does it: bfloat16 activations and convolution/matmul inputs with float32 accumulation,
 * float32 master weights (a bfloat16 copy is made each forward), gradients reduced and applied
 * in float32, batch-norm statistics and the loss in float32, no loss scaling. */
typedef enum { PRECISION_TF32 = 0, PRECISION_FP32 = 1, PRECISION_BF16 = 2 } precision_kind;
/* "tf32", "fp32", "bf16". */
const char *precision_name(precision_kind p);
/* 0 with *out set for a known name, -1 otherwise. */
int precision_parse(const char *name, precision_kind *out);
/* The models that build in bf16, from the family table (for messages): "resnet26, ...". */
const char *precision_bf16_models(void);

typedef struct model_config {
    char name[32];      /* resnet26, resnet50, resnet152, efficientnetv2_s, cait_xxs24 */
    int batch;
    int image_size;     /* input height = width */
    int in_channels;    /* 3 */
    int classes;
    uint64_t seed;      /* initialisation */
    int patch_size;     /* vision transformers: patch side (0: the family's default, 16) */
    float drop_path;    /* stochastic depth rate at the last block (0: off) */
    precision_kind precision;
} model_config;

/* The element type of the model's activations under its precision. */
elem_type model_activation_type(const model_config *config);

typedef enum {
    PARAM_WEIGHT,    /* trainable, weight decay applies */
    PARAM_NO_DECAY,  /* trainable, no weight decay (BN affine, biases) */
    PARAM_BUFFER,    /* saved, not trained (running statistics) */
    PARAM_COUNTER    /* int64 scalar on the host (num_batches_tracked) */
} param_kind;

typedef enum {
    PARAM_INIT_NONE,          /* set by the family's own code (BN, buffers) */
    PARAM_INIT_KAIMING_FAN_OUT,/* normal, std sqrt(2 / fan_out) (timm ResNet convs) */
    PARAM_INIT_UNIFORM_FAN_IN, /* U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (PyTorch Linear default) */
    PARAM_INIT_TRUNC_NORMAL_002 /* trunc_normal_(std=0.02), cut at +-2 (timm ViT/CaiT weights) */
} param_init;

#define PARAM_NAME_MAX 96
typedef struct param_entry {
    char name[PARAM_NAME_MAX];
    param_kind kind;
    int ndim;
    int64_t shape[4];    /* as PyTorch reports it, e.g. conv [out, in, kh, kw] */
    int krsc;            /* stored on the GPU as [out, kh, kw, in] (cuDNN NHWC filters) */
    param_init init;
    int64_t fan;         /* fan_in or fan_out for init */
    float *data;         /* device (NULL while planning) */
    int64_t *counter;    /* PARAM_COUNTER: host */
} param_entry;

typedef struct param_table {
    int count, capacity;
    param_entry *entries;
} param_table;

void param_table_add(param_table *t, const param_entry *e);
int64_t param_numel(const param_entry *e);
void param_table_free(param_table *t);

typedef struct model model;
struct model {
    model_config config;
    param_table params;
    int64_t num_batches_tracked;   /* optimizer steps taken in training mode */
    float *input;                  /* [batch, image_size, image_size, in_channels] */
    int32_t *labels;               /* [batch] */
    float *logits, *dlogits;       /* [batch, classes] */
    double flops_per_step_forward; /* multiply-adds x 2 for one forward of a whole batch */
    int side_workspaces;           /* library workspaces it holds beside the context's (a lane's) */
    void (*setup)(model *m, job_context *ctx);
    void (*forward)(model *m, int training, job_context *ctx);
    void (*backward)(model *m, job_context *ctx); /* from dlogits to every parameter gradient */
    void (*destroy)(model *m);
    void *impl;
};

/* Names of the models that can be built, for error messages: "resnet26, resnet50, resnet152". */
const char *model_names(void);
int model_known(const char *name);
/* Whether the named model builds with PRECISION_BF16. */
int model_runs_bf16(const char *name);
/* Builds the named model against `a` (planning or real). NULL with a message in err for an unknown
 * name, impossible sizes or a precision the family does not run in; no GPU work. A bf16 model
 * marks a planning arena half_weights (arena.h), so the real one keeps the bfloat16 copies. */
model *model_build(const model_config *config, arena *a, char *err, size_t err_size);
void model_free(model *m);
/* Trainable parameters, as timm counts them (sum of p.numel() over model.parameters()). */
int64_t model_param_count(const model *m);
/* bf16 models: the bfloat16 copy of the weights with decay from the float32 masters (at the start
 * of each forward), and the float32 gradients from the bfloat16 ones the layers wrote (at the
 * end of each backward). One pass each over the weight region, on the job's stream; none while
 * ctx->optimizer_owns_half says the trainer's optimizer does that work (models/core/context.h). */
void model_weights_to_half(job_context *ctx);
void model_grads_from_half(job_context *ctx);
/* Building in the model's element type (model_activation_type): n activations from the arena's
 * activation region; a convolution of that type and the batch norm that follows it (bn_rows rows
 * of the convolution's output channels). */
void *model_take_activations(arena *a, elem_type type, size_t n);
void model_conv_bn_init(conv_layer *c, batchnorm_layer *bn, arena *a, conv_shape shape, int bn_rows, act_kind act,
                        elem_type type);
/* m->backward between the context's gradient hooks (begin, end): what a training step calls. */
void model_backward(model *m, job_context *ctx);
/* Parameter initialisation the family's reference uses, drawn on the host from config.seed. */
void model_init_params(model *m, job_context *ctx);

#endif
