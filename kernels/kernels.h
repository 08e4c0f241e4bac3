/* CUDA C kernels that cuDNN and cuBLAS do not provide, exported to C. Activations are NHWC
 * float32 or bfloat16 (elem_type), flattened to [rows, C] with rows = N*H*W where a kernel is per-channel. Argument
 * order everywhere: outputs, inputs, sizes, scratch, stream. Every launcher checks its launch.
 * References: tests/<layer>/gpu_*.c hold a double-precision CPU version of each kernel. */
#ifndef SUITE_KERNELS_H
#define SUITE_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/schedule.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Element type of activation tensors. With ELEM_BF16 the activations (inputs, outputs and their
 * gradients) are bfloat16 while arithmetic, statistics, parameters and parameter gradients stay
 * float32, as under torch.autocast(dtype=torch.bfloat16). */
typedef enum { ELEM_F32 = 0, ELEM_BF16 = 1 } elem_type;
static inline size_t elem_bytes(elem_type type) { return type == ELEM_BF16 ? 2 : 4; }

/* ---- batch normalisation (per channel over rows), fused with a residual add and an activation
 * Training:  mean, invstd = batch statistics of x (biased variance, invstd = 1/sqrt(var + eps));
 *            running_mean/var <- (1-momentum)*running + momentum*batch (unbiased variance, PyTorch);
 *            mean/invstd are kept for the backward pass. With residual (may be NULL):
 *   ACT_NONE: y = bn(x) + residual
 *   ACT_RELU: y = relu(bn(x) + residual)    ResNet: the shortcut joins before the ReLU
 *   ACT_SILU: y = silu(bn(x)) + residual    EfficientNet: the skip joins the activated branch
 * The ReLU's mask (y > 0, as y was stored) the backward takes from relu_mask when given, else
 * from y when given, else recomputes from x, gamma and beta, which is right only when the
 * forward joined no residual. relu_mask (bn_relu_mask_bytes(rows, C) bytes, may be NULL) is
 * written by the training forward: bits instead of a read of y, for a ReLU that joins a
 * residual; bn_relu_mask_bytes is 0 where its layout does not fit C (C % 32 != 0). The backward
 * needs beta for SiLU, whose pre-activation gamma * xhat + beta it recomputes from x, and for a
 * ReLU mask recomputed from x (beta may be NULL otherwise). It writes dx, dgamma, dbeta, and,
 * when dresidual is not NULL, the gradient where the residual joined (dy masked by the ReLU, or
 * dy itself); all outputs are overwritten, not accumulated.
 * scratch: bn_scratch_bytes(rows, C) bytes of device memory, zeroed once when allocated (the
 * arena zeroes its scratch region); every call leaves it zeroed again, so calls on one stream can
 * share it and graph replays need no reset. Two BN calls that may run concurrently need two. */
typedef enum { ACT_NONE = 0, ACT_RELU = 1, ACT_SILU = 2 } act_kind;
size_t bn_scratch_bytes(int rows, int C);
size_t bn_relu_mask_bytes(int rows, int C);
void bn_act_forward_train(void *y, uint32_t *relu_mask, float *mean, float *invstd, float *running_mean,
                          float *running_var, const void *x, const void *residual, const float *gamma, const float *beta,
                          int rows, int C, float eps, float momentum, act_kind act, elem_type type,
                          void *scratch, cudaStream_t stream);
void bn_act_forward_infer(void *y, const void *x, const void *residual, const float *gamma,
                          const float *beta, const float *running_mean, const float *running_var,
                          int rows, int C, float eps, act_kind act, elem_type type, cudaStream_t stream);
void bn_act_backward(void *dx, void *dresidual, float *dgamma, float *dbeta, const void *dy,
                     const void *x, const void *y, const uint32_t *relu_mask, const float *gamma,
                     const float *beta, const float *mean, const float *invstd, int rows, int C, act_kind act,
                     elem_type type, void *scratch, cudaStream_t stream);

/* ---- pooling (NHWC) -------------------------------------------------------------------------
 * Max pool with a k x k window, PyTorch padding semantics (padded cells never win). argmax keeps
 * the winning offset within the window (0..k*k-1) of each output for the backward pass. */
void maxpool_forward(void *y, uint8_t *argmax, const void *x, int N, int H, int W, int C, int k,
                     int stride, int pad, int Ho, int Wo, elem_type type, cudaStream_t stream);
/* dx is overwritten: each input cell gathers the dy of every window it won (no atomics). */
void maxpool_backward(void *dx, const void *dy, const uint8_t *argmax, int N, int H, int W, int C,
                      int k, int stride, int pad, int Ho, int Wo, elem_type type, cudaStream_t stream);
