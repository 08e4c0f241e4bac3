/* Convolution through cuDNN's graph (backend) API. The attribute sequence, per direction:
 *
 *   tensors x, w, y   TENSOR: DATA_TYPE float or bfloat16 (shape.data_type), DIMENSIONS [N,C,H,W]
 *                     (filter [K,C,R,S]) always,
 *                     STRIDES giving the layout, UNIQUE_ID 'x'/'w'/'y', BYTE_ALIGNMENT
 *   convolution       CONVOLUTION: COMP_TYPE float, CONV_MODE cross-correlation, SPATIAL_DIMS 2,
 *                     PRE/POST_PADDINGS, FILTER_STRIDES, DILATIONS 1
 *   operation         OPERATION_CONVOLUTION_{FORWARD,BACKWARD_DATA,BACKWARD_FILTER}: the three
 *                     tensors, CONV_DESC, ALPHA 1 and BETA (CUDNN_TYPE_FLOAT: float data)
 *   operation graph   OPERATIONGRAPH: OPS, HANDLE
 *   heuristics        ENGINEHEUR: OPERATION_GRAPH, MODE (A, then FALLBACK) -> RESULTS, a list of
 *                     ENGINECFG descriptors (each names its ENGINE and its KNOB_CHOICES)
 *   execution plan    EXECUTION_PLAN: HANDLE, ENGINE_CONFIG -> WORKSPACE_SIZE
 *   variant pack      VARIANT_PACK: DATA_POINTERS, UNIQUE_IDS, WORKSPACE -> cudnnBackendExecute
 *
 * Strict float32 (allow_tf32 = 0): compute type float alone does not exclude TF32, since for
 * float data cuDNN's tensor-core engines are the TF32 engines. Each engine lists numerical notes;
 * as PyTorch does, configurations whose engine has CUDNN_NUMERICAL_NOTE_TENSOR_CORE are dropped
 * when TF32 is not allowed, and those with DOWN_CONVERT_INPUTS (inputs rounded to a narrower
 * type) always. FFT and Winograd engines stay: they are float32 arithmetic, as the legacy
 * path's CUDNN_FMA_MATH algorithms are. With bfloat16 data the tensor-core engines are the
 * point (the accumulation stays float: REDUCED_PRECISION_REDUCTION is still refused).
 *
 * A configuration that does not apply to this shape or device is normal: its plan fails to
 * finalize with a NOT_SUPPORTED status (3xxx), or with an INTERNAL_ERROR one (4xxx) when its
 * kernel cannot be built or launched here. Such configurations are skipped; any other failure
 * is a bug in what this file built and stops the program through CHECK_CUDNN. */
#include "models/layers/conv_engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "kernels/check.h"
#include "models/core/gpu_timer.h"
#include "models/layers/cudnn_backend.h"
#include "models/layers/written.h"

enum { UID_X = 'x', UID_W = 'w', UID_Y = 'y' };
enum {
    MAX_CONFIGS_PER_MODE = 64, /* what each heuristic mode may propose */
    MAX_TIMED = 12,            /* plans measured per direction, to keep set-up short */
    MAX_TIMED_BF16 = 24,       /* bfloat16 has many more tensor-core tilings worth trying */
    TIMED_RUNS = 5,            /* back to back after one warm-up run; the median is kept */
    KEY_SIZE = 256             /* engine id and knob choices, to drop configurations seen twice */
};

#define SET_ATTR(desc, name, type, count, value) \
    CHECK_CUDNN(cudnnBackendSetAttribute((desc), (name), (type), (count), (value)))

const char *conv_direction_name(conv_direction dir) {
    switch (dir) {
    case CONV_FORWARD: return "forward";
    case CONV_BACKWARD_DATA: return "backward-data";
    case CONV_BACKWARD_FILTER: return "backward-filter";
    }
    return "unknown direction";
}




