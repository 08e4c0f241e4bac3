/* The recommender as a workload (runner/train/workload.h; train --model dlrm): the job, its epoch
 * loop and its events are the image models' (runner/train/job.c), with what click logs need:
 *   - input: Criteo rows from the TSV reader (--data-root) or synthetic rows with a planted
 *     signal, read by the loader's worker threads into pinned blocks laid out as the model's
 *     input block; each block is copied on a copy stream into one of two device input slots
 *     while the other slot's step runs, so the copy overlaps compute;
 *   - timing by blocks of --block-steps steps ("block" events) as well as by epoch, since one
 *     Terabyte epoch is billions of rows;
 *   - held-out metrics with --eval: loss, accuracy and ROC AUC (the reference's metrics).
 * Order: the training rows are shuffled within windows of LOADER_DEFAULT_WINDOW rows visited in a
 * shuffled order (data/loader.h), so an epoch of Terabyte's 4.4 billion rows allocates nothing
 * of its size and real files are read with locality.
 * Held-out rows: with --data-root the last seventh of the rows (the reference splits Kaggle's
 * seven days into six for training and the last for validation and test), evaluated on at most
 * DLRM_EVAL_MAX_ROWS of them; synthetic data gets an independent synthetic set.
 * Training: the reference's SGD and learning-rate policy; --lr defaults to the catalog's 1.0 (the
 * reference's Terabyte run, bench/run_and_time.sh, batch 2048), --warmup-pct P warms up linearly over P of
 * the run's steps; the reference's run leaves warm-up and decay off, and so does this default.
 * Exit codes: 0 done, 1 runtime (no GPU, tables too large for the GPU, diverged), 2 bad input. */
#include "runner/train/workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/criteo.h"
#include "kernels/check.h"
#include "models/dlrm.h"
#include "runner/train/train_host.h"

#define DLRM_EVAL_MAX_ROWS ((int64_t)1 << 20)
#define DLRM_SYNTHETIC_HELD_OUT ((int64_t)1 << 18)

typedef struct dlrm_job {
    const train_options *o;
    dlrm_config config;
    dlrm model;
    job_context ctx;
    criteo *reader, *held_out_reader;   /* held_out_reader: synthetic only (else reader) */
    loader_source train_source, test_source;
    int64_t train_rows, test_rows;
    cudaStream_t copy_stream;
    cudaEvent_t copied[2], consumed[2];
} dlrm_job;

static dlrm_job *impl(const workload *w) { return w->impl; }

/* What the job holds on the GPU: the tables, the arena and the library workspace. */
static size_t held_bytes(const dlrm_job *j) {
    return j->ctx.arena.allocated + j->ctx.workspace_bytes + dlrm_footprint_of(&j->model).embeddings;
}

static int plan(workload *w, char *err, size_t err_size) {
    dlrm_job *j = calloc(1, sizeof *j); /* large (the model's layer table); one per job, not static */
    if (!j) {
        snprintf(err, err_size, "out of memory for the job");
        return -1;
    }
    w->impl = j;
    j->o = w->o;
    const train_options *o = w->o;
    /* the image models' options are refused for it by train's rules (runner/train/train_rules.h) */
    if (dlrm_config_named(&j->config, o->data, o->max_rows, o->batch, o->seed, err, err_size) != 0 ||
        dlrm_plan(&j->model, &j->config, 0, err, err_size) != 0)
        return -1;
    return 0;
}

static train_footprint footprint(const workload *w) {
    dlrm_footprint f = dlrm_footprint_of(&impl(w)->model);
    return (train_footprint){(double)(f.embeddings + f.parameters), (double)f.gradients, 0, 0, (double)f.activations,
                             (double)f.scratch, (double)f.workspace, (double)f.total, (double)f.embeddings};
}

static double flops_per_step(const workload *w) { return impl(w)->model.flops_per_step; }
static int64_t param_count(const workload *w) { return impl(w)->model.param_count; }

static void add_config_fields(const dlrm_job *j, cJSON *e) {
    const dlrm_config *c = &j->config;
    cJSON_AddNumberToObject(e, "batch", c->batch);
    cJSON_AddNumberToObject(e, "max_rows", (double)c->max_rows);
    cJSON_AddNumberToObject(e, "embedding_dim", c->dim);
    cJSON_AddNumberToObject(e, "embedding_bytes", (double)dlrm_footprint_of(&j->model).embeddings);
    cJSON *rows = cJSON_AddArrayToObject(e, "table_rows");
    for (int t = 0; t < c->tables; t++) cJSON_AddItemToArray(rows, cJSON_CreateNumber((double)c->rows[t]));
}

