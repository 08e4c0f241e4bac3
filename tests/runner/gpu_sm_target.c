/* A partition's SMs told to the libraries (issue 50; base/sm_target.h, models/core/context.h). In a
 * green-context partition of 32 SMs (16 where the device splits no 32), a job's context tells
 * cuBLASLt and cuDNN its count (job_context.sm_target) and SUITE_SM_TARGET=0 tells nothing; then
 * a GEMM and a convolution chosen for the partition run against the whole GPU's choice, in the
 * same partition:
 *   - the GEMM: cuBLASLt's heuristic for a descriptor told the partition's SMs
 *     (context_tell_matmul) against one told nothing, which is what the whole GPU's set-up picks;
 *   - the convolution: cuDNN's engines searched in a whole-device context without a target (the
 *     whole GPU's choice, rebuilt by name in the partition) against those searched in the
 *     partition with its count (conv_engine_find's sm_target), each direction.
 * Their outputs are checked against each other (the same arithmetic, other tilings and splits);
 * the chosen algorithms and their times are printed, never asserted: which is faster is what
 * lab/device_run.sh's stage sm-target measures in whole trainings. */
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
#include "models/core/gpu_timer.h"
#include "models/layers/conv_engine.h"
#include "tests/support/testutil.h"

#define WORKSPACE ((size_t)64 << 20)

static context_place place;       /* the partition */
static context_partitions parts;
static uint64_t rng = 50;

/* 32 SMs where the device's groups make 32, else 16, else one group. */
static int partition_sms(void) {
    char e[512];
    int device_sms, unit, groups;
    if (context_sm_granularity(0, &device_sms, &unit, &groups, e, sizeof e) != 0) {
        fprintf(stderr, "%s\n", e);
        exit(1);
    }
    for (int want = 32; want >= 16; want /= 2)
        if (want % unit == 0 && want / unit <= groups) return want;
    return unit;
}

static void test_context_tells_its_partition(void **state) {
    (void)state;
    job_context ctx;
    assert_int_equal(context_init_at(&ctx, &place, WORKSPACE, 0), CONTEXT_OK);
    assert_int_equal(ctx.sm_target.sms, place.sm_count);
    assert_int_equal(ctx.sm_target.from, SM_TARGET_GREEN);
    context_free(&ctx);
    setenv("SUITE_SM_TARGET", "0", 1);
    assert_int_equal(context_init_at(&ctx, &place, WORKSPACE, 0), CONTEXT_OK);
    setenv("SUITE_SM_TARGET", "1", 1);
    assert_int_equal(ctx.sm_target.sms, 0);
    assert_int_equal(ctx.sm_target.from, SM_TARGET_OFF);
    context_free(&ctx);
}

/* --- the GEMM ------------------------------------------------------------------------------- */

typedef struct gemm_case {
    job_context *ctx;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    const float *da, *db;
    float *dc;
} gemm_case;

static void gemm_prepare(gemm_case *g, job_context *ctx, int told, int m, int n, int k) {
    g->ctx = ctx;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    if (told) context_tell_matmul(ctx, g->desc);
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&g->a, CUDA_R_32F, m, k, m));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&g->b, CUDA_R_32F, k, n, k));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&g->c, CUDA_R_32F, m, n, m));
    cublasLtMatmulPreference_t pref;
    size_t workspace = ctx->workspace_bytes;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                      sizeof workspace));
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(ctx->cublaslt, g->desc, g->a, g->b, g->c, g->c, pref, 1, &result,
                                                &found));
    CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
    assert_int_equal(found, 1);
    g->algo = result.algo;
    int32_t id = 0, tile = 0, split = 0;
    size_t got;
    CHECK_CUBLAS(cublasLtMatmulAlgoConfigGetAttribute(&g->algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &got));
    CHECK_CUBLAS(cublasLtMatmulAlgoConfigGetAttribute(&g->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &got));
    CHECK_CUBLAS(cublasLtMatmulAlgoConfigGetAttribute(&g->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &split, sizeof split,
                                                      &got));
    printf("  gemm %dx%dx%d %s: algo %d tile %d split-k %d\n", m, n, k,
           told ? "told the partition's SMs" : "told nothing (the whole GPU's)", id, tile, split);
}

static void gemm_run(void *arg) {
    const gemm_case *g = arg;
    const float one = 1.0f, zero = 0.0f;
    CHECK_CUBLAS(cublasLtMatmul(g->ctx->cublaslt, g->desc, &one, g->da, g->a, g->db, g->b, &zero, g->dc, g->c, g->dc,
                                g->c, &g->algo, g->ctx->workspace, g->ctx->workspace_bytes, g->ctx->stream));
}

