#include "models/layers/conv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "kernels/knobs.h"
#include "models/core/gpu_timer.h"
#include "models/layers/conv_choices.h"
#include "models/layers/written.h"

enum { LEGACY_TIMED_RUNS = 5 }; /* back to back after one warm-up run */
static const float LEGACY_HOST_MS = 0.05f; /* what one launch may add to a time Find reports */

void conv_init(conv_layer *c, arena *a, conv_shape shape) {
    memset(c, 0, sizeof *c);
    c->shape = shape;
    size_t n = (size_t)shape.out_c * shape.in_c * shape.kernel * shape.kernel;
    c->weight = arena_take_floats(a, ARENA_WEIGHTS, n);
    c->weight_grad = a->planning ? NULL : arena_grad_of(a, c->weight);
}

double conv_flops(const conv_layer *c) {
    const conv_shape *s = &c->shape;
    return 2.0 * s->batch * s->h_out * s->w_out * (double)s->out_c * s->in_c * s->kernel * s->kernel;
}

/* What one direction reads and writes once (the kernel trace's bytes per launch): forward x and w
 * to y, backward-data dy and w to dx (read too where it accumulates), backward-filter x and dy to dw. */
static double conv_bytes(const conv_layer *c, conv_direction d) {
    const conv_shape *s = &c->shape;
    double x = (double)s->batch * s->in_c * s->h_in * s->w_in, y = (double)s->batch * s->out_c * s->h_out * s->w_out;
    double w = (double)s->out_c * s->in_c * s->kernel * s->kernel;
    double accumulate = d == CONV_BACKWARD_DATA && c->accumulate_dx ? x : 0;
    return (x + y + w + accumulate) * (double)conv_element_bytes(s);
}

/* Marks a direction's launches for the kernel trace (models/core/kernel_scope.h). */
static int mark(const conv_layer *c, conv_direction d, const job_context *ctx) {
    static const kernel_pass pass[3] = {KPASS_FORWARD, KPASS_DGRAD, KPASS_WGRAD};
    static const kernel_class cls[3] = {KCLASS_CONV_FWD, KCLASS_CONV_DGRAD, KCLASS_CONV_WGRAD};
    if (!ctx->scopes) return -1;
    return kernel_scope_enter(ctx->scopes, c->weight, NULL, pass[d], cls[d], conv_flops(c), conv_bytes(c, d));
}

/* Compute type float for both data types (bfloat16 data: cuDNN's PSEUDO_BFLOAT16 configuration). */
static cudnnConvolutionDescriptor_t make_conv_desc(const conv_shape *s) {
    cudnnConvolutionDescriptor_t d;
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&d));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(d, s->pad, s->pad, s->stride, s->stride, 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    return d;
}

static int is_half(const conv_layer *c) { return c->shape.data_type == CUDNN_DATA_BFLOAT16; }

