/* EfficientNetV2-S as timm's `efficientnetv2_s` defines it (_gen_efficientnetv2_s): a 3x3/2 stem
 * conv 3 -> 24 + BN + SiLU; six stages of
 *   2 x ConvBnAct k3 (24, skip)                 timm 'cn':  conv, bn1 (SiLU), + shortcut
 *   4 x FusedMBConv e4 k3 s2 (48)               timm 'er':  conv_exp 3x3, bn1 (SiLU), conv_pwl 1x1, bn2
 *   4 x FusedMBConv e4 k3 s2 (64)
 *   6 x MBConv e4 k3 s2 SE 0.25 (128)           timm 'ir':  conv_pw 1x1, bn1 (SiLU), conv_dw 3x3, bn2
 *   9 x MBConv e6 k3 s1 SE (160)                            (SiLU), se, conv_pwl 1x1, bn3
 *  15 x MBConv e6 k3 s2 SE (256)
 * (the stride on each stage's first block, a skip where stride 1 and in == out); a 1x1 head conv
 * 256 -> 1280 + BN + SiLU, global average pool and `classifier`. SiLU everywhere, BN eps 1e-5 and
 * momentum 0.1 (PyTorch's defaults: timm passes no bn args for this model), padding k // 2. The
 * squeeze-excitation reduces to round(0.25 x the block's input channels) (timm builds it with
 * se_from_exp = False: rd_ratio 0.25 / exp_ratio of the expanded channels), with SiLU after the
 * reduce conv and a sigmoid gate; both SE convs have a bias. 21,458,488 parameters with 1000
 * classes.
 * Initialisation as timm's _init_weight_goog: convs normal(0, sqrt(2 / fan_out)) with fan_out =
 * k * k * out / groups, conv biases zero, BN gamma 1 and beta 0, the classifier's weight
 * U(+-1 / sqrt(out_features)) and bias zero.
 * Stochastic depth: model_config.drop_path is timm's drop_path_rate; block i of the 40 (counted
 * across stages from 0) drops its residual branch with rate drop_path * i / 40, per sample, only
 * where it has a skip and only in training. The masks are drawn on the device from the seed and a
 * device counter once per training forward, so a captured graph draws new ones on every replay;
 * 0 launches nothing extra.
 * Precision: with --precision bf16 every activation and activation gradient is bfloat16 (the
 * float32 input is cast once per forward, the float32 dlogits once per backward, as in
 * models/resnet.c) and every weight with decay runs from the arena's bfloat16 copy: the dense and
 * depthwise convolutions, the SE's two FCs and the classifier. What stays float32: BN statistics
 * and parameters, biases, the outputs of the FCs (the SE's reduce output and gate logits, the
 * logits), the drop-path scales, the loss and the optimizer. */
#ifndef SUITE_EFFICIENTNET_H
#define SUITE_EFFICIENTNET_H

#include "models/layers/batchnorm.h"
#include "models/layers/conv.h"
#include "models/layers/depthwise.h"
#include "models/layers/linear.h"
#include "models/core/model.h"
#include "models/efficientnet_blocks.h"

model *efficientnet_build(const model_config *config, arena *a, char *err, size_t err_size);
/* The depthwise layers of a built and set-up model in forward order (NULL past the end), for the
 * benchmarks to print which implementation won each direction. */
const depthwise_layer *efficientnet_depthwise(const model *m, int index);

#endif
