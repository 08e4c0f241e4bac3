/* Depthwise 3x3 convolution layer (padding 1, stride 1 or 2, no bias) over NHWC activations, as in
 * EfficientNet's inverted-residual blocks. Two implementations per direction: the kernels of
 * kernels/depthwise.cu and cuDNN's grouped convolution (legacy API, group count = channels, the
 * algorithm found with cudnnFind*Ex within the context's workspace limit). Set-up times both on
 * the real buffers (CUDA events, a few repetitions, the median) for forward, backward-data and
 * backward-filter, and each direction keeps the faster; `choice` records which won and the times,
 * for the benchmarks to print. SUITE_DEPTHWISE_PATH=ours or =cudnn forces one implementation (for
 * comparisons and diagnosis). Layers of the same shape share one measurement through a
 * depthwise_cache.
 * The weight is [C, 3, 3]: timm's [C, 1, 3, 3] and cuDNN's NHWC grouped filter [C, 3, 3, 1] have
 * that same memory order, so checkpoints need no conversion (krsc = 0).
 * Activations are float32, or bfloat16 when the model sets type = ELEM_BF16 after init; a
 * bfloat16 layer then reads the arena's bfloat16 copy of its weight and writes its weight gradient
 * into the bfloat16 gradient copy (arena.h), as the dense convolutions do: the weight takes decay,
 * so model_grads_from_half makes the float32 gradient from that copy after the backward pass. */
#ifndef SUITE_DEPTHWISE_H
#define SUITE_DEPTHWISE_H

#include <cudnn.h>

#include "kernels/kernels.h"
#include "models/core/arena.h"
#include "models/core/context.h"

typedef enum { DEPTHWISE_OURS = 0, DEPTHWISE_CUDNN = 1 } depthwise_path;
enum { DEPTHWISE_FORWARD, DEPTHWISE_BACKWARD_DATA, DEPTHWISE_BACKWARD_FILTER };

typedef struct depthwise_choice {
    depthwise_path path[3];        /* per direction (forward, backward-data, backward-filter) */
    float ours_ms[3], cudnn_ms[3]; /* medians measured at set-up; -1 where not measured */
    int cudnn_ok[3];               /* cuDNN found an algorithm within the limit */
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    cudnnMathType_t fwd_math, bwd_data_math, bwd_filter_math;
    size_t workspace_bytes;        /* the most a cuDNN direction that runs needs */
} depthwise_choice;

typedef struct depthwise_layer {
    int batch, channels, h_in, w_in, h_out, w_out, stride;
    elem_type type;                /* of x, y and their gradients; ELEM_F32 after init */
    float *weight, *weight_grad;   /* [C, 3, 3] */
    void *run_weight, *run_weight_grad; /* what the kernels read and write: the bfloat16 copies, or these */
    void *scratch;                 /* backward-filter partials: depthwise_layer_scratch_bytes */
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    cudnnConvolutionDescriptor_t fwd_desc, bwd_data_desc, bwd_filter_desc;
    depthwise_choice choice;
} depthwise_layer;

#define DEPTHWISE_CACHE_MAX 64
typedef struct depthwise_cache {
    int count;
    int keys[DEPTHWISE_CACHE_MAX][7]; /* batch, channels, h, w, stride, has dx, type */
    depthwise_choice choices[DEPTHWISE_CACHE_MAX];
} depthwise_cache;

const char *depthwise_path_name(depthwise_path path);
/* Takes the weight from the arena (ARENA_WEIGHTS). No GPU work. */
void depthwise_layer_init(depthwise_layer *d, arena *a, int batch, int channels, int size_in, int stride);
double depthwise_layer_flops(const depthwise_layer *d); /* forward multiply-adds x 2 */
/* Scratch the backward-filter kernel needs; a model takes the maximum once and attaches it. */
size_t depthwise_layer_scratch_bytes(const depthwise_layer *d);
void depthwise_layer_attach_scratch(depthwise_layer *d, void *scratch);
/* Creates the descriptors and measures both implementations per direction on the real buffers
 * y, x, dx (their contents may be overwritten; dx NULL: the layer never computes an input
 * gradient). The scratch must be attached and the context's workspace must hold workspace_limit
 * bytes; a bfloat16 layer needs an arena with half_weights. cache may be NULL. */
void depthwise_layer_setup(depthwise_layer *d, void *y, const void *x, void *dx, depthwise_cache *cache,
                           job_context *ctx);
void depthwise_layer_forward(depthwise_layer *d, void *y, const void *x, job_context *ctx);
/* Weight gradient (overwritten; the bfloat16 copy's for a bfloat16 layer) and, when dx is not
 * NULL, the input gradient (overwritten). */
void depthwise_layer_backward(depthwise_layer *d, void *dx, const void *dy, const void *x, job_context *ctx);
void depthwise_layer_destroy(depthwise_layer *d);

#endif
