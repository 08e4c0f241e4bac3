/* The recommender's kernels on the GPU against double-precision CPU references, with
 * finite-difference checks of every gradient through the GPU forward (float32, TF32 off):
 *   dot interaction (several table counts and dims, odd dims included);
 *   embedding bags with offsets: several indices per bag, duplicates in one bag and across
 *     samples, empty bags, indices beyond the table and negative ones (hashed modulo the rows);
 *   sparse SGD against dense SGD on the CPU: touched rows as dense SGD would leave them,
 *     untouched rows bit-identical, a hot row whose run crosses many pieces, the same bits on
 *     every run;
 *   Linear + ReLU layers (kinks avoided by choosing the checked entries), sigmoid + BCE;
 *   the whole step: a captured graph replay gives what the eager step gives.
 * Every check prints what it measured, so one run on the GPU says what is wrong. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/dlrm.h"
#include "kernels/check.h"
#include "models/dlrm.h"
#include "models/layers/linear.h"
#include "tests/support/testutil.h"

static job_context ctx;
static uint64_t rng = 4321;

static double *dalloc(size_t n) { return calloc(n ? n : 1, sizeof(double)); }
static float *falloc(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

static void *device_bytes(size_t bytes) {
    void *p = NULL;
    CHECK_CUDA(cudaMalloc(&p, bytes ? bytes : 16));
    return p;
}

/* cudaMemcpy from pageable memory may return before the data lands, and ctx.stream (non-blocking)
 * waits for nothing on the legacy stream: every upload, memset and read-back here is separated
 * from the kernels by a device-wide synchronisation. */
static void upload(void *device, const void *host, size_t bytes) {
    CHECK_CUDA(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaDeviceSynchronize());
}

static float *floats_to_device(const float *host, size_t n) {
    float *d = test_to_device(host, n);
    CHECK_CUDA(cudaDeviceSynchronize());
    return d;
}

static int32_t *int_to_device(const int32_t *host, size_t n) {
    int32_t *d = device_bytes(n * sizeof *d);
    upload(d, host, n * sizeof *d);
    return d;
}

static double weighted_sum(const float *device, const float *weights, size_t n) {
    float *y = falloc(n);
    test_to_host(y, device, n);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += (double)y[i] * weights[i];
    free(y);
    return sum;
}

/* ---- interaction ---------------------------------------------------------------------------- */

static void interaction_reference(double *r, double *dx, double *demb, const float *x, const float *emb,
                                  const float *dr, int B, int T, int d) {
    int F = T + 1, width = dlrm_interaction_width(T, d);
    double *dv = dalloc((size_t)F * d);
    for (int b = 0; b < B; b++) {
#define V(f, c) ((f) == 0 ? (double)x[(size_t)b * d + (c)] : (double)emb[((size_t)b * T + (f) - 1) * d + (c)])
        const float *drb = dr + (size_t)b * width;
        memset(dv, 0, (size_t)F * d * sizeof *dv);
        for (int c = 0; c < d; c++) {
            r[(size_t)b * width + c] = V(0, c);
            dv[c] = drb[c];
        }
        int p = 0;
        for (int i = 1; i < F; i++)
            for (int j = 0; j < i; j++, p++) {
                double dot = 0, g = drb[d + p];
                for (int c = 0; c < d; c++) {
                    dot += V(i, c) * V(j, c);
                    dv[i * d + c] += g * V(j, c);
                    dv[j * d + c] += g * V(i, c);
                }
                r[(size_t)b * width + d + p] = dot;
            }
        for (int c = 0; c < d; c++) dx[(size_t)b * d + c] = dv[c];
        for (int t = 0; t < T; t++)
            for (int c = 0; c < d; c++) demb[((size_t)b * T + t) * d + c] = dv[(t + 1) * d + c];
#undef V
    }
    free(dv);
}

