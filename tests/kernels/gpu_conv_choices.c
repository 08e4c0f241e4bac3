/* Convolution choices kept across processes (models/layers/conv_choices.h, SUITE_CONV_CHOICES): a
 * layer set up with the file empty searches and writes one line; a second layer of the same shape,
 * with no in-process cache, finds the line, searches nothing and gets the same algorithms (legacy
 * picks, engines and their knobs, workspace), whose outputs equal the first layer's bit for bit
 * (forward) and to rounding (backward, where split reductions may add in another order). With
 * SUITE_CONV_PATH=engine every direction goes through the engine plans that are rebuilt from their
 * names. A kept line that names an engine cuDNN cannot build is reported and searched again. The
 * depthwise layers keep theirs in the same file: a second layer finds the first one's paths and
 * algorithms and computes the same forward output. */
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
#include "models/layers/depthwise.h"
#include "tests/support/testutil.h"

static job_context ctx;
static uint64_t rng = 77;
static char dir[512], file[600];

typedef struct buffers {
    float *x, *y, *dx, *dy;
    size_t nx, ny, nw;
} buffers;

static buffers make_buffers(const conv_shape *s) {
    buffers b;
    b.nx = (size_t)s->batch * s->h_in * s->w_in * s->in_c;
    b.ny = (size_t)s->batch * s->h_out * s->w_out * s->out_c;
    b.nw = (size_t)s->out_c * s->kernel * s->kernel * s->in_c;
    float *hx = calloc(b.nx, sizeof(float)), *hy = calloc(b.ny, sizeof(float));
    test_fill_uniform(hx, b.nx, &rng, -1, 1);
    test_fill_uniform(hy, b.ny, &rng, -1, 1);
    b.x = test_to_device(hx, b.nx), b.dx = test_to_device(hx, b.nx);
    b.dy = test_to_device(hy, b.ny), b.y = test_to_device(hy, b.ny);
    free(hx), free(hy);
    return b;
}

static void free_buffers(buffers *b) {
    CHECK_CUDA(cudaFree(b->x));
    CHECK_CUDA(cudaFree(b->y));
    CHECK_CUDA(cudaFree(b->dx));
    CHECK_CUDA(cudaFree(b->dy));
}

static int lines_in(const char *path) {
    char err[256];
    char *text = test_read_text(path, err, sizeof err);
    if (!text) return 0;
    int n = 0;
    for (char *p = text; *p; p++) n += *p == '\n';
    free(text);
    return n;
}

