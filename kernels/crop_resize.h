/* The GPU half of the ImageNet training transform: decoded 8-bit RGB pictures (nvJPEG's output,
 * runner/train/jpeg_decoder.c) cut, resized, flipped and normalised into the model's input, float
 * NHWC [n, size, size, 3], as the host's image_apply_crop (data/image_transform.h) does it: PIL's
 * antialiased bilinear (a triangle filter widened by the scale factor when shrinking, taps limited
 * to the region, pixel centres at +0.5, weights normalised per output), the same taps in the same
 * order (a row's horizontal sum, then the vertical sum of rows), then (value / 255 - mean) / std.
 * Only float rounding differs (the GPU contracts multiply-adds). The crop fields are
 * data/image_transform.h's image_crop; this layer includes nothing of the data layer. */
#ifndef SUITE_CROP_RESIZE_H
#define SUITE_CROP_RESIZE_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct crop_resize_source {
    const uint8_t *pixels;     /* device, [height][pitch] of interleaved RGB; NULL: skip this image
                                  (its output is written by other means) */
    size_t pitch;              /* bytes per row */
    int width, height;         /* of the picture */
    int region_x, region_y, region_width, region_height; /* the part that is scaled (inside it) */
    int scaled_width, scaled_height;  /* the region's size once scaled */
    int offset_x, offset_y;    /* the size x size window of the scaled region taken */
    int flip;                  /* mirrored left-right */
} crop_resize_source;

/* out: n images [size, size, 3]; sources: n descriptors in device memory, each checked by the
 * caller (region inside the picture, window inside the scaled region). */
void crop_resize_normalize(float *out, const crop_resize_source *sources, int n, int size,
                           const float mean[3], const float std[3], cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
