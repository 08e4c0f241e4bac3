/* cuDNN's backend API, the pieces every graph of ours needs: a descriptor made and destroyed
 * checked, whether a status means "this graph is not for that engine" (its category not supported
 * or internal) rather than a fault, the configurations a heuristic mode proposes, and the name a
 * configuration reads under. The convolution engines (conv_engine.h) and the fused batch-norm
 * probe (bench/conv_bn) build on them. */
#ifndef SUITE_CUDNN_BACKEND_H
#define SUITE_CUDNN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <cudnn.h>

#include "models/layers/conv_shape.h"

cudnnBackendDescriptor_t cudnn_backend_create(cudnnBackendDescriptorType_t type);
void cudnn_backend_destroy(cudnnBackendDescriptor_t d); /* NULL: nothing */
int cudnn_backend_does_not_apply(cudnnStatus_t status);
/* Up to `max` engine configurations the heuristic `mode` proposes for `graph`, best first (the
 * caller owns them); sm_target > 0: those proposed for a partition of that many SMs. A mode that has
 * nothing for the graph proposes none; any other failure is a checked error. */
int cudnn_backend_heuristic_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode, int32_t sm_target,
                                    cudnnBackendDescriptor_t *configs, int max);
/* The engine behind a configuration: its global index, its numerical notes as a bit set, and a
 * name "eng<id>_k<knob type>=<value>...[_sm<N>]" that tells configurations apart (and reads in
 * reports, as cudnn_frontend names plans); _sm<N>: the engine was made for N SMs
 * (CUDNN_ATTR_ENGINE_SM_COUNT_TARGET), which a rebuild sets again. */
void cudnn_backend_describe_config(cudnnBackendDescriptor_t config, int64_t *engine_id, uint32_t *notes, char *name,
                                   size_t name_size);
/* A tensor of dims [n, c, h, w] with the given strides; is_virtual: an intermediate of a fused graph
 * that never reaches memory. */
cudnnBackendDescriptor_t cudnn_backend_tensor(int64_t uid, cudnnDataType_t type, const int64_t dims[4],
                                              const int64_t strides[4], int64_t alignment, int is_virtual);
/* The convolution of a shape: cross-correlation, float accumulation, its padding and stride. */
cudnnBackendDescriptor_t cudnn_backend_convolution(const conv_shape *s);
/* The tensors' addresses by their unique ids, and the workspace. */
cudnnBackendDescriptor_t cudnn_backend_variant_pack(int count, void *const *pointers, const int64_t *uids,
                                                    void *workspace);
/* A plan run on its handle's stream: cudnn_backend_execute takes a cudnn_plan_run, so that a timer
 * (models/core/gpu_timer.h) can run it. */
typedef struct cudnn_plan_run {
    cudnnHandle_t cudnn;
    cudnnBackendDescriptor_t plan, pack;
} cudnn_plan_run;
void cudnn_backend_execute(void *plan_run);

#endif
