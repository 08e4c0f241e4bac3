/* Fully connected layer on cuBLASLt: y[N, out] = x[N, in] W^T + b, with W [out, in] row-major as
 * in PyTorch. Row-major matrices are handed to cuBLASLt as their column-major transposes. The
 * bias gradient is a matmul against a ones vector, so the whole layer is three library calls
 * backward and one (bias fused as an epilogue) forward. With type = ELEM_BF16 (set after init)
 * x, dy and dx are bfloat16 and the layer multiplies the arena's bfloat16 weight copy with float
 * accumulation (arena.h): y is float (the loss reads it; PyTorch's autocast rounds it to
 * bfloat16 first), the weight gradient goes to the bfloat16 gradient copy, the bias gradient
 * stays float. */
#ifndef SUITE_LINEAR_H
#define SUITE_LINEAR_H

#include <cublasLt.h>

#include "kernels/kernels.h"
#include "models/core/arena.h"
#include "models/core/context.h"

typedef struct lt_matmul {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    int plain;  /* no algorithm of cuBLASLt's writes all of its output: ours runs it (models/layers/written.h) */
} lt_matmul;

typedef struct linear_layer {
    int batch, in_features, out_features;
    elem_type type;  /* of x, dy, dx; ELEM_F32 after init */
    float *weight, *bias, *weight_grad, *bias_grad;
    void *run_weight, *run_weight_grad; /* what the matmuls read and write: the bfloat16 copies, or these */
    void *ones; /* [batch] of the type */
    lt_matmul forward, grad_input, grad_weight, grad_bias;
} linear_layer;

void linear_init(linear_layer *l, arena *a, int batch, int in_features, int out_features);
double linear_flops(const linear_layer *l);
void linear_setup(linear_layer *l, job_context *ctx);
void linear_forward(linear_layer *l, float *y, const void *x, job_context *ctx);
/* Writes the weight and bias gradients, and dx when it is not NULL (all overwritten). */
void linear_backward(linear_layer *l, void *dx, const void *dy, const void *x, job_context *ctx);
void linear_destroy(linear_layer *l);

#endif
