/* The graph-API convolution path (models/layers/conv_engine.c): for 3x3 stride 1 and 2, 1x1 stride 1
 * and 2 and the 7x7 stride-2 stem on 3 channels, in NHWC and NCHW, each direction's chosen plan
 * (strict float32) against a double-precision CPU reference: forward and backward-filter
 * outputs over NaN-poisoned buffers (beta 0 must not read them), backward-data both overwriting
 * (beta 0) and accumulating onto existing values (beta 1). The same runs are then captured into
 * a CUDA graph and replayed, as the trainer does. Also: TF32 allowed (looser bound), and bad
 * input refused with a message. Prints the chosen engine and its time per direction. (Whether the
 * search's timer leaves the host's launch cost out is measured by bench/bench_gpu_timer.) */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/check.h"
#include "models/core/context.h"
#include "models/layers/conv.h"
#include "models/layers/conv_engine.h"
#include "kernels/kernels.h"
#include "tests/support/testutil.h"

static job_context ctx;
static uint64_t rng = 4242;

typedef struct engine_case { int n, c, k, size, kernel, stride, pad; } engine_case;

static const engine_case CASES[] = {
    {2, 8, 16, 9, 3, 1, 1},   /* 3x3 stride 1 */
    {2, 16, 8, 10, 3, 2, 1},  /* 3x3 stride 2, even input: the last row and column are unused */
    {3, 16, 32, 6, 1, 1, 0},  /* 1x1 */
    {2, 32, 16, 7, 1, 2, 0},  /* 1x1 stride 2 (a downsample) */
    {2, 3, 8, 16, 7, 2, 3},   /* 7x7 stride 2 on 3 input channels (the stem) */
};

static void *zalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) fail_msg("out of host memory for %zu x %zu bytes", n, size);
    return p;
}

/* ---- CPU reference ----------------------------------------------------------------------- */

static size_t activation_index(cudnnTensorFormat_t format, int channels, int height, int width, int n, int c,
                               int h, int w) {
    if (format == CUDNN_TENSOR_NHWC) return (((size_t)n * height + h) * width + w) * channels + c;
    return (((size_t)n * channels + c) * height + h) * width + w;
}
static size_t x_index(const conv_shape *s, int n, int c, int h, int w) {
    return activation_index(s->format, s->in_c, s->h_in, s->w_in, n, c, h, w);
}
static size_t y_index(const conv_shape *s, int n, int k, int h, int w) {
    return activation_index(s->format, s->out_c, s->h_out, s->w_out, n, k, h, w);
}
/* KRSC with NHWC tensors, KCRS with NCHW. */
static size_t w_index(const conv_shape *s, int k, int c, int r, int q) {
    if (s->format == CUDNN_TENSOR_NHWC) return (((size_t)k * s->kernel + r) * s->kernel + q) * s->in_c + c;
    return (((size_t)k * s->in_c + c) * s->kernel + r) * s->kernel + q;
}

/* y = conv(x, w); for the gradient dy: dx and dw. All in double, accumulated from zero. */
static void conv_reference(const conv_shape *s, const float *x, const float *w, const float *dy, double *y,
                           double *dx, double *dw) {
    for (int n = 0; n < s->batch; n++)
        for (int k = 0; k < s->out_c; k++)
            for (int oh = 0; oh < s->h_out; oh++)
                for (int ow = 0; ow < s->w_out; ow++) {
                    double acc = 0, g = dy[y_index(s, n, k, oh, ow)];
                    for (int r = 0; r < s->kernel; r++)
                        for (int q = 0; q < s->kernel; q++) {
                            int h = oh * s->stride - s->pad + r, ww = ow * s->stride - s->pad + q;
                            if (h < 0 || h >= s->h_in || ww < 0 || ww >= s->w_in) continue;
                            for (int c = 0; c < s->in_c; c++) {
                                size_t xi = x_index(s, n, c, h, ww), wi = w_index(s, k, c, r, q);
                                acc += (double)x[xi] * w[wi];
                                dx[xi] += g * w[wi];
                                dw[wi] += g * x[xi];
                            }
                        }
                    y[y_index(s, n, k, oh, ow)] = acc;
                }
}

