/* EfficientNetV2-S on the CPU: built against a planning arena (no GPU), its parameter count equals
 * timm's efficientnetv2_s (1000 and 10 classes), its state_dict has timm's 782 names in timm's
 * order with timm's shapes (a sample of every module kind is checked), drop path changes no
 * parameter, bad configurations are refused with a message, and `train --dry-run` reports the
 * same count. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "models/core/model.h"
#include "models/model_build.h"
#include "tests/support/testutil.h"

static model *plan(int classes, float drop_path, arena *a) {
    model_config config = {.name = "efficientnetv2_s", .batch = 8, .image_size = 64, .in_channels = 3,
                           .classes = classes, .seed = 1, .drop_path = drop_path};
    char err[256] = "";
    arena_plan(a);
    model *m = model_build(&config, a, err, sizeof err);
    if (!m) fail_msg("building efficientnetv2_s: %s", err);
    return m;
}

static const param_entry *find(const model *m, const char *name) {
    for (int i = 0; i < m->params.count; i++)
        if (!strcmp(m->params.entries[i].name, name)) return &m->params.entries[i];
    return NULL;
}

static void test_parameter_counts_match_timm(void **state) {
    struct { int classes; int64_t params; } cases[] = {{1000, 21458488}, {10, 20190298}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        arena a;
        model *m = plan(cases[i].classes, 0.0f, &a);
        int64_t n = model_param_count(m);
        printf("efficientnetv2_s, %d classes: %lld parameters (timm: %lld), %d state_dict entries\n",
               cases[i].classes, (long long)n, (long long)cases[i].params, m->params.count);
        assert_int_equal(n, cases[i].params);
        /* float32 parameters, each tensor rounded up to 256 bytes */
        size_t bytes = a.used[ARENA_WEIGHTS] + a.used[ARENA_NO_DECAY];
        expect_ge(bytes, (size_t)n * 4); expect_lt(bytes, (size_t)n * 4 + (size_t)m->params.count * 256);
        expect_gt(m->flops_per_step_forward, 0);
        expect_gt(a.used[ARENA_ACTIVATIONS], 0); expect_gt(a.used[ARENA_BUFFERS], 0);
        model_free(m);
    }
}

