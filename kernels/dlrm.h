/* Kernels of the DLRM-style recommender (models/dlrm.c) that cuBLAS does not provide: the
 * embedding-bag lookup over all tables at once, the sparse SGD update of the rows a batch
 * touched, the dot interaction, ReLU, sigmoid + binary cross-entropy, the reference's
 * learning-rate policy and the tables' initial values. Conventions as kernels/kernels.h:
 * arguments are outputs, inputs, sizes, scratch, stream; launchers check their arguments
 * (kernel_bad_input, exit 2) and their launch. CPU references live in tests/models/gpu_dlrm.c. */
#ifndef SUITE_KERNELS_DLRM_H
#define SUITE_KERNELS_DLRM_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/schedule.h" /* SUITE_HD */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- embedding tables ----------------------------------------------------------------------
 * All tables live in one [total_rows, dim] float32 block: table t owns the global rows
 * [base[t], base[t] + rows[t]). Global rows are uint32; DLRM_NO_ROW (all ones) marks unused
 * sort slots, so the tables together hold fewer than 2^32 - 1 rows. */
#define DLRM_MAX_TABLES 64
#define DLRM_NO_ROW 0xFFFFFFFFu

typedef struct dlrm_tables {
    int count;                        /* tables */
    int dim;                          /* floats per row */
    uint32_t rows[DLRM_MAX_TABLES];   /* rows of each table, >= 1 */
    uint32_t base[DLRM_MAX_TABLES];   /* first global row of each table */
} dlrm_tables;

/* Index hashing, as the reference's --max-ind-range (index % range): index i of a table with
 * `rows` rows selects row i mod rows, Python's modulo, so negative indices wrap as well. With
 * uncapped tables and in-range indices it is the identity. Host and device share it. */
static inline SUITE_HD uint32_t dlrm_hash_index(int64_t index, uint32_t rows) {
    int64_t r = index % (int64_t)rows;
    return (uint32_t)(r < 0 ? r + (int64_t)rows : r);
}

/* One batch of lookups. Without offsets each sample looks up one index per table:
 * indices[b * tables + t] (the Criteo layout, row-major [batch, tables]). With offsets, bags
 * hold any number of indices, PyTorch's EmbeddingBag(offsets) per table, tables concatenated:
 * bag (b, t) holds indices[offsets[t * batch + b] .. offsets[t * batch + b + 1]), and
 * offsets[tables * batch] is the number of indices (at most capacity; ranges are clamped to
 * [0, capacity], so bad offsets cannot read out of bounds). */
typedef struct dlrm_lookups {
    int batch;
    const int32_t *indices;           /* device */
    const int32_t *offsets;           /* device [tables * batch + 1], or NULL */
    int capacity;                     /* indices the buffers hold: batch * tables without offsets */
} dlrm_lookups;

/* out[b, t, :] = sum over bag (b, t) of the rows its indices select (mode "sum"; an empty bag
 * gives zeros). Training passes keys/vals [capacity]: each lookup's global row and the row of
 * out it feeds (b * tables + t), the unused tail marked DLRM_NO_ROW; evaluation passes NULL. */
void dlrm_embedding_bag_forward(float *out, uint32_t *keys, uint32_t *vals, const float *weights,
                                dlrm_tables tables, dlrm_lookups lookups, cudaStream_t stream);

/* Bits of a global row (sort width): the smallest b with 2^b > total_rows, so DLRM_NO_ROW's low
 * bits sort after every real row. */
int dlrm_row_bits(uint64_t total_rows);
/* CUB's temporary storage for dlrm_sort_lookups (asks the device: needs a GPU). */
size_t dlrm_sort_scratch_bytes(int capacity, int row_bits);
/* A host estimate of the same (an upper bound for `train --dry-run`, which has no GPU). */
size_t dlrm_sort_scratch_estimate(int capacity);
/* Stable radix sort of the (key, val) pairs by key (CUB DeviceRadixSort, low row_bits bits):
 * lookups of one row become one contiguous run, in their original order. Capturable. */
void dlrm_sort_lookups(uint32_t *sorted_keys, uint32_t *sorted_vals, const uint32_t *keys,
                       const uint32_t *vals, int capacity, int row_bits, void *scratch,
                       size_t scratch_bytes, cudaStream_t stream);
