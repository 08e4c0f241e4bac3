/* train's command line on the CPU: parameter counts against timm through --dry-run, the planned
 * footprint, and every kind of bad input rejected with exit code 2 and a message naming it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include <cuda_runtime.h>

#include "runner/train/jpeg_decoder.h"
#include "runner/train/train_options.h"
#include "tests/support/testutil.h"

static char out[1 << 16], err[1 << 16];

/* train with the NULL-terminated arguments; its output lands in out and err */
#define run_train(...) test_run_binary("train", out, sizeof out, err, sizeof err, __VA_ARGS__)

static double dry_run_params(const char *model, const char *classes, double *total_bytes) {
    int rc = run_train("--model", model, "--classes", classes, "--image-size", "224", "--batch", "32",
                       "--data", "imagenet", "--dry-run", "--json", NULL);
    assert_int_equal(rc, 0);
    cJSON *plan = cJSON_Parse(out);
    assert_non_null(plan);
    double params = cJSON_GetObjectItem(plan, "params")->valuedouble;
    cJSON *footprint = cJSON_GetObjectItem(plan, "footprint");
    assert_non_null(footprint);
    *total_bytes = cJSON_GetObjectItem(footprint, "total")->valuedouble;
    double parameters = cJSON_GetObjectItem(footprint, "parameters")->valuedouble;
    expect_ge(parameters, params * 4); expect_lt(parameters, params * 4 * 1.01); /* float32 + alignment */
    cJSON_Delete(plan);
    return params;
}

static void test_parameter_counts_match_timm(void **state) {
    struct { const char *model, *classes; double params; } cases[] = {
        {"resnet26", "1000", 15995176}, {"resnet26", "10", 13966666},
        {"resnet50", "1000", 25557032}, {"resnet50", "10", 23528522},
        {"resnet152", "1000", 60192808}, {"resnet152", "10", 58164298},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double total = 0;
        double params = dry_run_params(cases[i].model, cases[i].classes, &total);
        if (params != cases[i].params)
            fail_msg("%s with %s classes: %.0f parameters, timm has %.0f", cases[i].model, cases[i].classes,
                     params, cases[i].params);
        expect_gt(total, 4 * params); /* weights, gradients, momentum and activations */
    }
}

static void test_dry_run_human_readable(void **state) {
    assert_int_equal(run_train("--model", "resnet50", "--data", "imagenet64", "--dry-run", NULL), 0);
    assert_non_null(strstr(out, "25557032 parameters"));
    assert_non_null(strstr(out, "activations"));
}

static double dry_run_workspace(const char *model) {
    int rc = run_train("--model", model, "--image-size", "64", "--batch", "8", "--workspace-mb", "64", "--dry-run",
                       "--json", NULL);
    assert_int_equal(rc, 0);
    cJSON *plan = cJSON_Parse(out);
    assert_non_null(plan);
    double bytes = cJSON_GetObjectItem(cJSON_GetObjectItem(plan, "footprint"), "workspace")->valuedouble;
    cJSON_Delete(plan);
    return bytes;
}

/* A ResNet's weight-gradient lane holds a second cuDNN workspace (models/core/wgrad_lane.h): the plan
 * bounds it like the first, and drops it when SUITE_WGRAD_LANE=0 turns the lane off. */
static void test_dry_run_workspace_counts_the_lane(void **state) {
    const double mib = 1048576.0;
    assert_true(dry_run_workspace("resnet26") == (2 * 64 + 32) * mib);
    assert_true(dry_run_workspace("efficientnetv2_s") == (64 + 32) * mib);
    setenv("SUITE_WGRAD_LANE", "0", 1);
    double without = dry_run_workspace("resnet26");
    unsetenv("SUITE_WGRAD_LANE");
    expect_eq(without, (64 + 32) * mib);
}

