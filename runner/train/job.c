/* One image-model training job as a callable unit: validates its options on the host, builds the
 * model twice (planned, then allocated in one arena), measures convolution algorithms, captures
 * the training step in a CUDA graph, and trains epoch by epoch on batches the loader prepares in
 * pinned memory, speaking the runner's protocol through its events (train_events.h). The recommender
 * goes to train_dlrm. `train` runs one job per process; the job host runs several, one per thread. */
#include "runner/train/job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "kernels/check.h"
#include "models/core/checkpoint.h"
#include "models/core/model.h"
#include "models/core/session.h"
#include "runner/train/train_ddp.h"
#include "runner/train/train_dlrm.h"
#include "runner/train/train_events.h"
#include "runner/train/train_host.h"
#include "runner/train/train_options.h"

#define MAX_TIMED_STEPS 4096

typedef struct job {
    train_options opt;
    train_events ev;
    dataset train_set, test_set;
    int has_test_set;
    const char *data_source;  /* "real" or "synthetic" */
    session s;
    long steps_per_epoch;
    ddp ddp;                  /* data-parallel rank (train --gpus): its communicator */
    double data_open_s, capture_s; /* set-up time outside the session's own (setup event) */
} job;

static int fail(const job *j, int code, const char *message) { return train_fail(&j->ev, code, message); }
static void emit(const job *j, cJSON *event) { train_emit(&j->ev, event); }

static model_config config_of(const train_options *o) {
    model_config c = {0};
    snprintf(c.name, sizeof c.name, "%s", o->model);
    c.batch = o->batch, c.image_size = o->image_size, c.in_channels = 3, c.classes = o->classes;
    c.seed = o->seed, c.patch_size = o->patch_size, c.drop_path = o->drop_path;
    c.precision = o->precision;
    return c;
}

/* The workspace is bounded by the limit until the algorithms are measured on the GPU, once for the
 * context and once for each side workspace of the model (plus 32 MiB for cuBLASLt and slack). */
static size_t workspace_bound(const job *j) {
    return j->opt.workspace_limit * (size_t)(1 + j->s.model->side_workspaces) + ((size_t)32 << 20);
}

static cJSON *footprint_json(const job *j) {
    arena_footprint f = arena_footprint_of(&j->s.plan, optimizer_slots(j->opt.optimizer));
    size_t workspace = workspace_bound(j);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "parameters", (double)f.parameters);
    cJSON_AddNumberToObject(o, "gradients", (double)f.gradients);
    cJSON_AddNumberToObject(o, "optimizer", (double)f.optimizer);
    cJSON_AddNumberToObject(o, "buffers", (double)f.buffers);
    cJSON_AddNumberToObject(o, "activations", (double)f.activations);
    cJSON_AddNumberToObject(o, "scratch", (double)f.scratch);
    cJSON_AddNumberToObject(o, "workspace", (double)workspace);
    cJSON_AddNumberToObject(o, "total", (double)(f.total + workspace));
    return o;
}

static int dry_run(job *j) {
    arena_footprint f = arena_footprint_of(&j->s.plan, optimizer_slots(j->opt.optimizer));
    if (j->opt.json) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "model", j->opt.model);
        cJSON_AddNumberToObject(e, "params", (double)model_param_count(j->s.model));
        cJSON_AddNumberToObject(e, "batch", j->opt.batch);
        cJSON_AddNumberToObject(e, "image_size", j->opt.image_size);
        cJSON_AddNumberToObject(e, "classes", j->opt.classes);
        cJSON_AddNumberToObject(e, "flops_per_step", 3.0 * j->s.model->flops_per_step_forward);
        cJSON_AddNumberToObject(e, "samples_per_epoch", (double)j->opt.synthetic_count);
        cJSON_AddItemToObject(e, "footprint", footprint_json(j));
        emit(j, e);
    } else {
        printf("%s: %lld parameters; planned GPU footprint %.1f MiB (parameters %.1f, gradients %.1f, "
               "optimizer %.1f, buffers %.1f, activations %.1f, scratch %.1f, workspace <= %.1f)\n",
               j->opt.model, (long long)model_param_count(j->s.model),
               (f.total + workspace_bound(j)) / 1048576.0, f.parameters / 1048576.0,
               f.gradients / 1048576.0, f.optimizer / 1048576.0, f.buffers / 1048576.0,
               f.activations / 1048576.0, f.scratch / 1048576.0,
               workspace_bound(j) / 1048576.0);
    }
    return 0;
}

