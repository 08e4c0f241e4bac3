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
#include "models/check.h"
#include "models/dlrm.h"

static int compare_floats(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int usage(const char *why) {
    fprintf(stderr, "bench_dlrm: %s\nusage: bench_dlrm [--data criteo-kaggle|criteo-terabyte] [--max-rows N (1000000; "
            "0: uncapped)] [--batch N (2048)] [--steps N (200)] [--warmup N (30)] [--batches N (8)] [--lr X (1.0)] "
            "[--no-tf32] [--no-graph] [--json]\n", why);
    return 2;
}

int main(int argc, char **argv) {
    char data[32] = "criteo-kaggle";
    long max_rows = 1000000, batch = 2048, steps = 200, warmup = 30, batches = 8;
    float lr = 1.0f;
    int json = 0, allow_tf32 = 1, use_graph = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--no-tf32")) { allow_tf32 = 0; continue; }
        if (!strcmp(a, "--no-graph")) { use_graph = 0; continue; }
        if (!v) return usage("an option lacks its value");
        char *end = NULL;
        long n = strtol(v, &end, 10);
        int whole = *v && !*end;
        if (!strcmp(a, "--data")) snprintf(data, sizeof data, "%s", v);
        else if (!strcmp(a, "--max-rows") && whole && n >= 0) max_rows = n;
        else if (!strcmp(a, "--batch") && whole && n >= 1 && n <= 65536) batch = n;
        else if (!strcmp(a, "--steps") && whole && n >= 1 && n <= 100000) steps = n;
        else if (!strcmp(a, "--warmup") && whole && n >= 0) warmup = n;
        else if (!strcmp(a, "--batches") && whole && n >= 1 && n <= 256) batches = n;
        else if (!strcmp(a, "--lr")) lr = strtof(v, NULL);
        else return usage(a);
        i++;
    }
    char err[4096];
    dlrm_config config;
    dlrm m;
    if (dlrm_config_named(&config, data, max_rows, (int)batch, 1, err, sizeof err) != 0 ||
        dlrm_plan(&m, &config, 0, err, sizeof err) != 0)
        return usage(err);
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
    if (criteo_open_synthetic(&rows, &spec, err, sizeof err) != 0) return usage(err);
    size_t block_bytes = dlrm_input_bytes(&config);
    char *host = calloc(1, block_bytes), *device = NULL;
    int64_t *indices = malloc((size_t)batch * sizeof *indices);
    CHECK_CUDA(cudaMalloc((void **)&device, block_bytes * (size_t)batches));
    for (long k = 0; k < batches; k++) {
        dlrm_input in = dlrm_input_at(&config, host);
        for (long i = 0; i < batch; i++) indices[i] = k * batch + i;
        if (criteo_read(rows, in.dense, in.indices, in.labels, indices, (int)batch, err, sizeof err) != 0)
            return usage(err);
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
    qsort(ms, (size_t)steps, sizeof *ms, compare_floats);
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
