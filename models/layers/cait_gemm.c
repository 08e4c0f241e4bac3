#include "models/layers/cait_gemm.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "models/layers/written.h"

/* The workspace cuBLASLt may use (split-K over 25k-token reductions wants some). */
#define GEMM_WORKSPACE (32u << 20)
#define GEMM_ALIGN 16u
#define GEMM_CANDIDATES 8 /* heuristic results tried, best first */

void gemm_engine_init(gemm_engine *g, job_context *ctx) {
    memset(g, 0, sizeof *g);
    context_reserve_workspace(ctx, GEMM_WORKSPACE);
    CHECK_CUBLAS(cublasCreate(&g->blas));
    CHECK_CUBLAS(cublasSetPointerMode(g->blas, CUBLAS_POINTER_MODE_HOST));
    /* the batched products' kernels sized for the job's partition (0: the device's, cuBLAS's default) */
    CHECK_CUBLAS(cublasSetSmCountTarget(g->blas, ctx->sm_target.sms));
}

static void plan_destroy(gemm_plan *p) {
    if (p->desc) CHECK_CUBLAS(cublasLtMatmulDescDestroy(p->desc));
    if (p->a) CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(p->a));
    if (p->b) CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(p->b));
    if (p->c) CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(p->c));
}

void gemm_engine_destroy(gemm_engine *g) {
    for (int i = 0; i < g->count; i++) plan_destroy(&g->plans[i]);
    free(g->plans);
    if (g->blas) CHECK_CUBLAS(cublasDestroy(g->blas));
    memset(g, 0, sizeof *g);
}

static cudaDataType_t cuda_type(elem_type type) { return type == ELEM_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

/* TF32 is a float32 mode; bfloat16 operands always accumulate in plain float. */
static cublasComputeType_t compute_type(const job_context *ctx, elem_type ab) {
    return ctx->allow_tf32 && ab == ELEM_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

static void bad_gemm(const char *what, int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc) {
    fprintf(stderr, "gemm: %s (ta %d tb %d, m %d n %d k %d, lda %d ldb %d ldc %d)\n", what, ta, tb, m, n, k, lda,
            ldb, ldc);
    exit(2);
}

static void check_shape(int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc, elem_type ab, elem_type c) {
    if ((ab != ELEM_F32 && ab != ELEM_BF16) || (c != ELEM_F32 && c != ELEM_BF16))
        bad_gemm("element types must be ELEM_F32 or ELEM_BF16", ta, tb, m, n, k, lda, ldb, ldc);
    if (m < 1 || n < 1 || k < 1) bad_gemm("sizes must be positive", ta, tb, m, n, k, lda, ldb, ldc);
    if (lda < (ta ? m : k) || ldb < (tb ? k : n) || ldc < n)
        bad_gemm("a leading dimension is shorter than its rows", ta, tb, m, n, k, lda, ldb, ldc);
}

/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a stored row-major X is the
 * column-major X^T: so cuBLAS gets B as its first operand and A as its second, with the same
 * transpose flags, and m and n swapped. */
static gemm_plan *plan_for(gemm_engine *g, job_context *ctx, int ta, int tb, int m, int n, int k, int lda,
                           int ldb, int ldc, int bias, elem_type c_type) {
    elem_type ab = g->type;
    for (int i = 0; i < g->count; i++) {
        gemm_plan *p = &g->plans[i];
        if (p->ta == ta && p->tb == tb && p->m == m && p->n == n && p->k == k && p->lda == lda && p->ldb == ldb &&
            p->ldc == ldc && p->bias == bias && p->ab == ab && p->c_type == c_type)
            return p;
    }
    check_shape(ta, tb, m, n, k, lda, ldb, ldc, ab, c_type);
    if (g->count == g->capacity) {
        g->capacity = g->capacity ? 2 * g->capacity : 32;
        g->plans = realloc(g->plans, (size_t)g->capacity * sizeof *g->plans);
        if (!g->plans) {
            fprintf(stderr, "gemm: out of host memory for plans\n");
            exit(1);
        }
    }
    gemm_plan *p = &g->plans[g->count++];
    memset(p, 0, sizeof *p);
    p->ta = ta, p->tb = tb, p->m = m, p->n = n, p->k = k, p->lda = lda, p->ldb = ldb, p->ldc = ldc, p->bias = bias;
    p->ab = ab, p->c_type = c_type;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&p->desc, compute_type(ctx, ab), CUDA_R_32F));
    context_tell_matmul(ctx, p->desc); /* a partition's SMs, before the heuristic below */
    cublasOperation_t op_first = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_second = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second));
    if (bias) {
        cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    }
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->a, cuda_type(ab), tb ? k : n, tb ? n : k, ldb));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->b, cuda_type(ab), ta ? m : k, ta ? k : m, lda));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->c, cuda_type(c_type), n, m, ldc));

    cublasLtMatmulPreference_t pref;
    size_t workspace = GEMM_WORKSPACE;
    uint32_t align = GEMM_ALIGN;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                      sizeof workspace));
    cublasLtMatmulPreferenceAttributes_t aligns[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (size_t i = 0; i < sizeof aligns / sizeof *aligns; i++)
        CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &align, sizeof align));
    /* the heuristic's best that writes all of its output (models/layers/written.h) */
    int picked = written_matmul_pick(ctx->cublaslt, p->desc, p->a, p->b, p->c, pref, GEMM_CANDIDATES, bias ? n : 0,
                                     ctx->workspace, ctx->workspace_bytes, ctx->stream, &p->algo);
    CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
    p->plain = picked != 0;
    if (p->plain)
        fprintf(stderr, "gemm: no algorithm of cuBLASLt's writes all of its output here (ta %d tb %d, m %d n %d k %d): "
                "a plain kernel runs it (models/layers/written.h)\n", ta, tb, m, n, k);
    return p;
}

