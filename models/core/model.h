/* A model: what every image family (models/resnet.c, efficientnet.c, cait.c) builds. It owns
 * its layers (in `impl`), exposes a parameter table with timm/PyTorch state_dict names for
 * checkpoints and counting, fixed input/label/logit buffers for the captured training step, and
 * three passes. Built once against a planning arena (sizes only, no GPU), then against the real
 * one (by name: models/model_build.h); setup() then creates descriptors and measures algorithms. */
#ifndef SUITE_MODEL_H
#define SUITE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "models/core/arena.h"
#include "models/core/context.h"
#include "base/precision.h"
#include "models/core/wgrad_lane.h"

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
    int side_workspaces;           /* library workspaces it may hold beside the context's (a lane's),
                                    * each at most the context's: what the plan bounds */
    size_t side_workspace_bytes;   /* what they hold once set up */
    wgrad_lane_choice wgrad_lane;  /* set up by a family with a lane (ResNet); zero: none */
    void (*setup)(model *m, job_context *ctx);
    void (*forward)(model *m, int training, job_context *ctx);
    void (*backward)(model *m, job_context *ctx); /* from dlogits to every parameter gradient */
    void (*destroy)(model *m);
    void *impl;
};

void model_free(model *m);
/* Trainable parameters, as timm counts them (sum of p.numel() over model.parameters()). */
int64_t model_param_count(const model *m);
/* bf16 models: the bfloat16 copy of the weights with decay from the float32 masters (at the start
 * of each forward), and the float32 gradients from the bfloat16 ones the layers wrote (at the
 * end of each backward). One pass each over the weight region, on the job's stream; none while
 * ctx->optimizer_owns_half says the trainer's optimizer does that work (models/core/context.h). */
void model_weights_to_half(job_context *ctx);
void model_grads_from_half(job_context *ctx);
/* m->backward between the context's gradient hooks (begin, end): what a training step calls. */
void model_backward(model *m, job_context *ctx);
/* Parameter initialisation the family's reference uses, drawn on the host from config.seed. */
void model_init_params(model *m, job_context *ctx);

#endif
