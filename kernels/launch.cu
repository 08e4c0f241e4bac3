#include "kernels/launch.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/check.h"
#include "kernels/knobs.h"

void kernel_bad_input(const char *fn, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "%s: ", fn);
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(2);
}

int kernel_sm_count(void) {
    int device = 0, sms = 0;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms > 0 ? sms : 1;
}

int kernel_pdl_enabled(void) {
    if (!knob_flag(KNOB_PDL)) return 0;
    int device = 0, major = 0;
    CHECK_CUDA(cudaGetDevice(&device));
    CHECK_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    return major >= 9;
}