static int misaligned(const void *p) { return ((uintptr_t)p & (GEMM_ALIGN - 1)) != 0; }

void gemm(gemm_engine *g, job_context *ctx, int ta, int tb, int m, int n, int k, float alpha, const void *A,
          int lda, const void *B, int ldb, float beta, const void *C_in, void *C, int ldc, const void *bias,
          elem_type c_type) {
    gemm_plan *p = plan_for(g, ctx, ta, tb, m, n, k, lda, ldb, ldc, bias != NULL, c_type);
    if (misaligned(A) || misaligned(B) || misaligned(C) || misaligned(C_in) || misaligned(bias))
        bad_gemm("an operand is not 16-byte aligned", ta, tb, m, n, k, lda, ldb, ldc);
    if (bias)
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
    if (p->plain)
        written_matmul_plain(p->desc, p->a, p->b, p->c, alpha, B, A, beta, C_in ? C_in : C, C, ctx->stream);
    else
        CHECK_CUBLAS(cublasLtMatmul(ctx->cublaslt, p->desc, &alpha, B, p->a, A, p->b, &beta, C_in ? C_in : C, p->c, C,
                                    p->c, &p->algo, ctx->workspace, ctx->workspace_bytes, ctx->stream));
}

void gemm_strided_batched(gemm_engine *g, job_context *ctx, int ta, int tb, int m, int n, int k, float alpha,
                          const void *A, int lda, long long stride_a, const void *B, int ldb, long long stride_b,
                          float beta, void *C, int ldc, long long stride_c, int count) {
    check_shape(ta, tb, m, n, k, lda, ldb, ldc, g->type, g->type);
    if (count < 1) bad_gemm("a batch needs at least one product", ta, tb, m, n, k, lda, ldb, ldc);
    /* cublasSetStream resets the workspace to cuBLAS's own pool, so the job's is set after it;
     * both are host-side and only change when the context does. */
    if (g->blas_stream != ctx->stream || g->blas_workspace != ctx->workspace ||
        g->blas_workspace_bytes != ctx->workspace_bytes) {
        CHECK_CUBLAS(cublasSetStream(g->blas, ctx->stream));
        CHECK_CUBLAS(cublasSetWorkspace(g->blas, ctx->workspace, ctx->workspace_bytes));
        g->blas_stream = ctx->stream, g->blas_workspace = ctx->workspace;
        g->blas_workspace_bytes = ctx->workspace_bytes;
    }
    cudaDataType_t t = cuda_type(g->type);
    CHECK_CUBLAS(cublasGemmStridedBatchedEx(g->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                                            n, m, k, &alpha, B, t, ldb, stride_b, A, t, lda, stride_a, &beta, C, t,
                                            ldc, stride_c, count, compute_type(ctx, g->type), CUBLAS_GEMM_DEFAULT));
}