void *conv_written_buffer(conv_direction dir, void *x, void *w, void *y) {
    return dir == CONV_FORWARD ? y : dir == CONV_BACKWARD_DATA ? x : w;
}

size_t conv_written_elements(conv_direction dir, const conv_shape *s) {
    if (dir == CONV_FORWARD) return (size_t)s->batch * s->out_c * s->h_out * s->w_out;
    if (dir == CONV_BACKWARD_DATA) return (size_t)s->batch * s->in_c * s->h_in * s->w_in;
    return (size_t)s->out_c * s->in_c * s->kernel * s->kernel;
}

/* The largest power of two up to 16 that divides the address: what a tensor may promise. */
static int64_t pointer_alignment(const void *p) {
    uintptr_t address = (uintptr_t)p;
    int64_t alignment = 16;
    while (alignment > 1 && address % (uintptr_t)alignment) alignment /= 2;
    return alignment;
}

/* Strides of dims [n, c, h, w] laid out as `format`; a filter [k, c, r, s] in the layout that
 * matches the tensors is the same computation (KRSC is the filter's NHWC). */
static void layout_strides(cudnnTensorFormat_t format, const int64_t dims[4], int64_t strides[4]) {
    int64_t c = dims[1], h = dims[2], w = dims[3];
    if (format == CUDNN_TENSOR_NHWC) {
        strides[0] = h * w * c, strides[1] = 1, strides[2] = w * c, strides[3] = c;
    } else {
        strides[0] = c * h * w, strides[1] = h * w, strides[2] = w, strides[3] = 1;
    }
}

static cudnnBackendDescriptor_t make_tensor(int64_t uid, const conv_shape *s, int64_t n, int64_t c, int64_t h,
                                            int64_t w, int64_t alignment) {
    const int64_t dims[4] = {n, c, h, w};
    int64_t strides[4];
    layout_strides(s->format, dims, strides);
    return cudnn_backend_tensor(uid, s->data_type, dims, strides, alignment, 0);
}


/* Which attribute carries which tensor in each direction's operation: x is the forward input
 * (dx for backward-data), w the filter (dw for backward-filter), y the forward output (dy). */
typedef struct operation_attributes {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
} operation_attributes;

static const operation_attributes OPERATION[3] = {
    [CONV_FORWARD] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    [CONV_BACKWARD_DATA] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                            CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    [CONV_BACKWARD_FILTER] = {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA},
};

