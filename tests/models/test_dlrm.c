/* The recommender on the CPU (no GPU): parameter counts of both configurations through the host
 * plan (the reference's 540,677,217 and 24,036,595,969), the state_dict names and shapes, --max-rows
 * capping, the footprint arithmetic (the XL preset's tables within 10%), configuration errors, the
 * input block layout, the index hashing, the learning-rate policy against the reference's
 * scheduler, and ROC AUC on known cases (ties as the rank average). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/dlrm.h"
#include "tests/support/testutil.h"

static void plan_ok(dlrm *m, const char *name, int64_t max_rows, int batch) {
    dlrm_config c;
    char err[512];
    if (dlrm_config_named(&c, name, max_rows, batch, 0, err, sizeof err) != 0) fail_msg("%s", err);
    if (dlrm_plan(m, &c, 0, err, sizeof err) != 0) fail_msg("%s", err);
}

static const param_entry *find_param(const dlrm *m, const char *name) {
    for (int i = 0; i < m->params.count; i++)
        if (!strcmp(m->params.entries[i].name, name)) return &m->params.entries[i];
    return NULL;
}

static void test_parameter_counts(void **state) {
    dlrm m;
    plan_ok(&m, "criteo-kaggle", 0, 128);
    assert_int_equal(m.param_count, 540677217LL);
    assert_int_equal(m.interaction_width, 367);
    dlrm_free(&m);
    plan_ok(&m, "criteo-terabyte", 0, 2048);
    assert_int_equal(m.param_count, 24036595969LL);
    assert_int_equal(m.interaction_width, 479);
    dlrm_footprint f = dlrm_footprint_of(&m);
    assert_int_equal(f.embeddings, (size_t)(24036595969LL - 2368897LL) * 4); /* all but the MLPs */
    dlrm_free(&m);
    /* capped: each table min(rows, cap) */
    plan_ok(&m, "criteo-kaggle", 1000, 64);
    const int64_t *sizes = dlrm_table_sizes("criteo-kaggle");
    int64_t rows = 0;
    for (int t = 0; t < 26; t++) rows += sizes[t] < 1000 ? sizes[t] : 1000;
    assert_int_equal(m.param_count, rows * 16 + (540677217LL - 33762577LL * 16));
    assert_int_equal(m.total_rows, (uint64_t)rows);
    dlrm_free(&m);
}

static void test_names_and_shapes(void **state) {
    dlrm m;
    plan_ok(&m, "criteo-kaggle", 0, 128);
    assert_int_equal(m.params.count, 26 + 2 * 4 + 2 * 3);
    assert_string_equal(m.params.entries[0].name, "emb_l.0.weight");
    assert_string_equal(m.params.entries[25].name, "emb_l.25.weight");
    assert_string_equal(m.params.entries[26].name, "bot_l.0.weight");
    assert_string_equal(m.params.entries[27].name, "bot_l.0.bias");
    assert_string_equal(m.params.entries[m.params.count - 1].name, "top_l.4.bias");
    struct { const char *name; int ndim; int64_t d0, d1; } want[] = {
        {"emb_l.2.weight", 2, 10131227, 16}, {"emb_l.8.weight", 2, 3, 16}, {"bot_l.0.weight", 2, 512, 13},
        {"bot_l.6.weight", 2, 16, 64},      {"bot_l.6.bias", 1, 16, 0},   {"top_l.0.weight", 2, 512, 367},
        {"top_l.2.weight", 2, 256, 512},    {"top_l.4.weight", 2, 1, 256}, {"top_l.4.bias", 1, 1, 0}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const param_entry *e = find_param(&m, want[i].name);
        if (!e) fail_msg("no parameter %s", want[i].name);
        assert_int_equal(e->ndim, want[i].ndim);
        assert_int_equal(e->shape[0], want[i].d0);
        if (e->ndim == 2) assert_int_equal(e->shape[1], want[i].d1);
    }
    assert_null(find_param(&m, "bot_l.1.weight")); /* odd indices are the ReLUs */
    dlrm_free(&m);
    plan_ok(&m, "criteo-terabyte", 40000000, 2048);
    assert_non_null(find_param(&m, "top_l.8.bias"));
    assert_null(find_param(&m, "top_l.10.weight"));
    assert_int_equal(find_param(&m, "bot_l.4.weight")->shape[0], 128);
    assert_int_equal(find_param(&m, "emb_l.0.weight")->shape[0], 39884406);
    dlrm_free(&m);
}