static void check_interaction(int B, int T, int d) {
    int width = dlrm_interaction_width(T, d);
    size_t nx = (size_t)B * d, ne = (size_t)B * T * d, nr = (size_t)B * width;
    float *x = falloc(nx), *emb = falloc(ne), *dr = falloc(nr);
    test_fill_uniform(x, nx, &rng, -1, 1);
    test_fill_uniform(emb, ne, &rng, -1, 1);
    test_fill_uniform(dr, nr, &rng, -1, 1);
    float *d_x = floats_to_device(x, nx), *d_emb = floats_to_device(emb, ne), *d_dr = floats_to_device(dr, nr);
    float *d_r = floats_to_device(dr, nr), *d_dx = floats_to_device(x, nx), *d_demb = floats_to_device(emb, ne);
    test_poison(d_r, nr), test_poison(d_dx, nx), test_poison(d_demb, ne);
    CHECK_CUDA(cudaDeviceSynchronize());
    dlrm_interaction_forward(d_r, d_x, d_emb, B, T, d, ctx.stream);
    dlrm_interaction_backward(d_dx, d_demb, d_dr, d_x, d_emb, B, T, d, ctx.stream);
    double *r_ref = dalloc(nr), *dx_ref = dalloc(nx), *demb_ref = dalloc(ne);
    interaction_reference(r_ref, dx_ref, demb_ref, x, emb, dr, B, T, d);
    float *r = falloc(nr), *dx = falloc(nx), *demb = falloc(ne);
    test_to_host(r, d_r, nr), test_to_host(dx, d_dx, nx), test_to_host(demb, d_demb, ne);
    double er = test_rel_err(r, r_ref, nr), edx = test_rel_err(dx, dx_ref, nx), ede = test_rel_err(demb, demb_ref, ne);
    printf("interaction batch %d, %d tables, dim %d (width %d): rel err r %.2e dx %.2e demb %.2e\n", B, T, d, width,
           er, edx, ede);
    expect_lt(er, 1e-5); expect_lt(edx, 1e-5); expect_lt(ede, 1e-5);
    /* L = sum(dr * r) is quadratic in the inputs: central differences are exact up to rounding */
    const float step = 1e-2f;
    double worst = 0;
    for (int t = 0; t < 12; t++) {
        int on_x = t % 3 == 0;
        size_t i = (size_t)(test_rand_u64(&rng) % (on_x ? nx : ne));
        float *host = on_x ? x : emb, *dev = on_x ? d_x : d_emb, saved = host[i];
        double loss[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            float v = saved + (sgn ? -step : step);
            upload(dev + i, &v, sizeof v);
            dlrm_interaction_forward(d_r, d_x, d_emb, B, T, d, ctx.stream);
            loss[sgn] = weighted_sum(d_r, dr, nr);
        }
        upload(dev + i, &saved, sizeof saved);
        double fd = (loss[0] - loss[1]) / (2 * step), analytic = on_x ? dx[i] : demb[i];
        double e = fabs(fd - analytic) / (1 + fabs(analytic));
        worst = e > worst ? e : worst;
        if (e > 2e-3) fail_msg("interaction finite difference at %s[%zu]: %.6f vs backward %.6f", on_x ? "x" : "emb", i, fd, analytic);
    }
    printf("  finite differences: worst |fd - backward| / (1 + |backward|) = %.2e\n", worst);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_emb)); CHECK_CUDA(cudaFree(d_dr));
    CHECK_CUDA(cudaFree(d_r)); CHECK_CUDA(cudaFree(d_dx)); CHECK_CUDA(cudaFree(d_demb));
    free(x), free(emb), free(dr), free(r_ref), free(dx_ref), free(demb_ref), free(r), free(dx), free(demb);
}

static void test_interaction(void **state) {
    check_interaction(3, 5, 4);
    check_interaction(5, 3, 7);      /* odd dim */
    check_interaction(4, 26, 16);    /* criteo-kaggle */
    check_interaction(2, 26, 128);   /* criteo-terabyte */
    check_interaction(64, 2, 1);
}

/* ---- embedding bags and the sparse update ----------------------------------------------------- */

typedef struct bag_case {
    int T, dim, B;
    uint32_t rows[4];
    int use_offsets;
    int32_t *indices, *offsets;     /* host; offsets NULL when !use_offsets */
    int count, capacity;
} bag_case;

static dlrm_tables tables_of(const bag_case *k) {
    dlrm_tables t;
    memset(&t, 0, sizeof t);
    t.count = k->T;
    t.dim = k->dim;
    uint32_t base = 0;
    for (int i = 0; i < k->T; i++) {
        t.rows[i] = k->rows[i];
        t.base[i] = base;
        base += k->rows[i];
    }
    return t;
}

static uint32_t total_rows(const bag_case *k) {
    uint32_t n = 0;
    for (int i = 0; i < k->T; i++) n += k->rows[i];
    return n;
}

/* Lookup range of bag (b, t). */
static void bag_range(const bag_case *k, int b, int t, int *begin, int *end) {
    if (k->use_offsets) {
        *begin = k->offsets[t * k->B + b];
        *end = k->offsets[t * k->B + b + 1];
    } else {
        *begin = b * k->T + t;
        *end = *begin + 1;
    }
}

