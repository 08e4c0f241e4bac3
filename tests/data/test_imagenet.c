/* ImageNet folder reader and its transforms, on JPEG and PNG files written here (stb_image_write):
 * odd sizes, grey, an Adobe CMYK JPEG; the class order and every validation layout; exact values
 * where they can be computed (the evaluation transform of a constant-colour image), properties
 * where not (random-resized-crop output within the source's range, the flip a mirror, crops as
 * torchvision draws them, determinism by seed and epoch, the same through the loader's threads);
 * undecodable images reported by name or skipped and counted; layout errors named. */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/dataset.h"
#include "base/rng.h"
#include "data/image_transform.h"
#include "data/loader.h"
#include "tests/support/image_fixtures.h"
#include "tests/support/testutil.h"

static const float mean[3] = {0.485f, 0.456f, 0.406f};
static const float stdev[3] = {0.229f, 0.224f, 0.225f};

/* train/n000/a.JPEG 37x23; n001/b.jpeg 500x375, c.JPEG grey 16x12, notes.txt (not an image);
 * n002/d.png constant 40x30, e.JPEG 50x50. Samples in order: a b c d e, labels 0 1 1 2 2. */
static void write_train(const char *root) {
    make_folder(root, "train");
    make_folder(root, "train/n002");
    make_folder(root, "train/n000");
    make_folder(root, "train/n001");
    write_image(root, "train/n000/a.JPEG", 37, 23, 1, 95);
    write_image(root, "train/n001/b.jpeg", 500, 375, 2, 95);
    write_bytes(root, "train/n001/c.JPEG", grey_jpeg, sizeof grey_jpeg);
    write_bytes(root, "train/n001/notes.txt", "not an image", 12);
    write_constant_png(root, "train/n002/d.png", 40, 30);
    write_image(root, "train/n002/e.JPEG", 50, 50, 5, 95);
}

static void open_or_fail(dataset *d, const char *root, int train, int size, int skip_bad,
                         const char *val_labels) {
    imagenet_options o = {.root = root, .train = train, .image_size = size, .skip_bad = skip_bad,
                          .seed = 7, .val_labels = val_labels};
    char err[1024] = "";
    if (dataset_open_imagenet(d, &o, err, sizeof err) != 0) fail_msg("%s", err);
}

static float *read_all(const dataset *d, int32_t *labels) {
    size_t floats = dataset_image_floats(d);
    float *images = malloc((size_t)d->count * floats * sizeof(float));
    int64_t *indices = malloc((size_t)d->count * sizeof *indices);
    for (int64_t i = 0; i < d->count; i++) indices[i] = i;
    char err[1024] = "";
    if (d->read(d, images, labels, indices, (int)d->count, err, sizeof err) != 0)
        fail_msg("%s", err);
    free(indices);
    return images;
}

/* Every value of image k equals the normalised constant colour. */
static void expect_constant(const float *image, size_t pixels) {
    for (size_t p = 0; p < pixels; p++)
        for (int c = 0; c < 3; c++) {
            double want = (constant[c] / 255.0 - mean[c]) / stdev[c];
            if (fabs(image[3 * p + c] - want) > 1e-5)
                fail_msg("pixel %zu channel %d: %.7f, want %.7f", p, c, image[3 * p + c], want);
        }
}

/* --- tests ---------------------------------------------------------------------------------- */

