/* Row-major GEMMs for the transformer layers, C = alpha op(A) op(B) + beta C_in (+ bias), on
 * cuBLASLt, and strided batches of them on cuBLAS (the per-sample attention products of one head,
 * whose operands are column slices of the fused qkv rows). Unlike models/layers/linear.h this takes any leading dimensions, beta (the
 * residual add rides in the GEMM) and a C_in different from C. Each distinct shape gets one
 * matmul descriptor and one heuristic algorithm, made on its first use (the trainer's eager
 * warm-up, before capture); later calls only look the plan up, so every call is capturable.
 * TF32 tensor cores are used when the job context allows them, for float32 operands.
 * Element types: every A and B operand is of the engine's `type` (ELEM_F32 after init; a bf16
 * model sets ELEM_BF16: bfloat16 operands, float accumulation, as torch.autocast's matmuls);
 * gemm's C (and C_in, and the bias, as cuBLASLt wants the bias in the output's type) is of the
 * type the call names, so a bfloat16 product can land in a float32 residual stream or a float32
 * reduction; the batched products' C is of the engine's type. */
#ifndef SUITE_CAIT_GEMM_H
#define SUITE_CAIT_GEMM_H

#include <cublasLt.h>
#include <cublas_v2.h>

#include "kernels/kernels.h"
#include "models/core/context.h"

typedef struct gemm_plan {
    int ta, tb, m, n, k, lda, ldb, ldc, bias;
    elem_type ab, c_type;         /* of A and B; of C (and the bias) */
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;   /* column-major views: a <- row-major B, b <- row-major A */
    cublasLtMatmulAlgo_t algo;
    int plain;                        /* no algorithm of cuBLASLt's writes all of its output: ours runs it */
} gemm_plan;

typedef struct gemm_engine {
    elem_type type;                   /* of A and B (and of the batched products' C) */
    gemm_plan *plans;
    int count, capacity;
    cublasHandle_t blas;              /* batched GEMMs */
    cudaStream_t blas_stream;         /* what blas was last bound to */
    void *blas_workspace;
    size_t blas_workspace_bytes;
} gemm_engine;

/* Creates the cuBLAS handle and makes sure the job's workspace is large enough for cuBLASLt. */
void gemm_engine_init(gemm_engine *g, job_context *ctx);
void gemm_engine_destroy(gemm_engine *g);

/* Row-major C[m, n] = alpha op(A)[m, k] op(B)[k, n] + beta C_in (C_in NULL: C) + bias[n] (bias
 * may be NULL). op(X) = X^T when its flag is set; lda/ldb/ldc are the row strides (elements) of
 * the stored matrices. A and B are of the engine's type; C_in, C and bias of c_type. Pointers
 * must be multiples of 16 bytes. */
void gemm(gemm_engine *g, job_context *ctx, int ta, int tb, int m, int n, int k, float alpha, const void *A,
          int lda, const void *B, int ldb, float beta, const void *C_in, void *C, int ldc, const void *bias,
          elem_type c_type);

/* The same for `count` independent products (all of the engine's type, beta 0 or C read) whose
 * operands start `stride_*` elements apart: product i reads A + i*stride_a and B + i*stride_b and
 * writes C + i*stride_c. */
void gemm_strided_batched(gemm_engine *g, job_context *ctx, int ta, int tb, int m, int n, int k, float alpha,
                          const void *A, int lda, long long stride_a, const void *B, int ldb, long long stride_b,
                          float beta, void *C, int ldc, long long stride_c, int count);

#endif
