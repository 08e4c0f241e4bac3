/* conv_bn_probe: what does the loaded cuDNN fuse of batch norm into ResNet-50's convolutions, and
 * what would it save? For each convolution of ResNet-50's forward (224x224, batch 256 by default),
 * in bf16 and in half:
 *   unfused  our BN apply + ReLU (kernels/batchnorm.cu, where the convolution has a prologue),
 *            cuDNN's convolution (the fastest configuration its heuristics propose), our
 *            statistics pass (forward_train less forward_infer on the output). Our kernels take
 *            float or bf16: half is timed with the bf16 kernels, which move the same bytes.
 *   fused    cuDNN's graphs (bench/conv_bn/graph.h): the whole ConvBNfprop graph, the prologue
 *            alone, the statistics epilogue alone; with --wgrad also the weight gradient with and
 *            without the prologue. Every configuration the heuristics propose is run, checked
 *            against the unfused reference and timed (median); the fastest that passed is kept.
 * and the projection lab/conv_bn_roads.md defines: per convolution the best saving, the wgrad
 * tax of a prologue, the step less the savings against the target share of PyTorch's step.
 * It runs against whichever cuDNN 9 the loader finds (LD_LIBRARY_PATH), says which, and with
 * --libraries-only tells which of its libraries the fused graph maps. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "bench/conv_bn/graph.h"
#include "bench/conv_bn/reference.h"
#include "bench/conv_bn/roles.h"
#include "kernels/check.h"
#include "kernels/kernels.h"
#include "models/core/gpu_timer.h"
#include "runner/cli.h"

enum { TYPES_BF16 = 1, TYPES_HALF = 2, TYPES_BOTH = 3 };
enum { SHAPES_PROLOGUE = 0, SHAPES_ALL = 1 };
enum { MAX_CONVS = CONV_ENTRIES_MAX, MAX_LIBRARIES = 64 };

typedef struct probe_args {
    int types, shapes, wgrad, batch, image_size, runs, workspace_mb, libraries_only, list, max_configs;
    double step_ms, torch_ms, target;
} probe_args;

static const cli_choice TYPE_CHOICES[] = {{"bf16", TYPES_BF16}, {"half", TYPES_HALF}, {"both", TYPES_BOTH}, {0}};
static const cli_choice SHAPE_CHOICES[] = {{"prologue", SHAPES_PROLOGUE}, {"all", SHAPES_ALL}, {0}};

static const cli_option OPTIONS[] = {
    {"--type", "T", "element type of the convolutions", CLI_CHOICE(probe_args, types, TYPE_CHOICES),
     .fallback = "both"},
    {"--shapes", "SET", "prologue: each block's conv2 and conv3; all: every convolution of the forward",
     CLI_CHOICE(probe_args, shapes, SHAPE_CHOICES), .fallback = "prologue"},
    {"--wgrad", NULL, "also the weight gradient with and without the prologue (the wgrad tax)",
     CLI_FLAG(probe_args, wgrad, 1)},
    {"--batch", "N", "ResNet-50's batch", CLI_INT(probe_args, batch, 1, 1024), .fallback = "256"},
    {"--image-size", "PX", "ResNet-50's input side", CLI_INT(probe_args, image_size, 32, 512), .fallback = "224"},
    {"--runs", "N", "timed runs of each configuration (the median is kept)", CLI_INT(probe_args, runs, 1, 64),
     .fallback = "9"},
    {"--max-configs", "N", "try only the first N distinct configurations of each graph (0: every one proposed)",
     CLI_INT(probe_args, max_configs, 0, 100000), .fallback = "0"},
    {"--workspace-mb", "MB", "largest workspace a configuration may take", CLI_INT(probe_args, workspace_mb, 0, 65536),
     .fallback = "512"},
    {"--step-ms", "MS", "the suite's measured step, which the savings come off",
     CLI_REAL(probe_args, step_ms, 0.001, 1e6), .fallback = "39.76"},
    {"--torch-ms", "MS", "compiled PyTorch's step in the same precision", CLI_REAL(probe_args, torch_ms, 0.001, 1e6),
     .fallback = "44.48"},
    {"--target", "SHARE", "the share of PyTorch's step to reach", CLI_REAL(probe_args, target, 0.01, 10),
     .fallback = "0.80"},
    {"--libraries-only", NULL,
     "only the whole fused graph of the first prologue convolution, unchecked, with the cuDNN libraries mapped "
     "after each phase",
     CLI_FLAG(probe_args, libraries_only, 1)},
    {"--list", NULL, "print the convolutions of the set, their roles and counts, and exit (no GPU)",
     CLI_FLAG(probe_args, list, 1)},
    {0}};

static const cli_program PROGRAM = {
    .name = "conv_bn_probe",
    .synopsis = "usage: conv_bn_probe [--type bf16|half|both] [--shapes prologue|all] [--wgrad] [options]",
    .options = OPTIONS};

/* ---- the cuDNN libraries this process has mapped ------------------------------------------ */