static void test_train_set(void **state) {
    char root[512];
    test_tmpdir(root, sizeof root);
    write_train(root);
    dataset d;
    open_or_fail(&d, root, 1, 0, 0, NULL);
    assert_int_equal(d.count, 5);
    assert_int_equal(d.classes, 3);
    assert_int_equal(d.height, 224);
    assert_int_equal(d.channels, 3);
    int32_t labels[5];
    float *first = read_all(&d, labels);
    int32_t want_labels[5] = {0, 1, 1, 2, 2};
    assert_memory_equal(labels, want_labels, sizeof labels);
    size_t floats = dataset_image_floats(&d);

    /* within each source's per-channel range; the constant image stays exactly constant */
    const char *files[5] = {"train/n000/a.JPEG", "train/n001/b.jpeg", "train/n001/c.JPEG",
                            "train/n002/d.png", "train/n002/e.JPEG"};
    for (int k = 0; k < 5; k++) {
        char path[1024], err[512], why[256];
        snprintf(path, sizeof path, "%s/%s", root, files[k]);
        uint8_t *bytes;
        size_t size;
        assert_int_equal(dataset_read_file(path, 1 << 24, &bytes, &size, err, sizeof err), 0);
        image_rgb source;
        if (image_decode(&source, bytes, size, IMAGE_DEFAULT_MAX_PIXELS, why, sizeof why) != 0)
            fail_msg("%s: %s", path, why);
        free(bytes);
        uint8_t lo[3] = {255, 255, 255}, hi[3] = {0, 0, 0};
        for (size_t p = 0; p < (size_t)source.width * source.height; p++)
            for (int c = 0; c < 3; c++) {
                uint8_t v = source.pixels[3 * p + c];
                if (v < lo[c]) lo[c] = v;
                if (v > hi[c]) hi[c] = v;
            }
        if (k == 2) assert_int_equal(source.source_channels, 1);
        const float *image = first + (size_t)k * floats;
        for (size_t p = 0; p < floats / 3; p++)
            for (int c = 0; c < 3; c++) {
                double level = (image[3 * p + c] * stdev[c] + mean[c]) * 255.0;
                if (level < lo[c] - 1e-3 || level > hi[c] + 1e-3)
                    fail_msg("%s pixel %zu channel %d: level %.4f outside [%d, %d]", files[k], p,
                             c, level, lo[c], hi[c]);
                if (k == 2 && c > 0) { /* grey: the three channels agree */
                    double red = (image[3 * p] * stdev[0] + mean[0]) * 255.0;
                    expect_lt(fabs(level - red), 1e-3);
                }
            }
        image_free(&source);
    }
    expect_constant(first + 3 * floats, floats / 3);

    /* reproducible; another epoch crops differently; back to epoch 0, the same again */
    float *again = read_all(&d, labels);
    assert_memory_equal(first, again, 5 * floats * sizeof(float));
    free(again);
    dataset_set_epoch(&d, 1);
    float *epoch1 = read_all(&d, labels);
    assert_true(memcmp(first + floats, epoch1 + floats, floats * sizeof(float)) != 0);
    free(epoch1);
    dataset_set_epoch(&d, 0);
    again = read_all(&d, labels);
    assert_memory_equal(first, again, 5 * floats * sizeof(float));
    free(again);

    /* the loader's threads deliver the same samples */
    loader_config config = {.batch = 2, .workers = 2, .shuffle = 0, .seed = 1};
    char err[512];
    loader *l = loader_open(&d, &config, err, sizeof err);
    assert_non_null(l);
    loader_start_epoch(l, 0);
    loader_batch b;
    int64_t seen = 0;
    while (loader_next(l, &b, err, sizeof err) == 1) {
        assert_memory_equal(b.images, first + (size_t)seen * floats, b.n * floats * sizeof(float));
        seen += b.n;
    }
    assert_int_equal(seen, 5);
    loader_close(l);
    free(first);
    dataset_close(&d);

    open_or_fail(&d, root, 1, 32, 0, NULL); /* another output size */
    assert_int_equal(d.height, 32);
    free(read_all(&d, labels));
    dataset_close(&d);
    test_rmtree(root);
}

/* val/<wnid>/ folders (classes from train/, and without train/ from val/ itself). */
static void test_validation_folders(void **state) {
    char root[512];
    test_tmpdir(root, sizeof root);
    write_train(root);
    make_folder(root, "val");
    make_folder(root, "val/n002");
    make_folder(root, "val/n000");
    write_constant_png(root, "val/n002/v1.png", 37, 23);
    write_image(root, "val/n000/v2.JPEG", 500, 375, 9, 95);
    dataset d;
    open_or_fail(&d, root, 0, 0, 0, NULL);
    assert_int_equal(d.count, 2);
    assert_int_equal(d.classes, 3);
    int32_t labels[2];
    float *images = read_all(&d, labels);
    assert_int_equal(labels[0], 0);
    assert_int_equal(labels[1], 2);
    expect_constant(images + 224 * 224 * 3, 224 * 224);
    free(images);
    dataset_close(&d);

    char path[1024];
    snprintf(path, sizeof path, "%s/train", root);
    char moved[1024];
    snprintf(moved, sizeof moved, "%s/train-away", root);
    assert_int_equal(rename(path, moved), 0);
    open_or_fail(&d, root, 0, 0, 0, NULL);
    assert_int_equal(d.classes, 2); /* n000 and n002 */
    images = read_all(&d, labels);
    assert_int_equal(labels[0], 0);
    assert_int_equal(labels[1], 1);
    free(images);
    dataset_close(&d);
    test_rmtree(root);
}

