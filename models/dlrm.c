/* The recommender's configurations, plan, allocation and initial values (the step itself is in
 * models/dlrm_step.c). The plan runs on the host, from sizes alone, so `train --dry-run` can
 * report Criteo Terabyte's 24 billion parameters and their footprint without a GPU. */
#include "models/dlrm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "base/rng.h"

/* Kaggle Display Advertising Challenge: the categories the reference's preprocessing counts
 * (the table sizes torchrec and MLPerf list for it). */
static const int64_t KAGGLE_ROWS[26] = {
    1460, 583, 10131227, 2202608, 305, 24, 12517, 633, 3, 93145, 5683, 8351593, 3194,
    27, 14992, 5461306, 10, 5652, 2173, 4, 7046547, 18, 15, 286181, 105, 142572};
/* Criteo Terabyte as MLPerf trains it: the reference's --max-ind-range=40000000. */
static const int64_t TERABYTE_ROWS[26] = {
    39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346, 10,
    2208, 11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36};

const int64_t *dlrm_table_sizes(const char *name) {
    if (!strcmp(name, "criteo-kaggle")) return KAGGLE_ROWS;
    if (!strcmp(name, "criteo-terabyte")) return TERABYTE_ROWS;
    return NULL;
}

int dlrm_config_named(dlrm_config *c, const char *name, int64_t max_rows, int batch, uint64_t seed,
                      char *err, size_t err_size) {
    memset(c, 0, sizeof *c);
    const int64_t *sizes = dlrm_table_sizes(name);
    if (!sizes) {
        snprintf(err, err_size, "dlrm: unknown configuration '%s': expected criteo-kaggle or criteo-terabyte", name);
        return -1;
    }
    if (max_rows < 0) {
        snprintf(err, err_size, "dlrm: max_rows %lld, expected 0 (uncapped) or a positive cap", (long long)max_rows);
        return -1;
    }
    int kaggle = sizes == KAGGLE_ROWS;
    snprintf(c->name, sizeof c->name, "%s", name);
    c->tables = 26;
    c->dim = kaggle ? 16 : 128;
    for (int t = 0; t < c->tables; t++) c->rows[t] = max_rows > 0 && sizes[t] > max_rows ? max_rows : sizes[t];
    static const int kaggle_bottom[] = {DLRM_DENSE, 512, 256, 64, 16}, kaggle_top[] = {512, 256, 1};
    static const int tb_bottom[] = {DLRM_DENSE, 512, 256, 128}, tb_top[] = {1024, 1024, 512, 256, 1};
    const int *bottom = kaggle ? kaggle_bottom : tb_bottom, *top = kaggle ? kaggle_top : tb_top;
    c->bottom_layers = kaggle ? 4 : 3;
    c->top_layers = kaggle ? 3 : 5;
    memcpy(c->bottom, bottom, (size_t)(c->bottom_layers + 1) * sizeof(int));
    c->top[0] = dlrm_interaction_width(c->tables, c->dim); /* 367 and 479 */
    memcpy(c->top + 1, top, (size_t)c->top_layers * sizeof(int));
    c->batch = batch;
    c->max_rows = max_rows;
    c->seed = seed;
    return dlrm_config_check(c, err, err_size);
}

