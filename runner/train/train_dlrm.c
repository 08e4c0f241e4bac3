/* train --model dlrm: the recommender's job (runner/train/train_dlrm.h). Same shape as the image job
 * (runner/train/train.c) and the same event protocol, with what click logs need:
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
 * Training: the reference's SGD and learning-rate policy; --lr defaults to 1.0 (the reference's
 * Terabyte run, bench/run_and_time.sh, batch 2048), --warmup-pct P warms up linearly over P of
 * the run's steps; the reference's run leaves warm-up and decay off, and so does this default.
 * Exit codes: 0 done, 1 runtime (no GPU, tables too large for the GPU, diverged), 2 bad input. */
#include "runner/train/train_dlrm.h"
#include "runner/train/train_host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "data/criteo.h"
#include "data/loader.h"
#include "kernels/check.h"
#include "models/dlrm.h"

#define DLRM_MAX_TIMED_STEPS 4096
#define DLRM_EVAL_MAX_ROWS ((int64_t)1 << 20)
#define DLRM_SYNTHETIC_HELD_OUT ((int64_t)1 << 18)
#define DLRM_DEFAULT_LR 1.0f
#define DLRM_ERR 4096

typedef struct dlrm_job {
    const train_options *o;
    const train_events *ev;
    const context_place *place;         /* the whole device or a green context's SMs */
    dlrm_config config;
    dlrm model;
    job_context ctx;
    criteo *reader, *held_out_reader;   /* held_out_reader: synthetic only (else reader) */
    loader_source train_source, test_source;
    int64_t train_rows, test_rows;
    const char *data_source;            /* "real" or "synthetic" */
    long steps_per_epoch;
    cudaStream_t copy_stream;
    cudaEvent_t copied[2], consumed[2];
    long blocks;                        /* block events so far */
} dlrm_job;

static int fail(dlrm_job *j, int code, const char *message) { return train_fail(j->ev, code, message); }

/* What the job holds on the GPU: the tables, the arena and the library workspace. */
static size_t held_bytes(const dlrm_job *j) {
    return j->ctx.arena.allocated + j->ctx.workspace_bytes + dlrm_footprint_of(&j->model).embeddings;
}

/* Options the image models take that have no meaning here: refused rather than ignored. */
static int check_options(const train_options *o, char *err, size_t err_size) {
    const char *why = NULL;
    if (o->optimizer == OPTIMIZER_ADAMW) why = "--optimizer adamw: dlrm trains with the reference's plain SGD";
    else if (o->weight_decay_set) why = "--weight-decay: dlrm's SGD has no weight decay, as the reference's";
    else if (o->schedule_set)
        why = "--schedule: dlrm follows the reference's learning-rate policy (set --lr and --warmup-pct)";
    else if (o->nesterov || o->momentum_set) why = "--momentum/--nesterov: dlrm's SGD has no momentum, as the reference's";
    else if (o->image_size || o->classes) why = "--image-size/--classes: click logs have no images or classes";
    else if (o->label_smoothing > 0) why = "--label-smoothing: dlrm's loss is binary cross-entropy";
    else if (o->patch_size || o->drop_path > 0) why = "--patch-size/--drop-path are vision transformer options";
    else if (o->skip_bad) why = "--skip-bad is for undecodable images; Criteo lines are checked as they are read";
    if (why) snprintf(err, err_size, "%s", why);
    return why ? -1 : 0;
}

static cJSON *footprint_json(const dlrm_footprint *f) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "parameters", (double)(f->embeddings + f->parameters));
    cJSON_AddNumberToObject(o, "gradients", (double)f->gradients);
    cJSON_AddNumberToObject(o, "optimizer", 0);
    cJSON_AddNumberToObject(o, "buffers", 0);
    cJSON_AddNumberToObject(o, "activations", (double)f->activations);
    cJSON_AddNumberToObject(o, "scratch", (double)f->scratch);
    cJSON_AddNumberToObject(o, "workspace", (double)f->workspace);
    cJSON_AddNumberToObject(o, "total", (double)f->total);
    cJSON_AddNumberToObject(o, "embeddings", (double)f->embeddings);
    return o;
}

