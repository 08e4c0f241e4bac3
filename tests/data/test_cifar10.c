/* CIFAR-10 reader: batch files written here with known records must come back interleaved to
 * NHWC and normalised per channel exactly, across file boundaries and in both folder layouts;
 * sizes that are not whole records, bad labels and missing files must be refused with a message
 * naming the file (and the record). */
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
#include "tests/support/testutil.h"

#define REC CIFAR10_RECORD_BYTES
static const double mean[3] = {0.4914, 0.4822, 0.4465};
static const double stdev[3] = {0.2470, 0.2435, 0.2616};
static const int train_records[5] = {3, 1, 4, 2, 2}; /* 12 samples over the five files */

static int label_of(int g) { return (g * 7 + 3) % 10; }

/* Channel c of pixel p (= y * 32 + x) of global sample g. */
static uint8_t level_of(int g, int c, int p) {
    switch (c) {
    case 0: return (uint8_t)(g * 13 + p * 3);
    case 1: return (uint8_t)(g * 5 + p * 7 + 100);
    default: return (uint8_t)(g + p + (p >> 5));
    }
}

static void fill_records(uint8_t *bytes, int first, int count) {
    for (int r = 0; r < count; r++) {
        uint8_t *rec = bytes + (size_t)r * REC;
        rec[0] = (uint8_t)label_of(first + r);
        for (int c = 0; c < 3; c++)
            for (int p = 0; p < 1024; p++) rec[1 + c * 1024 + p] = level_of(first + r, c, p);
    }
}

static void write_bytes(const char *path, const uint8_t *bytes, size_t size) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    fclose(f);
}

/* Writes the five training files and the test file into dir; global sample numbers run on across
 * the training files, and the test file starts again at 100. */
static void write_fixture(const char *dir) {
    char path[1024];
    int first = 0;
    for (int f = 0; f < 5; f++) {
        uint8_t *bytes = malloc((size_t)train_records[f] * REC);
        fill_records(bytes, first, train_records[f]);
        snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir, f + 1);
        write_bytes(path, bytes, (size_t)train_records[f] * REC);
        first += train_records[f];
        free(bytes);
    }
    uint8_t *bytes = malloc(5 * REC);
    fill_records(bytes, 100, 5);
    snprintf(path, sizeof path, "%s/test_batch.bin", dir);
    write_bytes(path, bytes, 5 * REC);
    free(bytes);
}

static void check_samples(const dataset *d, const int64_t *indices, int n, int first) {
    float *images = malloc((size_t)n * 32 * 32 * 3 * sizeof(float));
    int32_t *labels = malloc((size_t)n * sizeof(int32_t));
    char err[512] = "";
    assert_int_equal(d->read(d, images, labels, indices, n, err, sizeof err), 0);
    for (int k = 0; k < n; k++) {
        int g = first + (int)indices[k];
        assert_int_equal(labels[k], label_of(g));
        for (int p = 0; p < 1024; p++)
            for (int c = 0; c < 3; c++) {
                double want = (level_of(g, c, p) / 255.0 - mean[c]) / stdev[c];
                float got = images[((size_t)k * 1024 + p) * 3 + c];
                if (fabs(got - want) > 1e-5)
                    fail_msg("sample %d pixel %d channel %d: got %.7f, want %.7f", g, p, c, got,
                             want);
            }
    }
    free(images);
    free(labels);
}