/* out[b, t] = sum of bag rows; G[row] += dout[b, t] for every lookup (the dense gradient). */
static void bag_reference(double *out, double *grad, const bag_case *k, const float *w, const float *dout) {
    dlrm_tables t = tables_of(k);
    for (int b = 0; b < k->B; b++)
        for (int tb = 0; tb < k->T; tb++) {
            int begin, end;
            bag_range(k, b, tb, &begin, &end);
            size_t o = ((size_t)b * k->T + tb) * k->dim;
            for (int j = begin; j < end; j++) {
                uint32_t row = t.base[tb] + dlrm_hash_index(k->indices[j], t.rows[tb]);
                for (int c = 0; c < k->dim; c++) {
                    out[o + c] += w[(size_t)row * k->dim + c];
                    grad[(size_t)row * k->dim + c] += dout[o + c];
                }
            }
        }
}

/* Forward, then sort + sparse SGD from w0 with learning rate lr; returns the new table. */
static float *sparse_step(const bag_case *k, const float *w0, const float *dout, float lr, float *out_host) {
    dlrm_tables t = tables_of(k);
    size_t nw = (size_t)total_rows(k) * k->dim, nout = (size_t)k->B * k->T * k->dim;
    float *d_w = floats_to_device(w0, nw), *d_dout = floats_to_device(dout, nout), *d_out = floats_to_device(dout, nout);
    float *d_lr = floats_to_device(&lr, 1), *d_partials = device_bytes((size_t)k->capacity * k->dim * sizeof(float));
    int32_t *d_idx = int_to_device(k->indices, (size_t)k->capacity);
    int32_t *d_off = k->use_offsets ? int_to_device(k->offsets, (size_t)k->T * k->B + 1) : NULL;
    uint32_t *keys = device_bytes((size_t)k->capacity * 4), *vals = device_bytes((size_t)k->capacity * 4);
    uint32_t *skeys = device_bytes((size_t)k->capacity * 4), *svals = device_bytes((size_t)k->capacity * 4);
    int bits = dlrm_row_bits(total_rows(k));
    size_t scratch_bytes = dlrm_sort_scratch_bytes(k->capacity, bits);
    void *scratch = device_bytes(scratch_bytes);
    test_poison(d_out, nout);
    CHECK_CUDA(cudaMemset(keys, 0x5A, (size_t)k->capacity * 4)); /* stale values the forward must overwrite */
    CHECK_CUDA(cudaDeviceSynchronize());
    dlrm_lookups l = {k->B, d_idx, d_off, k->capacity};
    dlrm_embedding_bag_forward(d_out, keys, vals, d_w, t, l, ctx.stream);
    dlrm_sort_lookups(skeys, svals, keys, vals, k->capacity, bits, scratch, scratch_bytes, ctx.stream);
    dlrm_sparse_sgd(d_w, skeys, svals, d_dout, d_lr, k->capacity, k->dim, d_partials, ctx.stream);
    float *w1 = falloc(nw);
    test_to_host(w1, d_w, nw);
    if (out_host) test_to_host(out_host, d_out, nout);
    CHECK_CUDA(cudaFree(d_w)); CHECK_CUDA(cudaFree(d_dout)); CHECK_CUDA(cudaFree(d_out)); CHECK_CUDA(cudaFree(d_lr));
    CHECK_CUDA(cudaFree(d_partials)); CHECK_CUDA(cudaFree(d_idx)); CHECK_CUDA(cudaFree(keys)); CHECK_CUDA(cudaFree(vals));
    CHECK_CUDA(cudaFree(skeys)); CHECK_CUDA(cudaFree(svals)); CHECK_CUDA(cudaFree(scratch));
    if (d_off) CHECK_CUDA(cudaFree(d_off));
    return w1;
}