/* Math type is a property of the convolution descriptor: each direction runs its pick's. */
static void use_math_types(conv_layer *c) {
    CHECK_CUDNN(cudnnSetConvolutionMathType(c->fwd_desc, c->algos.fwd_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(c->bwd_data_desc, c->algos.bwd_data_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(c->bwd_filter_desc, c->algos.bwd_filter_math));
}

/* One row of what Find reported, whichever direction's perf type it came in. */
typedef struct legacy_candidate {
    int algo;
    cudnnStatus_t status;
    cudnnMathType_t math;
    float ms;
    size_t memory;
} legacy_candidate;

#define TO_CANDIDATES(out, results, n)                                                                        \
    for (int i_ = 0; i_ < (n); i_++)                                                                          \
    (out)[i_] = (legacy_candidate){(int)(results)[i_].algo, (results)[i_].status, (results)[i_].mathType,     \
                                   (results)[i_].time, (results)[i_].memory}

/* One run of a direction's legacy algorithm with its math type, cuDNN's status kept rather than
 * fatal (y stands for dy in both backward directions, as in Find). */
typedef struct legacy_try {
    conv_layer *c;
    conv_direction d;
    const legacy_candidate *k;
    void *y, *dx;
    const void *x;
    const job_context *ctx;
    cudnnStatus_t status;
} legacy_try;

static void run_try(void *arg) {
    legacy_try *t = arg;
    conv_layer *c = t->c;
    const legacy_candidate *k = t->k;
    const job_context *ctx = t->ctx;
    const float one = 1.0f, zero = 0.0f;
    if (t->d == CONV_FORWARD) {
        CHECK_CUDNN(cudnnSetConvolutionMathType(c->fwd_desc, k->math));
        t->status = cudnnConvolutionForward(ctx->cudnn, &one, c->x_desc, t->x, c->w_desc, c->run_weight, c->fwd_desc,
                                            (cudnnConvolutionFwdAlgo_t)k->algo, ctx->workspace, k->memory, &zero,
                                            c->y_desc, t->y);
    } else if (t->d == CONV_BACKWARD_DATA) {
        CHECK_CUDNN(cudnnSetConvolutionMathType(c->bwd_data_desc, k->math));
        t->status = cudnnConvolutionBackwardData(ctx->cudnn, &one, c->w_desc, c->run_weight, c->y_desc, t->y,
                                                 c->bwd_data_desc, (cudnnConvolutionBwdDataAlgo_t)k->algo,
                                                 ctx->workspace, k->memory, &zero, c->x_desc, t->dx);
    } else {
        CHECK_CUDNN(cudnnSetConvolutionMathType(c->bwd_filter_desc, k->math));
        t->status = cudnnConvolutionBackwardFilter(ctx->cudnn, &one, c->x_desc, t->x, c->y_desc, t->y,
                                                   c->bwd_filter_desc, (cudnnConvolutionBwdFilterAlgo_t)k->algo,
                                                   ctx->workspace, k->memory, &zero, c->w_desc, c->run_weight_grad);
    }
}

/* The run over its poisoned output (models/layers/written.h): *unwritten counts what it left. The
 * try overwrites (beta 0) in every direction, as Find does. */
static cudnnStatus_t try_legacy(conv_layer *c, conv_direction d, const legacy_candidate *k, void *y, const void *x,
                                void *dx, const job_context *ctx, size_t *unwritten) {
    legacy_try t = {c, d, k, y, dx, x, ctx, CUDNN_STATUS_SUCCESS};
    void *out = conv_written_buffer(d, dx, c->run_weight_grad, y);
    elem_type type = is_half(c) ? ELEM_BF16 : ELEM_F32;
    *unwritten = written_unwritten(out, conv_written_elements(d, &c->shape), type, run_try, &t, ctx->stream);
    return t.status;
}

/* Candidates come back fastest first; the first that succeeded within the limit, and then runs
 * once with its math type as the step will run it, wins. Find can report an (algorithm, math type)
 * as successful that then fails to run (cuDNN's execution failure, heuristics with fewer algorithms
 * than it indexed), or one that leaves part of its output unwritten (models/layers/written.h): such a
 * pick is logged and passed over, not left to fail or mislead mid-training. For float
 * data TF32 is refused (CUDNN_FMA_MATH only) when the context disallows it; bfloat16 data always
 * allows tensor cores. Returns the winner's index. */
static int pick_legacy(conv_layer *c, conv_direction d, const legacy_candidate *k, int n, int allow_tensor_ops,
                       void *y, const void *x, void *dx, const job_context *ctx) {
    for (int i = 0; i < n; i++) {
        if (k[i].status != CUDNN_STATUS_SUCCESS || k[i].memory > ctx->workspace_limit) continue;
        if (!allow_tensor_ops && k[i].math != CUDNN_FMA_MATH) continue;
        size_t unwritten = 0;
        cudnnStatus_t ran = try_legacy(c, d, &k[i], y, x, dx, ctx, &unwritten);
        if (ran == CUDNN_STATUS_SUCCESS && unwritten == 0) return i;
        const conv_shape *s = &c->shape;
        char why[128];
        if (ran != CUDNN_STATUS_SUCCESS) snprintf(why, sizeof why, "fails to run (%s)", cudnnGetErrorString(ran));
        else snprintf(why, sizeof why, "leaves %zu of %zu outputs unwritten (models/layers/written.h)", unwritten,
                      conv_written_elements(d, s));
        fprintf(stderr, "conv set-up: %s n%d %dx%d c%d->%d k%d s%d: algorithm %d (math type %d), reported by Find, "
                "%s: the next one\n", conv_direction_name(d), s->batch, s->h_in, s->w_in, s->in_c, s->out_c,
                s->kernel, s->stride, k[i].algo, (int)k[i].math, why);
    }
    fprintf(stderr, "conv: no %s algorithm fits the %zu-byte workspace limit and runs\n", conv_direction_name(d),
            ctx->workspace_limit);
    exit(1);
}

static void search_algos(conv_layer *c, void *y, const void *x, void *dx, job_context *ctx) {
    enum { MAX_RESULTS = 16 };
    int n = 0;
    conv_algos *al = &c->algos;
    size_t limit = ctx->workspace_limit;
    int allow_tensor_ops = ctx->allow_tf32 || is_half(c);
    cudnnMathType_t search_math = allow_tensor_ops ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    CHECK_CUDNN(cudnnSetConvolutionMathType(c->fwd_desc, search_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(c->bwd_data_desc, search_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(c->bwd_filter_desc, search_math));
    legacy_candidate k[MAX_RESULTS];
    int w;

    cudnnConvolutionFwdAlgoPerf_t fwd[MAX_RESULTS];
    CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithmEx(ctx->cudnn, c->x_desc, x, c->w_desc, c->run_weight,
                                                       c->fwd_desc, c->y_desc, y, MAX_RESULTS, &n, fwd,
                                                       ctx->workspace, limit));
    TO_CANDIDATES(k, fwd, n);
    w = pick_legacy(c, CONV_FORWARD, k, n, allow_tensor_ops, y, x, dx, ctx);
    al->fwd = fwd[w].algo, al->fwd_math = k[w].math, al->fwd_ms = k[w].ms;
    if (k[w].memory > al->workspace_bytes) al->workspace_bytes = k[w].memory;

    cudnnConvolutionBwdFilterAlgoPerf_t bwf[MAX_RESULTS];
    CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithmEx(
        ctx->cudnn, c->x_desc, x, c->y_desc, y, c->bwd_filter_desc, c->w_desc, c->run_weight_grad,
        MAX_RESULTS, &n, bwf, ctx->workspace, limit));
    TO_CANDIDATES(k, bwf, n);
    w = pick_legacy(c, CONV_BACKWARD_FILTER, k, n, allow_tensor_ops, y, x, dx, ctx);
    al->bwd_filter = bwf[w].algo, al->bwd_filter_math = k[w].math, al->bwd_filter_ms = k[w].ms;
    if (k[w].memory > al->workspace_bytes) al->workspace_bytes = k[w].memory;

    if (dx) {
        cudnnConvolutionBwdDataAlgoPerf_t bwd[MAX_RESULTS];
        CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithmEx(
            ctx->cudnn, c->w_desc, c->run_weight, c->y_desc, y, c->bwd_data_desc, c->x_desc, dx,
            MAX_RESULTS, &n, bwd, ctx->workspace, limit));
        TO_CANDIDATES(k, bwd, n);
        w = pick_legacy(c, CONV_BACKWARD_DATA, k, n, allow_tensor_ops, y, x, dx, ctx);
        al->bwd_data = bwd[w].algo, al->bwd_data_math = k[w].math, al->bwd_data_ms = k[w].ms;
        if (k[w].memory > al->workspace_bytes) al->workspace_bytes = k[w].memory;
    }
}

void conv_forward(conv_layer *c, void *y, const void *x, job_context *ctx) {
    const float one = 1.0f, zero = 0.0f;
    int token = mark(c, CONV_FORWARD, ctx);
    if (c->algos.use_engine[CONV_FORWARD])
        conv_engine_forward(&c->algos.engine[CONV_FORWARD], ctx->cudnn, y, x, c->run_weight, ctx->workspace);
    else
        CHECK_CUDNN(cudnnConvolutionForward(ctx->cudnn, &one, c->x_desc, x, c->w_desc, c->run_weight,
                                            c->fwd_desc, c->algos.fwd, ctx->workspace,
                                            ctx->workspace_bytes, &zero, c->y_desc, y));
    kernel_scope_leave(token);
}

static void weight_grad(conv_layer *c, const void *dy, const void *x, cudnnHandle_t cudnn, void *workspace,
                        size_t workspace_bytes) {
    const float one = 1.0f, zero = 0.0f;
    const conv_algos *al = &c->algos;
    if (al->use_engine[CONV_BACKWARD_FILTER])
        conv_engine_backward_filter(&al->engine[CONV_BACKWARD_FILTER], cudnn, c->run_weight_grad, dy, x, workspace);
    else
        CHECK_CUDNN(cudnnConvolutionBackwardFilter(cudnn, &one, c->x_desc, x, c->y_desc, dy, c->bwd_filter_desc,
                                                   al->bwd_filter, workspace, workspace_bytes, &zero, c->w_desc,
                                                   c->run_weight_grad));
}

static void data_grad(conv_layer *c, void *dx, const void *dy, job_context *ctx) {
    const float one = 1.0f, zero = 0.0f;
    const conv_algos *al = &c->algos;
    if (al->use_engine[CONV_BACKWARD_DATA])
        conv_engine_backward_data(&al->engine[CONV_BACKWARD_DATA], ctx->cudnn, dx, dy, c->run_weight, ctx->workspace);
    else
        CHECK_CUDNN(cudnnConvolutionBackwardData(ctx->cudnn, &one, c->w_desc, c->run_weight, c->y_desc, dy,
                                                 c->bwd_data_desc, al->bwd_data, ctx->workspace,
                                                 ctx->workspace_bytes, c->accumulate_dx ? &one : &zero,
                                                 c->x_desc, dx));
}

/* Runs of the legacy algorithm picked for one direction, for gpu_timer. */
typedef struct legacy_run {
    conv_layer *c;
    void *y, *dx;
    const void *x;
    job_context *ctx;
    conv_direction dir;
} legacy_run;

static void run_legacy(void *arg) {
    legacy_run *r = arg;
    if (r->dir == CONV_FORWARD) conv_forward(r->c, r->y, r->x, r->ctx);
    else if (r->dir == CONV_BACKWARD_DATA) data_grad(r->c, r->dx, r->y, r->ctx);
    else weight_grad(r->c, r->y, r->x, r->ctx->cudnn, r->ctx->workspace, r->ctx->workspace_bytes);
}

/* Find's own times include each launch's host path, as the engines' used to: both are measured
 * again here the same way (gpu_timer.h) before they are compared. */
static float time_legacy(conv_layer *c, conv_direction dir, void *y, const void *x, void *dx, job_context *ctx) {
    legacy_run r = {c, y, dx, x, ctx, dir};
    run_legacy(&r);
    return gpu_timer_median_ms(ctx->stream, run_legacy, &r, LEGACY_TIMED_RUNS);
}

/* SUITE_CONV_LOG=1: one line per searched direction on stderr, with what was chosen and why. */
static void log_choice(const conv_layer *c, conv_direction dir, float legacy_ms, const conv_engine_plan *plan,
                       int engine_found) {
    if (!knob_flag(KNOB_CONV_LOG)) return;
    const conv_shape *s = &c->shape;
    fprintf(stderr, "conv %s n%d %dx%d c%d->%d k%d s%d %s: legacy %.4f ms", s->data_type == CUDNN_DATA_BFLOAT16 ? "bf16" : "f32",
            s->batch, s->h_in, s->w_in, s->in_c, s->out_c, s->kernel, s->stride, conv_direction_name(dir), legacy_ms);
    if (engine_found)
        fprintf(stderr, ", engine %s %.4f ms (best of %d)", plan->name, plan->ms, plan->candidates_timed);
    fprintf(stderr, " -> %s\n", c->algos.use_engine[dir] ? "engine" : "legacy");
}

/* For each direction, the graph-API engine replaces the legacy algorithm when it measured faster.
 * SUITE_CONV_PATH=legacy or =engine forces one path (for comparisons and diagnosis). In a partition
 * whose SMs the libraries are told, the engines are told (the legacy API cannot be) and both paths
 * are measured inside the partition, so the legacy algorithm stays only where it ran faster there:
 * forcing the told engines made some bfloat16 directions several times slower than the legacy
 * algorithm in the same partition. */
static void search_engines(conv_layer *c, void *y, const void *x, void *dx, job_context *ctx) {
    conv_algos *al = &c->algos;
    const char *forced = knob_text(KNOB_CONV_PATH);
    int sm_target = ctx->sm_target.sms;
    if (forced && !strcmp(forced, "legacy")) return;
    int force_engine = forced && !strcmp(forced, "engine");
    float *legacy_ms[3] = {&al->fwd_ms, &al->bwd_data_ms, &al->bwd_filter_ms};
    for (int d = 0; d < 3; d++) {
        if (d == CONV_BACKWARD_DATA && !dx) continue;
        void *in = d == CONV_BACKWARD_DATA ? (void *)dx : (void *)x;
        void *w = d == CONV_BACKWARD_FILTER ? c->run_weight_grad : c->run_weight;
        float beta = d == CONV_BACKWARD_DATA && c->accumulate_dx ? 1.0f : 0.0f;
        char err[512];
        conv_engine_plan plan;
        int found = conv_engine_find(&plan, (conv_direction)d, &c->shape, ctx->allow_tf32, sm_target, beta, ctx->cudnn,
                                     ctx->stream, in, w, y, ctx->workspace, ctx->workspace_limit, err,
                                     sizeof err) == 0;
        /* Where no engine takes the told count, the engines planned for the whole device still run
         * inside the partition and are measured there like the rest: the legacy algorithm alone can
         * be far slower (bfloat16's weight gradient of the 3-channel stem). */
        int told_none = !found && sm_target;
        if (told_none)
            found = conv_engine_find(&plan, (conv_direction)d, &c->shape, ctx->allow_tf32, 0, beta, ctx->cudnn,
                                     ctx->stream, in, w, y, ctx->workspace, ctx->workspace_limit, err,
                                     sizeof err) == 0;
        /* Find's time is the GPU's plus at most the host's launch, so a legacy algorithm Find saw
         * at over twice the engine's (bfloat16's often take milliseconds) cannot win: not timed again. */
        if (found && !force_engine && *legacy_ms[d] < 2.0f * plan.ms + LEGACY_HOST_MS)
            *legacy_ms[d] = time_legacy(c, (conv_direction)d, y, x, dx, ctx);
        if (found && (force_engine || plan.ms < *legacy_ms[d])) {
            al->engine[d] = plan;
            al->use_engine[d] = 1;
            if (plan.workspace_bytes > al->workspace_bytes) al->workspace_bytes = plan.workspace_bytes;
        }
        if (told_none)
            fprintf(stderr, "conv set-up: no engine takes a partition of %d SMs for this %s: %s, measured in the "
                    "partition\n", sm_target, conv_direction_name((conv_direction)d),
                    found ? "the whole device's engines and the legacy algorithm" : "the legacy algorithm alone");
        log_choice(c, (conv_direction)d, *legacy_ms[d], &plan, found);
        if (found && !al->use_engine[d]) conv_engine_destroy(&plan);
    }
}

/* --- choices kept across processes (conv_choices.h) ---------------------------------------- */

/* The device's part (conv_choices_device_key), a forced path, and the layer. */
static void choice_key(const conv_layer *c, int has_dx, const job_context *ctx, char *key, size_t size) {
    char device[256];
    conv_choices_device_key(device, sizeof device, ctx->device, ctx->sm_target.sms, ctx->workspace_limit,
                            ctx->allow_tf32);
    const conv_shape *s = &c->shape;
    const char *forced = knob_text(KNOB_CONV_PATH);
    snprintf(key, size, "%s path=%s %s %s n%d %dx%d c%d->%d k%d s%d p%d acc=%d dx=%d", device,
             forced && *forced ? forced : "auto", s->data_type == CUDNN_DATA_BFLOAT16 ? "bf16" : "f32",
             s->format == CUDNN_TENSOR_NHWC ? "nhwc" : "nchw", s->batch, s->h_in, s->w_in, s->in_c, s->out_c,
             s->kernel, s->stride, s->pad, c->accumulate_dx, has_dx);
}


/* One layer's set-up, as conv_choices_choose hands it back to the three below. */
typedef struct conv_choosing {
    conv_layer *c;
    void *y, *dx;
    const void *x;
    job_context *ctx;
} conv_choosing;

/* "ws=BYTES fwd=ALGO/MATH/LEGACY_MS/ENGINE/ENGINE_MS bwd_data=... bwd_filter=...", ENGINE "-" where
 * the legacy algorithm runs; a direction that is never run (no input gradient) is "-". */
static void describe_choice(void *user, char *value, size_t size) {
    const conv_choosing *s = user;
    const conv_algos *al = &s->c->algos;
    int has_dx = s->dx != NULL;
    const int algo[3] = {al->fwd, al->bwd_data, al->bwd_filter};
    const int math[3] = {al->fwd_math, al->bwd_data_math, al->bwd_filter_math};
    const float ms[3] = {al->fwd_ms, al->bwd_data_ms, al->bwd_filter_ms};
    int n = snprintf(value, size, "ws=%zu", al->workspace_bytes);
    for (int d = 0; d < 3 && n > 0 && (size_t)n < size; d++) {
        if (d == CONV_BACKWARD_DATA && !has_dx)
            n += snprintf(value + n, size - (size_t)n, " %s=-", CONV_CHOICES_DIRECTIONS[d]);
        else
            n += snprintf(value + n, size - (size_t)n, " %s=%d/%d/%.6g/%s/%.6g", CONV_CHOICES_DIRECTIONS[d], algo[d],
                          math[d], ms[d], al->use_engine[d] ? al->engine[d].name : "-",
                          al->use_engine[d] ? al->engine[d].ms : 0.0f);
    }
}

/* Sets c->algos from a kept value, rebuilding its engine plans on these buffers. 0, or -1 with
 * err (nothing kept: the caller searches). */
static int restore_choice(void *user, const char *value, char *err, size_t err_size) {
    const conv_choosing *s = user;
    conv_layer *c = s->c;
    void *y = s->y, *dx = s->dx;
    const void *x = s->x;
    job_context *ctx = s->ctx;
    conv_algos *al = &c->algos;
    memset(al, 0, sizeof *al);
    const char *p = strstr(value, "ws=");
    if (!p || sscanf(p, "ws=%zu", &al->workspace_bytes) != 1) {
        snprintf(err, err_size, "no ws= in \"%s\"", value);
        return -1;
    }
    int *algo[3] = {(int *)&al->fwd, (int *)&al->bwd_data, (int *)&al->bwd_filter};
    int *math[3] = {(int *)&al->fwd_math, (int *)&al->bwd_data_math, (int *)&al->bwd_filter_math};
    float *ms[3] = {&al->fwd_ms, &al->bwd_data_ms, &al->bwd_filter_ms};
    for (int d = 0; d < 3; d++) {
        if (d == CONV_BACKWARD_DATA && !dx) continue;
        char tag[32], engine[96];
        float engine_ms = 0;
        snprintf(tag, sizeof tag, " %s=", CONV_CHOICES_DIRECTIONS[d]);
        const char *field = strstr(value, tag);
        if (!field || sscanf(field + strlen(tag), "%d/%d/%g/%95[^/]/%g", algo[d], math[d], ms[d], engine,
                             &engine_ms) != 5) {
            snprintf(err, err_size, "no %s choice in \"%s\"", CONV_CHOICES_DIRECTIONS[d], value);
            goto failed;
        }
        if (!strcmp(engine, "-")) continue;
        void *in = d == CONV_BACKWARD_DATA ? dx : (void *)x;
        void *w = d == CONV_BACKWARD_FILTER ? c->run_weight_grad : c->run_weight;
        float beta = d == CONV_BACKWARD_DATA && c->accumulate_dx ? 1.0f : 0.0f;
        if (conv_engine_rebuild(&al->engine[d], (conv_direction)d, &c->shape, beta, engine, engine_ms, ctx->cudnn, in,
                                w, y, err, err_size) != 0)
            goto failed;
        al->use_engine[d] = 1;
        if (al->engine[d].workspace_bytes > al->workspace_bytes) {
            snprintf(err, err_size, "%s needs %zu workspace bytes, more than the %zu kept", engine,
                     al->engine[d].workspace_bytes, al->workspace_bytes);
            goto failed;
        }
    }
    if (al->workspace_bytes > ctx->workspace_limit) {
        snprintf(err, err_size, "the kept choice needs %zu workspace bytes, over this job's limit of %zu",
                 al->workspace_bytes, ctx->workspace_limit);
        goto failed;
    }
    return 0;
failed:
    for (int d = 0; d < 3; d++) conv_engine_destroy(&al->engine[d]);
    memset(al, 0, sizeof *al);
    return -1;
}

static void search(void *user) {
    const conv_choosing *s = user;
    memset(&s->c->algos, 0, sizeof s->c->algos);
    search_algos(s->c, s->y, s->x, s->dx, s->ctx);
    use_math_types(s->c); /* the legacy picks are timed again as they will run */
    search_engines(s->c, s->y, s->x, s->dx, s->ctx);
    use_math_types(s->c);
}

/* The layer's algorithms: the choice kept for this key in SUITE_CONV_CHOICES' file, else a search
 * (conv_choices.h). */
static void choose(conv_layer *c, void *y, const void *x, void *dx, job_context *ctx) {
    char key[512];
    choice_key(c, dx != NULL, ctx, key, sizeof key);
    conv_choosing s = {c, y, dx, x, ctx};
    conv_choices_layer layer = {&s, restore_choice, search, describe_choice};
    conv_choices_choose("conv", key, &layer);
}

/* Layers share a search when shape, accumulation, the presence of an input gradient and the SMs the
 * libraries were told agree. */
static int cache_lookup(const conv_algo_cache *cache, const conv_shape *s, int accumulate_dx, int has_dx,
                        int sm_target) {
    for (int i = 0; cache && i < cache->count; i++)
        if (memcmp(&cache->shapes[i], s, sizeof *s) == 0 && cache->accumulate_dx[i] == accumulate_dx &&
            cache->has_dx[i] == has_dx && cache->sm_target[i] == sm_target)
            return i;
    return -1;
}

/* The weight gradient's own workspace (conv_algos keeps the largest of the three directions'). */
static size_t weight_grad_workspace(const conv_layer *c, cudnnHandle_t cudnn) {
    const conv_algos *al = &c->algos;
    if (al->use_engine[CONV_BACKWARD_FILTER]) return al->engine[CONV_BACKWARD_FILTER].workspace_bytes;
    size_t bytes = 0;
    CHECK_CUDNN(cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnn, c->x_desc, c->y_desc, c->bwd_filter_desc,
                                                               c->w_desc, al->bwd_filter, &bytes));
    return bytes;
}