typedef struct library_list {
    char paths[MAX_LIBRARIES][256];
    int n;
} library_list;

/* Prints the cuDNN (and NVRTC, cuBLAS) libraries mapped since the last call, with their sizes. */
static void print_new_libraries(library_list *seen, const char *phase) {
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) {
        printf("libraries after %s: /proc/self/maps unreadable\n", phase);
        return;
    }
    char line[512];
    int printed = 0;
    while (fgets(line, sizeof line, maps)) {
        char *path = strchr(line, '/');
        if (!path) continue;
        path[strcspn(path, "\n")] = '\0';
        const char *base = strrchr(path, '/') + 1;
        if (strncmp(base, "libcudnn", 8) && strncmp(base, "libnvrtc", 8) && strncmp(base, "libcublas", 9)) continue;
        int known = 0;
        for (int i = 0; i < seen->n && !known; i++) known = !strcmp(seen->paths[i], path);
        if (known || seen->n == MAX_LIBRARIES) continue;
        snprintf(seen->paths[seen->n++], sizeof seen->paths[0], "%s", path);
        struct stat st;
        double mb = stat(path, &st) == 0 ? (double)st.st_size / (1 << 20) : -1.0;
        printf("  mapped after %s: %s (%.1f MiB)\n", phase, path, mb);
        printed++;
    }
    if (!printed) printf("  mapped after %s: nothing new\n", phase);
    fclose(maps);
}

/* ---- device buffers --------------------------------------------------------------------------- */

typedef struct probe_buffers {
    void *x, *activated, *w, *y, *y_ref, *dy, *dw, *dw_ref, *scale_t, *bias_t, *bf16_in, *bf16_out, *bn_scratch;
    float *scale, *bias, *zeros, *unit_var, *sum, *sqsum, *bn_mean, *bn_invstd;
    double *ref_sum, *ref_sumsq;
    void *workspace;
    size_t workspace_limit;
} probe_buffers;

static void *device_alloc(size_t bytes) {
    void *p = NULL;
    CHECK_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
    CHECK_CUDA(cudaMemset(p, 0, bytes ? bytes : 1));
    return p;
}

