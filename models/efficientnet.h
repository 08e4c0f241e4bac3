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

model *efficientnet_build(const model_config *config, arena *a, char *err, size_t err_size);
/* The depthwise layers of a built and set-up model in forward order (NULL past the end), for the
 * benchmarks to print which implementation won each direction. */
const depthwise_layer *efficientnet_depthwise(const model *m, int index);

/* ---- squeeze-excitation (efficientnet_blocks.c), public for the tests -----------------------
 * y = x * sigmoid(expand(silu(reduce(mean_hw(x))))) over x [N, HW, C]; reduce and expand are
 * timm's 1x1 convs with bias (conv_reduce [rd, C, 1, 1], conv_expand [C, rd, 1, 1]), which on a
 * [N, C] mean are linear layers with weights in exactly that memory order. x, y, the mean, the
 * SiLU output and every gradient are of `type`; the FCs' outputs (reduced_pre, gate_logits) are
 * float32 in either precision (models/layers/linear.h), so the SiLU and the sigmoid read float and the
 * only roundings are where a tensor of `type` is stored. The gradient buffers may be shared by
 * every SE of a model (they are dead between blocks): pass a squeeze_grads sized for the largest
 * (of the same type), or NULL to take the layer's own. */
typedef struct squeeze_grads {
    void *d_pooled, *d_reduced, *d_gate; /* [N, C], [N, rd], [N, C] */
} squeeze_grads;

typedef struct squeeze_excite {
    int batch, hw, channels, reduced;
    elem_type type;
    linear_layer reduce, expand;
    void *pooled, *reduced_act;          /* [N, C], [N, rd] of type */
    float *reduced_pre, *gate_logits;    /* [N, rd], [N, C] */
    squeeze_grads grads;
} squeeze_excite;

void squeeze_excite_init(squeeze_excite *se, arena *a, int batch, int hw, int channels, int reduced, elem_type type,
                         const squeeze_grads *shared);
double squeeze_excite_flops(const squeeze_excite *se);
void squeeze_excite_setup(squeeze_excite *se, job_context *ctx);
void squeeze_excite_forward(squeeze_excite *se, void *y, const void *x, job_context *ctx);
/* Parameter gradients (overwritten; a bfloat16 layer's weight gradients go to the arena's
 * bfloat16 copy) and dx (overwritten); x is the forward input. */
void squeeze_excite_backward(squeeze_excite *se, void *dx, const void *dy, const void *x, job_context *ctx);
void squeeze_excite_destroy(squeeze_excite *se);

/* ---- blocks (efficientnet_blocks.c), shared by the two files of the family ------------------*/
typedef enum { BLOCK_CONV_BN_ACT, BLOCK_FUSED_MBCONV, BLOCK_MBCONV } effnet_block_kind; /* cn, er, ir */

typedef struct effnet_block {
    effnet_block_kind kind;
    elem_type type;            /* of every activation and gradient below */
    int batch, in_c, out_c, mid_c, stride, size_in, size_out, has_skip;
    float keep;                /* drop-path keep probability (1: never dropped) */
    int drop_row;              /* this block's row of the drop-path scales, -1 without */
    conv_layer conv_in;        /* cn: conv; er: conv_exp; ir: conv_pw */
    batchnorm_layer bn_in;     /* bn1 (SiLU); for cn the block's last BN */
    depthwise_layer dw;        /* ir: conv_dw */
    batchnorm_layer bn_dw;     /* ir: bn2 (SiLU) */
    squeeze_excite se;         /* ir */
    conv_layer conv_pwl;       /* er, ir */
    batchnorm_layer bn_out;    /* er: bn2, ir: bn3 (no activation) */
    const void *x;             /* block input: the previous block's output */
    void *z1, *a1;             /* conv_in output and its BN + SiLU */
    void *z2, *a2, *a3;        /* ir: conv_dw output, its BN + SiLU, the SE output; er: z2 = conv_pwl out */
    void *z3;                  /* ir: conv_pwl output */
    void *branch;              /* the last BN's output before the drop-path add (drop path only) */
    void *out;
} effnet_block;

/* Buffers a block's backward uses, shared by all blocks: three for the tensors inside a block
 * (each as large as the largest of them) and the drop-path scales [drop rows, N]. */
typedef struct effnet_grads {
    void *g[3];
    const float *drop_scale;
} effnet_grads;

/* Takes the block's layers and activations (of `type`) from the arena (no GPU work); returns the
 * largest tensor inside the block (elements), for sizing the shared gradient buffers. keep < 1
 * (only taken where the block has a skip) reserves the drop-path branch buffer; the caller sets
 * drop_row. */
size_t effnet_block_init(effnet_block *b, arena *a, effnet_block_kind kind, int batch, int in_c, int out_c,
                         int expand, int stride, int size_in, float keep, elem_type type,
                         const squeeze_grads *se_grads);
double effnet_block_flops(const effnet_block *b);
/* Descriptors and algorithm measurements on the real buffers (b->x set; dx: a buffer of the
 * input's size; g: the shared gradient buffers); the SE's linear layers are set up separately
 * (squeeze_excite_setup), after the model settles its workspace. Returns the workspace the chosen
 * convolution algorithms need. */
size_t effnet_block_setup(effnet_block *b, void *dx, const effnet_grads *g, conv_algo_cache *cache,
                          depthwise_cache *dw_cache, job_context *ctx);
void effnet_block_forward(effnet_block *b, int training, const float *drop_scale, job_context *ctx);
/* dout: the gradient of the block's output; dx: where the input gradient goes. With a skip, dx
 * must be dout itself: the branch's input gradient is added onto it (in place). */
void effnet_block_backward(effnet_block *b, void *dx, void *dout, const effnet_grads *g, job_context *ctx);
void effnet_block_destroy(effnet_block *b);

#endif
