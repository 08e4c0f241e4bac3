/* What the GPU decoder's input is made of, on the CPU: JPEG headers read without decoding (which
 * files are plain, which are not), the crop of a sample drawn in one place for both paths (the
 * host transform is the crop applied; the encoded source's record holds the same crop, so the
 * record's crop applied to the decoded payload gives the data set's read() bit for bit), files the
 * GPU cannot take decoded by the workers instead and counted, the same through the loader's
 * threads, and a new epoch drawing new crops. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/dataset.h"
#include "data/image_transform.h"
#include "data/loader.h"
#include "tests/support/image_fixtures.h"
#include "tests/support/testutil.h"

#define SIZE 64
#define SAMPLES 7

static uint8_t *read_fixture(const char *root, const char *relative, size_t *size) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/%s", root, relative);
    uint8_t *bytes;
    if (dataset_read_file(path, 1 << 26, &bytes, size, err, sizeof err) != 0) fail_msg("%s", err);
    return bytes;
}

/* Random noise at quality 100: a JPEG larger than the payload field (IMAGENET_ENCODED_MIN_PAYLOAD). */
static void write_noise(const char *root, const char *relative, int w, int h) {
    uint8_t *pixels = malloc((size_t)w * h * 3);
    uint64_t state = 11;
    for (size_t i = 0; i < (size_t)w * h * 3; i++) pixels[i] = (uint8_t)test_rand_u64(&state);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, relative);
    assert_true(stbi_write_jpg(path, w, h, 3, pixels, 100));
    free(pixels);
}

/* train/n000: a.JPEG 37x23 (4:4:4), b.jpeg 500x375 (4:2:0), c.JPEG grey; n001: d.png, e.JPEG CMYK,
 * f.JPEG noise 700x600 (too large for the field), g.JPEG 90x120 (4:2:0). Plain JPEGs: a b c g. */
static void write_folder(const char *root) {
    make_folder(root, "train");
    make_folder(root, "train/n000");
    make_folder(root, "train/n001");
    write_image(root, "train/n000/a.JPEG", 37, 23, 1, 95);
    write_image(root, "train/n000/b.jpeg", 500, 375, 2, 90);
    write_bytes(root, "train/n000/c.JPEG", grey_jpeg, sizeof grey_jpeg);
    write_constant_png(root, "train/n001/d.png", 40, 30);
    write_bytes(root, "train/n001/e.JPEG", cmyk_jpeg, sizeof cmyk_jpeg);
    write_noise(root, "train/n001/f.JPEG", 700, 600);
    write_image(root, "train/n001/g.JPEG", 90, 120, 7, 80);
}

static const char *const files[SAMPLES] = {"train/n000/a.JPEG", "train/n000/b.jpeg", "train/n000/c.JPEG",
                                           "train/n001/d.png", "train/n001/e.JPEG", "train/n001/f.JPEG",
                                           "train/n001/g.JPEG"};
static const int plain[SAMPLES] = {1, 1, 1, 0, 0, 0, 1};

static void open_folder(dataset *d, const char *root, int skip_bad) {
    imagenet_options o = {.root = root, .train = 1, .image_size = SIZE, .skip_bad = skip_bad, .seed = 3};
    char err[1024] = "";
    if (dataset_open_imagenet(d, &o, err, sizeof err) != 0) fail_msg("%s", err);
}

