/* The probes' references and inputs (bench/conv_bn_probe.c, bench/gemm_bn_cutlass.cu): inputs
 * drawn on the GPU, the batch-norm prologue computed the plain way, per-channel statistics summed
 * in double, and the largest difference between two tensors. Tensors are [rows, C] (NHWC) of one
 * element type; arithmetic is float (double for the statistics). None of these is timed: they
 * decide whether a timed kernel's output counts. */
#ifndef BENCH_CONV_BN_REFERENCE_H
#define BENCH_CONV_BN_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { REF_F32 = 0, REF_BF16 = 1, REF_HALF = 2 } ref_type;
size_t ref_type_bytes(ref_type type);
const char *ref_type_name(ref_type type);

/* p[i] = lo + (hi - lo) * u(seed, i), u uniform in [0, 1), rounded to the type. */
void ref_fill_uniform(void *p, size_t n, float lo, float hi, uint64_t seed, ref_type type, cudaStream_t stream);
/* Rounds float values to the type and back in place: parameters that a 16-bit tensor holds too. */
void ref_round_floats(float *p, size_t n, ref_type type, cudaStream_t stream);
/* dst (type) = src (float), rounded to nearest even. */
void ref_from_floats(void *dst, const float *src, size_t n, ref_type type, cudaStream_t stream);
/* out = relu(x * scale[c] + bias[c]) in float, rounded once to the type. */
void ref_apply_relu(void *out, const void *x, const float *scale, const float *bias, size_t rows, int C,
                    ref_type type, cudaStream_t stream);
/* Per channel: sum and sum of squares of y over the rows, in double (accumulators zeroed here). */
void ref_channel_sums(double *sum, double *sumsq, const void *y, size_t rows, int C, ref_type type,
                      cudaStream_t stream);
/* Largest |a - b| and largest |b| over n elements, on the host (synchronises the stream); a NaN in
 * either tensor makes the difference infinite. */
void ref_max_diff(double *max_diff, double *max_ref, const void *a, const void *b, size_t n, ref_type type,
                  cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
