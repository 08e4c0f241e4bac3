/* The image models as a workload (runner/train/workload.h): every family through the model
 * interface (models/core/model.h) and its session (models/session.h): the model is built twice
 * (planned, then allocated in one arena), the convolution algorithms are measured, the training
 * step is captured in a CUDA graph, and batches come from the loader in pinned memory: decoded
 * images, or with the GPU decoder (train_decode_plan) ImageNet's files undecoded, which
 * runner/train/jpeg_decoder.h turns into the step's images on the GPU. */
#include "runner/train/workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "data/data_check.h"
#include "data/dataset.h"
#include "kernels/check.h"
#include "models/core/checkpoint.h"
#include "models/session.h"
#include "runner/train/jpeg_decoder.h"
#include "runner/train/train_host.h"
#include "runner/train/train_rank.h"

/* Host batches reach the GPU on a stream of their own, into one device copy that the step then
 * takes: the upload of batch k + 1 overlaps step k, where copying the pinned batch on the job's
 * stream put it in front of every step, a large image batch's copy added to each step's time. */
typedef struct batch_upload {
    cudaStream_t stream;
    float *images;            /* device [batch, size, size, 3] */
    int32_t *labels;          /* device [batch] */
    cudaEvent_t done;         /* upload stream: the host batch has been read */
} batch_upload;

static size_t upload_bytes(const train_options *o) {
    size_t images = (size_t)o->batch * o->image_size * o->image_size * 3 * sizeof(float);
    return images + (size_t)o->batch * sizeof(int32_t);
}

typedef struct image_job {
    const train_options *opt;
    dataset train_set, test_set;
    session s;
    ddp ddp;                  /* data-parallel rank (train --gpus): its communicator */
    double data_open_s, capture_s; /* set-up time outside the session's own (setup event) */
    cudaEvent_t copied;       /* job's stream: the step has copied its batch into the model's input */
    batch_upload upload;      /* host batches (not DECODE_GPU) */
    decode_kind decode;       /* where the training images decode (train_decode_plan, then start) */
    char decode_why[256];
    jpeg_decoder *decoder;    /* DECODE_GPU: the job's */
    loader_source encoded;    /* DECODE_GPU: the training set's files, undecoded */
} image_job;

static image_job *impl(const workload *w) { return w->impl; }

static model_config config_of(const train_options *o) {
    model_config c = {0};
    snprintf(c.name, sizeof c.name, "%s", o->model);
    c.batch = o->batch, c.image_size = o->image_size, c.in_channels = 3, c.classes = o->classes;
    c.seed = o->seed, c.patch_size = o->patch_size, c.drop_path = o->drop_path;
    c.precision = o->precision;
    return c;
}

static int plan(workload *w, char *err, size_t err_size) {
    image_job *j = calloc(1, sizeof *j); /* large (the session's model config); one per job, not static */
    if (!j) {
        snprintf(err, err_size, "out of memory for the job");
        return -1;
    }
    w->impl = j;
    j->opt = w->o;
    model_config config = config_of(w->o);
    return session_plan(&j->s, &config, err, err_size);
}

/* The workspace is bounded by the limit until the algorithms are measured on the GPU, once for the
 * context and once for each side workspace of the model (plus 32 MiB for cuBLASLt and slack). */
static size_t workspace_bound(const image_job *j) {
    return j->opt->workspace_limit * (size_t)(1 + j->s.model->side_workspaces) + ((size_t)32 << 20);
}