static void test_names_and_shapes_match_timm(void **state) {
    arena a;
    model *m = plan(1000, 0.0f, &a);
    /* 6 stem + 2 x 6 ConvBnAct + 8 x 12 FusedMBConv + 30 x 22 MBConv + 6 head + 2 classifier */
    assert_int_equal(m->params.count, 782);
    assert_string_equal(m->params.entries[0].name, "conv_stem.weight");
    assert_string_equal(m->params.entries[m->params.count - 1].name, "classifier.bias");
    for (int i = 0; i < m->params.count; i++)
        for (int j = i + 1; j < m->params.count; j++)
            if (!strcmp(m->params.entries[i].name, m->params.entries[j].name))
                fail_msg("duplicate parameter name %s", m->params.entries[i].name);
    struct { const char *name; int ndim; int64_t shape[4]; int krsc; param_kind kind; } want[] = {
        {"conv_stem.weight", 4, {24, 3, 3, 3}, 1, PARAM_WEIGHT},
        {"bn1.weight", 1, {24}, 0, PARAM_NO_DECAY},
        {"bn1.running_var", 1, {24}, 0, PARAM_BUFFER},
        {"bn1.num_batches_tracked", 0, {0}, 0, PARAM_COUNTER},
        {"blocks.0.0.conv.weight", 4, {24, 24, 3, 3}, 1, PARAM_WEIGHT},
        {"blocks.0.1.bn1.bias", 1, {24}, 0, PARAM_NO_DECAY},
        {"blocks.1.0.conv_exp.weight", 4, {96, 24, 3, 3}, 1, PARAM_WEIGHT},
        {"blocks.1.0.bn1.running_mean", 1, {96}, 0, PARAM_BUFFER},
        {"blocks.1.0.conv_pwl.weight", 4, {48, 96, 1, 1}, 1, PARAM_WEIGHT},
        {"blocks.1.0.bn2.weight", 1, {48}, 0, PARAM_NO_DECAY},
        {"blocks.1.3.conv_exp.weight", 4, {192, 48, 3, 3}, 1, PARAM_WEIGHT},
        {"blocks.2.3.conv_pwl.weight", 4, {64, 256, 1, 1}, 1, PARAM_WEIGHT},
        {"blocks.3.0.conv_pw.weight", 4, {256, 64, 1, 1}, 1, PARAM_WEIGHT},
        {"blocks.3.0.bn1.weight", 1, {256}, 0, PARAM_NO_DECAY},
        {"blocks.3.0.conv_dw.weight", 4, {256, 1, 3, 3}, 0, PARAM_WEIGHT},
        {"blocks.3.0.bn2.num_batches_tracked", 0, {0}, 0, PARAM_COUNTER},
        {"blocks.3.0.se.conv_reduce.weight", 4, {16, 256, 1, 1}, 0, PARAM_WEIGHT},
        {"blocks.3.0.se.conv_reduce.bias", 1, {16}, 0, PARAM_NO_DECAY},
        {"blocks.3.0.se.conv_expand.weight", 4, {256, 16, 1, 1}, 0, PARAM_WEIGHT},
        {"blocks.3.0.se.conv_expand.bias", 1, {256}, 0, PARAM_NO_DECAY},
        {"blocks.3.0.conv_pwl.weight", 4, {128, 256, 1, 1}, 1, PARAM_WEIGHT},
        {"blocks.3.0.bn3.running_var", 1, {128}, 0, PARAM_BUFFER},
        {"blocks.3.5.se.conv_reduce.weight", 4, {32, 512, 1, 1}, 0, PARAM_WEIGHT},
        {"blocks.4.0.conv_dw.weight", 4, {768, 1, 3, 3}, 0, PARAM_WEIGHT},
        {"blocks.4.0.se.conv_reduce.weight", 4, {32, 768, 1, 1}, 0, PARAM_WEIGHT},
        {"blocks.4.8.se.conv_expand.weight", 4, {960, 40, 1, 1}, 0, PARAM_WEIGHT},
        {"blocks.5.0.conv_pw.weight", 4, {960, 160, 1, 1}, 1, PARAM_WEIGHT},
        {"blocks.5.14.se.conv_reduce.weight", 4, {64, 1536, 1, 1}, 0, PARAM_WEIGHT},
        {"blocks.5.14.conv_pwl.weight", 4, {256, 1536, 1, 1}, 1, PARAM_WEIGHT},
        {"blocks.5.14.bn3.bias", 1, {256}, 0, PARAM_NO_DECAY},
        {"conv_head.weight", 4, {1280, 256, 1, 1}, 1, PARAM_WEIGHT},
        {"bn2.running_mean", 1, {1280}, 0, PARAM_BUFFER},
        {"classifier.weight", 2, {1000, 1280}, 0, PARAM_WEIGHT},
        {"classifier.bias", 1, {1000}, 0, PARAM_NO_DECAY},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        const param_entry *e = find(m, want[i].name);
        if (!e) fail_msg("parameter %s is missing", want[i].name);
        int same = e->ndim == want[i].ndim && e->krsc == want[i].krsc && e->kind == want[i].kind;
        for (int d = 0; same && d < e->ndim; d++) same = e->shape[d] == want[i].shape[d];
        if (!same)
            fail_msg("%s: ndim %d shape [%lld, %lld, %lld, %lld] krsc %d kind %d; expected ndim %d shape "
                     "[%lld, %lld, %lld, %lld] krsc %d kind %d", want[i].name, e->ndim, (long long)e->shape[0],
                     (long long)e->shape[1], (long long)e->shape[2], (long long)e->shape[3], e->krsc, e->kind,
                     want[i].ndim, (long long)want[i].shape[0], (long long)want[i].shape[1],
                     (long long)want[i].shape[2], (long long)want[i].shape[3], want[i].krsc, want[i].kind);
    }
    /* no ConvBnAct names where there are none, and the stages' block counts */
    assert_null(find(m, "blocks.0.0.conv_exp.weight"));
    assert_null(find(m, "blocks.0.2.conv.weight"));
    assert_null(find(m, "blocks.1.4.conv_exp.weight"));
    assert_null(find(m, "blocks.5.15.conv_pw.weight"));
    assert_null(find(m, "blocks.6.0.conv_pw.weight"));
    /* timm's init: depthwise fan_out is 3 * 3 * C / C; SE convs fan_out = their out channels; the
     * classifier U(+-1/sqrt(out_features)) */
    assert_int_equal(find(m, "blocks.3.0.conv_dw.weight")->fan, 9);
    assert_int_equal(find(m, "blocks.3.0.conv_dw.weight")->init, PARAM_INIT_KAIMING_FAN_OUT);
    assert_int_equal(find(m, "blocks.3.0.se.conv_reduce.weight")->fan, 16);
    assert_int_equal(find(m, "blocks.1.0.conv_exp.weight")->fan, 96 * 9);
    assert_int_equal(find(m, "classifier.weight")->init, PARAM_INIT_UNIFORM_FAN_IN);
    assert_int_equal(find(m, "classifier.weight")->fan, 1000);
    assert_int_equal(find(m, "classifier.bias")->init, PARAM_INIT_NONE);
    assert_int_equal(find(m, "blocks.3.0.se.conv_expand.bias")->init, PARAM_INIT_NONE);
    model_free(m);
}

