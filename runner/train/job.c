/* One training job as a callable unit (runner/train/job.h), whichever workload it trains
 * (runner/train/workload.h: the image models or the recommender, as the model catalog says):
 * the dry run, the set-up on the GPU, the start barrier, the epoch loop with its timing, faults
 * and events (train_events.h), the checkpoint and the end, written once for both. */
#include "runner/train/job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/clock.h"
#include "base/line_reader.h"
#include "base/spread.h"
#include "data/data_check.h"
#include "kernels/check.h"
#include "models/core/context.h"
#include "runner/train/job_trace.h"
#include "runner/train/step_window.h"
#include "runner/train/workload.h"

#define STEP_RING 1024            /* steps queued on the GPU whose end is not read back yet, at most */
#define JOB_ERR 4096

/* The workload of each kind of input; a name the catalog lacks goes to the image models, whose
 * builder refuses it with the names it knows. */
static const workload_ops *const WORKLOADS[] = {
    [MODEL_INPUT_IMAGES] = &workload_image_ops,
    [MODEL_INPUT_CLICK_LOGS] = &workload_dlrm_ops,
};

typedef struct job {
    workload w;
    const train_options *o;
    const train_events *ev;
    long blocks;              /* block events so far */
    step_windows win;         /* --window-protocol: the runner's windows (step_window.h) */
    line_reader commands;/* ... and its commands on stdin (a process of its own) */
    int stop;                 /* the window protocol: leave after this step (agreed among ranks) */
    job_trace *trace;         /* --kernels: the traced window's kernels (job_trace.h); NULL: none */
} job;

/* Each step's end on the GPU, read back without waiting on it: an event is recorded after every
 * step into a ring and mapped to the wall clock through the epoch's anchor (an event synchronised
 * once, the host clock read then; elapsed times from it). The oldest events are queried after
 * each step and read while complete; a slot about to be reused whose step (or its predecessor,
 * which its duration needs) is not read yet is waited for, which never happens while the host runs
 * less than STEP_RING steps ahead. */
typedef struct step_ring {
    cudaEvent_t anchor, marks[STEP_RING];
    double anchor_wall;       /* unix seconds of the anchor */
    long recorded, resolved;  /* steps of this epoch (from 1) recorded, read back */
    float *step_ms;           /* every step's time this epoch, grown as needed */
    long ms_cap;
} step_ring;

static int fail(const job *j, int code, const char *message) { return train_fail(j->ev, code, message); }

static int dry_run(job *j) {
    workload *w = &j->w;
    if (j->o->json) {
        train_footprint f = w->ops->footprint(w);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "model", j->o->model);
        w->ops->add_plan_fields(w, e);
        cJSON_AddNumberToObject(e, "flops_per_step", w->ops->flops_per_step(w));
        cJSON_AddNumberToObject(e, "samples_per_epoch", (double)j->o->synthetic_count);
        cJSON_AddItemToObject(e, "footprint", train_footprint_json(&f));
        cJSON_AddItemToObject(e, "sm_target", train_sm_target_dry_json());
        train_emit(j->ev, e);
    } else {
        w->ops->print_plan(w, stdout);
    }
    return 0;
}

typedef struct block_clock {
    double start;
    long steps;
} block_clock;

/* Ends a block of steps: waits for it, emits its event, adds its sums to the epoch's. 1 when it
 * diverged. */
static int end_block(job *j, int epoch, block_clock *block, double *epoch_loss, double *epoch_correct) {
    workload *w = &j->w;
    double loss_sum, correct;
    w->ops->take_sums(w, &loss_sum, &correct);
    double now = clock_unix();
    *epoch_loss += loss_sum;
    *epoch_correct += correct;
    train_block_record r = {epoch, ++j->blocks, block->steps, j->o->batch, now - block->start, loss_sum, correct,
                            w->ops->current_lr(w), now};
    train_emit_block(j->ev, &r);
    double loss = loss_sum / ((double)block->steps * j->o->batch);
    block->start = now;
    block->steps = 0;
    return !isfinite(loss);
}

static cudaEvent_t ring_mark(const step_ring *r, long step) { return step ? r->marks[step % STEP_RING] : r->anchor; }

