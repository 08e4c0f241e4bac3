#include "models/layers/depthwise.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/depthwise.h"
#include "kernels/check.h"
#include "kernels/knobs.h"
#include "models/core/gpu_timer.h"
#include "models/layers/conv_choices.h"
#include "models/layers/written.h"

#define DEPTHWISE_TIMING_REPS 7

const char *depthwise_path_name(depthwise_path path) { return path == DEPTHWISE_CUDNN ? "cudnn" : "ours"; }

void depthwise_layer_init(depthwise_layer *d, arena *a, int batch, int channels, int size_in, int stride) {
    memset(d, 0, sizeof *d);
    d->batch = batch, d->channels = channels, d->stride = stride;
    d->h_in = d->w_in = size_in;
    d->h_out = d->w_out = (size_in - 1) / stride + 1;
    d->weight = arena_take_floats(a, ARENA_WEIGHTS, (size_t)channels * 9);
    d->weight_grad = a->planning ? NULL : arena_grad_of(a, d->weight);
}

double depthwise_layer_flops(const depthwise_layer *d) {
    return 2.0 * 9.0 * d->batch * (double)d->h_out * d->w_out * d->channels;
}

size_t depthwise_layer_scratch_bytes(const depthwise_layer *d) { return depthwise_scratch_bytes(d->channels); }
void depthwise_layer_attach_scratch(depthwise_layer *d, void *scratch) { d->scratch = scratch; }

/* ---- the two implementations ---------------------------------------------------------------
 * Both read the weight and write its gradient where set-up pointed them (run_weight,
 * run_weight_grad): the float32 master and its gradient, or the arena's bfloat16 copies. */

static void run_ours(depthwise_layer *d, int dir, void *y, const void *x, void *dx, const void *dy,
                     job_context *ctx) {
    int N = d->batch, H = d->h_in, W = d->w_in, C = d->channels, s = d->stride, Ho = d->h_out, Wo = d->w_out;
    if (dir == DEPTHWISE_FORWARD)
        depthwise_forward(y, x, d->run_weight, N, H, W, C, s, Ho, Wo, d->type, ctx->stream);
    else if (dir == DEPTHWISE_BACKWARD_DATA)
        depthwise_backward_data(dx, dy, d->run_weight, N, H, W, C, s, Ho, Wo, d->type, ctx->stream);
    else
        depthwise_backward_filter(d->run_weight_grad, dy, x, N, H, W, C, s, Ho, Wo, d->type, d->scratch,
                                  ctx->stream);
}

static void run_cudnn(depthwise_layer *d, int dir, void *y, const void *x, void *dx, const void *dy,
                      job_context *ctx) {
    const float one = 1.0f, zero = 0.0f;
    const depthwise_choice *ch = &d->choice;
    if (dir == DEPTHWISE_FORWARD)
        CHECK_CUDNN(cudnnConvolutionForward(ctx->cudnn, &one, d->x_desc, x, d->w_desc, d->run_weight, d->fwd_desc,
                                            ch->fwd, ctx->workspace, ctx->workspace_bytes, &zero, d->y_desc, y));
    else if (dir == DEPTHWISE_BACKWARD_DATA)
        CHECK_CUDNN(cudnnConvolutionBackwardData(ctx->cudnn, &one, d->w_desc, d->run_weight, d->y_desc, dy,
                                                 d->bwd_data_desc, ch->bwd_data, ctx->workspace,
                                                 ctx->workspace_bytes, &zero, d->x_desc, dx));
    else
        CHECK_CUDNN(cudnnConvolutionBackwardFilter(ctx->cudnn, &one, d->x_desc, x, d->y_desc, dy,
                                                   d->bwd_filter_desc, ch->bwd_filter, ctx->workspace,
                                                   ctx->workspace_bytes, &zero, d->w_desc, d->run_weight_grad));
}

static void run(depthwise_layer *d, int dir, depthwise_path path, void *y, const void *x, void *dx,
                const void *dy, job_context *ctx) {
    if (path == DEPTHWISE_CUDNN) run_cudnn(d, dir, y, x, dx, dy, ctx);
    else run_ours(d, dir, y, x, dx, dy, ctx);
}