static void gemm_destroy(gemm_case *g) {
    CHECK_CUBLAS(cublasLtMatmulDescDestroy(g->desc));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(g->a));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(g->b));
    CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(g->c));
}

/* Largest difference between two device arrays, relative to the largest magnitude of the first. */
static double relative_difference(const float *d1, const float *d2, size_t n) {
    float *h1 = malloc(n * sizeof *h1), *h2 = malloc(n * sizeof *h2);
    assert_non_null(h1);
    assert_non_null(h2);
    CHECK_CUDA(cudaMemcpy(h1, d1, n * sizeof *h1, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(h2, d2, n * sizeof *h2, cudaMemcpyDeviceToHost));
    double diff = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(h1[i]) > scale) scale = fabs(h1[i]);
        if (fabs(h1[i] - h2[i]) > diff) diff = fabs(h1[i] - h2[i]);
    }
    free(h1), free(h2);
    return scale > 0 ? diff / scale : diff;
}

static void test_gemm_in_the_partition(void **state) {
    (void)state;
    job_context ctx;
    assert_int_equal(context_init_at(&ctx, &place, WORKSPACE, 0), CONTEXT_OK);
    context_reserve_workspace(&ctx, ctx.workspace_limit);
    const int shapes[][3] = {{4096, 4096, 4096}, {1024, 256, 8192}, {768, 128, 3072}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        float *ha = malloc((size_t)m * k * sizeof *ha), *hb = malloc((size_t)k * n * sizeof *hb);
        test_fill_uniform(ha, (size_t)m * k, &rng, -1, 1);
        test_fill_uniform(hb, (size_t)k * n, &rng, -1, 1);
        float *da = test_to_device(ha, (size_t)m * k), *db = test_to_device(hb, (size_t)k * n);
        free(ha), free(hb);
        float *dc[2];
        gemm_case g[2];
        float ms[2];
        for (int told = 0; told < 2; told++) {
            CHECK_CUDA(cudaMalloc((void **)&dc[told], (size_t)m * n * sizeof(float)));
            gemm_prepare(&g[told], &ctx, told, m, n, k);
            g[told].da = da, g[told].db = db, g[told].dc = dc[told];
            gemm_run(&g[told]);
            ms[told] = gpu_timer_median_ms(ctx.stream, gemm_run, &g[told], 9);
        }
        CHECK_CUDA(cudaStreamSynchronize(ctx.stream));
        double diff = relative_difference(dc[0], dc[1], (size_t)m * n);
        printf("  gemm %dx%dx%d in %d SMs: whole GPU's choice %.4f ms, the partition's %.4f ms (%.2fx); outputs "
               "differ by %.2e of their largest\n", m, n, k, place.sm_count, ms[0], ms[1], ms[0] / ms[1], diff);
        expect_le(diff, 1e-4); /* float32 throughout: only the order of the k-sums differs */
        for (int told = 0; told < 2; told++) {
            gemm_destroy(&g[told]);
            CHECK_CUDA(cudaFree(dc[told]));
        }
        CHECK_CUDA(cudaFree(da));
        CHECK_CUDA(cudaFree(db));
    }
    context_free(&ctx);
}

/* --- the convolution ------------------------------------------------------------------------ */

static const conv_shape SHAPES[] = {
    /* ResNet-50 at 224, batch 64: a bottleneck's 3x3 and a 1x1 expansion; bfloat16 as the runs train */
    {.batch = 64, .in_c = 128, .out_c = 128, .h_in = 28, .w_in = 28, .kernel = 3, .stride = 1, .pad = 1,
     .h_out = 28, .w_out = 28, .format = CUDNN_TENSOR_NHWC, .data_type = CUDNN_DATA_BFLOAT16},
    {.batch = 64, .in_c = 256, .out_c = 1024, .h_in = 14, .w_in = 14, .kernel = 1, .stride = 1, .pad = 0,
     .h_out = 14, .w_out = 14, .format = CUDNN_TENSOR_NHWC, .data_type = CUDNN_DATA_BFLOAT16},
};
#define SHAPE_COUNT (sizeof SHAPES / sizeof *SHAPES)

typedef struct conv_buffers {
    void *x, *w, *y;
    size_t nx, nw, ny;
} conv_buffers;

