/* bench_dlrm: the recommender's training step alone, for the side-by-side table against PyTorch
 * (bench/run_dlrm_bench.sh, bench/torch_dlrm.py). Synthetic Criteo batches (planted-signal rows,
 * indices skewed towards small values as real categories are) are made on the host once and kept
 * on the GPU, as the PyTorch script keeps its own; each step copies its batch into an input slot
 * (device to device) and replays the captured step (forward, BCE, backward, SGD on the dense
 * layers and on the touched rows). Warm-up, then every step timed with CUDA events; prints the
 * median, p10 and p90 and the memory the model holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/criteo.h"
#include "base/spread.h"
#include "runner/cli.h"
#include "kernels/check.h"
#include "models/dlrm.h"

/* Input the options passed but the model refuses: exit 2, as for a bad option. */
static int refuse(const char *why) {
    fprintf(stderr, "bench_dlrm: %s\n", why);
    return 2;
}

typedef struct bench_args {
    char data[32];
    long max_rows, batch, steps, warmup, batches;
    float lr;
    int json, allow_tf32, use_graph;
} bench_args;

#define T bench_args
/* One row per option (the row format is in runner/cli.h). */
static const cli_option OPTIONS[] = {
    {"--data", "SET", "criteo-kaggle or criteo-terabyte shapes", CLI_TEXT(T, data), .fallback = "criteo-kaggle"},
    {"--max-rows", "N", "cap every embedding table at N rows (0: uncapped)", CLI_INT(T, max_rows, 0, 1LL << 40),
     .fallback = "1000000"},
    {"--batch", "N", "samples per step", CLI_INT(T, batch, 1, 65536), .fallback = "2048"},
    {"--steps", "N", "timed steps", CLI_INT(T, steps, 1, 100000), .fallback = "200"},
    {"--warmup", "N", "untimed steps first", CLI_INT(T, warmup, 0, 100000), .fallback = "30"},
    {"--batches", "N", "distinct batches kept on the GPU", CLI_INT(T, batches, 1, 256), .fallback = "8"},
    {"--lr", "X", "SGD learning rate", CLI_REAL(T, lr, 0, 100), .fallback = "1.0"},
    {"--no-tf32", NULL, "strict float32", CLI_FLAG(T, allow_tf32, 0)},
    {"--no-graph", NULL, "run the step kernel by kernel instead of as a CUDA graph", CLI_FLAG(T, use_graph, 0)},
    {"--json", NULL, "one JSON line instead of text", CLI_FLAG(T, json, 1)},
    {0}};
#undef T

static const cli_program PROGRAM = {
    .name = "bench_dlrm", .synopsis = "usage: bench_dlrm [options]", .options = OPTIONS};