/* The XL preset: Terabyte capped at 10M rows, batch 2048 (about 28 GB of FP32 tables). */
static void test_xl_footprint(void **state) {
    dlrm m;
    plan_ok(&m, "criteo-terabyte", 10000000, 2048);
    const int64_t *sizes = dlrm_table_sizes("criteo-terabyte");
    double tables = 0;
    for (int t = 0; t < 26; t++) tables += (double)(sizes[t] < 10000000 ? sizes[t] : 10000000) * 128 * 4;
    dlrm_footprint f = dlrm_footprint_of(&m);
    printf("XL: tables %.3f GB, planned total %.3f GB (dense %.1f MiB, activations %.1f MiB, scratch %.1f MiB)\n",
           tables / 1e9, f.total / 1e9, f.parameters / 1048576.0, f.activations / 1048576.0, f.scratch / 1048576.0);
    expect_lt(fabs((double)f.embeddings - tables), 1);
    expect_ge(f.total, tables); expect_lt(f.total, tables * 1.10);
    expect_gt(tables, 27e9); expect_lt(tables, 28e9);
    dlrm_free(&m);
}

static void test_config_errors(void **state) {
    dlrm_config c;
    char err[512];
    assert_int_equal(dlrm_config_named(&c, "criteo-mini", 0, 8, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "criteo-kaggle or criteo-terabyte"));
    assert_int_equal(dlrm_config_named(&c, "criteo-kaggle", -5, 8, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "max_rows"));
    assert_int_equal(dlrm_config_named(&c, "criteo-kaggle", 0, 8, 0, err, sizeof err), 0);
    dlrm_config bad = c;
    bad.bottom[bad.bottom_layers] = 32;
    assert_int_equal(dlrm_config_check(&bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "bottom MLP ends in 32"));
    bad = c;
    bad.top[0] = 100;
    assert_int_equal(dlrm_config_check(&bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "interaction's 367"));
    bad = c;
    bad.rows[3] = 0;
    assert_int_equal(dlrm_config_check(&bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "table 3 has 0 rows"));
    bad = c;
    for (int t = 0; t < 26; t++) bad.rows[t] = INT32_MAX; /* 26 x 2^31 rows: beyond uint32 row ids */
    assert_int_equal(dlrm_config_check(&bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "--max-rows"));
    bad = c;
    bad.batch = 0;
    assert_int_equal(dlrm_config_check(&bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "batch 0"));
}

static void test_input_layout(void **state) {
    dlrm_config c;
    char err[512];
    assert_int_equal(dlrm_config_named(&c, "criteo-kaggle", 1000, 10, 0, err, sizeof err), 0);
    size_t offsets[4];
    dlrm_input_offsets(&c, offsets);
    /* dense 10 x 13 x 4 = 520 -> 768; indices 10 x 26 x 4 = 1040 -> 1280; labels 40 -> 256 */
    assert_int_equal(offsets[0], 0);
    assert_int_equal(offsets[1], 768);
    assert_int_equal(offsets[2], 768 + 1280);
    assert_int_equal(offsets[3], 0);
    assert_int_equal(dlrm_input_bytes(&c), 768 + 1280 + 256);
    char block[4096];
    dlrm_input in = dlrm_input_at(&c, block);
    assert_ptr_equal(in.indices, block + 768);
    assert_null(in.offsets);
    c.bag_capacity = 100; /* bags: indices hold the capacity, offsets follow the labels */
    dlrm_input_offsets(&c, offsets);
    assert_int_equal(offsets[2], 768 + 512);
    assert_int_equal(offsets[3], 768 + 512 + 256);
    assert_int_equal(dlrm_input_bytes(&c), 768 + 512 + 256 + 1280); /* 261 x 4 = 1044 -> 1280 */
}

static void test_hash_index(void **state) {
    /* --max-rows maps an index to index mod rows, Python's modulo (negatives wrap) */
    assert_int_equal(dlrm_hash_index(5, 10), 5);
    assert_int_equal(dlrm_hash_index(10, 10), 0);
    assert_int_equal(dlrm_hash_index(1234567, 1000), 567);
    assert_int_equal(dlrm_hash_index(-1, 10), 9);
    assert_int_equal(dlrm_hash_index(-10, 10), 0);
    assert_int_equal(dlrm_hash_index(INT32_MAX, 3), INT32_MAX % 3);
    assert_int_equal(dlrm_hash_index(7, 1), 0);
    assert_int_equal(dlrm_row_bits(1), 1);
    assert_int_equal(dlrm_row_bits(2), 2);
    assert_int_equal(dlrm_row_bits(255), 8);
    assert_int_equal(dlrm_row_bits(256), 9);
    assert_int_equal(dlrm_row_bits(187767399), 28);
}

/* The reference's LRPolicyScheduler, re-stated directly: its counter s = step + 1. */
static double reference_lr(double base, long w, long start, long d, long step) {
    double last = base;
    for (long s = 1; s <= step + 1; s++) {
        if (s < w) last = base * (1.0 - (double)(w - s) / w);
        else if (start <= s && s < start + d) {
            double scale = pow((double)(d - (s - start)) / d, 2);
            last = base * scale > 1e-7 ? base * scale : 1e-7;
        } else if (d == 0) last = base;
        /* else: the last value holds */
    }
    return last;
}

