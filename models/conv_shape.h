/* The shape of a 2-D convolution, shared by the legacy-API layer (conv.h) and the graph-API
 * engine (conv_engine.h). */
#ifndef SUITE_CONV_SHAPE_H
#define SUITE_CONV_SHAPE_H

#include <cudnn.h>

typedef struct conv_shape {
    int batch, in_c, out_c, kernel, stride, pad, h_in, w_in, h_out, w_out;
    cudnnTensorFormat_t format; /* CUDNN_TENSOR_NHWC or CUDNN_TENSOR_NCHW */
} conv_shape;

/* Output size of a convolution along one axis (floor division, as PyTorch). */
int conv_out_size(int in, int kernel, int stride, int pad);
conv_shape conv_shape_nhwc(int batch, int in_c, int out_c, int kernel, int stride, int pad, int h, int w);

#endif