static train_footprint footprint(const workload *w) {
    const image_job *j = impl(w);
    const train_options *o = j->opt;
    arena_footprint f = arena_footprint_of(&j->s.plan, optimizer_slots(o->optimizer));
    /* counted as scratch: the upload of host batches, or the GPU decoder's slots instead where the
     * job will decode ImageNet's files on the GPU (planned as if the folder holds them: the plan
     * reads no files) */
    char why[160];
    int jpeg_files = !strcmp(o->data, "imagenet") && o->data_root[0];
    size_t upload = train_decode_plan(o, jpeg_files, SUITE_HAVE_NVJPEG, why, sizeof why) == DECODE_GPU
                        ? jpeg_decoder_planned_bytes(o->batch, o->image_size, o->decode_slots)
                        : upload_bytes(o);
    size_t workspace = workspace_bound(j);
    return (train_footprint){(double)f.parameters, (double)f.gradients, (double)f.optimizer, (double)f.buffers,
                             (double)f.activations, (double)(f.scratch + upload), (double)workspace,
                             (double)(f.total + upload + workspace), -1};
}

static double flops_per_step(const workload *w) { return 3.0 * impl(w)->s.model->flops_per_step_forward; }
static int64_t param_count(const workload *w) { return model_param_count(impl(w)->s.model); }

static void add_plan_fields(const workload *w, cJSON *e) {
    cJSON_AddNumberToObject(e, "params", (double)param_count(w));
    cJSON_AddNumberToObject(e, "batch", w->o->batch);
    cJSON_AddNumberToObject(e, "image_size", w->o->image_size);
    cJSON_AddNumberToObject(e, "classes", w->o->classes);
}

static void print_plan(const workload *w, FILE *out) {
    train_footprint f = footprint(w);
    fprintf(out, "%s: %lld parameters; planned GPU footprint %.1f MiB (parameters %.1f, gradients %.1f, "
            "optimizer %.1f, buffers %.1f, activations %.1f, scratch %.1f, workspace <= %.1f)\n",
            w->o->model, (long long)param_count(w), f.total / 1048576.0, f.parameters / 1048576.0,
            f.gradients / 1048576.0, f.optimizer / 1048576.0, f.buffers / 1048576.0, f.activations / 1048576.0,
            f.scratch / 1048576.0, f.workspace / 1048576.0);
}

static int open_synthetic(image_job *j, char *err, size_t err_size) {
    const train_options *o = j->opt;
    synthetic_spec train_spec = {o->synthetic_count, o->image_size, o->image_size, 3, o->classes, o->seed};
    synthetic_spec test_spec = {10000, o->image_size, o->image_size, 3, o->classes, o->seed + 1};
    if (dataset_open_synthetic(&j->train_set, &train_spec, err, err_size)) return -1;
    return dataset_open_synthetic(&j->test_set, &test_spec, err, err_size);
}

/* Real files: Fashion-MNIST (the installed copy by default), and CIFAR-10, ImageNet 64x64 and
 * ImageNet with --data-root. 1 when no real files were asked for (synthetic then), -1 on error. */
static int open_real(image_job *j, char *err, size_t err_size) {
    const train_options *o = j->opt;
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

static int open_data(workload *w, char *err, size_t err_size) {
    image_job *j = impl(w);
    const train_options *o = j->opt;
    double t_data = clock_unix();
    int real = open_real(j, err, err_size);
    w->data_source = "real";
    /* absent files only: a set that is there but malformed is bad input, not a reason for synthetic data */
    if (real < 0 && o->data_if_present && o->data_root[0] && !data_present(o->data, o->data_root)) {
        fprintf(stderr, "train: %s; --data-if-present: synthetic %s-shaped data instead\n", err, o->data);
        dataset_close(&j->train_set);
        dataset_close(&j->test_set);
        real = 1;
    }
    if (real < 0) return -1;
    if (real == 1) {
        w->data_source = "synthetic";
        if (open_synthetic(j, err, err_size)) return -1;
    }
    /* a data-parallel rank reads every world-th batch */
    long batches = (long)(j->train_set.count / ((int64_t)o->batch * (o->ddp_world > 1 ? o->ddp_world : 1)));
    if (batches < 1) {
        snprintf(err, err_size, "--batch %d is larger than the %lld samples of %s", o->batch,
                 (long long)j->train_set.count, o->data);
        return -1;
    }
    w->steps_per_epoch = o->steps_per_epoch && o->steps_per_epoch < batches ? o->steps_per_epoch : batches;
    int jpeg_files = real == 0 && !strcmp(o->data, "imagenet");
    j->decode = train_decode_plan(o, jpeg_files, SUITE_HAVE_NVJPEG, j->decode_why, sizeof j->decode_why);
    if (j->decode == DECODE_GPU &&
        loader_source_imagenet_encoded(&j->encoded, &j->train_set, err, err_size) != 0)
        return -1;
    /* The decode's streams shared the device's 8 hardware queues with the step's: a decode then
     * waited behind the step it should overlap, and more queues let it run beside the step
     * (the nvjpeg stage of lab/device_run.sh). More queues, unless the user chose; read when the CUDA
     * context is made, which comes after this (start). But an MPS server shares about 120
     * connections among its clients (60 at its default of 2 each): at 32, a fourth JPEG-fed job
     * failed to make its context (out of memory), so an MPS client asks for 8 (15 such jobs fit):
     * the mode that makes the job a client says so in its environment (runner/suite/gpu/mps.c),
     * and train under a person's own daemon sets it at its start (train.c). */
    if (j->decode == DECODE_GPU) setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0);
    j->data_open_s = clock_unix() - t_data;
    return 0;
}

