/* ResNet-26/50/152 as timm defines them: bottleneck blocks with layers (2,2,2,2) / (3,4,6,3) /
 * (3,8,36,3), a 7x7/2 stem conv + BN + ReLU + 3x3/2 max pool, the stride on each block's 3x3 conv,
 * a 1x1 conv + BN downsample on the first block of each stage, global average pool and `fc`.
 * Initialisation as timm: Kaiming normal (fan_out) convs, the last BN gamma of each block zero,
 * PyTorch's default Linear init for fc. */
#ifndef SUITE_RESNET_H
#define SUITE_RESNET_H

#include "models/layers/conv.h"
#include "models/core/model.h"

/* 26, 50 or 152 for a known name, else 0. */
int resnet_depth_of(const char *name);
model *resnet_build(const model_config *config, arena *a, char *err, size_t err_size);
/* The shapes of every convolution of a built ResNet in forward order (for the layout benchmark);
 * returns how many there are, writing at most `max`. */
int resnet_conv_shapes(const model *m, conv_shape *shapes, int max);

#endif
