/* Parameter-table entries of the layers every convolutional family shares, under timm's leaf
 * names: a dense convolution's weight ([out, in, k, k], stored KRSC, normal with std
 * sqrt(2 / fan_out)) and a batch norm's weight, bias, running statistics and
 * num_batches_tracked (the model's step counter). */
#ifndef SUITE_LAYER_PARAMS_H
#define SUITE_LAYER_PARAMS_H

#include "models/layers/batchnorm.h"
#include "models/layers/conv.h"
#include "models/core/model.h"

void layer_params_conv(model *m, const char *prefix, const conv_layer *c);
void layer_params_batchnorm(model *m, const char *prefix, const batchnorm_layer *b);

#endif