/* The GPU decoder, in the job's place, where the plan has one: without it, --decode auto decodes
 * on the CPU and says why; --decode gpu fails (exit 1). */
static int start_decoder(image_job *j, char *err, size_t err_size) {
    if (j->decode != DECODE_GPU) return 0;
    char why[200];
    j->decoder = jpeg_decoder_open(&j->s.ctx, j->opt->batch, j->opt->image_size, j->opt->decode_slots,
                                   dataset_imagenet_mean, dataset_imagenet_std, why, sizeof why);
    if (j->decoder) return 0;
    if (j->opt->decode == DECODE_GPU) {
        snprintf(err, err_size, "--decode gpu: %s", why);
        return 1;
    }
    j->decode = DECODE_CPU;
    snprintf(j->decode_why, sizeof j->decode_why, "--decode auto: %s", why);
    return 0;
}


static lr_schedule schedule_of(const workload *w) {
    const train_options *o = w->o;
    long total = (long)o->epochs * w->steps_per_epoch;
    lr_schedule s = {o->schedule, o->lr, total, (long)(o->warmup_pct * total), 0, o->gamma, o->min_lr, 25.0f, 1e4f};
    s.step_size = (long)o->step_epochs * w->steps_per_epoch;
    if (s.kind == LR_ONE_CYCLE && s.warmup_steps < 1) s.warmup_steps = 1;
    return s;
}

static int start(workload *w, const context_place *place, char *err, size_t err_size) {
    image_job *j = impl(w);
    const train_options *o = w->o;
    int rc = session_start_at(&j->s, place, o->workspace_limit, o->allow_tf32, optimizer_slots(o->optimizer), err,
                              err_size);
    w->ctx = &j->s.ctx;
    if (rc == 0) w->params = &j->s.model->params;
    return rc == 0 ? start_decoder(j, err, err_size) : rc;
}

static int load(workload *w, const char *path, char *err, size_t err_size) {
    return checkpoint_load(impl(w)->s.model, &impl(w)->s.ctx, path, err, err_size);
}

/* Joins the ranks (before the capture: the step holds the all-reduces), captures the step. */
static int prepare(workload *w, char *err, size_t err_size) {
    image_job *j = impl(w);
    const train_options *o = w->o;
    if (o->ddp_world && train_rank_join(&j->ddp, &j->s, o, w->ev, err, err_size) != 0) return 1;
    optimizer_config opt = {o->optimizer, o->momentum, o->weight_decay, o->nesterov, o->decay_all, 0, 0, 0};
    double t0 = clock_unix();
    trainer_init(&j->s.trainer, j->s.model, &j->s.ctx, opt, schedule_of(w), o->label_smoothing, o->use_graph);
    j->capture_s = clock_unix() - t0;
    CHECK_CUDA(cudaEventCreateWithFlags(&j->copied, cudaEventDisableTiming));
    if (!j->decoder) {
        batch_upload *u = &j->upload;
        u->stream = context_stream_create(&j->s.ctx, 0);
        CHECK_CUDA(cudaMalloc((void **)&u->images, upload_bytes(o)));
        u->labels = (int32_t *)((char *)u->images + upload_bytes(o) - (size_t)o->batch * sizeof(int32_t));
        CHECK_CUDA(cudaEventCreateWithFlags(&u->done, cudaEventDisableTiming));
    }
    return 0;
}

