/* The committed parity references (tests/parity/reference/, read by gpu_model_parity and
 * gpu_dlrm_parity) checked where no GPU is: the C side of the rule (tests/support/parity_rule.h) gives the
 * values, images, labels and sketches the Python script wrote, bit for bit (rule_check.safetensors);
 * every reference opens, its labels are the rule's, and its table's rows are exactly the tensors the
 * suite's model of that shape has (the digest over their names), so the GPU test compares what it
 * means to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "models/dlrm.h"
#include "models/session.h"
#include "tests/support/parity_rule.h"
#include "tests/support/testutil.h"

#define REFERENCE SUITE_SOURCE_DIR "/tests/parity/reference"

static void open_ok(st_file *f, const char *path) {
    char err[1024];
    if (st_open(f, path, err, sizeof err) != 0) fail_msg("%s", err);
}

static const void *data_of(const st_file *f, const char *name, st_dtype dtype, size_t count) {
    const st_tensor *t = st_find(f, name);
    if (!t) fail_msg("no tensor '%s'", name);
    assert_int_equal(t->dtype, dtype);
    assert_int_equal(t->nbytes, count * st_dtype_size(dtype));
    return st_data(f, t);
}

static void test_rule_matches_the_script(void **state) {
    st_file f;
    open_ok(&f, REFERENCE "/rule_check.safetensors");
    static const struct { const char *name; int ndim; int64_t shape[4]; } cases[] = {
        {"a.running_var", 1, {5}}, {"b.running_mean", 1, {5}}, {"c.weight", 4, {3, 4, 1, 2}},
        {"d.gamma_1", 1, {5}},     {"e.weight", 1, {5}},       {"f.bias", 1, {5}}};
    float values[24];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char key[64];
        size_t n = 1;
        for (int d = 0; d < cases[i].ndim; d++) n *= (size_t)cases[i].shape[d];
        snprintf(key, sizeof key, "values.%s", cases[i].name);
        parity_values(cases[i].name, cases[i].ndim, cases[i].shape, values);
        const float *want = data_of(&f, key, ST_F32, n);
        for (size_t k = 0; k < n; k++) expect_eq(values[k], want[k]);
    }
    float input[48];
    parity_input(input, 48);
    const float *want_input = data_of(&f, "input", ST_F32, 48);
    for (int k = 0; k < 48; k++) expect_eq(input[k], want_input[k]);
    int32_t labels[16];
    parity_labels(labels, 16, 10);
    assert_memory_equal(labels, data_of(&f, "labels", ST_I32, 16), sizeof labels);
    double sketch[PARITY_SKETCH_BUCKETS];
    parity_values("c.weight", 4, cases[2].shape, values);
    parity_sketch("grad.c.weight", values, 24, sketch);
    const double *want_sketch = data_of(&f, "sketch", ST_F64, PARITY_SKETCH_BUCKETS);
    for (int b = 0; b < PARITY_SKETCH_BUCKETS; b++) expect_near(sketch[b], want_sketch[b], 1e-12);
    st_close(&f);
}

/* The keys the GPU test builds for a model's parameter table, into a table opened on ref. */
static void expect_table_of(const st_file *ref, const param_table *params, int with_buffers, const char *path) {
    char **keys = malloc((size_t)params->count * 2 * sizeof *keys), err[512];
    int count = 0;
    for (int i = 0; i < params->count; i++) {
        const param_entry *e = &params->entries[i];
        if (e->kind == PARAM_COUNTER || (!with_buffers && strncmp(e->name, "emb_l.", 6) == 0)) continue;
        const char *kinds[2] = {e->kind == PARAM_BUFFER ? "running" : "grad", e->kind == PARAM_BUFFER ? NULL : "updated"};
        for (int k = 0; k < 2 && kinds[k]; k++) {
            keys[count] = malloc(PARAM_NAME_MAX + 16);
            snprintf(keys[count++], PARAM_NAME_MAX + 16, "%s.%s", kinds[k], e->name);
        }
    }
    parity_table t;
    int rc = parity_table_open(&t, ref, keys, count, err, sizeof err);
    for (int i = 0; i < count; i++) free(keys[i]);
    free(keys);
    if (rc != 0) fail_msg("%s: %s", path, err);
    for (int r = 0; r < t.rows; r++) expect_ge(t.torch_err[r], 0); /* PyTorch's own error, measured (exact: 0) */
    parity_table_free(&t);
}

static void check_vision(const char *precision, const char *name) {
    char path[1024], err[512];
    snprintf(path, sizeof path, REFERENCE "/%s/%s_ref.safetensors", precision, name);
    st_file ref;
    open_ok(&ref, path);
    const int32_t *shape = data_of(&ref, "input_shape", ST_I32, 4);
    const st_tensor *logits = st_find(&ref, "logits");
    assert_non_null(logits);
    model_config config = {.batch = shape[0], .image_size = shape[1], .in_channels = 3, .classes = (int)logits->shape[1]};
    const st_tensor *patch = st_find(&ref, "patch_size");
    if (patch) config.patch_size = (int)((const float *)st_data(&ref, patch))[0];
    snprintf(config.name, sizeof config.name, "%s", name);
    session s;
    if (session_plan(&s, &config, err, sizeof err) != 0) fail_msg("%s: %s", path, err);
    int32_t labels[64];
    assert_true(config.batch <= 64);
    parity_labels(labels, config.batch, config.classes);
    assert_memory_equal(labels, data_of(&ref, "labels", ST_I32, (size_t)config.batch), config.batch * sizeof *labels);
    expect_table_of(&ref, &s.model->params, 1, path);
    session_end(&s);
    st_close(&ref);
}

static void test_vision_references(void **state) {
    const char *models[] = {"resnet26", "efficientnetv2_s", "cait_xxs24"};
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < 3; i++) check_vision(p ? "bf16" : "fp32", models[i]);
}

static void test_dlrm_reference(void **state) {
    const char *path = REFERENCE "/fp32/dlrm_ref.safetensors";
    char err[512];
    st_file ref;
    open_ok(&ref, path);
    const st_tensor *dense = st_find(&ref, "dense");
    assert_non_null(dense);
    int64_t cap = *(const int32_t *)data_of(&ref, "max_rows", ST_I32, 1);
    dlrm_config c;
    if (dlrm_config_named(&c, "criteo-kaggle", cap, (int)dense->shape[0], 0, err, sizeof err) != 0) fail_msg("%s", err);
    dlrm m;
    if (dlrm_plan(&m, &c, 0, err, sizeof err) != 0) fail_msg("%s", err);
    expect_table_of(&ref, &m.params, 0, path);
    dlrm_free(&m);
    st_close(&ref);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_matches_the_script),
        cmocka_unit_test(test_vision_references),
        cmocka_unit_test(test_dlrm_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