static void test_jpeg_headers(void **state) {
    char root[512];
    test_tmpdir(root, sizeof root);
    write_folder(root);
    image_jpeg_header h;
    size_t size;
    uint8_t *a = read_fixture(root, files[0], &size);
    assert_int_equal(image_jpeg_header_read(a, size, &h), 0);
    assert_int_equal(h.frame, 0xC0);
    assert_int_equal(h.precision, 8);
    assert_int_equal(h.width, 37);
    assert_int_equal(h.height, 23);
    assert_int_equal(h.components, 3);
    assert_int_equal(h.adobe_transform, -1);
    assert_true(image_jpeg_is_plain(&h, IMAGE_DEFAULT_MAX_PIXELS));
    assert_false(image_jpeg_is_plain(&h, 37 * 23 - 1)); /* larger than allowed */
    /* the same file but arithmetic-coded (SOF9), or with components named R, G, B: not plain */
    for (size_t i = 0; i + 1 < size; i++)
        if (a[i] == 0xFF && a[i + 1] == 0xC0) {
            a[i + 1] = 0xC9;
            assert_int_equal(image_jpeg_header_read(a, size, &h), 0);
            assert_int_equal(h.frame, 0xC9);
            assert_false(image_jpeg_is_plain(&h, IMAGE_DEFAULT_MAX_PIXELS));
            a[i + 1] = 0xC0;
            a[i + 10] = 'R', a[i + 13] = 'G', a[i + 16] = 'B'; /* after marker, length, precision, size, count */
            assert_int_equal(image_jpeg_header_read(a, size, &h), 0);
            assert_true(h.rgb_ids);
            assert_false(image_jpeg_is_plain(&h, IMAGE_DEFAULT_MAX_PIXELS));
            break;
        }
    free(a);
    assert_int_equal(image_jpeg_header_read(grey_jpeg, sizeof grey_jpeg, &h), 0);
    assert_int_equal(h.components, 1);
    assert_int_equal(h.width, 16);
    assert_int_equal(h.height, 12);
    assert_true(image_jpeg_is_plain(&h, IMAGE_DEFAULT_MAX_PIXELS));
    assert_int_equal(image_jpeg_header_read(cmyk_jpeg, sizeof cmyk_jpeg, &h), 0);
    assert_int_equal(h.components, 4);
    expect_ge(h.adobe_transform, 0);
    assert_false(image_jpeg_is_plain(&h, IMAGE_DEFAULT_MAX_PIXELS));
    uint8_t *png = read_fixture(root, files[3], &size);
    assert_int_equal(image_jpeg_header_read(png, size, &h), -1);
    free(png);
    test_rmtree(root);
}

/* The transforms are their crops applied: one draw serves the host and the GPU alike. */
static void test_crop_is_the_transform(void **state) {
    image_rgb source = {.width = 97, .height = 61};
    source.pixels = malloc((size_t)source.width * source.height * 3);
    uint64_t fill = 5;
    for (int i = 0; i < source.width * source.height * 3; i++) source.pixels[i] = (uint8_t)test_rand_u64(&fill);
    float *a = malloc(SIZE * SIZE * 3 * sizeof(float)), *b = malloc(SIZE * SIZE * 3 * sizeof(float));
    int flips = 0;
    for (uint64_t seed = 0; seed < 40; seed++) {
        uint64_t r1 = seed, r2 = seed;
        assert_int_equal(image_train_transform(a, SIZE, &source, &r1, dataset_imagenet_mean, dataset_imagenet_std), 0);
        image_crop crop = image_train_crop(source.width, source.height, SIZE, &r2);
        assert_int_equal(image_apply_crop(b, SIZE, &source, &crop, dataset_imagenet_mean, dataset_imagenet_std), 0);
        assert_memory_equal(a, b, SIZE * SIZE * 3 * sizeof(float));
        expect_eq(r1, r2); /* the same draws, in the same order */
        assert_int_equal(crop.scaled_width, SIZE);
        expect_le(crop.region.x + crop.region.width, source.width);
        flips += crop.flip;
    }
    expect_gt(flips, 5); expect_lt(flips, 35);
    image_crop eval;
    assert_int_equal(image_eval_crop(&eval, source.width, source.height, SIZE, 73), 0);
    assert_int_equal(eval.scaled_height, 73);                /* the shorter side */
    assert_int_equal(eval.scaled_width, 97 * 73 / 61);       /* int(73 * 97 / 61) */
    assert_int_equal(eval.offset_y, 4);                      /* round((73 - 64) / 2) */
    assert_int_equal(image_eval_transform(a, SIZE, 73, &source, dataset_imagenet_mean, dataset_imagenet_std), 0);
    assert_int_equal(image_apply_crop(b, SIZE, &source, &eval, dataset_imagenet_mean, dataset_imagenet_std), 0);
    assert_memory_equal(a, b, SIZE * SIZE * 3 * sizeof(float));
    assert_int_equal(image_eval_crop(&eval, source.width, source.height, SIZE, SIZE - 1), -1);
    free(a);
    free(b);
    free(source.pixels);
}