/* Sets up two layers of shape s (weights from one host copy) in one arena, runs both, and compares. */
static void check_kept(conv_shape s, int accumulate_dx) {
    arena plan;
    arena_plan(&plan);
    conv_layer a, b;
    conv_init(&a, &plan, s);
    conv_init(&b, &plan, s);
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    conv_init(&a, &ctx.arena, s);
    conv_init(&b, &ctx.arena, s);
    buffers buf = make_buffers(&s);
    float *w = calloc(buf.nw, sizeof(float));
    test_fill_uniform(w, buf.nw, &rng, -0.5f, 0.5f);
    CHECK_CUDA(cudaMemcpy(a.weight, w, buf.nw * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b.weight, w, buf.nw * sizeof(float), cudaMemcpyHostToDevice));

    int before = lines_in(file);
    conv_setup(&a, buf.y, buf.x, buf.dx, accumulate_dx, NULL, &ctx);
    assert_int_equal(lines_in(file), before + 1); /* searched, and kept */
    conv_setup(&b, buf.y, buf.x, buf.dx, accumulate_dx, NULL, &ctx);
    assert_int_equal(lines_in(file), before + 1); /* found: nothing searched, nothing added */

    const conv_algos *p = &a.algos, *q = &b.algos;
    assert_int_equal(p->fwd, q->fwd);
    assert_int_equal(p->bwd_data, q->bwd_data);
    assert_int_equal(p->bwd_filter, q->bwd_filter);
    assert_int_equal(p->fwd_math, q->fwd_math);
    assert_int_equal(p->bwd_filter_math, q->bwd_filter_math);
    assert_int_equal(p->workspace_bytes, q->workspace_bytes);
    for (int d = 0; d < 3; d++) {
        assert_int_equal(p->use_engine[d], q->use_engine[d]);
        if (p->use_engine[d]) {
            assert_string_equal(p->engine[d].name, q->engine[d].name);
            expect_le(q->engine[d].workspace_bytes, q->workspace_bytes);
        }
        printf("  %s: %s\n", d == 0 ? "forward" : d == 1 ? "backward-data" : "backward-filter",
               p->use_engine[d] ? p->engine[d].name : "legacy");
    }

    /* the same algorithms on the same inputs */
    float *ya = calloc(buf.ny, sizeof(float)), *yb = calloc(buf.ny, sizeof(float));
    conv_forward(&a, buf.y, buf.x, &ctx);
    test_to_host(ya, buf.y, buf.ny);
    conv_forward(&b, buf.y, buf.x, &ctx);
    test_to_host(yb, buf.y, buf.ny);
    assert_memory_equal(ya, yb, buf.ny * sizeof(float));
    float *ga = calloc(buf.nw, sizeof(float)), *gb = calloc(buf.nw, sizeof(float));
    CHECK_CUDA(cudaMemset(buf.dx, 0, buf.nx * sizeof(float)));
    conv_backward(&a, buf.dx, buf.dy, buf.x, &ctx);
    conv_backward(&b, buf.dx, buf.dy, buf.x, &ctx);
    test_to_host(ga, a.weight_grad, buf.nw);
    test_to_host(gb, b.weight_grad, buf.nw);
    expect_lt(test_rel_err_f(gb, ga, buf.nw), 1e-5);
    printf("conv n%d %dx%d c%d->%d k%d s%d: the kept choice ran as the searched one\n", s.batch, s.h_in, s.w_in,
           s.in_c, s.out_c, s.kernel, s.stride);
    conv_destroy(&a);
    conv_destroy(&b);
    arena_free(&ctx.arena);
    free_buffers(&buf);
    free(w), free(ya), free(yb), free(ga), free(gb);
}

static void test_kept_choices(void **state) {
    (void)state;
    setenv("SUITE_CONV_PATH", "", 1);
    check_kept(conv_shape_nhwc(32, 64, 64, 3, 1, 1, 16, 16), 0);
    check_kept(conv_shape_nhwc(32, 64, 128, 1, 2, 0, 16, 16), 1);
    setenv("SUITE_CONV_PATH", "engine", 1); /* every direction through a rebuilt plan */
    check_kept(conv_shape_nhwc(16, 32, 64, 3, 2, 1, 16, 16), 0);
    unsetenv("SUITE_CONV_PATH");
}

