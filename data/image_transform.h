/* Decoding (JPEG, PNG) and the ImageNet transforms of torchvision, on the host, for the ImageNet
 * reader (imagenet.c), its tests, tests/fuzz/fuzz_jpeg.c and bench/bench_jpeg.c.
 *
 * Resampling is torchvision's bilinear with antialias (PIL's BILINEAR: a triangle filter widened by
 * the scale factor when shrinking, taps limited to the source region, pixel centres at +0.5), done
 * in float without the uint8 rounding PIL applies between its two passes. Every output value is a
 * convex combination of source pixels, so it stays within the source's range. */
#ifndef SUITE_IMAGE_TRANSFORM_H
#define SUITE_IMAGE_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

/* Decoded images larger than this are refused before any pixel memory is allocated (192 MB of
 * RGB; the largest ImageNet training image is about 16 Mpx). */
#define IMAGE_DEFAULT_MAX_PIXELS ((int64_t)1 << 26)

typedef struct image_rgb {
    uint8_t *pixels;      /* [height, width, 3]; release with image_free */
    int width, height;
    int source_channels;  /* in the file: 1 grey, 2 grey + alpha, 3 colour, 4 CMYK/YCCK or RGBA */
} image_rgb;

/* Any JPEG or PNG stb_image reads, as 3-channel RGB (grey is replicated, alpha dropped, Adobe
 * CMYK/YCCK JPEGs converted by stb_image). Refused, with the reason in why: what stb_image cannot
 * decode, more than max_pixels pixels, and 4-component JPEGs without an Adobe APP14 marker (their
 * colour model is not stated, so any conversion would be a guess). Returns 0 or -1. */
int image_decode(image_rgb *out, const uint8_t *bytes, size_t size, int64_t max_pixels, char *why,
                 size_t why_size);
void image_free(image_rgb *image);

/* What a JPEG's marker segments say, read without decoding it: the first frame (start-of-frame
 * marker, sample precision, size, components, whether the components are named R, G, B), the
 * Adobe APP14 colour transform (-1: no such marker), and whether a Huffman table is corrupt. */
typedef struct image_jpeg_header {
    int frame;            /* 0xC0 baseline, 0xC1 extended, 0xC2 progressive, ...; 0: none */
    int precision, width, height, components;
    int rgb_ids;
    int adobe_transform;
    int bad_table;
} image_jpeg_header;
/* 0 with *header, or -1 when the bytes do not start as a JPEG (fill bytes may come first). */
int image_jpeg_header_read(const uint8_t *bytes, size_t size, image_jpeg_header *header);
/* 1 for the JPEGs that every decoder turns into the same picture, up to its IDCT and chroma
 * upsampling: 8-bit Huffman-coded DCT (baseline, extended or progressive), YCbCr in 3
 * components or grey in 1, no larger than max_pixels. Not: RGB-stored colour (an Adobe transform
 * of 0 or components named R, G, B), CMYK, arithmetic coding, lossless, 12-bit. The GPU decoder
 * (runner/train/jpeg_decoder.h) takes only these; the rest decode on the host. */
int image_jpeg_is_plain(const image_jpeg_header *header, int64_t max_pixels);

/* A rectangle of the source image, in whole pixels. */
typedef struct image_box {
    int x, y, width, height;
} image_box;

/* torchvision's RandomResizedCrop.get_params: up to 10 draws of an area fraction in
 * [scale_min, scale_max] and a log-uniform aspect ratio in [ratio_min, ratio_max]; the first whose
 * rounded size fits is placed uniformly; otherwise the centre crop clamped to the ratio range.
 * Draws come from *rng (base/rng.h). */
image_box image_random_resized_crop_box(int width, int height, double scale_min, double scale_max,
                                        double ratio_min, double ratio_max, uint64_t *rng);

/* Resamples `region` of the source as if it were first scaled to scaled_width x scaled_height,
 * then writes the out_width x out_height window of the scaled image starting at (offset_x,
 * offset_y), mirrored left-right when flip is set, normalised per channel as
 * (value / 255 - mean[c]) / std[c], into out [out_height, out_width, 3]. The window must lie
 * within the scaled image. Returns 0, or -1 when the arguments do not fit or memory runs out. */
int image_resample(float *out, int out_width, int out_height, const image_rgb *source,
                   image_box region, int scaled_width, int scaled_height, int offset_x,
                   int offset_y, int flip, const float mean[3], const float std[3]);

/* Where one output image comes from: `region` of the source, scaled as if to scaled_width x
 * scaled_height, of which the size x size window at (offset_x, offset_y) is taken (mirrored
 * left-right when flip is set). The host transform (image_apply_crop) and the GPU's
 * (kernels/crop_resize.h) both take one, so a sample's crop is drawn once, here, for either. */
typedef struct image_crop {
    image_box region;
    int scaled_width, scaled_height;
    int offset_x, offset_y;
    int flip;
} image_crop;

/* Training: the random-resized-crop box of a width x height source (scale (0.08, 1), ratio
 * (3/4, 4/3)) scaled to size x size, then a flip with probability 0.5, drawn from *rng in that
 * order. */
image_crop image_train_crop(int width, int height, int size, uint64_t *rng);
/* Evaluation: the shorter side resized to resize_to (the longer as torchvision computes it), then
 * the centre size x size window (size <= resize_to). 0, or -1 when the sizes do not fit: resize_to
 * below size, or a side scaled past 2^20 (an image over 2^20 / resize_to times as long as wide). */
int image_eval_crop(image_crop *crop, int width, int height, int size, int resize_to);
/* The crop of source into out [size, size, 3], resampled and normalised as image_resample does. */
int image_apply_crop(float *out, int size, const image_rgb *source, const image_crop *crop,
                     const float mean[3], const float std[3]);

/* Training: image_train_crop of the source, applied. */
int image_train_transform(float *out, int size, const image_rgb *source, uint64_t *rng,
                          const float mean[3], const float std[3]);
/* Evaluation: image_eval_crop of the source, applied. */
int image_eval_transform(float *out, int size, int resize_to, const image_rgb *source,
                         const float mean[3], const float std[3]);

#endif
