/* Status checks for every GPU library. One template, CHECK_STATUS, generates the per-library
 * macros: each failing call is reported with the library, the call's text, file:line, the numeric
 * status and the library's own message, then the process exits with status 1 (a runtime error:
 * bad input is rejected with exit 2 before any GPU call is made). A thread that runs one job of
 * several in a process (the job host) sets a trap instead: the failure then unwinds that job only. */
#ifndef SUITE_CHECK_H
#define SUITE_CHECK_H

#include <setjmp.h>

#include <cuda.h>
#include <cuda_runtime.h>
#include <cublasLt.h>
#include <cudnn.h>
#include <cupti_result.h>
#if SUITE_HAVE_NCCL
#include <nccl.h>
#endif
#if SUITE_HAVE_NVJPEG
#include <nvjpeg.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Where a failing check of this thread goes instead of exit(1): the text it would have printed,
 * the library and its status, then a longjmp to `unwind` (set it with setjmp before arming). */
typedef struct suite_check_trap {
    jmp_buf unwind;
    char lib[16];
    long code;
    int exit_code;            /* what the job would have exited with */
    int reported;             /* the job reported the error itself (suite_check_exit) */
    double t;                 /* when the failure was seen (unix seconds): which job of a shared
                                 context failed first */
    char message[1024];
} suite_check_trap;

/* Arms (trap) or disarms (NULL) the calling thread's trap. */
void suite_check_set_trap(suite_check_trap *trap);
/* Prints "<lib> error <code> (<message>) in <call> at <file>:<line>", then exits 1, or with a
 * trap armed on this thread records the same text there and unwinds to it (the trap is disarmed). */
void suite_check_fail(const char *lib, const char *call, const char *file, int line, long code,
                      const char *message) __attribute__((noreturn));
/* A job's own end on an error it has already reported (an injected fault, say): exit(code), or
 * with a trap armed on this thread, unwind to it with the message. */
void suite_check_exit(int code, const char *message) __attribute__((noreturn));
/* The driver API's name and text of a status (green contexts are driver-only). */
const char *suite_cu_message(CUresult status);
/* cuDNN 9 keeps a richer text of its last error than cudnnGetErrorString; both are reported. */
const char *suite_cudnn_message(cudnnStatus_t status);
/* CUPTI's name and text of a status (cuptiGetResultString, cuptiGetErrorMessage). */
const char *suite_cupti_message(CUptiResult status);
#if SUITE_HAVE_NVJPEG
/* nvJPEG has no message function: its status's name (NVJPEG_STATUS_BAD_JPEG, ...). */
const char *suite_nvjpeg_message(nvjpegStatus_t status);
#endif

#define CHECK_STATUS(lib, type, ok, to_string, call)                                              \
    do {                                                                                          \
        type status_ = (call);                                                                    \
        if (status_ != (ok))                                                                      \
            suite_check_fail(lib, #call, __FILE__, __LINE__, (long)status_, to_string(status_)); \
    } while (0)

#define CHECK_CUDA(call)   CHECK_STATUS("CUDA", cudaError_t, cudaSuccess, cudaGetErrorString, call)
#define CHECK_CU(call)     CHECK_STATUS("CUDA driver", CUresult, CUDA_SUCCESS, suite_cu_message, call)
#define CHECK_CUDNN(call)  CHECK_STATUS("cuDNN", cudnnStatus_t, CUDNN_STATUS_SUCCESS, suite_cudnn_message, call)
#define CHECK_CUBLAS(call) CHECK_STATUS("cuBLAS", cublasStatus_t, CUBLAS_STATUS_SUCCESS, cublasLtGetStatusString, call)
#define CHECK_CUPTI(call)  CHECK_STATUS("CUPTI", CUptiResult, CUPTI_SUCCESS, suite_cupti_message, call)
#if SUITE_HAVE_NCCL
#define CHECK_NCCL(call)   CHECK_STATUS("NCCL", ncclResult_t, ncclSuccess, ncclGetErrorString, call)
#endif
#if SUITE_HAVE_NVJPEG
#define CHECK_NVJPEG(call) CHECK_STATUS("nvJPEG", nvjpegStatus_t, NVJPEG_STATUS_SUCCESS, suite_nvjpeg_message, call)
#endif
/* After a kernel launch: launch-configuration errors surface here, not at the next call. */
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

#ifdef __cplusplus
}
#endif
#endif
