/* Synthetic data set: shapes as asked, content a function of (seed, index) only, labels in range
 * and carried by the image, value statistics like normalised images. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/dataset.h"
#include "tests/support/testutil.h"

static dataset open_spec(int64_t count, int h, int w, int c, int classes, uint64_t seed) {
    synthetic_spec spec = {.count = count, .height = h, .width = w, .channels = c,
                           .classes = classes, .seed = seed};
    dataset d;
    char err[512] = "";
    if (dataset_open_synthetic(&d, &spec, err, sizeof err) != 0) fail_msg("%s", err);
    return d;
}

static void read_ok(const dataset *d, float *images, int32_t *labels, const int64_t *indices,
                    int n) {
    char err[512] = "";
    if (d->read(d, images, labels, indices, n, err, sizeof err) != 0) fail_msg("%s", err);
}

static void test_shape(void **state) {
    dataset d = open_spec(1281167, 224, 224, 3, 1000, 1);
    assert_string_equal(d.name, "synthetic");
    assert_int_equal(d.count, 1281167);
    assert_int_equal(d.height, 224);
    assert_int_equal(d.width, 224);
    assert_int_equal(d.channels, 3);
    assert_int_equal(d.classes, 1000);
    assert_int_equal(dataset_image_floats(&d), 224 * 224 * 3);
    dataset_close(&d);
}

/* Same (seed, index): same image and label, whatever else is in the batch, in another instance. */
static void test_deterministic(void **state) {
    dataset a = open_spec(100, 17, 9, 3, 10, 7), b = open_spec(100, 17, 9, 3, 10, 7);
    size_t floats = dataset_image_floats(&a);
    float *alone = malloc(floats * sizeof(float)), *batch = malloc(3 * floats * sizeof(float));
    int32_t label_alone, labels[3];
    int64_t five[] = {5}, batch_indices[] = {99, 5, 0};
    read_ok(&a, alone, &label_alone, five, 1);
    read_ok(&b, batch, labels, batch_indices, 3);
    assert_memory_equal(alone, batch + floats, floats * sizeof(float));
    assert_int_equal(label_alone, labels[1]);
    read_ok(&a, batch, labels, batch_indices, 3);
    assert_memory_equal(alone, batch + floats, floats * sizeof(float));
    free(alone);
    free(batch);
    dataset_close(&a);
    dataset_close(&b);
}

/* Different indices, and different seeds, give different images. */
static void test_distinct(void **state) {
    enum { N = 64 };
    dataset a = open_spec(N, 8, 8, 3, 5, 11), b = open_spec(N, 8, 8, 3, 5, 12);
    size_t floats = dataset_image_floats(&a);
    float *x = malloc(N * floats * sizeof(float)), *y = malloc(N * floats * sizeof(float));
    int32_t lx[N], ly[N];
    int64_t indices[N];
    for (int i = 0; i < N; i++) indices[i] = i;
    read_ok(&a, x, lx, indices, N);
    read_ok(&b, y, ly, indices, N);
    for (int i = 0; i < N; i++) {
        for (int j = i + 1; j < N; j++)
            if (memcmp(x + i * floats, x + j * floats, floats * sizeof(float)) == 0)
                fail_msg("samples %d and %d are identical", i, j);
        if (memcmp(x + i * floats, y + i * floats, floats * sizeof(float)) == 0)
            fail_msg("sample %d is the same under seeds 11 and 12", i);
    }
    int64_t outside[] = {N};
    char err[512] = "";
    assert_int_equal(a.read(&a, x, lx, outside, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "out of range"));
    free(x);
    free(y);
    dataset_close(&a);
    dataset_close(&b);
}

/* Labels cover 0..classes-1 evenly-ish; values have mean ~0 and std ~1; the class shifts the
 * image mean upwards with the label, so the labels can be learnt. */
static void test_labels_and_values(void **state) {
    enum { N = 4000, CLASSES = 7 };
    dataset d = open_spec(N, 16, 16, 3, CLASSES, 3);
    size_t floats = dataset_image_floats(&d);
    float *images = malloc(N * floats * sizeof(float));
    int32_t *labels = malloc(N * sizeof(int32_t));
    int64_t *indices = malloc(N * sizeof(int64_t));
    for (int i = 0; i < N; i++) indices[i] = i;
    read_ok(&d, images, labels, indices, N);
    int per_class[CLASSES] = {0};
    double class_mean[CLASSES] = {0}, sum = 0, sum_sq = 0;
    for (int i = 0; i < N; i++) {
        assert_in_range(labels[i], 0, CLASSES - 1);
        per_class[labels[i]]++;
        double image_sum = 0;
        for (size_t j = 0; j < floats; j++) {
            double v = images[i * floats + j];
            image_sum += v;
            sum_sq += v * v;
        }
        sum += image_sum;
        class_mean[labels[i]] += image_sum / floats;
    }
    for (int c = 0; c < CLASSES; c++) {
        assert_in_range(per_class[c], N / CLASSES / 2, N / CLASSES * 2);
        class_mean[c] /= per_class[c];
    }
    for (int c = 1; c < CLASSES; c++) expect_gt(class_mean[c], class_mean[c - 1]);
    double n = (double)N * floats, mean = sum / n, std = sqrt(sum_sq / n - mean * mean);
    printf("mean %.4f std %.4f; class means %.3f .. %.3f\n", mean, std, class_mean[0],
           class_mean[CLASSES - 1]);
    expect_lt(fabs(mean), 0.1);
    expect_gt(std, 0.95); expect_lt(std, 1.1);
    free(images);
    free(labels);
    free(indices);
    dataset_close(&d);
}

static void test_bad_spec(void **state) {
    synthetic_spec specs[] = {
        {.count = 0, .height = 8, .width = 8, .channels = 3, .classes = 10},
        {.count = 10, .height = 8, .width = -8, .channels = 3, .classes = 10},
        {.count = 10, .height = 8, .width = 8, .channels = 3, .classes = 0},
        {.count = 10, .height = 1 << 20, .width = 1 << 20, .channels = 3, .classes = 10},
    };
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        dataset d;
        char err[512] = "";
        assert_int_equal(dataset_open_synthetic(&d, &specs[i], err, sizeof err), -1);
        assert_non_null(strstr(err, "synthetic"));
        assert_null(d.impl);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_distinct),
        cmocka_unit_test(test_labels_and_values),
        cmocka_unit_test(test_bad_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