static void expect_usage_error(const char *needle, const char *const *args) {
    char *argv[32] = {(char *)test_binary("train")};
    int argc = 1;
    while (args[argc - 1] && argc < 31) argv[argc] = (char *)args[argc - 1], argc++;
    argv[argc] = NULL;
    int rc = test_run(argv, out, sizeof out, err, sizeof err);
    if (rc != 2 || !strstr(err, needle))
        fail_msg("train %s %s ...: exit %d, stderr '%s' (expected 2 and '%s')", args[0], args[1] ? args[1] : "",
                 rc, err, needle);
}
#define EXPECT_USAGE(needle, ...) expect_usage_error(needle, (const char *const[]){__VA_ARGS__, NULL})

static void test_bad_input_exits_2(void **state) {
    /* every model of the catalog is named, the recommender too */
    EXPECT_USAGE("--model: expected one of resnet26, resnet50, resnet152", "--model", "resnet18", "--dry-run");
    EXPECT_USAGE("dlrm", "--model", "resnet1000");
    EXPECT_USAGE("--model: expected one of", "--model", "resnet1000", "--dry-run");
    EXPECT_USAGE("--data-if-present goes with --data-root", "--model", "resnet26", "--data-if-present", "--dry-run");
    EXPECT_USAGE("--model is required", "--batch", "8");
    EXPECT_USAGE("--batch: expected a whole number", "--model", "resnet26", "--batch", "0");
    EXPECT_USAGE("--batch: expected a whole number", "--model", "resnet26", "--batch", "12x");
    EXPECT_USAGE("--epochs: expected", "--model", "resnet26", "--epochs");
    EXPECT_USAGE("--lr: expected a number", "--model", "resnet26", "--lr", "nan");
    EXPECT_USAGE("unknown data set 'mnist'", "--model", "resnet26", "--data", "mnist");
    EXPECT_USAGE("--schedule: expected", "--model", "resnet26", "--schedule", "linear");
    EXPECT_USAGE("unknown option '--fast'", "--model", "resnet26", "--fast");
    EXPECT_USAGE("32x32 with 10 classes", "--model", "resnet26", "--data", "fashion-mnist",
                       "--image-size", "64");
    EXPECT_USAGE("--image-size: expected", "--model", "resnet26", "--image-size", "4");
    EXPECT_USAGE("--optimizer: expected sgd or adamw", "--model", "resnet26", "--optimizer", "adam");
    EXPECT_USAGE("--patch-size does not apply to resnet26", "--model", "resnet26", "--patch-size", "4");
    EXPECT_USAGE("not a multiple of the patch", "--model", "cait_xxs24", "--image-size", "30", "--patch-size", "4",
                 "--dry-run");
    EXPECT_USAGE("--drop-path does not apply to cait_xxs24", "--model", "cait_xxs24", "--drop-path", "0.1");
    /* files are checked before the GPU is touched */
    EXPECT_USAGE("/nonexistent-dir", "--model", "resnet26", "--data", "fashion-mnist", "--data-root",
                       "/nonexistent-dir");
    EXPECT_USAGE("/nonexistent-dir", "--model", "resnet26", "--data", "cifar10", "--data-root",
                       "/nonexistent-dir");
    EXPECT_USAGE("--load /nonexistent.safetensors", "--model", "resnet26", "--load",
                       "/nonexistent.safetensors");
}

/* Options that contradict each other or do not apply to the job's model, optimizer or schedule
 * (runner/train/train_rules.h): refused naming both, never ignored; where they apply, taken. */
