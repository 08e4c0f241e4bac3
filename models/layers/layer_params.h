/* Parameter-table entries of the layers every convolutional family shares, under timm's leaf
 * names: a dense convolution's weight ([out, in, k, k], stored KRSC, normal with std
 * sqrt(2 / fan_out)) and a batch norm's weight, bias, running statistics and
 * num_batches_tracked (the model's step counter); and building those layers in the model's
 * element type. */
#ifndef SUITE_LAYER_PARAMS_H
#define SUITE_LAYER_PARAMS_H

#include "models/layers/batchnorm.h"
#include "models/layers/conv.h"
#include "models/core/model.h"

void layer_params_conv(model *m, const char *prefix, const conv_layer *c);
void layer_params_batchnorm(model *m, const char *prefix, const batchnorm_layer *b);
/* Building in the model's element type (model_activation_type): n activations from the arena's
 * activation region; a convolution of that type and the batch norm that follows it (bn_rows rows
 * of the convolution's output channels). */
void *model_take_activations(arena *a, elem_type type, size_t n);
void model_conv_bn_init(conv_layer *c, batchnorm_layer *bn, arena *a, conv_shape shape, int bn_rows, act_kind act,
                        elem_type type);

#endif