static void check_bags(const char *what, const bag_case *k) {
    size_t nw = (size_t)total_rows(k) * k->dim, nout = (size_t)k->B * k->T * k->dim;
    float *w0 = falloc(nw), *dout = falloc(nout), *out = falloc(nout);
    test_fill_uniform(w0, nw, &rng, -1, 1);
    test_fill_uniform(dout, nout, &rng, -1, 1);
    const float lr = 0.37f;
    float *w1 = sparse_step(k, w0, dout, lr, out);
    float *again = sparse_step(k, w0, dout, lr, NULL);
    double *out_ref = dalloc(nout), *grad = dalloc(nw), *w_ref = dalloc(nw);
    bag_reference(out_ref, grad, k, w0, dout);
    double e_out = test_rel_err(out, out_ref, nout);
    /* dense SGD on the CPU: w - lr * G; rows without lookups have G = 0 and must not change at all */
    int touched = 0, untouched_changed = 0;
    double worst = 0;
    for (size_t r = 0; r < nw / k->dim; r++) {
        int hit = 0;
        for (int c = 0; c < k->dim; c++) hit |= grad[r * k->dim + c] != 0;
        touched += hit;
        for (int c = 0; c < k->dim; c++) {
            size_t i = r * k->dim + c;
            w_ref[i] = w0[i] - (double)lr * grad[i];
            if (!hit && memcmp(&w1[i], &w0[i], sizeof(float)) != 0) untouched_changed++;
            double e = fabs(w1[i] - w_ref[i]) / (1e-2 + fabs(lr * grad[i]));
            worst = e > worst ? e : worst;
        }
    }
    int same_bits = memcmp(w1, again, nw * sizeof(float)) == 0;
    printf("%s: %d tables, dim %d, batch %d, %d lookups in %d slots: forward rel err %.2e; %d rows touched, "
           "worst update error %.2e of the step, untouched rows changed %d, second run identical %s\n", what, k->T,
           k->dim, k->B, k->count, k->capacity, e_out, touched, worst, untouched_changed, same_bits ? "yes" : "NO");
    expect_lt(e_out, 1e-6);
    expect_lt(worst, 1e-4);
    assert_int_equal(untouched_changed, 0);
    assert_true(same_bits);
    /* finite differences of L = sum(dout * out) through the GPU forward: dL/dW = G (L is linear in W) */
    dlrm_tables t = tables_of(k);
    float *d_w = floats_to_device(w0, nw), *d_out = floats_to_device(out, nout);
    int32_t *d_idx = int_to_device(k->indices, (size_t)k->capacity);
    int32_t *d_off = k->use_offsets ? int_to_device(k->offsets, (size_t)k->T * k->B + 1) : NULL;
    dlrm_lookups l = {k->B, d_idx, d_off, k->capacity};
    for (int trial = 0; trial < 12; trial++) {
        size_t i = (size_t)(test_rand_u64(&rng) % nw);
        for (int probe = 0; trial % 3 && probe < 10000 && grad[i] == 0; probe++) /* mostly touched rows */
            i = (size_t)(test_rand_u64(&rng) % nw);
        float saved = w0[i], h = 0.25f;
        double loss[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            float v = saved + (sgn ? -h : h);
            upload(d_w + i, &v, sizeof v);
            dlrm_embedding_bag_forward(d_out, NULL, NULL, d_w, t, l, ctx.stream);
            loss[sgn] = weighted_sum(d_out, dout, nout);
        }
        upload(d_w + i, &saved, sizeof saved);
        double fd = (loss[0] - loss[1]) / (2 * h), from_update = (w0[i] - w1[i]) / lr;
        if (fabs(fd - from_update) > 1e-3 * (1 + fabs(fd)))
            fail_msg("%s: finite difference at weight %zu is %.6f, the update implies %.6f", what, i, fd, from_update);
    }
    CHECK_CUDA(cudaFree(d_w)); CHECK_CUDA(cudaFree(d_out)); CHECK_CUDA(cudaFree(d_idx));
    if (d_off) CHECK_CUDA(cudaFree(d_off));
    free(w0), free(dout), free(out), free(w1), free(again), free(out_ref), free(grad), free(w_ref);
}

static void test_bags_with_offsets(void **state) {
    for (int dim = 3; dim <= 8; dim += 5) { /* dim 3: scalar path; dim 8: float4 path */
        bag_case k = {.T = 3, .dim = dim, .B = 4, .rows = {5, 3, 7}, .use_offsets = 1};
        /* bags per table, sample-major inside each table (PyTorch's offsets, tables concatenated) */
        static const int sizes[3][4] = {{2, 0, 3, 1}, {4, 1, 0, 2}, {1, 1, 5, 2}};
        static const int32_t idx[] = {
            1, 1,          /* t0 b0: the same index twice in one bag */
            /* t0 b1: empty */
            4, 0, 6,       /* t0 b2: 6 is beyond 5 rows -> row 1 */
            1,             /* t0 b3: row 1 again, across samples */
            2, 2, 2, -1,   /* t1 b0: three times row 2, and -1 -> row 2 */
            0,             /* t1 b1 */
            /* t1 b2: empty */
            3, 5,          /* t1 b3: 3 -> row 0, 5 -> row 2 */
            6,             /* t2 b0 */
            6,             /* t2 b1 */
            0, 13, -8, 6, 20, /* t2 b2: 13 -> 6, -8 -> 6, 20 -> 6 */
            2, 3};         /* t2 b3 */
        int32_t offsets[13], *indices = calloc(64, sizeof *indices);
        int n = 0;
        for (int t = 0; t < 3; t++)
            for (int b = 0; b < 4; b++) {
                offsets[t * 4 + b] = n;
                n += sizes[t][b];
            }
        offsets[12] = n;
        memcpy(indices, idx, sizeof idx);
        assert_int_equal(n, (int)(sizeof idx / sizeof *idx));
        for (int j = n; j < n + 7; j++) indices[j] = 12345; /* slots past the batch's indices: ignored */
        k.indices = indices, k.offsets = offsets, k.count = n, k.capacity = n + 7;
        check_bags("bags with offsets", &k);
        free(indices);
    }
}