int dlrm_config_check(const dlrm_config *c, char *err, size_t err_size) {
    const char *n = c->name[0] ? c->name : "dlrm";
    if (c->tables < 1 || c->tables > DLRM_MAX_TABLES || c->dim < 1) {
        snprintf(err, err_size, "%s: %d tables of dim %d, expected 1..%d tables and dim >= 1", n, c->tables,
                 c->dim, DLRM_MAX_TABLES);
        return -1;
    }
    /* the interaction kernel stages the features and the pair matrix in 48 KiB of shared memory */
    size_t F = (size_t)c->tables + 1;
    if ((F * (c->dim + 1) + F * F) * sizeof(float) > 48 * 1024) {
        snprintf(err, err_size, "%s: %d tables of dim %d are too many for the interaction kernel", n, c->tables, c->dim);
        return -1;
    }
    uint64_t total = 0;
    for (int t = 0; t < c->tables; t++) {
        if (c->rows[t] < 1 || c->rows[t] > INT32_MAX) {
            snprintf(err, err_size, "%s: table %d has %lld rows, expected 1..%d", n, t, (long long)c->rows[t], INT32_MAX);
            return -1;
        }
        total += (uint64_t)c->rows[t];
    }
    if (total >= DLRM_NO_ROW) {
        snprintf(err, err_size, "%s: the tables hold %llu rows in all; at most %u are supported (cap them "
                 "with --max-rows)", n, (unsigned long long)total, DLRM_NO_ROW - 1);
        return -1;
    }
    if (c->bottom_layers < 1 || c->bottom_layers > DLRM_MAX_LAYERS || c->top_layers < 1 ||
        c->top_layers > DLRM_MAX_LAYERS) {
        snprintf(err, err_size, "%s: %d bottom and %d top layers, expected 1..%d each", n, c->bottom_layers,
                 c->top_layers, DLRM_MAX_LAYERS);
        return -1;
    }
    for (int i = 0; i <= c->bottom_layers; i++)
        if (c->bottom[i] < 1) goto bad_width;
    for (int i = 0; i <= c->top_layers; i++)
        if (c->top[i] < 1) goto bad_width;
    if (c->bottom[c->bottom_layers] != c->dim) {
        snprintf(err, err_size, "%s: the bottom MLP ends in %d features, the embeddings have %d (they must "
                 "match for the dot interaction)", n, c->bottom[c->bottom_layers], c->dim);
        return -1;
    }
    int width = dlrm_interaction_width(c->tables, c->dim);
    if (c->top[0] != width || c->top[c->top_layers] != 1) {
        snprintf(err, err_size, "%s: the top MLP goes from %d to %d features, expected from the interaction's "
                 "%d to 1", n, c->top[0], c->top[c->top_layers], width);
        return -1;
    }
    if (c->batch < 1 || (int64_t)c->batch * c->tables + 1 > INT32_MAX || c->bag_capacity < 0) {
        snprintf(err, err_size, "%s: batch %d with %d tables (bag capacity %d): expected batch >= 1, batch x "
                 "tables below 2^31 and a capacity >= 0", n, c->batch, c->tables, c->bag_capacity);
        return -1;
    }
    return 0;
bad_width:
    snprintf(err, err_size, "%s: an MLP layer has a width below 1", n);
    return -1;
}

static size_t align_input(size_t bytes) {
    return (bytes + DLRM_INPUT_ALIGN - 1) / DLRM_INPUT_ALIGN * DLRM_INPUT_ALIGN;
}

static int capacity_of(const dlrm_config *c) {
    return c->bag_capacity > 0 ? c->bag_capacity : c->batch * c->tables;
}

void dlrm_input_offsets(const dlrm_config *c, size_t offsets[4]) {
    offsets[0] = 0;
    offsets[1] = align_input((size_t)c->batch * c->bottom[0] * sizeof(float));
    offsets[2] = offsets[1] + align_input((size_t)capacity_of(c) * sizeof(int32_t));
    offsets[3] = c->bag_capacity > 0 ? offsets[2] + align_input((size_t)c->batch * sizeof(float)) : 0;
}

size_t dlrm_input_bytes(const dlrm_config *c) {
    size_t offsets[4];
    dlrm_input_offsets(c, offsets);
    size_t labels_end = offsets[2] + align_input((size_t)c->batch * sizeof(float));
    if (c->bag_capacity == 0) return labels_end;
    return offsets[3] + align_input(((size_t)c->tables * c->batch + 1) * sizeof(int32_t));
}

dlrm_input dlrm_input_at(const dlrm_config *c, void *base) {
    size_t offsets[4];
    dlrm_input_offsets(c, offsets);
    char *p = base;
    dlrm_input in = {(float *)p, (int32_t *)(p + offsets[1]), (float *)(p + offsets[2]),
                     c->bag_capacity > 0 ? (int32_t *)(p + offsets[3]) : NULL};
    return in;
}