static void test_drop_path_keeps_parameters(void **state) {
    arena plain, dropped;
    model *a = plan(10, 0.0f, &plain), *b = plan(10, 0.2f, &dropped);
    assert_int_equal(model_param_count(a), model_param_count(b));
    assert_int_equal(a->params.count, b->params.count);
    /* the dropped branches keep their own buffers, and the masks take scratch */
    expect_gt(dropped.used[ARENA_ACTIVATIONS], plain.used[ARENA_ACTIVATIONS]);
    expect_gt(dropped.used[ARENA_SCRATCH], plain.used[ARENA_SCRATCH]);
    model_free(a);
    model_free(b);
}

static void expect_refused(model_config config, const char *needle) {
    arena a;
    char err[256] = "";
    arena_plan(&a);
    model *m = model_build(&config, &a, err, sizeof err);
    if (m || !strstr(err, needle)) fail_msg("config refused with '%s', expected a message with '%s'", err, needle);
}

static void test_bad_configs_are_refused(void **state) {
    model_config ok = {.name = "efficientnetv2_s", .batch = 8, .image_size = 64, .in_channels = 3, .classes = 10};
    model_config c = ok;
    c.drop_path = 1.0f;
    expect_refused(c, "drop path");
    c = ok, c.image_size = 4;
    expect_refused(c, "impossible sizes");
    c = ok, c.classes = 0;
    expect_refused(c, "impossible sizes");
    c = ok, snprintf(c.name, sizeof c.name, "efficientnetv2_m");
    expect_refused(c, "efficientnetv2_s");
    assert_true(model_known("efficientnetv2_s"));
    assert_non_null(strstr(model_names(), "efficientnetv2_s"));
}

static char out[1 << 16], err[1 << 16];

static void test_train_dry_run(void **state) {
    char *argv[] = {(char *)test_binary("train"), "--model", "efficientnetv2_s", "--classes", "1000",
                    "--image-size", "64", "--batch", "128", "--data", "imagenet64", "--dry-run", "--json", NULL};
    int rc = test_run(argv, out, sizeof out, err, sizeof err);
    if (rc != 0) fail_msg("train --dry-run exited %d: %s", rc, err);
    cJSON *plan_json = cJSON_Parse(out);
    assert_non_null(plan_json);
    double params = cJSON_GetObjectItem(plan_json, "params")->valuedouble;
    double flops = cJSON_GetObjectItem(plan_json, "flops_per_step")->valuedouble;
    printf("train --dry-run: %.0f parameters, %.3g FLOPs per step at 64x64, batch 128\n", params, flops);
    expect_eq(params, 21458488.0);
    expect_gt(flops, 0);
    cJSON_Delete(plan_json);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameter_counts_match_timm), cmocka_unit_test(test_names_and_shapes_match_timm),
        cmocka_unit_test(test_drop_path_keeps_parameters), cmocka_unit_test(test_bad_configs_are_refused),
        cmocka_unit_test(test_train_dry_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
