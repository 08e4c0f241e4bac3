/* The train program end to end on the GPU: the JSON protocol of a short synthetic run, checkpoint
 * save and load, the captured graph against the same step run kernel by kernel, with programmatic
 * dependent launch against without, an out-of-memory batch reported cleanly, and one epoch of real
 * learning on Fashion-MNIST. */
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
#include "kernels/check.h"
#include "base/rng.h"
#include "models/session.h"
#include "tests/support/testutil.h"

static char out[1 << 20], err[1 << 20], tmp[1024];

static int run_train(const char *const *args) {
    char *argv[48] = {(char *)test_binary("train")};
    int argc = 1;
    while (args[argc - 1] && argc < 47) argv[argc] = (char *)args[argc - 1], argc++;
    argv[argc] = NULL;
    return test_run(argv, out, sizeof out, err, sizeof err);
}
#define RUN_TRAIN(...) run_train((const char *const[]){__VA_ARGS__, NULL})

/* Returns the events printed on stdout, in order, as one JSON array; without the "steps" events
 * (each epoch's step times, after it), which these tests do not read. */
static cJSON *events(void) {
    cJSON *list = cJSON_CreateArray();
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        cJSON *e = cJSON_Parse(line);
        if (!e) fail_msg("stdout line is not JSON: %s", line);
        cJSON *name = cJSON_GetObjectItem(e, "event");
        if (cJSON_IsString(name) && !strcmp(name->valuestring, "steps")) cJSON_Delete(e);
        else cJSON_AddItemToArray(list, e);
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
        expect_gt(cJSON_GetObjectItem(e, "seconds")->valuedouble, 0);
        expect_gt(cJSON_GetObjectItem(e, "step_ms_median")->valuedouble, 0);
        expect_gt(cJSON_GetObjectItem(e, "t_end")->valuedouble, cJSON_GetObjectItem(e, "t_start")->valuedouble);
        double acc = cJSON_GetObjectItem(e, "accuracy")->valuedouble;
        expect_ge(acc, 0); expect_le(acc, 1);
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

/* The parameter change of `steps` SGD steps of `config` from its seeded weights on one fixed batch,
 * captured in a graph or run kernel by kernel, with the environment variable `name` (a SUITE_
 * switch: SUITE_PDL, SUITE_WGRAD_LANE) set to `value` while the job lives (NULL: as it is).
 * Returns a malloc'ed array of *n floats. */
static float *step_change(const model_config *config, int steps, int graph, const char *name, const char *value,
                          size_t *n) {
    size_t image_floats = (size_t)config->batch * config->image_size * config->image_size * 3;
    float *images = malloc(image_floats * sizeof *images);
    int32_t *labels = malloc((size_t)config->batch * sizeof *labels);
    uint64_t r = 99;
    for (size_t i = 0; i < image_floats; i++) images[i] = rng_normal(&r);
    for (int i = 0; i < config->batch; i++) labels[i] = (int32_t)(rng_next(&r) % (uint64_t)config->classes);
    if (name) setenv(name, value, 1);
    session s;
    char e[512];
    assert_int_equal(session_plan(&s, config, e, sizeof e), 0);
    assert_int_equal(session_start(&s, 0, (size_t)64 << 20, config->precision != PRECISION_FP32, 1, e, sizeof e), 0);
    optimizer_config sgd = {.kind = OPTIMIZER_SGD, .momentum = 0.9f, .weight_decay = 5e-4f, .nesterov = 1, .decay_all = 0};
    lr_schedule sched = {LR_COSINE, 0.05f, 10, 2, 0, 0, 0, 25, 1e4f};
    trainer_init(&s.trainer, s.model, &s.ctx, sgd, sched, 0.1f, graph);
    *n = arena_trainable_floats(&s.ctx.arena);
    float *initial = malloc(*n * sizeof(float)), *change = malloc(*n * sizeof(float));
    test_to_host(initial, (const float *)s.ctx.arena.params, *n);
    for (int step = 0; step < steps; step++) trainer_step(&s.trainer, images, labels);
    test_to_host(change, (const float *)s.ctx.arena.params, *n);
    session_end(&s);
    if (name) unsetenv(name);
    for (size_t i = 0; i < *n; i++) change[i] -= initial[i];
    free(initial), free(images), free(labels);
    return change;
}

/* The bound for trainings that run the same kernels launched differently (tests/support/testutil.h says
 * why it is fixed per precision, and what it lets through). Each comparison below is of that kind:
 *  - programmatic dependent launch (kernels/pdl.cuh) changes one launch attribute: the same kernels,
 *    grids and arguments, each waiting for the kernel before it before it reads what that wrote;
 *  - the weight-gradient lane (models/core/wgrad_lane.h) runs the same weight-gradient calls, with
 *    the layer's one algorithm choice, on a second stream, and the optimizer in parts whose split
 *    changes no element's update (trainer.c's update_range);
 *  - a captured step replays the calls of an eager one. */
static double same_kernels_bound(precision_kind p) {
    return p == PRECISION_BF16 ? TEST_SAME_KERNELS_BF16 : TEST_SAME_KERNELS_FP32;
}

/* Three steps captured in a graph and three run eagerly, from the same weights and data, agree. */
static void test_graph_matches_eager(void **state) {
    model_config config = {.name = "resnet26", .batch = 16, .image_size = 32, .in_channels = 3, .classes = 10,
                           .seed = 7, .precision = PRECISION_FP32};
    size_t n;
    float *eager = step_change(&config, 3, 0, NULL, NULL, &n), *graphed = step_change(&config, 3, 1, NULL, NULL, &n);
    double e = test_rel_err_f(graphed, eager, n);
    printf("graph vs eager after 3 steps: relative error of the parameter change %.2e\n", e);
    expect_lt(e, same_kernels_bound(config.precision));
    free(eager), free(graphed);
}

/* Programmatic dependent launch only lets a kernel be scheduled early; each waits for the one
 * before it, so the same graph with and without it trains alike, within same_kernels_bound. A
 * kernel that read its input before waiting would show as a difference far above it. In float32:
 * every kernel is launched this way there, and their bf16 instances are the same code. (In bf16
 * EfficientNetV2-S's many small BN layers amplify the atomics' order past any bound that would
 * still catch a race.) EfficientNetV2-S takes one step for the same reason in float32: over three,
 * two runs without early launch can already part by more than float32's bound, and one step runs
 * every kernel with and without it all the same. */
static void test_pdl_matches_ordinary_launches(void **state) {
    model_config configs[] = {
        {.name = "resnet26", .batch = 16, .image_size = 32, .in_channels = 3, .classes = 10, .seed = 7,
         .precision = PRECISION_FP32},
        {.name = "efficientnetv2_s", .batch = 16, .image_size = 64, .in_channels = 3, .classes = 10, .seed = 7,
         .precision = PRECISION_FP32},
    };
    const int steps[] = {3, 1};
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        size_t n;
        float *ordinary = step_change(&configs[k], steps[k], 1, "SUITE_PDL", "0", &n);
        float *again = step_change(&configs[k], steps[k], 1, "SUITE_PDL", "0", &n);
        float *pdl = step_change(&configs[k], steps[k], 1, "SUITE_PDL", "1", &n);
        double e = test_rel_err_f(pdl, ordinary, n), spread = test_rel_err_f(again, ordinary, n);
        double bound = same_kernels_bound(configs[k].precision);
        printf("%s %s, %d step(s), relative difference of the parameter change: with against without programmatic "
               "dependent launch %.2e, two runs without it %.2e (bound %.0e)\n", configs[k].name,
               precision_name(configs[k].precision), steps[k], e, spread, bound);
        expect_lt(spread, bound);
        expect_lt(e, bound);
        free(ordinary), free(again), free(pdl);
    }
}

