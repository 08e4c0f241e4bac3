#include "models/layers/linear.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"
#include "models/layers/written.h"
#include "kernels/check.h"

/* The workspace cuBLASLt may use: matmuls here are small next to the convolutions. */
#define LINEAR_WORKSPACE (32u << 20)
#define LINEAR_CANDIDATES 8 /* heuristic results tried, best first */

void linear_init(linear_layer *l, arena *a, int batch, int in_features, int out_features) {
    memset(l, 0, sizeof *l);
    l->batch = batch, l->in_features = in_features, l->out_features = out_features;
    l->weight = arena_take_floats(a, ARENA_WEIGHTS, (size_t)in_features * out_features);
    l->bias = arena_take_floats(a, ARENA_NO_DECAY, out_features);
    l->ones = arena_take_floats(a, ARENA_SCRATCH, batch);
    if (!a->planning) {
        l->weight_grad = arena_grad_of(a, l->weight);
        l->bias_grad = arena_grad_of(a, l->bias);
    }
}

double linear_flops(const linear_layer *l) {
    return 2.0 * l->batch * (double)l->in_features * l->out_features;
}

static cudaDataType_t lt_type(elem_type type) { return type == ELEM_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

/* Column-major C[m, n] = op(A)[m, k] op(B)[k, n], leading dimensions of the stored matrices; A and
 * B of type ab, C of type c. Float accumulation always (bfloat16 inputs: plain 32F compute). */
static void lt_matmul_init(lt_matmul *mm, int m, int n, int k, int trans_a, int trans_b, int lda,
                           int ldb, int ldc, int bias_epilogue, elem_type ab, elem_type c, job_context *ctx) {
    cublasComputeType_t compute = ctx->allow_tf32 && ab == ELEM_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&mm->desc, compute, CUDA_R_32F));
    context_tell_matmul(ctx, mm->desc); /* a partition's SMs, before the heuristic below */
    cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (bias_epilogue) {
        cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                    sizeof epilogue));
    }
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&mm->a, lt_type(ab), trans_a ? k : m, trans_a ? m : k, lda));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&mm->b, lt_type(ab), trans_b ? n : k, trans_b ? k : n, ldb));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&mm->c, lt_type(c), m, n, ldc));

    cublasLtMatmulPreference_t pref;
    size_t workspace = LINEAR_WORKSPACE;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &workspace, sizeof workspace));
    /* the heuristic's best that writes all of its output (models/layers/written.h) */
    int picked = written_matmul_pick(ctx->cublaslt, mm->desc, mm->a, mm->b, mm->c, pref, LINEAR_CANDIDATES,
                                     bias_epilogue ? m : 0, ctx->workspace, LINEAR_WORKSPACE, ctx->stream, &mm->algo);
    CHECK_CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
    mm->plain = picked != 0;
    if (mm->plain)
        fprintf(stderr, "linear: no algorithm of cuBLASLt's for a %dx%dx%d matmul writes all of its output here: a "
                "plain kernel runs it (models/layers/written.h)\n", m, n, k);
}

static void lt_matmul_run(lt_matmul *mm, void *c, const void *a, const void *b, const float *bias,
                          job_context *ctx) {
    const float one = 1.0f, zero = 0.0f;
    if (bias)
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(mm->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                    sizeof bias));
    if (mm->plain) written_matmul_plain(mm->desc, mm->a, mm->b, mm->c, one, a, b, zero, c, c, ctx->stream);
    else
        CHECK_CUBLAS(cublasLtMatmul(ctx->cublaslt, mm->desc, &one, a, mm->a, b, mm->b, &zero, c, mm->c, c,
                                    mm->c, &mm->algo, ctx->workspace, LINEAR_WORKSPACE, ctx->stream));
}

static void lt_matmul_destroy(lt_matmul *mm) {
    if (mm->desc) CHECK_CUBLAS(cublasLtMatmulDescDestroy(mm->desc));
    if (mm->a) CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(mm->a));
    if (mm->b) CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(mm->b));
    if (mm->c) CHECK_CUBLAS(cublasLtMatrixLayoutDestroy(mm->c));
    memset(mm, 0, sizeof *mm);
}