static void test_options_that_do_not_apply(void **state) {
    EXPECT_USAGE("--no-tf32 is --precision fp32; --precision bf16 contradicts it", "--model", "resnet26",
                 "--precision", "bf16", "--no-tf32", "--dry-run");
    EXPECT_USAGE("--precision tf32 contradicts", "--model", "resnet26", "--no-tf32", "--precision", "tf32");
    EXPECT_USAGE("--nesterov applies to --optimizer sgd, and this job trains with adamw", "--model", "resnet26",
                 "--optimizer", "adamw", "--nesterov", "--dry-run");
    EXPECT_USAGE("--momentum applies to --optimizer sgd, and this job trains with adamw", "--model", "resnet26",
                 "--optimizer", "adamw", "--momentum", ".5");
    EXPECT_USAGE("--momentum applies to --optimizer sgd, and this job trains with adamw", "--model", "cait_xxs24",
                 "--momentum", ".5"); /* its recipe's optimizer */
    EXPECT_USAGE("--block-steps does not apply to resnet26", "--model", "resnet26", "--block-steps", "5");
    EXPECT_USAGE("--max-rows does not apply to resnet26", "--model", "resnet26", "--max-rows", "5");
    EXPECT_USAGE("--lr-decay-steps does not apply to resnet50", "--model", "resnet50", "--lr-decay-steps", "5");
    EXPECT_USAGE("--step-epochs applies to --schedule step, and this job's schedule is constant", "--model",
                 "resnet26", "--schedule", "constant", "--step-epochs", "5");
    EXPECT_USAGE("--gamma applies to --schedule step, and this job's schedule is one-cycle", "--model", "resnet26",
                 "--gamma", "0.5");
    EXPECT_USAGE("--warmup-pct applies to --schedule cosine or one-cycle, and this job's schedule is step", "--model",
                 "resnet26", "--schedule", "step", "--warmup-pct", "0.1");
    EXPECT_USAGE("--min-lr 1 is above --lr 0.01", "--model", "resnet26", "--schedule", "cosine", "--min-lr", "1",
                 "--lr", ".01");
    EXPECT_USAGE("--min-lr 0.5 is above --lr 0.001 (the default", "--model", "cait_xxs24", "--min-lr", "0.5");
    EXPECT_USAGE("--min-lr applies to --schedule cosine", "--model", "resnet26", "--min-lr", "0.001");
    /* where they apply */
    const char *fine[][14] = {
        {"--model", "resnet26", "--precision", "fp32", "--no-tf32", "--dry-run"},
        {"--model", "resnet26", "--schedule", "step", "--step-epochs", "3", "--gamma", "0.5", "--dry-run"},
        {"--model", "cait_xxs24", "--min-lr", "1e-5", "--warmup-pct", "0.1", "--dry-run"},
        {"--model", "efficientnetv2_s", "--momentum", "0.8", "--nesterov", "--dry-run"},
        {"--model", "dlrm", "--data", "criteo-kaggle", "--max-rows", "1000", "--block-steps", "5", "--lr-warmup-steps",
         "10", "--warmup-pct", "0.1", "--dry-run"},
    };
    for (size_t k = 0; k < sizeof fine / sizeof fine[0]; k++) {
        char *argv[16] = {(char *)test_binary("train")};
        int n = 1;
        for (int w = 0; fine[k][w]; w++) argv[n++] = (char *)fine[k][w];
        argv[n] = NULL;
        int rc = test_run(argv, out, sizeof out, err, sizeof err);
        if (rc != 0) fail_msg("case %zu (%s): exit %d: %s", k, fine[k][1], rc, err);
    }
}

static void test_data_if_present(void **state) {
    /* run_suite passes one data root to every job: sets without files under it fall back to
       synthetic data; a root that cannot be used is bad input, with --data-if-present too */
    char empty[512];
    test_tmpdir(empty, sizeof empty);
    assert_int_equal(run_train("--model", "resnet50", "--data", "imagenet64", "--data-root", empty,
                               "--data-if-present", "--dry-run", NULL), 0);
    EXPECT_USAGE("train_data_batch_1.npz not found", "--model", "resnet50", "--data", "imagenet64", "--data-root", empty,
                 "--epochs", "1");
    EXPECT_USAGE("--data-root /nonexistent-dir: does not exist", "--model", "resnet50", "--data", "imagenet64",
                 "--data-root", "/nonexistent-dir", "--data-if-present", "--dry-run");
    EXPECT_USAGE("/nonexistent-dir", "--model", "resnet50", "--data", "imagenet", "--data-root", "/nonexistent-dir");
    EXPECT_USAGE("synthetic data has no files", "--model", "resnet50", "--data-root", "/tmp");
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        /* the files are absent, so it falls back to synthetic data and only then needs the GPU */
        assert_int_equal(run_train("--model", "resnet50", "--data", "imagenet64", "--data-root", empty,
                                   "--data-if-present", "--epochs", "1", NULL), 1);
        assert_non_null(strstr(err, "synthetic imagenet64-shaped data instead"));
    }
    test_rmtree(empty);
}

