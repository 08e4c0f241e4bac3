#include "runner/train/train_events.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "models/check.h"

double train_wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void train_emit(const train_events *ev, cJSON *event) {
    if (ev->json) {
        char *text = cJSON_PrintUnformatted(event);
        printf("%s\n", text);
        fflush(stdout);
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
    return prop.multiProcessorCount;
}
