/* A library kernel is taken only where it writes all of its output.
 *
 * cuBLASLt and cuDNN choose among their kernels by the SMs they see, and some bfloat16 kernels they
 * choose on an MPS client's share leave part of their output unwritten: a job then trains on
 * whatever the buffer held before (EfficientNetV2-S in bfloat16 turned NaN on some shares, and
 * tests/kernels/gpu_bf16.c fails as such a client). The rule, for every GPU, share and library
 * version alike: at set-up a candidate runs once on the layer's own shape over an output poisoned
 * with NaN, and one that leaves any element not finite is passed over as one that fails to run.
 * The check reads only whether each element was written (zero inputs where the candidate's real
 * inputs are not at hand), so it costs one run and one count per candidate. */
#ifndef SUITE_LAYERS_WRITTEN_H
#define SUITE_LAYERS_WRITTEN_H

#include <stddef.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "kernels/kernels.h"

typedef void (*written_run)(void *arg);

/* Poisons out (n elements of type) with NaN, runs run(arg) on stream once, and returns how many
 * elements of out are still not finite: 0 when the run wrote all of them. Waits for the stream. */
size_t written_unwritten(void *out, size_t n, elem_type type, written_run run, void *arg, cudaStream_t stream);

/* Picks for a cuBLASLt matmul (D = A B with C = D, beta 0; a bias epilogue when bias_rows > 0)
 * the first of the heuristic's results, best first, up to `results`, that writes all of D on
 * scratch operands shaped as the layouts. 0 with *algo set, or -1 when none does (the caller then
 * runs it with written_matmul_plain). Waits for the stream. */
int written_matmul_pick(cublasLtHandle_t lt, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                        cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatmulPreference_t pref,
                        int results, int bias_rows, void *workspace, size_t workspace_bytes, cudaStream_t stream,
                        cublasLtMatmulAlgo_t *algo);

/* The matmul those descriptors describe (transposes, a bias epilogue, layouts; D in C's layout)
 * run by a plain kernel of ours (kernels/kernels.h matmul_plain): where written_matmul_pick found no
 * algorithm of cuBLASLt's that writes all of its output, this runs it instead, slower and whole.
 * Host work and one launch: it may be captured. */
void written_matmul_plain(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                          cublasLtMatrixLayout_t c, float alpha, const void *pa, const void *pb, float beta,
                          const void *pc, void *pd, cudaStream_t stream);

#endif
