/* CaiT-XXS24 as timm defines it (timm/models/cait.py, cait_xxs24_224): patch embedding (conv
 * P x P, stride P, 3 -> 192, P = 16 unless model_config.patch_size says otherwise) plus pos_embed,
 * 24 LayerScale blocks with talking-heads attention (4 heads, proj_l mixing the heads before the
 * softmax and proj_w after it) and a GELU MLP (ratio 4), then the class token and 2 class-attention
 * blocks (only the class token is updated), LayerNorm (eps 1e-6) and the `head` Linear on the
 * class token. LayerScale gammas start at 1e-5. Parameter names and shapes are timm's state_dict
 * (11,956,264 parameters with 1000 classes at 224/16); patch_embed.proj.weight is stored
 * [out, kh, kw, in] (krsc) so the patch GEMM reads NHWC patches directly.
 * Initialisation as timm: trunc_normal(std .02) for every Linear weight, pos_embed and
 * cls_token; Linear biases 0; LayerNorm 1/0; the patch conv keeps PyTorch's default
 * (uniform +-1/sqrt(fan_in) for weight and bias). Weight decay applies to the Linear and conv
 * weights only (timm: no decay on 1-D parameters, pos_embed and cls_token). */
#ifndef SUITE_CAIT_H
#define SUITE_CAIT_H

#include "models/core/model.h"

model *cait_build(const model_config *config, arena *a, char *err, size_t err_size);

#endif