static int open_synthetic(job *j, char *err, size_t err_size) {
    const train_options *o = &j->opt;
    synthetic_spec train_spec = {o->synthetic_count, o->image_size, o->image_size, 3, o->classes, o->seed};
    synthetic_spec test_spec = {10000, o->image_size, o->image_size, 3, o->classes, o->seed + 1};
    if (dataset_open_synthetic(&j->train_set, &train_spec, err, err_size)) return -1;
    return dataset_open_synthetic(&j->test_set, &test_spec, err, err_size);
}

/* Real files: Fashion-MNIST (the installed copy by default), and CIFAR-10, ImageNet 64x64 and
 * ImageNet with --data-root. 1 when no real files were asked for (synthetic then), -1 on error. */
static int open_real(job *j, char *err, size_t err_size) {
    const train_options *o = &j->opt;
    if (!strcmp(o->data, "fashion-mnist")) {
        const char *root = o->data_root[0] ? o->data_root : FASHION_MNIST_DEFAULT_ROOT;
        if (dataset_open_fashion_mnist(&j->train_set, root, 1, err, err_size)) return -1;
        return dataset_open_fashion_mnist(&j->test_set, root, 0, err, err_size);
    }
    if (!o->data_root[0]) return 1;
    if (!strcmp(o->data, "cifar10")) {
        if (dataset_open_cifar10(&j->train_set, o->data_root, 1, err, err_size)) return -1;
        return dataset_open_cifar10(&j->test_set, o->data_root, 0, err, err_size);
    }
    if (!strcmp(o->data, "imagenet64")) {
        if (dataset_open_imagenet64(&j->train_set, o->data_root, 1, err, err_size)) return -1;
        return dataset_open_imagenet64(&j->test_set, o->data_root, 0, err, err_size);
    }
    if (!strcmp(o->data, "imagenet")) {
        imagenet_options train = {o->data_root, 1, o->image_size, o->skip_bad, o->seed, NULL};
        imagenet_options val = {o->data_root, 0, o->image_size, o->skip_bad, o->seed, NULL};
        if (dataset_open_imagenet(&j->train_set, &train, err, err_size)) return -1;
        return dataset_open_imagenet(&j->test_set, &val, err, err_size);
    }
    return 1;
}

static int open_data(job *j, char *err, size_t err_size) {
    const train_options *o = &j->opt;
    int real = open_real(j, err, err_size);
    j->data_source = "real";
    if (real < 0 && o->data_if_present && o->data_root[0]) {
        fprintf(stderr, "train: %s; --data-if-present: synthetic %s-shaped data instead\n", err, o->data);
        dataset_close(&j->train_set);
        dataset_close(&j->test_set);
        real = 1;
    }
    if (real < 0) return -1;
    if (real == 1) {
        j->data_source = "synthetic";
        if (open_synthetic(j, err, err_size)) return -1;
    }
    j->has_test_set = 1;
    /* a data-parallel rank reads every world-th batch */
    long batches = (long)(j->train_set.count / ((int64_t)o->batch * (o->ddp_world > 1 ? o->ddp_world : 1)));
    if (batches < 1) {
        snprintf(err, err_size, "--batch %d is larger than the %lld samples of %s", o->batch,
                 (long long)j->train_set.count, o->data);
        return -1;
    }
    j->steps_per_epoch = o->steps_per_epoch && o->steps_per_epoch < batches ? o->steps_per_epoch : batches;
    return 0;
}


static lr_schedule schedule_of(const job *j) {
    const train_options *o = &j->opt;
    long total = (long)o->epochs * j->steps_per_epoch;
    lr_schedule s = {o->schedule, o->lr, total, (long)(o->warmup_pct * total), 0, o->gamma, o->min_lr, 25.0f, 1e4f};
    s.step_size = (long)o->step_epochs * j->steps_per_epoch;
    if (s.kind == LR_ONE_CYCLE && s.warmup_steps < 1) s.warmup_steps = 1;
    return s;
}