/* bfloat16 buffers of the shape, filled from the same seed in every context. */
static conv_buffers conv_make(const conv_shape *s, uint64_t seed) {
    conv_buffers b = {.nx = (size_t)s->batch * s->h_in * s->w_in * s->in_c,
                      .nw = (size_t)s->out_c * s->kernel * s->kernel * s->in_c,
                      .ny = (size_t)s->batch * s->h_out * s->w_out * s->out_c};
    size_t n[3] = {b.nx, b.nw, b.ny};
    void **d[3] = {&b.x, &b.w, &b.y};
    for (int i = 0; i < 3; i++) {
        float *h = malloc(n[i] * sizeof *h);
        uint16_t *bits = malloc(n[i] * sizeof *bits);
        assert_non_null(h);
        assert_non_null(bits);
        uint64_t r = seed + (uint64_t)i;
        test_fill_uniform(h, n[i], &r, -1, 1);
        for (size_t j = 0; j < n[i]; j++) {
            uint32_t u;
            memcpy(&u, &h[j], sizeof u);
            bits[j] = (uint16_t)(u >> 16);
        }
        CHECK_CUDA(cudaMalloc(d[i], n[i] * sizeof *bits));
        CHECK_CUDA(cudaMemcpy(*d[i], bits, n[i] * sizeof *bits, cudaMemcpyHostToDevice));
        free(h), free(bits);
    }
    return b;
}

static void conv_free(conv_buffers *b) {
    CHECK_CUDA(cudaFree(b->x));
    CHECK_CUDA(cudaFree(b->w));
    CHECK_CUDA(cudaFree(b->y));
}

