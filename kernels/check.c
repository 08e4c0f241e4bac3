#include "kernels/check.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Per thread: a job of the host must not take the other jobs down with exit(). */
static _Thread_local suite_check_trap *thread_trap;

void suite_check_set_trap(suite_check_trap *trap) { thread_trap = trap; }

static double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void suite_check_fail(const char *lib, const char *call, const char *file, int line, long code,
                      const char *message) {
    fprintf(stderr, "%s error %ld (%s) in %s at %s:%d\n", lib, code, message ? message : "?", call,
            file, line);
    fflush(stderr);
    suite_check_trap *trap = thread_trap;
    if (!trap) exit(1);
    thread_trap = NULL; /* a check failing while the job unwinds must not jump again */
    trap->t = wall_seconds();
    snprintf(trap->lib, sizeof trap->lib, "%s", lib);
    trap->code = code;
    trap->exit_code = 1;
    trap->reported = 0;
    snprintf(trap->message, sizeof trap->message, "%s error %ld (%s) in %s at %s:%d", lib, code,
             message ? message : "?", call, file, line);
    longjmp(trap->unwind, 1);
}

void suite_check_exit(int code, const char *message) {
    suite_check_trap *trap = thread_trap;
    if (!trap) exit(code);
    thread_trap = NULL;
    trap->t = wall_seconds();
    snprintf(trap->lib, sizeof trap->lib, "job");
    trap->code = code;
    trap->exit_code = code;
    trap->reported = 1;
    snprintf(trap->message, sizeof trap->message, "%s", message ? message : "the job ended itself");
    longjmp(trap->unwind, 1);
}

const char *suite_cu_message(CUresult status) {
    static _Thread_local char text[256];
    const char *name = NULL, *what = NULL;
    /* through the runtime: the programs do not link libcuda (models/core/context.c says why) */
    __typeof__(cuGetErrorName) *get_name = NULL;
    __typeof__(cuGetErrorString) *get_string = NULL;
    enum cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuGetErrorName", (void **)&get_name, CUDA_VERSION, cudaEnableDefault, &found) ==
            cudaSuccess && found == cudaDriverEntryPointSuccess && get_name)
        get_name(status, &name);
    if (cudaGetDriverEntryPointByVersion("cuGetErrorString", (void **)&get_string, CUDA_VERSION, cudaEnableDefault, &found) ==
            cudaSuccess && found == cudaDriverEntryPointSuccess && get_string)
        get_string(status, &what);
    snprintf(text, sizeof text, "%s: %s", name ? name : "CUresult", what ? what : "no description");
    return text;
}

const char *suite_cudnn_message(cudnnStatus_t status) {
    static _Thread_local char text[1024];
    char last[768] = "";
    cudnnGetLastErrorString(last, sizeof last);
    snprintf(text, sizeof text, "%s%s%s", cudnnGetErrorString(status), last[0] ? ": " : "", last);
    return text;
}

const char *suite_cupti_message(CUptiResult status) {
    static _Thread_local char text[512];
    const char *name = NULL, *what = NULL;
    if (cuptiGetResultString(status, &name) != CUPTI_SUCCESS) name = NULL;
    if (cuptiGetErrorMessage(status, &what) != CUPTI_SUCCESS) what = NULL;
    snprintf(text, sizeof text, "%s%s%s", name ? name : "CUptiResult", what && *what ? ": " : "", what ? what : "");
    return text;
}

#if SUITE_HAVE_NVJPEG
const char *suite_nvjpeg_message(nvjpegStatus_t status) {
    switch (status) {
    case NVJPEG_STATUS_SUCCESS: return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG: return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
    }
    return "unknown nvjpegStatus_t";
}
#endif