int main(int argc, char **argv) {
    bench_args args = {.allow_tf32 = 1, .use_graph = 1};
    cli_parse_or_exit(&PROGRAM, &args, argc, argv);
    const char *data = args.data;
    long max_rows = args.max_rows, batch = args.batch, steps = args.steps, warmup = args.warmup,
         batches = args.batches;
    float lr = args.lr;
    int json = args.json, allow_tf32 = args.allow_tf32, use_graph = args.use_graph;
    char err[4096];
    dlrm_config config;
    dlrm m;
    if (dlrm_config_named(&config, data, max_rows, (int)batch, 1, err, sizeof err) != 0 ||
        dlrm_plan(&m, &config, 0, err, sizeof err) != 0)
        return refuse(err);
    job_context ctx;
    if (context_init(&ctx, 0, (size_t)64 << 20, allow_tf32) != CONTEXT_OK) {
        fprintf(stderr, "bench_dlrm: no usable GPU\n");
        return 1;
    }
    if (dlrm_start(&m, &ctx, err, sizeof err) != 0) {
        fprintf(stderr, "bench_dlrm: %s\n", err);
        return 1;
    }

    /* distinct batches, made once on the host, kept on the GPU */
    criteo_synthetic_spec spec = {batch * batches, {0}, 7};
    memcpy(spec.table_sizes, config.rows, sizeof spec.table_sizes);
    criteo *rows;
    if (criteo_open_synthetic(&rows, &spec, err, sizeof err) != 0) return refuse(err);
    size_t block_bytes = dlrm_input_bytes(&config);
    char *host = calloc(1, block_bytes), *device = NULL;
    int64_t *indices = malloc((size_t)batch * sizeof *indices);
    CHECK_CUDA(cudaMalloc((void **)&device, block_bytes * (size_t)batches));
    for (long k = 0; k < batches; k++) {
        dlrm_input in = dlrm_input_at(&config, host);
        for (long i = 0; i < batch; i++) indices[i] = k * batch + i;
        if (criteo_read(rows, in.dense, in.indices, in.labels, indices, (int)batch, err, sizeof err) != 0)
            return refuse(err);
        CHECK_CUDA(cudaMemcpy(device + k * block_bytes, host, block_bytes, cudaMemcpyHostToDevice));
    }
    CHECK_CUDA(cudaDeviceSynchronize()); /* the job's stream does not wait for the legacy one */
    criteo_close(rows);
    free(host), free(indices);

    dlrm_lr_policy constant = {lr, 0, 0, 0};
    dlrm_prepare(&m, constant, use_graph);
    cudaStream_t stream = ctx.stream;
    cudaEvent_t *marks = malloc((size_t)(steps + 1) * sizeof *marks);
    float *ms = malloc((size_t)steps * sizeof *ms);
    for (long i = 0; i <= steps; i++) CHECK_CUDA(cudaEventCreate(&marks[i]));
    for (long i = 0; i < warmup + steps; i++) {
        if (i == warmup) CHECK_CUDA(cudaEventRecord(marks[0], stream));
        int slot = (int)(i & 1);
        CHECK_CUDA(cudaMemcpyAsync(m.input_block[slot], device + (i % batches) * block_bytes, block_bytes,
                                   cudaMemcpyDeviceToDevice, stream));
        dlrm_train_step(&m, slot);
        if (i >= warmup) CHECK_CUDA(cudaEventRecord(marks[i - warmup + 1], stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(stream));
    for (long i = 0; i < steps; i++) CHECK_CUDA(cudaEventElapsedTime(&ms[i], marks[i], marks[i + 1]));
    spread_sort_floats(ms, (size_t)steps);
    double loss_sum, correct;
    dlrm_take_sums(&m, &loss_sum, &correct);
    dlrm_footprint f = dlrm_footprint_of(&m);
    size_t held = ctx.arena.allocated + ctx.workspace_bytes + f.embeddings;
    struct cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
    double median = ms[steps / 2], mean_loss = loss_sum / ((double)(warmup + steps) * batch);
    if (json)
        printf("{\"impl\":\"suite\",\"data\":\"%s\",\"max_rows\":%ld,\"batch\":%ld,\"batches\":%ld,\"median_ms\":%.4f,"
               "\"p10_ms\":%.4f,\"p90_ms\":%.4f,\"samples_per_s\":%.1f,\"params\":%lld,\"embedding_bytes\":%zu,"
               "\"peak_bytes\":%zu,\"tf32\":%d,\"graph\":%d,\"mean_loss\":%.5f,\"device\":\"%s\"}\n",
               data, max_rows, batch, batches, median, ms[steps / 10], ms[steps * 9 / 10], batch / (median * 1e-3),
               (long long)m.param_count, f.embeddings, held, allow_tf32, use_graph, mean_loss, prop.name);
    else
        printf("dlrm %s (--max-rows %ld) batch %ld: median %.3f ms (p10 %.3f, p90 %.3f), %.0f samples/s, %.2f GiB "
               "(tables %.2f GiB), mean loss %.4f\n", data, max_rows, batch, median, ms[steps / 10], ms[steps * 9 / 10],
               batch / (median * 1e-3), held / 1073741824.0, f.embeddings / 1073741824.0, mean_loss);
    for (long i = 0; i <= steps; i++) CHECK_CUDA(cudaEventDestroy(marks[i]));
    free(marks), free(ms);
    CHECK_CUDA(cudaFree(device));
    dlrm_free(&m);
    context_free(&ctx);
    return 0;
}
