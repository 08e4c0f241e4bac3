/* bench_step: the suite's training step alone, for the side-by-side table against PyTorch
 * (bench/run_model_bench.sh). Synthetic data already on the GPU, as in the PyTorch script; the
 * captured step (forward, loss, backward, SGD) is replayed after a warm-up and each replay is
 * timed with events; prints the median, p10 and p90 and the GPU memory the session holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_profiler_api.h>

#include "kernels/check.h"
#include "base/rng.h"
#include "base/spread.h"
#include "models/session.h"
#include "runner/cli.h"

/* Input the options passed but the model refuses: exit 2, as for a bad option. */
static int refuse(const char *why) {
    fprintf(stderr, "bench_step: %s\n", why);
    return 2;
}

static const cli_choice OPTIMIZERS[] = {{"sgd", OPTIMIZER_SGD}, {"adamw", OPTIMIZER_ADAMW}, {0}};

typedef struct bench_args {
    char model[32];
    int image_size, batch, classes, steps, warmup, workspace_mb, json, allow_tf32, profile;
    optimizer_kind optimizer;
    const char *precision;
} bench_args;

#define T bench_args
/* One row per option (the row format is in runner/cli.h). */
static const cli_option OPTIONS[] = {
    {"--model", "NAME", "resnet26, resnet50, resnet152, efficientnetv2_s or cait_xxs24", CLI_TEXT(T, model)},
    {"--image-size", "N", "image side", CLI_INT(T, image_size, 8, 2048), .fallback = "64"},
    {"--batch", "N", "samples per step", CLI_INT(T, batch, 1, 65536), .fallback = "128"},
    {"--classes", "N", "classes", CLI_INT(T, classes, 2, 1000000), .fallback = "1000"},
    {"--steps", "N", "timed steps", CLI_INT(T, steps, 1, 1000000), .fallback = "100"},
    {"--warmup", "N", "untimed steps first", CLI_INT(T, warmup, 0, 1000000), .fallback = "20"},
    {"--precision", "tf32|fp32|bf16", "the step's arithmetic", CLI_STR(T, precision), .fallback = "tf32"},
    {"--no-tf32", NULL, "strict float32 (as --precision fp32)", CLI_FLAG(T, allow_tf32, 0)},
    {"--workspace-mb", "N", "cuDNN workspace bound", CLI_INT(T, workspace_mb, 0, 1 << 20), .fallback = "512"},
    {"--optimizer", NULL, "sgd (lr 0.1, momentum 0.9, weight decay 5e-4) or adamw (lr 1e-3, weight decay 0.05)",
     CLI_CHOICE(T, optimizer, OPTIMIZERS), .fallback = "sgd"},
    {"--json", NULL, "one JSON line instead of text", CLI_FLAG(T, json, 1)},
    {"--profile", NULL, "after the timed steps, one more step between cudaProfilerStart and Stop (for ncu "
     "--profile-from-start off; bench/kernel_breakdown.py sums it by kind)", CLI_FLAG(T, profile, 1)},
    {0}};
#undef T

static const cli_program PROGRAM = {
    .name = "bench_step", .synopsis = "usage: bench_step --model NAME --image-size N --batch N [options]",
    .options = OPTIONS};

int main(int argc, char **argv) {
    bench_args args = {.allow_tf32 = 1};
    cli_parse_or_exit(&PROGRAM, &args, argc, argv);
    if (!args.model[0]) return refuse("--model is required");
    model_config config = {.name = "", .batch = args.batch, .image_size = args.image_size, .in_channels = 3,
                           .classes = args.classes, .seed = 1};
    snprintf(config.name, sizeof config.name, "%s", args.model);
    if (precision_parse(args.precision, &config.precision) != 0) {
        fprintf(stderr, "bench_step: --precision: expected tf32, fp32 or bf16, got '%s'\n", args.precision);
        return 2;
    }
    int steps = args.steps, warmup = args.warmup, json = args.json;
    int allow_tf32 = args.allow_tf32 && config.precision != PRECISION_FP32;
    size_t workspace_mb = (size_t)args.workspace_mb;
    optimizer_config opt = {.kind = OPTIMIZER_SGD, .momentum = 0.9f, .weight_decay = 5e-4f};
    float lr = 0.1f;
    if (args.optimizer == OPTIMIZER_ADAMW) opt = (optimizer_config){.kind = OPTIMIZER_ADAMW, .weight_decay = 0.05f}, lr = 1e-3f;
    if (!allow_tf32 && config.precision == PRECISION_TF32) config.precision = PRECISION_FP32;
    session s;
    char err[512];
    /* What the job takes from the device, measured: the arena and workspaces, and what cuDNN,
     * cuBLAS and the graph allocate themselves (the CUDA context's own memory excluded). */
    size_t free_before, free_after, total;
    CHECK_CUDA(cudaFree(0));
    CHECK_CUDA(cudaMemGetInfo(&free_before, &total));
    if (session_plan(&s, &config, err, sizeof err) != 0) return refuse(err);
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
    CHECK_CUDA(cudaMemGetInfo(&free_after, &total));
    size_t device_bytes = free_before > free_after ? free_before - free_after : 0;
    for (int i = 0; i < steps; i++) CHECK_CUDA(cudaEventElapsedTime(&ms[i], marks[i], marks[i + 1]));
    spread_sort_floats(ms, (size_t)steps);
    double loss_sum, correct;
    trainer_take_sums(&s.trainer, &loss_sum, &correct);
    if (args.profile) {
        CHECK_CUDA(cudaProfilerStart());
        CHECK_CUDA(cudaGraphLaunch(s.trainer.exec, s.ctx.stream));
        CHECK_CUDA(cudaStreamSynchronize(s.ctx.stream));
        CHECK_CUDA(cudaProfilerStop());
    }
    struct cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    double flops = 3.0 * m->flops_per_step_forward, median = ms[steps / 2];
    if (json)
        printf("{\"impl\":\"suite\",\"model\":\"%s\",\"image_size\":%d,\"batch\":%d,\"classes\":%d,"
               "\"median_ms\":%.4f,\"p10_ms\":%.4f,\"p90_ms\":%.4f,\"peak_bytes\":%zu,\"device_bytes\":%zu,\"flops_per_step\":%.6g,"
               "\"tf32\":%d,\"precision\":\"%s\",\"mean_loss\":%.5f,\"device\":\"%s\"}\n",
               config.name, config.image_size, config.batch, config.classes, median, ms[steps / 10],
               ms[steps * 9 / 10], session_gpu_bytes(&s), device_bytes, flops, allow_tf32,
               precision_name(config.precision),
               loss_sum / ((double)(warmup + steps) * config.batch), prop.name);
    else
        printf("%s %s %dx%d batch %d: median %.3f ms (p10 %.3f, p90 %.3f), %.1f TFLOP/s, %.2f GiB (%.2f GiB "
               "taken from the device)\n", config.name,
               precision_name(config.precision), config.image_size, config.image_size, config.batch, median, ms[steps / 10], ms[steps * 9 / 10],
               flops / (median * 1e-3) / 1e12, session_gpu_bytes(&s) / 1073741824.0,
               device_bytes / 1073741824.0);
    for (int i = 0; i <= steps; i++) CHECK_CUDA(cudaEventDestroy(marks[i]));
    free(marks), free(ms), free(images), free(labels);
    session_end(&s);
    return 0;
}
