#include "models/layers/cudnn_backend.h"

#include <stdbool.h>
#include <stdio.h>

#include "kernels/check.h"

#define SET_ATTR(desc, name, type, count, value) \
    CHECK_CUDNN(cudnnBackendSetAttribute((desc), (name), (type), (count), (value)))

int cudnn_backend_does_not_apply(cudnnStatus_t status) {
    int category = CUDNN_STATUS_CATEGORY(status);
    return category == CUDNN_STATUS_NOT_SUPPORTED || category == CUDNN_STATUS_INTERNAL_ERROR;
}

cudnnBackendDescriptor_t cudnn_backend_create(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = NULL;
    CHECK_CUDNN(cudnnBackendCreateDescriptor(type, &d));
    return d;
}

void cudnn_backend_destroy(cudnnBackendDescriptor_t d) {
    if (d) CHECK_CUDNN(cudnnBackendDestroyDescriptor(d));
}

int cudnn_backend_heuristic_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode, int32_t sm_target,
                             cudnnBackendDescriptor_t *configs, int max) {
    cudnnBackendDescriptor_t heur = cudnn_backend_create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    SET_ATTR(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    SET_ATTR(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (sm_target > 0)         SET_ATTR(heur, CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET, CUDNN_TYPE_INT32, 1, &sm_target);
    cudnnStatus_t status = cudnnBackendFinalize(heur);
    if (status != CUDNN_STATUS_SUCCESS) {
        if (!cudnn_backend_does_not_apply(status)) CHECK_CUDNN(status);
        cudnn_backend_destroy(heur);
        return 0;
    }
    int64_t available = 0, returned = 0;
    CHECK_CUDNN(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                         &available, NULL));
    int n = available < max ? (int)available : max;
    for (int i = 0; i < n; i++) configs[i] = cudnn_backend_create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    if (n > 0)
        CHECK_CUDNN(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
                                             &returned, configs));
    int got = returned < n ? (int)returned : n;
    for (int i = got; i < n; i++) cudnn_backend_destroy(configs[i]), configs[i] = NULL;
    cudnn_backend_destroy(heur);
    return got;
}

void cudnn_backend_describe_config(cudnnBackendDescriptor_t config, int64_t *engine_id, uint32_t *notes, char *name,
                            size_t name_size) {
    int64_t count = 0;
    cudnnBackendDescriptor_t engine = cudnn_backend_create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    CHECK_CUDNN(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                         &count, &engine));
    *engine_id = -1;
    CHECK_CUDNN(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count,
                                         engine_id));
    cudnnBackendNumericalNote_t list[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    count = 0;
    CHECK_CUDNN(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                         CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, list));
    *notes = 0;
    for (int64_t i = 0; i < count && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++)
        if ((unsigned)list[i] < 32) *notes |= 1u << list[i];
    cudnn_backend_destroy(engine);

    int used = snprintf(name, name_size, "eng%lld", (long long)*engine_id);
    cudnnBackendDescriptor_t knobs[CUDNN_KNOB_TYPE_COUNTS];
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; i++) knobs[i] = cudnn_backend_create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    int64_t knob_count = 0;
    CHECK_CUDNN(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                         CUDNN_KNOB_TYPE_COUNTS, &knob_count, knobs));
    for (int64_t i = 0; i < knob_count && i < CUDNN_KNOB_TYPE_COUNTS; i++) {
        cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
        int64_t value = 0;
        CHECK_CUDNN(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                             &count, &type));
        CHECK_CUDNN(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1,
                                             &count, &value));
        if (used >= 0 && (size_t)used < name_size)
            used += snprintf(name + used, name_size - (size_t)used, "_k%d=%lld", (int)type, (long long)value);
    }
    for (int i = 0; i < CUDNN_KNOB_TYPE_COUNTS; i++) cudnn_backend_destroy(knobs[i]);
    int32_t sms = 0;
    engine = cudnn_backend_create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    CHECK_CUDNN(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                         &count, &engine));
    if (cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_SM_COUNT_TARGET, CUDNN_TYPE_INT32, 1, &count, &sms) ==
            CUDNN_STATUS_SUCCESS && sms > 0 && used >= 0 && (size_t)used < name_size)
        snprintf(name + used, name_size - (size_t)used, "_sm%d", (int)sms);
    cudnn_backend_destroy(engine);
}

cudnnBackendDescriptor_t cudnn_backend_convolution(const conv_shape *s) {
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t spatial_dims = 2, padding[2] = {s->pad, s->pad}, stride[2] = {s->stride, s->stride};
    const int64_t dilation[2] = {1, 1};
    cudnnBackendDescriptor_t conv = cudnn_backend_create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    SET_ATTR(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
    SET_ATTR(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    SET_ATTR(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial_dims);
    SET_ATTR(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
    SET_ATTR(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, padding);
    SET_ATTR(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
    SET_ATTR(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation);
    CHECK_CUDNN(cudnnBackendFinalize(conv));
    return conv;
}

cudnnBackendDescriptor_t cudnn_backend_tensor(int64_t uid, cudnnDataType_t type, const int64_t dims[4],
                                              const int64_t strides[4], int64_t alignment, int is_virtual) {
    const bool virt = is_virtual != 0;
    cudnnBackendDescriptor_t t = cudnn_backend_create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    SET_ATTR(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    SET_ATTR(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    SET_ATTR(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    SET_ATTR(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    SET_ATTR(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
    if (virt) SET_ATTR(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    CHECK_CUDNN(cudnnBackendFinalize(t));
    return t;
}

cudnnBackendDescriptor_t cudnn_backend_variant_pack(int count, void *const *pointers, const int64_t *uids,
                                                    void *workspace) {
    cudnnBackendDescriptor_t pack = cudnn_backend_create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, count, pointers);
    SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, count, uids);
    SET_ATTR(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
    CHECK_CUDNN(cudnnBackendFinalize(pack));
    return pack;
}

void cudnn_backend_execute(void *plan_run) {
    const cudnn_plan_run *p = plan_run;
    CHECK_CUDNN(cudnnBackendExecute(p->cudnn, p->plan, p->pack));
}