/* The weight-gradient lane (models/core/wgrad_lane.h) only moves work to a second stream: the weight
 * gradients, and the optimizer's update of each part of the weights once the pass is done with it
 * (trainer.c, in parts whose split the bf16 case checks: copies and gradients at offsets). Every
 * buffer a lane job reads is joined before the chain overwrites it. So a ResNet trains alike with
 * and without it, in a captured step and kernel by kernel, within same_kernels_bound; a join too
 * late would let the chain overwrite a gradient buffer under a running weight gradient, or update
 * a weight a data gradient still reads, which that bound is set to catch. */
static void test_wgrad_lane_matches_one_stream(void **state) {
    model_config configs[] = {
        {.name = "resnet26", .batch = 16, .image_size = 32, .in_channels = 3, .classes = 10, .seed = 7,
         .precision = PRECISION_FP32},
        {.name = "resnet50", .batch = 8, .image_size = 64, .in_channels = 3, .classes = 10, .seed = 7,
         .precision = PRECISION_FP32},
        {.name = "resnet26", .batch = 16, .image_size = 32, .in_channels = 3, .classes = 10, .seed = 7,
         .precision = PRECISION_BF16},
    };
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++)
        for (int graph = 0; graph <= 1; graph++) {
            size_t n;
            float *one = step_change(&configs[k], 3, graph, "SUITE_WGRAD_LANE", "0", &n);
            float *again = step_change(&configs[k], 3, graph, "SUITE_WGRAD_LANE", "0", &n);
            float *lane = step_change(&configs[k], 3, graph, "SUITE_WGRAD_LANE", "1", &n);
            double e = test_rel_err_f(lane, one, n), spread = test_rel_err_f(again, one, n);
            double bound = same_kernels_bound(configs[k].precision);
            printf("%s %s %s, 3 steps, relative difference of the parameter change: with against without the "
                   "weight-gradient lane %.2e, two runs without it %.2e (bound %.0e)\n", configs[k].name,
                   precision_name(configs[k].precision), graph ? "graphed" : "eager", e, spread, bound);
            expect_lt(spread, bound);
            expect_lt(e, bound);
            free(one), free(again), free(lane);
        }
}