/* One index per sample and table (the Criteo layout), 1000 samples: a one-row table whose run
 * crosses 31 piece boundaries, a small table with many duplicates, out-of-range indices. */
static void test_hot_rows(void **state) {
    for (int dim = 16; dim <= 17; dim++) {
        bag_case k = {.T = 3, .dim = dim, .B = 1000, .rows = {1, 50, 100000}, .use_offsets = 0};
        int32_t *indices = malloc((size_t)k.B * k.T * sizeof *indices);
        for (int b = 0; b < k.B; b++) {
            indices[b * 3 + 0] = b % 7 == 0 ? b : 0; /* hashed to the one row */
            indices[b * 3 + 1] = (int32_t)(test_rand_u64(&rng) % 120) - 10;
            indices[b * 3 + 2] = (int32_t)(test_rand_u64(&rng) % 300000);
        }
        k.indices = indices, k.count = k.capacity = k.B * k.T;
        check_bags("one index per bag", &k);
        free(indices);
    }
}

/* --max-rows hashing as documented: index i of a table of n rows reads row i mod n (Python's
 * modulo), on the GPU. */
static void test_hashing(void **state) {
    bag_case k = {.T = 2, .dim = 4, .B = 6, .rows = {10, 3}, .use_offsets = 0};
    int32_t indices[12] = {3, 0, 13, 4, 10, -1, -1, 2, INT32_MAX, -3, 2147483640, 7};
    k.indices = indices, k.count = k.capacity = 12;
    size_t nw = 13 * 4, nout = 12 * 4;
    float w[13 * 4], out[12 * 4];
    for (size_t i = 0; i < nw; i++) w[i] = (float)i; /* row r holds 4r .. 4r + 3 */
    float *d_w = floats_to_device(w, nw), *d_out = floats_to_device(w, nout);
    int32_t *d_idx = int_to_device(indices, 12);
    dlrm_lookups l = {k.B, d_idx, NULL, 12};
    dlrm_embedding_bag_forward(d_out, NULL, NULL, d_w, tables_of(&k), l, ctx.stream);
    test_to_host(out, d_out, nout);
    for (int j = 0; j < 12; j++) {
        int t = j % 2;
        int64_t rows = t ? 3 : 10, want = ((int64_t)indices[j] % rows + rows) % rows + (t ? 10 : 0);
        if (out[j * 4] != (float)(want * 4))
            fail_msg("index %d of table %d read global row %.0f, expected %lld", indices[j], t, out[j * 4] / 4,
                     (long long)want);
    }
    printf("hashing: 12 indices (beyond the rows, negative, INT32_MAX) read row index mod rows\n");
    CHECK_CUDA(cudaFree(d_w)); CHECK_CUDA(cudaFree(d_out)); CHECK_CUDA(cudaFree(d_idx));
}

/* ---- Linear + ReLU ---------------------------------------------------------------------------- */