/* Allocates, builds for real, measures algorithms, captures the step. */
static int build_on_gpu(job *j, const context_place *place, char *err, size_t err_size) {
    const train_options *o = &j->opt;
    int rc = session_start_at(&j->s, place, o->workspace_limit, o->allow_tf32,
                              optimizer_slots(o->optimizer), err, err_size);
    if (rc != 0) return rc;
    if (o->load[0] && checkpoint_load(j->s.model, &j->s.ctx, o->load, err, err_size) != 0) return 2;
    if (o->ddp_world && train_ddp_join(&j->ddp, &j->s, o, err, err_size) != 0) return 1; /* before the capture */
    optimizer_config opt = {o->optimizer, o->momentum, o->weight_decay, o->nesterov, o->decay_all, 0, 0, 0};
    double t0 = train_wall_seconds();
    trainer_init(&j->s.trainer, j->s.model, &j->s.ctx, opt, schedule_of(j), o->label_smoothing, o->use_graph);
    j->capture_s = train_wall_seconds() - t0;
    return 0;
}

static int compare_floats(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double evaluate(job *j, double *loss) {
    char err[512];
    int workers = train_loader_workers(&j->opt);
    loader_config lc = {.batch = j->opt.batch, .workers = workers, .seed = j->opt.seed,
                        .alloc_host = train_pinned_alloc, .free_host = train_pinned_free};
    loader *l = loader_open(&j->test_set, &lc, err, sizeof err);
    if (!l) return NAN;
    loader_start_epoch(l, 0);
    loader_batch b;
    double sum = 0, correct = 0, seen = 0;
    while (loader_next(l, &b, err, sizeof err) == 1) {
        trainer_eval_batch(&j->s.trainer, b.images, b.labels, b.n);
        CHECK_CUDA(cudaStreamSynchronize(j->s.ctx.stream)); /* the loader reuses b's buffers next */
        seen += b.n;
    }
    loader_close(l);
    trainer_take_sums(&j->s.trainer, &sum, &correct);
    *loss = seen ? sum / seen : NAN;
    return seen ? correct / seen : NAN;
}

static int run_epochs(job *j) {
    const train_options *o = &j->opt;
    char err[512];
    int workers = train_loader_workers(o);
    loader_config lc = {.batch = o->batch, .workers = workers, .shuffle = 1, .drop_last = 1,
                        .shards = o->ddp_world, .shard = o->ddp_rank, .seed = o->seed, .alloc_host = train_pinned_alloc, .free_host = train_pinned_free};
    loader *l = loader_open(&j->train_set, &lc, err, sizeof err);
    if (!l) return fail(j, 1, err);
    cudaEvent_t copied, *marks = malloc((MAX_TIMED_STEPS + 1) * sizeof *marks);
    float *step_ms = malloc(MAX_TIMED_STEPS * sizeof *step_ms);
    CHECK_CUDA(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    for (int i = 0; i <= MAX_TIMED_STEPS; i++) CHECK_CUDA(cudaEventCreate(&marks[i]));
    int status = 0;
    for (int epoch = 1; epoch <= o->epochs && status == 0; epoch++) {
        loader_start_epoch(l, epoch - 1);
        CHECK_CUDA(cudaStreamSynchronize(j->s.ctx.stream));
        double t_start = train_wall_seconds();
        CHECK_CUDA(cudaEventRecord(marks[0], j->s.ctx.stream));
        long steps = 0;
        loader_batch b;
        int got = 0;
        train_progress progress = {0};
        while (steps < j->steps_per_epoch && (got = loader_next(l, &b, err, sizeof err)) == 1) {
            trainer_step(&j->s.trainer, b.images, b.labels);
            CHECK_CUDA(cudaEventRecord(copied, j->s.ctx.stream));
            steps++;
            train_progress_tick(&j->ev, &progress, epoch, steps, j->steps_per_epoch, o->batch, t_start);
            long step = (epoch - 1) * j->steps_per_epoch + steps;
            train_fault_at(&o->fault, step, &j->ev, j->s.ctx.stream, &j->s.model->params);
            /* A NaN fault writes the float32 weights, but a bf16 step's forward reads the bfloat16
             * copy that the optimizer keeps: refresh it, so the next step diverges as in float32. */
            if (o->fault.kind == FAULT_NAN && step == o->fault.step && j->s.ctx.arena.half_weights)
                model_weights_to_half(&j->s.ctx);
            if (steps <= MAX_TIMED_STEPS) CHECK_CUDA(cudaEventRecord(marks[steps], j->s.ctx.stream));
            CHECK_CUDA(cudaEventSynchronize(copied)); /* b's pinned buffers are refilled after the next call */
        }
        if (got < 0) {
            status = fail(j, 1, err);
            break;
        }
        CHECK_CUDA(cudaStreamSynchronize(j->s.ctx.stream));
        double t_end = train_wall_seconds(), seconds = t_end - t_start;
        long timed = steps < MAX_TIMED_STEPS ? steps : MAX_TIMED_STEPS;
        for (long s = 0; s < timed; s++) CHECK_CUDA(cudaEventElapsedTime(&step_ms[s], marks[s], marks[s + 1]));
        qsort(step_ms, (size_t)timed, sizeof *step_ms, compare_floats);
        double loss_sum, correct;
        trainer_take_sums(&j->s.trainer, &loss_sum, &correct);
        double samples = (double)steps * o->batch, loss = loss_sum / samples;
        double test_loss = NAN, test_acc = o->eval ? evaluate(j, &test_loss) : NAN;
        size_t free_b, total_b;
        CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
        int diverged = !isfinite(loss);
        loader_stats ls = loader_epoch_stats(l);

        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "event", "epoch");
        cJSON_AddNumberToObject(e, "epoch", epoch);
        cJSON_AddBoolToObject(e, "warmup", epoch == 1);
        cJSON_AddNumberToObject(e, "steps", (double)steps);
        cJSON_AddNumberToObject(e, "samples", samples);
        cJSON_AddNumberToObject(e, "seconds", seconds);
        cJSON_AddNumberToObject(e, "samples_per_s", samples / seconds);
        if (diverged) cJSON_AddNullToObject(e, "loss");
        else cJSON_AddNumberToObject(e, "loss", loss);
        cJSON_AddBoolToObject(e, "diverged", diverged);
        cJSON_AddNumberToObject(e, "train_accuracy", correct / samples);
        if (o->eval) cJSON_AddNumberToObject(e, "accuracy", test_acc), cJSON_AddNumberToObject(e, "test_loss", test_loss);
        else cJSON_AddNullToObject(e, "accuracy");
        cJSON_AddNumberToObject(e, "lr", trainer_current_lr(&j->s.trainer));
        cJSON_AddNumberToObject(e, "step_ms_median", timed ? step_ms[timed / 2] : 0);
        cJSON_AddNumberToObject(e, "step_ms_p10", timed ? step_ms[timed / 10] : 0);
        cJSON_AddNumberToObject(e, "step_ms_p90", timed ? step_ms[timed * 9 / 10] : 0);
        cJSON_AddNumberToObject(e, "peak_bytes", (double)session_gpu_bytes(&j->s));
        cJSON_AddNumberToObject(e, "device_used_bytes", (double)(total_b - free_b));
        cJSON_AddNumberToObject(e, "loader_wait_s", ls.wait_seconds);
        cJSON_AddNumberToObject(e, "loader_samples_per_s", ls.samples_per_s);
        cJSON_AddNumberToObject(e, "bad_images", (double)dataset_imagenet_bad_images(&j->train_set));
        cJSON_AddNumberToObject(e, "t_start", t_start);
        cJSON_AddNumberToObject(e, "t_end", t_end);
        emit(j, e);
        fprintf(j->ev.human, "epoch %d%s: %ld steps, %.2f s, %.0f samples/s, step %.2f ms (median), loss %.4f, "
                "train acc %.4f", epoch, epoch == 1 ? " (warm-up)" : "", steps, seconds, samples / seconds,
                timed ? step_ms[timed / 2] : 0.0f, loss, correct / samples);
        if (o->eval) fprintf(j->ev.human, ", test acc %.4f (loss %.4f)", test_acc, test_loss);
        fprintf(j->ev.human, "\n");
        fflush(j->ev.human);
        if (diverged) status = fail(j, 1, "the loss diverged (NaN or infinite)");
    }
    for (int i = 0; i <= MAX_TIMED_STEPS; i++) CHECK_CUDA(cudaEventDestroy(marks[i]));
    CHECK_CUDA(cudaEventDestroy(copied));
    free(marks), free(step_ms);
    loader_close(l);
    return status;
}

static void emit_setup(job *j) {
    char device[256];
    int mps = 0;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "setup");
    cJSON_AddStringToObject(e, "model", j->opt.model);
    cJSON_AddNumberToObject(e, "params", (double)model_param_count(j->s.model));
    cJSON_AddNumberToObject(e, "footprint_bytes", (double)session_gpu_bytes(&j->s));
    cJSON_AddNumberToObject(e, "flops_per_step", 3.0 * j->s.model->flops_per_step_forward);
    int sms = train_add_place_fields(e, &j->s.ctx, device, sizeof device, &mps);
    cJSON_AddNumberToObject(e, "steps_per_epoch", (double)j->steps_per_epoch);
    cJSON_AddStringToObject(e, "data", j->opt.data);
    cJSON_AddStringToObject(e, "data_source", j->data_source);
    /* where the time before "ready" went: a study runs hundreds of set-ups */
    cJSON *t = cJSON_AddObjectToObject(e, "setup_seconds");
    cJSON_AddNumberToObject(t, "data", j->data_open_s);
    cJSON_AddNumberToObject(t, "gpu_context", j->s.setup_context_s);
    cJSON_AddNumberToObject(t, "build", j->s.setup_build_s);
    cJSON_AddNumberToObject(t, "model_setup", j->s.setup_model_s);
    cJSON_AddNumberToObject(t, "step_capture", j->capture_s);
    emit(j, e);
    fprintf(j->ev.human, "%s on %s (%d SMs%s%s): %lld parameters, %.1f MiB on the GPU, %ld steps of %d per epoch\n",
            j->opt.model, device, sms, mps ? ", MPS" : "", j->s.ctx.green ? ", green context" : "",
            (long long)model_param_count(j->s.model),
            session_gpu_bytes(&j->s) / 1048576.0, j->steps_per_epoch, j->opt.batch);
}

