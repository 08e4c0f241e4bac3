/* JPEG/PNG decoding through stb_image (its one implementation in the suite lives here) and the
 * ImageNet crops and resizes, following torchvision (RandomResizedCrop, Resize + CenterCrop) and
 * PIL's antialiased bilinear filter. See image_transform.h for what each function promises.
 *
 * Resampling is separable: a horizontal pass over only the source rows the output needs, into a
 * float scratch [rows, out_width, 3], then a vertical pass into the normalised output. Filter taps
 * are computed per call (they depend on the crop), as PIL's precompute_coeffs does. */
#include "data/image_transform.h"
#include "base/rng.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
/* stb_image 2.27 (Debian 12's) does not clear its JPEG decoder state: a file whose scan uses a
 * Huffman table it never defined makes it decode with whatever the heap held (found by
 * tests/fuzz/fuzz_jpeg.c). Zeroed allocations make such tables empty, so those files decode to garbage
 * pixels or fail, safely. The decoder state (tables included) is one allocation of tens of KB
 * and is zeroed. The pixel planes are larger (about 1 MB for an ImageNet picture) and are not:
 * a valid file writes them whole before they are read, and a truncated one shows stale pixel
 * values, no worse than the garbage such a file decodes to anyway. Zeroing them cost the
 * loader's workers a quarter of their decoding time (fresh pages, faulted in and cleared). */
#include <stddef.h>
#include <stdlib.h>
#define IMAGE_STBI_ZEROED_BYTES ((size_t)128 << 10)
static void *image_stbi_malloc(size_t size) {
    return size <= IMAGE_STBI_ZEROED_BYTES ? calloc(1, size) : malloc(size);
}
#define STBI_MALLOC(size) image_stbi_malloc(size)
#define STBI_REALLOC(pointer, size) realloc(pointer, size)
#define STBI_FREE(pointer) free(pointer)
/* stb_image is written for many compilers and not warning-clean under -Wall -Wextra; its
 * warnings are not ours to fix, so they are silenced for the include only. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#if __has_include(<stb_image.h>)
#include <stb_image.h>
#else
#include <stb/stb_image.h> /* the fuzz build passes no -I for the stb folder */
#endif
#pragma GCC diagnostic pop

#define IMAGE_MAX_SCALED_SIDE (1 << 20) /* sizes beyond this are argument errors, not images */

/* ---------------------------------------------------------------------------------------------
 * decoding */

/* A DHT segment: each table is a class/id byte, 16 code counts, then that many symbols. More than
 * 256 codes in one table is impossible in a valid file; stb_image 2.27 does not check it and
 * writes past its tables (found by tests/fuzz/fuzz_jpeg.c), so such files are refused before any of
 * their segments reach it. */
static int dht_is_valid(const uint8_t *segment, size_t size) {
    size_t pos = 0;
    while (pos < size) {
        if (size - pos < 17 || (segment[pos] >> 4) > 1 || (segment[pos] & 15) > 3) return 0;
        size_t codes = 0;
        for (int i = 1; i <= 16; i++) codes += segment[pos + i];
        if (codes > 256 || codes > size - pos - 17) return 0;
        pos += 17 + codes;
    }
    return 1;
}

/* Walks every marker segment of a JPEG as stb_image does, or further: bytes between segments are
 * skipped up to the next 0xFF (stb_image scans past such padding too), entropy-coded data after
 * each scan header up to the next marker that is not RSTn. Every length is checked against size;
 * a Huffman table cut short by the end of the file counts as bad (stb_image would read zeros for
 * the rest and trust the counts it has). pos: just after the start-of-image marker. */