void conv_setup(conv_layer *c, void *y, const void *x, void *dx, int accumulate_dx,
                conv_algo_cache *cache, job_context *ctx) {
    const conv_shape *s = &c->shape;
    c->accumulate_dx = accumulate_dx;
    if (is_half(c) && !ctx->arena.half_weights) {
        fprintf(stderr, "conv_setup: a bfloat16 convolution needs an arena with half_weights (the model was "
                "planned as float)\n");
        exit(1);
    }
    c->run_weight = is_half(c) ? arena_half_of(&ctx->arena, c->weight) : (void *)c->weight;
    c->run_weight_grad = is_half(c) ? arena_half_grad_of(&ctx->arena, c->weight) : (void *)c->weight_grad;
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&c->x_desc));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&c->y_desc));
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&c->w_desc));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(c->x_desc, s->format, s->data_type, s->batch, s->in_c,
                                           s->h_in, s->w_in));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(c->y_desc, s->format, s->data_type, s->batch, s->out_c,
                                           s->h_out, s->w_out));
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(c->w_desc, s->data_type, s->format, s->out_c, s->in_c,
                                           s->kernel, s->kernel));
    c->fwd_desc = make_conv_desc(s);
    c->bwd_data_desc = make_conv_desc(s);
    c->bwd_filter_desc = make_conv_desc(s);

    int cached = cache_lookup(cache, s, accumulate_dx, dx != NULL, ctx->sm_target.sms);
    if (cached >= 0) {
        c->algos = cache->algos[cached]; /* the cache keeps owning the engine plans */
    } else {
        choose(c, y, x, dx, ctx);
        if (cache && cache->count < CONV_CACHE_MAX) {
            cache->shapes[cache->count] = *s;
            cache->accumulate_dx[cache->count] = accumulate_dx;
            cache->has_dx[cache->count] = dx != NULL;
            cache->sm_target[cache->count] = ctx->sm_target.sms;
            cache->algos[cache->count++] = c->algos;
        } else {
            c->owns_engine = 1;
        }
    }
    use_math_types(c);
    c->wgrad_workspace_bytes = weight_grad_workspace(c, ctx->cudnn);
}

