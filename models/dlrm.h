/* The DLRM-style recommender of facebookresearch/dlrm (dlrm_s_pytorch.py, DLRM_Net):
 *   13 dense features -> bottom MLP (Linear + ReLU on every layer, the last included);
 *   26 categorical features -> one embedding bag each (mode "sum");
 *   dot interaction of the bottom output and the 26 embeddings: the pairwise dot products of
 *   the 27 vectors, strictly lower triangle, concatenated after the bottom output;
 *   top MLP (ReLU between layers, sigmoid at the end), binary cross-entropy.
 * Training is the reference's plain SGD with its learning-rate policy; the embedding tables
 * are updated sparsely (only the rows a batch touched, kernels/dlrm_sparse.cu), so no
 * gradient or optimizer state the size of the tables ever exists.
 *
 * Memory: the tables are one device block beside the job's arena (they are parameters, but an
 * arena's parameters get mirrored gradients); the dense layers, activations and scratch come
 * from the arena. Like the image models the model is planned on the host first (sizes,
 * parameter names and counts, the footprint: `train --dry-run` allocates nothing), then
 * allocated, after a check that it fits the GPU's free memory.
 *
 * Parameter names are the reference's state_dict: emb_l.<t>.weight [rows, dim], and
 * bot_l.<2i>.weight/bias, top_l.<2i>.weight/bias (its MLPs are nn.Sequential with Linear at
 * even indices and ReLU/Sigmoid at odd ones). Checkpoints are safetensors files of exactly
 * that state_dict. */
#ifndef SUITE_DLRM_H
#define SUITE_DLRM_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/dlrm.h"
#include "models/core/arena.h"
#include "models/core/context.h"
#include "models/layers/linear.h"
#include "models/core/model.h"

#define DLRM_DENSE 13          /* dense features of a Criteo row */
#define DLRM_MAX_LAYERS 8
/* cuBLASLt's workspace, as models/layers/linear.c reserves it */
#define DLRM_WORKSPACE_BYTES ((size_t)32 << 20)
/* Fields of an input block (the loader's batch layout as well): each starts at a multiple of
 * DLRM_INPUT_ALIGN bytes, in this order: dense [batch, 13] float, indices [capacity] int32,
 * labels [batch] float, then offsets [tables * batch + 1] int32 when bags are used. */
#define DLRM_INPUT_ALIGN 256

typedef struct dlrm_config {
    char name[32];                     /* criteo-kaggle, criteo-terabyte, or a test's own */
    int tables, dim;
    int64_t rows[DLRM_MAX_TABLES];     /* rows of each table, after the --max-rows cap */
    int bottom[DLRM_MAX_LAYERS + 1];   /* widths from the dense input to dim */
    int bottom_layers;
    int top[DLRM_MAX_LAYERS + 1];      /* widths from the interaction width to 1 */
    int top_layers;
    int batch;
    int64_t max_rows;                  /* the cap applied (0: none) */
    int bag_capacity;                  /* 0: one index per sample and table (Criteo); > 0: bags
                                          through offsets, at most this many indices a batch */
    uint64_t seed;                     /* initial values */
} dlrm_config;

/* The named configurations (the --data value): criteo-kaggle (dim 16, bottom 13-512-256-64-16,
 * top 367-512-256-1, the Kaggle table sizes) and criteo-terabyte (dim 128, bottom
 * 13-512-256-128, top 479-1024-1024-512-256-1, the MLPerf Terabyte table sizes, the reference's
 * --max-ind-range=40000000), each table capped at max_rows (0: uncapped). -1 with a message for
 * an unknown name or bad sizes. */
int dlrm_config_named(dlrm_config *c, const char *name, int64_t max_rows, int batch, uint64_t seed,
                      char *err, size_t err_size);
/* The uncapped table sizes of a named configuration (26 entries), or NULL. */
const int64_t *dlrm_table_sizes(const char *name);
/* Checks a configuration (named or a test's own): -1 with a message naming the problem. */
int dlrm_config_check(const dlrm_config *c, char *err, size_t err_size);

typedef struct dlrm_input {
    float *dense;        /* [batch, bottom[0]] */
    int32_t *indices;    /* [capacity] */
    float *labels;       /* [batch], 0 or 1 */
    int32_t *offsets;    /* [tables * batch + 1] with bags, else NULL */
} dlrm_input;

/* Bytes of one input block; where its fields start (dense, indices, labels, offsets; the last
 * 0 without bags); the fields of a block at `base` (host or device). */
size_t dlrm_input_bytes(const dlrm_config *c);
void dlrm_input_offsets(const dlrm_config *c, size_t offsets[4]);
dlrm_input dlrm_input_at(const dlrm_config *c, void *base);

typedef struct dlrm_footprint {
    size_t embeddings;   /* the tables: rows x dim x 4 bytes, summed */
    size_t parameters;   /* dense layers */
    size_t gradients;    /* dense layers (the tables have none) */
    size_t activations, scratch, workspace;
    size_t total;        /* all of the above */
} dlrm_footprint;