/* --decode: refused where there are no JPEG files to decode or no nvJPEG in the build; the plan
 * (train_decode_plan) says where the images decode and why, for every case of asked, files and build. */
static void test_decode_option(void **state) {
    EXPECT_USAGE("--decode: expected auto, cpu or gpu", "--model", "resnet50", "--decode", "fpga");
    EXPECT_USAGE("--decode gpu decodes ImageNet's JPEG files", "--model", "resnet26", "--data", "cifar10",
                 "--decode", "gpu");
    EXPECT_USAGE("without --data-root", "--model", "resnet50", "--data", "imagenet", "--decode", "gpu");
    if (!SUITE_HAVE_NVJPEG)
        EXPECT_USAGE("this build has no nvJPEG", "--model", "resnet50", "--data", "imagenet", "--data-root", "/tmp",
                     "--decode", "gpu");
    assert_int_equal(run_train("--model", "resnet50", "--data", "imagenet", "--decode", "cpu", "--dry-run", NULL), 0);
    assert_int_equal(run_train("--help", NULL), 0);
    assert_non_null(strstr(out, "--decode"));

    struct { const char *decode; int jpeg_files, built; decode_kind want; const char *why; } cases[] = {
        {"auto", 1, 1, DECODE_GPU, "--decode auto: JPEG files, and nvJPEG is built in"},
        {"auto", 1, 0, DECODE_CPU, "--decode auto: this build has no nvJPEG"},
        {"auto", 0, 1, DECODE_CPU, "no JPEG files to decode (synthetic data)"},
        {"cpu", 1, 1, DECODE_CPU, "--decode cpu"},
        {"gpu", 1, 1, DECODE_GPU, "--decode gpu"},
        {"gpu", 0, 1, DECODE_CPU, "no JPEG files to decode (synthetic data)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *argv[] = {"train", "--model", "resnet50", "--data", "imagenet", "--data-root", "/tmp", "--data-if-present",
                        "--decode", (char *)cases[i].decode, NULL};
        train_options o;
        char message[512] = "", why[256] = "";
        if (!SUITE_HAVE_NVJPEG && !strcmp(cases[i].decode, "gpu")) continue; /* refused above */
        if (train_options_parse(&o, 10, argv, message, sizeof message) != 0) fail_msg("%s", message);
        decode_kind got = train_decode_plan(&o, cases[i].jpeg_files, cases[i].built, why, sizeof why);
        if (got != cases[i].want || strcmp(why, cases[i].why) != 0)
            fail_msg("--decode %s, files %d, built %d: %s (%s), want %s (%s)", cases[i].decode, cases[i].jpeg_files,
                     cases[i].built, decode_kind_name(got), why, decode_kind_name(cases[i].want), cases[i].why);
    }
}

/* slots NULL: train's default */
static double planned_scratch_slots(const char *decode, const char *slots) {
    if (run_train("--model", "resnet50", "--data", "imagenet", "--data-root", "/tmp", "--data-if-present", "--batch", "32",
                  "--precision", "bf16", "--decode", decode, "--dry-run", "--json", slots ? "--decode-slots" : NULL,
                  slots, NULL) != 0)
        fail_msg("train --dry-run --decode %s --decode-slots %s: %s", decode, slots ? slots : "(default)", err);
    cJSON *e = cJSON_Parse(out);
    assert_non_null(e);
    double scratch = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "footprint"), "scratch")->valuedouble;
    cJSON_Delete(e);
    return scratch;
}