/* The written tensor of a direction, as float, for comparing. */
static float *written_as_float(const conv_buffers *b, conv_direction dir, size_t *n) {
    const void *d = dir == CONV_FORWARD ? b->y : dir == CONV_BACKWARD_DATA ? b->x : b->w;
    *n = dir == CONV_FORWARD ? b->ny : dir == CONV_BACKWARD_DATA ? b->nx : b->nw;
    uint16_t *bits = malloc(*n * sizeof *bits);
    float *out = malloc(*n * sizeof *out);
    assert_non_null(bits);
    assert_non_null(out);
    CHECK_CUDA(cudaMemcpy(bits, d, *n * sizeof *bits, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < *n; i++) {
        uint32_t u = (uint32_t)bits[i] << 16;
        memcpy(&out[i], &u, sizeof u);
    }
    free(bits);
    return out;
}

typedef struct plan_case {
    const conv_engine_plan *plan;
    job_context *ctx;
    conv_buffers *b;
} plan_case;

static void plan_run(void *arg) {
    const plan_case *p = arg;
    const conv_buffers *b = p->b;
    switch (p->plan->direction) {
    case CONV_FORWARD: conv_engine_forward(p->plan, p->ctx->cudnn, b->y, b->x, b->w, p->ctx->workspace); break;
    case CONV_BACKWARD_DATA:
        conv_engine_backward_data(p->plan, p->ctx->cudnn, b->x, b->y, b->w, p->ctx->workspace);
        break;
    case CONV_BACKWARD_FILTER:
        conv_engine_backward_filter(p->plan, p->ctx->cudnn, b->w, b->y, b->x, p->ctx->workspace);
        break;
    }
}

/* The whole GPU's choice of each shape and direction: searched in a context on the whole device,
 * told nothing, as a job alone would (names kept; the plans belong to that context). */
static char whole_names[SHAPE_COUNT][3][96];
static float whole_ms[SHAPE_COUNT][3];

static int search_on_the_whole_gpu(void) {
    job_context whole;
    if (context_init(&whole, 0, WORKSPACE, 0) != CONTEXT_OK) return -1;
    context_reserve_workspace(&whole, whole.workspace_limit);
    if (whole.sm_target.sms != 0) {
        fprintf(stderr, "a context on the whole device told %d SMs, expected none\n", whole.sm_target.sms);
        return -1;
    }
    for (size_t s = 0; s < SHAPE_COUNT; s++) {
        conv_buffers b = conv_make(&SHAPES[s], 1000 + s);
        for (int d = 0; d < 3; d++) {
            conv_engine_plan plan;
            char err[512];
            void *x = b.x, *w = b.w, *y = b.y;
            if (conv_engine_find(&plan, (conv_direction)d, &SHAPES[s], 0, 0, 0.0f, whole.cudnn, whole.stream, x, w, y,
                                 whole.workspace, whole.workspace_limit, err, sizeof err) != 0) {
                fprintf(stderr, "the whole GPU's search: %s\n", err);
                return -1;
            }
            snprintf(whole_names[s][d], sizeof whole_names[s][d], "%s", plan.name);
            whole_ms[s][d] = plan.ms;
            conv_engine_destroy(&plan);
        }
        conv_free(&b);
    }
    context_free(&whole);
    return 0;
}

static void test_convolution_in_the_partition(void **state) {
    (void)state;
    job_context ctx;
    assert_int_equal(context_init_at(&ctx, &place, WORKSPACE, 0), CONTEXT_OK);
    context_reserve_workspace(&ctx, ctx.workspace_limit);
    int sms = ctx.sm_target.sms;
    assert_int_equal(sms, place.sm_count);
    for (size_t s = 0; s < SHAPE_COUNT; s++) {
        const conv_shape *sh = &SHAPES[s];
        for (int d = 0; d < 3; d++) {
            conv_direction dir = (conv_direction)d;
            conv_buffers b[2] = {conv_make(sh, 1000 + s), conv_make(sh, 1000 + s)};
            conv_engine_plan plan[2];
            char err[512];
            /* [0]: the whole GPU's choice rebuilt here; [1]: searched here, told the partition's SMs */
            if (conv_engine_rebuild(&plan[0], dir, sh, 0.0f, whole_names[s][d], whole_ms[s][d], ctx.cudnn, b[0].x,
                                    b[0].w, b[0].y, err, sizeof err) != 0)
                fail_msg("rebuilding the whole GPU's %s in the partition: %s", whole_names[s][d], err);
            if (conv_engine_find(&plan[1], dir, sh, 0, sms, 0.0f, ctx.cudnn, ctx.stream, b[1].x, b[1].w, b[1].y,
                                 ctx.workspace, ctx.workspace_limit, err, sizeof err) != 0)
                fail_msg("the partition's search: %s", err);
            /* each plan's runs write only its direction's output: both read the same inputs */
            float ms[2];
            for (int k = 0; k < 2; k++) {
                plan_case p = {&plan[k], &ctx, &b[k]};
                plan_run(&p);
                CHECK_CUDA(cudaStreamSynchronize(ctx.stream));
                ms[k] = gpu_timer_median_ms(ctx.stream, plan_run, &p, 9);
                plan_run(&p); /* what is compared: one run on the inputs as they are */
            }
            CHECK_CUDA(cudaStreamSynchronize(ctx.stream));
            size_t n;
            float *out0 = written_as_float(&b[0], dir, &n), *out1 = written_as_float(&b[1], dir, &n);
            double diff = 0, scale = 0;
            for (size_t i = 0; i < n; i++) {
                if (fabs(out0[i]) > scale) scale = fabs(out0[i]);
                if (fabs(out0[i] - out1[i]) > diff) diff = fabs(out0[i] - out1[i]);
            }
            free(out0), free(out1);
            printf("  conv %dx%d c%d->%d k%d %s in %d SMs: whole GPU's %s %.4f ms, the partition's %s %.4f ms "
                   "(%.2fx); outputs differ by %.2e of their largest\n", sh->h_in, sh->w_in, sh->in_c, sh->out_c,
                   sh->kernel, conv_direction_name(dir), sms, plan[0].name, ms[0], plan[1].name, ms[1],
                   ms[0] / ms[1], scale > 0 ? diff / scale : diff);
            /* bfloat16 outputs of float sums: one rounding of the output (2^-8) and the sums' order */
            expect_le(scale > 0 ? diff / scale : diff, 2e-2);
            for (int k = 0; k < 2; k++) {
                conv_engine_destroy(&plan[k]);
                conv_free(&b[k]);
            }
        }
    }
    context_free(&ctx);
}

int main(void) {
    test_require_gpu();
    setenv("SUITE_SM_TARGET", "1", 1); /* telling is what this tests; it is off by default */
    if (search_on_the_whole_gpu() != 0) return 1;
    int sms = partition_sms();
    char err[512];
    if (context_partitions_create(&parts, 0, &sms, 1, err, sizeof err) != 0) {
        fprintf(stderr, "no green-context partition of %d SMs: %s\n", sms, err);
        return 1;
    }
    place = context_partition_place(&parts, 0);
    printf("a green-context partition of %d SMs\n", place.sm_count);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_context_tells_its_partition),
                                       cmocka_unit_test(test_gemm_in_the_partition),
                                       cmocka_unit_test(test_convolution_in_the_partition)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    context_partitions_free(&parts);
    return rc;
}
