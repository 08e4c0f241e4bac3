/* Fully connected layer on cuBLASLt: y[N, out] = x[N, in] W^T + b, with W [out, in] row-major as
 * in PyTorch. Row-major matrices are handed to cuBLASLt as their column-major transposes. The
 * bias gradient is a matmul against a ones vector, so the whole layer is three library calls
 * backward and one (bias fused as an epilogue) forward. */
#ifndef SUITE_LINEAR_H
#define SUITE_LINEAR_H

#include <cublasLt.h>

#include "models/arena.h"
#include "models/context.h"

typedef struct lt_matmul {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
} lt_matmul;

typedef struct linear_layer {
    int batch, in_features, out_features;
    float *weight, *bias, *weight_grad, *bias_grad;
    float *ones; /* [batch] */
    lt_matmul forward, grad_input, grad_weight, grad_bias;
} linear_layer;

void linear_init(linear_layer *l, arena *a, int batch, int in_features, int out_features);
double linear_flops(const linear_layer *l);
void linear_setup(linear_layer *l, job_context *ctx);
void linear_forward(linear_layer *l, float *y, const float *x, job_context *ctx);
/* Writes the weight and bias gradients, and dx when it is not NULL (all overwritten). */
void linear_backward(linear_layer *l, float *dx, const float *dy, const float *x, job_context *ctx);
void linear_destroy(linear_layer *l);

#endif