/* Loose validation images with LOC_val_solution.csv, a plain "filename label" file, or a named
 * label file. */
static void test_validation_label_files(void **state) {
    char root[512];
    test_tmpdir(root, sizeof root);
    write_train(root);
    make_folder(root, "val");
    write_image(root, "val/ILSVRC2012_val_00000001.JPEG", 61, 47, 11, 95);
    write_constant_png(root, "val/ILSVRC2012_val_00000002.png", 23, 37);
    const char *csv = "ImageId,PredictionString\r\n"
                      "ILSVRC2012_val_00000002,n002 1 2 30 20 n002 3 4 10 10\r\n"
                      "ILSVRC2012_val_00000009,n000 1 1 5 5\r\n"
                      "ILSVRC2012_val_00000001,n001 0 0 60 46\r\n";
    write_bytes(root, "LOC_val_solution.csv", csv, strlen(csv));
    dataset d;
    open_or_fail(&d, root, 0, 0, 0, NULL);
    assert_int_equal(d.count, 2);
    int32_t labels[2];
    float *images = read_all(&d, labels);
    assert_int_equal(labels[0], 1);
    assert_int_equal(labels[1], 2);
    expect_constant(images + 224 * 224 * 3, 224 * 224);
    free(images);
    dataset_close(&d);

    char path[1024];
    snprintf(path, sizeof path, "%s/LOC_val_solution.csv", root);
    assert_int_equal(remove(path), 0);
    const char *plain = "ILSVRC2012_val_00000001.JPEG 2\nILSVRC2012_val_00000002.JPEG 0\n";
    write_bytes(root, "val/val.txt", plain, strlen(plain));
    open_or_fail(&d, root, 0, 0, 0, NULL);
    images = read_all(&d, labels);
    assert_int_equal(labels[0], 2);
    assert_int_equal(labels[1], 0);
    free(images);
    dataset_close(&d);

    const char *wnids = "ILSVRC2012_val_00000002 n001\nILSVRC2012_val_00000001 n000\n";
    write_bytes(root, "mine.txt", wnids, strlen(wnids));
    snprintf(path, sizeof path, "%s/mine.txt", root);
    open_or_fail(&d, root, 0, 0, 0, path);
    images = read_all(&d, labels);
    assert_int_equal(labels[0], 0);
    assert_int_equal(labels[1], 1);
    free(images);
    dataset_close(&d);
    test_rmtree(root);
}

static void expect_open_error(const char *root, int train, const char *val_labels,
                              const char *part1, const char *part2) {
    imagenet_options o = {.root = root, .train = train, .val_labels = val_labels};
    char err[1024] = "";
    dataset d;
    assert_int_equal(dataset_open_imagenet(&d, &o, err, sizeof err), -1);
    if (!strstr(err, part1) || !strstr(err, part2))
        fail_msg("message \"%s\" should contain \"%s\" and \"%s\"", err, part1, part2);
    assert_null(d.impl);
}