static void test_lr_policy(void **state) {
    struct { float base; long w, start, d; } cases[] = {
        {1.0f, 0, 0, 0}, {1.0f, 10, 0, 0}, {2.0f, 10, 10, 20}, {0.5f, 8, 30, 40}, {1.0f, 5, 5, 3}, {24.0f, 2750, 49315, 27772}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        dlrm_lr_policy p = {cases[i].base, cases[i].w, cases[i].start, cases[i].d};
        long horizon = cases[i].start + cases[i].d + 50 + cases[i].w;
        for (long step = 0; step < horizon; step += step < 200 ? 1 : 97) {
            double want = reference_lr(cases[i].base, cases[i].w, cases[i].start, cases[i].d, step);
            double got = dlrm_lr_at(&p, step);
            if (fabs(got - want) > 1e-6 * (fabs(want) + 1e-7))
                fail_msg("case %zu step %ld: lr %.9g, the reference's %.9g", i, step, got, want);
        }
    }
    dlrm_lr_policy warm = {1.0f, 4, 0, 0};
    expect_lt(fabsf(dlrm_lr_at(&warm, 0) - 0.25f), 1e-7f); /* first step: s = 1 */
    expect_lt(fabsf(dlrm_lr_at(&warm, 3) - 1.0f), 1e-7f);
}

static void test_auc(void **state) {
    float perfect_s[] = {0.1f, 0.2f, 0.8f, 0.9f}, perfect_l[] = {0, 0, 1, 1};
    expect_lt(fabs(dlrm_roc_auc(perfect_s, perfect_l, 4) - 1.0), 1e-12);
    float reversed_l[] = {1, 1, 0, 0};
    expect_lt(fabs(dlrm_roc_auc(perfect_s, reversed_l, 4) - 0.0), 1e-12);
    /* all tied: one half */
    float tied_s[] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, tied_l[] = {1, 0, 1, 0, 0};
    expect_lt(fabs(dlrm_roc_auc(tied_s, tied_l, 5) - 0.5), 1e-12);
    /* sklearn.metrics.roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) = 0.75 */
    float s1[] = {0.1f, 0.4f, 0.35f, 0.8f}, l1[] = {0, 0, 1, 1};
    expect_lt(fabs(dlrm_roc_auc(s1, l1, 4) - 0.75), 1e-12);
    /* a tie across classes counts one half: pairs (pos 0.5 vs neg 0.5) = 0.5, (pos 0.5 vs neg 0.2) = 1,
     * (pos 0.9 vs both) = 2 -> (0.5 + 1 + 2) / 4 = 0.875 */
    float s2[] = {0.5f, 0.5f, 0.2f, 0.9f}, l2[] = {1, 0, 0, 1};
    expect_lt(fabs(dlrm_roc_auc(s2, l2, 4) - 0.875), 1e-12);
    /* brute force over all pairs on random scores with many ties */
    uint64_t rng = 99;
    enum { N = 500 };
    float s[N], l[N];
    for (int i = 0; i < N; i++) {
        s[i] = (float)(test_rand_u64(&rng) % 20) / 20.0f;
        l[i] = (float)(test_rand_u64(&rng) % 3 == 0);
    }
    double pairs = 0, wins = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            if (l[i] > 0.5f && l[j] < 0.5f) {
                pairs++;
                wins += s[i] > s[j] ? 1.0 : s[i] == s[j] ? 0.5 : 0.0;
            }
    double auc = dlrm_roc_auc(s, l, N);
    printf("AUC of %d tied random scores: %.6f, brute force %.6f\n", N, auc, wins / pairs);
    expect_lt(fabs(auc - wins / pairs), 1e-12);
    /* one class only: undefined */
    float ones[] = {1, 1, 1};
    assert_true(isnan(dlrm_roc_auc(perfect_s, ones, 3)));
    assert_true(isnan(dlrm_roc_auc(perfect_s, perfect_l, 0)));
    /* NaN scores rank lowest */
    float nan_s[] = {NAN, 0.3f, 0.6f}, nan_l[] = {1, 0, 1};
    expect_lt(fabs(dlrm_roc_auc(nan_s, nan_l, 3) - 0.5), 1e-12);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameter_counts), cmocka_unit_test(test_names_and_shapes),
        cmocka_unit_test(test_xl_footprint),     cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_input_layout),     cmocka_unit_test(test_hash_index),
        cmocka_unit_test(test_lr_policy),        cmocka_unit_test(test_auc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