static size_t gpu_bytes(const workload *w) {
    const image_job *j = impl(w);
    return session_gpu_bytes(&j->s) + (j->decoder ? jpeg_decoder_gpu_bytes(j->decoder) : 0) +
           (j->upload.images ? upload_bytes(j->opt) : 0);
}

/* where the time before "ready" went: a study runs hundreds of set-ups */
static void add_setup_fields(const workload *w, cJSON *e) {
    const image_job *j = impl(w);
    cJSON *t = cJSON_AddObjectToObject(e, "setup_seconds");
    cJSON_AddNumberToObject(t, "data", j->data_open_s);
    cJSON_AddNumberToObject(t, "gpu_context", j->s.setup_context_s);
    cJSON_AddNumberToObject(t, "build", j->s.setup_build_s);
    cJSON_AddNumberToObject(t, "model_setup", j->s.setup_model_s);
    cJSON_AddNumberToObject(t, "step_capture", j->capture_s);
    /* where the training images decode, and why (train_decode_plan) */
    cJSON_AddStringToObject(e, "decode", decode_kind_name(j->decode));
    cJSON_AddStringToObject(e, "decode_why", j->decode_why);
    if (j->decoder) {
        cJSON_AddStringToObject(e, "decode_backend", jpeg_decoder_backend(j->decoder));
        cJSON_AddBoolToObject(e, "decode_chroma_interpolated", jpeg_decoder_interpolates(j->decoder));
        cJSON_AddNumberToObject(e, "decode_slots", j->opt->decode_slots);
    }
    /* whether the weight-gradient lane was asked for, is in effect, and why not (wgrad_lane.h) */
    const wgrad_lane_choice *lane = &j->s.model->wgrad_lane;
    int asked = wgrad_lane_asked(), in_effect = lane->in_effect && !w->ctx->grad_hooks;
    cJSON_AddBoolToObject(e, "wgrad_lane_asked", asked);
    cJSON_AddBoolToObject(e, "wgrad_lane", in_effect);
    if (asked && !in_effect)
        cJSON_AddStringToObject(e, "wgrad_lane_off", lane->why_off[0] ? lane->why_off
                                : lane->in_effect ? "data-parallel: its hooks take the gradients in the chain's order"
                                                  : "this model has no lane (the ResNets have one)");
}

static void print_setup(const workload *w, const char *device, int sms, int mps, FILE *out) {
    const image_job *j = impl(w);
    fprintf(out, "%s on %s (%d SMs%s%s): %lld parameters, %.1f MiB on the GPU, %ld steps of %d per epoch\n",
            w->o->model, device, sms, mps ? ", MPS" : "", w->ctx->green ? ", green context" : "",
            (long long)param_count(w), gpu_bytes(w) / 1048576.0, w->steps_per_epoch, w->o->batch);
    if (!strcmp(w->o->data, "imagenet") && !strcmp(w->data_source, "real") && !j->decoder)
        fprintf(out, "JPEG decoding on the CPU (%s)\n", j->decode_why);
    else if (!strcmp(w->o->data, "imagenet") && !strcmp(w->data_source, "real"))
        fprintf(out, "JPEG decoding on the GPU, nvJPEG %s backend, %d batch%s at once (%s)\n",
                jpeg_decoder_backend(j->decoder), w->o->decode_slots, w->o->decode_slots == 1 ? "" : "es",
                j->decode_why);
}