/* Everything the dense part takes from the arena, the same way for the plan and for real. */
static void build_dense(dlrm *m, arena *a) {
    const dlrm_config *c = &m->config;
    const int B = c->batch;
    for (int i = 0; i < c->bottom_layers; i++) {
        linear_init(&m->bottom[i], a, B, c->bottom[i], c->bottom[i + 1]);
        m->bottom_out[i] = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)B * c->bottom[i + 1]);
        m->bottom_grad[i] = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)B * c->bottom[i + 1]);
    }
    for (int i = 0; i < c->top_layers; i++) {
        linear_init(&m->top[i], a, B, c->top[i], c->top[i + 1]);
        m->top_out[i] = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)B * c->top[i + 1]);
        m->top_grad[i] = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)B * c->top[i + 1]);
    }
    size_t emb = (size_t)B * c->tables * c->dim;
    m->emb_out = arena_take_floats(a, ARENA_ACTIVATIONS, emb);
    m->emb_grad = arena_take_floats(a, ARENA_ACTIVATIONS, emb);
    m->inter = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)B * m->interaction_width);
    m->inter_grad = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)B * m->interaction_width);
    m->probs = arena_take_floats(a, ARENA_ACTIVATIONS, B);
    size_t lookups = (size_t)m->capacity * sizeof(uint32_t);
    m->keys = arena_take(a, ARENA_ACTIVATIONS, lookups);
    m->vals = arena_take(a, ARENA_ACTIVATIONS, lookups);
    m->sorted_keys = arena_take(a, ARENA_ACTIVATIONS, lookups);
    m->sorted_vals = arena_take(a, ARENA_ACTIVATIONS, lookups);
    m->partials = arena_take_floats(a, ARENA_ACTIVATIONS, (size_t)m->capacity * c->dim);
    for (int s = 0; s < 2; s++) {
        m->input_block[s] = arena_take(a, ARENA_ACTIVATIONS, dlrm_input_bytes(c));
        if (!a->planning) m->input[s] = dlrm_input_at(c, m->input_block[s]);
    }
    m->sort_scratch = arena_take(a, ARENA_SCRATCH, m->sort_scratch_bytes);
    m->lr = arena_take_floats(a, ARENA_SCRATCH, 1);
    m->step = arena_take(a, ARENA_SCRATCH, sizeof(int64_t));
    m->sums = arena_take(a, ARENA_SCRATCH, 2 * sizeof(double));
}

static void add_param(dlrm *m, const char *name, param_kind kind, int ndim, int64_t d0, int64_t d1) {
    param_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.name, sizeof e.name, "%s", name);
    e.kind = kind;
    e.ndim = ndim;
    e.shape[0] = d0;
    e.shape[1] = d1;
    e.init = PARAM_INIT_NONE; /* drawn by dlrm_init_params */
    param_table_add(&m->params, &e);
    m->param_count += param_numel(&e);
}

/* The reference's state_dict order: emb_l (built first), then bot_l and top_l. */
static void build_param_table(dlrm *m) {
    const dlrm_config *c = &m->config;
    char name[PARAM_NAME_MAX];
    for (int t = 0; t < c->tables; t++) {
        snprintf(name, sizeof name, "emb_l.%d.weight", t);
        add_param(m, name, PARAM_WEIGHT, 2, c->rows[t], c->dim);
    }
    const char *prefix[2] = {"bot_l", "top_l"};
    for (int mlp = 0; mlp < 2; mlp++) {
        const int *w = mlp ? c->top : c->bottom, layers = mlp ? c->top_layers : c->bottom_layers;
        for (int i = 0; i < layers; i++) {
            snprintf(name, sizeof name, "%s.%d.weight", prefix[mlp], 2 * i);
            add_param(m, name, PARAM_WEIGHT, 2, w[i + 1], w[i]);
            snprintf(name, sizeof name, "%s.%d.bias", prefix[mlp], 2 * i);
            add_param(m, name, PARAM_NO_DECAY, 1, w[i + 1], 0);
        }
    }
}

/* Entries in build_param_table's order get their device pointers. */
static void bind_params(dlrm *m) {
    const dlrm_config *c = &m->config;
    int k = 0;
    for (int t = 0; t < c->tables; t++)
        m->params.entries[k++].data = m->embeddings + (size_t)m->tables.base[t] * c->dim;
    for (int i = 0; i < c->bottom_layers; i++) {
        m->params.entries[k++].data = m->bottom[i].weight;
        m->params.entries[k++].data = m->bottom[i].bias;
    }
    for (int i = 0; i < c->top_layers; i++) {
        m->params.entries[k++].data = m->top[i].weight;
        m->params.entries[k++].data = m->top[i].bias;
    }
}