static void check_linear_relu(int n, int in, int out) {
    arena plan;
    arena_plan(&plan);
    linear_layer layer;
    linear_init(&layer, &plan, n, in, out);
    assert_int_equal(arena_allocate(&ctx.arena, &plan, 0), 0);
    linear_init(&layer, &ctx.arena, n, in, out);
    size_t nx = (size_t)n * in, ny = (size_t)n * out, nw = (size_t)in * out;
    float *x = falloc(nx), *w = falloc(nw), *b = falloc(out), *dy = falloc(ny);
    test_fill_uniform(x, nx, &rng, -1, 1);
    test_fill_uniform(w, nw, &rng, -0.5f, 0.5f);
    test_fill_uniform(b, out, &rng, -0.5f, 0.5f);
    test_fill_uniform(dy, ny, &rng, -1, 1);
    upload(layer.weight, w, nw * sizeof(float));
    upload(layer.bias, b, out * sizeof(float));
    float *d_x = floats_to_device(x, nx), *d_y = floats_to_device(dy, ny), *d_g = floats_to_device(dy, ny);
    float *d_dx = floats_to_device(x, nx);
    linear_setup(&layer, &ctx);
    linear_forward(&layer, d_y, d_x, &ctx);
    dlrm_relu_forward(d_y, ny, ctx.stream);
    dlrm_relu_backward(d_g, d_y, ny, ctx.stream); /* d_g held dy */
    linear_backward(&layer, d_dx, d_g, d_x, &ctx);
    float *y = falloc(ny), *dx = falloc(nx), *dw = falloc(nw), *db = falloc(out);
    test_to_host(y, d_y, ny), test_to_host(dx, d_dx, nx), test_to_host(dw, layer.weight_grad, nw);
    test_to_host(db, layer.bias_grad, out);
    double *z = dalloc(ny), *y_ref = dalloc(ny), *dx_ref = dalloc(nx), *dw_ref = dalloc(nw), *db_ref = dalloc(out);
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++) {
            double acc = b[o];
            for (int i = 0; i < in; i++) acc += (double)x[(size_t)r * in + i] * w[(size_t)o * in + i];
            z[(size_t)r * out + o] = acc;
            y_ref[(size_t)r * out + o] = acc > 0 ? acc : 0;
        }
    for (int r = 0; r < n; r++)
        for (int o = 0; o < out; o++) {
            double g = y[(size_t)r * out + o] > 0 ? dy[(size_t)r * out + o] : 0; /* the GPU's own mask */
            db_ref[o] += g;
            for (int i = 0; i < in; i++) {
                dx_ref[(size_t)r * in + i] += g * w[(size_t)o * in + i];
                dw_ref[(size_t)o * in + i] += g * x[(size_t)r * in + i];
            }
        }
    double ey = test_rel_err(y, y_ref, ny), edx = test_rel_err(dx, dx_ref, nx), edw = test_rel_err(dw, dw_ref, nw),
           edb = test_rel_err(db, db_ref, out);
    printf("linear+relu %dx%d->%d: rel err y %.2e dx %.2e dw %.2e db %.2e\n", n, in, out, ey, edx, edw, edb);
    expect_lt(ey, 1e-5); expect_lt(edx, 1e-5); expect_lt(edw, 1e-5); expect_lt(edb, 1e-5);
    /* finite differences of L = sum(dy * relu(x W^T + b)) at entries whose pre-activations all stay
     * 0.02 or more from the kink (a step of 1e-2 moves each by at most 1e-2) */
    const float h = 1e-2f;
    int checked = 0;
    for (int attempt = 0; attempt < 4000 && checked < 9; attempt++) {
        int which = attempt % 3; /* weight, bias, input */
        size_t count = which == 0 ? nw : which == 1 ? (size_t)out : nx, i = (size_t)(test_rand_u64(&rng) % count);
        int far = 1;
        for (int r = 0; r < n && far; r++)
            for (int o = 0; o < out && far; o++) {
                int affected = which == 2 ? (size_t)r == i / in : which == 0 ? (size_t)o == i / in : (size_t)o == i;
                if (affected && fabs(z[(size_t)r * out + o]) < 0.02) far = 0;
            }
        if (!far) continue;
        float *host = which == 0 ? w : which == 1 ? b : x, *dev = which == 0 ? layer.weight : which == 1 ? layer.bias : d_x;
        float saved = host[i];
        double loss[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            float v = saved + (sgn ? -h : h);
            upload(dev + i, &v, sizeof v);
            linear_forward(&layer, d_y, d_x, &ctx);
            dlrm_relu_forward(d_y, ny, ctx.stream);
            loss[sgn] = weighted_sum(d_y, dy, ny);
        }
        upload(dev + i, &saved, sizeof saved);
        double fd = (loss[0] - loss[1]) / (2 * h), analytic = which == 0 ? dw[i] : which == 1 ? db[i] : dx[i];
        if (fabs(fd - analytic) > 2e-3 * (1 + fabs(analytic)))
            fail_msg("linear+relu finite difference (%s)[%zu]: %.6f vs backward %.6f",
                     which == 0 ? "weight" : which == 1 ? "bias" : "input", i, fd, analytic);
        checked++;
    }
    printf("  %d finite-difference checks away from the kink passed\n", checked);
    expect_ge(checked, 6);
    linear_destroy(&layer);
    arena_free(&ctx.arena);
    CHECK_CUDA(cudaFree(d_x)); CHECK_CUDA(cudaFree(d_y)); CHECK_CUDA(cudaFree(d_g)); CHECK_CUDA(cudaFree(d_dx));
    free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db);
    free(z), free(y_ref), free(dx_ref), free(dw_ref), free(db_ref);
}

