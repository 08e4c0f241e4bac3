/* CaiT-XXS24 built against a planning arena (no GPU): parameter counts equal timm's
 * (sum(p.numel() for p in timm.create_model('cait_xxs24_224', num_classes=K).parameters())),
 * state_dict names and shapes, which parameters take weight decay, the patch-size option
 * (pos_embed shrinks with the token count), the bad configurations refused with a message, and
 * the forward FLOPs (timm/fvcore: about 2.5 GMACs per 224x224 image). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "models/core/model.h"
#include "models/model_build.h"
#include "tests/support/testutil.h"

static model *build(int image, int patch, int classes, int batch, arena *plan, char *err, size_t err_size) {
    model_config config = {.name = "cait_xxs24", .batch = batch, .image_size = image, .in_channels = 3,
                           .classes = classes, .seed = 1, .patch_size = patch};
    arena_plan(plan);
    return model_build(&config, plan, err, err_size);
}

static const param_entry *find(const model *m, const char *name) {
    for (int i = 0; i < m->params.count; i++)
        if (!strcmp(m->params.entries[i].name, name)) return &m->params.entries[i];
    fail_msg("no parameter named %s", name);
    return NULL;
}

static void expect_shape(const model *m, const char *name, param_kind kind, int ndim, int64_t d0, int64_t d1,
                         int64_t d2, int64_t d3) {
    const param_entry *e = find(m, name);
    int64_t want[4] = {d0, d1, d2, d3};
    if (e->ndim != ndim) fail_msg("%s: %d dimensions, expected %d", name, e->ndim, ndim);
    for (int i = 0; i < ndim; i++)
        if (e->shape[i] != want[i]) fail_msg("%s: dimension %d is %lld, expected %lld", name, i, (long long)e->shape[i], (long long)want[i]);
    if (e->kind != kind) fail_msg("%s: kind %d, expected %d", name, (int)e->kind, (int)kind);
}

static void test_counts(void **state) {
    struct { int image, patch, classes; int64_t want; } cases[] = {
        {224, 16, 1000, 11956264}, {224, 16, 10, 11765194}, {224, 0, 10, 11765194},
        /* 64 tokens instead of 196: pos_embed loses 132 x 192; the patch conv is 192 x 3 x 4 x 4 */
        {32, 4, 10, 11765194 - (196 - 64) * 192 - 192 * 3 * (16 * 16 - 4 * 4)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        arena plan;
        char err[256] = "";
        model *m = build(cases[i].image, cases[i].patch, cases[i].classes, 8, &plan, err, sizeof err);
        if (!m) fail_msg("building cait_xxs24 at %d/%d: %s", cases[i].image, cases[i].patch, err);
        int64_t n = model_param_count(m);
        printf("cait_xxs24 %dx%d patch %d, %d classes: %lld parameters (timm %lld)\n", cases[i].image,
               cases[i].image, cases[i].patch, cases[i].classes, (long long)n, (long long)cases[i].want);
        assert_int_equal(n, cases[i].want);
        /* the arena's trainable regions hold at least every parameter (rounded up per tensor) */
        size_t decay = 0, no_decay = 0;
        for (int j = 0; j < m->params.count; j++) {
            const param_entry *e = &m->params.entries[j];
            if (e->kind == PARAM_WEIGHT) decay += (size_t)param_numel(e);
            else if (e->kind == PARAM_NO_DECAY) no_decay += (size_t)param_numel(e);
            else fail_msg("%s: CaiT has no buffers or counters", e->name);
        }
        expect_ge(plan.used[ARENA_WEIGHTS], decay * sizeof(float));
        expect_lt(plan.used[ARENA_WEIGHTS], decay * sizeof(float) + 256u * m->params.count);
        expect_ge(plan.used[ARENA_NO_DECAY], no_decay * sizeof(float));
        model_free(m);
    }
}