typedef struct dlrm {
    dlrm_config config;
    dlrm_tables tables;
    uint64_t total_rows;
    int row_bits, capacity, interaction_width;
    param_table params;             /* reference names; data set once allocated */
    int64_t param_count;
    double flops_per_step;          /* forward + backward, multiply-adds x 2 */
    size_t sort_scratch_bytes;
    arena plan;                     /* the dense part, planned on the host */

    /* on the GPU, after dlrm_start */
    job_context *ctx;
    float *embeddings;              /* [total_rows, dim] */
    linear_layer bottom[DLRM_MAX_LAYERS], top[DLRM_MAX_LAYERS];
    float *bottom_out[DLRM_MAX_LAYERS], *bottom_grad[DLRM_MAX_LAYERS];
    float *top_out[DLRM_MAX_LAYERS], *top_grad[DLRM_MAX_LAYERS];
    float *emb_out, *emb_grad;      /* [batch, tables, dim] */
    float *inter, *inter_grad;      /* [batch, interaction_width] */
    float *probs;                   /* [batch], evaluation */
    uint32_t *keys, *vals, *sorted_keys, *sorted_vals; /* [capacity] */
    float *partials;                /* [capacity, dim] */
    void *sort_scratch;
    float *lr;
    int64_t *step;
    double *sums;                   /* [loss sum, correct] */
    void *input_block[2];           /* two input slots: one is filled while the other trains */
    dlrm_input input[2];
    dlrm_lr_policy policy;
    cudaStream_t side;              /* the sort runs here, beside the dense layers */
    cudaEvent_t fork, join;
    int use_graph;
    cudaGraph_t graph[2];
    cudaGraphExec_t exec[2];
    int64_t steps_taken;
} dlrm;

/* Host only: sizes, parameter table, counts and the dense plan. sort_scratch_bytes 0 plans
 * with an estimate (dry runs); dlrm_start re-plans with CUB's exact figure. */
int dlrm_plan(dlrm *m, const dlrm_config *c, size_t sort_scratch_bytes, char *err, size_t err_size);
dlrm_footprint dlrm_footprint_of(const dlrm *m);
/* GPU: checks that the plan fits the free memory (else a message listing each table's
 * rows x dim x 4 bytes, the total and the free memory, and nothing allocated), allocates,
 * builds, sets up the matmuls and draws the reference's initial values. 0, or 1 with a
 * message. ctx must be initialised; its arena is allocated here. */
int dlrm_start(dlrm *m, job_context *ctx, char *err, size_t err_size);
/* Embeddings U(-sqrt(1/rows), sqrt(1/rows)); Linear weights N(0, sqrt(2/(in+out))), biases
 * N(0, sqrt(1/out)), all from config.seed. */
void dlrm_init_params(dlrm *m);
/* After start (and any load): sets the policy, runs the step once without updating anything
 * (libraries set up outside the capture), zeroes the step counter and the sums, and with
 * use_graph captures one graph per input slot. */
void dlrm_prepare(dlrm *m, dlrm_lr_policy policy, int use_graph);
/* One training step on input slot `slot` (0 or 1), already filled: forward, loss, backward,
 * learning rate, SGD on the dense layers and on the touched rows. Enqueued on ctx->stream. */
void dlrm_train_step(dlrm *m, int slot);
/* The same step enqueued kernel by kernel: the captured body. */
void dlrm_train_step_body(dlrm *m, int slot);
/* Forward only on input slot `slot`: probs [batch] on the device, loss and hits of the first
 * n_valid rows added to the sums. */
void dlrm_eval_batch(dlrm *m, int slot, int n_valid);
/* Waits for the stream, returns the summed loss and correct count, zeroes them. */
void dlrm_take_sums(dlrm *m, double *loss_sum, double *correct);
/* The learning rate the next step uses (host formula). */
float dlrm_current_lr(const dlrm *m);
void dlrm_free(dlrm *m);

/* Checkpoints (models/dlrm_checkpoint.c): safetensors holding the reference's state_dict,
 * float32. Load is strict (every tensor present with its shape, nothing else) and checks the
 * whole file before changing anything. 0, or -1 with a message naming the file. */
int dlrm_save(const dlrm *m, const char *path, char *err, size_t err_size);
int dlrm_load(dlrm *m, const char *path, char *err, size_t err_size);

/* Metrics (models/dlrm_metrics.c, host only). ROC AUC of scores against 0/1 labels: the
 * probability that a random positive scores above a random negative, ties counted one half
 * (the rank-average / Mann-Whitney form, as sklearn.metrics.roc_auc_score). NaN when the labels
 * are all one class or memory runs out. */
double dlrm_roc_auc(const float *scores, const float *labels, size_t n);

#endif