static void test_linear_relu(void **state) {
    check_linear_relu(8, 13, 32);   /* the bottom MLP's first layer shape */
    check_linear_relu(33, 70, 20);
    check_linear_relu(16, 367, 64);
}

/* ---- sigmoid + BCE ------------------------------------------------------------------------------ */

static void zero_sums(double *d_sums) {
    CHECK_CUDA(cudaMemset(d_sums, 0, 2 * sizeof(double)));
    CHECK_CUDA(cudaDeviceSynchronize());
}

static void read_sums(double sums[2], const double *d_sums) {
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaMemcpy(sums, d_sums, 2 * sizeof(double), cudaMemcpyDeviceToHost));
}

/* log p and log(1 - p) through softplus: computing them from p itself loses everything past
 * |z| ~ 30, where 1 - p is below double's resolution next to 1. */
static double bce_reference(double z, double y) {
    double lp = -(fmax(-z, 0.0) + log1p(exp(-fabs(z)))), lq = -(fmax(z, 0.0) + log1p(exp(-fabs(z))));
    if (!(lp > -100)) lp = -100;
    if (!(lq > -100)) lq = -100;
    return -(y * lp + (1 - y) * lq);
}

static void test_bce(void **state) {
    enum { B = 64 };
    float z[B], y[B], dz[B], p[B];
    for (int i = 0; i < B; i++) {
        z[i] = test_rand_uniform(&rng, -4, 4);
        y[i] = (float)(test_rand_u64(&rng) % 2);
    }
    z[0] = 30, y[0] = 0;   /* saturated, wrong: loss 30 */
    z[1] = -30, y[1] = 0;  /* saturated, right */
    z[2] = 0, y[2] = 1;    /* p = 0.5 rounds to 0: a miss */
    float *d_z = floats_to_device(z, B), *d_y = floats_to_device(y, B), *d_dz = floats_to_device(z, B), *d_p = floats_to_device(z, B);
    double *d_sums = device_bytes(2 * sizeof(double)), sums[2];
    zero_sums(d_sums);
    dlrm_bce_forward_backward(d_dz, d_sums, d_z, d_y, B, ctx.stream);
    test_to_host(dz, d_dz, B);
    read_sums(sums, d_sums);
    double loss = 0, hits = 0, *dz_ref = dalloc(B);
    for (int i = 0; i < B; i++) {
        loss += bce_reference(z[i], y[i]);
        hits += (z[i] > 0) == (y[i] > 0.5f);
        dz_ref[i] = (1 / (1 + exp(-(double)z[i])) - y[i]) / B;
    }
    double edz = test_rel_err(dz, dz_ref, B);
    printf("bce: loss sum %.6f (reference %.6f), hits %.0f (%.0f), dz rel err %.2e\n", sums[0], loss, sums[1], hits, edz);
    expect_lt(fabs(sums[0] - loss), 1e-5 * loss); expect_eq(sums[1], hits); expect_lt(edz, 1e-5);
    /* evaluation: probabilities of every row, sums of the first n_valid */
    zero_sums(d_sums);
    dlrm_bce_eval(d_p, d_sums, d_z, d_y, B, 10, ctx.stream);
    test_to_host(p, d_p, B);
    read_sums(sums, d_sums);
    double loss10 = 0;
    for (int i = 0; i < 10; i++) loss10 += bce_reference(z[i], y[i]);
    for (int i = 0; i < B; i++) expect_lt(fabs(p[i] - 1 / (1 + exp(-(double)z[i]))), 1e-6);
    expect_lt(fabs(sums[0] - loss10), 1e-5 * loss10);
    /* finite differences of the mean loss through the GPU */
    for (int t = 0; t < 8; t++) {
        int i = 3 + (int)(test_rand_u64(&rng) % (B - 3));
        float saved = z[i], h = 1e-2f;
        double l[2];
        for (int sgn = 0; sgn < 2; sgn++) {
            float v = saved + (sgn ? -h : h);
            upload(d_z + i, &v, sizeof v);
            zero_sums(d_sums);
            dlrm_bce_eval(d_p, d_sums, d_z, d_y, B, B, ctx.stream);
            read_sums(sums, d_sums);
            l[sgn] = sums[0] / B;
        }
        upload(d_z + i, &saved, sizeof saved);
        double fd = (l[0] - l[1]) / (2 * h);
        if (fabs(fd - dz[i]) > 1e-5 + 1e-3 * fabs(dz[i]))
            fail_msg("bce finite difference at row %d: %.8f vs backward %.8f", i, fd, dz[i]);
    }
    CHECK_CUDA(cudaFree(d_z)); CHECK_CUDA(cudaFree(d_y)); CHECK_CUDA(cudaFree(d_dz)); CHECK_CUDA(cudaFree(d_p));
    CHECK_CUDA(cudaFree(d_sums));
    free(dz_ref);
}