void linear_setup(linear_layer *l, job_context *ctx) {
    int n = l->batch, in = l->in_features, out = l->out_features;
    elem_type t = l->type;
    if (t == ELEM_BF16 && !ctx->arena.half_weights) {
        fprintf(stderr, "linear_setup: a bfloat16 layer needs an arena with half_weights (the model was planned "
                "as float)\n");
        exit(1);
    }
    l->run_weight = t == ELEM_BF16 ? arena_half_of(&ctx->arena, l->weight) : (void *)l->weight;
    l->run_weight_grad = t == ELEM_BF16 ? arena_half_grad_of(&ctx->arena, l->weight) : (void *)l->weight_grad;
    context_reserve_workspace(ctx, LINEAR_WORKSPACE);
    /* y^T[out, N] = W[out, in] x^T[in, N]: W is stored as a column-major [in, out], so transposed. */
    lt_matmul_init(&l->forward, out, n, in, 1, 0, in, in, out, 1, t, ELEM_F32, ctx);
    /* dx^T[in, N] = W^T[in, out] dy^T[out, N] */
    lt_matmul_init(&l->grad_input, in, n, out, 0, 0, in, out, in, 0, t, t, ctx);
    /* dW^T[in, out] = x^T[in, N] dy[N, out] */
    lt_matmul_init(&l->grad_weight, in, out, n, 0, 1, in, out, in, 0, t, t, ctx);
    /* db[out, 1] = dy^T[out, N] ones[N, 1] */
    lt_matmul_init(&l->grad_bias, out, 1, n, 0, 0, out, n, out, 0, t, ELEM_F32, ctx);
    if (t == ELEM_BF16) fill_bf16(l->ones, 1.0f, (size_t)n, ctx->stream);
    else fill_float(l->ones, 1.0f, (size_t)n, ctx->stream);
}

/* Marks a pass's matmuls for the kernel trace (models/core/kernel_scope.h): the backward's weight and
 * bias gradients (wgrad) apart from its input gradient (dgrad); bytes: the inputs, the weight and
 * the output once (the logits are float32). */
static int mark(const linear_layer *l, kernel_pass pass, const job_context *ctx) {
    if (!ctx->scopes) return -1;
    double e = (double)elem_bytes(l->type), x = (double)l->batch * l->in_features;
    double y = (double)l->batch * l->out_features * (pass == KPASS_FORWARD ? sizeof(float) : e);
    double w = (double)l->in_features * l->out_features * (l->type == ELEM_BF16 ? e : sizeof(float));
    return kernel_scope_enter(ctx->scopes, l->weight, NULL, pass, KCLASS_GEMM, linear_flops(l), x * e + y + w);
}

void linear_forward(linear_layer *l, float *y, const void *x, job_context *ctx) {
    int token = mark(l, KPASS_FORWARD, ctx);
    lt_matmul_run(&l->forward, y, l->run_weight, x, l->bias, ctx);
    kernel_scope_leave(token);
}

void linear_backward(linear_layer *l, void *dx, const void *dy, const void *x, job_context *ctx) {
    int token = mark(l, KPASS_WGRAD, ctx);
    lt_matmul_run(&l->grad_weight, l->run_weight_grad, x, dy, NULL, ctx);
    lt_matmul_run(&l->grad_bias, l->bias_grad, dy, l->ones, NULL, ctx);
    kernel_scope_leave(token);
    context_grad_ready(ctx, l->weight), context_grad_ready(ctx, l->bias);
    token = dx ? mark(l, KPASS_DGRAD, ctx) : -1;
    if (dx) lt_matmul_run(&l->grad_input, dx, l->run_weight, dy, NULL, ctx);
    kernel_scope_leave(token);
}

void linear_destroy(linear_layer *l) {
    lt_matmul_destroy(&l->forward);
    lt_matmul_destroy(&l->grad_input);
    lt_matmul_destroy(&l->grad_weight);
    lt_matmul_destroy(&l->grad_bias);
}
