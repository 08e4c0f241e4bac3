/* EfficientNetV2's blocks (models/efficientnet.h builds the model from them): ConvBnAct,
 * FusedMBConv and MBConv with their squeeze-excitation. */
#ifndef SUITE_EFFICIENTNET_BLOCKS_H
#define SUITE_EFFICIENTNET_BLOCKS_H

#include "models/layers/batchnorm.h"
#include "models/layers/conv.h"
#include "models/layers/depthwise.h"
#include "models/layers/linear.h"
#include "models/core/model.h"

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
