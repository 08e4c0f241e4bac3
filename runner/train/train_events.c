#include "runner/train/train_events.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cudnn.h>

#include "base/clock.h"
#include "base/sm_target.h"
#include "kernels/check.h"
#include "kernels/knobs.h"

void train_emit(const train_events *ev, cJSON *event) {
    if (ev->json) {
        char *text = cJSON_PrintUnformatted(event);
        if (ev->write_line) {
            ev->write_line(ev->user, text);
        } else {
            printf("%s\n", text);
            fflush(stdout);
        }
        free(text);
    }
    cJSON_Delete(event);
}

int train_fail(const train_events *ev, int code, const char *message) {
    fprintf(stderr, "train: %s\n", message);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "error");
    cJSON_AddStringToObject(e, "message", message);
    cJSON_AddNumberToObject(e, "exit_code", code);
    train_emit(ev, e);
    return code;
}

int train_wait_for_go(const train_events *ev, int wait_go) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "ready");
    cJSON_AddNumberToObject(e, "t", clock_unix());
    train_emit(ev, e);
    if (!wait_go) return 0;
    if (ev->go_barrier)
        return ev->go_barrier(ev->user) == 0 ? 0 : train_fail(ev, 1, "the job host's start barrier did not say go");
    char line[64];
    if (!fgets(line, sizeof line, stdin) || strncmp(line, "go", 2) != 0)
        return train_fail(ev, 1, "--wait-go: stdin closed or did not say \"go\"");
    return 0;
}

int train_add_device_fields(cJSON *event, int device, char *name, size_t name_size, int *mps) {
    struct cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
    /* older drivers do not know the attribute: not an error, just not MPS */
    if (cudaDeviceGetAttribute(mps, cudaDevAttrMpsEnabled, device) != cudaSuccess) {
        (void)cudaGetLastError();
        *mps = 0;
    }
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(name, name_size, "%s", prop.name);
    cJSON_AddStringToObject(event, "device", prop.name);
    cJSON_AddNumberToObject(event, "sm_count", prop.multiProcessorCount);
    cJSON_AddNumberToObject(event, "mps", *mps);
    cJSON_AddNumberToObject(event, "mig", visible && !strncmp(visible, "MIG-", 4));
    cJSON_AddNumberToObject(event, "pid", (double)getpid());
    /* provenance for the report: the libraries this process really loaded */
    int runtime = 0;
    CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
    cJSON_AddNumberToObject(event, "cuda_runtime_version", runtime);
    cJSON_AddNumberToObject(event, "cudnn_version", (double)cudnnGetVersion());
    return prop.multiProcessorCount;
}

int train_add_place_fields(cJSON *event, const job_context *ctx, char *name, size_t name_size, int *mps) {
    int sms = train_add_device_fields(event, ctx->device, name, name_size, mps);
    cJSON_AddBoolToObject(event, "green", ctx->green != NULL);
    cJSON_AddItemToObject(event, "sm_target", train_sm_target_json(&ctx->sm_target));
    if (!ctx->green) return sms;
    cJSON_ReplaceItemInObject(event, "sm_count", cJSON_CreateNumber(ctx->sm_count));
    cJSON_AddNumberToObject(event, "device_sm_count", sms);
    return ctx->sm_count;
}

cJSON *train_sm_target_json(const context_sm_target *t) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "sms", t->sms);
    cJSON_AddStringToObject(o, "from", sm_target_from_name(t->from));
    if (t->percent) {
        cJSON_AddNumberToObject(o, "percent", t->percent);
        cJSON_AddNumberToObject(o, "device_sms", t->device_sms);
        cJSON_AddNumberToObject(o, "context_sms", t->context_sms);
    }
    return o;
}