/* Reads step `resolved + 1` back: its time, its end on the wall clock, the windows it falls in. */
static void ring_resolve_next(job *j, step_ring *r) {
    long step = ++r->resolved;
    float ms, from_anchor;
    CHECK_CUDA(cudaEventElapsedTime(&ms, ring_mark(r, step - 1), ring_mark(r, step)));
    CHECK_CUDA(cudaEventElapsedTime(&from_anchor, r->anchor, ring_mark(r, step)));
    if (step > r->ms_cap) {
        long cap = r->ms_cap ? r->ms_cap * 2 : 4096;
        float *grown = realloc(r->step_ms, (size_t)cap * sizeof *grown);
        if (!grown) exit(train_fail(j->ev, 1, "out of host memory for the step times"));
        r->step_ms = grown, r->ms_cap = cap;
    }
    r->step_ms[step - 1] = ms;
    double t_end = r->anchor_wall + from_anchor / 1000.0;
    if (j->o->window_protocol && step_windows_add(&j->win, t_end, ms) != 0)
        exit(train_fail(j->ev, 1, "out of host memory for the window's steps"));
    job_trace_step(j->trace, t_end, ms); /* the first step after a traced window ends its trace */
}

/* After step `recorded` was queued: reads back what is complete, never waiting. */
static void ring_poll(job *j, step_ring *r) {
    while (r->resolved < r->recorded) {
        cudaError_t e = cudaEventQuery(ring_mark(r, r->resolved + 1));
        if (e == cudaErrorNotReady) break;
        CHECK_CUDA(e);
        ring_resolve_next(j, r);
    }
}

/* Before step `step` is recorded into its slot: the steps that slot and its neighbour still hold
 * are read back first (waiting only when the host ran STEP_RING steps ahead). */
static void ring_make_room(job *j, step_ring *r, long step) {
    while (r->resolved < step - STEP_RING + 1) {
        CHECK_CUDA(cudaEventSynchronize(ring_mark(r, r->resolved + 1)));
        ring_resolve_next(j, r);
    }
}

/* The window protocol between steps: the runner's lines (without waiting), then each window
 * whose figures are final. */
static void window_between_steps(job *j, int final) {
    char line[256];
    int got;
    for (;;) {
        got = j->ev->next_command ? j->ev->next_command(j->ev->user, line, sizeof line)
                                  : line_reader_next(&j->commands, 0, line, sizeof line);
        if (got != 1) break;
        if (step_windows_command(&j->win, line) == 2) job_trace_begin(j->trace, j->win.trace.t0, j->win.trace.t1);
    }
    if (got < 0) j->win.stopped = 1; /* stdin ended: nothing more will come */
    for (cJSON *e; (e = step_windows_next_event(&j->win, final));) train_emit(j->ev, e);
}

