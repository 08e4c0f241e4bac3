/* Shape arithmetic of a 2-D convolution: the bottom of the conv modules, called by both the
 * legacy-API layer (conv.c) and the graph-API engine (conv_engine.c), calling neither. */
#include "models/layers/conv_shape.h"

int conv_out_size(int in, int kernel, int stride, int pad) {
    return (in + 2 * pad - kernel) / stride + 1;
}

conv_shape conv_shape_nhwc(int batch, int in_c, int out_c, int kernel, int stride, int pad, int h, int w) {
    conv_shape s = {batch, in_c, out_c, kernel, stride, pad, h, w,
                    conv_out_size(h, kernel, stride, pad), conv_out_size(w, kernel, stride, pad),
                    CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT};
    return s;
}

size_t conv_element_bytes(const conv_shape *s) { return s->data_type == CUDNN_DATA_BFLOAT16 ? 2 : 4; }
