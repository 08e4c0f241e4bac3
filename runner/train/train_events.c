#include "runner/train/train_events.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cudnn.h>

#include "kernels/check.h"

double train_wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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
    cJSON_AddNumberToObject(e, "t", train_wall_seconds());
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
    if (!ctx->green) return sms;
    cJSON_ReplaceItemInObject(event, "sm_count", cJSON_CreateNumber(ctx->sm_count));
    cJSON_AddNumberToObject(event, "device_sm_count", sms);
    return ctx->sm_count;
}

void train_progress_tick(const train_events *ev, train_progress *p, int epoch, long step, long steps,
                         int batch, double t_start) {
    double now = train_wall_seconds();
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