/* Everything after the options: plan, data, GPU, barrier, epochs, checkpoint. */
static int run_job(job *j, const context_place *place, char *err, size_t err_size) {
    if (!strcmp(j->opt.model, "dlrm")) return train_dlrm(&j->opt, &j->ev, place);
    model_config config = config_of(&j->opt);
    if (session_plan(&j->s, &config, err, err_size) != 0) return fail(j, 2, err);
    if (j->opt.dry_run) return dry_run(j);
    double t_data = train_wall_seconds();
    if (open_data(j, err, err_size) != 0) return fail(j, 2, err);
    j->data_open_s = train_wall_seconds() - t_data;
    if (j->opt.load[0] && access(j->opt.load, R_OK) != 0) {
        snprintf(err, err_size, "--load %s: cannot read the file", j->opt.load);
        return fail(j, 2, err);
    }
    int rc = build_on_gpu(j, place, err, err_size);
    if (rc != 0) return fail(j, rc, err);
    emit_setup(j);
    if (train_wait_for_go(&j->ev, j->opt.wait_go) != 0) return 1;
    rc = run_epochs(j);
    if (rc == 0 && j->opt.save[0] && checkpoint_save(j->s.model, &j->s.ctx, j->opt.save, err, err_size) != 0)
        rc = fail(j, 1, err);
    if (rc == 0) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "event", "done");
        cJSON_AddNumberToObject(e, "t", train_wall_seconds());
        emit(j, e);
    }
    train_ddp_leave(&j->ddp);
    session_end(&j->s);
    dataset_close(&j->train_set);
    dataset_close(&j->test_set);
    return rc;
}

int train_job_run(const train_options *options, const train_events *events, const context_place *place) {
    job *j = calloc(1, sizeof *j); /* large (the session's model config); one per job, not static */
    char err[1024];
    if (!j) return train_fail(events, 1, "out of memory for the job");
    j->opt = *options;
    j->ev = *events;
    int rc = run_job(j, place, err, sizeof err);
    free(j);
    return rc;
}
