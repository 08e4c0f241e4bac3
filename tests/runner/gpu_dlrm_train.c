/* train --model dlrm end to end on the GPU, through the binary as the runner starts it:
 *   a small Criteo-format TSV written here, trained through the reader for two epochs: the
 *     events (setup with the capped parameter count and the table bytes, ready, block events
 *     summing to each epoch's steps, epoch events with loss, held-out accuracy and AUC, the
 *     loader's statistics, done), a checkpoint saved and loaded back, a mismatched one refused
 *     (exit 2), a TSV with broken lines failing at the line (exit 1);
 *   learning: synthetic Criteo data with a planted signal, criteo-kaggle dims with 100k-row
 *     tables at batch 2048: held-out ROC AUC above 0.75 within 3000 steps. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tests/support/testutil.h"

static char out[1 << 20], err[1 << 18];
static char dir[512];

static int run_train(const char *const *args) {
    char *argv[64] = {(char *)test_binary("train")};
    int argc = 1;
    while (args[argc - 1] && argc < 63) argv[argc] = (char *)args[argc - 1], argc++;
    argv[argc] = NULL;
    return test_run(argv, out, sizeof out, err, sizeof err);
}
#define RUN(...) run_train((const char *const[]){__VA_ARGS__, NULL})

static double number(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(item)) fail_msg("event lacks number '%s': %s", key, cJSON_PrintUnformatted(o));
    return item->valuedouble;
}

static const char *event_name(const cJSON *e) {
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "event");
    return cJSON_IsString(n) ? n->valuestring : "";
}

/* Rows whose click depends on I1 and C1, in the Kaggle layout; `bad` lines get a non-hex C3. */
static void write_tsv(const char *path, int lines, int bad_from, int bad_to) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    uint64_t s = 17;
    for (int i = 1; i <= lines; i++) {
        int i1 = (int)(test_rand_u64(&s) % 20);
        uint32_t c1 = (uint32_t)test_rand_u64(&s);
        double logit = (i1 - 10) * 0.3 + ((c1 & 1) ? 1.0 : -1.0);
        int label = test_rand_uniform(&s, 0, 1) < 1 / (1 + exp(-logit));
        fprintf(f, "%d\t%d", label, i1);
        for (int j = 1; j < 13; j++) {
            if (test_rand_u64(&s) % 10 == 0) fprintf(f, "\t"); /* missing */
            else fprintf(f, "\t%d", (int)(test_rand_u64(&s) % 1000) - 2);
        }
        fprintf(f, "\t%08x", c1);
        for (int j = 1; j < 26; j++) {
            if (j == 2 && i >= bad_from && i <= bad_to) fprintf(f, "\tnot-hex!");
            else if (test_rand_u64(&s) % 8 == 0) fprintf(f, "\t");
            else fprintf(f, "\t%x", (unsigned)(test_rand_u64(&s) % 100000));
        }
        fprintf(f, "\n");
    }
    fclose(f);
}

/* Parses the JSON lines of `out` into an array of events. */
static cJSON *events_of(void) {
    cJSON *all = cJSON_CreateArray();
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *e = cJSON_Parse(line);
        if (!e) fail_msg("not a JSON line: %s", line);
        cJSON_AddItemToArray(all, e);
    }
    return all;
}