static int is_half(const depthwise_layer *d) { return d->type == ELEM_BF16; }

/* ---- set-up ---------------------------------------------------------------------------------*/

static cudnnConvolutionDescriptor_t make_desc(const depthwise_layer *d) {
    cudnnConvolutionDescriptor_t desc;
    CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&desc));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(desc, 1, 1, d->stride, d->stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
    CHECK_CUDNN(cudnnSetConvolutionGroupCount(desc, d->channels));
    return desc;
}

/* found = whether a result succeeded within the limit (and is plain float math unless tensor
 * cores are allowed: TF32 for float data where the context allows it, always for bfloat16 data);
 * the first such (results come back fastest first) is taken. */
#define PICK(results, n, limit, allow_tensor_ops, out_algo, out_math, out_mem, found)            \
    do {                                                                                         \
        for (int i_ = 0; i_ < (n) && !(found); i_++) {                                           \
            if ((results)[i_].status != CUDNN_STATUS_SUCCESS || (results)[i_].memory > (limit))  \
                continue;                                                                        \
            if (!(allow_tensor_ops) && (results)[i_].mathType != CUDNN_FMA_MATH) continue;       \
            out_algo = (results)[i_].algo, out_math = (results)[i_].mathType;                    \
            out_mem = (results)[i_].memory;                                                      \
            found = 1;                                                                           \
        }                                                                                        \
    } while (0)

/* cuDNN's algorithm per direction; a direction cuDNN cannot do (a status other than success,
 * or no algorithm within the limit) is left to our kernels. */
