/* A second convolution path on cuDNN's graph (backend) API, the way PyTorch uses cuDNN: one
 * direction of a convolution becomes a one-node operation graph, the heuristics (modes A and
 * FALLBACK) propose engine configurations, each one that finalizes within the workspace limit is
 * timed on the real buffers, and the fastest execution plan is kept. The legacy Find API only
 * times a handful of fixed algorithms; the engine configurations (tile sizes, split-K, ...)
 * are where the H100 speed is. conv.c runs a direction through this path when it measures
 * faster than the legacy algorithm.
 *
 * Tensors are float32 or bfloat16 (shape.data_type; float accumulation either way), NHWC (filter
 * KRSC) or NCHW (filter KCRS), as in conv_shape. With float data and allow_tf32 = 0 only engines
 * whose numerical notes promise strict float32 are candidates (see conv_engine.c). beta is part of the plan: a backward-data plan built with beta = 1 always
 * accumulates into dx, one built with beta = 0 always overwrites it. A plan holds no data
 * pointers, so layers of the same shape (and direction, beta, alignment) may share one. */
#ifndef SUITE_CONV_ENGINE_H
#define SUITE_CONV_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "models/layers/conv_shape.h"

typedef enum { CONV_FORWARD, CONV_BACKWARD_DATA, CONV_BACKWARD_FILTER } conv_direction;

typedef struct conv_engine_plan {
    cudnnBackendDescriptor_t plan;          /* finalized execution plan, NULL if none */
    cudnnBackendDescriptor_t engine_config; /* the configuration the plan was built from */
    conv_direction direction;
    float beta;
    size_t workspace_bytes;
    float ms;                  /* median of the timed runs */
    int64_t engine_id;         /* cuDNN's global engine index */
    char name[96];             /* "eng<id>_k<knob>=<value>...[_sm<N>]", as cudnn_frontend tags plans */
    uint32_t numerical_notes;  /* bit (1 << cudnnBackendNumericalNote_t) per note the engine has */
    int candidates_timed;      /* how many plans were measured to choose this one */
    int64_t alignment[3];      /* byte alignment promised for x, w, y; checked on every run */
} conv_engine_plan;

/* Builds and times the candidates for one direction of the convolution `shape`, on the device
 * buffers x, w, y: input, filter and output of the forward convolution (backward-data writes
 * dx into x and reads dy from y; backward-filter writes dw into w). Their contents may be
 * overwritten. Timing runs on `stream` (the handle's own stream is restored afterwards);
 * `workspace` must hold workspace_limit bytes. sm_target > 0: the heuristics propose configurations
 * for a partition of that many SMs (CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET; 0: the device's). Returns 0 with *plan filled, or -1 with a message
 * in err when the input is unusable or no engine works (the caller then keeps the legacy path);
 * *plan is then empty and conv_engine_destroy on it is harmless. */
int conv_engine_find(conv_engine_plan *plan, conv_direction dir, const conv_shape *shape,
                     int allow_tf32, int sm_target, float beta, cudnnHandle_t cudnn, cudaStream_t stream,
                     void *x, void *w, void *y, void *workspace, size_t workspace_limit,
                     char *err, size_t err_size);

/* The plan named `name` (a conv_engine_plan's name: engine, knob choices and the SM count the engine
 * was made for, which it is made for again) for the same
 * convolution, rebuilt without timing anything: a choice kept from an earlier search
 * (conv_choices.h). ms is recorded as the plan's time. Returns 0 with *plan filled, or -1 with err
 * when this cuDNN cannot build it here (the caller searches then); *plan is then empty. */
int conv_engine_rebuild(conv_engine_plan *plan, conv_direction dir, const conv_shape *shape, float beta,
                        const char *name, float ms, cudnnHandle_t cudnn, void *x, void *w, void *y, char *err,
                        size_t err_size);

/* Run a plan on the cudnn handle's stream. Host work only (a variant pack per call), no
 * synchronisation and no device allocation, so they may be captured into a CUDA graph. The
 * workspace must hold plan->workspace_bytes. Each checks that the plan is of its direction and
 * that the pointers have the alignment the plan was built for. */
void conv_engine_forward(const conv_engine_plan *plan, cudnnHandle_t cudnn, void *y, const void *x,
                         const void *w, void *workspace);
/* dx = dgrad(dy, w) + beta * dx, beta as the plan was built. */
void conv_engine_backward_data(const conv_engine_plan *plan, cudnnHandle_t cudnn, void *dx,
                               const void *dy, const void *w, void *workspace);
void conv_engine_backward_filter(const conv_engine_plan *plan, cudnnHandle_t cudnn, void *dw,
                                 const void *dy, const void *x, void *workspace);

const char *conv_direction_name(conv_direction dir);
/* The tensor a direction writes, as conv_engine_find names the buffers: forward y, backward-data x
 * (dx), backward-filter w (dw); and its elements. */
void *conv_written_buffer(conv_direction dir, void *x, void *w, void *y);
size_t conv_written_elements(conv_direction dir, const conv_shape *s);
void conv_engine_destroy(conv_engine_plan *plan);

#endif