/* ---- the whole step: graph replay = eager ------------------------------------------------------- */

static void small_config(dlrm_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "test");
    c->tables = 3, c->dim = 4;
    c->rows[0] = 10, c->rows[1] = 1, c->rows[2] = 1000;
    c->bottom_layers = 2, c->bottom[0] = DLRM_DENSE, c->bottom[1] = 8, c->bottom[2] = 4;
    c->top_layers = 2, c->top[0] = dlrm_interaction_width(3, 4), c->top[1] = 8, c->top[2] = 1;
    c->batch = 96;
    c->seed = 5;
}

/* Runs 4 steps (input slots 0, 1, 0, 1) and returns every parameter, concatenated. */
static float *run_small(int use_graph, size_t *count, double *loss) {
    dlrm_config c;
    small_config(&c);
    dlrm m;
    char err[1024];
    if (dlrm_plan(&m, &c, 0, err, sizeof err) != 0 || dlrm_start(&m, &ctx, err, sizeof err) != 0) fail_msg("%s", err);
    uint64_t data = 77;
    for (int s = 0; s < 2; s++) {
        size_t bytes = dlrm_input_bytes(&c);
        char *block = calloc(1, bytes);
        dlrm_input in = dlrm_input_at(&c, block);
        for (int i = 0; i < c.batch * DLRM_DENSE; i++) in.dense[i] = test_rand_uniform(&data, 0, 3);
        for (int i = 0; i < c.batch * c.tables; i++) in.indices[i] = (int32_t)(test_rand_u64(&data) % 2500);
        for (int i = 0; i < c.batch; i++) in.labels[i] = (float)(test_rand_u64(&data) % 2);
        upload(m.input_block[s], block, bytes);
        free(block);
    }
    dlrm_lr_policy policy = {0.5f, 2, 0, 0};
    dlrm_prepare(&m, policy, use_graph);
    for (int step = 0; step < 4; step++) dlrm_train_step(&m, step % 2);
    double correct;
    dlrm_take_sums(&m, loss, &correct);
    *count = 0;
    for (int i = 0; i < m.params.count; i++) *count += (size_t)param_numel(&m.params.entries[i]);
    float *all = falloc(*count), *p = all;
    for (int i = 0; i < m.params.count; i++) {
        size_t n = (size_t)param_numel(&m.params.entries[i]);
        test_to_host(p, m.params.entries[i].data, n);
        p += n;
    }
    dlrm_free(&m);
    return all;
}

static void test_graph_matches_eager(void **state) {
    size_t n_graph, n_eager;
    double loss_graph, loss_eager;
    float *graph = run_small(1, &n_graph, &loss_graph), *eager = run_small(0, &n_eager, &loss_eager);
    assert_int_equal(n_graph, n_eager);
    size_t differ = 0;
    for (size_t i = 0; i < n_graph; i++) differ += memcmp(&graph[i], &eager[i], sizeof(float)) != 0;
    double e = test_rel_err_f(graph, eager, n_graph);
    printf("4 steps, captured vs eager: %zu of %zu parameters differ in any bit, rel err %.2e; loss sums %.6f vs %.6f\n",
           differ, n_graph, e, loss_graph, loss_eager);
    expect_lt(e, 1e-6);
    assert_true(isfinite(loss_graph)); expect_lt(fabs(loss_graph - loss_eager), 1e-5 * fabs(loss_eager));
    free(graph), free(eager);
}

int main(void) {
    test_require_gpu();
    if (context_init(&ctx, 0, (size_t)64 << 20, 0) != CONTEXT_OK) return 1;
    context_reserve_workspace(&ctx, ctx.workspace_limit);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interaction),     cmocka_unit_test(test_bags_with_offsets),
        cmocka_unit_test(test_hot_rows),        cmocka_unit_test(test_hashing),
        cmocka_unit_test(test_linear_relu),     cmocka_unit_test(test_bce),
        cmocka_unit_test(test_graph_matches_eager),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    context_free(&ctx);
    return rc;
}