static void buffers_alloc(probe_buffers *b, const conv_entry *e, int n, size_t workspace_limit) {
    size_t act = 0, filt = 0, chan = 0;
    for (int i = 0; i < n; i++) {
        const conv_shape *s = &e[i].shape;
        size_t in = (size_t)s->batch * s->h_in * s->w_in * s->in_c, out = (size_t)s->batch * s->h_out * s->w_out * s->out_c;
        act = in > act ? in : act;
        act = out > act ? out : act;
        size_t f = (size_t)s->out_c * s->in_c * s->kernel * s->kernel;
        filt = f > filt ? f : filt;
        chan = (size_t)s->in_c > chan ? (size_t)s->in_c : chan;
        chan = (size_t)s->out_c > chan ? (size_t)s->out_c : chan;
    }
    memset(b, 0, sizeof *b);
    void **acts[] = {&b->x, &b->activated, &b->y, &b->y_ref, &b->dy, &b->bf16_in, &b->bf16_out};
    for (size_t i = 0; i < sizeof acts / sizeof *acts; i++) *acts[i] = device_alloc(act * 2);
    b->w = device_alloc(filt * 2), b->dw = device_alloc(filt * 2), b->dw_ref = device_alloc(filt * 2);
    b->scale_t = device_alloc(chan * 2), b->bias_t = device_alloc(chan * 2);
    float **floats[] = {&b->scale, &b->bias, &b->zeros, &b->unit_var, &b->sum, &b->sqsum, &b->bn_mean, &b->bn_invstd};
    for (size_t i = 0; i < sizeof floats / sizeof *floats; i++) *floats[i] = device_alloc(chan * sizeof(float));
    b->ref_sum = device_alloc(chan * sizeof(double)), b->ref_sumsq = device_alloc(chan * sizeof(double));
    b->bn_scratch = device_alloc(bn_scratch_bytes(1, (int)chan)); /* zero once, as the kernel asks */
    b->workspace_limit = workspace_limit;
    b->workspace = device_alloc(workspace_limit);
}

static void buffers_free(probe_buffers *b) {
    void *all[] = {b->x, b->activated, b->w, b->y, b->y_ref, b->dy, b->dw, b->dw_ref, b->scale_t, b->bias_t,
                   b->bf16_in, b->bf16_out, b->bn_scratch, b->scale, b->bias, b->zeros, b->unit_var, b->sum,
                   b->sqsum, b->bn_mean, b->bn_invstd, b->ref_sum, b->ref_sumsq, b->workspace};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) CHECK_CUDA(cudaFree(all[i]));
}

/* ---- our batch-norm passes, timed ------------------------------------------------------------ */

typedef struct bn_run {
    const probe_buffers *b;
    int rows, C, train;
    cudaStream_t stream;
} bn_run;

static const float BN_EPS = 1e-5f;

/* apply: y = relu(x * scale + bias) as the inference form with mean 0 and variance 1 - eps;
 * train: the statistics pass, then the same apply. */
static void run_bn(void *arg) {
    const bn_run *r = arg;
    const probe_buffers *b = r->b;
    if (r->train)
        bn_act_forward_train(b->bf16_out, NULL, b->bn_mean, b->bn_invstd, NULL, NULL, b->bf16_in, NULL, b->scale,
                             b->bias, r->rows, r->C, BN_EPS, 0.1f, ACT_RELU, ELEM_BF16, b->bn_scratch, r->stream);
    else
        bn_act_forward_infer(b->bf16_out, b->bf16_in, NULL, b->scale, b->bias, b->zeros, b->unit_var, r->rows, r->C,
                             BN_EPS, ACT_RELU, ELEM_BF16, r->stream);
}

static float time_bn(const probe_buffers *b, int rows, int C, int train, int runs, cudaStream_t stream) {
    bn_run r = {b, rows, C, train, stream};
    run_bn(&r);
    return gpu_timer_median_ms(stream, run_bn, &r, runs);
}

/* ---- checks against the reference ------------------------------------------------------------- */

typedef struct check_ctx {
    const probe_buffers *b;
    const conv_shape *s;
    ref_type type;
    double tolerance;         /* of the output's largest magnitude */
    const double *mean, *var; /* the reference's, per output channel (host) */
    int stats, wgrad;
    cudaStream_t stream;
    double worst_y, worst_stat; /* of the last configuration checked */
} check_ctx;

static const double STAT_TOLERANCE = 1e-2;