/* ---- device side ------------------------------------------------------------------------- */

typedef struct case_buffers {
    size_t nx, nw, ny;
    float *x, *w, *dy, *dx0;                  /* host inputs */
    float *d_x, *d_w, *d_dy, *d_y, *d_dw;     /* device: inputs and overwritten outputs */
    float *d_dx_new, *d_dx_acc;               /* backward-data with beta 0, and with beta 1 onto dx0 */
} case_buffers;

typedef struct case_plans { conv_engine_plan fwd, bwd_data_new, bwd_data_acc, bwd_filter; } case_plans;

static void find_or_fail(conv_engine_plan *p, conv_direction dir, const conv_shape *s, int allow_tf32, float beta,
                         float *x, float *w, float *y) {
    char err[512];
    int rc = conv_engine_find(p, dir, s, allow_tf32, 0, beta, ctx.cudnn, ctx.stream, x, w, y, ctx.workspace,
                              ctx.workspace_limit, err, sizeof err);
    if (rc != 0) fail_msg("conv_engine_find %s (beta %g) failed: %s", conv_direction_name(dir), beta, err);
    assert_non_null(p->plan);
    expect_le(p->workspace_bytes, ctx.workspace_limit);
    expect_ge(p->candidates_timed, 1);
    if (!allow_tf32 && (p->numerical_notes & (1u << CUDNN_NUMERICAL_NOTE_TENSOR_CORE)))
        fail_msg("%s chose the tensor-core engine %s with TF32 disallowed", conv_direction_name(dir), p->name);
    printf("    %-15s beta %g: %-40s %8.4f ms  workspace %8zu B  (%d timed)\n", conv_direction_name(dir), beta,
           p->name, p->ms, p->workspace_bytes, p->candidates_timed);
}