static image_jpeg_header jpeg_walk_markers(const uint8_t *bytes, size_t size, size_t pos) {
    image_jpeg_header found = {.adobe_transform = -1};
    while (pos + 2 <= size) {
        if (bytes[pos] != 0xFF) { /* padding or garbage: on to the next 0xFF */
            const uint8_t *ff = memchr(bytes + pos, 0xFF, size - pos);
            if (!ff) return found;
            pos = (size_t)(ff - bytes);
            continue;
        }
        uint8_t marker = bytes[pos + 1];
        if (marker == 0xFF) { /* fill byte */
            pos++;
            continue;
        }
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) { /* no length field */
            pos += 2;
            continue;
        }
        if (marker == 0xD9) return found; /* end of image */
        size_t length = pos + 4 <= size ? (size_t)bytes[pos + 2] << 8 | bytes[pos + 3] : 0;
        if (length < 2 || length > size - pos - 2) {
            if (marker == 0xC4) found.bad_table = 1;
            return found;
        }
        const uint8_t *segment = bytes + pos + 4;
        size_t segment_size = length - 2;
        int is_frame = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 &&
                       marker != 0xCC;
        if (is_frame && segment_size >= 6 && found.components == 0) {
            found.frame = marker;
            found.precision = segment[0];
            found.height = segment[1] << 8 | segment[2];
            found.width = segment[3] << 8 | segment[4];
            found.components = segment[5];
            found.rgb_ids = found.components == 3 && segment_size >= 15 && segment[6] == 'R' &&
                            segment[9] == 'G' && segment[12] == 'B';
        }
        if (marker == 0xEE && segment_size >= 12 && memcmp(segment, "Adobe", 5) == 0 &&
            found.adobe_transform < 0)
            found.adobe_transform = segment[11];
        if (marker == 0xC4 && !dht_is_valid(segment, segment_size)) found.bad_table = 1;
        pos += 2 + length;
        if (marker == 0xDA) { /* entropy-coded data up to the next marker that is not RSTn */
            while (pos + 1 < size) {
                const uint8_t *ff = memchr(bytes + pos, 0xFF, size - pos - 1);
                if (!ff) return found;
                pos = (size_t)(ff - bytes);
                uint8_t next = bytes[pos + 1];
                if (next == 0x00 || next == 0xFF || (next >= 0xD0 && next <= 0xD7)) pos++;
                else break;
            }
        }
    }
    return found;
}

/* A PNG's chunks, walked before stb_image sees them: each must fit in the file. stb_image 2.27
 * grows its IDAT buffer to what a chunk's length field claims before it reads the chunk, so a few
 * bytes claiming a gigabyte made it allocate two (found by tests/fuzz/fuzz_jpeg.c). 0, or -1 with why. */
static int png_chunks_fit(const uint8_t *bytes, size_t size, char *why, size_t why_size) {
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (size < sizeof signature || memcmp(bytes, signature, sizeof signature) != 0) return 0;
    for (size_t pos = sizeof signature; pos + 8 <= size;) {
        size_t length = (size_t)bytes[pos] << 24 | (size_t)bytes[pos + 1] << 16 |
                        (size_t)bytes[pos + 2] << 8 | bytes[pos + 3];
        const uint8_t *type = bytes + pos + 4;
        size_t left = size - pos - 8; /* the chunk's data and its CRC */
        if (length > left || left - length < 4) {
            char name[5];
            for (int i = 0; i < 4; i++) name[i] = type[i] >= 0x20 && type[i] < 0x7F ? (char)type[i] : '?';
            name[4] = '\0';
            snprintf(why, why_size, "corrupt PNG: chunk '%s' at byte %zu declares %zu bytes of data, "
                     "the file has %zu after its header", name, pos, length, left < 4 ? 0 : left - 4);
            return -1;
        }
        if (memcmp(type, "IEND", 4) == 0) return 0;
        pos += 12 + length;
    }
    return 0;
}

