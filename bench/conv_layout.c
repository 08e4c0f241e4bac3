/* conv_layout: which tensor layout should the suite use? Times every convolution of a ResNet
 * (forward, backward-data, backward-filter, each with the fastest algorithm cuDNN finds) in NCHW
 * and in NHWC with TF32 enabled, and prints the summed step time of the convolutions per layout.
 * The whole step's other work (BN, pooling) is layout-specific code of ours, so the convolutions
 * are what the choice decides. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "base/spread.h"
#include "models/model_build.h"
#include "models/resnet.h"
#include "runner/cli.h"

#define MAX_CONVS 256
#define REPEATS 15

typedef struct bench_args {
    int verbose;
} bench_args;

static const cli_option OPTIONS[] = {
    {"--verbose", NULL, "each convolution's times and the algorithms cuDNN picked",
     CLI_FLAG(bench_args, verbose, 1)},
    {0}};

static const cli_program PROGRAM = {.name = "conv_layout", .synopsis = "usage: conv_layout [--verbose]",
                                    .options = OPTIONS};

static float median_of(float *ms, int n) {
    spread_sort_floats(ms, (size_t)n);
    return ms[n / 2];
}

/* Median milliseconds of forward + backward (data and filter) of one convolution; with --verbose
 * each direction's time and the algorithm and math type cuDNN picked. */
static float time_conv(conv_shape shape, job_context *ctx, float *buffers[4], conv_algo_cache *cache,
                       int verbose) {
    arena plan, *a = &ctx->arena;
    arena_plan(&plan);
    conv_layer c;
    conv_init(&c, &plan, shape);
    arena_free(a);
    if (arena_allocate(a, &plan, 0) != 0) exit(1);
    conv_init(&c, a, shape);
    float *x = buffers[0], *y = buffers[1], *dx = buffers[2], *dy = buffers[3];
    conv_setup(&c, y, x, dx, 0, cache, ctx);
    cudaEvent_t start, stop;
    CHECK_CUDA(cudaEventCreate(&start));
    CHECK_CUDA(cudaEventCreate(&stop));
    float ms[2][REPEATS];
    for (int r = -3; r < REPEATS; r++)
        for (int d = 0; d < 2; d++) {
            CHECK_CUDA(cudaEventRecord(start, ctx->stream));
            if (d == 0) conv_forward(&c, y, x, ctx);
            else conv_backward(&c, dx, dy, x, ctx);
            CHECK_CUDA(cudaEventRecord(stop, ctx->stream));
            CHECK_CUDA(cudaEventSynchronize(stop));
            if (r >= 0) CHECK_CUDA(cudaEventElapsedTime(&ms[d][r], start, stop));
        }
    CHECK_CUDA(cudaEventDestroy(start));
    CHECK_CUDA(cudaEventDestroy(stop));
    float fwd = median_of(ms[0], REPEATS), bwd = median_of(ms[1], REPEATS);
    const conv_algos *al = &c.algos;
    if (verbose)
        printf("  %s n%d %4d->%-4d %2dx%-3d k%d s%d: fwd %.3f ms (%s), backward %.3f ms (data %s, filter %s), "
               "%.1f TFLOP/s\n", shape.format == CUDNN_TENSOR_NHWC ? "NHWC" : "NCHW", shape.batch, shape.in_c,
               shape.out_c, shape.h_in, shape.w_in, shape.kernel, shape.stride, fwd,
               al->use_engine[0] ? al->engine[0].name : "legacy", bwd,
               al->use_engine[1] ? al->engine[1].name : "legacy", al->use_engine[2] ? al->engine[2].name : "legacy",
               3 * conv_flops(&c) / ((fwd + bwd) * 1e-3) / 1e12);
    conv_destroy(&c);
    return fwd + bwd;
}

int main(int argc, char **argv) {
    bench_args args = {0};
    cli_parse_or_exit(&PROGRAM, &args, argc, argv);
    struct { const char *name; int size, batch; } cases[] = {
        {"resnet26", 32, 128}, {"resnet50", 64, 128}, {"resnet152", 224, 32}};
    job_context ctx;
    if (context_init(&ctx, 0, (size_t)512 << 20, 1) != CONTEXT_OK) return 1;
    context_reserve_workspace(&ctx, ctx.workspace_limit);
    printf("%-10s %-8s %6s %12s %12s %8s\n", "model", "input", "batch", "NCHW ms", "NHWC ms", "NHWC/NCHW");
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        model_config config = {.name = "", .batch = cases[k].batch, .image_size = cases[k].size, .in_channels = 3, .classes = 1000, .seed = 0};
        snprintf(config.name, sizeof config.name, "%s", cases[k].name);
        arena plan;
        arena_plan(&plan);
        char err[256];
        model *m = model_build(&config, &plan, err, sizeof err);
        conv_shape shapes[MAX_CONVS];
        int n = resnet_conv_shapes(m, shapes, MAX_CONVS);
        size_t largest = 0;
        for (int i = 0; i < n; i++) {
            size_t in = (size_t)shapes[i].batch * shapes[i].in_c * shapes[i].h_in * shapes[i].w_in;
            size_t out = (size_t)shapes[i].batch * shapes[i].out_c * shapes[i].h_out * shapes[i].w_out;
            largest = in > largest ? in : largest;
            largest = out > largest ? out : largest;
        }
        float *buffers[4];
        for (int b = 0; b < 4; b++) {
            CHECK_CUDA(cudaMalloc((void **)&buffers[b], largest * sizeof(float)));
            CHECK_CUDA(cudaMemset(buffers[b], 0x3c, largest * sizeof(float))); /* ~0.01, not zero */
        }
        double total[2] = {0, 0};
        cudnnTensorFormat_t formats[2] = {CUDNN_TENSOR_NCHW, CUDNN_TENSOR_NHWC};
        for (int f = 0; f < 2; f++) {
            static conv_algo_cache cache;
            conv_algo_cache_free(&cache);
            float timed[MAX_CONVS];
            for (int i = 0; i < n; i++) {
                shapes[i].format = formats[f];
                int seen = -1; /* identical shapes repeat: time each once */
                for (int p = 0; p < i && seen < 0; p++)
                    if (!memcmp(&shapes[p], &shapes[i], sizeof shapes[i])) seen = p;
                timed[i] = seen >= 0 ? timed[seen] : time_conv(shapes[i], &ctx, buffers, &cache, args.verbose);
                total[f] += timed[i];
            }
        }
        printf("%-10s %3dx%-4d %6d %12.3f %12.3f %8.2f\n", cases[k].name, cases[k].size, cases[k].size,
               cases[k].batch, total[0], total[1], total[1] / total[0]);
        for (int b = 0; b < 4; b++) CHECK_CUDA(cudaFree(buffers[b]));
        model_free(m);
    }
    context_free(&ctx);
    return 0;
}