/* CPU seconds of the whole process so far (every thread: the loader's workers, nvJPEG's). */
static double process_cpu_seconds(void) {
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) != 0) return NAN;
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static int run_epochs(job *j) {
    workload *w = &j->w;
    const workload_ops *ops = w->ops;
    const train_options *o = j->o;
    cudaStream_t stream = w->ctx->stream;
    char err[JOB_ERR];
    loader *l = ops->open_loader(w, err, sizeof err);
    if (!l) return fail(j, 1, err);
    step_ring ring = {0};
    CHECK_CUDA(cudaEventCreate(&ring.anchor));
    for (int i = 0; i < STEP_RING; i++) CHECK_CUDA(cudaEventCreate(&ring.marks[i]));
    int window = o->window_protocol, status = 0;
    long done = 0; /* steps of the epochs before this one */
    /* the window protocol: after the warm-up epoch, epochs go on (past the plan) until "stop" */
    for (int epoch = 1; (window ? epoch == 1 || !j->stop : epoch <= o->epochs) && status == 0; epoch++) {
        loader_start_epoch(l, epoch - 1);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        double t_start = clock_unix(), cpu_start = process_cpu_seconds();
        CHECK_CUDA(cudaEventRecord(ring.anchor, stream));
        CHECK_CUDA(cudaEventSynchronize(ring.anchor));
        ring.anchor_wall = clock_unix();
        ring.recorded = ring.resolved = 0;
        /* train run by a person: --kernels traces the last epoch (its end is known at its end) */
        if (!window && epoch == o->epochs) job_trace_begin(j->trace, t_start, INFINITY);
        long steps = 0;
        loader_batch b;
        int got = 0, diverged = 0;
        double loss_sum = 0, correct = 0;
        block_clock block = {t_start, 0};
        train_progress progress = {0};
        /* the window protocol's warm-up need not be a whole epoch (an ImageNet one is 10,009 steps) */
        long planned = window && epoch == 1 && o->warmup_steps > 0 && o->warmup_steps < w->steps_per_epoch
                           ? o->warmup_steps : w->steps_per_epoch;
        while (steps < planned && !diverged && !(window && epoch > 1 && j->stop) &&
               (got = loader_next(l, &b, err, sizeof err)) == 1) {
            ops->step(w, &b, steps);
            steps++;
            block.steps++;
            train_progress_tick(j->ev, &progress, epoch, steps, planned, o->batch, t_start);
            long step = done + steps;
            train_fault_at(&o->fault, step, j->ev, stream, w->params);
            if (o->fault.kind == FAULT_NAN && step == o->fault.step && ops->weights_written) ops->weights_written(w);
            ring_make_room(j, &ring, steps);
            CHECK_CUDA(cudaEventRecord(ring.marks[steps % STEP_RING], stream));
            ring.recorded = steps;
            ops->batch_done(w, steps - 1);
            ring_poll(j, &ring);
            if (window) {
                window_between_steps(j, 0);
                j->stop = ops->agree_stop ? ops->agree_stop(w, j->win.stopped, done + steps) : j->win.stopped;
            }
            if (ops->timed_blocks && block.steps == o->block_steps)
                diverged = end_block(j, epoch, &block, &loss_sum, &correct);
        }
        if (got < 0) {
            status = fail(j, 1, err);
            break;
        }
        if (ops->timed_blocks && block.steps > 0) diverged |= end_block(j, epoch, &block, &loss_sum, &correct);
        CHECK_CUDA(cudaStreamSynchronize(stream));
        double t_end = clock_unix(), cpu_end = process_cpu_seconds();
        while (ring.resolved < ring.recorded) ring_resolve_next(j, &ring);
        if (!window && epoch == o->epochs) job_trace_finish(j->trace, t_end);
        if (window) window_between_steps(j, 0);
        long timed = steps;
        float *step_ms = ring.step_ms;
        /* the completion measurement's epochs, each step's time (the window's leave with its event) */
        size_t sent = 0;
        for (cJSON *e; !window && (e = step_times_event("epoch", epoch, step_ms, (size_t)timed, &sent));)
            train_emit(j->ev, e);
        if (timed) spread_sort_floats(step_ms, (size_t)timed);
        if (!ops->timed_blocks) {
            ops->take_sums(w, &loss_sum, &correct);
            diverged = !isfinite(loss_sum / ((double)steps * o->batch));
        }
        workload_eval held_out = {NAN, NAN, NAN};
        int evaluated = 0;
        if (o->eval) {
            int rc = ops->evaluate(w, diverged, &held_out, err, sizeof err);
            if (rc < 0) {
                status = fail(j, 1, err);
                break;
            }
            evaluated = rc == 0;
        }
        size_t free_b, total_b;
        CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));
        loader_stats ls = loader_epoch_stats(l);
        train_epoch_record r = {
            .epoch = epoch, .steps = steps, .batch = o->batch, .seconds = t_end - t_start, .loss_sum = loss_sum,
            .correct = correct, .evaluated = evaluated, .accuracy = held_out.accuracy, .test_loss = held_out.loss,
            .auc = held_out.auc, .lr = ops->current_lr(w),
            .step_ms_median = timed ? step_ms[timed / 2] : 0, .step_ms_p10 = timed ? step_ms[timed / 10] : 0,
            .step_ms_p90 = timed ? step_ms[timed * 9 / 10] : 0, .peak_bytes = (double)ops->gpu_bytes(w),
            .device_used_bytes = (double)(total_b - free_b), .loader_wait_s = ls.wait_seconds,
            .loader_samples_per_s = ls.samples_per_s, .bad_images = ops->bad_images ? ops->bad_images(w) : 0,
            .t_start = t_start, .t_end = t_end,
            .cpu_cores = t_end > t_start ? (cpu_end - cpu_start) / (t_end - t_start) : 0,
            .host_decoded = ops->host_decoded ? ops->host_decoded(w) : -1};
        train_emit_epoch(j->ev, &ops->style, &r);
        if (diverged) status = fail(j, 1, "the loss diverged (NaN or infinite)");
        done += steps;
    }
    if (window && status == 0) window_between_steps(j, 1); /* stopped: every window is final */
    /* stopped before a step completed after the traced window: it ends with what it holds */
    if (window && j->win.traced) job_trace_finish(j->trace, j->win.trace.t1);
    CHECK_CUDA(cudaEventDestroy(ring.anchor));
    for (int i = 0; i < STEP_RING; i++) CHECK_CUDA(cudaEventDestroy(ring.marks[i]));
    free(ring.step_ms);
    loader_close(l);
    return status;
}