static void test_kept_depthwise(void **state) {
    (void)state;
    const int n = 16, c = 96, size = 16, stride = 2;
    arena plan;
    arena_plan(&plan);
    depthwise_layer a, b;
    depthwise_layer_init(&a, &plan, n, c, size, stride);
    depthwise_layer_init(&b, &plan, n, c, size, stride);
    arena_take(&plan, ARENA_SCRATCH, depthwise_layer_scratch_bytes(&a));
    arena_take(&plan, ARENA_SCRATCH, depthwise_layer_scratch_bytes(&b));
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    depthwise_layer_init(&a, &ctx.arena, n, c, size, stride);
    depthwise_layer_init(&b, &ctx.arena, n, c, size, stride);
    depthwise_layer_attach_scratch(&a, arena_take(&ctx.arena, ARENA_SCRATCH, depthwise_layer_scratch_bytes(&a)));
    depthwise_layer_attach_scratch(&b, arena_take(&ctx.arena, ARENA_SCRATCH, depthwise_layer_scratch_bytes(&b)));
    size_t nx = (size_t)n * size * size * c, ny = (size_t)n * a.h_out * a.w_out * c, nw = (size_t)c * 9;
    float *hx = calloc(nx, sizeof(float)), *w = calloc(nw, sizeof(float));
    test_fill_uniform(hx, nx, &rng, -1, 1);
    test_fill_uniform(w, nw, &rng, -1, 1);
    float *x = test_to_device(hx, nx), *dx = test_to_device(hx, nx), *y = test_to_device(hx, ny);
    CHECK_CUDA(cudaMemcpy(a.weight, w, nw * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b.weight, w, nw * sizeof(float), cudaMemcpyHostToDevice));
    int before = lines_in(file);
    depthwise_layer_setup(&a, y, x, dx, NULL, &ctx);
    assert_int_equal(lines_in(file), before + 1);
    depthwise_layer_setup(&b, y, x, dx, NULL, &ctx);
    assert_int_equal(lines_in(file), before + 1);
    for (int d = 0; d < 3; d++) assert_int_equal(a.choice.path[d], b.choice.path[d]);
    assert_int_equal(a.choice.fwd, b.choice.fwd);
    assert_int_equal(a.choice.bwd_filter, b.choice.bwd_filter);
    assert_int_equal(a.choice.workspace_bytes, b.choice.workspace_bytes);
    float *ya = calloc(ny, sizeof(float)), *yb = calloc(ny, sizeof(float));
    depthwise_layer_forward(&a, y, x, &ctx);
    test_to_host(ya, y, ny);
    depthwise_layer_forward(&b, y, x, &ctx);
    test_to_host(yb, y, ny);
    assert_memory_equal(ya, yb, ny * sizeof(float));
    printf("depthwise n%d %dx%d c%d s%d: forward %s, backward-filter %s, kept and found\n", n, size, size, c,
           stride, depthwise_path_name(a.choice.path[0]), depthwise_path_name(a.choice.path[2]));
    depthwise_layer_destroy(&a);
    depthwise_layer_destroy(&b);
    arena_free(&ctx.arena);
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(dx));
    CHECK_CUDA(cudaFree(y));
    free(hx), free(w), free(ya), free(yb);
}

/* A line naming an engine that does not exist: reported, searched again, and the layer works. */
static void test_stale_choice(void **state) {
    (void)state;
    char stale[700];
    snprintf(stale, sizeof stale, "%s/stale.tsv", dir);
    setenv("SUITE_CONV_CHOICES", stale, 1);
    setenv("SUITE_CONV_PATH", "engine", 1);
    conv_shape s = conv_shape_nhwc(8, 16, 16, 3, 1, 1, 8, 8);
    arena plan;
    arena_plan(&plan);
    conv_layer a;
    conv_init(&a, &plan, s);
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    conv_init(&a, &ctx.arena, s);
    buffers buf = make_buffers(&s);
    conv_setup(&a, buf.y, buf.x, buf.dx, 0, NULL, &ctx);
    conv_destroy(&a);
    /* the same key, its engine replaced by one no cuDNN has */
    char err[256];
    char *text = test_read_text(stale, err, sizeof err);
    assert_non_null(text);
    char *tab = strchr(text, '\t');
    assert_non_null(tab);
    *tab = '\0';
    FILE *f = fopen(stale, "w");
    fprintf(f, "%s\tws=0 fwd=0/0/1/eng999999/1 bwd_data=- bwd_filter=0/0/1/eng999999/1\n", text);
    fclose(f);
    free(text);
    conv_setup(&a, buf.y, buf.x, buf.dx, 0, NULL, &ctx);
    assert_true(a.algos.use_engine[0]);
    assert_true(strcmp(a.algos.engine[0].name, "eng999999") != 0);
    conv_forward(&a, buf.y, buf.x, &ctx);
    CHECK_CUDA(cudaDeviceSynchronize());
    conv_destroy(&a);
    arena_free(&ctx.arena);
    free_buffers(&buf);
    unsetenv("SUITE_CONV_PATH");
    setenv("SUITE_CONV_CHOICES", file, 1);
}

int main(void) {
    test_require_gpu();
    test_tmpdir(dir, sizeof dir);
    snprintf(file, sizeof file, "%s/conv-choices.tsv", dir);
    setenv("SUITE_CONV_CHOICES", file, 1);
    if (context_init(&ctx, 0, (size_t)64 << 20, 1) != CONTEXT_OK) return 1;
    context_reserve_workspace(&ctx, ctx.workspace_limit);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_kept_choices), cmocka_unit_test(test_kept_depthwise),
                                       cmocka_unit_test(test_stale_choice)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    context_free(&ctx);
    test_rmtree(dir);
    return rc;
}