int image_decode(image_rgb *out, const uint8_t *bytes, size_t size, int64_t max_pixels, char *why,
                 size_t why_size) {
    memset(out, 0, sizeof *out);
    if (size == 0) {
        snprintf(why, why_size, "empty file, expected a JPEG or PNG image");
        return -1;
    }
    if (size > INT_MAX) {
        snprintf(why, why_size, "%zu bytes, more than an image file can be here", size);
        return -1;
    }
    /* JPEGs are checked before stb_image sees any of their segments; like stb_image, accept fill
     * bytes (0xFF) before the start-of-image marker */
    size_t soi = 0;
    while (soi + 1 < size && bytes[soi] == 0xFF && bytes[soi + 1] == 0xFF) soi++;
    int is_jpeg = soi + 1 < size && bytes[soi] == 0xFF && bytes[soi + 1] == 0xD8;
    image_jpeg_header found = {.adobe_transform = -1};
    if (is_jpeg) {
        found = jpeg_walk_markers(bytes, size, soi + 2);
        if (found.bad_table) {
            snprintf(why, why_size, "corrupt JPEG: a Huffman table (DHT) declares more codes "
                     "than it can hold");
            return -1;
        }
        if (found.components == 4 && found.adobe_transform < 0) {
            snprintf(why, why_size,
                     "4-component (CMYK) JPEG without an Adobe APP14 marker: its colour model is "
                     "not stated, so it cannot be converted to RGB reliably");
            return -1;
        }
    }
    if (!is_jpeg && png_chunks_fit(bytes, size, why, why_size) != 0) return -1;
    int width = 0, height = 0, channels = 0;
    if (!stbi_info_from_memory(bytes, (int)size, &width, &height, &channels)) {
        snprintf(why, why_size, "not a JPEG or PNG image stb_image can read (%s)",
                 stbi_failure_reason() ? stbi_failure_reason() : "unknown format");
        return -1;
    }
    if (width <= 0 || height <= 0 || (int64_t)width * height > max_pixels) {
        snprintf(why, why_size, "%dx%d pixels, more than the %lld allowed", width, height,
                 (long long)max_pixels);
        return -1;
    }
    int w = 0, h = 0, n = 0;
    uint8_t *pixels = stbi_load_from_memory(bytes, (int)size, &w, &h, &n, 3);
    if (!pixels) {
        snprintf(why, why_size, "cannot decode %dx%d %s (%s)", width, height,
                 is_jpeg ? "JPEG" : "PNG",
                 stbi_failure_reason() ? stbi_failure_reason() : "corrupt data");
        return -1;
    }
    if (w != width || h != height) { /* the header read twice must agree */
        stbi_image_free(pixels);
        snprintf(why, why_size, "inconsistent image header (%dx%d, then %dx%d)", width, height, w,
                 h);
        return -1;
    }
    out->pixels = pixels;
    out->width = w;
    out->height = h;
    out->source_channels = is_jpeg && found.components > 0 ? found.components : n;
    return 0;
}

void image_free(image_rgb *image) {
    if (image->pixels) stbi_image_free(image->pixels);
    memset(image, 0, sizeof *image);
}

int image_jpeg_header_read(const uint8_t *bytes, size_t size, image_jpeg_header *header) {
    size_t soi = 0;
    while (soi + 1 < size && bytes[soi] == 0xFF && bytes[soi + 1] == 0xFF) soi++;
    if (soi + 1 >= size || bytes[soi] != 0xFF || bytes[soi + 1] != 0xD8) {
        *header = (image_jpeg_header){.adobe_transform = -1};
        return -1;
    }
    *header = jpeg_walk_markers(bytes, size, soi + 2);
    return 0;
}

int image_jpeg_is_plain(const image_jpeg_header *h, int64_t max_pixels) {
    int huffman_dct = h->frame == 0xC0 || h->frame == 0xC1 || h->frame == 0xC2;
    int ycbcr_or_grey = h->components == 1 ||
                        (h->components == 3 && h->adobe_transform != 0 && !h->rgb_ids);
    return huffman_dct && ycbcr_or_grey && h->precision == 8 && !h->bad_table && h->width > 0 &&
           h->height > 0 && (int64_t)h->width * h->height <= max_pixels;
}

/* ---------------------------------------------------------------------------------------------
 * random crop parameters */

static double uniform_between(uint64_t *rng, double lo, double hi) {
    return lo + (hi - lo) * rng_uniform_double(rng);
}

/* Uniform in [0, range); the bias (range / 2^64) is far below anything measurable here. */
static int uniform_index(uint64_t *rng, int range) {
    return (int)(((__uint128_t)rng_next(rng) * (uint64_t)range) >> 64);
}

/* Python's round(): to nearest, ties to even (the default rounding mode). */
static int round_half_even(double x) { return (int)nearbyint(x); }

image_box image_random_resized_crop_box(int width, int height, double scale_min, double scale_max,
                                        double ratio_min, double ratio_max, uint64_t *rng) {
    double area = (double)width * height;
    double log_min = log(ratio_min), log_max = log(ratio_max);
    for (int attempt = 0; attempt < 10; attempt++) {
        double target_area = area * uniform_between(rng, scale_min, scale_max);
        double aspect = exp(uniform_between(rng, log_min, log_max));
        int w = round_half_even(sqrt(target_area * aspect));
        int h = round_half_even(sqrt(target_area / aspect));
        if (w > 0 && w <= width && h > 0 && h <= height) {
            int y = uniform_index(rng, height - h + 1);
            int x = uniform_index(rng, width - w + 1);
            return (image_box){x, y, w, h};
        }
    }
    /* the fallback: the whole image, clamped to the ratio range, centred */
    double in_ratio = (double)width / height;
    int w = width, h = height;
    if (in_ratio < ratio_min) h = round_half_even(w / ratio_min);
    else if (in_ratio > ratio_max) w = round_half_even(h * ratio_max);
    if (w < 1) w = 1;
    if (h < 1) h = 1;
    if (w > width) w = width;
    if (h > height) h = height;
    return (image_box){(width - w) / 2, (height - h) / 2, w, h};
}