static int check_outputs(void *arg, const cb_buffers *cb) {
    check_ctx *c = arg;
    const conv_shape *s = c->s;
    size_t rows = (size_t)s->batch * s->h_out * s->w_out;
    double diff, largest;
    if (c->wgrad) {
        ref_max_diff(&diff, &largest, cb->dw, c->b->dw_ref, (size_t)s->out_c * s->in_c * s->kernel * s->kernel,
                     c->type, c->stream);
        c->worst_y = largest > 0 ? diff / largest : diff;
        return c->worst_y <= 4 * c->tolerance; /* sums over every row: four times the forward's bound */
    }
    ref_max_diff(&diff, &largest, cb->y, c->b->y_ref, rows * (size_t)s->out_c, c->type, c->stream);
    c->worst_y = largest > 0 ? diff / largest : diff;
    c->worst_stat = 0.0;
    if (c->stats) {
        float *sum = malloc((size_t)s->out_c * sizeof(float)), *sqsum = malloc((size_t)s->out_c * sizeof(float));
        if (!sum || !sqsum) exit(1);
        CHECK_CUDA(cudaMemcpy(sum, cb->sum, (size_t)s->out_c * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(sqsum, cb->sqsum, (size_t)s->out_c * sizeof(float), cudaMemcpyDeviceToHost));
        for (int k = 0; k < s->out_c; k++) {
            double mean = sum[k] / (double)rows, var = sqsum[k] / (double)rows - mean * mean;
            double std = sqrt(c->var[k]);
            double dm = std > 0 ? fabs(mean - c->mean[k]) / std : fabs(mean - c->mean[k]);
            double dv = c->var[k] > 0 ? fabs(var - c->var[k]) / c->var[k] : fabs(var);
            if (!(dm == dm) || !(dv == dv)) dm = INFINITY;
            c->worst_stat = fmax(c->worst_stat, fmax(dm, dv));
        }
        free(sum), free(sqsum);
    }
    return c->worst_y <= c->tolerance && c->worst_stat <= STAT_TOLERANCE;
}

/* ---- one convolution in one type ------------------------------------------------------------ */

typedef struct conv_times {
    float apply, conv, stats;             /* unfused parts (apply 0 without a prologue) */
    float fused[CB_KINDS];                /* best passing configuration of each graph, < 0 if none */
    float saving, tax;                    /* the projection's, per occurrence */
    const char *best;                     /* which graph the saving comes from */
} conv_times;

static cudnnDataType_t cudnn_type(ref_type t) { return t == REF_HALF ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16; }

/* The fused graph of kind over the parameter (and, if none runs, intermediate) types tried. */
static void search_fused(cb_result *best, cb_kind kind, const conv_shape *s, ref_type type, cudnnHandle_t cudnn,
                         cudaStream_t stream, const cb_buffers *cb, check_ctx *check, int runs, int max_configs,
                         char *why, size_t why_size) {
    const cudnnDataType_t t = cudnn_type(type);
    const cudnnDataType_t tried[3][2] = {{CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT}, {t, CUDNN_DATA_FLOAT}, {t, t}};
    int variants = cb_kind_has_prologue(kind) ? 3 : 1;
    best->ms = -1.0f;
    why[0] = '\0';
    for (int v = 0; v < variants; v++) {
        if (v == 2 && best->ms >= 0.0f) break; /* 16-bit intermediates only if neither ran */
        cb_spec spec = {kind, *s, tried[v][0], tried[v][1]};
        cb_buffers use = *cb;
        use.scale = tried[v][0] == CUDNN_DATA_FLOAT ? (void *)check->b->scale : check->b->scale_t;
        use.bias = tried[v][0] == CUDNN_DATA_FLOAT ? (void *)check->b->bias : check->b->bias_t;
        cb_result r;
        cb_search(&r, &spec, cudnn, stream, &use, check_outputs, check, runs, max_configs);
        char text[400];
        cb_describe(&r, text, sizeof text);
        size_t used = strlen(why);
        if (variants == 1)
            snprintf(why + used, why_size - used, "%s", text);
        else
            snprintf(why + used, why_size - used, "%s%s parameters%s: %s", used ? "; " : "",
                     tried[v][0] == CUDNN_DATA_FLOAT ? "float" : "16-bit", v == 2 ? ", 16-bit intermediates" : "",
                     text);
        if (r.ms >= 0.0f && (best->ms < 0.0f || r.ms < best->ms)) {
            cb_result_free(best);
            *best = r;
        } else {
            cb_result_free(&r);
        }
    }
}

static void probe_conv(conv_times *t, const conv_entry *e, ref_type type, const probe_args *args, cudnnHandle_t cudnn,
                       cudaStream_t stream, probe_buffers *b, uint64_t seed) {
    const conv_shape *s0 = &e->shape;
    conv_shape s = *s0;
    s.data_type = cudnn_type(type);
    size_t rows_in = (size_t)s.batch * s.h_in * s.w_in, rows_out = (size_t)s.batch * s.h_out * s.w_out;
    size_t in = rows_in * s.in_c, out = rows_out * s.out_c, filt = (size_t)s.out_c * s.in_c * s.kernel * s.kernel;
    int prologue = conv_role_has_prologue(e->role);
    memset(t, 0, sizeof *t);
    for (int k = 0; k < CB_KINDS; k++) t->fused[k] = -1.0f;

    /* inputs: x symmetric (a prologue's ReLU then keeps about half), w scaled to keep y near unit size */
    float bound = sqrtf(3.0f / (float)(s.in_c * s.kernel * s.kernel));
    ref_fill_uniform(b->x, in, -1.0f, 1.0f, seed, type, stream);
    ref_fill_uniform(b->w, filt, -bound, bound, seed + 1, type, stream);
    ref_fill_uniform(b->scale, (size_t)s.in_c, 0.5f, 1.5f, seed + 2, REF_F32, stream);
    ref_fill_uniform(b->bias, (size_t)s.in_c, -0.5f, 0.5f, seed + 3, REF_F32, stream);
    ref_round_floats(b->scale, (size_t)s.in_c, type, stream);
    ref_round_floats(b->bias, (size_t)s.in_c, type, stream);
    ref_from_floats(b->scale_t, b->scale, (size_t)s.in_c, type, stream);
    ref_from_floats(b->bias_t, b->bias, (size_t)s.in_c, type, stream);
    ref_fill_uniform(b->unit_var, (size_t)(s.in_c > s.out_c ? s.in_c : s.out_c), 1.0f - BN_EPS, 1.0f - BN_EPS, 0,
                     REF_F32, stream);
    ref_fill_uniform(b->bf16_in, in > out ? in : out, -1.0f, 1.0f, seed + 4, REF_BF16, stream);
    if (prologue) ref_apply_relu(b->activated, b->x, b->scale, b->bias, rows_in, s.in_c, type, stream);

    /* the reference: cuDNN's convolution of the activated input, statistics in double */
    cb_buffers cb = {.x = prologue ? b->activated : b->x, .w = b->w, .y = b->y_ref, .sum = b->sum, .sqsum = b->sqsum,
                     .workspace = b->workspace, .workspace_limit = b->workspace_limit};
    cb_spec conv_spec = {CB_CONV, s, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT};
    cb_result conv;
    cb_search(&conv, &conv_spec, cudnn, stream, &cb, NULL, NULL, args->runs, args->max_configs);
    char text[1600];
    cb_describe(&conv, text, sizeof text);
    printf("%-5s %dx%d/%d %4d>%-4d %3dx%-3d x%-2d conv %s\n", conv_role_name(e->role), s.kernel, s.kernel, s.stride,
           s.in_c, s.out_c, s.h_in, s.w_in, e->count, text);
    if (conv.ms < 0.0f) {
        cb_result_free(&conv);
        return;
    }
    t->conv = conv.ms;
    cb_execute(&conv, &conv_spec, cudnn, &cb);
    cb_result_free(&conv);
    ref_channel_sums(b->ref_sum, b->ref_sumsq, b->y_ref, rows_out, s.out_c, type, stream);
    double *mean = malloc((size_t)s.out_c * sizeof(double)), *var = malloc((size_t)s.out_c * sizeof(double));
    if (!mean || !var) exit(1);
    CHECK_CUDA(cudaMemcpyAsync(mean, b->ref_sum, (size_t)s.out_c * sizeof(double), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemcpyAsync(var, b->ref_sumsq, (size_t)s.out_c * sizeof(double), cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (int k = 0; k < s.out_c; k++) {
        mean[k] /= (double)rows_out;
        var[k] = var[k] / (double)rows_out - mean[k] * mean[k];
    }

    /* our passes (bf16 kernels): apply on the input, statistics on the output */
    if (prologue) t->apply = time_bn(b, (int)rows_in, s.in_c, 0, args->runs, stream);
    t->stats = time_bn(b, (int)rows_out, s.out_c, 1, args->runs, stream) -
               time_bn(b, (int)rows_out, s.out_c, 0, args->runs, stream);
    if (t->stats < 0.0f) t->stats = 0.0f;

    /* the fused graphs, each configuration checked against the reference */
    check_ctx check = {b, &s, type, type == REF_HALF ? 1.0 / 512 : 1.0 / 64, mean, var, 0, 0, stream, 0, 0};
    cb_kind kinds[3] = {CB_BOTH, CB_PROLOGUE, CB_STATS};
    int first = prologue ? 0 : 2;
    cb.y = b->y;
    for (int k = first; k < 3; k++) {
        check.stats = kinds[k] != CB_PROLOGUE;
        /* a graph without the prologue reads the activated input, as the unfused path does */
        cb.x = prologue && !cb_kind_has_prologue(kinds[k]) ? b->activated : b->x;
        cb_result r;
        search_fused(&r, kinds[k], &s, type, cudnn, stream, &cb, &check, args->runs, args->max_configs, text,
                     sizeof text);
        t->fused[kinds[k]] = r.ms;
        cb_result_free(&r);
        printf("      %-14s %s\n", cb_kind_name(kinds[k]), text);
    }
    if (prologue && args->wgrad) {
        ref_fill_uniform(b->dy, out, -1.0f, 1.0f, seed + 5, type, stream);
        cb_buffers wb = {.x = b->activated, .dy = b->dy, .dw = b->dw_ref, .workspace = b->workspace,
                         .workspace_limit = b->workspace_limit};
        cb_spec wspec = {CB_WGRAD, s, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT};
        cb_result plain;
        cb_search(&plain, &wspec, cudnn, stream, &wb, NULL, NULL, args->runs, args->max_configs);
        cb_describe(&plain, text, sizeof text);
        printf("      %-14s %s\n", "wgrad", text);
        if (plain.ms >= 0.0f) {
            t->fused[CB_WGRAD] = plain.ms;
            cb_execute(&plain, &wspec, cudnn, &wb);
            wb.x = b->x, wb.dw = b->dw;
            check.wgrad = 1;
            cb_result r;
            search_fused(&r, CB_WGRAD_PROLOGUE, &s, type, cudnn, stream, &wb, &check, args->runs, args->max_configs,
                         text, sizeof text);
            t->fused[CB_WGRAD_PROLOGUE] = r.ms;
            cb_result_free(&r);
            printf("      %-14s %s\n", "wgrad+prologue", text);
        }
        cb_result_free(&plain);
    }
    free(mean), free(var);

    /* the projection (lab/conv_bn_roads.md): the best saving over the graphs that passed */
    t->tax = t->apply;
    if (t->fused[CB_WGRAD_PROLOGUE] >= 0.0f) t->tax = t->fused[CB_WGRAD_PROLOGUE] - t->fused[CB_WGRAD];
    t->best = "none";
    struct { cb_kind kind; float unfused, tax; } options[3] = {
        {CB_BOTH, t->apply + t->conv + t->stats, t->tax},
        {CB_PROLOGUE, t->apply + t->conv, t->tax},
        {CB_STATS, t->conv + t->stats, 0.0f}};
    for (int k = 0; k < 3; k++) {
        float f = t->fused[options[k].kind];
        if (f < 0.0f) continue;
        float saving = options[k].unfused - f - options[k].tax;
        if (saving > t->saving) t->saving = saving, t->best = cb_kind_name(options[k].kind);
    }
    printf("      unfused: apply %.3f + conv %.3f + stats %.3f = %.3f ms; best %s, saving %.3f ms (wgrad tax %.3f) "
           "x %d\n", t->apply, t->conv, t->stats, t->apply + t->conv + t->stats, t->best, t->saving, t->tax, e->count);
}

/* ---- the libraries the fused graph maps ----------------------------------------------------- */

static int libraries_only(const conv_entry *e, int n, const probe_args *args, cudaStream_t stream, library_list *seen) {
    int first = -1;
    for (int i = 0; i < n && first < 0; i++)
        if (conv_role_has_prologue(e[i].role)) first = i;
    if (first < 0) return 1;
    cudnnHandle_t cudnn;
    CHECK_CUDNN(cudnnCreate(&cudnn));
    print_new_libraries(seen, "cudnnCreate");
    probe_buffers b;
    buffers_alloc(&b, &e[first], 1, (size_t)args->workspace_mb << 20);
    ref_type types[2] = {REF_BF16, REF_HALF};
    for (int k = 0; k < 2; k++) {
        if (!(args->types & (1 << k))) continue;
        conv_shape s = e[first].shape;
        s.data_type = cudnn_type(types[k]);
        cb_buffers cb = {.x = b.x, .w = b.w, .y = b.y, .scale = b.scale, .bias = b.bias, .sum = b.sum,
                         .sqsum = b.sqsum, .workspace = b.workspace, .workspace_limit = b.workspace_limit};
        for (int p = 0; p < 2; p++) {
            cb_spec spec = {CB_BOTH, s, p ? s.data_type : CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT};
            cb.scale = p ? b.scale_t : (void *)b.scale, cb.bias = p ? b.bias_t : (void *)b.bias;
            cb_result r;
            cb_search(&r, &spec, cudnn, stream, &cb, NULL, NULL, 1, 0);
            char text[400], phase[96];
            cb_describe(&r, text, sizeof text);
            printf("%s both, %s parameters (unchecked): %s\n", ref_type_name(types[k]), p ? "16-bit" : "float", text);
            snprintf(phase, sizeof phase, "the %s fused graph", ref_type_name(types[k]));
            print_new_libraries(seen, phase);
            cb_result_free(&r);
        }
    }
    conv_shape s = e[first].shape;
    s.data_type = CUDNN_DATA_BFLOAT16;
    cb_buffers cb = {.x = b.x, .w = b.w, .y = b.y, .workspace = b.workspace, .workspace_limit = b.workspace_limit};
    cb_spec spec = {CB_CONV, s, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT};
    cb_result r;
    cb_search(&r, &spec, cudnn, stream, &cb, NULL, NULL, 1, 0);
    print_new_libraries(seen, "a plain bf16 convolution");
    cb_result_free(&r);
    buffers_free(&b);
    CHECK_CUDNN(cudnnDestroy(cudnn));
    return 0;
}

int main(int argc, char **argv) {
    probe_args args = {0};
    cli_parse_or_exit(&PROGRAM, &args, argc, argv);
    char err[256];
    conv_entry entries[MAX_CONVS];
    int n = conv_entries(entries, args.batch, args.image_size, args.shapes == SHAPES_PROLOGUE, err, sizeof err);
    if (n < 0) {
        fprintf(stderr, "conv_bn_probe: %s\n", err);
        return 2;
    }
    if (args.list) {
        int convs = 0;
        for (int i = 0; i < n; i++) {
            const conv_shape *s = &entries[i].shape;
            printf("%-5s %dx%d/%d %4d>%-4d %3dx%-3d -> %3dx%-3d x%d\n", conv_role_name(entries[i].role), s->kernel,
                   s->kernel, s->stride, s->in_c, s->out_c, s->h_in, s->w_in, s->h_out, s->w_out, entries[i].count);
            convs += entries[i].count;
        }
        printf("%d convolutions in %d shapes\n", convs, n);
        return 0;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        fprintf(stderr, "conv_bn_probe: no CUDA device\n");
        return 1;
    }
    struct cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    printf("cuDNN %zu loaded (built against %d), %s; ResNet-50 %dx%d, batch %d\n", cudnnGetVersion(), CUDNN_VERSION,
           prop.name, args.image_size, args.image_size, args.batch);
    library_list seen = {.n = 0};
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (args.libraries_only) {
        int rc = libraries_only(entries, n, &args, stream, &seen);
        CHECK_CUDA(cudaStreamDestroy(stream));
        return rc;
    }
    cudnnHandle_t cudnn;
    CHECK_CUDNN(cudnnCreate(&cudnn));
    print_new_libraries(&seen, "cudnnCreate");
    probe_buffers b;
    buffers_alloc(&b, entries, n, (size_t)args.workspace_mb << 20);
    ref_type types[2] = {REF_BF16, REF_HALF};
    for (int k = 0; k < 2; k++) {
        if (!(args.types & (1 << k))) continue;
        printf("\n=== %s: unfused (apply, conv, stats) against cuDNN's fused graphs, medians of %d runs\n",
               ref_type_name(types[k]), args.runs);
        double unfused = 0, saving = 0;
        int fused_convs = 0, convs = 0;
        conv_times times[MAX_CONVS];
        for (int i = 0; i < n; i++) {
            probe_conv(&times[i], &entries[i], types[k], &args, cudnn, stream, &b, 0x5eed0000u + 16u * (unsigned)i);
            unfused += entries[i].count * (double)(times[i].apply + times[i].conv + times[i].stats);
            saving += entries[i].count * (double)times[i].saving;
            fused_convs += times[i].saving > 0 ? entries[i].count : 0;
            convs += entries[i].count;
        }
        print_new_libraries(&seen, ref_type_name(types[k]));
        printf("\n%-5s %-22s %3s %7s %7s %7s %8s %8s %8s %8s %8s\n", "role", "shape", "n", "apply", "conv", "stats",
               "both", "prologue", "stats", "tax", "saving");
        for (int i = 0; i < n; i++) {
            const conv_shape *s = &entries[i].shape;
            const conv_times *t = &times[i];
            char shape[32];
            snprintf(shape, sizeof shape, "%dx%d/%d %d>%d @%d", s->kernel, s->kernel, s->stride, s->in_c, s->out_c,
                     s->h_in);
            printf("%-5s %-22s %3d %7.3f %7.3f %7.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", conv_role_name(entries[i].role),
                   shape, entries[i].count, t->apply, t->conv, t->stats, t->fused[CB_BOTH], t->fused[CB_PROLOGUE],
                   t->fused[CB_STATS], t->tax, t->saving);
        }
        double projected = args.step_ms - saving, line = args.target * args.torch_ms;
        printf("%s: %d convolutions (%d fused with a saving): unfused %.3f ms a forward, saving %.3f ms; step %.2f -> "
               "%.2f ms = %.3fx of PyTorch's %.2f (target %.2fx = %.2f ms): %s\n",
               ref_type_name(types[k]), convs, fused_convs, unfused, saving, args.step_ms, projected,
               projected / args.torch_ms, args.torch_ms, args.target, line, projected <= line ? "reaches it" : "short");
    }
    buffers_free(&b);
    CHECK_CUDNN(cudnnDestroy(cudnn));
    CHECK_CUDA(cudaStreamDestroy(stream));
    return 0;
}