typedef struct encoded_batch {
    uint8_t *payloads;
    int32_t labels[SAMPLES];
    imagenet_encoded records[SAMPLES];
} encoded_batch;

static void read_encoded(const loader_source *s, encoded_batch *b) {
    int64_t indices[SAMPLES];
    for (int k = 0; k < SAMPLES; k++) indices[k] = k;
    void *fields[LOADER_MAX_FIELDS] = {b->payloads, b->labels, b->records};
    char err[1024] = "";
    if (s->read(s, fields, indices, SAMPLES, err, sizeof err) != 0) fail_msg("%s", err);
}

/* Each sample of the encoded batch is the data set's read(): the payload decoded on the host with
 * the record's crop, or the host's pixels themselves. */
static void expect_same_as_read(const char *root, const dataset *d, const loader_source *s,
                                const encoded_batch *b) {
    size_t floats = dataset_image_floats(d), payload_bytes = s->field_bytes[IMAGENET_ENCODED_PAYLOAD];
    float *want = malloc(floats * sizeof(float)), *got = malloc(floats * sizeof(float));
    char err[1024] = "", why[256];
    for (int k = 0; k < SAMPLES; k++) {
        int64_t index = k;
        int32_t label;
        if (d->read(d, want, &label, &index, 1, err, sizeof err) != 0) fail_msg("%s", err);
        assert_int_equal(b->labels[k], label);
        const imagenet_encoded *r = &b->records[k];
        const uint8_t *payload = b->payloads + (size_t)k * payload_bytes;
        assert_int_equal(r->index, k);
        if (!plain[k]) {
            assert_int_equal(r->kind, IMAGENET_ENCODED_PIXELS);
            assert_memory_equal(payload, want, floats * sizeof(float));
            continue;
        }
        assert_int_equal(r->kind, IMAGENET_ENCODED_JPEG);
        size_t size;
        uint8_t *file = read_fixture(root, files[k], &size);
        assert_int_equal(r->bytes, size);
        assert_memory_equal(payload, file, size);
        free(file);
        image_rgb picture;
        if (image_decode(&picture, payload, r->bytes, IMAGE_DEFAULT_MAX_PIXELS, why, sizeof why) != 0)
            fail_msg("%s: %s", files[k], why);
        assert_int_equal(r->width, picture.width);
        assert_int_equal(r->height, picture.height);
        assert_int_equal(image_apply_crop(got, SIZE, &picture, &r->crop, dataset_imagenet_mean, dataset_imagenet_std), 0);
        image_free(&picture);
        if (memcmp(got, want, floats * sizeof(float)) != 0)
            fail_msg("%s: the record's crop is not the one read() cut", files[k]);
    }
    free(want);
    free(got);
}