static cudnnBackendDescriptor_t make_operation(conv_direction dir, cudnnBackendDescriptor_t conv,
                                               cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t w,
                                               cudnnBackendDescriptor_t y, float beta) {
    const operation_attributes *a = &OPERATION[dir];
    const float alpha = 1.0f;
    cudnnBackendDescriptor_t op = cudnn_backend_create(a->type);
    SET_ATTR(op, a->x, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    SET_ATTR(op, a->w, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &w);
    SET_ATTR(op, a->y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y);
    SET_ATTR(op, a->conv, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv);
    SET_ATTR(op, a->alpha, CUDNN_TYPE_FLOAT, 1, &alpha);
    SET_ATTR(op, a->beta, CUDNN_TYPE_FLOAT, 1, &beta);
    CHECK_CUDNN(cudnnBackendFinalize(op));
    return op;
}



/* A finalized plan and its workspace, or the status that says this configuration does not
 * apply (any other failure stops the program). */
static cudnnStatus_t build_plan(cudnnHandle_t cudnn, cudnnBackendDescriptor_t config, cudnnBackendDescriptor_t *plan,
                                int64_t *workspace_bytes) {
    *plan = cudnn_backend_create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    SET_ATTR(*plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &cudnn);
    SET_ATTR(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &config);
    cudnnStatus_t status = cudnnBackendFinalize(*plan);
    if (status != CUDNN_STATUS_SUCCESS) {
        if (!cudnn_backend_does_not_apply(status)) CHECK_CUDNN(status);
        cudnn_backend_destroy(*plan);
        *plan = NULL;
        return status;
    }
    int64_t count = 0;
    *workspace_bytes = 0;
    CHECK_CUDNN(cudnnBackendGetAttribute(*plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                         workspace_bytes));
    return CUDNN_STATUS_SUCCESS;
}

static cudnnBackendDescriptor_t make_variant_pack(void *x, void *w, void *y, void *workspace) {
    void *pointers[3] = {x, w, y};
    const int64_t uids[3] = {UID_X, UID_W, UID_Y};
    return cudnn_backend_variant_pack(3, pointers, uids, workspace);
}

/* Median GPU time of TIMED_RUNS after one warm-up, in ms, on the handle's stream (which is
 * `stream`); a negative value with *status set when the engine refuses to run here. */
static float time_plan(cudnnHandle_t cudnn, cudaStream_t stream, cudnnBackendDescriptor_t plan,
                       cudnnBackendDescriptor_t pack, cudnnStatus_t *status) {
    *status = cudnnBackendExecute(cudnn, plan, pack);
    if (*status != CUDNN_STATUS_SUCCESS) {
        if (!cudnn_backend_does_not_apply(*status)) CHECK_CUDNN(*status);
        return -1.0f;
    }
    cudnn_plan_run p = {cudnn, plan, pack};
    return gpu_timer_median_ms(stream, cudnn_backend_execute, &p, TIMED_RUNS);
}

static int check_inputs(conv_direction dir, const conv_shape *s, cudnnHandle_t cudnn, const void *x, const void *w,
                        const void *y, const void *workspace, size_t workspace_limit, char *err, size_t err_size) {
    if ((unsigned)dir > CONV_BACKWARD_FILTER)
        return error_set(err, err_size, "conv_engine: direction %d is not forward, backward-data or backward-filter",
                    (int)dir);
    if (!s) return error_set(err, err_size, "conv_engine: shape is NULL");
    if (s->data_type != CUDNN_DATA_FLOAT && s->data_type != CUDNN_DATA_BFLOAT16)
        return error_set(err, err_size, "conv_engine: shape.data_type is %d, expected CUDNN_DATA_FLOAT or "
                    "CUDNN_DATA_BFLOAT16", (int)s->data_type);
    if (s->format != CUDNN_TENSOR_NHWC && s->format != CUDNN_TENSOR_NCHW)
        return error_set(err, err_size, "conv_engine: shape.format is %d, expected CUDNN_TENSOR_NHWC or CUDNN_TENSOR_NCHW",
                    (int)s->format);
    if (s->batch < 1 || s->in_c < 1 || s->out_c < 1 || s->kernel < 1 || s->stride < 1 || s->pad < 0 ||
        s->h_in + 2 * s->pad < s->kernel || s->w_in + 2 * s->pad < s->kernel)
        return error_set(err, err_size,
                    "conv_engine: shape batch %d in_c %d out_c %d kernel %d stride %d pad %d input %dx%d: expected "
                    "sizes, kernel and stride >= 1, pad >= 0 and the padded input at least the kernel",
                    s->batch, s->in_c, s->out_c, s->kernel, s->stride, s->pad, s->h_in, s->w_in);
    int h_out = conv_out_size(s->h_in, s->kernel, s->stride, s->pad);
    int w_out = conv_out_size(s->w_in, s->kernel, s->stride, s->pad);
    if (h_out < 1 || w_out < 1 || s->h_out != h_out || s->w_out != w_out)
        return error_set(err, err_size,
                    "conv_engine: shape output %dx%d, expected %dx%d (input %dx%d, kernel %d, stride %d, pad %d)",
                    s->h_out, s->w_out, h_out, w_out, s->h_in, s->w_in, s->kernel, s->stride, s->pad);
    if (!cudnn) return error_set(err, err_size, "conv_engine: the cuDNN handle is NULL");
    const void *buffers[3] = {x, w, y};
    const char *names[3][3] = {{"x (input)", "w (filter)", "y (output)"},
                               {"x (dx, written)", "w (filter)", "y (dy)"},
                               {"x (input)", "w (dw, written)", "y (dy)"}};
    size_t element = conv_element_bytes(s);
    for (int i = 0; i < 3; i++)
        if (!buffers[i] || (uintptr_t)buffers[i] % element)
            return error_set(err, err_size,
                        "conv_engine %s: buffer %s is %p, expected a device pointer aligned to %zu bytes",
                        conv_direction_name(dir), names[dir][i], buffers[i], element);
    if (workspace_limit > 0 && !workspace)
        return error_set(err, err_size, "conv_engine: workspace is NULL but workspace_limit is %zu bytes", workspace_limit);
    return 0;
}

/* The elements a candidate leaves unwritten (models/layers/written.h), run once over its poisoned
 * output. A plan that accumulates (beta 1) adds onto its output, which poison would only carry
 * through: the same configuration built for beta 0 runs instead; where cuDNN builds none, the
 * check cannot speak and the candidate stands. */
static size_t written_check(conv_direction dir, const conv_shape *shape, float beta, cudnnBackendDescriptor_t candidate,
                            const char *name, cudnnHandle_t cudnn, cudaStream_t stream, void *x, void *w, void *y,
                            void *workspace) {
    conv_engine_plan overwriting = {0};
    if (beta != 0.0f) {
        char err[256];
        if (conv_engine_rebuild(&overwriting, dir, shape, 0.0f, name, 0.0f, cudnn, x, w, y, err, sizeof err) != 0)
            return 0;
        candidate = overwriting.plan;
    }
    cudnnBackendDescriptor_t pack = make_variant_pack(x, w, y, workspace);
    cudnn_plan_run run = {cudnn, candidate, pack};
    elem_type type = shape->data_type == CUDNN_DATA_BFLOAT16 ? ELEM_BF16 : ELEM_F32;
    size_t left = written_unwritten(conv_written_buffer(dir, x, w, y), conv_written_elements(dir, shape), type,
                                    cudnn_backend_execute, &run, stream);
    cudnn_backend_destroy(pack);
    conv_engine_destroy(&overwriting);
    return left;
}

/* Times the configurations the heuristics propose for `graph` and keeps the fastest in *plan.
 * Returns 0, or -1 with a message that counts why each configuration was passed over. */
static int search_engines(conv_engine_plan *plan, cudnnBackendDescriptor_t graph, const conv_shape *shape,
                          int allow_tensor_core, int max_timed, int sm_target, cudnnHandle_t cudnn,
                          cudaStream_t stream, void *x, void *w, void *y, void *workspace, size_t workspace_limit,
                          char *err, size_t err_size) {
    cudnnBackendDescriptor_t configs[2 * MAX_CONFIGS_PER_MODE];
    int n_configs = cudnn_backend_heuristic_configs(graph, CUDNN_HEUR_MODE_A, sm_target, configs, MAX_CONFIGS_PER_MODE);
    n_configs += cudnn_backend_heuristic_configs(graph, CUDNN_HEUR_MODE_FALLBACK, sm_target, configs + n_configs,
                                   MAX_CONFIGS_PER_MODE);
    char(*keys)[KEY_SIZE] = calloc((size_t)n_configs + 1, KEY_SIZE);
    if (!keys) {
        fprintf(stderr, "conv_engine: out of host memory\n");
        exit(1);
    }
    cudaStream_t saved_stream = NULL;
    CHECK_CUDNN(cudnnGetStream(cudnn, &saved_stream));
    CHECK_CUDNN(cudnnSetStream(cudnn, stream));
    cudnnBackendDescriptor_t pack = make_variant_pack(x, w, y, workspace);

    int duplicates = 0, excluded = 0, refused = 0, too_big = 0, unwritten = 0, kept = -1;
    char first_refusal[256] = "";
    for (int i = 0; i < n_configs && plan->candidates_timed < max_timed; i++) {
        int64_t engine_id;
        uint32_t notes;
        cudnn_backend_describe_config(configs[i], &engine_id, &notes, keys[i], KEY_SIZE);
        int seen = 0;
        for (int j = 0; j < i && !seen; j++) seen = strcmp(keys[j], keys[i]) == 0;
        if (seen) {
            duplicates++;
            continue;
        }
        /* never inputs converted below float32 or reductions carried in lower precision */
        int down_converts = (notes >> CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) & 1u;
        int reduced_reduction = (notes >> CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION) & 1u;
        int tensor_core = (notes >> CUDNN_NUMERICAL_NOTE_TENSOR_CORE) & 1u;
        if (down_converts || reduced_reduction || (!allow_tensor_core && tensor_core)) {
            excluded++;
            continue;
        }
        cudnnBackendDescriptor_t candidate = NULL;
        int64_t candidate_workspace = 0;
        cudnnStatus_t status = build_plan(cudnn, configs[i], &candidate, &candidate_workspace);
        if (status == CUDNN_STATUS_SUCCESS &&
            (candidate_workspace < 0 || (uint64_t)candidate_workspace > workspace_limit)) {
            too_big++;
            cudnn_backend_destroy(candidate);
            continue;
        }
        float ms = -1.0f;
        if (status == CUDNN_STATUS_SUCCESS) ms = time_plan(cudnn, stream, candidate, pack, &status);
        if (status != CUDNN_STATUS_SUCCESS) {
            if (refused++ == 0)
                snprintf(first_refusal, sizeof first_refusal, " (first: %s: %s)", keys[i], suite_cudnn_message(status));
            cudnn_backend_destroy(candidate);
            continue;
        }
        plan->candidates_timed++;
        if (kept >= 0 && ms >= plan->ms) {
            cudnn_backend_destroy(candidate);
            continue;
        }
        size_t left = written_check(plan->direction, shape, plan->beta, candidate, keys[i], cudnn, stream, x, w, y,
                                    workspace);
        if (left) {
            if (unwritten++ == 0)
                fprintf(stderr, "conv set-up: %s %s leaves %zu of %zu outputs unwritten (models/layers/written.h): "
                        "passed over\n", conv_direction_name(plan->direction), keys[i], left,
                        conv_written_elements(plan->direction, shape));
            cudnn_backend_destroy(candidate);
            continue;
        }
        cudnn_backend_destroy(plan->plan);
        plan->plan = candidate;
        plan->ms = ms;
        plan->workspace_bytes = (size_t)candidate_workspace;
        plan->engine_id = engine_id;
        plan->numerical_notes = notes;
        snprintf(plan->name, sizeof plan->name, "%s", keys[i]);
        kept = i;
    }

    cudnn_backend_destroy(pack);
    CHECK_CUDNN(cudnnSetStream(cudnn, saved_stream));
    if (kept >= 0) {
        plan->engine_config = configs[kept]; /* kept alive with the plan, as cudnn_frontend does */
        configs[kept] = NULL;
    }
    for (int i = 0; i < n_configs; i++) cudnn_backend_destroy(configs[i]);
    free(keys);
    if (kept >= 0) return 0;
    return error_set(err, err_size,
                "conv_engine %s: no engine works: %d configurations proposed, %d repeated, %d excluded as "
                "TF32/down-converting, %d over the %zu-byte workspace limit, %d refused%s, %d leaving outputs "
                "unwritten", conv_direction_name(plan->direction), n_configs, duplicates, excluded, too_big,
                workspace_limit, refused, first_refusal, unwritten);
}

/* One direction of the convolution as a finalized one-node operation graph, and what it is made of. */
typedef struct conv_graph {
    cudnnBackendDescriptor_t x, w, y, conv, op, graph;
} conv_graph;

static void destroy_graph(conv_graph *g) {
    cudnn_backend_destroy(g->graph);
    cudnn_backend_destroy(g->op);
    cudnn_backend_destroy(g->conv);
    cudnn_backend_destroy(g->x), cudnn_backend_destroy(g->w), cudnn_backend_destroy(g->y);
    memset(g, 0, sizeof *g);
}

/* CUDNN_STATUS_SUCCESS, or the status saying cuDNN supports no graph for it (g then destroyed). */
static cudnnStatus_t make_graph(conv_graph *g, conv_direction dir, const conv_shape *s, const int64_t align[3],
                                float beta, cudnnHandle_t cudnn) {
    g->x = make_tensor(UID_X, s, s->batch, s->in_c, s->h_in, s->w_in, align[0]);
    g->w = make_tensor(UID_W, s, s->out_c, s->in_c, s->kernel, s->kernel, align[1]);
    g->y = make_tensor(UID_Y, s, s->batch, s->out_c, s->h_out, s->w_out, align[2]);
    g->conv = cudnn_backend_convolution(s);
    g->op = make_operation(dir, g->conv, g->x, g->w, g->y, beta);
    g->graph = cudnn_backend_create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    SET_ATTR(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->op);
    SET_ATTR(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &cudnn);
    cudnnStatus_t status = cudnnBackendFinalize(g->graph);
    if (status != CUDNN_STATUS_SUCCESS) {
        if (!cudnn_backend_does_not_apply(status)) CHECK_CUDNN(status);
        destroy_graph(g);
    }
    return status;
}

int conv_engine_find(conv_engine_plan *plan, conv_direction dir, const conv_shape *shape, int allow_tf32,
                     int sm_target, float beta, cudnnHandle_t cudnn, cudaStream_t stream, void *x, void *w, void *y, void *workspace,
                     size_t workspace_limit, char *err, size_t err_size) {
    if (err && err_size) err[0] = '\0';
    if (!plan) return error_set(err, err_size, "conv_engine: plan is NULL");
    memset(plan, 0, sizeof *plan);
    plan->direction = dir;
    plan->beta = beta;
    plan->engine_id = -1;
    if (check_inputs(dir, shape, cudnn, x, w, y, workspace, workspace_limit, err, err_size)) return -1;
    const conv_shape *s = shape;
    void *buffers[3] = {x, w, y};
    for (int i = 0; i < 3; i++) plan->alignment[i] = pointer_alignment(buffers[i]);

    conv_graph g = {0};
    cudnnStatus_t status = make_graph(&g, dir, s, plan->alignment, beta, cudnn);
    int result;
    if (status == CUDNN_STATUS_SUCCESS) {
        /* bfloat16 data is there to run on tensor cores; float data does only with TF32 */
        int allow_tensor_core = allow_tf32 || s->data_type == CUDNN_DATA_BFLOAT16;
        int max_timed = s->data_type == CUDNN_DATA_BFLOAT16 ? MAX_TIMED_BF16 : MAX_TIMED;
        result = search_engines(plan, g.graph, s, allow_tensor_core, max_timed, sm_target, cudnn, stream, x, w, y,
                                workspace, workspace_limit, err, err_size);
    } else {
        result = error_set(err, err_size, "conv_engine %s: cuDNN supports no graph for this convolution: %s",
                      conv_direction_name(dir), suite_cudnn_message(status));
    }
    /* The finalized plan keeps what it needs; the descriptors it was built from can go. */
    destroy_graph(&g);
    if (result) {
        conv_engine_destroy(plan);
        plan->direction = dir, plan->beta = beta, plan->engine_id = -1;
    }
    return result;
}

/* "eng<id>_k<type>=<value>...[_sm<N>]", as describe_config writes it: the engine, up to max knobs
 * and the SM count it was made for (*sms, 0: none). */
static int parse_name(const char *name, int64_t *engine_id, int *knob_types, int64_t *knob_values, int max,
                      int32_t *sms) {
    long long id, value;
    int type, used = 0, count = 0, target = 0;
    *sms = 0;
    if (sscanf(name, "eng%lld%n", &id, &used) != 1 || id < 0) return -1;
    for (const char *p = name + used; *p; p += used) {
        if (!strncmp(p, "_sm", 3)) {
            if (sscanf(p, "_sm%d%n", &target, &used) != 1 || target < 1 || p[used]) return -1;
            *sms = target;
            continue;
        }
        if (count == max || sscanf(p, "_k%d=%lld%n", &type, &value, &used) != 2) return -1;
        knob_types[count] = type, knob_values[count++] = value;
    }
    *engine_id = id;
    return count;
}

int conv_engine_rebuild(conv_engine_plan *plan, conv_direction dir, const conv_shape *shape, float beta,
                        const char *name, float ms, cudnnHandle_t cudnn, void *x, void *w, void *y, char *err,
                        size_t err_size) {
    if (err && err_size) err[0] = '\0';
    if (!plan) return error_set(err, err_size, "conv_engine: plan is NULL");
    memset(plan, 0, sizeof *plan);
    plan->direction = dir, plan->beta = beta, plan->engine_id = -1;
    if (check_inputs(dir, shape, cudnn, x, w, y, NULL, 0, err, err_size)) return -1;
    int knob_types[CUDNN_KNOB_TYPE_COUNTS];
    int64_t knob_values[CUDNN_KNOB_TYPE_COUNTS], engine_id;
    int32_t sms = 0;
    int knobs = parse_name(name, &engine_id, knob_types, knob_values, CUDNN_KNOB_TYPE_COUNTS, &sms);
    if (knobs < 0)
        return error_set(err, err_size,
                         "conv_engine %s: \"%s\" is not an engine's name (eng<id>_k<knob>=<value>...[_sm<N>])",
                         conv_direction_name(dir), name);
    void *buffers[3] = {x, w, y};
    for (int i = 0; i < 3; i++) plan->alignment[i] = pointer_alignment(buffers[i]);
    conv_graph g = {0};
    cudnnStatus_t status = make_graph(&g, dir, shape, plan->alignment, beta, cudnn);
    if (status != CUDNN_STATUS_SUCCESS)
        return error_set(err, err_size, "conv_engine %s: cuDNN supports no graph for this convolution: %s",
                    conv_direction_name(dir), suite_cudnn_message(status));
    cudnnBackendDescriptor_t engine = cudnn_backend_create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    SET_ATTR(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g.graph);
    SET_ATTR(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &engine_id);
    if (sms > 0) /* made for a partition's SMs, as the heuristics made it */
        SET_ATTR(engine, CUDNN_ATTR_ENGINE_SM_COUNT_TARGET, CUDNN_TYPE_INT32, 1, &sms);
    cudnnBackendDescriptor_t choices[CUDNN_KNOB_TYPE_COUNTS] = {0}, config = NULL;
    int64_t workspace = 0;
    status = cudnnBackendFinalize(engine);
    for (int i = 0; status == CUDNN_STATUS_SUCCESS && i < knobs; i++) {
        const cudnnBackendKnobType_t type = (cudnnBackendKnobType_t)knob_types[i];
        choices[i] = cudnn_backend_create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
        SET_ATTR(choices[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type);
        SET_ATTR(choices[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &knob_values[i]);
        status = cudnnBackendFinalize(choices[i]);
    }
    if (status == CUDNN_STATUS_SUCCESS) {
        config = cudnn_backend_create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        SET_ATTR(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine);
        if (knobs > 0)
            SET_ATTR(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR, knobs, choices);
        status = cudnnBackendFinalize(config);
    }
    if (status == CUDNN_STATUS_SUCCESS) status = build_plan(cudnn, config, &plan->plan, &workspace);
    else if (!cudnn_backend_does_not_apply(status)) CHECK_CUDNN(status);
    if (status == CUDNN_STATUS_SUCCESS) {
        cudnn_backend_describe_config(config, &plan->engine_id, &plan->numerical_notes, plan->name, sizeof plan->name);
        plan->engine_config = config, config = NULL;
        plan->workspace_bytes = (size_t)workspace;
        plan->ms = ms;
    }
    cudnn_backend_destroy(config);
    for (int i = 0; i < knobs; i++) cudnn_backend_destroy(choices[i]);
    cudnn_backend_destroy(engine);
    destroy_graph(&g);
    if (status == CUDNN_STATUS_SUCCESS) return 0;
    conv_engine_destroy(plan);
    plan->direction = dir, plan->beta = beta, plan->engine_id = -1;
    return error_set(err, err_size, "conv_engine %s: %s cannot be built here: %s", conv_direction_name(dir), name,
                suite_cudnn_message(status));
}

/* Misuse at run time is a bug in the caller: say what was wrong and stop. */
static void run_plan(const conv_engine_plan *plan, conv_direction dir, cudnnHandle_t cudnn, const void *x,
                     const void *w, const void *y, void *workspace) {
    if (!plan || !plan->plan) {
        fprintf(stderr, "conv_engine %s: the plan is empty (conv_engine_find failed or was not called)\n",
                conv_direction_name(dir));
        exit(1);
    }
    if (plan->direction != dir) {
        fprintf(stderr, "conv_engine: a %s plan was run as %s\n", conv_direction_name(plan->direction),
                conv_direction_name(dir));
        exit(1);
    }
    const void *buffers[3] = {x, w, y};
    const char *names[3] = {"x", "w", "y"};
    for (int i = 0; i < 3; i++)
        if (!buffers[i] || (uintptr_t)buffers[i] % (uintptr_t)plan->alignment[i]) {
            fprintf(stderr, "conv_engine %s: buffer %s is %p, expected a device pointer aligned to %lld bytes as "
                    "when the plan was built\n", conv_direction_name(dir), names[i], buffers[i],
                    (long long)plan->alignment[i]);
            exit(1);
        }
    if (plan->workspace_bytes > 0 && !workspace) {
        fprintf(stderr, "conv_engine %s: workspace is NULL, the plan needs %zu bytes\n", conv_direction_name(dir),
                plan->workspace_bytes);
        exit(1);
    }
    /* The variant pack only lends cuDNN the pointers; the written tensor is the direction's. */
    cudnnBackendDescriptor_t pack = make_variant_pack((void *)x, (void *)w, (void *)y, workspace);
    CHECK_CUDNN(cudnnBackendExecute(cudnn, plan->plan, pack));
    cudnn_backend_destroy(pack);
}

void conv_engine_forward(const conv_engine_plan *plan, cudnnHandle_t cudnn, void *y, const void *x,
                         const void *w, void *workspace) {
    run_plan(plan, CONV_FORWARD, cudnn, x, w, y, workspace);
}

void conv_engine_backward_data(const conv_engine_plan *plan, cudnnHandle_t cudnn, void *dx, const void *dy,
                               const void *w, void *workspace) {
    run_plan(plan, CONV_BACKWARD_DATA, cudnn, dx, w, dy, workspace);
}

void conv_engine_backward_filter(const conv_engine_plan *plan, cudnnHandle_t cudnn, void *dw, const void *dy,
                                 const void *x, void *workspace) {
    run_plan(plan, CONV_BACKWARD_FILTER, cudnn, x, dw, dy, workspace);
}

void conv_engine_destroy(conv_engine_plan *plan) {
    if (!plan) return;
    cudnn_backend_destroy(plan->plan);
    cudnn_backend_destroy(plan->engine_config);
    memset(plan, 0, sizeof *plan);
}