static void add_config_fields(cJSON *e, const dlrm_job *j) {
    const dlrm_config *c = &j->config;
    cJSON_AddNumberToObject(e, "batch", c->batch);
    cJSON_AddNumberToObject(e, "max_rows", (double)c->max_rows);
    cJSON_AddNumberToObject(e, "embedding_dim", c->dim);
    cJSON_AddNumberToObject(e, "embedding_bytes", (double)dlrm_footprint_of(&j->model).embeddings);
    cJSON *rows = cJSON_AddArrayToObject(e, "table_rows");
    for (int t = 0; t < c->tables; t++) cJSON_AddItemToArray(rows, cJSON_CreateNumber((double)c->rows[t]));
}

static int dry_run(dlrm_job *j) {
    dlrm_footprint f = dlrm_footprint_of(&j->model);
    if (j->o->json) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "model", "dlrm");
        cJSON_AddStringToObject(e, "data", j->config.name);
        cJSON_AddNumberToObject(e, "params", (double)j->model.param_count);
        add_config_fields(e, j);
        cJSON_AddNumberToObject(e, "flops_per_step", j->model.flops_per_step);
        cJSON_AddNumberToObject(e, "samples_per_epoch", (double)j->o->synthetic_count);
        cJSON_AddItemToObject(e, "footprint", footprint_json(&f));
        train_emit(j->ev, e);
    } else {
        printf("dlrm %s: %lld parameters; planned GPU footprint %.3f GB (embedding tables %.3f GB, dense "
               "parameters %.1f MiB, gradients %.1f MiB, activations %.1f MiB, scratch %.1f MiB, workspace %.1f MiB)\n",
               j->config.name, (long long)j->model.param_count, f.total / 1e9, f.embeddings / 1e9,
               f.parameters / 1048576.0, f.gradients / 1048576.0, f.activations / 1048576.0,
               f.scratch / 1048576.0, f.workspace / 1048576.0);
    }
    return 0;
}

/* --- data -------------------------------------------------------------------------------------- */

static int open_synthetic(dlrm_job *j, char *err, size_t err_size) {
    criteo_synthetic_spec train = {j->o->synthetic_count, {0}, j->o->seed};
    memcpy(train.table_sizes, j->config.rows, sizeof train.table_sizes);
    criteo_synthetic_spec held_out = train;
    held_out.rows = DLRM_SYNTHETIC_HELD_OUT;
    held_out.seed = j->o->seed + 1;
    if (criteo_open_synthetic(&j->reader, &train, err, err_size) != 0 ||
        criteo_open_synthetic(&j->held_out_reader, &held_out, err, err_size) != 0)
        return -1;
    j->data_source = "synthetic";
    j->train_rows = train.rows;
    j->test_rows = held_out.rows;
    return 0;
}