static void add_plan_fields(const workload *w, cJSON *e) {
    cJSON_AddStringToObject(e, "data", impl(w)->config.name);
    cJSON_AddNumberToObject(e, "params", (double)param_count(w));
    add_config_fields(impl(w), e);
}

static void print_plan(const workload *w, FILE *out) {
    const dlrm_job *j = impl(w);
    dlrm_footprint f = dlrm_footprint_of(&j->model);
    fprintf(out, "dlrm %s: %lld parameters; planned GPU footprint %.3f GB (embedding tables %.3f GB, dense "
            "parameters %.1f MiB, gradients %.1f MiB, activations %.1f MiB, scratch %.1f MiB, workspace %.1f MiB)\n",
            j->config.name, (long long)j->model.param_count, f.total / 1e9, f.embeddings / 1e9,
            f.parameters / 1048576.0, f.gradients / 1048576.0, f.activations / 1048576.0,
            f.scratch / 1048576.0, f.workspace / 1048576.0);
}

/* --- data -------------------------------------------------------------------------------------- */

static int open_synthetic(workload *w, dlrm_job *j, char *err, size_t err_size) {
    criteo_synthetic_spec train = {j->o->synthetic_count, {0}, j->o->seed};
    memcpy(train.table_sizes, j->config.rows, sizeof train.table_sizes);
    criteo_synthetic_spec held_out = train;
    held_out.rows = DLRM_SYNTHETIC_HELD_OUT;
    held_out.seed = j->o->seed + 1;
    if (criteo_open_synthetic(&j->reader, &train, err, err_size) != 0 ||
        criteo_open_synthetic(&j->held_out_reader, &held_out, err, err_size) != 0)
        return -1;
    w->data_source = "synthetic";
    j->train_rows = train.rows;
    j->test_rows = held_out.rows;
    return 0;
}

static int open_data(workload *w, char *err, size_t err_size) {
    dlrm_job *j = impl(w);
    const train_options *o = j->o;
    int real = 0;
    if (o->data_root[0]) {
        if (criteo_open(&j->reader, o->data_root, j->config.rows, 0, err, err_size) == 0) real = 1;
        else if (!o->data_if_present || criteo_files_present(o->data_root)) return -1; /* present but bad */
        else fprintf(stderr, "train: %s; --data-if-present: synthetic %s data instead\n", err, o->data);
    }
    if (real) {
        int64_t rows = criteo_rows(j->reader), held_out = rows / 7;
        w->data_source = "real";
        j->train_rows = rows - held_out;
        j->test_rows = held_out < DLRM_EVAL_MAX_ROWS ? held_out : DLRM_EVAL_MAX_ROWS;
        if (o->eval && j->test_rows < 1) {
            snprintf(err, err_size, "--eval: %s holds %lld rows, too few to hold out a seventh for evaluation",
                     o->data_root, (long long)rows);
            return -1;
        }
    } else if (open_synthetic(w, j, err, err_size) != 0) {
        return -1;
    }
    long batches = (long)(j->train_rows / o->batch);
    if (batches < 1) {
        snprintf(err, err_size, "--batch %d is larger than the %lld training rows of %s", o->batch,
                 (long long)j->train_rows, real ? o->data_root : "the synthetic data");
        return -1;
    }
    w->steps_per_epoch = o->steps_per_epoch && o->steps_per_epoch < batches ? o->steps_per_epoch : batches;
    const criteo *test_reader = j->held_out_reader ? j->held_out_reader : j->reader;
    int64_t test_first = j->held_out_reader ? 0 : j->train_rows;
    if (loader_source_criteo(&j->train_source, j->reader, 0, j->train_rows, err, err_size) != 0) return -1;
    if (j->test_rows > 0 &&
        loader_source_criteo(&j->test_source, test_reader, test_first, j->test_rows, err, err_size) != 0)
        return -1;
    return 0;
}


/* The loader's block must be the model's input block, field for field. */
static int check_layout(const dlrm_job *j, const loader *l, char *err, size_t err_size) {
    size_t want[4];
    dlrm_input_offsets(&j->config, want);
    for (int f = 0; f < 3; f++)
        if (loader_field_offset(l, f) != want[f] || loader_block_bytes(l) != dlrm_input_bytes(&j->config)) {
            snprintf(err, err_size, "internal error: the loader's batch layout (field %d at %zu of %zu bytes) is not "
                     "the model's input block (%zu of %zu)", f, loader_field_offset(l, f), loader_block_bytes(l),
                     want[f], dlrm_input_bytes(&j->config));
            return -1;
        }
    return 0;
}

/* --- on the GPU ------------------------------------------------------------------------------------ */