/* The loader's finish hook: a filled batch of files decoded on its worker's thread. */
static int decode_batch(const loader_batch *b, void *user, char *err, size_t err_size) {
    image_job *j = user;
    return jpeg_decoder_decode(j->decoder, b, j->encoded.field_bytes[IMAGENET_ENCODED_PAYLOAD], &j->train_set,
                               err, err_size);
}

static loader *open_loader(workload *w, char *err, size_t err_size) {
    const train_options *o = w->o;
    loader_config lc = {.batch = o->batch, .workers = train_loader_workers(o), .shuffle = 1, .drop_last = 1,
                        .shards = o->ddp_world, .shard = o->ddp_rank, .seed = o->seed,
                        .alloc_host = train_pinned_alloc, .free_host = train_pinned_free};
    image_job *j = impl(w);
    if (j->decoder) {
        lc.depth = o->decode_slots, lc.finish = decode_batch, lc.finish_user = j;
        return loader_open_source(&j->encoded, &lc, err, err_size);
    }
    return loader_open(&j->train_set, &lc, err, err_size);
}

/* Batch k's upload waits until step k - 1 has taken the previous one out of the device copy. */
static void step(workload *w, const loader_batch *b, long index) {
    image_job *j = impl(w);
    cudaStream_t stream = j->s.ctx.stream;
    const float *images;
    const int32_t *labels;
    if (!j->decoder) {
        batch_upload *u = &j->upload;
        size_t image_bytes = upload_bytes(j->opt) - (size_t)j->opt->batch * sizeof(int32_t);
        CHECK_CUDA(cudaStreamWaitEvent(u->stream, j->copied, 0));
        int token = kernel_scope_enter(j->s.ctx.scopes, NULL, "input.upload", KPASS_NONE, KCLASS_COPY, 0,
                                       (double)upload_bytes(j->opt));
        CHECK_CUDA(cudaMemcpyAsync(u->images, b->images, image_bytes, cudaMemcpyHostToDevice, u->stream));
        CHECK_CUDA(cudaMemcpyAsync(u->labels, b->labels, (size_t)j->opt->batch * sizeof(int32_t),
                                   cudaMemcpyHostToDevice, u->stream));
        kernel_scope_leave(token);
        CHECK_CUDA(cudaEventRecord(u->done, u->stream));
        CHECK_CUDA(cudaStreamWaitEvent(stream, u->done, 0));
        images = u->images, labels = u->labels;
    } else {
        images = jpeg_decoder_images(j->decoder, b, stream);
        labels = b->fields[IMAGENET_ENCODED_LABEL];
    }
    trainer_take_batch(&j->s.trainer, images, labels);
    CHECK_CUDA(cudaEventRecord(j->copied, stream));
    trainer_run_step(&j->s.trainer);
}

/* The loader may refill b's buffers once they have been read: uploaded, or (GPU decoding) the
 * labels and the decoded images copied, which also frees the decoder's slot. The host then runs
 * a step or two ahead of the GPU. */
static void batch_done(workload *w, long index) {
    image_job *j = impl(w);
    CHECK_CUDA(cudaEventSynchronize(j->decoder ? j->copied : j->upload.done));
}

/* A NaN fault writes the float32 weights, but a bf16 step's forward reads the bfloat16 copy that
 * the optimizer keeps: refresh it, so the next step diverges as in float32. */
static void weights_written(workload *w) {
    if (impl(w)->s.ctx.arena.half_weights) model_weights_to_half(&impl(w)->s.ctx);
}

static void take_sums(workload *w, double *loss_sum, double *correct) {
    trainer_take_sums(&impl(w)->s.trainer, loss_sum, correct);
    ddp_sample_exposed(&impl(w)->ddp); /* the epoch has ended: the stream is idle */
}