int dlrm_plan(dlrm *m, const dlrm_config *c, size_t sort_scratch_bytes, char *err, size_t err_size) {
    memset(m, 0, sizeof *m);
    if (dlrm_config_check(c, err, err_size) != 0) return -1;
    m->config = *c;
    m->tables.count = c->tables;
    m->tables.dim = c->dim;
    for (int t = 0; t < c->tables; t++) {
        m->tables.rows[t] = (uint32_t)c->rows[t];
        m->tables.base[t] = (uint32_t)m->total_rows;
        m->total_rows += (uint64_t)c->rows[t];
    }
    m->row_bits = dlrm_row_bits(m->total_rows);
    m->capacity = capacity_of(c);
    m->interaction_width = dlrm_interaction_width(c->tables, c->dim);
    m->sort_scratch_bytes = sort_scratch_bytes ? sort_scratch_bytes : dlrm_sort_scratch_estimate(m->capacity);
    build_param_table(m);
    double forward = 0;
    for (int i = 0; i < c->bottom_layers; i++) forward += 2.0 * c->batch * c->bottom[i] * c->bottom[i + 1];
    for (int i = 0; i < c->top_layers; i++) forward += 2.0 * c->batch * c->top[i] * c->top[i + 1];
    forward += 2.0 * c->batch * (m->interaction_width - c->dim) * c->dim;
    m->flops_per_step = 3.0 * forward;
    arena_plan(&m->plan);
    build_dense(m, &m->plan);
    return 0;
}

dlrm_footprint dlrm_footprint_of(const dlrm *m) {
    arena_footprint a = arena_footprint_of(&m->plan, 0);
    dlrm_footprint f;
    f.embeddings = (size_t)m->total_rows * m->config.dim * sizeof(float);
    f.parameters = a.parameters;
    f.gradients = a.gradients;
    f.activations = a.activations;
    f.scratch = a.scratch + a.buffers;
    f.workspace = DLRM_WORKSPACE_BYTES;
    f.total = f.embeddings + a.total + f.workspace;
    return f;
}

/* What does not fit: every table's rows x dim x 4 bytes, the total and the free memory. */
static void describe_memory(const dlrm *m, const dlrm_footprint *f, size_t free_b, size_t total_b,
                            const char *what, char *err, size_t err_size) {
    const dlrm_config *c = &m->config;
    size_t used = 0;
    char cap[64] = "";
    if (c->max_rows > 0) snprintf(cap, sizeof cap, " with --max-rows %lld", (long long)c->max_rows);
#define APPEND(...) (used += (size_t)snprintf(err + used, used < err_size ? err_size - used : 0, __VA_ARGS__), \
                     used = used < err_size ? used : err_size)
    APPEND("%s: %s%s needs %.3f GB of embedding tables (", what, c->name, cap, f->embeddings / 1e9);
    for (int t = 0; t < c->tables; t++)
        APPEND("%semb_l.%d %lld x %d x 4 B = %.3f GB", t ? ", " : "", t, (long long)c->rows[t], c->dim,
               (double)c->rows[t] * c->dim * 4 / 1e9);
    APPEND(") and %.3f GB for the dense layers, activations, scratch and workspace: %.3f GB in all, but the "
           "GPU has %.3f GB free of %.3f GB; cap the tables with --max-rows or use a GPU with more memory",
           (f->total - f->embeddings) / 1e9, f->total / 1e9, free_b / 1e9, total_b / 1e9);
#undef APPEND
}

/* Room kept free for what the plan does not count: CUDA graphs, library kernels, the driver. */
#define DLRM_HEADROOM ((size_t)256 << 20)