static void test_out_of_memory_is_reported(void **state) {
    int rc = RUN_TRAIN("--model", "resnet152", "--data", "imagenet", "--batch", "8192", "--epochs", "1",
                       "--steps-per-epoch", "1", "--json");
    assert_int_equal(rc, 1);
    assert_non_null(strstr(err, "out of GPU memory"));
    assert_non_null(strstr(out, "\"event\":\"error\""));
}

/* Two epochs, not one: from scratch, one epoch of one-cycle at this rate lands anywhere in a few
 * points of accuracy from run to run (the batch norms' atomics reorder sums, and the trajectory
 * follows), which put one epoch's result on both sides of the bound. */
static void test_learns_fashion_mnist(void **state) {
    if (access(FASHION_MNIST_DEFAULT_ROOT "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("Fashion-MNIST is not installed: skipped\n");
        skip();
    }
    int rc = RUN_TRAIN("--model", "resnet26", "--data", "fashion-mnist", "--batch", "128", "--epochs", "2",
                       "--lr", "0.1", "--schedule", "one-cycle", "--warmup-pct", "0.15", "--eval", "--json");
    if (rc != 0) fail_msg("train exited %d: %s", rc, err);
    cJSON *list = events(), *last = NULL;
    for (int i = 0; i < cJSON_GetArraySize(list); i++)
        if (!strcmp(event_name(cJSON_GetArrayItem(list, i)), "epoch")) last = cJSON_GetArrayItem(list, i);
    if (!last) fail_msg("no epoch event in: %s", out);
    double acc = cJSON_GetObjectItem(last, "accuracy")->valuedouble;
    printf("two epochs of resnet26 on Fashion-MNIST: test accuracy %.4f, loss %.4f\n", acc,
           cJSON_GetObjectItem(last, "loss")->valuedouble);
    expect_gt(acc, 0.85);
    cJSON_Delete(list);
}

int main(void) {
    test_require_gpu();
    test_tmpdir(tmp, sizeof tmp);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_protocol_and_checkpoint), cmocka_unit_test(test_graph_matches_eager),
        cmocka_unit_test(test_pdl_matches_ordinary_launches), cmocka_unit_test(test_wgrad_lane_matches_one_stream),
        cmocka_unit_test(test_out_of_memory_is_reported), cmocka_unit_test(test_learns_fashion_mnist),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    test_rmtree(tmp);
    return rc;
}