/* ---------------------------------------------------------------------------------------------
 * resampling */

typedef struct filter_taps {
    int *first;      /* [out] first source index of each output's taps */
    int *count;      /* [out] how many taps */
    float *weights;  /* [out, per_output] normalised */
    int per_output;
} filter_taps;

static void taps_free(filter_taps *t) {
    free(t->first);
    free(t->count);
    free(t->weights);
}

/* Outputs offset .. offset + out_size - 1 of in_size samples scaled to scaled_size: PIL's
 * precompute_coeffs with the bilinear (triangle) filter. */
static int taps_make(filter_taps *t, int out_size, int offset, int scaled_size, int in_size) {
    double scale = (double)in_size / scaled_size;
    double filter_scale = scale > 1.0 ? scale : 1.0;
    double support = filter_scale; /* the triangle's support is 1 */
    t->per_output = (int)ceil(support) * 2 + 1;
    t->first = malloc((size_t)out_size * sizeof *t->first);
    t->count = malloc((size_t)out_size * sizeof *t->count);
    t->weights = malloc((size_t)out_size * t->per_output * sizeof *t->weights);
    if (!t->first || !t->count || !t->weights) return -1;
    for (int i = 0; i < out_size; i++) {
        double center = (offset + i + 0.5) * scale;
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > in_size) hi = in_size;
        if (hi - lo > t->per_output) hi = lo + t->per_output;
        if (hi <= lo) { /* cannot happen for a window inside the image; stay safe anyway */
            lo = (int)center < in_size ? (int)center : in_size - 1;
            hi = lo + 1;
        }
        float *w = t->weights + (size_t)i * t->per_output;
        double sum = 0.0;
        for (int k = 0; k < hi - lo; k++) {
            double x = fabs((lo + k - center + 0.5) / filter_scale);
            w[k] = x < 1.0 ? (float)(1.0 - x) : 0.0f;
            sum += w[k];
        }
        if (sum <= 0.0) { /* likewise impossible; nearest neighbour rather than nothing */
            w[0] = 1.0f;
            hi = lo + 1;
            sum = 1.0;
        }
        for (int k = 0; k < hi - lo; k++) w[k] = (float)(w[k] / sum);
        t->first[i] = lo;
        t->count[i] = hi - lo;
    }
    return 0;
}

int image_resample(float *out, int out_width, int out_height, const image_rgb *source,
                   image_box region, int scaled_width, int scaled_height, int offset_x,
                   int offset_y, int flip, const float mean[3], const float std[3]) {
    if (!source->pixels || out_width <= 0 || out_height <= 0 || region.width <= 0 ||
        region.height <= 0 || region.x < 0 || region.y < 0 ||
        region.width > source->width - region.x || region.height > source->height - region.y ||
        scaled_width <= 0 || scaled_height <= 0 || scaled_width > IMAGE_MAX_SCALED_SIDE ||
        scaled_height > IMAGE_MAX_SCALED_SIDE || offset_x < 0 || offset_y < 0 ||
        out_width > scaled_width - offset_x || out_height > scaled_height - offset_y)
        return -1;
    filter_taps tx = {0}, ty = {0};
    float *rows = NULL;
    int status = -1;
    if (taps_make(&tx, out_width, offset_x, scaled_width, region.width) != 0 ||
        taps_make(&ty, out_height, offset_y, scaled_height, region.height) != 0)
        goto done;
    /* the source rows (relative to the region) the vertical taps reach */
    int row_lo = ty.first[0], row_hi = ty.first[0] + ty.count[0];
    for (int i = 1; i < out_height; i++) {
        if (ty.first[i] < row_lo) row_lo = ty.first[i];
        if (ty.first[i] + ty.count[i] > row_hi) row_hi = ty.first[i] + ty.count[i];
    }
    size_t row_floats = (size_t)out_width * 3;
    rows = malloc((size_t)(row_hi - row_lo) * row_floats * sizeof *rows);
    if (!rows) goto done;

    size_t stride = (size_t)source->width * 3;
    for (int r = row_lo; r < row_hi; r++) {
        const uint8_t *src =
            source->pixels + (size_t)(region.y + r) * stride + (size_t)region.x * 3;
        float *dst = rows + (size_t)(r - row_lo) * row_floats;
        for (int ox = 0; ox < out_width; ox++) {
            const float *w = tx.weights + (size_t)ox * tx.per_output;
            const uint8_t *p = src + (size_t)tx.first[ox] * 3;
            float r0 = 0.0f, g0 = 0.0f, b0 = 0.0f;
            for (int k = 0; k < tx.count[ox]; k++) {
                r0 += w[k] * p[3 * k + 0];
                g0 += w[k] * p[3 * k + 1];
                b0 += w[k] * p[3 * k + 2];
            }
            dst[3 * ox + 0] = r0;
            dst[3 * ox + 1] = g0;
            dst[3 * ox + 2] = b0;
        }
    }

    float a[3], b[3]; /* value / 255 then normalised, as one multiply-add */
    for (int c = 0; c < 3; c++) {
        a[c] = 1.0f / (255.0f * std[c]);
        b[c] = -mean[c] / std[c];
    }
    for (int oy = 0; oy < out_height; oy++) {
        const float *w = ty.weights + (size_t)oy * ty.per_output;
        const float *first = rows + (size_t)(ty.first[oy] - row_lo) * row_floats;
        float *dst = out + (size_t)oy * row_floats;
        for (int ox = 0; ox < out_width; ox++) {
            float r0 = 0.0f, g0 = 0.0f, b0 = 0.0f;
            const float *p = first + 3 * (size_t)ox;
            for (int k = 0; k < ty.count[oy]; k++) {
                r0 += w[k] * p[(size_t)k * row_floats + 0];
                g0 += w[k] * p[(size_t)k * row_floats + 1];
                b0 += w[k] * p[(size_t)k * row_floats + 2];
            }
            float *o = dst + 3 * (size_t)(flip ? out_width - 1 - ox : ox);
            o[0] = r0 * a[0] + b[0];
            o[1] = g0 * a[1] + b[1];
            o[2] = b0 * a[2] + b[2];
        }
    }
    status = 0;
done:
    taps_free(&tx);
    taps_free(&ty);
    free(rows);
    return status;
}

