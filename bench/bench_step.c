/* bench_step: the suite's training step alone, for the side-by-side table against PyTorch
 * (bench/run_model_bench.sh). Synthetic data already on the GPU, as in the PyTorch script; the
 * captured step (forward, loss, backward, SGD) is replayed after a warm-up and each replay is
 * timed with events; prints the median, p10 and p90 and the GPU memory the session holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/check.h"
#include "models/rng.h"
#include "models/session.h"

static int compare_floats(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int usage(const char *why) {
    fprintf(stderr, "bench_step: %s\nusage: bench_step --model NAME --image-size N --batch N [--classes N] "
            "[--steps N] [--warmup N] [--no-tf32] [--workspace-mb N] [--optimizer sgd|adamw] [--json]\n", why);
    return 2;
}

int main(int argc, char **argv) {
    model_config config = {.name = "", .batch = 128, .image_size = 64, .in_channels = 3, .classes = 1000, .seed = 1};
    int steps = 100, warmup = 20, json = 0, allow_tf32 = 1;
    size_t workspace_mb = 512;
    optimizer_config opt = {.kind = OPTIMIZER_SGD, .momentum = 0.9f, .weight_decay = 5e-4f};
    float lr = 0.1f;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--no-tf32")) { allow_tf32 = 0; continue; }
        if (!v) return usage("an option lacks its value");
        long n = strtol(v, NULL, 10);
        if (!strcmp(a, "--model")) snprintf(config.name, sizeof config.name, "%s", v);
        else if (!strcmp(a, "--optimizer") && !strcmp(v, "adamw"))
            opt = (optimizer_config){.kind = OPTIMIZER_ADAMW, .weight_decay = 0.05f}, lr = 1e-3f;
        else if (!strcmp(a, "--optimizer") && !strcmp(v, "sgd")) opt.kind = OPTIMIZER_SGD;
        else if (!strcmp(a, "--image-size")) config.image_size = (int)n;
        else if (!strcmp(a, "--batch")) config.batch = (int)n;
        else if (!strcmp(a, "--classes")) config.classes = (int)n;
        else if (!strcmp(a, "--steps") && n > 0) steps = (int)n;
        else if (!strcmp(a, "--warmup") && n >= 0) warmup = (int)n;
        else if (!strcmp(a, "--workspace-mb") && n >= 0) workspace_mb = (size_t)n;
        else return usage(a);
        i++;
    }
    session s;
    char err[512];
    if (session_plan(&s, &config, err, sizeof err) != 0) return usage(err);
    if (session_start(&s, 0, workspace_mb << 20, allow_tf32, optimizer_slots(opt.kind), err, sizeof err) != 0) {
        fprintf(stderr, "bench_step: %s\n", err);
        return 1;
    }
    model *m = s.model;
    size_t input_floats = (size_t)config.batch * config.image_size * config.image_size * config.in_channels;
    float *images = malloc(input_floats * sizeof *images);
    int32_t *labels = malloc((size_t)config.batch * sizeof *labels);
    uint64_t rng = 42;
    for (size_t i = 0; i < input_floats; i++) images[i] = rng_normal(&rng);
    for (int i = 0; i < config.batch; i++) labels[i] = (int32_t)(rng_next(&rng) % (uint64_t)config.classes);
    CHECK_CUDA(cudaMemcpy(m->input, images, input_floats * sizeof *images, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(m->labels, labels, (size_t)config.batch * sizeof *labels, cudaMemcpyHostToDevice));

    lr_schedule constant = {LR_CONSTANT, lr, 0, 0, 0, 0, 0, 25, 1e4f};
    trainer_init(&s.trainer, m, &s.ctx, opt, constant, 0.0f, 1);
    for (int i = 0; i < warmup; i++) CHECK_CUDA(cudaGraphLaunch(s.trainer.exec, s.ctx.stream));
    cudaEvent_t *marks = malloc((size_t)(steps + 1) * sizeof *marks);
    float *ms = malloc((size_t)steps * sizeof *ms);
    for (int i = 0; i <= steps; i++) CHECK_CUDA(cudaEventCreate(&marks[i]));
    CHECK_CUDA(cudaEventRecord(marks[0], s.ctx.stream));
    for (int i = 0; i < steps; i++) {
        CHECK_CUDA(cudaGraphLaunch(s.trainer.exec, s.ctx.stream));
        CHECK_CUDA(cudaEventRecord(marks[i + 1], s.ctx.stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(s.ctx.stream));
    for (int i = 0; i < steps; i++) CHECK_CUDA(cudaEventElapsedTime(&ms[i], marks[i], marks[i + 1]));
    qsort(ms, (size_t)steps, sizeof *ms, compare_floats);
    double loss_sum, correct;
    trainer_take_sums(&s.trainer, &loss_sum, &correct);
    struct cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    double flops = 3.0 * m->flops_per_step_forward, median = ms[steps / 2];
    if (json)
        printf("{\"impl\":\"suite\",\"model\":\"%s\",\"image_size\":%d,\"batch\":%d,\"classes\":%d,"
               "\"median_ms\":%.4f,\"p10_ms\":%.4f,\"p90_ms\":%.4f,\"peak_bytes\":%zu,\"flops_per_step\":%.6g,"
               "\"tf32\":%d,\"mean_loss\":%.5f,\"device\":\"%s\"}\n",
               config.name, config.image_size, config.batch, config.classes, median, ms[steps / 10],
               ms[steps * 9 / 10], session_gpu_bytes(&s), flops, allow_tf32,
               loss_sum / ((double)(warmup + steps) * config.batch), prop.name);
    else
        printf("%s %dx%d batch %d: median %.3f ms (p10 %.3f, p90 %.3f), %.1f TFLOP/s, %.2f GiB\n", config.name,
               config.image_size, config.image_size, config.batch, median, ms[steps / 10], ms[steps * 9 / 10],
               flops / (median * 1e-3) / 1e12, session_gpu_bytes(&s) / 1073741824.0);
    for (int i = 0; i <= steps; i++) CHECK_CUDA(cudaEventDestroy(marks[i]));
    free(marks), free(ms), free(images), free(labels);
    session_end(&s);
    return 0;
}