static void find_cudnn(depthwise_layer *d, void *y, const void *x, void *dx, size_t memory[3],
                       job_context *ctx) {
    enum { MAX_RESULTS = 16 };
    depthwise_choice *ch = &d->choice;
    size_t limit = ctx->workspace_limit;
    int n = 0, tensor_ops = ctx->allow_tf32 || is_half(d);
    cudnnMathType_t search_math = tensor_ops ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
    CHECK_CUDNN(cudnnSetConvolutionMathType(d->fwd_desc, search_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(d->bwd_data_desc, search_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(d->bwd_filter_desc, search_math));

    cudnnConvolutionFwdAlgoPerf_t fwd[MAX_RESULTS];
    if (cudnnFindConvolutionForwardAlgorithmEx(ctx->cudnn, d->x_desc, x, d->w_desc, d->run_weight, d->fwd_desc,
                                               d->y_desc, y, MAX_RESULTS, &n, fwd, ctx->workspace,
                                               limit) == CUDNN_STATUS_SUCCESS)
        PICK(fwd, n, limit, tensor_ops, ch->fwd, ch->fwd_math, memory[DEPTHWISE_FORWARD],
             ch->cudnn_ok[DEPTHWISE_FORWARD]);
    cudnnConvolutionBwdFilterAlgoPerf_t bwf[MAX_RESULTS];
    if (cudnnFindConvolutionBackwardFilterAlgorithmEx(ctx->cudnn, d->x_desc, x, d->y_desc, y, d->bwd_filter_desc,
                                                      d->w_desc, d->run_weight_grad, MAX_RESULTS, &n, bwf,
                                                      ctx->workspace, limit) == CUDNN_STATUS_SUCCESS)
        PICK(bwf, n, limit, tensor_ops, ch->bwd_filter, ch->bwd_filter_math,
             memory[DEPTHWISE_BACKWARD_FILTER], ch->cudnn_ok[DEPTHWISE_BACKWARD_FILTER]);
    if (dx) {
        cudnnConvolutionBwdDataAlgoPerf_t bwd[MAX_RESULTS];
        if (cudnnFindConvolutionBackwardDataAlgorithmEx(ctx->cudnn, d->w_desc, d->run_weight, d->y_desc, y,
                                                        d->bwd_data_desc, d->x_desc, dx, MAX_RESULTS, &n, bwd,
                                                        ctx->workspace, limit) == CUDNN_STATUS_SUCCESS)
            PICK(bwd, n, limit, tensor_ops, ch->bwd_data, ch->bwd_data_math,
                 memory[DEPTHWISE_BACKWARD_DATA], ch->cudnn_ok[DEPTHWISE_BACKWARD_DATA]);
    }
    (void)cudaGetLastError(); /* a refused Find leaves no error behind for the next check */
    CHECK_CUDNN(cudnnSetConvolutionMathType(d->fwd_desc, ch->fwd_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(d->bwd_data_desc, ch->bwd_data_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(d->bwd_filter_desc, ch->bwd_filter_math));
}

typedef struct direction_run {
    depthwise_layer *d;
    int dir;
    depthwise_path path;
    void *y, *dx;
    const void *x;
    job_context *ctx;
} direction_run;

static void run_direction(void *arg) {
    direction_run *r = arg;
    run(r->d, r->dir, r->path, r->y, r->x, r->dx, r->y, r->ctx);
}

/* Median GPU time of DEPTHWISE_TIMING_REPS back-to-back runs of one direction, after one warm-up run. */
static float time_direction(depthwise_layer *d, int dir, depthwise_path path, void *y, const void *x,
                            void *dx, job_context *ctx) {
    direction_run r = {d, dir, path, y, dx, x, ctx};
    run_direction(&r);
    return gpu_timer_median_ms(ctx->stream, run_direction, &r, DEPTHWISE_TIMING_REPS);
}

/* cuDNN's algorithm for a direction leaves part of its output unwritten (models/layers/written.h):
 * it is passed over for our kernel, which the tests check against references. */
static size_t cudnn_unwritten(depthwise_layer *d, int dir, void *y, const void *x, void *dx, job_context *ctx) {
    direction_run r = {d, dir, DEPTHWISE_CUDNN, y, dx, x, ctx};
    size_t pixels_in = (size_t)d->batch * d->h_in * d->w_in, pixels_out = (size_t)d->batch * d->h_out * d->w_out;
    void *out = dir == DEPTHWISE_FORWARD ? y : dir == DEPTHWISE_BACKWARD_DATA ? dx : d->run_weight_grad;
    size_t n = dir == DEPTHWISE_FORWARD ? pixels_out * d->channels
               : dir == DEPTHWISE_BACKWARD_DATA ? pixels_in * d->channels : (size_t)d->channels * 9;
    size_t left = written_unwritten(out, n, d->type, run_direction, &r, ctx->stream);
    if (left)
        fprintf(stderr, "depthwise %dx%dx%d stride %d: cuDNN's %s algorithm leaves %zu of %zu outputs unwritten "
                "(models/layers/written.h): our kernel runs instead\n", d->h_in, d->w_in, d->channels, d->stride,
                dir == DEPTHWISE_FORWARD ? "forward" : dir == DEPTHWISE_BACKWARD_DATA ? "backward-data"
                                                                                     : "backward-filter",
                left, n);
    return left;
}

static void measure(depthwise_layer *d, void *y, const void *x, void *dx, job_context *ctx) {
    depthwise_choice *ch = &d->choice;
    const char *forced = knob_text(KNOB_DEPTHWISE_PATH);
    int force_ours = forced && !strcmp(forced, "ours"), force_cudnn = forced && !strcmp(forced, "cudnn");
    size_t memory[3] = {0, 0, 0};
    for (int dir = 0; dir < 3; dir++) ch->ours_ms[dir] = ch->cudnn_ms[dir] = -1.0f;
    if (!force_ours) find_cudnn(d, y, x, dx, memory, ctx);
    for (int dir = 0; dir < 3; dir++) {
        ch->path[dir] = DEPTHWISE_OURS;
        if (dir == DEPTHWISE_BACKWARD_DATA && !dx) continue;
        if (!force_cudnn) ch->ours_ms[dir] = time_direction(d, dir, DEPTHWISE_OURS, y, x, dx, ctx);
        if (!ch->cudnn_ok[dir]) {
            if (force_cudnn)
                fprintf(stderr, "depthwise %dx%dx%d stride %d: cuDNN has no %s algorithm within the workspace "
                        "limit; our kernel runs instead\n", d->h_in, d->w_in, d->channels, d->stride,
                        dir == DEPTHWISE_FORWARD ? "forward" : dir == DEPTHWISE_BACKWARD_DATA ? "backward-data"
                                                                                             : "backward-filter");
            continue;
        }
        if (!force_ours) ch->cudnn_ms[dir] = time_direction(d, dir, DEPTHWISE_CUDNN, y, x, dx, ctx);
        if (!(force_cudnn || ch->cudnn_ms[dir] < ch->ours_ms[dir])) continue;
        if (cudnn_unwritten(d, dir, y, x, dx, ctx)) {
            if (ch->ours_ms[dir] < 0) ch->ours_ms[dir] = time_direction(d, dir, DEPTHWISE_OURS, y, x, dx, ctx);
        } else {
            ch->path[dir] = DEPTHWISE_CUDNN;
            if (memory[dir] > ch->workspace_bytes) ch->workspace_bytes = memory[dir];
        }
    }
}

/* --- choices kept across processes (conv_choices.h) ---------------------------------------- */

typedef struct depthwise_choosing {
    depthwise_layer *d;
    void *y, *dx;
    const void *x;
    job_context *ctx;
} depthwise_choosing;

static void use_math_types(depthwise_layer *d) {
    CHECK_CUDNN(cudnnSetConvolutionMathType(d->fwd_desc, d->choice.fwd_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(d->bwd_data_desc, d->choice.bwd_data_math));
    CHECK_CUDNN(cudnnSetConvolutionMathType(d->bwd_filter_desc, d->choice.bwd_filter_math));
}

static void search_now(void *user) {
    depthwise_choosing *s = user;
    depthwise_layer *d = s->d;
    memset(&d->choice, 0, sizeof d->choice);
    d->choice.fwd_math = d->choice.bwd_data_math = d->choice.bwd_filter_math = CUDNN_FMA_MATH;
    measure(d, s->y, s->x, s->dx, s->ctx);
}

/* "ws=BYTES" then per direction "D=PATH/CUDNN_OK/ALGO/MATH/OURS_MS/CUDNN_MS" (fwd, bwd_data, bwd_filter). */

static void choice_fields(depthwise_choice *ch, int *algo[3], int *math[3]) {
    algo[DEPTHWISE_FORWARD] = (int *)&ch->fwd, math[DEPTHWISE_FORWARD] = (int *)&ch->fwd_math;
    algo[DEPTHWISE_BACKWARD_DATA] = (int *)&ch->bwd_data, math[DEPTHWISE_BACKWARD_DATA] = (int *)&ch->bwd_data_math;
    algo[DEPTHWISE_BACKWARD_FILTER] = (int *)&ch->bwd_filter,
    math[DEPTHWISE_BACKWARD_FILTER] = (int *)&ch->bwd_filter_math;
}

static void describe_choice(void *user, char *value, size_t size) {
    depthwise_choice *ch = &((depthwise_choosing *)user)->d->choice;
    int *algo[3], *math[3];
    choice_fields(ch, algo, math);
    int n = snprintf(value, size, "ws=%zu", ch->workspace_bytes);
    for (int dir = 0; dir < 3 && n > 0 && (size_t)n < size; dir++)
        n += snprintf(value + n, size - (size_t)n, " %s=%d/%d/%d/%d/%.6g/%.6g", CONV_CHOICES_DIRECTIONS[dir],
                      (int)ch->path[dir], ch->cudnn_ok[dir], *algo[dir], *math[dir], ch->ours_ms[dir],
                      ch->cudnn_ms[dir]);
}

static int restore_kept(void *user, const char *value, char *err, size_t err_size) {
    depthwise_choosing *s = user;
    depthwise_choice ch;
    memset(&ch, 0, sizeof ch);
    int *algo[3], *math[3];
    choice_fields(&ch, algo, math);
    const char *p = strstr(value, "ws=");
    if (!p || sscanf(p, "ws=%zu", &ch.workspace_bytes) != 1) {
        snprintf(err, err_size, "no ws= in \"%s\"", value);
        return -1;
    }
    for (int dir = 0; dir < 3; dir++) {
        char tag[32];
        int path;
        snprintf(tag, sizeof tag, " %s=", CONV_CHOICES_DIRECTIONS[dir]);
        const char *field = strstr(value, tag);
        if (!field || sscanf(field + strlen(tag), "%d/%d/%d/%d/%g/%g", &path, &ch.cudnn_ok[dir], algo[dir], math[dir],
                             &ch.ours_ms[dir], &ch.cudnn_ms[dir]) != 6 ||
            (path != DEPTHWISE_OURS && path != DEPTHWISE_CUDNN) || (path == DEPTHWISE_CUDNN && !ch.cudnn_ok[dir])) {
            snprintf(err, err_size, "no usable %s choice in \"%s\"", CONV_CHOICES_DIRECTIONS[dir], value);
            return -1;
        }
        ch.path[dir] = (depthwise_path)path;
    }
    if (ch.workspace_bytes > s->ctx->workspace_limit) {
        snprintf(err, err_size, "the kept choice needs %zu workspace bytes, over this job's limit of %zu",
                 ch.workspace_bytes, s->ctx->workspace_limit);
        return -1;
    }
    s->d->choice = ch;
    use_math_types(s->d);
    return 0;
}

/* The layer's paths: the choice kept for this key in SUITE_CONV_CHOICES' file, else measured. */
static void choose(depthwise_layer *d, void *y, const void *x, void *dx, job_context *ctx) {
    char device[256], key[512];
    conv_choices_device_key(device, sizeof device, ctx->device, ctx->sm_target.sms, ctx->workspace_limit,
                            ctx->allow_tf32);
    const char *forced = knob_text(KNOB_DEPTHWISE_PATH);
    snprintf(key, sizeof key, "depthwise %s path=%s %s n%d %dx%d c%d s%d dx=%d", device,
             forced && *forced ? forced : "auto", is_half(d) ? "bf16" : "f32", d->batch, d->h_in, d->w_in,
             d->channels, d->stride, dx != NULL);
    depthwise_choosing s = {d, y, dx, x, ctx};
    conv_choices_layer layer = {&s, restore_kept, search_now, describe_choice};
    conv_choices_choose("depthwise", key, &layer);
}

static int cache_lookup(const depthwise_cache *cache, const int key[7]) {
    for (int i = 0; cache && i < cache->count; i++)
        if (memcmp(cache->keys[i], key, 7 * sizeof(int)) == 0) return i;
    return -1;
}

void depthwise_layer_setup(depthwise_layer *d, void *y, const void *x, void *dx, depthwise_cache *cache,
                           job_context *ctx) {
    if (!d->scratch) {
        fprintf(stderr, "depthwise_layer_setup: no scratch attached (depthwise_layer_attach_scratch)\n");
        exit(2);
    }
    if (is_half(d) && !ctx->arena.half_weights) {
        fprintf(stderr, "depthwise_layer_setup: a bfloat16 layer needs an arena with half_weights (the model was "
                "planned as float)\n");
        exit(1);
    }
    d->run_weight = is_half(d) ? arena_half_of(&ctx->arena, d->weight) : (void *)d->weight;
    d->run_weight_grad = is_half(d) ? arena_half_grad_of(&ctx->arena, d->weight) : (void *)d->weight_grad;
    /* float accumulation for both data types (make_desc), as the dense convolutions do */
    cudnnDataType_t data = is_half(d) ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&d->x_desc));
    CHECK_CUDNN(cudnnCreateTensorDescriptor(&d->y_desc));
    CHECK_CUDNN(cudnnCreateFilterDescriptor(&d->w_desc));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(d->x_desc, CUDNN_TENSOR_NHWC, data, d->batch, d->channels, d->h_in,
                                           d->w_in));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(d->y_desc, CUDNN_TENSOR_NHWC, data, d->batch, d->channels, d->h_out,
                                           d->w_out));
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(d->w_desc, data, CUDNN_TENSOR_NHWC, d->channels, 1, 3, 3));
    d->fwd_desc = make_desc(d);
    d->bwd_data_desc = make_desc(d);
    d->bwd_filter_desc = make_desc(d);

    int key[7] = {d->batch, d->channels, d->h_in, d->w_in, d->stride, dx != NULL, (int)d->type};
    int cached = cache_lookup(cache, key);
    if (cached >= 0) {
        d->choice = cache->choices[cached];
        use_math_types(d);
        return;
    }
    choose(d, y, x, dx, ctx);
    if (cache && cache->count < DEPTHWISE_CACHE_MAX) {
        memcpy(cache->keys[cache->count], key, sizeof key);
        cache->choices[cache->count++] = d->choice;
    }
}