cJSON *train_sm_target_dry_json(void) {
    int percent = sm_target_percent(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
    int share = percent > 0 && percent < 100;
    /* an MPS share is reported by the device itself (base/sm_target.h): nothing will be told */
    sm_target_from from = share ? SM_TARGET_SEEN : SM_TARGET_WHOLE;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "sms", 0);
    cJSON_AddStringToObject(o, "from", sm_target_from_name(from));
    if (share) cJSON_AddNumberToObject(o, "percent", percent);
    return o;
}

void train_progress_tick(const train_events *ev, train_progress *p, int epoch, long step, long steps,
                         int batch, double t_start) {
    double now = clock_unix();
    if (p->t_last == 0) p->t_last = t_start;
    if (now - p->t_last < TRAIN_PROGRESS_S || step >= steps) return;
    p->t_last = now;
    /* the rate of the steps queued so far: the GPU may be a few steps behind, which the next
     * event catches up with */
    double rate = step * (double)batch / (now - t_start);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "progress");
    cJSON_AddNumberToObject(e, "epoch", epoch);
    cJSON_AddNumberToObject(e, "step", (double)step);
    cJSON_AddNumberToObject(e, "steps", (double)steps);
    cJSON_AddNumberToObject(e, "samples_per_s", rate);
    cJSON_AddNumberToObject(e, "eta_s", rate > 0 ? (steps - step) * (double)batch / rate : 0);
    cJSON_AddNumberToObject(e, "t", now);
    train_emit(ev, e);
}

cJSON *train_footprint_json(const train_footprint *f) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "parameters", f->parameters);
    cJSON_AddNumberToObject(o, "gradients", f->gradients);
    cJSON_AddNumberToObject(o, "optimizer", f->optimizer);
    cJSON_AddNumberToObject(o, "buffers", f->buffers);
    cJSON_AddNumberToObject(o, "activations", f->activations);
    cJSON_AddNumberToObject(o, "scratch", f->scratch);
    cJSON_AddNumberToObject(o, "workspace", f->workspace);
    cJSON_AddNumberToObject(o, "total", f->total);
    if (f->embeddings >= 0) cJSON_AddNumberToObject(o, "embeddings", f->embeddings);
    return o;
}

cJSON *train_setup_event(const char *model, double params, double footprint_bytes, double flops_per_step,
                         const job_context *ctx, long steps_per_epoch, const char *data, const char *data_source,
                         char *device, size_t device_size, int *sms, int *mps) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "setup");
    cJSON_AddStringToObject(e, "model", model);
    cJSON_AddNumberToObject(e, "params", params);
    cJSON_AddNumberToObject(e, "footprint_bytes", footprint_bytes);
    cJSON_AddNumberToObject(e, "flops_per_step", flops_per_step);
    *sms = train_add_place_fields(e, ctx, device, device_size, mps);
    cJSON_AddNumberToObject(e, "workspace_bytes", (double)ctx->workspace_bytes); /* cuDNN's and cuBLASLt's, as chosen */
    cJSON_AddNumberToObject(e, "steps_per_epoch", (double)steps_per_epoch);
    cJSON_AddStringToObject(e, "data", data);
    cJSON_AddStringToObject(e, "data_source", data_source);
    return e;
}

/* What block and epoch events share: steps, samples, time, throughput, loss (null when it is not
 * finite), training accuracy. */
static void add_progress_fields(cJSON *e, long steps, double batch, double seconds, double loss_sum,
                                double correct) {
    double samples = (double)steps * batch, loss = loss_sum / samples;
    cJSON_AddNumberToObject(e, "steps", (double)steps);
    cJSON_AddNumberToObject(e, "samples", samples);
    cJSON_AddNumberToObject(e, "seconds", seconds);
    cJSON_AddNumberToObject(e, "samples_per_s", samples / seconds);
    if (isfinite(loss)) cJSON_AddNumberToObject(e, "loss", loss);
    else cJSON_AddNullToObject(e, "loss");
    cJSON_AddBoolToObject(e, "diverged", !isfinite(loss));
    cJSON_AddNumberToObject(e, "train_accuracy", correct / samples);
}

