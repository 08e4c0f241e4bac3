/* Status checks for every GPU library. One template, CHECK_STATUS, generates the per-library
 * macros: each failing call is reported with the library, the call's text, file:line, the numeric
 * status and the library's own message, then the process exits with status 1 (a runtime error:
 * bad input is rejected with exit 2 before any GPU call is made). */
#ifndef SUITE_CHECK_H
#define SUITE_CHECK_H

#include <cuda_runtime.h>
#include <cublasLt.h>
#include <cudnn.h>
#if SUITE_HAVE_NCCL
#include <nccl.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Prints "<lib> error <code> (<message>) in <call> at <file>:<line>" and exits 1. */
void suite_check_fail(const char *lib, const char *call, const char *file, int line, long code,
                      const char *message) __attribute__((noreturn));
/* cuDNN 9 keeps a richer text of its last error than cudnnGetErrorString; both are reported. */
const char *suite_cudnn_message(cudnnStatus_t status);

#define CHECK_STATUS(lib, type, ok, to_string, call)                                              \
    do {                                                                                          \
        type status_ = (call);                                                                    \
        if (status_ != (ok))                                                                      \
            suite_check_fail(lib, #call, __FILE__, __LINE__, (long)status_, to_string(status_)); \
    } while (0)

#define CHECK_CUDA(call)   CHECK_STATUS("CUDA", cudaError_t, cudaSuccess, cudaGetErrorString, call)
#define CHECK_CUDNN(call)  CHECK_STATUS("cuDNN", cudnnStatus_t, CUDNN_STATUS_SUCCESS, suite_cudnn_message, call)
#define CHECK_CUBLAS(call) CHECK_STATUS("cuBLAS", cublasStatus_t, CUBLAS_STATUS_SUCCESS, cublasLtGetStatusString, call)
#if SUITE_HAVE_NCCL
#define CHECK_NCCL(call)   CHECK_STATUS("NCCL", ncclResult_t, ncclSuccess, ncclGetErrorString, call)
#endif
/* After a kernel launch: launch-configuration errors surface here, not at the next call. */
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

#ifdef __cplusplus
}
#endif
#endif