static void emit_setup(job *j) {
    workload *w = &j->w;
    char device[256];
    int sms = 0, mps = 0;
    cJSON *e = train_setup_event(j->o->model, (double)w->ops->param_count(w), (double)w->ops->gpu_bytes(w),
                                 w->ops->flops_per_step(w), w->ctx, w->steps_per_epoch, j->o->data, w->data_source,
                                 device, sizeof device, &sms, &mps);
    /* which data it trains on, named: real (where) or synthetic (why), as data/data_check.h names it */
    char data[1200];
    data_describe(j->o->data, j->o->data_root, j->o->data_if_present, data, sizeof data);
    cJSON_AddStringToObject(e, "data_detail", data);
    w->ops->add_setup_fields(w, e);
    train_emit(j->ev, e);
    w->ops->print_setup(w, device, sms, mps, j->ev->human);
    fprintf(j->ev->human, "data: %s, %s\n", j->o->data, data);
}

/* The GPU's side of set-up: the tracer, the context, a checkpoint to start from, the model's
 * search and capture. Returns 0, or an exit code with err said. */
static int set_up(job *j, const context_place *place, char *err, size_t err_size) {
    workload *w = &j->w;
    j->trace = job_trace_open(j->o, j->ev); /* before the GPU work: its streams and its capture are seen */
    int rc = w->ops->start(w, place, err, err_size);
    if (rc != 0) return rc;
    job_trace_attach(j->trace, w->ctx, w->params);
    if (j->o->load[0] && w->ops->load(w, j->o->load, err, err_size) != 0) return 2;
    return w->ops->prepare(w, err, err_size);
}

/* Everything after the plan: data, GPU, barrier, epochs, checkpoint. */
static int train_workload(job *j, const context_place *place, char *err, size_t err_size) {
    workload *w = &j->w;
    const train_options *o = j->o;
    if (train_options_check_files(o, err, err_size) != 0) return fail(j, 2, err);
    if (w->ops->open_data(w, err, err_size) != 0) return fail(j, 2, err);
    /* set-up allocates, searches and captures: its turn at the device (models/core/context.h) */
    context_turn_take();
    int rc = set_up(j, place, err, err_size);
    context_turn_give();
    if (rc != 0) return fail(j, rc, err);
    emit_setup(j);
    if (train_wait_for_go(j->ev, o->wait_go) != 0) return 1;
    rc = run_epochs(j);
    if (rc == 0 && w->ops->finish && w->ops->finish(w, err, err_size) != 0) rc = fail(j, 1, err);
    if (rc == 0 && o->save[0] && w->ops->save(w, o->save, err, err_size) != 0) rc = fail(j, 1, err);
    if (rc == 0) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "event", "done");
        cJSON_AddNumberToObject(e, "t", clock_unix());
        train_emit(j->ev, e);
    }
    return rc;
}

int train_job_run(const train_options *options, const train_events *events, const context_place *place) {
    job j = {.o = options, .ev = events, .commands = {.fd = 0}};
    step_windows_init(&j.win, options->batch);
    char err[JOB_ERR];
    const model_spec *spec = catalog_find(options->model);
    j.w = (workload){.ops = WORKLOADS[spec ? spec->input : MODEL_INPUT_IMAGES], .o = options, .ev = events,
                     .spec = spec};
    int rc;
    if (j.w.ops->plan(&j.w, err, sizeof err) != 0) rc = fail(&j, 2, err);
    else if (options->dry_run && train_options_check_files(options, err, sizeof err) != 0) rc = fail(&j, 2, err);
    else if (options->dry_run) rc = dry_run(&j);
    else rc = train_workload(&j, place, err, sizeof err);
    context_turn_take(); /* frees synchronise the device: not during another job's capture */
    job_trace_close(j.trace); /* before the workload's end frees the context it marks */
    j.w.ops->end(&j.w);
    context_turn_give();
    step_windows_free(&j.win);
    return rc;
}