/* Outputs poisoned with NaN (beta 0 must not read them), dx_acc reset to dx0. */
static void reset_outputs(case_buffers *b) {
    test_poison(b->d_y, b->ny);
    test_poison(b->d_dw, b->nw);
    test_poison(b->d_dx_new, b->nx);
    CHECK_CUDA(cudaMemcpy(b->d_dx_acc, b->dx0, b->nx * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaDeviceSynchronize()); /* the context's stream does not wait for the legacy stream */
}

static void run_plans(const case_plans *p, case_buffers *b) {
    conv_engine_forward(&p->fwd, ctx.cudnn, b->d_y, b->d_x, b->d_w, ctx.workspace);
    conv_engine_backward_data(&p->bwd_data_new, ctx.cudnn, b->d_dx_new, b->d_dy, b->d_w, ctx.workspace);
    conv_engine_backward_data(&p->bwd_data_acc, ctx.cudnn, b->d_dx_acc, b->d_dy, b->d_w, ctx.workspace);
    conv_engine_backward_filter(&p->bwd_filter, ctx.cudnn, b->d_dw, b->d_dy, b->d_x, ctx.workspace);
}

static void check_outputs(const case_buffers *b, const double *y_ref, const double *dx_ref, const double *dw_ref,
                          double bound, const char *how) {
    float *y = zalloc(b->ny, sizeof(float)), *dx = zalloc(b->nx, sizeof(float)), *dw = zalloc(b->nw, sizeof(float));
    double *dx_acc_ref = zalloc(b->nx, sizeof(double));
    for (size_t i = 0; i < b->nx; i++) dx_acc_ref[i] = dx_ref[i] + b->dx0[i];
    CHECK_CUDA(cudaStreamSynchronize(ctx.stream));
    test_to_host(y, b->d_y, b->ny);
    double ey = test_rel_err(y, y_ref, b->ny);
    test_to_host(dw, b->d_dw, b->nw);
    double edw = test_rel_err(dw, dw_ref, b->nw);
    test_to_host(dx, b->d_dx_new, b->nx);
    double edx = test_rel_err(dx, dx_ref, b->nx);
    test_to_host(dx, b->d_dx_acc, b->nx);
    double edx_acc = test_rel_err(dx, dx_acc_ref, b->nx);
    printf("    %s: rel err y %.2e  dx %.2e  dx+=%.2e  dw %.2e\n", how, ey, edx, edx_acc, edw);
    if (!(ey < bound && edx < bound && edx_acc < bound && edw < bound))
        fail_msg("%s: a relative error is not below %.0e", how, bound);
    free(y), free(dx), free(dw), free(dx_acc_ref);
}

static void check_case(engine_case cc, cudnnTensorFormat_t format, int allow_tf32, double bound) {
    conv_shape s = conv_shape_nhwc(cc.n, cc.c, cc.k, cc.kernel, cc.stride, cc.pad, cc.size, cc.size);
    s.format = format;
    printf("  %s n%d c%d k%d %dx%d kernel %d stride %d pad %d%s\n", format == CUDNN_TENSOR_NHWC ? "NHWC" : "NCHW",
           cc.n, cc.c, cc.k, cc.size, cc.size, cc.kernel, cc.stride, cc.pad, allow_tf32 ? " (TF32 allowed)" : "");
    case_buffers b = {0};
    b.nx = (size_t)s.batch * s.in_c * s.h_in * s.w_in;
    b.ny = (size_t)s.batch * s.out_c * s.h_out * s.w_out;
    b.nw = (size_t)s.out_c * s.in_c * s.kernel * s.kernel;
    b.x = zalloc(b.nx, sizeof(float)), b.w = zalloc(b.nw, sizeof(float));
    b.dy = zalloc(b.ny, sizeof(float)), b.dx0 = zalloc(b.nx, sizeof(float));
    test_fill_uniform(b.x, b.nx, &rng, -1, 1);
    test_fill_uniform(b.w, b.nw, &rng, -0.5f, 0.5f);
    test_fill_uniform(b.dy, b.ny, &rng, -1, 1);
    test_fill_uniform(b.dx0, b.nx, &rng, -1, 1);
    b.d_x = test_to_device(b.x, b.nx), b.d_w = test_to_device(b.w, b.nw), b.d_dy = test_to_device(b.dy, b.ny);
    b.d_y = test_to_device(b.dy, b.ny), b.d_dw = test_to_device(b.w, b.nw);
    b.d_dx_new = test_to_device(b.dx0, b.nx), b.d_dx_acc = test_to_device(b.dx0, b.nx);
    CHECK_CUDA(cudaDeviceSynchronize());

    /* Each search writes only its direction's output buffer (x, w, y of the forward convolution). */
    case_plans p;
    find_or_fail(&p.fwd, CONV_FORWARD, &s, allow_tf32, 0.0f, b.d_x, b.d_w, b.d_y);
    find_or_fail(&p.bwd_data_new, CONV_BACKWARD_DATA, &s, allow_tf32, 0.0f, b.d_dx_new, b.d_w, b.d_dy);
    find_or_fail(&p.bwd_data_acc, CONV_BACKWARD_DATA, &s, allow_tf32, 1.0f, b.d_dx_acc, b.d_w, b.d_dy);
    find_or_fail(&p.bwd_filter, CONV_BACKWARD_FILTER, &s, allow_tf32, 0.0f, b.d_x, b.d_dw, b.d_dy);

    double *y_ref = zalloc(b.ny, sizeof(double)), *dx_ref = zalloc(b.nx, sizeof(double));
    double *dw_ref = zalloc(b.nw, sizeof(double));
    conv_reference(&s, b.x, b.w, b.dy, y_ref, dx_ref, dw_ref);

    reset_outputs(&b);
    run_plans(&p, &b);
    check_outputs(&b, y_ref, dx_ref, dw_ref, bound, "eager");

    /* The trainer captures the step: the same four runs, recorded once and replayed. */
    reset_outputs(&b);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal));
    run_plans(&p, &b);
    CHECK_CUDA(cudaStreamEndCapture(ctx.stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    CHECK_CUDA(cudaGraphLaunch(exec, ctx.stream));
    check_outputs(&b, y_ref, dx_ref, dw_ref, bound, "graph");
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));

    conv_engine_destroy(&p.fwd), conv_engine_destroy(&p.bwd_data_new);
    conv_engine_destroy(&p.bwd_data_acc), conv_engine_destroy(&p.bwd_filter);
    assert_null(p.fwd.plan);
    float *device[] = {b.d_x, b.d_w, b.d_dy, b.d_y, b.d_dw, b.d_dx_new, b.d_dx_acc};
    for (size_t i = 0; i < sizeof device / sizeof *device; i++) CHECK_CUDA(cudaFree(device[i]));
    free(b.x), free(b.w), free(b.dy), free(b.dx0), free(y_ref), free(dx_ref), free(dw_ref);
}