static void test_layout_errors(void **state) {
    char root[512], path[1024];
    test_tmpdir(root, sizeof root);
    snprintf(path, sizeof path, "%s/absent", root);
    expect_open_error(path, 1, NULL, "absent not found", "train/<wnid>/*.JPEG");
    expect_open_error(root, 1, NULL, "/train not found", "val/<wnid>/*.JPEG");
    make_folder(root, "train");
    expect_open_error(root, 1, NULL, "holds no class folders", "train/<wnid>");
    make_folder(root, "train/n000");
    expect_open_error(root, 1, NULL, "no images", "/train");
    write_image(root, "train/n000/a.JPEG", 16, 16, 1, 95);
    make_folder(root, "val");
    write_image(root, "val/x1.JPEG", 16, 16, 1, 95);
    write_image(root, "val/x2.JPEG", 16, 16, 2, 95);
    expect_open_error(root, 0, NULL, "holds images directly but no label file", "val.txt");
    write_bytes(root, "val.txt", "x1.JPEG 0\n", 10);
    expect_open_error(root, 0, NULL, "x2.JPEG has no label in", "val.txt");
    write_bytes(root, "val.txt", "x1.JPEG 0\nx2.JPEG 1\n", 20);
    expect_open_error(root, 0, NULL, "val.txt: line 2: class 1 out of range", "0..0");
    write_bytes(root, "val.txt", "x1.JPEG n000\nx2.JPEG n999\n", 26);
    expect_open_error(root, 0, NULL, "val.txt: line 2: n999 is not one of the 1 classes", "train");
    write_bytes(root, "val.txt", "x1.JPEG n000\nx2.JPEG\n", 21);
    expect_open_error(root, 0, NULL, "val.txt: line 2 is not", "filename label");
    snprintf(path, sizeof path, "%s/other.csv", root);
    expect_open_error(root, 0, path, "other.csv not found", "label file");
    write_bytes(root, "other.csv", "ImageId,PredictionString\nx1,n000 1 2 3 4\nx2\n", 44);
    expect_open_error(root, 0, path, "other.csv: line 3 is not", "ImageId,wnid");
    test_rmtree(root);

    test_tmpdir(root, sizeof root);
    write_train(root);
    make_folder(root, "val");
    make_folder(root, "val/n777");
    write_image(root, "val/n777/a.JPEG", 16, 16, 1, 95);
    expect_open_error(root, 0, NULL, "val/n777 is not one of the 3 classes", "training class");
    imagenet_options o = {.root = root, .train = 1, .image_size = 4};
    char err[512];
    dataset d;
    assert_int_equal(dataset_open_imagenet(&d, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "image size 4"));
    test_rmtree(root);
}