static void test_encoded_source(void **state) {
    char root[512];
    test_tmpdir(root, sizeof root);
    write_folder(root);
    dataset d;
    open_folder(&d, root, 0);
    loader_source s;
    char err[1024] = "";
    if (loader_source_imagenet_encoded(&s, &d, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(s.fields, 3);
    assert_int_equal(s.count, SAMPLES);
    expect_ge(s.field_bytes[IMAGENET_ENCODED_PAYLOAD], IMAGENET_ENCODED_MIN_PAYLOAD);
    assert_int_equal(s.field_bytes[IMAGENET_ENCODED_RECORD], sizeof(imagenet_encoded));
    encoded_batch b, again;
    b.payloads = malloc(SAMPLES * s.field_bytes[0]);
    again.payloads = malloc(SAMPLES * s.field_bytes[0]);
    read_encoded(&s, &b);
    assert_int_equal(dataset_imagenet_host_decoded(&d), 3); /* d.png, e.JPEG (CMYK), f.JPEG (too large) */
    expect_same_as_read(root, &d, &s, &b);

    /* another epoch, other crops, still read()'s */
    s.set_epoch(&s, 1);
    read_encoded(&s, &again);
    expect_same_as_read(root, &d, &s, &again);
    int moved = 0;
    for (int k = 0; k < SAMPLES; k++)
        moved += plain[k] && memcmp(&b.records[k].crop, &again.records[k].crop, sizeof(image_crop)) != 0;
    expect_ge(moved, 3);

    /* through the loader's threads: the same records */
    loader_config lc = {.batch = SAMPLES, .workers = 3};
    loader *l = loader_open_source(&s, &lc, err, sizeof err);
    if (!l) fail_msg("%s", err);
    loader_start_epoch(l, 1);
    loader_batch lb;
    assert_int_equal(loader_next(l, &lb, err, sizeof err), 1);
    assert_memory_equal(lb.fields[IMAGENET_ENCODED_RECORD], again.records, sizeof again.records);
    assert_memory_equal(lb.fields[IMAGENET_ENCODED_LABEL], again.labels, sizeof again.labels);
    loader_close(l);

    free(b.payloads);
    free(again.payloads);
    dataset_close(&d);
    test_rmtree(root);
}

/* A file that is no image: the workers' host read reports it, or with skip_bad replaces it. */
static void test_encoded_bad_file(void **state) {
    char root[512];
    test_tmpdir(root, sizeof root);
    make_folder(root, "train");
    make_folder(root, "train/n000");
    write_image(root, "train/n000/a.JPEG", 30, 20, 1, 95);
    write_bytes(root, "train/n000/b.JPEG", "no picture in here", 18);
    write_image(root, "train/n000/c.JPEG", 30, 20, 2, 95);
    dataset d;
    open_folder(&d, root, 0);
    loader_source s;
    char err[1024] = "";
    assert_int_equal(loader_source_imagenet_encoded(&s, &d, err, sizeof err), 0);
    uint8_t *payload = malloc(s.field_bytes[0]);
    int32_t label;
    imagenet_encoded record;
    void *fields[LOADER_MAX_FIELDS] = {payload, &label, &record};
    int64_t bad = 1;
    assert_int_equal(s.read(&s, fields, &bad, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "b.JPEG"));
    dataset_close(&d);

    open_folder(&d, root, 1);
    assert_int_equal(loader_source_imagenet_encoded(&s, &d, err, sizeof err), 0);
    assert_int_equal(s.read(&s, fields, &bad, 1, err, sizeof err), 0);
    assert_int_equal(record.kind, IMAGENET_ENCODED_PIXELS); /* c.JPEG's pixels in b's place */
    assert_int_equal(dataset_imagenet_bad_images(&d), 1);
    assert_int_equal(dataset_imagenet_host_decoded(&d), 1);
    dataset_close(&d);

    /* only ImageNet folders have files to hand over */
    synthetic_spec spec = {16, 8, 8, 3, 2, 1};
    assert_int_equal(dataset_open_synthetic(&d, &spec, err, sizeof err), 0);
    assert_int_equal(loader_source_imagenet_encoded(&s, &d, err, sizeof err), -1);
    assert_non_null(strstr(err, "ImageNet JPEG folder"));
    dataset_close(&d);
    free(payload);
    test_rmtree(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jpeg_headers),
        cmocka_unit_test(test_crop_is_the_transform),
        cmocka_unit_test(test_encoded_source),
        cmocka_unit_test(test_encoded_bad_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