int dlrm_start(dlrm *m, job_context *ctx, char *err, size_t err_size) {
    m->ctx = ctx;
    size_t exact = dlrm_sort_scratch_bytes(m->capacity, m->row_bits);
    if (exact != m->sort_scratch_bytes) { /* the plan used the host estimate: plan again */
        m->sort_scratch_bytes = exact;
        arena_plan(&m->plan);
        build_dense(m, &m->plan);
    }
    dlrm_footprint f = dlrm_footprint_of(m);
    size_t free_b = 0, total_b = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (f.total + DLRM_HEADROOM > free_b) {
        describe_memory(m, &f, free_b, total_b, "not enough GPU memory", err, err_size);
        return 1;
    }
    cudaError_t status = cudaMalloc((void **)&m->embeddings, f.embeddings);
    if (status == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        m->embeddings = NULL;
        CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
        describe_memory(m, &f, free_b, total_b, "cudaMalloc of the embedding tables failed", err, err_size);
        return 1;
    }
    CHECK_CUDA(status);
    if (arena_allocate(&ctx->arena, &m->plan, 0) != 0) {
        CHECK_CUDA(cudaFree(m->embeddings));
        m->embeddings = NULL;
        CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
        describe_memory(m, &f, free_b, total_b, "out of GPU memory for the dense part", err, err_size);
        return 1;
    }
    CHECK_CUDA(cudaDeviceSynchronize()); /* the arena's zeroing ran on the legacy stream */
    build_dense(m, &ctx->arena);
    bind_params(m);
    for (int i = 0; i < m->config.bottom_layers; i++) linear_setup(&m->bottom[i], ctx);
    for (int i = 0; i < m->config.top_layers; i++) linear_setup(&m->top[i], ctx);
    m->side = context_stream_create(ctx, 1);
    CHECK_CUDA(cudaEventCreateWithFlags(&m->fork, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreateWithFlags(&m->join, cudaEventDisableTiming));
    /* defined inputs before anything reads them (the warm-up pass) */
    for (int s = 0; s < 2; s++)
        CHECK_CUDA(cudaMemsetAsync(m->input_block[s], 0, dlrm_input_bytes(&m->config), ctx->stream));
    dlrm_init_params(m);
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    return 0;
}

void dlrm_init_params(dlrm *m) {
    const dlrm_config *c = &m->config;
    cudaStream_t stream = m->ctx->stream;
    for (int t = 0; t < c->tables; t++)
        dlrm_uniform_fill(m->params.entries[t].data, (size_t)c->rows[t] * c->dim, sqrtf(1.0f / (float)c->rows[t]),
                          c->seed * 0x9E3779B97F4A7C15ull + (uint64_t)t * 0xD1B54A32D192ED03ull + 1, stream);
    uint64_t state = c->seed * 0x2545F4914F6CDD1Dull + 7;
    size_t capacity = 0;
    float *host = NULL;
    for (int k = c->tables; k < m->params.count; k++) {
        const param_entry *e = &m->params.entries[k];
        size_t n = (size_t)param_numel(e);
        if (n > capacity) {
            free(host);
            host = malloc((capacity = n) * sizeof *host);
            if (!host) {
                fprintf(stderr, "dlrm: out of host memory initialising %s\n", e->name);
                exit(1);
            }
        }
        /* weights [out, in]: std sqrt(2 / (in + out)); biases [out]: std sqrt(1 / out) */
        double std = e->ndim == 2 ? sqrt(2.0 / (double)(e->shape[0] + e->shape[1])) : sqrt(1.0 / (double)e->shape[0]);
        for (size_t i = 0; i < n; i++) host[i] = (float)(std * rng_normal(&state));
        CHECK_CUDA(cudaMemcpyAsync(e->data, host, n * sizeof *host, cudaMemcpyHostToDevice, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream)); /* host is refilled next */
    }
    free(host);
}

float dlrm_current_lr(const dlrm *m) { return dlrm_lr_at(&m->policy, (long)m->steps_taken); }

void dlrm_free(dlrm *m) {
    if (m->ctx) {
        if (m->ctx->stream) CHECK_CUDA(cudaStreamSynchronize(m->ctx->stream));
        for (int s = 0; s < 2; s++) {
            if (m->exec[s]) CHECK_CUDA(cudaGraphExecDestroy(m->exec[s]));
            if (m->graph[s]) CHECK_CUDA(cudaGraphDestroy(m->graph[s]));
        }
        if (m->embeddings) {
            for (int i = 0; i < m->config.bottom_layers; i++) linear_destroy(&m->bottom[i]);
            for (int i = 0; i < m->config.top_layers; i++) linear_destroy(&m->top[i]);
        }
        if (m->side) CHECK_CUDA(cudaStreamDestroy(m->side));
        if (m->fork) CHECK_CUDA(cudaEventDestroy(m->fork));
        if (m->join) CHECK_CUDA(cudaEventDestroy(m->join));
        if (m->embeddings) CHECK_CUDA(cudaFree(m->embeddings));
        arena_free(&m->ctx->arena);
    }
    param_table_free(&m->params);
    memset(m, 0, sizeof *m);
}
