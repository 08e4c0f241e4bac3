/* cuDNN graphs of a convolution with batch norm around it (graph.h). The attribute sequence is
 * models/layers/conv_engine.c's (tensors, convolution, operation, graph, heuristics, plan, variant
 * pack) with these nodes added:
 *   POINTWISE      MUL (x, scale), ADD (+ bias), RELU_FWD: PW_DESCRIPTOR (MODE, MATH_PREC float),
 *                  XDESC, BDESC (the per-channel operand), YDESC
 *   GEN_STATS      MODE SUM_SQSUM, MATH_PREC float, XDESC y, SUMDESC, SQSUMDESC
 * Unlike conv_engine.c, a status that refuses a graph, a plan or a run is counted, whatever its
 * category: the probe's question is what the loaded cuDNN takes. Building a descriptor wrongly
 * (a SetAttribute or a tensor's Finalize failing) is still this file's bug and stops the program. */
#include "bench/conv_bn/graph.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "models/core/gpu_timer.h"
#include "models/layers/cudnn_backend.h"

enum {
    UID_X = 'x', UID_W = 'w', UID_Y = 'y', UID_SCALE = 's', UID_BIAS = 'b', UID_SUM = 'u', UID_SQSUM = 'q',
    UID_DY = 'g', UID_DW = 'd', UID_SCALED = 1001, UID_BIASED = 1002, UID_ACTIVATED = 1003
};
enum { MAX_CONFIGS_PER_MODE = 64, KEY_SIZE = 96, MAX_NODES = 6, MAX_TENSORS = 12 };

#define SET_ATTR(desc, name, type, count, value) \
    CHECK_CUDNN(cudnnBackendSetAttribute((desc), (name), (type), (count), (value)))

static const char *const KIND_NAMES[CB_KINDS] = {"conv", "stats", "prologue", "both", "wgrad", "wgrad+prologue"};

const char *cb_kind_name(cb_kind kind) { return (unsigned)kind < CB_KINDS ? KIND_NAMES[kind] : "unknown"; }

int cb_kind_has_prologue(cb_kind kind) {
    return kind == CB_PROLOGUE || kind == CB_BOTH || kind == CB_WGRAD_PROLOGUE;
}

static int kind_has_stats(cb_kind kind) { return kind == CB_STATS || kind == CB_BOTH; }
static int kind_is_wgrad(cb_kind kind) { return kind == CB_WGRAD || kind == CB_WGRAD_PROLOGUE; }



/* Everything one graph is made of, destroyed together. */
typedef struct graph_parts {
    cudnnBackendDescriptor_t tensors[MAX_TENSORS], descs[MAX_NODES], ops[MAX_NODES], graph;
    int n_tensors, n_descs, n_ops;
} graph_parts;

static void parts_free(graph_parts *g) {
    cudnn_backend_destroy(g->graph);
    for (int i = 0; i < g->n_ops; i++) cudnn_backend_destroy(g->ops[i]);
    for (int i = 0; i < g->n_descs; i++) cudnn_backend_destroy(g->descs[i]);
    for (int i = 0; i < g->n_tensors; i++) cudnn_backend_destroy(g->tensors[i]);
    memset(g, 0, sizeof *g);
}

/* A tensor of dims [n, c, h, w] laid out NHWC (a filter [k, c, r, s] as KRSC). */
static cudnnBackendDescriptor_t tensor(graph_parts *g, int64_t uid, cudnnDataType_t type, int64_t n, int64_t c,
                                       int64_t h, int64_t w, int is_virtual) {
    const int64_t dims[4] = {n, c, h, w}, strides[4] = {h * w * c, 1, w * c, c}, alignment = 16;
    cudnnBackendDescriptor_t t = cudnn_backend_tensor(uid, type, dims, strides, alignment, is_virtual);
    g->tensors[g->n_tensors++] = t;
    return t;
}