/* Test-set loss and accuracy: always measured (NaN where the loader cannot open). */
static int evaluate(workload *w, int diverged, workload_eval *out, char *err, size_t err_size) {
    image_job *j = impl(w);
    int workers = train_loader_workers(j->opt);
    loader_config lc = {.batch = j->opt->batch, .workers = workers, .seed = j->opt->seed,
                        .alloc_host = train_pinned_alloc, .free_host = train_pinned_free};
    loader *l = loader_open(&j->test_set, &lc, err, err_size);
    *out = (workload_eval){NAN, NAN, NAN};
    if (!l) return 0;
    loader_start_epoch(l, 0);
    loader_batch b;
    double sum = 0, correct = 0, seen = 0;
    while (loader_next(l, &b, err, err_size) == 1) {
        trainer_eval_batch(&j->s.trainer, b.images, b.labels, b.n);
        CHECK_CUDA(cudaStreamSynchronize(j->s.ctx.stream)); /* the loader reuses b's buffers next */
        seen += b.n;
    }
    loader_close(l);
    trainer_take_sums(&j->s.trainer, &sum, &correct);
    out->loss = seen ? sum / seen : NAN;
    out->accuracy = seen ? correct / seen : NAN;
    return 0;
}

static double current_lr(const workload *w) { return trainer_current_lr(&impl(w)->s.trainer); }
static double bad_images(const workload *w) { return (double)dataset_imagenet_bad_images(&impl(w)->train_set); }
/* Training images the GPU decoder left to the host: the workers' (not plain JPEGs, too large) and
 * nvJPEG's failures; -1 without the GPU decoder. */
static double host_decoded(const workload *w) {
    const image_job *j = impl(w);
    if (!j->decoder) return -1;
    return (double)(dataset_imagenet_host_decoded(&j->train_set) + jpeg_decoder_host_fallbacks(j->decoder));
}

static int save(workload *w, const char *path, char *err, size_t err_size) {
    return checkpoint_save(impl(w)->s.model, &impl(w)->s.ctx, path, err, err_size);
}

static int agree_stop(workload *w, int told, long step) { return ddp_agree_stop(&impl(w)->ddp, told, step); }

static int finish(workload *w, char *err, size_t err_size) {
    return train_rank_finish(&impl(w)->ddp, w->ev, err, err_size);
}

static void end(workload *w) {
    image_job *j = impl(w);
    if (!j) return;
    if (j->upload.stream) CHECK_CUDA(cudaStreamSynchronize(j->upload.stream));
    if (j->upload.done) CHECK_CUDA(cudaEventDestroy(j->upload.done));
    if (j->upload.images) CHECK_CUDA(cudaFree(j->upload.images));
    if (j->upload.stream) CHECK_CUDA(cudaStreamDestroy(j->upload.stream));
    if (j->copied) CHECK_CUDA(cudaEventDestroy(j->copied));
    jpeg_decoder_close(j->decoder);
    /* the step's graph first: every graph that captured a collective holds a reference on the
     * communicator, and ncclCommDestroy waits for them all to go (a 2-GPU job never exited) */
    trainer_free(&j->s.trainer);
    train_rank_leave(&j->ddp, w->ev);
    session_end(&j->s);
    dataset_close(&j->train_set);
    dataset_close(&j->test_set);
    free(j);
    w->impl = NULL;
}

const workload_ops workload_image_ops = {
    .plan = plan, .footprint = footprint, .flops_per_step = flops_per_step, .add_plan_fields = add_plan_fields,
    .print_plan = print_plan, .open_data = open_data, .start = start, .load = load, .prepare = prepare,
    .param_count = param_count, .gpu_bytes = gpu_bytes, .add_setup_fields = add_setup_fields,
    .print_setup = print_setup, .open_loader = open_loader, .step = step, .batch_done = batch_done,
    .weights_written = weights_written, .take_sums = take_sums, .evaluate = evaluate, .current_lr = current_lr,
    .bad_images = bad_images, .host_decoded = host_decoded, .agree_stop = agree_stop, .finish = finish,
    .save = save, .end = end,
    .style = {.warmup_last = 0, .held_out_auc = 0, .bad_images = 1, .loss_digits = 4, .step_ms_digits = 2},
    .timed_blocks = 0,
};
