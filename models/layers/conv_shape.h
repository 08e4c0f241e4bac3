/* The shape of a 2-D convolution, shared by the legacy-API layer (conv.h) and the graph-API
 * engine (conv_engine.h); conv_shape.c depends on neither, so calls only run conv -> engine ->
 * shape. data_type is the element type of x, w and y (float, or bfloat16 with float
 * accumulation); 0 is CUDNN_DATA_FLOAT, so shapes written as initialisers stay float. */
#ifndef SUITE_CONV_SHAPE_H
#define SUITE_CONV_SHAPE_H

#include <stddef.h>

#include <cudnn.h>

typedef struct conv_shape {
    int batch, in_c, out_c, kernel, stride, pad, h_in, w_in, h_out, w_out;
    cudnnTensorFormat_t format; /* CUDNN_TENSOR_NHWC or CUDNN_TENSOR_NCHW */
    cudnnDataType_t data_type;  /* CUDNN_DATA_FLOAT or CUDNN_DATA_BFLOAT16 */
} conv_shape;

/* Output size of a convolution along one axis (floor division, as PyTorch). */
int conv_out_size(int in, int kernel, int stride, int pad);
/* A float NHWC shape; set data_type for bfloat16. */
conv_shape conv_shape_nhwc(int batch, int in_c, int out_c, int kernel, int stride, int pad, int h, int w);
/* Bytes per element of x, w and y. */
size_t conv_element_bytes(const conv_shape *s);

#endif