static int start(workload *w, const context_place *place, char *err, size_t err_size) {
    dlrm_job *j = impl(w);
    if (context_init_at(&j->ctx, place, w->o->workspace_limit, w->o->allow_tf32) != CONTEXT_OK) {
        snprintf(err, err_size, "no usable GPU: training needs a CUDA device");
        return 1;
    }
    w->ctx = &j->ctx;
    w->params = &j->model.params;
    return dlrm_start(&j->model, &j->ctx, err, err_size);
}

static int load(workload *w, const char *path, char *err, size_t err_size) {
    return dlrm_load(&impl(w)->model, path, err, err_size);
}

static dlrm_lr_policy policy_of(const workload *w) {
    const train_options *o = w->o;
    long total = (long)o->epochs * w->steps_per_epoch;
    dlrm_lr_policy p = {o->lr_set ? o->lr : w->spec->lr, 0, 0, 0}; /* the catalog's rate unless --lr */
    if (o->warmup_set) p.warmup_steps = (long)(o->warmup_pct * (double)total);
    if (o->lr_warmup_steps) p.warmup_steps = o->lr_warmup_steps;
    p.decay_start_step = o->lr_decay_start, p.decay_steps = o->lr_decay_steps;
    return p;
}

/* The copy stream and the input slots' events, the captured step. */
static int prepare(workload *w, char *err, size_t err_size) {
    dlrm_job *j = impl(w);
    CHECK_CUDA(cudaStreamCreateWithFlags(&j->copy_stream, cudaStreamNonBlocking));
    for (int s = 0; s < 2; s++) {
        CHECK_CUDA(cudaEventCreateWithFlags(&j->copied[s], cudaEventDisableTiming));
        CHECK_CUDA(cudaEventCreateWithFlags(&j->consumed[s], cudaEventDisableTiming));
    }
    dlrm_prepare(&j->model, policy_of(w), w->o->use_graph);
    return 0;
}

static size_t gpu_bytes(const workload *w) { return held_bytes(impl(w)); }

static void add_setup_fields(const workload *w, cJSON *e) {
    const dlrm_job *j = impl(w);
    dlrm_lr_policy p = j->model.policy;
    add_config_fields(j, e);
    cJSON_AddNumberToObject(e, "train_rows", (double)j->train_rows);
    cJSON_AddNumberToObject(e, "held_out_rows", (double)j->test_rows);
    cJSON_AddNumberToObject(e, "block_steps", (double)w->o->block_steps);
    cJSON_AddNumberToObject(e, "lr", p.base_lr);
    cJSON_AddNumberToObject(e, "lr_warmup_steps", (double)p.warmup_steps);
    cJSON_AddNumberToObject(e, "lr_decay_start_step", (double)p.decay_start_step);
    cJSON_AddNumberToObject(e, "lr_decay_steps", (double)p.decay_steps);
}

static void print_setup(const workload *w, const char *device, int sms, int mps, FILE *out) {
    const dlrm_job *j = impl(w);
    fprintf(out, "dlrm %s on %s (%d SMs%s): %lld parameters, %.3f GB on the GPU (tables %.3f GB), %ld "
            "steps of %d per epoch, %s data\n", j->config.name, device, sms, mps ? ", MPS" : "",
            (long long)j->model.param_count, held_bytes(j) / 1e9, dlrm_footprint_of(&j->model).embeddings / 1e9,
            w->steps_per_epoch, j->config.batch, w->data_source);
}

/* --- training ------------------------------------------------------------------------------------- */

static loader *open_loader(workload *w, char *err, size_t err_size) {
    dlrm_job *j = impl(w);
    const train_options *o = w->o;
    loader_config lc = {.batch = o->batch, .workers = train_loader_workers(o), .shuffle = 1, .drop_last = 1,
                        .seed = o->seed, .alloc_host = train_pinned_alloc, .free_host = train_pinned_free,
                        .shuffle_window = LOADER_DEFAULT_WINDOW};
    loader *l = loader_open_source(&j->train_source, &lc, err, err_size);
    if (l && check_layout(j, l, err, err_size) != 0) {
        loader_close(l);
        return NULL;
    }
    return l;
}

/* Each batch goes through one of two input slots: the copy stream fills one while the other
 * slot's step runs. */
static void step(workload *w, const loader_batch *b, long index) {
    dlrm_job *j = impl(w);
    cudaStream_t stream = j->ctx.stream;
    int slot = (int)(index & 1);
    /* the slot's previous step must have read it before the copy overwrites it */
    CHECK_CUDA(cudaStreamWaitEvent(j->copy_stream, j->consumed[slot], 0));
    CHECK_CUDA(cudaMemcpyAsync(j->model.input_block[slot], b->block, dlrm_input_bytes(&j->config),
                               cudaMemcpyHostToDevice, j->copy_stream));
    CHECK_CUDA(cudaEventRecord(j->copied[slot], j->copy_stream));
    CHECK_CUDA(cudaStreamWaitEvent(stream, j->copied[slot], 0));
    dlrm_train_step(&j->model, slot);
    CHECK_CUDA(cudaEventRecord(j->consumed[slot], stream));
}