static double planned_scratch(const char *decode) { return planned_scratch_slots(decode, NULL); }

/* The plan counts what the images take on the device: the upload of host batches, or where the GPU
 * decodes the decoder's slots instead (ImageNet's files, planned without reading them). */
static void test_decode_in_the_plan(void **state) {
    double upload = 32.0 * 224 * 224 * 3 * sizeof(float) + 32.0 * sizeof(int32_t);
    double host = planned_scratch("cpu");
    if (!SUITE_HAVE_NVJPEG) {
        assert_true(planned_scratch("auto") == host); /* no decoder to plan */
        return;
    }
    double gpu = planned_scratch("gpu");
    double decoder = (double)jpeg_decoder_planned_bytes(32, 224, 1); /* one slot by default */
    expect_gt(decoder, 32 * (224.0 * 224 * 3 * sizeof(float) + 500.0 * 375 * 3));
    expect_lt(fabs((gpu - host) - (decoder - upload)), 1.0);
    assert_true(planned_scratch("auto") == gpu); /* auto decodes on the GPU where it can */
    /* each slot holds a batch */
    double three = planned_scratch_slots("gpu", "3");
    expect_lt(fabs((three - gpu) - 2 * decoder), 1.0);
}

/* --decode-slots: 1..8, and only where a GPU decoder may exist. */
static void test_decode_slots_option(void **state) {
    EXPECT_USAGE("--decode-slots: expected", "--model", "resnet50", "--decode-slots", "0");
    EXPECT_USAGE("--decode-slots: expected", "--model", "resnet50", "--decode-slots", "9");
    EXPECT_USAGE("--decode-slots 2 sizes the GPU decoder; --decode cpu decodes on the loader's threads", "--model",
                 "resnet50", "--data", "imagenet", "--decode", "cpu", "--decode-slots", "2");
    char *argv[] = {"train", "--model", "resnet50", "--decode-slots", "3", NULL};
    train_options o;
    char message[512] = "";
    if (train_options_parse(&o, 5, argv, message, sizeof message) != 0) fail_msg("%s", message);
    assert_int_equal(o.decode_slots, 3);
    char *plain[] = {"train", "--model", "resnet50", NULL};
    if (train_options_parse(&o, 3, plain, message, sizeof message) != 0) fail_msg("%s", message);
    assert_int_equal(o.decode_slots, 1);
}

static void test_json_error_event(void **state) {
    assert_int_equal(run_train("--model", "vgg16", "--json", NULL), 2);
    cJSON *e = cJSON_Parse(out);
    assert_non_null(e);
    assert_string_equal(cJSON_GetObjectItem(e, "event")->valuestring, "error");
    assert_non_null(strstr(cJSON_GetObjectItem(e, "message")->valuestring, "vgg16"));
    cJSON_Delete(e);
}

static void test_without_gpu_says_so(void **state) {
    int count = 0;
    if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) skip(); /* covered by the GPU tests */
    int rc = run_train("--model", "resnet26", "--steps-per-epoch", "1", "--epochs", "1", NULL);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "no usable GPU"));
}

static void test_help(void **state) {
    assert_int_equal(run_train("--help", NULL), 0);
    assert_non_null(strstr(out, "usage: train"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameter_counts_match_timm), cmocka_unit_test(test_dry_run_human_readable),
        cmocka_unit_test(test_dry_run_workspace_counts_the_lane),
        cmocka_unit_test(test_bad_input_exits_2),
        cmocka_unit_test(test_options_that_do_not_apply), cmocka_unit_test(test_data_if_present),
        cmocka_unit_test(test_decode_option), cmocka_unit_test(test_decode_slots_option),
        cmocka_unit_test(test_decode_in_the_plan), cmocka_unit_test(test_json_error_event),
        cmocka_unit_test(test_without_gpu_says_so), cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