/* ---- passes ---------------------------------------------------------------------------------*/

/* One direction, marked for the kernel trace (models/core/kernel_scope.h): its FLOPs are the
 * forward's, its bytes one input, the 3x3 weights and one output. */
static void run_marked(depthwise_layer *d, int dir, void *y, const void *x, void *dx, const void *dy,
                       job_context *ctx) {
    static const kernel_pass pass[3] = {[DEPTHWISE_FORWARD] = KPASS_FORWARD, [DEPTHWISE_BACKWARD_DATA] = KPASS_DGRAD,
                                        [DEPTHWISE_BACKWARD_FILTER] = KPASS_WGRAD};
    static const kernel_class cls[3] = {[DEPTHWISE_FORWARD] = KCLASS_CONV_FWD,
                                        [DEPTHWISE_BACKWARD_DATA] = KCLASS_CONV_DGRAD,
                                        [DEPTHWISE_BACKWARD_FILTER] = KCLASS_CONV_WGRAD};
    double e = (double)elem_bytes(d->type), in = (double)d->batch * d->channels * d->h_in * d->w_in;
    double out = (double)d->batch * d->channels * d->h_out * d->w_out;
    int token = ctx->scopes ? kernel_scope_enter(ctx->scopes, d->weight, NULL, pass[dir], cls[dir],
                                                 depthwise_layer_flops(d), (in + out + 9.0 * d->channels) * e)
                            : -1;
    run(d, dir, d->choice.path[dir], y, x, dx, dy, ctx);
    kernel_scope_leave(token);
}

