/* --precision on the host (no GPU): names, which models build in bf16, the planned footprint of a
 * bf16 model (bfloat16 activations plus the bfloat16 weight and gradient copies), train's option
 * and its refusals, the mix override precision= and run_suite --precision reaching train's
 * arguments; and the host bfloat16 rounding the GPU tests' references use. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "models/catalog.h"
#include "models/session.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/plan/mix.h"
#include "tests/support/testutil.h"

/* The host rounding the bf16 GPU tests build their references on: ties to even, NaN kept. */
static void test_host_bf16_rounding(void **state) {
    (void)state;
    assert_int_equal(test_bf16_of(1.0f), 0x3f80);
    assert_int_equal(test_bf16_of(1.0f + 0x1p-8f), 0x3f80);      /* halfway, to the even 1.0 */
    assert_int_equal(test_bf16_of(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82); /* halfway, to the even 1 + 2^-6 */
    assert_int_equal(test_bf16_of(1.0f + 0x1p-8f + 0x1p-16f), 0x3f81); /* above halfway: up */
    assert_int_equal(test_bf16_of(-2.5f), 0xc020);
    assert_true(isnan(test_float_of_bf16(test_bf16_of(NAN))));
    assert_true(isinf(test_float_of_bf16(test_bf16_of(INFINITY))));
    expect_eq(test_float_of_bf16(0x3f81), 1.0f + 0x1p-7f);
}

static void test_names(void **state) {
    (void)state;
    precision_kind p = PRECISION_FP32;
    assert_int_equal(precision_parse("bf16", &p), 0);
    assert_int_equal(p, PRECISION_BF16);
    assert_int_equal(precision_parse("tf32", &p), 0);
    assert_int_equal(p, PRECISION_TF32);
    assert_int_equal(precision_parse("fp16", &p), -1);
    assert_int_equal(precision_parse(NULL, &p), -1);
    assert_string_equal(precision_name(PRECISION_FP32), "fp32");
    assert_true(catalog_runs(catalog_find("resnet50"), PRECISION_BF16));
    assert_true(catalog_runs(catalog_find("cait_xxs24"), PRECISION_BF16));
    assert_false(catalog_runs(catalog_find("dlrm"), PRECISION_BF16)); /* the recommender has no bf16 path */
    assert_false(catalog_runs(catalog_find("resnet"), PRECISION_BF16));
    char list[256];
    catalog_filter bf16 = CATALOG_ALL;
    bf16.precision = PRECISION_BF16;
    assert_non_null(strstr(catalog_list(list, sizeof list, bf16, ", "), "resnet152"));
    assert_int_equal(precision_find("BF16", 4), PRECISION_BF16);
    assert_int_equal(precision_find("bf1", 3), -1);
}

/* Planned bytes of each kind for resnet50 64x64/128 in a precision. */
static arena_footprint plan(precision_kind precision, arena *a) {
    model_config config = {.name = "resnet50", .batch = 128, .image_size = 64, .in_channels = 3, .classes = 1000,
                           .precision = precision};
    session s;
    char err[256];
    assert_int_equal(session_plan(&s, &config, err, sizeof err), 0);
    *a = s.plan;
    arena_footprint f = arena_footprint_of(&s.plan, 1);
    model_free(s.model);
    return f;
}

static void test_footprint(void **state) {
    (void)state;
    arena a32, a16;
    arena_footprint f32 = plan(PRECISION_TF32, &a32), f16 = plan(PRECISION_BF16, &a16);
    assert_false(a32.half_weights);
    assert_true(a16.half_weights);
    /* the bfloat16 copies: half the weight region each, counted with parameters and gradients */
    size_t copy = a16.used[ARENA_WEIGHTS] / 2;
    assert_int_equal(a16.used[ARENA_WEIGHTS], a32.used[ARENA_WEIGHTS]);
    assert_int_equal(f16.parameters, f32.parameters + copy);
    assert_int_equal(f16.gradients, f32.gradients + copy);
    assert_int_equal(f16.optimizer, f32.optimizer);
    /* activations: bfloat16, plus the bfloat16 input and dlogits; float input, logits, dlogits stay */
    expect_lt(f16.activations, f32.activations * 0.55);
    expect_lt(f16.total, f32.total);

    /* CaiT plans the bfloat16 copies too, and about half the activation bytes */
    model_config cait = {.name = "cait_xxs24", .batch = 8, .image_size = 32, .in_channels = 3, .classes = 10,
                         .patch_size = 4, .precision = PRECISION_BF16};
    session s;
    char err[256];
    assert_int_equal(session_plan(&s, &cait, err, sizeof err), 0);
    assert_true(s.plan.half_weights);
    size_t cait16 = s.plan.used[ARENA_ACTIVATIONS];
    model_free(s.model);
    cait.precision = PRECISION_TF32;
    assert_int_equal(session_plan(&s, &cait, err, sizeof err), 0);
    expect_lt(cait16, s.plan.used[ARENA_ACTIVATIONS] * 0.7);
    model_free(s.model);
}

static void test_train_option(void **state) {
    (void)state;
    char out[8192], err[4096];
    int rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--dry-run",
                             "--precision", "bf16", NULL);
    assert_int_equal(rc, 0);
    rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "dlrm", "--dry-run", "--precision",
                         "bf16", NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "resnet26"));
    rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--dry-run",
                         "--precision", "fp8", NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "--precision"));
}

static int has_pair(char **argv, const char *flag, const char *value) {
    for (int i = 0; argv[i] && argv[i + 1]; i++)
        if (!strcmp(argv[i], flag) && !strcmp(argv[i + 1], value)) return 1;
    return 0;
}

static void test_mix_override(void **state) {
    (void)state;
    mix m;
    char err[512], text[256];
    assert_int_equal(mix_parse(&m, "S+M[precision=BF16, steps=5]", err, sizeof err), 0);
    assert_false(m.jobs[0].precision_given);
    assert_true(m.jobs[1].precision_given);
    assert_int_equal(m.jobs[1].precision, PRECISION_BF16);
    mix_job_format(&m.jobs[1], text, sizeof text);
    assert_non_null(strstr(text, "precision=bf16"));
    mix again;
    assert_int_equal(mix_parse(&again, text, err, sizeof err), 0);
    assert_int_equal(again.jobs[0].precision, PRECISION_BF16);
    const run_request run = {.train_path = "train", .epochs = 2};
    char **argv = job_build_argv(&run, &m.jobs[1], JOB_ARGV_DRY_RUN, NULL);
    assert_true(has_pair(argv, "--precision", "bf16")); /* the footprint query sees it too */
    job_free_strv(argv);
    assert_int_equal(mix_parse(&m, "M[precision=fp16]", err, sizeof err), -1);
    assert_non_null(strstr(err, "tf32, fp32 or bf16"));
    /* a precision the job's model does not run in: the rule train applies (runner/train/train_rules.h),
       for the override and for run_suite --precision alike, before any job */
    assert_int_equal(mix_parse(&m, "S+XL[precision=bf16]", err, sizeof err), -1);
    assert_non_null(strstr(err, "--precision bf16 does not apply to dlrm"));
    char out[8192], run_err[4096];
    int rc = test_run_binary("run_suite", out, sizeof out, run_err, sizeof run_err, "--mode", "naive", "--mix", "S+XL",
                             "--precision", "bf16", "--dry-run", NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(run_err, "job XL: --precision bf16 does not apply to dlrm"));
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_host_bf16_rounding), cmocka_unit_test(test_names),
                                       cmocka_unit_test(test_footprint), cmocka_unit_test(test_train_option),
                                       cmocka_unit_test(test_mix_override)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