static void test_names_and_shapes(void **state) {
    arena plan;
    char err[256] = "";
    model *m = build(224, 16, 1000, 4, &plan, err, sizeof err);
    assert_non_null(m);
    /* timm's state_dict: 4 top-level tensors, 18 per block, 18 per class-attention block, norm, head */
    assert_int_equal(m->params.count, 4 + 24 * 18 + 2 * 18 + 4);
    assert_string_equal(m->params.entries[0].name, "cls_token");
    assert_string_equal(m->params.entries[m->params.count - 1].name, "head.bias");
    for (int i = 0; i < m->params.count; i++)
        for (int j = i + 1; j < m->params.count; j++)
            if (!strcmp(m->params.entries[i].name, m->params.entries[j].name)) fail_msg("%s appears twice", m->params.entries[i].name);
    expect_shape(m, "cls_token", PARAM_NO_DECAY, 3, 1, 1, 192, 0);
    expect_shape(m, "pos_embed", PARAM_NO_DECAY, 3, 1, 196, 192, 0);
    expect_shape(m, "patch_embed.proj.weight", PARAM_WEIGHT, 4, 192, 3, 16, 16);
    assert_int_equal(find(m, "patch_embed.proj.weight")->krsc, 1);
    expect_shape(m, "patch_embed.proj.bias", PARAM_NO_DECAY, 1, 192, 0, 0, 0);
    expect_shape(m, "blocks.0.norm1.weight", PARAM_NO_DECAY, 1, 192, 0, 0, 0);
    expect_shape(m, "blocks.0.attn.qkv.weight", PARAM_WEIGHT, 2, 576, 192, 0, 0);
    expect_shape(m, "blocks.0.attn.qkv.bias", PARAM_NO_DECAY, 1, 576, 0, 0, 0);
    expect_shape(m, "blocks.0.attn.proj_l.weight", PARAM_WEIGHT, 2, 4, 4, 0, 0);
    expect_shape(m, "blocks.0.attn.proj_l.bias", PARAM_NO_DECAY, 1, 4, 0, 0, 0);
    expect_shape(m, "blocks.11.attn.proj_w.weight", PARAM_WEIGHT, 2, 4, 4, 0, 0);
    expect_shape(m, "blocks.11.attn.proj.weight", PARAM_WEIGHT, 2, 192, 192, 0, 0);
    expect_shape(m, "blocks.5.gamma_1", PARAM_NO_DECAY, 1, 192, 0, 0, 0);
    expect_shape(m, "blocks.23.gamma_2", PARAM_NO_DECAY, 1, 192, 0, 0, 0);
    expect_shape(m, "blocks.23.mlp.fc1.weight", PARAM_WEIGHT, 2, 768, 192, 0, 0);
    expect_shape(m, "blocks.23.mlp.fc2.weight", PARAM_WEIGHT, 2, 192, 768, 0, 0);
    expect_shape(m, "blocks.23.norm2.bias", PARAM_NO_DECAY, 1, 192, 0, 0, 0);
    expect_shape(m, "blocks_token_only.0.attn.k.weight", PARAM_WEIGHT, 2, 192, 192, 0, 0);
    expect_shape(m, "blocks_token_only.0.attn.v.bias", PARAM_NO_DECAY, 1, 192, 0, 0, 0);
    expect_shape(m, "blocks_token_only.1.attn.q.weight", PARAM_WEIGHT, 2, 192, 192, 0, 0);
    expect_shape(m, "blocks_token_only.1.attn.proj.bias", PARAM_NO_DECAY, 1, 192, 0, 0, 0);
    expect_shape(m, "blocks_token_only.1.gamma_1", PARAM_NO_DECAY, 1, 192, 0, 0, 0);
    expect_shape(m, "blocks_token_only.1.mlp.fc2.weight", PARAM_WEIGHT, 2, 192, 768, 0, 0);
    expect_shape(m, "norm.weight", PARAM_NO_DECAY, 1, 192, 0, 0, 0);
    expect_shape(m, "head.weight", PARAM_WEIGHT, 2, 1000, 192, 0, 0);
    expect_shape(m, "head.bias", PARAM_NO_DECAY, 1, 1000, 0, 0, 0);
    /* timm's init: trunc normal for Linear weights and the tokens, PyTorch's conv default for the stem */
    assert_int_equal(find(m, "blocks.3.attn.qkv.weight")->init, PARAM_INIT_TRUNC_NORMAL_002);
    assert_int_equal(find(m, "blocks.3.attn.proj_w.weight")->init, PARAM_INIT_TRUNC_NORMAL_002);
    assert_int_equal(find(m, "pos_embed")->init, PARAM_INIT_TRUNC_NORMAL_002);
    assert_int_equal(find(m, "cls_token")->init, PARAM_INIT_TRUNC_NORMAL_002);
    assert_int_equal(find(m, "patch_embed.proj.weight")->init, PARAM_INIT_UNIFORM_FAN_IN);
    assert_int_equal(find(m, "patch_embed.proj.weight")->fan, 3 * 16 * 16);
    assert_int_equal(find(m, "patch_embed.proj.bias")->init, PARAM_INIT_UNIFORM_FAN_IN);
    assert_int_equal(find(m, "blocks.3.attn.qkv.bias")->init, PARAM_INIT_NONE);

    double per_image = m->flops_per_step_forward / 4;
    printf("forward FLOPs per 224x224 image: %.3g (2 x multiply-adds)\n", per_image);
    expect_gt(per_image, 4.8e9); expect_lt(per_image, 5.4e9);
    model_free(m);

    m = build(224, 16, 1000, 128, &plan, err, sizeof err);
    assert_non_null(m);
    printf("batch 128 at 224/16: activations %.1f MiB, scratch %.1f MiB, parameters %.1f MiB\n",
           plan.used[ARENA_ACTIVATIONS] / 1048576.0, plan.used[ARENA_SCRATCH] / 1048576.0,
           (plan.used[ARENA_WEIGHTS] + plan.used[ARENA_NO_DECAY]) / 1048576.0);
    model_free(m);
}

static void test_refused(void **state) {
    arena plan;
    char err[256] = "";
    assert_true(model_known("cait_xxs24"));
    assert_null(build(30, 4, 10, 8, &plan, err, sizeof err));
    printf("image 30, patch 4: %s\n", err);
    assert_non_null(strstr(err, "not a multiple of the patch size 4"));
    assert_null(build(224, 300, 10, 8, &plan, err, sizeof err));
    assert_non_null(strstr(err, "patch size 300"));
    assert_null(build(224, 2, 10, 8, &plan, err, sizeof err));
    printf("image 224, patch 2: %s\n", err);
    assert_non_null(strstr(err, "tokens"));
    assert_null(build(224, 16, 10, 0, &plan, err, sizeof err));
    assert_non_null(strstr(err, "batch 0"));

    model_config config = {.name = "cait_xxs24", .batch = 8, .image_size = 224, .in_channels = 3, .classes = 10,
                           .drop_path = 0.1f};
    arena_plan(&plan);
    assert_null(model_build(&config, &plan, err, sizeof err));
    printf("drop_path 0.1: %s\n", err);
    assert_non_null(strstr(err, "drop_path"));
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_counts), cmocka_unit_test(test_names_and_shapes),
                                       cmocka_unit_test(test_refused)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