/* Sparse SGD after dlrm_sort_lookups: for each row the batch touched,
 *   weights[row] -= lr * sum of dout[val] over its lookups,
 * summed in sorted order: runs are cut into pieces of DLRM_SPARSE_PIECE lookups summed into
 * partials [capacity, dim] (scratch), then each run adds its pieces in order. No atomics, so
 * the result is the same on every run; rows the batch did not touch are not written. */
#define DLRM_SPARSE_PIECE 32
void dlrm_sparse_sgd(float *weights, const uint32_t *sorted_keys, const uint32_t *sorted_vals,
                     const float *dout, const float *lr, int capacity, int dim, float *partials,
                     cudaStream_t stream);

/* ---- dot interaction -----------------------------------------------------------------------
 * Features v_0 = x[b] (the bottom MLP's output) and v_{1+t} = emb[b, t]; F = tables + 1.
 * r[b] = [x[b], Z[b]], Z the dot products <v_i, v_j> for i > j in the reference's order
 * (i = 1..F-1, j = 0..i-1): r is [batch, dim + F (F - 1) / 2]. */
int dlrm_interaction_width(int tables, int dim);
void dlrm_interaction_forward(float *r, const float *x, const float *emb, int batch, int tables,
                              int dim, cudaStream_t stream);
/* dx = dr[:, :dim] + d/dx, demb = d/demb of Z's part; both overwritten. */
void dlrm_interaction_backward(float *dx, float *demb, const float *dr, const float *x,
                               const float *emb, int batch, int tables, int dim,
                               cudaStream_t stream);

/* ---- ReLU (in place) -----------------------------------------------------------------------*/
void dlrm_relu_forward(float *y, size_t n, cudaStream_t stream);
/* dy *= (y > 0), y the ReLU's output. */
void dlrm_relu_backward(float *dy, const float *y, size_t n, cudaStream_t stream);

/* ---- sigmoid + binary cross-entropy --------------------------------------------------------
 * p = sigmoid(z); loss = -(y log p + (1 - y) log(1 - p)), each log at least -100 (torch's
 * BCELoss), computed from z without cancellation. Training: dz = (p - y) / batch (the gradient
 * of the mean), and sums[0] += sum of losses, sums[1] += samples with (p > 0.5) == y (the
 * reference rounds its output). sums are double: an epoch adds millions of rows. */
void dlrm_bce_forward_backward(float *dz, double *sums, const float *z, const float *labels,
                               int batch, cudaStream_t stream);
/* Evaluation: p for every row, loss and hits of the first n_valid rows added to sums. */
void dlrm_bce_eval(float *p, double *sums, const float *z, const float *labels, int batch,
                   int n_valid, cudaStream_t stream);

/* ---- learning rate -------------------------------------------------------------------------
 * The reference's LRPolicyScheduler (dlrm_s_pytorch.py): its step counter s starts at 1 for the
 * first update; linear warm-up lr * s / warmup while s < warmup; polynomial (square) decay
 * lr * ((decay - (s - start)) / decay)^2, at least 1e-7, while start <= s < start + decay; in
 * between and afterwards the last value holds. decay_steps 0: no decay (lr after warm-up). */
typedef struct dlrm_lr_policy {
    float base_lr;
    long warmup_steps, decay_start_step, decay_steps;
} dlrm_lr_policy;

static inline SUITE_HD float dlrm_lr_at(const dlrm_lr_policy *p, long step) {
    long s = step + 1, w = p->warmup_steps, d = p->decay_steps, start = p->decay_start_step;
    if (w > 0 && s < w) return p->base_lr * (float)s / (float)w;
    if (d <= 0) return p->base_lr;
    if (s >= start + d) s = start + d - 1;
    if (s >= start) {
        float f = (float)(d - (s - start)) / (float)d, lr = p->base_lr * f * f;
        return lr > 1e-7f ? lr : 1e-7f;
    }
    return w > 1 ? p->base_lr * (float)(w - 1) / (float)w : p->base_lr;
}

/* *lr = dlrm_lr_at(policy, *step); ++*step. One thread, inside the captured step. */
void dlrm_lr_step(float *lr, int64_t *step, dlrm_lr_policy policy, cudaStream_t stream);

/* ---- initial values ------------------------------------------------------------------------
 * x[i] = bound * (2u - 1), u uniform in [0, 1) from a counter-based hash of (seed, i): tables
 * of tens of gigabytes are drawn on the GPU, the same for the same seed on any device. */
void dlrm_uniform_fill(float *x, size_t n, float bound, uint64_t seed, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