image_crop image_train_crop(int width, int height, int size, uint64_t *rng) {
    image_crop crop = {0};
    crop.region = image_random_resized_crop_box(width, height, 0.08, 1.0, 3.0 / 4.0, 4.0 / 3.0, rng);
    crop.scaled_width = crop.scaled_height = size;
    crop.flip = (int)(rng_next(rng) >> 63);
    return crop;
}

int image_eval_crop(image_crop *crop, int width, int height, int size, int resize_to) {
    memset(crop, 0, sizeof *crop);
    if (width <= 0 || height <= 0 || size <= 0 || resize_to < size ||
        resize_to > IMAGE_MAX_SCALED_SIDE)
        return -1;
    /* torchvision Resize(int): the shorter side becomes resize_to, the longer int(resize_to *
     * long / short); then CenterCrop: offsets int(round((scaled - size) / 2.0)) */
    int shorter = width <= height ? width : height, longer = width <= height ? height : width;
    double scaled_longer = (double)resize_to * longer / shorter;
    if (scaled_longer > IMAGE_MAX_SCALED_SIDE) return -1;
    crop->region = (image_box){0, 0, width, height};
    crop->scaled_width = width <= height ? resize_to : (int)scaled_longer;
    crop->scaled_height = width <= height ? (int)scaled_longer : resize_to;
    crop->offset_x = round_half_even((crop->scaled_width - size) / 2.0);
    crop->offset_y = round_half_even((crop->scaled_height - size) / 2.0);
    return 0;
}

int image_apply_crop(float *out, int size, const image_rgb *source, const image_crop *crop,
                     const float mean[3], const float std[3]) {
    return image_resample(out, size, size, source, crop->region, crop->scaled_width,
                          crop->scaled_height, crop->offset_x, crop->offset_y, crop->flip, mean, std);
}

int image_train_transform(float *out, int size, const image_rgb *source, uint64_t *rng,
                          const float mean[3], const float std[3]) {
    if (!source->pixels || source->width <= 0 || source->height <= 0) return -1;
    image_crop crop = image_train_crop(source->width, source->height, size, rng);
    return image_apply_crop(out, size, source, &crop, mean, std);
}

int image_eval_transform(float *out, int size, int resize_to, const image_rgb *source,
                         const float mean[3], const float std[3]) {
    image_crop crop;
    if (!source->pixels || image_eval_crop(&crop, source->width, source->height, size, resize_to))
        return -1;
    return image_apply_crop(out, size, source, &crop, mean, std);
}
