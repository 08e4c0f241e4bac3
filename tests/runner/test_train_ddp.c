/* train --gpus on the host: the job's events made from the ranks' (sums, the slowest rank's time,
 * means), the options refused before any GPU work, the dry run, and the launcher's answer to
 * ranks that cannot start training (each names its rank; exit 1, no hang), wherever it runs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "runner/train/rank_events.h"
#include "tests/support/testutil.h"

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void test_aggregate_epoch(void **state) {
    (void)state;
    cJSON *r[2] = {
        cJSON_Parse("{\"event\":\"epoch\",\"epoch\":2,\"warmup\":false,\"samples\":640,\"seconds\":2.0,\"samples_per_s\":320,"
                    "\"loss\":2.0,\"diverged\":false,\"train_accuracy\":0.5,\"accuracy\":null,\"step_ms_median\":10,"
                    "\"peak_bytes\":100,\"t_start\":10.0,\"t_end\":12.0}"),
        cJSON_Parse("{\"event\":\"epoch\",\"epoch\":2,\"warmup\":false,\"samples\":640,\"seconds\":2.5,\"samples_per_s\":256,"
                    "\"loss\":3.0,\"diverged\":false,\"train_accuracy\":0.7,\"accuracy\":null,\"step_ms_median\":12,"
                    "\"peak_bytes\":120,\"t_start\":9.5,\"t_end\":12.5}")};
    cJSON *a = rank_events_aggregate("epoch", r, 2);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(a, "event")->valuestring, "epoch");
    assert_true(num(a, "epoch") == 2 && num(a, "gpus") == 2);
    assert_true(num(a, "samples") == 1280);
    assert_true(num(a, "seconds") == 2.5);
    expect_lt(fabs(num(a, "samples_per_s") - 512), 1e-9);
    assert_true(num(a, "loss") == 2.5);
    expect_lt(fabs(num(a, "train_accuracy") - 0.6), 1e-12);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(a, "accuracy")));
    assert_true(num(a, "step_ms_median") == 12 && num(a, "peak_bytes") == 120);
    assert_true(num(a, "t_start") == 9.5 && num(a, "t_end") == 12.5);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(a, "diverged")));
    cJSON_Delete(a);
    /* one rank's NaN is the job's */
    cJSON_ReplaceItemInObjectCaseSensitive(r[1], "loss", cJSON_CreateNull());
    a = rank_events_aggregate("epoch", r, 2);
    assert_true(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(a, "loss")));
    assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "diverged")));
    cJSON_Delete(a);
    cJSON_Delete(r[0]), cJSON_Delete(r[1]);
}

static void test_aggregate_window(void **state) {
    (void)state;
    cJSON *r[2] = {
        cJSON_Parse("{\"event\":\"window\",\"window\":0,\"t0\":100,\"t1\":103,\"steps\":30,\"samples\":3840,"
                    "\"samples_per_s\":1280,\"step_ms_median\":98,\"step_ms_p10\":97,\"step_ms_p90\":99,\"step_ms_p99\":101,"
                    "\"step_ms_count\":30,\"train_start\":90.0,\"train_end\":104.0}"),
        cJSON_Parse("{\"event\":\"window\",\"window\":0,\"t0\":100,\"t1\":103,\"steps\":31,\"samples\":3968,"
                    "\"samples_per_s\":1322.67,\"step_ms_median\":97,\"step_ms_p10\":96,\"step_ms_p90\":100,\"step_ms_p99\":null,"
                    "\"step_ms_count\":31,\"train_start\":90.5,\"train_end\":104.2}")};
    cJSON *a = rank_events_aggregate("window", r, 2);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(a, "event")->valuestring, "window");
    assert_true(num(a, "window") == 0 && num(a, "t0") == 100 && num(a, "t1") == 103 && num(a, "gpus") == 2);
    assert_true(num(a, "samples") == 7808); expect_lt(fabs(num(a, "samples_per_s") - 2602.67), 1e-9);
    /* the slowest rank's steps; a quantile one rank lacks is the other's */
    assert_true(num(a, "step_ms_median") == 98 && num(a, "step_ms_p90") == 100 && num(a, "step_ms_p99") == 101);
    /* the job trained while every rank did */
    assert_true(num(a, "train_start") == 90.5 && num(a, "train_end") == 104.0);
    cJSON_Delete(a);
    cJSON_Delete(r[0]), cJSON_Delete(r[1]);
}

static void test_aggregate_setup(void **state) {
    (void)state;
    cJSON *r[2] = {cJSON_Parse("{\"event\":\"setup\",\"model\":\"resnet50\",\"batch\":128,\"footprint_bytes\":10,\"device\":\"GPU A\"}"),
                   cJSON_Parse("{\"event\":\"setup\",\"model\":\"resnet50\",\"batch\":128,\"footprint_bytes\":12,\"device\":\"GPU B\"}")};
    cJSON *a = rank_events_aggregate("setup", r, 2);
    assert_true(num(a, "gpus") == 2 && num(a, "global_batch") == 256 && num(a, "footprint_bytes") == 12);
    const cJSON *devices = cJSON_GetObjectItemCaseSensitive(a, "rank_devices");
    assert_int_equal(cJSON_GetArraySize(devices), 2);
    assert_string_equal(cJSON_GetArrayItem(devices, 1)->valuestring, "GPU B");
    cJSON_Delete(a);
    cJSON_Delete(r[0]), cJSON_Delete(r[1]);
}

static void test_cli(void **state) {
    (void)state;
    static char out[65536], err[65536];
    assert_int_equal(test_run_binary("train", out, sizeof out, err, sizeof err, "--gpus", "0", "--model", "resnet26",
                                     "--data", "synthetic", "--json", NULL), 2);
    assert_true(strstr(out, "--gpus") || strstr(err, "--gpus"));
    assert_int_equal(test_run_binary("train", out, sizeof out, err, sizeof err, "--gpus", "65", "--model", "resnet26",
                                     "--data", "synthetic", "--json", NULL), 2);
    assert_int_equal(test_run_binary("train", out, sizeof out, err, sizeof err, "--gpus", "2", "--model", "dlrm",
                                     "--data", "criteo-kaggle", "--json", NULL), 2);
    assert_non_null(strstr(out, "not dlrm"));
    /* the dry run is one rank's footprint, with no GPU and no rank started */
    assert_int_equal(test_run_binary("train", out, sizeof out, err, sizeof err, "--gpus", "4", "--model", "resnet26",
                                     "--data", "synthetic", "--dry-run", "--json", NULL), 0);
    assert_non_null(strstr(out, "\"footprint\""));
}

/* Ranks on devices that do not exist: every rank fails, the launcher names one and ends. */
static void test_ranks_that_fail(void **state) {
    (void)state;
    static char out[65536], err[65536];
    int rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--gpus", "2", "--device", "900", "--model",
                             "resnet26", "--data", "synthetic", "--epochs", "1", "--steps-per-epoch", "2", "--json", NULL);
    assert_int_equal(rc, 1);
    const char *last = strstr(out, "{\"event\":\"error\"");
    assert_non_null(last);
    /* NCCL absent from the build: the launcher says so before starting ranks */
    if (!strstr(last, "no NCCL")) {
        assert_non_null(strstr(last, "rank "));
        assert_non_null(strstr(last, "the other ranks were stopped"));
        assert_non_null(strstr(out, "\"event\":\"rank_error\""));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggregate_epoch), cmocka_unit_test(test_aggregate_window), cmocka_unit_test(test_aggregate_setup),
        cmocka_unit_test(test_cli), cmocka_unit_test(test_ranks_that_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