static void batch_done(workload *w, long index) { CHECK_CUDA(cudaEventSynchronize(impl(w)->copied[index & 1])); }

static void take_sums(workload *w, double *loss_sum, double *correct) {
    dlrm_take_sums(&impl(w)->model, loss_sum, correct);
}

/* Loss, accuracy and AUC over the held-out rows (none after a diverged epoch); 0, 1 (not
 * measured) or -1 with a message. */
static int evaluate(workload *w, int diverged, workload_eval *out, char *err, size_t err_size) {
    dlrm_job *j = impl(w);
    if (diverged) return 1;
    dlrm *m = &j->model;
    cudaStream_t stream = j->ctx.stream;
    loader_config lc = {.batch = j->o->batch, .workers = train_loader_workers(j->o), .seed = j->o->seed,
                        .alloc_host = train_pinned_alloc, .free_host = train_pinned_free};
    loader *l = loader_open_source(&j->test_source, &lc, err, err_size);
    float *scores = malloc((size_t)j->test_rows * sizeof *scores), *labels = malloc((size_t)j->test_rows * sizeof *labels);
    if (!l || !scores || !labels) {
        if (l) snprintf(err, err_size, "evaluation: out of host memory for %lld scores", (long long)j->test_rows);
        loader_close(l);
        free(scores), free(labels);
        return -1;
    }
    loader_start_epoch(l, 0);
    loader_batch b;
    int64_t seen = 0;
    int got;
    while ((got = loader_next(l, &b, err, err_size)) == 1) {
        CHECK_CUDA(cudaMemcpyAsync(m->input_block[0], b.block, loader_block_bytes(l), cudaMemcpyHostToDevice, stream));
        dlrm_eval_batch(m, 0, b.n);
        CHECK_CUDA(cudaMemcpyAsync(scores + seen, m->probs, (size_t)b.n * sizeof(float), cudaMemcpyDeviceToHost, stream));
        memcpy(labels + seen, b.fields[2], (size_t)b.n * sizeof(float));
        CHECK_CUDA(cudaStreamSynchronize(stream)); /* the loader refills b next */
        seen += b.n;
    }
    loader_close(l);
    double loss_sum, correct;
    dlrm_take_sums(m, &loss_sum, &correct);
    out->loss = seen ? loss_sum / seen : NAN;
    out->accuracy = seen ? correct / seen : NAN;
    out->auc = dlrm_roc_auc(scores, labels, (size_t)seen);
    free(scores), free(labels);
    return got < 0 ? -1 : 0;
}

static double current_lr(const workload *w) { return dlrm_current_lr(&impl(w)->model); }

static int save(workload *w, const char *path, char *err, size_t err_size) {
    return dlrm_save(&impl(w)->model, path, err, err_size);
}

static void end(workload *w) {
    dlrm_job *j = impl(w);
    if (!j) return;
    if (j->ctx.stream) {
        CHECK_CUDA(cudaStreamSynchronize(j->ctx.stream));
        if (j->copy_stream) CHECK_CUDA(cudaStreamSynchronize(j->copy_stream));
        for (int s = 0; s < 2; s++) {
            if (j->copied[s]) CHECK_CUDA(cudaEventDestroy(j->copied[s]));
            if (j->consumed[s]) CHECK_CUDA(cudaEventDestroy(j->consumed[s]));
        }
        if (j->copy_stream) CHECK_CUDA(cudaStreamDestroy(j->copy_stream));
    }
    dlrm_free(&j->model);
    if (j->ctx.stream) context_free(&j->ctx);
    loader_source_close(&j->train_source);
    loader_source_close(&j->test_source);
    criteo_close(j->reader);
    criteo_close(j->held_out_reader);
    free(j);
    w->impl = NULL;
}

const workload_ops workload_dlrm_ops = {
    .plan = plan, .footprint = footprint, .flops_per_step = flops_per_step, .add_plan_fields = add_plan_fields,
    .print_plan = print_plan, .open_data = open_data, .start = start, .load = load, .prepare = prepare,
    .param_count = param_count, .gpu_bytes = gpu_bytes, .add_setup_fields = add_setup_fields,
    .print_setup = print_setup, .open_loader = open_loader, .step = step, .batch_done = batch_done,
    .take_sums = take_sums, .evaluate = evaluate, .current_lr = current_lr, .save = save, .end = end,
    .style = {.warmup_last = 1, .held_out_auc = 1, .bad_images = 0, .loss_digits = 5, .step_ms_digits = 3},
    .timed_blocks = 1,
};
