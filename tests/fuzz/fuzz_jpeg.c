/* libFuzzer target: image decoding (stb_image's JPEG and PNG readers behind the suite's own
 * checks: pixel limit, the JPEG marker walk for CMYK) and both ImageNet transforms of whatever
 * decodes. Input: one byte choosing the output size (8 .. 71) and the crop generator's seed, then
 * the file's bytes. Either decoding refuses with a reason, or the training transform succeeds and
 * the evaluation one succeeds unless its crop refuses the sizes, and every value is finite and
 * within the normalised range of 0..255; sanitizers catch any read past the input or the image.
 * Seeds: tests/fuzz/jpeg/. */
#include <stdio.h>
#include <stdlib.h>

#include "data/image_transform.h"

#define FUZZ_MAX_PIXELS ((int64_t)1 << 22) /* keeps each run fast and within libFuzzer's memory */

static const float mean[3] = {0.485f, 0.456f, 0.406f};
static const float stdev[3] = {0.229f, 0.224f, 0.225f};

static void check_range(const float *out, int size) {
    for (int i = 0; i < size * size * 3; i++)
        if (!(out[i] >= -2.12f && out[i] <= 2.65f)) abort(); /* (0..1 - mean) / std */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int side = 8 + data[0] % 64;
    uint64_t rng = data[0];
    image_rgb image;
    char why[256] = "";
    if (image_decode(&image, data + 1, size - 1, FUZZ_MAX_PIXELS, why, sizeof why) != 0) {
        if (why[0] == '\0') abort(); /* a refusal always says why */
        return 0;
    }
    if (image.width <= 0 || image.height <= 0 ||
        (int64_t)image.width * image.height > FUZZ_MAX_PIXELS)
        abort();
    static float out[71 * 71 * 3];
    if (image_train_transform(out, side, &image, &rng, mean, stdev) != 0) abort();
    check_range(out, side);
    /* The evaluation crop may refuse what it documents (a side scaled past its limit, as a
     * very long thin image is); the loader then names the image. A crop it accepts must apply. */
    image_crop crop;
    if (image_eval_crop(&crop, image.width, image.height, side, side * 256 / 224) == 0) {
        if (image_apply_crop(out, side, &image, &crop, mean, stdev) != 0) abort();
        check_range(out, side);
    }
    image_free(&image);
    return 0;
}