/* Images that cannot be decoded: an error naming the file, or skipped and counted. */
static void test_bad_images(void **state) {
    char root[512];
    test_tmpdir(root, sizeof root);
    write_train(root);
    write_bytes(root, "train/n001/y_text.JPEG", "this is not a JPEG file", 23);
    uint8_t cmyk_no_adobe[sizeof cmyk_jpeg];
    size_t app14 = 2 + 2 + ((size_t)cmyk_jpeg[4] << 8 | cmyk_jpeg[5]); /* SOI, marker, length */
    memcpy(cmyk_no_adobe, cmyk_jpeg, 2);
    memcpy(cmyk_no_adobe + 2, cmyk_jpeg + app14, sizeof cmyk_jpeg - app14);
    write_bytes(root, "train/n001/z_cmyk.JPEG", cmyk_no_adobe, sizeof cmyk_jpeg - app14 + 2);
    /* samples: a b c y z d e; y and z are bad */
    dataset d;
    open_or_fail(&d, root, 1, 32, 0, NULL);
    assert_int_equal(d.count, 7);
    float image[32 * 32 * 3], direct[32 * 32 * 3];
    int32_t label;
    char err[1024];
    int64_t index = 3;
    assert_int_equal(d.read(&d, image, &label, &index, 1, err, sizeof err), -1);
    if (!strstr(err, "train/n001/y_text.JPEG: not a JPEG or PNG image"))
        fail_msg("unexpected message: %s", err);
    index = 4;
    assert_int_equal(d.read(&d, image, &label, &index, 1, err, sizeof err), -1);
    if (!strstr(err, "z_cmyk.JPEG: 4-component (CMYK) JPEG without an Adobe APP14 marker"))
        fail_msg("unexpected message: %s", err);
    dataset_close(&d);

    open_or_fail(&d, root, 1, 32, 1, NULL);
    index = 3;
    if (d.read(&d, image, &label, &index, 1, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(label, 2);
    assert_int_equal(dataset_imagenet_bad_images(&d), 2);
    index = 5; /* what took its place */
    assert_int_equal(d.read(&d, direct, &label, &index, 1, err, sizeof err), 0);
    assert_memory_equal(image, direct, sizeof image);
    assert_int_equal(dataset_imagenet_bad_images(&d), 2);
    dataset_close(&d);
    test_rmtree(root);

    /* nothing readable at all: skip_bad gives up with a message rather than looping */
    test_tmpdir(root, sizeof root);
    make_folder(root, "train");
    make_folder(root, "train/n000");
    write_bytes(root, "train/n000/x.JPEG", "no", 2);
    write_bytes(root, "train/n000/y.JPEG", "", 0);
    open_or_fail(&d, root, 1, 32, 1, NULL);
    index = 1;
    assert_int_equal(d.read(&d, image, &label, &index, 1, err, sizeof err), -1);
    if (!strstr(err, "sample 1 and the 1 images after it could not be read") ||
        !strstr(err, "x.JPEG"))
        fail_msg("unexpected message: %s", err);
    assert_int_equal(dataset_imagenet_bad_images(&d), 2);
    dataset_close(&d);
    test_rmtree(root);
}

/* An encoded PNG in memory (stbi_write_png_to_func's sink). */
typedef struct png_buffer {
    uint8_t *bytes;
    size_t size;
} png_buffer;

static void png_append(void *context, void *data, int size) {
    png_buffer *b = context;
    b->bytes = realloc(b->bytes, b->size + (size_t)size);
    assert_non_null(b->bytes);
    memcpy(b->bytes + b->size, data, (size_t)size);
    b->size += (size_t)size;
}

static void test_decode(void **state) {
    image_rgb image;
    char why[256];
    assert_int_equal(image_decode(&image, cmyk_jpeg, sizeof cmyk_jpeg, 1 << 20, why, sizeof why),
                     0);
    assert_int_equal(image.width, 8);
    assert_int_equal(image.source_channels, 4);
    for (int p = 0; p < 64; p++) { /* pure red, within JPEG's rounding */
        expect_ge(image.pixels[3 * p], 250);
        expect_le(image.pixels[3 * p + 1], 5); expect_le(image.pixels[3 * p + 2], 5);
    }
    image_free(&image);
    assert_int_equal(image_decode(&image, cmyk_jpeg, sizeof cmyk_jpeg, 63, why, sizeof why), -1);
    assert_non_null(strstr(why, "8x8 pixels, more than the 63 allowed"));
    assert_int_equal(image_decode(&image, cmyk_jpeg, 0, 1 << 20, why, sizeof why), -1);
    assert_non_null(strstr(why, "empty"));
    for (size_t cut = 1; cut < 120; cut += 7) /* cut inside the headers */
        assert_int_equal(image_decode(&image, cmyk_jpeg, cut, 1 << 20, why, sizeof why), -1);

    /* fill bytes before the start-of-image marker are accepted (as stb_image does) */
    uint8_t padded[sizeof grey_jpeg + 3] = {0xFF, 0xFF, 0xFF};
    memcpy(padded + 3, grey_jpeg, sizeof grey_jpeg);
    assert_int_equal(image_decode(&image, padded, sizeof padded, 1 << 20, why, sizeof why), 0);
    assert_int_equal(image.source_channels, 1);
    assert_int_equal(image.width, 16);
    image_free(&image);
    /* a Huffman table declaring more than 256 codes never reaches stb_image */
    uint8_t *dht = memmem(padded, sizeof padded, "\xFF\xC4", 2);
    assert_non_null(dht);
    dht[4 + 1 + 14] = 200; /* counts of 15- and 16-bit codes, after marker, length, class/id */
    dht[4 + 1 + 15] = 200;
    assert_int_equal(image_decode(&image, padded, sizeof padded, 1 << 20, why, sizeof why), -1);
    assert_non_null(strstr(why, "Huffman table (DHT) declares more codes"));

    /* a PNG whose chunk claims more bytes than the file holds never reaches stb_image, which would
     * allocate what the chunk claims (here 1 GiB) */
    uint8_t pixels[4 * 3 * 3];
    memset(pixels, 90, sizeof pixels);
    png_buffer png = {0};
    assert_true(stbi_write_png_to_func(png_append, &png, 4, 3, 3, pixels, 4 * 3));
    assert_int_equal(image_decode(&image, png.bytes, png.size, 1 << 20, why, sizeof why), 0);
    assert_int_equal(image.width, 4);
    assert_int_equal(image.pixels[0], 90);
    image_free(&image);
    uint8_t *idat = memmem(png.bytes, png.size, "IDAT", 4);
    assert_non_null(idat);
    memcpy(idat - 4, "\x40\x00\x00\x00", 4);
    assert_int_equal(image_decode(&image, png.bytes, png.size, 1 << 20, why, sizeof why), -1);
    if (!strstr(why, "corrupt PNG: chunk 'IDAT'") || !strstr(why, "declares 1073741824 bytes"))
        fail_msg("unexpected message: %s", why);
    free(png.bytes);
}

/* Constant colour through the evaluation transform (odd and tall sizes): exact. */
static void test_eval_constant(void **state) {
    int sizes[3][2] = {{37, 23}, {23, 37}, {500, 375}};
    for (int s = 0; s < 3; s++) {
        int w = sizes[s][0], h = sizes[s][1];
        image_rgb image = {malloc((size_t)w * h * 3), w, h, 3};
        for (int i = 0; i < w * h; i++) memcpy(image.pixels + 3 * i, constant, 3);
        float *out = malloc(224 * 224 * 3 * sizeof(float));
        assert_int_equal(image_eval_transform(out, 224, 256, &image, mean, stdev), 0);
        expect_constant(out, 224 * 224);
        assert_int_equal(image_eval_transform(out, 224, 200, &image, mean, stdev), -1);
        free(out);
        free(image.pixels);
    }
}

/* Mirroring: the flipped output is the unflipped one read right to left. */
static void test_flip_is_mirror(void **state) {
    int w = 120, h = 90;
    image_rgb image = {malloc((size_t)w * h * 3), w, h, 3};
    uint64_t rng = 5;
    for (int i = 0; i < w * h * 3; i++) image.pixels[i] = (uint8_t)rng_next(&rng);
    float plain[40 * 30 * 3], flipped[40 * 30 * 3];
    image_box box = {13, 7, 77, 61};
    assert_int_equal(image_resample(plain, 40, 30, &image, box, 40, 30, 0, 0, 0, mean, stdev), 0);
    assert_int_equal(image_resample(flipped, 40, 30, &image, box, 40, 30, 0, 0, 1, mean, stdev),
                     0);
    for (int y = 0; y < 30; y++)
        for (int x = 0; x < 40; x++)
            for (int c = 0; c < 3; c++)
                expect_eq(plain[(y * 40 + x) * 3 + c], flipped[(y * 40 + 39 - x) * 3 + c]);
    image_box outside = {50, 7, 77, 61};
    assert_int_equal(image_resample(plain, 40, 30, &image, outside, 40, 30, 0, 0, 0, mean, stdev),
                     -1);
    free(image.pixels);
}

/* Crops as torchvision draws them: inside the image, area fraction in [0.08, 1] and aspect in
 * [3/4, 4/3] up to rounding, varied; the centred fallback where no draw can fit. */
static void test_crop_boxes(void **state) {
    uint64_t rng = 11;
    int small = 0, large = 0, moved = 0;
    for (int i = 0; i < 3000; i++) {
        image_box b = image_random_resized_crop_box(500, 375, 0.08, 1.0, 0.75, 4.0 / 3.0, &rng);
        expect_ge(b.x, 0); expect_ge(b.y, 0); expect_ge(b.width, 1); expect_ge(b.height, 1);
        expect_le(b.x + b.width, 500); expect_le(b.y + b.height, 375);
        double area = (double)b.width * b.height / (500.0 * 375.0);
        double aspect = (double)b.width / b.height;
        expect_ge(area, 0.08 * 0.98); expect_le(area, 1.0);
        expect_ge(aspect, 0.75 * 0.98); expect_le(aspect, 4.0 / 3.0 * 1.02);
        small += area < 0.3;
        large += area > 0.8;
        moved += b.x > 0 && b.y > 0;
    }
    expect_gt(small, 300); expect_gt(large, 50); expect_gt(moved, 1000);
    image_box wide = image_random_resized_crop_box(1000, 10, 0.08, 1.0, 0.75, 4.0 / 3.0, &rng);
    assert_int_equal(wide.width, 13);
    assert_int_equal(wide.height, 10);
    assert_int_equal(wide.x, 493);
    assert_int_equal(wide.y, 0);
    image_box tall = image_random_resized_crop_box(10, 1000, 0.08, 1.0, 0.75, 4.0 / 3.0, &rng);
    assert_int_equal(tall.width, 10);
    assert_int_equal(tall.height, 13);
    assert_int_equal(tall.y, 493);
    uint64_t a = 99, b = 99; /* the same seed, the same crops */
    for (int i = 0; i < 10; i++) {
        image_box x = image_random_resized_crop_box(37, 23, 0.08, 1.0, 0.75, 4.0 / 3.0, &a);
        image_box y = image_random_resized_crop_box(37, 23, 0.08, 1.0, 0.75, 4.0 / 3.0, &b);
        assert_memory_equal(&x, &y, sizeof x);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_set),
        cmocka_unit_test(test_validation_folders),
        cmocka_unit_test(test_validation_label_files),
        cmocka_unit_test(test_layout_errors),
        cmocka_unit_test(test_bad_images),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_eval_constant),
        cmocka_unit_test(test_flip_is_mirror),
        cmocka_unit_test(test_crop_boxes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
