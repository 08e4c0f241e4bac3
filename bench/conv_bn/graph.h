/* cuDNN graph-API operation graphs of a convolution with batch norm fused around it, for the
 * probe (bench/conv_bn_probe.c), and the search over every engine configuration the heuristics
 * propose for one. The graphs (NHWC; x, w, y of the shape's data type, 16-bit here):
 *
 *   CB_CONV            y = conv(x, w)
 *   CB_STATS           y = conv(x, w); sum, sqsum = per-channel sums of y      (GEN_STATS)
 *   CB_PROLOGUE        y = conv(relu(x * scale + bias), w)                     (three POINTWISE ops)
 *   CB_BOTH            both of the above: cuDNN's ConvBNfprop pattern
 *   CB_WGRAD           dw = wgrad(x, dy)
 *   CB_WGRAD_PROLOGUE  dw = wgrad(relu(x * scale + bias), dy)                  (ConvBNwgrad)
 *
 * scale and bias are [1, C, 1, 1] of param_type (float or the data type); the prologue's
 * intermediate tensors are virtual, of inter_type; sum and sqsum are float [1, K, 1, 1]. */
#ifndef BENCH_CONV_BN_GRAPH_H
#define BENCH_CONV_BN_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "models/layers/conv_shape.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CB_CONV, CB_STATS, CB_PROLOGUE, CB_BOTH, CB_WGRAD, CB_WGRAD_PROLOGUE, CB_KINDS } cb_kind;
const char *cb_kind_name(cb_kind kind);
int cb_kind_has_prologue(cb_kind kind);

typedef struct cb_spec {
    cb_kind kind;
    conv_shape shape;           /* NHWC, data_type CUDNN_DATA_BFLOAT16 or CUDNN_DATA_HALF */
    cudnnDataType_t param_type; /* of scale and bias */
    cudnnDataType_t inter_type; /* of the prologue's virtual tensors */
} cb_spec;

/* The device buffers a graph's variant pack names (those its kind does not use may be NULL). */
typedef struct cb_buffers {
    void *x, *w, *y, *scale, *bias, *dy, *dw;
    float *sum, *sqsum;
    void *workspace;
    size_t workspace_limit;
} cb_buffers;

/* Called after one run of a configuration, before it is timed: 1 if its outputs pass. */
typedef int (*cb_check_fn)(void *arg, const cb_buffers *b);

typedef struct cb_result {
    int graph_refused;          /* the operation graph itself did not finalize */
    int proposed, repeated, refused, too_big, failed_check, timed, skipped;
    float ms;                   /* the fastest passing configuration's median, < 0 if none */
    char name[96];              /* its engine and knobs, "eng<id>_k<knob>=<value>..." */
    size_t workspace_bytes;
    char first_refusal[160];    /* what the first refusal said */
    cudnnBackendDescriptor_t plan, config; /* the kept plan (and its configuration) */
} cb_result;

/* Proposes (heuristic modes A, B and FALLBACK), builds, runs, checks (check may be NULL: every
 * configuration passes) and times (median of `runs` after a warm-up) every configuration for
 * the graph of `spec` (the first max_tried distinct ones when max_tried > 0, in the heuristics'
 * order), keeping the fastest that passed. A status from cuDNN that refuses a
 * graph, plan or run is counted, never fatal: the probe is asking what this cuDNN can do. */
void cb_search(cb_result *r, const cb_spec *spec, cudnnHandle_t cudnn, cudaStream_t stream, const cb_buffers *b,
               cb_check_fn check, void *check_arg, int runs, int max_tried);
/* Runs the kept plan once on the buffers (the same shapes), on the handle's stream. */
void cb_execute(const cb_result *r, const cb_spec *spec, cudnnHandle_t cudnn, const cb_buffers *b);
/* "0.114 ms (eng2_k2=4..., 9 timed of 12 proposed, 3 MB)" or "none (why)". */
void cb_describe(const cb_result *r, char *out, size_t size);
void cb_result_free(cb_result *r);

#ifdef __cplusplus
}
#endif
#endif
