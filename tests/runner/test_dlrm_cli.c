/* train --model dlrm on the CPU: the dry run's JSON for both configurations (the reference's
 * parameter counts, Terabyte's 24 billion planned without allocating them, the embedding bytes
 * and the runner's footprint keys), the XL preset's footprint against the table arithmetic, and
 * bad input rejected with exit code 2 and a message naming it before any GPU work. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include <cuda_runtime.h>

#include "tests/support/testutil.h"

static char out[1 << 16], err[1 << 16];

/* train with the NULL-terminated arguments; its output lands in out and err */
#define run_train(...) test_run_binary("train", out, sizeof out, err, sizeof err, __VA_ARGS__)

static double number(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(item)) fail_msg("no number '%s' in %s", key, out);
    return item->valuedouble;
}

static cJSON *dry_run(const char *data, const char *max_rows, const char *batch) {
    int rc = max_rows ? run_train("--model", "dlrm", "--data", data, "--max-rows", max_rows, "--batch", batch,
                                  "--dry-run", "--json", NULL)
                      : run_train("--model", "dlrm", "--data", data, "--batch", batch, "--dry-run", "--json", NULL);
    if (rc != 0) fail_msg("train --dry-run for %s: exit %d, stderr '%s'", data, rc, err);
    cJSON *plan = cJSON_Parse(out);
    if (!plan) fail_msg("not JSON: %s", out);
    return plan;
}

static void test_parameter_counts(void **state) {
    cJSON *plan = dry_run("criteo-kaggle", NULL, "128");
    assert_string_equal(cJSON_GetObjectItem(plan, "model")->valuestring, "dlrm");
    assert_true(number(plan, "params") == 540677217.0);
    cJSON_Delete(plan);
    plan = dry_run("criteo-terabyte", NULL, "2048");
    assert_true(number(plan, "params") == 24036595969.0);
    const cJSON *f = cJSON_GetObjectItem(plan, "footprint");
    assert_non_null(f);
    /* what run_suite reads, and the tables' own bytes: 24,034,227,072 parameters x 4 */
    double embeddings = number(f, "embeddings"), total = number(f, "total"), params = number(f, "parameters");
    expect_eq(embeddings, (24036595969.0 - 2368897.0) * 4);
    assert_true(number(plan, "embedding_bytes") == embeddings);
    expect_ge(params, 24036595969.0 * 4); expect_lt(params, 24036595969.0 * 4 * 1.001);
    expect_gt(total, embeddings); expect_lt(total, embeddings * 1.01);
    expect_gt(number(f, "gradients"), 0); expect_gt(number(f, "activations"), 0); expect_gt(number(f, "workspace"), 0);
    expect_gt(number(f, "scratch"), 0); assert_true(number(f, "optimizer") == 0); assert_true(number(f, "buffers") == 0);
    const cJSON *rows = cJSON_GetObjectItem(plan, "table_rows");
    assert_int_equal(cJSON_GetArraySize(rows), 26);
    expect_eq(cJSON_GetArrayItem(rows, 0)->valuedouble, 39884406);
    cJSON_Delete(plan);
}

static void test_xl_footprint(void **state) {
    cJSON *plan = dry_run("criteo-terabyte", "10000000", "2048");
    const cJSON *f = cJSON_GetObjectItem(plan, "footprint");
    static const double sizes[26] = {39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546,
                                     403346, 10, 2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984,
                                     585935, 12972, 108, 36};
    double tables = 0;
    for (int t = 0; t < 26; t++) tables += (sizes[t] < 1e7 ? sizes[t] : 1e7) * 128 * 4;
    double total = number(f, "total");
    printf("XL (criteo-terabyte, --max-rows 10000000, batch 2048): tables %.3f GB, footprint %.3f GB\n",
           tables / 1e9, total / 1e9);
    assert_true(number(f, "embeddings") == tables);
    expect_ge(total, tables); expect_le(total, tables * 1.10);
    cJSON_Delete(plan);
    /* the human-readable dry run names the table bytes too */
    assert_int_equal(run_train("--model", "dlrm", "--data", "criteo-terabyte", "--max-rows", "10000000", "--batch",
                               "2048", "--dry-run", NULL), 0);
    assert_non_null(strstr(out, "embedding tables 27.681 GB"));
}

static void expect_usage_error(const char *needle, const char *const *args) {
    char *argv[40] = {(char *)test_binary("train")};
    int argc = 1;
    while (args[argc - 1] && argc < 39) argv[argc] = (char *)args[argc - 1], argc++;
    argv[argc] = NULL;
    int rc = test_run(argv, out, sizeof out, err, sizeof err);
    if (rc != 2 || !strstr(err, needle))
        fail_msg("train %s %s %s %s ...: exit %d, stderr '%s' (expected 2 and '%s')", args[0], args[1] ? args[1] : "",
                 args[1] && args[2] ? args[2] : "", args[1] && args[2] && args[3] ? args[3] : "", rc, err, needle);
}
#define EXPECT_USAGE(needle, ...) expect_usage_error(needle, (const char *const[]){__VA_ARGS__, NULL})