static void check_fixture(const char *root) {
    char err[1024] = "";
    dataset d;
    if (dataset_open_cifar10(&d, root, 1, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(d.count, 12);
    assert_int_equal(d.height, 32);
    assert_int_equal(d.width, 32);
    assert_int_equal(d.channels, 3);
    assert_int_equal(d.classes, 10);
    int64_t order[] = {11, 0, 3, 4, 7, 8, 2, 10, 5};
    check_samples(&d, order, 9, 0);
    int64_t outside[] = {-1};
    float image[32 * 32 * 3];
    int32_t label;
    assert_int_equal(d.read(&d, image, &label, outside, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "out of range"));
    dataset_close(&d);

    if (dataset_open_cifar10(&d, root, 0, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(d.count, 5);
    int64_t all[] = {4, 3, 2, 1, 0};
    check_samples(&d, all, 5, 100);
    dataset_close(&d);
}

static void test_exact_values(void **state) {
    char dir[512];
    test_tmpdir(dir, sizeof dir);
    write_fixture(dir);
    check_fixture(dir);
    test_rmtree(dir);
}

/* As the archive unpacks: root/cifar-10-batches-bin/... */
static void test_nested_folder(void **state) {
    char dir[512], nested[600];
    test_tmpdir(dir, sizeof dir);
    snprintf(nested, sizeof nested, "%s/cifar-10-batches-bin", dir);
    assert_int_equal(mkdir(nested, 0700), 0);
    write_fixture(nested);
    check_fixture(dir);
    test_rmtree(dir);
}

static void expect_failure(const char *root, int train, const char *part1, const char *part2) {
    char err[1024] = "";
    dataset d;
    assert_int_equal(dataset_open_cifar10(&d, root, train, err, sizeof err), -1);
    if (!strstr(err, part1) || !strstr(err, part2))
        fail_msg("message \"%s\" should contain \"%s\" and \"%s\"", err, part1, part2);
    assert_null(d.impl);
}

static void test_corrupt_files(void **state) {
    char dir[512], path[1024];
    uint8_t *bytes = malloc(4 * REC);

    /* data_batch_3.bin: one whole record and 100 bytes of the next */
    test_tmpdir(dir, sizeof dir);
    write_fixture(dir);
    fill_records(bytes, 0, 2);
    snprintf(path, sizeof path, "%s/data_batch_3.bin", dir);
    write_bytes(path, bytes, REC + 100);
    expect_failure(dir, 1, "data_batch_3.bin", "record 1 is cut short");
    test_rmtree(dir);

    /* data_batch_4.bin: record 1 labelled 10 */
    test_tmpdir(dir, sizeof dir);
    write_fixture(dir);
    fill_records(bytes, 0, 2);
    bytes[REC] = 10;
    snprintf(path, sizeof path, "%s/data_batch_4.bin", dir);
    write_bytes(path, bytes, 2 * REC);
    expect_failure(dir, 1, "data_batch_4.bin: record 1 has label 10", "0..9");
    test_rmtree(dir);

    /* empty test_batch.bin */
    test_tmpdir(dir, sizeof dir);
    write_fixture(dir);
    snprintf(path, sizeof path, "%s/test_batch.bin", dir);
    write_bytes(path, bytes, 0);
    expect_failure(dir, 0, "test_batch.bin", "empty");
    test_rmtree(dir);

    /* data_batch_5.bin missing */
    test_tmpdir(dir, sizeof dir);
    write_fixture(dir);
    snprintf(path, sizeof path, "%s/data_batch_5.bin", dir);
    assert_int_equal(remove(path), 0);
    expect_failure(dir, 1, "data_batch_5.bin not found", "test_batch.bin");
    /* the test split is still readable without it */
    char err[512];
    dataset d;
    assert_int_equal(dataset_open_cifar10(&d, dir, 0, err, sizeof err), 0);
    dataset_close(&d);
    test_rmtree(dir);

    /* no folder at all; a file where the folder should be */
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/absent", dir);
    expect_failure(path, 1, path, "data_batch_1.bin");
    snprintf(path, sizeof path, "%s/file", dir);
    write_bytes(path, bytes, 1);
    expect_failure(path, 1, path, "not a folder");
    test_rmtree(dir);
    free(bytes);
}

/* The in-memory entry point the fuzzer uses: same checks, record numbers in the message. */
static void test_memory(void **state) {
    uint8_t *bytes = malloc(3 * REC);
    fill_records(bytes, 40, 3);
    char err[512] = "";
    dataset d;
    assert_int_equal(dataset_open_cifar10_memory(&d, bytes, 3 * REC, "mem", err, sizeof err), 0);
    assert_int_equal(d.count, 3);
    int64_t all[] = {2, 0, 1};
    check_samples(&d, all, 3, 40);
    dataset_close(&d);
    assert_int_equal(dataset_open_cifar10_memory(&d, bytes, 3 * REC - 1, "mem", err, sizeof err),
                     -1);
    assert_non_null(strstr(err, "mem: "));
    assert_non_null(strstr(err, "record 2"));
    bytes[2 * REC] = 255;
    assert_int_equal(dataset_open_cifar10_memory(&d, bytes, 3 * REC, "mem", err, sizeof err), -1);
    assert_non_null(strstr(err, "record 2 has label 255"));
    free(bytes);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_values),
        cmocka_unit_test(test_nested_folder),
        cmocka_unit_test(test_corrupt_files),
        cmocka_unit_test(test_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