static int open_data(dlrm_job *j, char *err, size_t err_size) {
    const train_options *o = j->o;
    int real = 0;
    if (o->data_root[0]) {
        if (criteo_open(&j->reader, o->data_root, j->config.rows, 0, err, err_size) == 0) real = 1;
        else if (!o->data_if_present || criteo_files_present(o->data_root)) return -1; /* present but bad */
        else fprintf(stderr, "train: %s; --data-if-present: synthetic %s data instead\n", err, o->data);
    }
    if (real) {
        int64_t rows = criteo_rows(j->reader), held_out = rows / 7;
        j->data_source = "real";
        j->train_rows = rows - held_out;
        j->test_rows = held_out < DLRM_EVAL_MAX_ROWS ? held_out : DLRM_EVAL_MAX_ROWS;
        if (o->eval && j->test_rows < 1) {
            snprintf(err, err_size, "--eval: %s holds %lld rows, too few to hold out a seventh for evaluation",
                     o->data_root, (long long)rows);
            return -1;
        }
    } else if (open_synthetic(j, err, err_size) != 0) {
        return -1;
    }
    long batches = (long)(j->train_rows / o->batch);
    if (batches < 1) {
        snprintf(err, err_size, "--batch %d is larger than the %lld training rows of %s", o->batch,
                 (long long)j->train_rows, real ? o->data_root : "the synthetic data");
        return -1;
    }
    j->steps_per_epoch = o->steps_per_epoch && o->steps_per_epoch < batches ? o->steps_per_epoch : batches;
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

/* --- evaluation ----------------------------------------------------------------------------------- */

/* Loss, accuracy and AUC over the held-out rows; 0, or -1 with a message. */
static int evaluate(dlrm_job *j, double *loss, double *accuracy, double *auc, char *err, size_t err_size) {
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
    *loss = seen ? loss_sum / seen : NAN;
    *accuracy = seen ? correct / seen : NAN;
    *auc = dlrm_roc_auc(scores, labels, (size_t)seen);
    free(scores), free(labels);
    return got < 0 ? -1 : 0;
}

/* --- training ------------------------------------------------------------------------------------- */

static int compare_floats(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct block_clock {
    double start, loss_sum, correct;
    long steps;
} block_clock;

/* What block and epoch events share: steps, samples, time, throughput, loss (null when it is not
 * finite), training accuracy. */
static cJSON *progress_event(const char *name, int epoch, long steps, double batch, double seconds, double loss_sum,
                             double correct) {
    double samples = (double)steps * batch, loss = loss_sum / samples;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", name);
    cJSON_AddNumberToObject(e, "epoch", epoch);
    cJSON_AddNumberToObject(e, "steps", (double)steps);
    cJSON_AddNumberToObject(e, "samples", samples);
    cJSON_AddNumberToObject(e, "seconds", seconds);
    cJSON_AddNumberToObject(e, "samples_per_s", samples / seconds);
    if (isfinite(loss)) cJSON_AddNumberToObject(e, "loss", loss);
    else cJSON_AddNullToObject(e, "loss");
    cJSON_AddBoolToObject(e, "diverged", !isfinite(loss));
    cJSON_AddNumberToObject(e, "train_accuracy", correct / samples);
    return e;
}

/* Ends a block: waits for it, emits its event, adds its sums to the epoch's. 1 when it diverged. */
static int end_block(dlrm_job *j, int epoch, block_clock *block, double *epoch_loss, double *epoch_correct) {
    double loss_sum, correct;
    dlrm_take_sums(&j->model, &loss_sum, &correct); /* waits for the stream */
    double now = train_wall_seconds(), seconds = now - block->start;
    double samples = (double)block->steps * j->config.batch, loss = loss_sum / samples;
    *epoch_loss += loss_sum;
    *epoch_correct += correct;
    cJSON *e = progress_event("block", epoch, block->steps, j->config.batch, seconds, loss_sum, correct);
    cJSON_AddNumberToObject(e, "block", (double)++j->blocks);
    cJSON_AddNumberToObject(e, "lr", dlrm_current_lr(&j->model));
    cJSON_AddNumberToObject(e, "t_end", now);
    train_emit(j->ev, e);
    fprintf(j->ev->human, "block %ld: %ld steps, %.3f s, %.0f samples/s, loss %.5f\n", j->blocks, block->steps,
            seconds, samples / seconds, loss);
    block->start = now;
    block->steps = 0;
    return !isfinite(loss);
}

/* One epoch's steps; returns the steps taken, or -1 (load error: message in err). */
static long train_epoch(dlrm_job *j, loader *l, int epoch, cudaEvent_t *marks, double *loss_sum,
                        double *correct, int *diverged, char *err, size_t err_size) {
    dlrm *m = &j->model;
    cudaStream_t stream = j->ctx.stream;
    size_t block_bytes = loader_block_bytes(l);
    block_clock block = {train_wall_seconds(), 0, 0, 0};
    const double t_epoch = block.start;
    train_progress progress = {0};
    long steps = 0;
    loader_batch b;
    int got = 0;
    *loss_sum = *correct = 0;
    *diverged = 0;
    while (steps < j->steps_per_epoch && !*diverged && (got = loader_next(l, &b, err, err_size)) == 1) {
        int slot = (int)(steps & 1);
        /* the slot's previous step must have read it before the copy overwrites it */
        CHECK_CUDA(cudaStreamWaitEvent(j->copy_stream, j->consumed[slot], 0));
        CHECK_CUDA(cudaMemcpyAsync(m->input_block[slot], b.block, block_bytes, cudaMemcpyHostToDevice, j->copy_stream));
        CHECK_CUDA(cudaEventRecord(j->copied[slot], j->copy_stream));
        CHECK_CUDA(cudaStreamWaitEvent(stream, j->copied[slot], 0));
        dlrm_train_step(m, slot);
        CHECK_CUDA(cudaEventRecord(j->consumed[slot], stream));
        steps++;
        block.steps++;
        train_progress_tick(j->ev, &progress, epoch, steps, j->steps_per_epoch, j->o->batch, t_epoch);
        train_fault_at(&j->o->fault, (epoch - 1) * j->steps_per_epoch + steps, j->ev, stream, &m->params);
        if (steps <= DLRM_MAX_TIMED_STEPS) CHECK_CUDA(cudaEventRecord(marks[steps], stream));
        CHECK_CUDA(cudaEventSynchronize(j->copied[slot])); /* b's pinned block is refilled after the next call */
        if (block.steps == j->o->block_steps) *diverged = end_block(j, epoch, &block, loss_sum, correct);
    }
    if (got < 0) return -1;
    if (block.steps > 0) *diverged |= end_block(j, epoch, &block, loss_sum, correct);
    return steps;
}

static int run_epochs(dlrm_job *j) {
    const train_options *o = j->o;
    dlrm *m = &j->model;
    char err[DLRM_ERR];
    loader_config lc = {.batch = o->batch, .workers = train_loader_workers(o), .shuffle = 1, .drop_last = 1,
                        .seed = o->seed, .alloc_host = train_pinned_alloc, .free_host = train_pinned_free,
                        .shuffle_window = LOADER_DEFAULT_WINDOW};
    loader *l = loader_open_source(&j->train_source, &lc, err, sizeof err);
    if (!l) return fail(j, 1, err);
    if (check_layout(j, l, err, sizeof err) != 0) {
        loader_close(l);
        return fail(j, 1, err);
    }
    cudaEvent_t *marks = malloc((DLRM_MAX_TIMED_STEPS + 1) * sizeof *marks);
    float *step_ms = malloc(DLRM_MAX_TIMED_STEPS * sizeof *step_ms);
    for (int i = 0; i <= DLRM_MAX_TIMED_STEPS; i++) CHECK_CUDA(cudaEventCreate(&marks[i]));
    int status = 0;
    for (int epoch = 1; epoch <= o->epochs && status == 0; epoch++) {
        loader_start_epoch(l, epoch - 1);
        CHECK_CUDA(cudaStreamSynchronize(j->ctx.stream));
        double t_start = train_wall_seconds();
        CHECK_CUDA(cudaEventRecord(marks[0], j->ctx.stream));
        double loss_sum, correct;
        int diverged;
        long steps = train_epoch(j, l, epoch, marks, &loss_sum, &correct, &diverged, err, sizeof err);
        if (steps < 0) {
            status = fail(j, 1, err);
            break;
        }
        CHECK_CUDA(cudaStreamSynchronize(j->ctx.stream));
        double t_end = train_wall_seconds(), seconds = t_end - t_start;
        long timed = steps < DLRM_MAX_TIMED_STEPS ? steps : DLRM_MAX_TIMED_STEPS;
        for (long s = 0; s < timed; s++) CHECK_CUDA(cudaEventElapsedTime(&step_ms[s], marks[s], marks[s + 1]));
        qsort(step_ms, (size_t)timed, sizeof *step_ms, compare_floats);
        loader_stats ls = loader_epoch_stats(l);
        double samples = (double)steps * o->batch, loss = loss_sum / samples;
        double test_loss = NAN, accuracy = NAN, auc = NAN;
        if (o->eval && !diverged && evaluate(j, &test_loss, &accuracy, &auc, err, sizeof err) != 0) {
            status = fail(j, 1, err);
            break;
        }
        size_t free_b, total_b;
        CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
        cJSON *e = progress_event("epoch", epoch, steps, o->batch, seconds, loss_sum, correct);
        cJSON_AddBoolToObject(e, "warmup", epoch == 1);
        if (o->eval && !diverged) {
            cJSON_AddNumberToObject(e, "accuracy", accuracy);
            cJSON_AddNumberToObject(e, "test_loss", test_loss);
            if (isnan(auc)) cJSON_AddNullToObject(e, "auc"); /* held-out labels all of one class */
            else cJSON_AddNumberToObject(e, "auc", auc);
        } else {
            cJSON_AddNullToObject(e, "accuracy");
            cJSON_AddNullToObject(e, "auc");
        }
        cJSON_AddNumberToObject(e, "lr", dlrm_current_lr(m));
        cJSON_AddNumberToObject(e, "step_ms_median", timed ? step_ms[timed / 2] : 0);
        cJSON_AddNumberToObject(e, "step_ms_p10", timed ? step_ms[timed / 10] : 0);
        cJSON_AddNumberToObject(e, "step_ms_p90", timed ? step_ms[timed * 9 / 10] : 0);
        cJSON_AddNumberToObject(e, "peak_bytes", (double)held_bytes(j));
        cJSON_AddNumberToObject(e, "device_used_bytes", (double)(total_b - free_b));
        cJSON_AddNumberToObject(e, "loader_wait_s", ls.wait_seconds);
        cJSON_AddNumberToObject(e, "loader_samples_per_s", ls.samples_per_s);
        cJSON_AddNumberToObject(e, "t_start", t_start);
        cJSON_AddNumberToObject(e, "t_end", t_end);
        train_emit(j->ev, e);
        fprintf(j->ev->human, "epoch %d%s: %ld steps, %.2f s, %.0f samples/s, step %.3f ms (median), loss %.5f, "
                "train acc %.4f", epoch, epoch == 1 ? " (warm-up)" : "", steps, seconds, samples / seconds,
                timed ? step_ms[timed / 2] : 0.0f, loss, correct / samples);
        if (o->eval && !diverged) fprintf(j->ev->human, ", held-out loss %.5f acc %.4f AUC %.4f", test_loss, accuracy, auc);
        fprintf(j->ev->human, "\n");
        fflush(j->ev->human);
        if (diverged) status = fail(j, 1, "the loss diverged (NaN or infinite)");
    }
    for (int i = 0; i <= DLRM_MAX_TIMED_STEPS; i++) CHECK_CUDA(cudaEventDestroy(marks[i]));
    free(marks), free(step_ms);
    loader_close(l);
    return status;
}

/* --- set-up ---------------------------------------------------------------------------------------- */

static dlrm_lr_policy policy_of(const dlrm_job *j) {
    const train_options *o = j->o;
    long total = (long)o->epochs * j->steps_per_epoch;
    dlrm_lr_policy p = {o->lr_set ? o->lr : DLRM_DEFAULT_LR, 0, 0, 0};
    if (o->warmup_set) p.warmup_steps = (long)(o->warmup_pct * (double)total);
    if (o->lr_warmup_steps) p.warmup_steps = o->lr_warmup_steps;
    p.decay_start_step = o->lr_decay_start, p.decay_steps = o->lr_decay_steps;
    return p;
}

static void emit_setup(dlrm_job *j) {
    char device[256];
    int mps = 0;
    dlrm *m = &j->model;
    size_t footprint = held_bytes(j);
    dlrm_lr_policy p = m->policy;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "setup");
    cJSON_AddStringToObject(e, "model", "dlrm");
    cJSON_AddNumberToObject(e, "params", (double)m->param_count);
    cJSON_AddNumberToObject(e, "footprint_bytes", (double)footprint);
    cJSON_AddNumberToObject(e, "flops_per_step", m->flops_per_step);
    int sms = train_add_place_fields(e, &j->ctx, device, sizeof device, &mps);
    cJSON_AddNumberToObject(e, "steps_per_epoch", (double)j->steps_per_epoch);
    cJSON_AddStringToObject(e, "data", j->o->data);
    cJSON_AddStringToObject(e, "data_source", j->data_source);
    add_config_fields(e, j);
    cJSON_AddNumberToObject(e, "train_rows", (double)j->train_rows);
    cJSON_AddNumberToObject(e, "held_out_rows", (double)j->test_rows);
    cJSON_AddNumberToObject(e, "block_steps", (double)j->o->block_steps);
    cJSON_AddNumberToObject(e, "lr", p.base_lr);
    cJSON_AddNumberToObject(e, "lr_warmup_steps", (double)p.warmup_steps);
    cJSON_AddNumberToObject(e, "lr_decay_start_step", (double)p.decay_start_step);
    cJSON_AddNumberToObject(e, "lr_decay_steps", (double)p.decay_steps);
    train_emit(j->ev, e);
    fprintf(j->ev->human, "dlrm %s on %s (%d SMs%s): %lld parameters, %.3f GB on the GPU (tables %.3f GB), %ld "
            "steps of %d per epoch, %s data\n", j->config.name, device, sms, mps ? ", MPS" : "",
            (long long)m->param_count, footprint / 1e9, dlrm_footprint_of(m).embeddings / 1e9, j->steps_per_epoch,
            j->config.batch, j->data_source);
}

/* Context, model, checkpoint, graphs. 0, or the exit code with the message in err. */
static int build_on_gpu(dlrm_job *j, char *err, size_t err_size) {
    const train_options *o = j->o;
    if (context_init_at(&j->ctx, j->place, o->workspace_limit, o->allow_tf32) != CONTEXT_OK) {
        snprintf(err, err_size, "no usable GPU: training needs a CUDA device");
        return 1;
    }
    int rc = dlrm_start(&j->model, &j->ctx, err, err_size);
    if (rc != 0) return rc;
    if (o->load[0] && dlrm_load(&j->model, o->load, err, err_size) != 0) return 2;
    CHECK_CUDA(cudaStreamCreateWithFlags(&j->copy_stream, cudaStreamNonBlocking));
    for (int s = 0; s < 2; s++) {
        CHECK_CUDA(cudaEventCreateWithFlags(&j->copied[s], cudaEventDisableTiming));
        CHECK_CUDA(cudaEventCreateWithFlags(&j->consumed[s], cudaEventDisableTiming));
    }
    dlrm_prepare(&j->model, policy_of(j), o->use_graph);
    return 0;
}

static void cleanup(dlrm_job *j) {
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
}

int train_dlrm(const train_options *o, const train_events *ev, const context_place *place) {
    dlrm_job *j = calloc(1, sizeof *j); /* large (the model's layer table); one per job, not static */
    if (!j) return train_fail(ev, 1, "out of memory for the job");
    j->place = place;
    j->o = o;
    j->ev = ev;
    char err[DLRM_ERR];
    if (check_options(o, err, sizeof err) != 0 ||
        dlrm_config_named(&j->config, o->data, o->max_rows, o->batch, o->seed, err, sizeof err) != 0 ||
        dlrm_plan(&j->model, &j->config, 0, err, sizeof err) != 0) {
        int rc = fail(j, 2, err);
        free(j);
        return rc;
    }
    if (o->dry_run) {
        int rc = dry_run(j);
        dlrm_free(&j->model);
        free(j);
        return rc;
    }
    int rc = 0;
    if (o->load[0] && access(o->load, R_OK) != 0) {
        snprintf(err, sizeof err, "--load %s: cannot read the file", o->load);
        rc = fail(j, 2, err);
    } else if (open_data(j, err, sizeof err) != 0) {
        rc = fail(j, 2, err);
    } else if ((rc = build_on_gpu(j, err, sizeof err)) != 0) {
        rc = fail(j, rc, err);
    } else {
        emit_setup(j);
        if (train_wait_for_go(ev, o->wait_go) != 0) rc = 1;
        else rc = run_epochs(j);
        if (rc == 0 && o->save[0] && dlrm_save(&j->model, o->save, err, sizeof err) != 0) rc = fail(j, 1, err);
        if (rc == 0) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "event", "done");
            cJSON_AddNumberToObject(e, "t", train_wall_seconds());
            train_emit(ev, e);
        }
    }
    cleanup(j);
    free(j);
    return rc;
}
