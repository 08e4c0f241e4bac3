/* The train program end to end on the GPU: the JSON protocol of a short synthetic run, checkpoint
 * save and load, the captured graph against the same step run kernel by kernel, an out-of-memory
 * batch reported cleanly, and one epoch of real learning on Fashion-MNIST. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "data/dataset.h"
#include "models/check.h"
#include "models/rng.h"
#include "models/session.h"
#include "tests/testutil.h"

static char out[1 << 20], err[1 << 20], tmp[1024];

static int run_train(const char *const *args) {
    char *argv[48] = {(char *)test_binary("train")};
    int argc = 1;
    while (args[argc - 1] && argc < 47) argv[argc] = (char *)args[argc - 1], argc++;
    argv[argc] = NULL;
    return test_run(argv, out, sizeof out, err, sizeof err);
}
#define RUN_TRAIN(...) run_train((const char *const[]){__VA_ARGS__, NULL})

/* Returns the events printed on stdout, in order, as one JSON array. */
static cJSON *events(void) {
    cJSON *list = cJSON_CreateArray();
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *e = cJSON_Parse(line);
        if (!e) fail_msg("stdout line is not JSON: %s", line);
        cJSON_AddItemToArray(list, e);
    }
    return list;
}

static const char *event_name(cJSON *e) { return cJSON_GetObjectItem(e, "event")->valuestring; }

static void test_protocol_and_checkpoint(void **state) {
    char ckpt[1100];
    snprintf(ckpt, sizeof ckpt, "%s/resnet26.safetensors", tmp);
    int rc = RUN_TRAIN("--model", "resnet26", "--data", "cifar10", "--batch", "32", "--epochs", "2",
                       "--steps-per-epoch", "25", "--json", "--eval", "--save", ckpt);
    if (rc != 0) fail_msg("train exited %d: %s", rc, err);
    cJSON *list = events();
    int n = cJSON_GetArraySize(list);
    assert_int_equal(n, 5);
    assert_string_equal(event_name(cJSON_GetArrayItem(list, 0)), "setup");
    assert_string_equal(event_name(cJSON_GetArrayItem(list, 1)), "ready");
    for (int i = 2; i < 4; i++) {
        cJSON *e = cJSON_GetArrayItem(list, i);
        assert_string_equal(event_name(e), "epoch");
        assert_int_equal(cJSON_GetObjectItem(e, "epoch")->valueint, i - 1);
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(e, "warmup")) == (i == 2));
        assert_int_equal(cJSON_GetObjectItem(e, "steps")->valueint, 25);
        assert_true(isfinite(cJSON_GetObjectItem(e, "loss")->valuedouble));
        assert_true(cJSON_GetObjectItem(e, "seconds")->valuedouble > 0);
        assert_true(cJSON_GetObjectItem(e, "step_ms_median")->valuedouble > 0);
        assert_true(cJSON_GetObjectItem(e, "t_end")->valuedouble > cJSON_GetObjectItem(e, "t_start")->valuedouble);
        double acc = cJSON_GetObjectItem(e, "accuracy")->valuedouble;
        assert_true(acc >= 0 && acc <= 1);
    }
    assert_string_equal(event_name(cJSON_GetArrayItem(list, 4)), "done");
    cJSON_Delete(list);
    assert_int_equal(access(ckpt, R_OK), 0);

    rc = RUN_TRAIN("--model", "resnet26", "--batch", "32", "--epochs", "1", "--steps-per-epoch", "2", "--load", ckpt);
    if (rc != 0) fail_msg("loading the checkpoint: exit %d: %s", rc, err);
    rc = RUN_TRAIN("--model", "resnet26", "--classes", "100", "--batch", "32", "--epochs", "1", "--load", ckpt);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "fc.weight"));
}

/* Three steps captured in a graph and three run eagerly, from the same weights and data, agree. */
static void test_graph_matches_eager(void **state) {
    model_config config = {.name = "resnet26", .batch = 16, .image_size = 32, .in_channels = 3, .classes = 10, .seed = 7};
    float *params[2] = {NULL, NULL}, *initial = NULL;
    size_t n = 0;
    size_t image_floats = (size_t)16 * 32 * 32 * 3;
    float *images = malloc(image_floats * sizeof *images);
    int32_t labels[16];
    uint64_t r = 99;
    for (size_t i = 0; i < image_floats; i++) images[i] = rng_normal(&r);
    for (int i = 0; i < 16; i++) labels[i] = (int32_t)(rng_next(&r) % 10);
    for (int graph = 0; graph < 2; graph++) {
        session s;
        char e[512];
        assert_int_equal(session_plan(&s, &config, e, sizeof e), 0);
        assert_int_equal(session_start(&s, 0, (size_t)64 << 20, 0, 1, e, sizeof e), 0);
        optimizer_config sgd = {.kind = OPTIMIZER_SGD, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = 1, .decay_all = 0};
        lr_schedule sched = {LR_COSINE, 0.05f, 10, 2, 0, 0, 0, 25, 1e4f};
        trainer_init(&s.trainer, s.model, &s.ctx, sgd, sched, 0.1f, graph);
        n = arena_trainable_floats(&s.ctx.arena);
        if (!initial) {
            initial = malloc(n * sizeof(float));
            test_to_host(initial, (const float *)s.ctx.arena.params, n);
        }
        for (int step = 0; step < 3; step++) trainer_step(&s.trainer, images, labels);
        params[graph] = malloc(n * sizeof(float));
        test_to_host(params[graph], (const float *)s.ctx.arena.params, n);
        session_end(&s);
    }
    for (size_t i = 0; i < n; i++) params[0][i] -= initial[i], params[1][i] -= initial[i];
    double e = test_rel_err_f(params[1], params[0], n);
    printf("graph vs eager after 3 steps: relative error of the parameter change %.2e\n", e);
    assert_true(e < 1e-3);
    free(params[0]), free(params[1]), free(initial), free(images);
}

static void test_out_of_memory_is_reported(void **state) {
    int rc = RUN_TRAIN("--model", "resnet152", "--data", "imagenet", "--batch", "8192", "--epochs", "1",
                       "--steps-per-epoch", "1", "--json");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "out of GPU memory"));
    assert_non_null(strstr(out, "\"event\":\"error\""));
}

static void test_learns_fashion_mnist(void **state) {
    if (access(FASHION_MNIST_DEFAULT_ROOT "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("Fashion-MNIST is not installed: skipped\n");
        skip();
    }
    int rc = RUN_TRAIN("--model", "resnet26", "--data", "fashion-mnist", "--batch", "128", "--epochs", "1",
                       "--lr", "0.1", "--schedule", "one-cycle", "--warmup-pct", "0.15", "--eval", "--json");
    if (rc != 0) fail_msg("train exited %d: %s", rc, err);
    cJSON *list = events();
    cJSON *epoch = cJSON_GetArrayItem(list, 2);
    double acc = cJSON_GetObjectItem(epoch, "accuracy")->valuedouble;
    printf("one epoch of resnet26 on Fashion-MNIST: test accuracy %.4f, loss %.4f\n", acc,
           cJSON_GetObjectItem(epoch, "loss")->valuedouble);
    assert_true(acc > 0.85);
    cJSON_Delete(list);
}

int main(void) {
    test_require_gpu();
    test_tmpdir(tmp, sizeof tmp);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_protocol_and_checkpoint), cmocka_unit_test(test_graph_matches_eager),
        cmocka_unit_test(test_out_of_memory_is_reported), cmocka_unit_test(test_learns_fashion_mnist),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_rmtree(tmp);
    return rc;
}
