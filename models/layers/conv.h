/* 2-D convolution without bias on cuDNN. Tensors are NHWC (or NCHW, for the layout benchmark),
 * float32 or bfloat16 (shape.data_type; float accumulation). Weights are stored in the filter layout that matches the tensors: KRSC
 * [out, kh, kw, in] for NHWC (checkpoints convert to and from timm's [out, in, kh, kw]).
 * Algorithms are chosen once at set-up by timing every candidate on the real buffers, like
 * torch.backends.cudnn.benchmark, within the context's workspace limit: for each direction the
 * legacy API's fastest algorithm and the fastest graph-API engine configuration (conv_engine.h)
 * are measured, and the faster one runs. Identical shapes share one search (and one engine
 * plan) through a conv_algo_cache. A bfloat16 layer reads the arena's bfloat16 copy of its
 * weight and writes the bfloat16 gradient beside it (arena.h); the float32 weight stays the
 * master the optimizer updates. */
#ifndef SUITE_CONV_H
#define SUITE_CONV_H

#include <cudnn.h>

#include "models/core/arena.h"
#include "models/core/context.h"
#include "models/layers/conv_engine.h"
#include "models/layers/conv_shape.h"
#include "models/core/wgrad_lane.h"


typedef struct conv_algos {
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
    cudnnMathType_t fwd_math, bwd_data_math, bwd_filter_math;
    size_t workspace_bytes; /* the most any of the three needs */
    float fwd_ms, bwd_data_ms, bwd_filter_ms;
    /* graph-API plans, per direction (forward, backward-data, backward-filter); a direction runs
     * through its plan when use_engine[d] is set (it measured faster than the legacy algorithm) */
    int use_engine[3];
    conv_engine_plan engine[3];
} conv_algos;

typedef struct conv_layer {
    conv_shape shape;
    int accumulate_dx;  /* backward-data adds into dx (the residual branch joins there) */
    int owns_engine;    /* the plans are this layer's (no cache) and conv_destroy frees them */
    size_t wgrad_workspace_bytes; /* the weight gradient's alone: what a wgrad lane must hold */
    float *weight, *weight_grad;
    void *run_weight, *run_weight_grad; /* what cuDNN reads and writes: the bfloat16 copies, or these */
    cudnnTensorDescriptor_t x_desc, y_desc;
    cudnnFilterDescriptor_t w_desc;
    /* math type is a property of the convolution descriptor, and each direction may pick its own */
    cudnnConvolutionDescriptor_t fwd_desc, bwd_data_desc, bwd_filter_desc;
    conv_algos algos;
} conv_layer;

#define CONV_CACHE_MAX 128
typedef struct conv_algo_cache {
    int count;
    conv_shape shapes[CONV_CACHE_MAX];
    int accumulate_dx[CONV_CACHE_MAX], has_dx[CONV_CACHE_MAX];
    int sm_target[CONV_CACHE_MAX];     /* the SMs the libraries were told (job_context.sm_target) */
    conv_algos algos[CONV_CACHE_MAX];  /* owns the engine plans */
} conv_algo_cache;
void conv_algo_cache_free(conv_algo_cache *cache);

/* Takes the weight from the arena (region ARENA_WEIGHTS). No GPU work. */
void conv_init(conv_layer *c, arena *a, conv_shape shape);
double conv_flops(const conv_layer *c); /* forward multiply-adds x 2 */
/* Creates the descriptors and picks the algorithms by measurement. x, y, dx are buffers of the
 * layer's input and output sizes whose contents may be overwritten (dx may be NULL when the layer
 * never computes an input gradient). accumulate_dx: the backward pass adds into dx rather than
 * overwriting it. The context's workspace must hold workspace_limit bytes. */
void conv_setup(conv_layer *c, void *y, const void *x, void *dx, int accumulate_dx,
                conv_algo_cache *cache, job_context *ctx);
void conv_forward(conv_layer *c, void *y, const void *x, job_context *ctx);
/* Weight gradient (overwritten) and, when dx is not NULL, the input gradient: overwritten, or
 * added to what dx holds when the layer was set up with accumulate_dx. */
void conv_backward(conv_layer *c, void *dx, const void *dy, const void *x, job_context *ctx);
/* The same with the weight gradient on `lane` (models/core/wgrad_lane.h; NULL: conv_backward), whose
 * join the caller owns. Not with gradient hooks: those want every gradient on the job's stream. */
void conv_backward_lane(conv_layer *c, void *dx, const void *dy, const void *x, wgrad_lane *lane,
                        job_context *ctx);
void conv_destroy(conv_layer *c);

#endif
