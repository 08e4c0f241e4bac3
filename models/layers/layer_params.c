#include "models/layers/layer_params.h"

#include <stdio.h>

void layer_params_conv(model *m, const char *prefix, const conv_layer *c) {
    param_entry e = {0};
    snprintf(e.name, sizeof e.name, "%sweight", prefix);
    e.kind = PARAM_WEIGHT;
    e.ndim = 4;
    e.shape[0] = c->shape.out_c, e.shape[1] = c->shape.in_c;
    e.shape[2] = e.shape[3] = c->shape.kernel;
    e.krsc = 1;
    e.init = PARAM_INIT_KAIMING_FAN_OUT;
    e.fan = (int64_t)c->shape.out_c * c->shape.kernel * c->shape.kernel;
    e.data = c->weight;
    param_table_add(&m->params, &e);
}

void layer_params_batchnorm(model *m, const char *prefix, const batchnorm_layer *b) {
    static const char *names[] = {"weight", "bias", "running_mean", "running_var"};
    float *data[] = {b->gamma, b->beta, b->running_mean, b->running_var};
    for (int i = 0; i < 4; i++) {
        param_entry e = {0};
        snprintf(e.name, sizeof e.name, "%s%s", prefix, names[i]);
        e.kind = i < 2 ? PARAM_NO_DECAY : PARAM_BUFFER;
        e.ndim = 1;
        e.shape[0] = b->channels;
        e.data = data[i];
        param_table_add(&m->params, &e);
    }
    param_entry counter = {0};
    snprintf(counter.name, sizeof counter.name, "%snum_batches_tracked", prefix);
    counter.kind = PARAM_COUNTER;
    counter.counter = &m->num_batches_tracked;
    param_table_add(&m->params, &counter);
}

void *model_take_activations(arena *a, elem_type type, size_t n) {
    return arena_take(a, ARENA_ACTIVATIONS, n * elem_bytes(type));
}

void model_conv_bn_init(conv_layer *c, batchnorm_layer *bn, arena *a, conv_shape shape, int bn_rows, act_kind act,
                        elem_type type) {
    shape.data_type = type == ELEM_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    conv_init(c, a, shape);
    batchnorm_init(bn, a, bn_rows, shape.out_c, act);
    bn->type = type;
}