void conv_algo_cache_free(conv_algo_cache *cache) {
    for (int i = 0; i < cache->count; i++)
        for (int d = 0; d < 3; d++) conv_engine_destroy(&cache->algos[i].engine[d]);
    cache->count = 0;
}

/* The input gradient, marked for the kernel trace. */
static void data_grad_marked(conv_layer *c, void *dx, const void *dy, job_context *ctx) {
    int token = mark(c, CONV_BACKWARD_DATA, ctx);
    data_grad(c, dx, dy, ctx);
    kernel_scope_leave(token);
}

void conv_backward(conv_layer *c, void *dx, const void *dy, const void *x, job_context *ctx) {
    int token = mark(c, CONV_BACKWARD_FILTER, ctx);
    weight_grad(c, dy, x, ctx->cudnn, ctx->workspace, ctx->workspace_bytes);
    kernel_scope_leave(token);
    context_grad_ready(ctx, c->weight);
    if (dx) data_grad_marked(c, dx, dy, ctx);
}

void conv_backward_lane(conv_layer *c, void *dx, const void *dy, const void *x, wgrad_lane *lane,
                        job_context *ctx) {
    if (!lane) {
        conv_backward(c, dx, dy, x, ctx);
        return;
    }
    if (ctx->grad_hooks) {
        fprintf(stderr, "conv_backward_lane: gradient hooks need every gradient on the job's stream (no lane)\n");
        exit(1);
    }
    if (c->wgrad_workspace_bytes > lane->workspace_bytes) {
        fprintf(stderr, "conv_backward_lane: the layer's weight gradient needs a %zu-byte workspace, the lane has %zu\n",
                c->wgrad_workspace_bytes, lane->workspace_bytes);
        exit(1);
    }
    cudnnHandle_t on_lane = wgrad_lane_job_begin(lane, ctx->stream);
    int token = mark(c, CONV_BACKWARD_FILTER, ctx);
    weight_grad(c, dy, x, on_lane, lane->workspace, lane->workspace_bytes);
    kernel_scope_leave(token);
    wgrad_lane_job_end(lane);
    if (dx) data_grad_marked(c, dx, dy, ctx);
}

void conv_destroy(conv_layer *c) {
    if (c->owns_engine)
        for (int d = 0; d < 3; d++) conv_engine_destroy(&c->algos.engine[d]);
    c->owns_engine = 0;
    if (c->x_desc) CHECK_CUDNN(cudnnDestroyTensorDescriptor(c->x_desc));
    if (c->y_desc) CHECK_CUDNN(cudnnDestroyTensorDescriptor(c->y_desc));
    if (c->w_desc) CHECK_CUDNN(cudnnDestroyFilterDescriptor(c->w_desc));
    if (c->fwd_desc) CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(c->fwd_desc));
    if (c->bwd_data_desc) CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(c->bwd_data_desc));
    if (c->bwd_filter_desc) CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(c->bwd_filter_desc));
    c->x_desc = NULL, c->y_desc = NULL, c->w_desc = NULL;
    c->fwd_desc = c->bwd_data_desc = c->bwd_filter_desc = NULL;
}