static void test_bad_input_exits_2(void **state) {
    EXPECT_USAGE("--max-rows: expected a whole number from 1", "--model", "dlrm", "--data", "criteo-kaggle",
                 "--max-rows", "0");
    EXPECT_USAGE("--max-rows: expected", "--model", "dlrm", "--data", "criteo-kaggle", "--max-rows", "-3");
    EXPECT_USAGE("--model dlrm trains on click logs", "--model", "dlrm", "--data", "imagenet");
    EXPECT_USAGE("--model dlrm trains on click logs", "--model", "dlrm"); /* synthetic images by default */
    EXPECT_USAGE("click logs are for --model dlrm", "--model", "resnet50", "--data", "criteo-kaggle");
    EXPECT_USAGE("unknown data set 'criteo-mini'", "--model", "dlrm", "--data", "criteo-mini");
    EXPECT_USAGE("--block-steps: expected", "--model", "dlrm", "--data", "criteo-kaggle", "--block-steps", "0");
    EXPECT_USAGE("plain SGD", "--model", "dlrm", "--data", "criteo-kaggle", "--optimizer", "adamw", "--dry-run");
    EXPECT_USAGE("no weight decay", "--model", "dlrm", "--data", "criteo-kaggle", "--weight-decay", "0.01");
    EXPECT_USAGE("learning-rate policy", "--model", "dlrm", "--data", "criteo-kaggle", "--schedule", "cosine");
    EXPECT_USAGE("no images or classes", "--model", "dlrm", "--data", "criteo-kaggle", "--image-size", "32");
    EXPECT_USAGE("no images or classes", "--model", "dlrm", "--data", "criteo-terabyte", "--classes", "10");
    EXPECT_USAGE("binary cross-entropy", "--model", "dlrm", "--data", "criteo-kaggle", "--label-smoothing", "0.1");
    /* files are checked before the GPU is touched */
    EXPECT_USAGE("/nonexistent-criteo", "--model", "dlrm", "--data", "criteo-kaggle", "--data-root",
                 "/nonexistent-criteo");
    EXPECT_USAGE("--load /nonexistent.safetensors", "--model", "dlrm", "--data", "criteo-kaggle", "--load",
                 "/nonexistent.safetensors");
}

/* A Criteo file too small for one batch of training rows (a seventh is held out) is bad input,
 * found before any GPU work. */
static void test_small_file_exits_2(void **state) {
    char dir[512], path[600];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tiny.tsv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 20; i++) {
        fprintf(f, "%d", i % 2);
        for (int j = 0; j < 13; j++) fprintf(f, "\t%d", i + j);
        for (int j = 0; j < 26; j++) fprintf(f, "\t%08x", (unsigned)(i * 2654435761u + j));
        fprintf(f, "\n");
    }
    fclose(f);
    assert_int_equal(run_train("--model", "dlrm", "--data", "criteo-kaggle", "--data-root", path, "--batch", "64",
                               NULL), 2);
    assert_non_null(strstr(err, "--batch 64 is larger than the 18 training rows"));
    test_rmtree(dir);
}

/* A Criteo file whose first line is of another format is bad input found before any GPU work,
 * naming the file and the line, also with --data-if-present (the file is present, just wrong). */
static void test_malformed_first_line_exits_2(void **state) {
    char dir[512], path[600];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bad.tsv", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "label,I1,I2,C1\n1,2,3,abc\n");
    fclose(f);
    assert_int_equal(run_train("--model", "dlrm", "--data", "criteo-kaggle", "--data-root", path, "--json", NULL), 2);
    assert_non_null(strstr(err, "bad.tsv: line 1:"));
    assert_null(strstr(err, "GPU"));
    assert_int_equal(run_train("--model", "dlrm", "--data", "criteo-kaggle", "--data-root", path,
                               "--data-if-present", "--json", NULL), 2);
    assert_non_null(strstr(err, "bad.tsv: line 1:"));
    test_rmtree(dir);
}

static void test_data_if_present_and_no_gpu(void **state) {
    int count = 0;
    if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) skip(); /* covered by gpu_dlrm_train */
    /* files absent under a usable root fall back to synthetic data, which then needs the GPU */
    char empty[512];
    test_tmpdir(empty, sizeof empty);
    assert_int_equal(run_train("--model", "dlrm", "--data", "criteo-kaggle", "--max-rows", "1000", "--data-root",
                               empty, "--data-if-present", "--epochs", "1", "--steps-per-epoch", "1", "--json", NULL), 1);
    test_rmtree(empty);
    assert_non_null(strstr(err, "synthetic criteo-kaggle data instead"));
    assert_non_null(strstr(err, "no usable GPU"));
    cJSON *e = cJSON_Parse(out);
    assert_non_null(e);
    assert_string_equal(cJSON_GetObjectItem(e, "event")->valuestring, "error");
    assert_true(number(e, "exit_code") == 1);
    cJSON_Delete(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameter_counts),   cmocka_unit_test(test_xl_footprint),
        cmocka_unit_test(test_bad_input_exits_2),  cmocka_unit_test(test_small_file_exits_2),
        cmocka_unit_test(test_data_if_present_and_no_gpu), cmocka_unit_test(test_malformed_first_line_exits_2),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