static cudnnBackendDescriptor_t pointwise(graph_parts *g, cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                                          cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y) {
    const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t desc = cudnn_backend_create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    SET_ATTR(desc, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    SET_ATTR(desc, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
    CHECK_CUDNN(cudnnBackendFinalize(desc));
    g->descs[g->n_descs++] = desc;
    cudnnBackendDescriptor_t op = cudnn_backend_create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    SET_ATTR(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc);
    SET_ATTR(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (b) SET_ATTR(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b);
    SET_ATTR(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    CHECK_CUDNN(cudnnBackendFinalize(op));
    g->ops[g->n_ops++] = op;
    return op;
}

/* relu(x * scale + bias) as three pointwise nodes; returns the activated (virtual) tensor. */
static cudnnBackendDescriptor_t prologue(graph_parts *g, const cb_spec *spec, cudnnBackendDescriptor_t x) {
    const conv_shape *s = &spec->shape;
    cudnnBackendDescriptor_t scale = tensor(g, UID_SCALE, spec->param_type, 1, s->in_c, 1, 1, 0);
    cudnnBackendDescriptor_t bias = tensor(g, UID_BIAS, spec->param_type, 1, s->in_c, 1, 1, 0);
    cudnnBackendDescriptor_t scaled =
        tensor(g, UID_SCALED, spec->inter_type, s->batch, s->in_c, s->h_in, s->w_in, 1);
    cudnnBackendDescriptor_t biased =
        tensor(g, UID_BIASED, spec->inter_type, s->batch, s->in_c, s->h_in, s->w_in, 1);
    cudnnBackendDescriptor_t activated =
        tensor(g, UID_ACTIVATED, spec->inter_type, s->batch, s->in_c, s->h_in, s->w_in, 1);
    pointwise(g, CUDNN_POINTWISE_MUL, x, scale, scaled);
    pointwise(g, CUDNN_POINTWISE_ADD, scaled, bias, biased);
    pointwise(g, CUDNN_POINTWISE_RELU_FWD, biased, NULL, activated);
    return activated;
}

static cudnnBackendDescriptor_t convolution(graph_parts *g, const conv_shape *s) {
    cudnnBackendDescriptor_t conv = cudnn_backend_convolution(s);
    g->descs[g->n_descs++] = conv;
    return conv;
}

/* Which attribute carries which tensor: forward (x, w, y) and backward-filter (x, dw, dy). */
typedef struct conv_attributes {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
} conv_attributes;

static const conv_attributes FORWARD = {
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
static const conv_attributes WGRAD = {
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};

static void conv_node(graph_parts *g, const conv_shape *s, int wgrad, cudnnBackendDescriptor_t x,
                      cudnnBackendDescriptor_t w, cudnnBackendDescriptor_t y) {
    const conv_attributes *a = wgrad ? &WGRAD : &FORWARD;
    const float alpha = 1.0f, beta = 0.0f;
    cudnnBackendDescriptor_t conv = convolution(g, s);
    cudnnBackendDescriptor_t op = cudnn_backend_create(a->type);
    SET_ATTR(op, a->x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    SET_ATTR(op, a->w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
    SET_ATTR(op, a->y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    SET_ATTR(op, a->conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
    SET_ATTR(op, a->alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
    SET_ATTR(op, a->beta, CUDNN_TYPE_FLOAT, 1, &beta);
    CHECK_CUDNN(cudnnBackendFinalize(op));
    g->ops[g->n_ops++] = op;
}

static void gen_stats(graph_parts *g, const conv_shape *s, cudnnBackendDescriptor_t y) {
    const cudnnGenStatsMode_t mode = CUDNN_GENSTATS_SUM_SQSUM;
    const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
    cudnnBackendDescriptor_t sum = tensor(g, UID_SUM, CUDNN_DATA_FLOAT, 1, s->out_c, 1, 1, 0);
    cudnnBackendDescriptor_t sqsum = tensor(g, UID_SQSUM, CUDNN_DATA_FLOAT, 1, s->out_c, 1, 1, 0);
    cudnnBackendDescriptor_t op = cudnn_backend_create(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
    SET_ATTR(op, CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, 1, &mode);
    SET_ATTR(op, CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
    SET_ATTR(op, CUDNN_ATTR_OPERATION_GENSTATS_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    SET_ATTR(op, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sum);
    SET_ATTR(op, CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &sqsum);
    CHECK_CUDNN(cudnnBackendFinalize(op));
    g->ops[g->n_ops++] = op;
}

/* The graph of spec, finalized: CUDNN_STATUS_SUCCESS, or cuDNN's refusal (g then freed). */
static cudnnStatus_t build_graph(graph_parts *g, const cb_spec *spec, cudnnHandle_t cudnn) {
    const conv_shape *s = &spec->shape;
    const cudnnDataType_t t = s->data_type;
    memset(g, 0, sizeof *g);
    cudnnBackendDescriptor_t x = tensor(g, UID_X, t, s->batch, s->in_c, s->h_in, s->w_in, 0);
    cudnnBackendDescriptor_t input = cb_kind_has_prologue(spec->kind) ? prologue(g, spec, x) : x;
    if (kind_is_wgrad(spec->kind)) {
        cudnnBackendDescriptor_t dw = tensor(g, UID_DW, t, s->out_c, s->in_c, s->kernel, s->kernel, 0);
        cudnnBackendDescriptor_t dy = tensor(g, UID_DY, t, s->batch, s->out_c, s->h_out, s->w_out, 0);
        conv_node(g, s, 1, input, dw, dy);
    } else {
        cudnnBackendDescriptor_t w = tensor(g, UID_W, t, s->out_c, s->in_c, s->kernel, s->kernel, 0);
        cudnnBackendDescriptor_t y = tensor(g, UID_Y, t, s->batch, s->out_c, s->h_out, s->w_out, 0);
        conv_node(g, s, 0, input, w, y);
        if (kind_has_stats(spec->kind)) gen_stats(g, s, y);
    }
    g->graph = cudnn_backend_create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    SET_ATTR(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, g->n_ops, g->ops);
    SET_ATTR(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &cudnn);
    cudnnStatus_t status = cudnnBackendFinalize(g->graph);
    if (status != CUDNN_STATUS_SUCCESS) parts_free(g);
    return status;
}



/* The variant pack of the kind's real tensors. */
static cudnnBackendDescriptor_t variant_pack(cb_kind kind, const cb_buffers *b, void *workspace) {
    void *pointers[8];
    int64_t uids[8];
    int n = 0;
#define PUT(uid, ptr) (uids[n] = (uid), pointers[n] = (void *)(ptr), n++)
    PUT(UID_X, b->x);
    if (cb_kind_has_prologue(kind)) PUT(UID_SCALE, b->scale), PUT(UID_BIAS, b->bias);
    if (kind_is_wgrad(kind)) {
        PUT(UID_DY, b->dy), PUT(UID_DW, b->dw);
    } else {
        PUT(UID_W, b->w), PUT(UID_Y, b->y);
        if (kind_has_stats(kind)) PUT(UID_SUM, b->sum), PUT(UID_SQSUM, b->sqsum);
    }
#undef PUT
    return cudnn_backend_variant_pack(n, pointers, uids, workspace);
}

static void note_refusal(cb_result *r, const char *what, cudnnStatus_t status) {
    if (r->refused++ == 0)
        snprintf(r->first_refusal, sizeof r->first_refusal, "%s: %s", what, suite_cudnn_message(status));
}

/* Builds, runs once, checks and times one configuration; keeps it in r when fastest. */
static void try_config(cb_result *r, const cb_spec *spec, cudnnBackendDescriptor_t *config, const char *name,
                       cudnnHandle_t cudnn, cudaStream_t stream, const cb_buffers *b, cb_check_fn check,
                       void *check_arg, int runs) {
    cudnnBackendDescriptor_t plan = cudnn_backend_create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    SET_ATTR(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &cudnn);
    SET_ATTR(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, config);
    cudnnStatus_t status = cudnnBackendFinalize(plan);
    if (status != CUDNN_STATUS_SUCCESS) {
        note_refusal(r, name, status);
        cudnn_backend_destroy(plan);
        return;
    }
    int64_t count = 0, workspace = 0;
    CHECK_CUDNN(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                         &workspace));
    if (workspace < 0 || (size_t)workspace > b->workspace_limit) {
        r->too_big++;
        cudnn_backend_destroy(plan);
        return;
    }
    cudnnBackendDescriptor_t pack = variant_pack(spec->kind, b, b->workspace);
    if (kind_has_stats(spec->kind)) { /* whether the engine adds into them or writes them, start at zero */
        CHECK_CUDA(cudaMemsetAsync(b->sum, 0, (size_t)spec->shape.out_c * sizeof(float), stream));
        CHECK_CUDA(cudaMemsetAsync(b->sqsum, 0, (size_t)spec->shape.out_c * sizeof(float), stream));
    }
    status = cudnnBackendExecute(cudnn, plan, pack);
    cudaError_t ran = status == CUDNN_STATUS_SUCCESS ? cudaStreamSynchronize(stream) : cudaSuccess;
    CHECK_CUDA(ran);
    if (status != CUDNN_STATUS_SUCCESS) {
        note_refusal(r, name, status);
    } else if (check && !check(check_arg, b)) {
        r->failed_check++;
    } else {
        cudnn_plan_run p = {cudnn, plan, pack};
        float ms = gpu_timer_median_ms(stream, cudnn_backend_execute, &p, runs);
        r->timed++;
        if (r->ms < 0.0f || ms < r->ms) {
            cudnn_backend_destroy(r->plan);
            cudnn_backend_destroy(r->config);
            r->plan = plan, r->config = *config, *config = NULL, plan = NULL;
            r->ms = ms;
            r->workspace_bytes = (size_t)workspace;
            snprintf(r->name, sizeof r->name, "%s", name);
        }
    }
    cudnn_backend_destroy(pack);
    cudnn_backend_destroy(plan);
}

void cb_search(cb_result *r, const cb_spec *spec, cudnnHandle_t cudnn, cudaStream_t stream, const cb_buffers *b,
               cb_check_fn check, void *check_arg, int runs, int max_tried) {
    memset(r, 0, sizeof *r);
    r->ms = -1.0f;
    graph_parts g;
    cudnnStatus_t status = build_graph(&g, spec, cudnn);
    if (status != CUDNN_STATUS_SUCCESS) {
        r->graph_refused = 1;
        snprintf(r->first_refusal, sizeof r->first_refusal, "graph: %s", suite_cudnn_message(status));
        return;
    }
    CHECK_CUDNN(cudnnSetStream(cudnn, stream));
    static const cudnnBackendHeurMode_t modes[3] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_B, CUDNN_HEUR_MODE_FALLBACK};
    cudnnBackendDescriptor_t configs[3 * MAX_CONFIGS_PER_MODE];
    int n = 0;
    for (int m = 0; m < 3; m++)
        n += cudnn_backend_heuristic_configs(g.graph, modes[m], 0, configs + n, MAX_CONFIGS_PER_MODE);
    char(*keys)[KEY_SIZE] = calloc((size_t)n + 1, KEY_SIZE);
    if (!keys) {
        fprintf(stderr, "cb_search: out of host memory\n");
        exit(1);
    }
    r->proposed = n;
    for (int i = 0, tried = 0; i < n; i++) {
        int64_t engine_id;
        uint32_t notes;
        cudnn_backend_describe_config(configs[i], &engine_id, &notes, keys[i], KEY_SIZE);
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(keys[j], keys[i]) == 0;
        if (seen) r->repeated++;
        else if (max_tried <= 0 || tried++ < max_tried)
            try_config(r, spec, &configs[i], keys[i], cudnn, stream, b, check, check_arg, runs);
        else r->skipped++;
    }
    for (int i = 0; i < n; i++) cudnn_backend_destroy(configs[i]);
    free(keys);
    parts_free(&g);
}

void cb_execute(const cb_result *r, const cb_spec *spec, cudnnHandle_t cudnn, const cb_buffers *b) {
    if (!r->plan) {
        fprintf(stderr, "cb_execute: no plan was kept for the %s graph\n", cb_kind_name(spec->kind));
        exit(1);
    }
    cudnnBackendDescriptor_t pack = variant_pack(spec->kind, b, b->workspace);
    CHECK_CUDNN(cudnnBackendExecute(cudnn, r->plan, pack));
    cudnn_backend_destroy(pack);
}

void cb_describe(const cb_result *r, char *out, size_t size) {
    if (r->ms >= 0.0f)
        snprintf(out, size, "%.3f ms (%s, %d timed of %d proposed, %d failed the check, %d not tried, %zu MB)", r->ms,
                 r->name, r->timed, r->proposed - r->repeated, r->failed_check, r->skipped, r->workspace_bytes >> 20);
    else if (r->graph_refused)
        snprintf(out, size, "none (%s)", r->first_refusal);
    else
        snprintf(out, size, "none (%d proposed, %d refused%s%s, %d over the workspace, %d failed the check)",
                 r->proposed - r->repeated, r->refused, r->refused ? ", first " : "", r->first_refusal, r->too_big,
                 r->failed_check);
}

void cb_result_free(cb_result *r) {
    cudnn_backend_destroy(r->plan);
    cudnn_backend_destroy(r->config);
    r->plan = r->config = NULL;
}