static void test_tsv_end_to_end(void **state) {
    char tsv[600], ckpt[600];
    snprintf(tsv, sizeof tsv, "%s/day.tsv", dir);
    snprintf(ckpt, sizeof ckpt, "%s/dlrm.safetensors", dir);
    write_tsv(tsv, 1400, 0, -1);
    int rc = RUN("--model", "dlrm", "--data", "criteo-kaggle", "--data-root", tsv, "--max-rows", "1000", "--batch", "64",
                 "--steps-per-epoch", "10", "--epochs", "2", "--block-steps", "4", "--eval", "--json", "--save", ckpt);
    if (rc != 0) fail_msg("train exited %d: %s", rc, err);
    cJSON *events = events_of();
    int setups = 0, readies = 0, epochs = 0, blocks = 0, dones = 0;
    long block_steps[3] = {0, 0, 0};
    cJSON *e;
    cJSON_ArrayForEach(e, events) {
        const char *name = event_name(e);
        if (!strcmp(name, "setup")) {
            setups++;
            assert_string_equal(cJSON_GetObjectItem(e, "data_source")->valuestring, "real");
            assert_string_equal(cJSON_GetObjectItem(e, "model")->valuestring, "dlrm");
            assert_true(number(e, "train_rows") == 1200 && number(e, "held_out_rows") == 200);
            assert_true(number(e, "steps_per_epoch") == 10);
            expect_gt(number(e, "embedding_bytes"), 0); expect_gt(number(e, "footprint_bytes"), number(e, "embedding_bytes"));
            printf("setup: %.0f parameters, %.0f bytes of tables, %.0f on the GPU\n", number(e, "params"),
                   number(e, "embedding_bytes"), number(e, "footprint_bytes"));
        } else if (!strcmp(name, "ready")) {
            readies++;
        } else if (!strcmp(name, "block")) {
            blocks++;
            int epoch = (int)number(e, "epoch");
            assert_true(epoch == 1 || epoch == 2);
            block_steps[epoch] += (long)number(e, "steps");
            expect_le(number(e, "steps"), 4); expect_gt(number(e, "seconds"), 0); assert_true(isfinite(number(e, "loss")));
            assert_true(number(e, "block") == blocks);
        } else if (!strcmp(name, "epoch")) {
            epochs++;
            assert_true(number(e, "epoch") == epochs && number(e, "steps") == 10 && number(e, "samples") == 640);
            double loss = number(e, "loss"), auc = number(e, "auc"), acc = number(e, "accuracy");
            assert_true(isfinite(loss)); expect_ge(auc, 0); expect_le(auc, 1); expect_ge(acc, 0); expect_le(acc, 1);
            expect_gt(number(e, "step_ms_median"), 0); expect_gt(number(e, "loader_samples_per_s"), 0);
            expect_ge(number(e, "loader_wait_s"), 0); expect_ge(number(e, "t_end"), number(e, "t_start"));
            expect_gt(number(e, "peak_bytes"), 0); expect_gt(number(e, "device_used_bytes"), 0); assert_true(number(e, "lr") == 1.0);
            assert_true(isfinite(number(e, "test_loss"))); expect_ge(number(e, "train_accuracy"), 0);
            printf("epoch %d: loss %.4f, held-out accuracy %.3f, AUC %.3f, step %.3f ms, loader %.0f samples/s\n", epochs,
                   loss, acc, auc, number(e, "step_ms_median"), number(e, "loader_samples_per_s"));
        } else if (!strcmp(name, "done")) {
            dones++;
        }
    }
    assert_int_equal(setups, 1);
    assert_int_equal(readies, 1);
    assert_int_equal(epochs, 2);
    assert_int_equal(blocks, 6); /* 4 + 4 + 2 steps per epoch */
    assert_int_equal(block_steps[1], 10);
    assert_int_equal(block_steps[2], 10);
    assert_int_equal(dones, 1);
    cJSON_Delete(events);

    /* the checkpoint loads back; one with other table sizes is refused as bad input */
    rc = RUN("--model", "dlrm", "--data", "criteo-kaggle", "--data-root", tsv, "--max-rows", "1000", "--batch", "64",
             "--steps-per-epoch", "2", "--epochs", "1", "--load", ckpt);
    if (rc != 0) fail_msg("train --load exited %d: %s", rc, err);
    rc = RUN("--model", "dlrm", "--data", "criteo-kaggle", "--data-root", tsv, "--max-rows", "500", "--batch", "64",
             "--steps-per-epoch", "2", "--epochs", "1", "--load", ckpt);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "emb_l.0.weight"));

    /* broken lines fail the run at their line */
    char broken[600];
    snprintf(broken, sizeof broken, "%s/broken.tsv", dir);
    write_tsv(broken, 1400, 300, 340);
    rc = RUN("--model", "dlrm", "--data", "criteo-kaggle", "--data-root", broken, "--max-rows", "1000", "--batch",
             "64", "--epochs", "1", "--json");
    assert_int_equal(rc, 1);
    if (!strstr(err, "broken.tsv: line 3") || !strstr(err, "C3"))
        fail_msg("expected the file, line and field in the message, got: %s", err);
}

/* The planted signal is learnt: AUC on 262144 held-out synthetic rows above 0.75. */
static void test_learns_synthetic(void **state) {
    int rc = RUN("--model", "dlrm", "--data", "criteo-kaggle", "--max-rows", "100000", "--batch", "2048", "--epochs",
                 "1", "--steps-per-epoch", "3000", "--block-steps", "500", "--eval", "--seed", "1", "--json");
    if (rc != 0) fail_msg("train exited %d: %s", rc, err);
    cJSON *events = events_of(), *e;
    double auc = NAN;
    cJSON_ArrayForEach(e, events) {
        if (!strcmp(event_name(e), "block"))
            printf("block %.0f: loss %.4f, %.0f samples/s\n", number(e, "block"), number(e, "loss"),
                   number(e, "samples_per_s"));
        if (!strcmp(event_name(e), "epoch")) {
            auc = number(e, "auc");
            printf("after %.0f steps: train loss %.4f, held-out loss %.4f, accuracy %.4f, AUC %.4f; step %.3f ms "
                   "(median), %.0f samples/s, loader waited %.2f s, workers %.0f samples/s\n",
                   number(e, "steps"), number(e, "loss"), number(e, "test_loss"), number(e, "accuracy"), auc,
                   number(e, "step_ms_median"), number(e, "samples_per_s"), number(e, "loader_wait_s"),
                   number(e, "loader_samples_per_s"));
        }
    }
    cJSON_Delete(events);
    expect_gt(auc, 0.75);
}

int main(void) {
    test_require_gpu();
    test_tmpdir(dir, sizeof dir);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_tsv_end_to_end), cmocka_unit_test(test_learns_synthetic)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_rmtree(dir);
    return rc;
}