/* y[n, c] = mean over the HW cells of x[n, :, c] (summed in float). */
void avgpool_global_forward(void *y, const void *x, int N, int HW, int C, elem_type type, cudaStream_t stream);
void avgpool_global_backward(void *dx, const void *dy, int N, int HW, int C, elem_type type, cudaStream_t stream);

/* ---- loss ----------------------------------------------------------------------------------
 * Softmax cross-entropy over K classes with label smoothing s (target = (1-s)*onehot + s/K),
 * mean over the N rows. Writes dlogits = (softmax - target) / N and adds the summed (not mean)
 * row losses to *loss_sum and the number of rows whose argmax equals the label to *correct.
 * Labels outside [0, K) count as wrong and contribute no gradient. */
void softmax_ce_forward_backward(float *dlogits, float *loss_sum, float *correct,
                                 const float *logits, const int32_t *labels, int N, int K,
                                 float smoothing, cudaStream_t stream);
/* Evaluation: only the first n_valid rows count (a padded last batch). */
void softmax_ce_eval(float *loss_sum, float *correct, const float *logits, const int32_t *labels,
                     int n_valid, int K, float smoothing, cudaStream_t stream);

/* ---- optimizer -----------------------------------------------------------------------------
 * SGD with momentum as torch.optim.SGD (dampening 0): g = grad + wd*p for the first n_decay
 * elements (weights) and g = grad for the rest (BN parameters, biases); buf = momentum*buf + g;
 * g = nesterov ? g + momentum*buf : buf; p -= lr*g. The learning rate is read from device memory.
 * bf16 training (both optimizers): the first n_half elements (<= n) have bfloat16 copies. With
 * half_grads, their gradient is read from it (bfloat16 -> float) instead of grads; with
 * half_weights, the updated float32 weight is also stored there, rounded to nearest even as
 * cast_f32_to_bf16 rounds. Either may be NULL; n_half > 0 with both NULL is rejected. This
 * replaces the two cast passes around the update (models/core/trainer.c). */
void sgd_update(float *params, float *momentum_buf, void *half_weights, const float *grads,
                const void *half_grads, const float *lr, size_t n, size_t n_decay, size_t n_half,
                float momentum, float weight_decay, int nesterov, cudaStream_t stream);
/* AdamW as torch.optim.AdamW (amsgrad off): for the first n_decay elements p -= lr*wd*p first
 * (decoupled decay); m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g^2; with t = *step (updates so far,
 * this one included, as lr_schedule_step leaves it): p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t)
 * + eps). lr and t are read from device memory. The betas are doubles, as PyTorch's are: 1 - beta
 * rounds to float from the exact value (1 - 0.999f would be 1.3e-5 off). */
void adamw_update(float *params, float *m, float *v, void *half_weights, const float *grads,
                  const void *half_grads, const float *lr, const int64_t *step, size_t n, size_t n_decay,
                  size_t n_half, double beta1, double beta2, float eps, float weight_decay,
                  cudaStream_t stream);
/* *lr = lr_at(schedule, *step); then ++*step. One thread: it runs once per training step inside
 * the captured graph. */
void lr_schedule_step(float *lr, int64_t *step, lr_schedule schedule, cudaStream_t stream);

/* ---- small helpers ---------------------------------------------------------------------------*/
/* One block that waits about ns nanoseconds on the GPU's clock and does nothing else: what is
 * queued behind it meanwhile then runs back to back, free of the host's launch cost. */
void gpu_hold(long long ns, cudaStream_t stream);
void fill_float(float *x, float value, size_t n, cudaStream_t stream);
void fill_bf16(void *x, float value, size_t n, cudaStream_t stream);
/* Element-wise conversions between float32 and bfloat16 (round to nearest even), n elements. */
void cast_f32_to_bf16(void *dst, const float *src, size_t n, cudaStream_t stream);
void cast_bf16_to_f32(float *dst, const void *src, size_t n, cudaStream_t stream);
/* Elements of x (n, float32 or bfloat16) that are NaN or infinite. Waits for the stream: for
 * set-up's checks (models/layers/written.h) and tests, never inside a step. */
size_t count_nonfinite(const void *x, size_t n, elem_type type, cudaStream_t stream);
/* d = alpha op(a) op(b) + beta c + bias, column-major as cuBLAS: op(a) [m, k], op(b) [k, n], c and d
 * [m, n] with leading dimension ldc (d may be c), bias [m] of c's type or NULL; a and b of ab_type,
 * c, d and bias of c_type; float accumulation; beta 0 never reads c. One thread per output: the
 * fallback of models/layers/written.h, not a fast path. */
void matmul_plain(void *d, const void *c, const void *a, const void *b, const void *bias, int m, int n, int k,
                  int trans_a, int trans_b, int lda, int ldb, int ldc, float alpha, float beta, elem_type ab_type,
                  elem_type c_type, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