void train_emit_epoch(const train_events *ev, const train_epoch_style *style, const train_epoch_record *r) {
    double samples = (double)r->steps * r->batch, loss = r->loss_sum / samples;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "epoch");
    cJSON_AddNumberToObject(e, "epoch", r->epoch);
    if (!style->warmup_last) cJSON_AddBoolToObject(e, "warmup", r->epoch == 1);
    add_progress_fields(e, r->steps, r->batch, r->seconds, r->loss_sum, r->correct);
    if (style->warmup_last) cJSON_AddBoolToObject(e, "warmup", r->epoch == 1);
    if (r->evaluated) {
        cJSON_AddNumberToObject(e, "accuracy", r->accuracy);
        cJSON_AddNumberToObject(e, "test_loss", r->test_loss);
        if (style->held_out_auc && isnan(r->auc)) cJSON_AddNullToObject(e, "auc"); /* labels all of one class */
        else if (style->held_out_auc) cJSON_AddNumberToObject(e, "auc", r->auc);
    } else {
        cJSON_AddNullToObject(e, "accuracy");
        if (style->held_out_auc) cJSON_AddNullToObject(e, "auc");
    }
    cJSON_AddNumberToObject(e, "lr", r->lr);
    cJSON_AddNumberToObject(e, "step_ms_median", r->step_ms_median);
    cJSON_AddNumberToObject(e, "step_ms_p10", r->step_ms_p10);
    cJSON_AddNumberToObject(e, "step_ms_p90", r->step_ms_p90);
    cJSON_AddNumberToObject(e, "peak_bytes", r->peak_bytes);
    cJSON_AddNumberToObject(e, "device_used_bytes", r->device_used_bytes);
    cJSON_AddNumberToObject(e, "loader_wait_s", r->loader_wait_s);
    cJSON_AddNumberToObject(e, "loader_samples_per_s", r->loader_samples_per_s);
    if (style->bad_images) cJSON_AddNumberToObject(e, "bad_images", r->bad_images);
    if (r->host_decoded >= 0) cJSON_AddNumberToObject(e, "host_decoded", r->host_decoded);
    cJSON_AddNumberToObject(e, "cpu_cores", r->cpu_cores);
    cJSON_AddNumberToObject(e, "t_start", r->t_start);
    cJSON_AddNumberToObject(e, "t_end", r->t_end);
    train_emit(ev, e);
    fprintf(ev->human, "epoch %d%s: %ld steps, %.2f s, %.0f samples/s, step %.*f ms (median), loss %.*f, "
            "train acc %.4f", r->epoch, r->epoch == 1 ? " (warm-up)" : "", r->steps, r->seconds, samples / r->seconds,
            style->step_ms_digits, r->step_ms_median, style->loss_digits, loss, r->correct / samples);
    if (r->evaluated && style->held_out_auc)
        fprintf(ev->human, ", held-out loss %.5f acc %.4f AUC %.4f", r->test_loss, r->accuracy, r->auc);
    else if (r->evaluated)
        fprintf(ev->human, ", test acc %.4f (loss %.4f)", r->accuracy, r->test_loss);
    fprintf(ev->human, "\n");
    fflush(ev->human);
}

void train_emit_block(const train_events *ev, const train_block_record *r) {
    double samples = (double)r->steps * r->batch;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "block");
    cJSON_AddNumberToObject(e, "epoch", r->epoch);
    add_progress_fields(e, r->steps, r->batch, r->seconds, r->loss_sum, r->correct);
    cJSON_AddNumberToObject(e, "block", (double)r->block);
    cJSON_AddNumberToObject(e, "lr", r->lr);
    cJSON_AddNumberToObject(e, "t_end", r->t_end);
    train_emit(ev, e);
    fprintf(ev->human, "block %ld: %ld steps, %.3f s, %.0f samples/s, loss %.5f\n", r->block, r->steps, r->seconds,
            samples / r->seconds, r->loss_sum / samples);
}