void depthwise_layer_forward(depthwise_layer *d, void *y, const void *x, job_context *ctx) {
    run_marked(d, DEPTHWISE_FORWARD, y, x, NULL, NULL, ctx);
}

void depthwise_layer_backward(depthwise_layer *d, void *dx, const void *dy, const void *x, job_context *ctx) {
    run_marked(d, DEPTHWISE_BACKWARD_FILTER, NULL, x, NULL, dy, ctx);
    context_grad_ready(ctx, d->weight);
    if (dx) run_marked(d, DEPTHWISE_BACKWARD_DATA, NULL, NULL, dx, dy, ctx);
}

void depthwise_layer_destroy(depthwise_layer *d) {
    if (d->x_desc) CHECK_CUDNN(cudnnDestroyTensorDescriptor(d->x_desc));
    if (d->y_desc) CHECK_CUDNN(cudnnDestroyTensorDescriptor(d->y_desc));
    if (d->w_desc) CHECK_CUDNN(cudnnDestroyFilterDescriptor(d->w_desc));
    if (d->fwd_desc) CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(d->fwd_desc));
    if (d->bwd_data_desc) CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(d->bwd_data_desc));
    if (d->bwd_filter_desc) CHECK_CUDNN(cudnnDestroyConvolutionDescriptor(d->bwd_filter_desc));
    d->x_desc = NULL, d->y_desc = NULL, d->w_desc = NULL;
    d->fwd_desc = d->bwd_data_desc = d->bwd_filter_desc = NULL;
}