static void test_engine_nhwc(void **state) {
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) check_case(CASES[i], CUDNN_TENSOR_NHWC, 0, 1e-5);
}

static void test_engine_nchw(void **state) {
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) check_case(CASES[i], CUDNN_TENSOR_NCHW, 0, 1e-5);
}

/* TF32 rounds the inputs to 10 mantissa bits: about 1e-3 relative error on these sums. */
static void test_engine_tf32(void **state) {
    check_case(CASES[0], CUDNN_TENSOR_NHWC, 1, 1e-2);
    check_case(CASES[4], CUDNN_TENSOR_NHWC, 1, 1e-2);
}

static void expect_refusal(const conv_shape *s, void *x, void *w, void *y, void *workspace, size_t limit,
                           const char *mentions) {
    char err[512];
    conv_engine_plan p;
    int rc = conv_engine_find(&p, CONV_FORWARD, s, 0, 0, 0.0f, ctx.cudnn, ctx.stream, x, w, y, workspace, limit,
                              err, sizeof err);
    printf("  refused: %s\n", err);
    assert_int_equal(rc, -1);
    assert_null(p.plan);
    if (!strstr(err, mentions)) fail_msg("the message \"%s\" does not mention \"%s\"", err, mentions);
    conv_engine_destroy(&p); /* harmless on an empty plan */
}

static void test_engine_bad_input(void **state) {
    conv_shape good = conv_shape_nhwc(2, 8, 16, 3, 1, 1, 9, 9);
    float *buffer = NULL;
    CHECK_CUDA(cudaMalloc((void **)&buffer, 1 << 20));
    conv_shape bad = good;
    bad.format = CUDNN_TENSOR_NCHW_VECT_C;
    expect_refusal(&bad, buffer, buffer, buffer, ctx.workspace, ctx.workspace_limit, "format");
    bad = good;
    bad.h_out = 8;
    expect_refusal(&bad, buffer, buffer, buffer, ctx.workspace, ctx.workspace_limit, "output 8x9, expected 9x9");
    bad = good;
    bad.stride = 0;
    expect_refusal(&bad, buffer, buffer, buffer, ctx.workspace, ctx.workspace_limit, "stride 0");
    expect_refusal(&good, buffer, NULL, buffer, ctx.workspace, ctx.workspace_limit, "w (filter)");
    expect_refusal(&good, (char *)buffer + 2, buffer, buffer, ctx.workspace, ctx.workspace_limit, "aligned");
    expect_refusal(&good, buffer, buffer, buffer, NULL, ctx.workspace_limit, "workspace");
    CHECK_CUDA(cudaFree(buffer));
}

int main(void) {
    test_require_gpu();
    if (context_init(&ctx, 0, (size_t)64 << 20, 0) != CONTEXT_OK) return 1;
    context_reserve_workspace(&ctx, ctx.workspace_limit);
    printf("cuDNN %zu\n", cudnnGetVersion());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_engine_nhwc),
        cmocka_unit_test(test_engine_nchw),
        cmocka_unit_test(test_engine_tf32),
        cmocka_unit_test(test_engine_bad_input),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    context_free(&ctx);
    return rc;
}
