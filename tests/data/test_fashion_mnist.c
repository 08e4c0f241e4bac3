/* Fashion-MNIST reader: IDX files written here with known pixels (gzipped and plain) must come
 * back padded, normalised and replicated exactly; each kind of corruption must be refused with a
 * message naming the file; the installed data set, when present, must have its known shape. */
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
#include <unistd.h>
#include <zlib.h>

#include "data/dataset.h"
#include "tests/support/testutil.h"

#define SIDE 32
#define MEAN 0.2860
#define STD 0.3530

typedef struct idx_fixture {
    uint8_t *images, *labels;
    size_t images_size, labels_size;
} idx_fixture;

static void put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint8_t pixel_of(uint32_t n, uint32_t r, uint32_t c) {
    return (uint8_t)((n * 37 + r * 11 + c * 5 + (r == c ? 255 : 0)) % 256);
}

static idx_fixture make_fixture(uint32_t count, uint32_t rows, uint32_t cols) {
    idx_fixture f;
    f.images_size = 16 + (size_t)count * rows * cols;
    f.labels_size = 8 + count;
    f.images = malloc(f.images_size);
    f.labels = malloc(f.labels_size);
    put_be32(f.images, 0x00000803);
    put_be32(f.images + 4, count);
    put_be32(f.images + 8, rows);
    put_be32(f.images + 12, cols);
    for (uint32_t n = 0; n < count; n++)
        for (uint32_t r = 0; r < rows; r++)
            for (uint32_t c = 0; c < cols; c++)
                f.images[16 + ((size_t)n * rows + r) * cols + c] = pixel_of(n, r, c);
    put_be32(f.labels, 0x00000801);
    put_be32(f.labels + 4, count);
    for (uint32_t n = 0; n < count; n++) f.labels[8 + n] = (uint8_t)((n * 3 + 1) % 10);
    return f;
}

static void free_fixture(idx_fixture *f) {
    free(f->images);
    free(f->labels);
}

static void write_file(const char *path, const uint8_t *bytes, size_t size, int gz) {
    if (gz) {
        gzFile file = gzopen(path, "wb");
        assert_non_null(file);
        if (size) assert_int_equal(gzwrite(file, bytes, (unsigned)size), (int)size);
        assert_int_equal(gzclose(file), Z_OK);
    } else {
        FILE *file = fopen(path, "wb");
        assert_non_null(file);
        assert_int_equal(fwrite(bytes, 1, size, file), size);
        fclose(file);
    }
}

static void write_split(const char *dir, const char *split, const idx_fixture *f, int gz) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte%s", dir, split, gz ? ".gz" : "");
    write_file(path, f->images, f->images_size, gz);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte%s", dir, split, gz ? ".gz" : "");
    write_file(path, f->labels, f->labels_size, gz);
}

static double expected_value(uint8_t level) {
    return ((double)level / 255.0 - MEAN) / STD;
}

/* Every value of every requested sample, padding and channels included. */
static void check_samples(const dataset *d, const int64_t *indices, int n) {
    float *images = malloc((size_t)n * SIDE * SIDE * 3 * sizeof(float));
    int32_t *labels = malloc((size_t)n * sizeof(int32_t));
    char err[512] = "";
    assert_int_equal(d->read(d, images, labels, indices, n, err, sizeof err), 0);
    for (int k = 0; k < n; k++) {
        uint32_t sample = (uint32_t)indices[k];
        assert_int_equal(labels[k], (int)((sample * 3 + 1) % 10));
        for (int y = 0; y < SIDE; y++)
            for (int x = 0; x < SIDE; x++) {
                int inside = y >= 2 && y < 30 && x >= 2 && x < 30;
                double want = inside ? expected_value(pixel_of(sample, y - 2, x - 2))
                                     : -MEAN / STD;
                for (int c = 0; c < 3; c++) {
                    float got = images[(((size_t)k * SIDE + y) * SIDE + x) * 3 + c];
                    if (fabs(got - want) > 1e-5) {
                        fail_msg("sample %u y %d x %d c %d: got %.7f, want %.7f", sample, y, x, c,
                                 got, want);
                    }
                }
            }
    }
    free(images);
    free(labels);
}

static void exact_values(int gz) {
    char dir[512], err[512] = "";
    test_tmpdir(dir, sizeof dir);
    idx_fixture train = make_fixture(7, 28, 28), test = make_fixture(3, 28, 28);
    write_split(dir, "train", &train, gz);
    write_split(dir, "t10k", &test, gz);

    dataset d;
    assert_int_equal(dataset_open_fashion_mnist(&d, dir, 1, err, sizeof err), 0);
    assert_int_equal(d.count, 7);
    assert_int_equal(d.height, 32);
    assert_int_equal(d.width, 32);
    assert_int_equal(d.channels, 3);
    assert_int_equal(d.classes, 10);
    assert_int_equal(dataset_image_floats(&d), 32 * 32 * 3);
    int64_t order[] = {6, 0, 3, 3, 1};
    check_samples(&d, order, 5);
    int64_t outside[] = {0, 7};
    float scratch[2 * 32 * 32 * 3];
    int32_t labels[2];
    assert_int_equal(d.read(&d, scratch, labels, outside, 2, err, sizeof err), -1);
    assert_non_null(strstr(err, "out of range"));
    dataset_close(&d);
    assert_null(d.impl);

    assert_int_equal(dataset_open_fashion_mnist(&d, dir, 0, err, sizeof err), 0);
    assert_int_equal(d.count, 3);
    int64_t all[] = {0, 1, 2};
    check_samples(&d, all, 3);
    dataset_close(&d);

    free_fixture(&train);
    free_fixture(&test);
    test_rmtree(dir);
}

static void test_exact_values_gz(void **state) {
    exact_values(1);
}

static void test_exact_values_plain(void **state) {
    exact_values(0);
}

/* Opening the training split of `dir` fails, naming `file` and saying `reason`. */
static void expect_failure(const char *dir, const char *file, const char *reason) {
    char err[1024] = "";
    dataset d;
    assert_int_equal(dataset_open_fashion_mnist(&d, dir, 1, err, sizeof err), -1);
    if (!strstr(err, file) || !strstr(err, reason))
        fail_msg("message \"%s\" should name %s and say %s", err, file, reason);
    assert_null(d.impl);
}

typedef void (*corruption)(idx_fixture *f);
static void bad_image_magic(idx_fixture *f) { put_be32(f->images, 0x00000801); }
static void bad_label_magic(idx_fixture *f) { put_be32(f->labels, 0x00000803); }
static void label_out_of_range(idx_fixture *f) { f->labels[8 + 2] = 10; }
static void images_truncated(idx_fixture *f) { f->images_size -= 100; }
static void labels_truncated(idx_fixture *f) { f->labels_size -= 1; }
static void header_truncated(idx_fixture *f) { f->images_size = 10; }
static void count_mismatch(idx_fixture *f) { put_be32(f->labels + 4, 4); f->labels_size = 12; }
static void trailing_bytes(idx_fixture *f) {
    f->images = realloc(f->images, f->images_size + 3);
    memset(f->images + f->images_size, 0, 3);
    f->images_size += 3;
}

static void test_corrupt_files(void **state) {
    struct {
        corruption corrupt;
        const char *file, *reason;
    } cases[] = {
        {bad_image_magic, "train-images-idx3-ubyte", "magic"},
        {bad_label_magic, "train-labels-idx1-ubyte", "magic"},
        {label_out_of_range, "train-labels-idx1-ubyte", "out of range"},
        {images_truncated, "train-images-idx3-ubyte", "truncated"},
        {labels_truncated, "train-labels-idx1-ubyte", "truncated"},
        {header_truncated, "train-images-idx3-ubyte", "header"},
        {count_mismatch, "train-labels-idx1-ubyte", "must match"},
        {trailing_bytes, "train-images-idx3-ubyte", "trailing"},
    };
    for (int gz = 0; gz < 2; gz++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char dir[512];
            test_tmpdir(dir, sizeof dir);
            idx_fixture f = make_fixture(5, 28, 28);
            cases[i].corrupt(&f);
            write_split(dir, "train", &f, gz);
            expect_failure(dir, cases[i].file, cases[i].reason);
            free_fixture(&f);
            test_rmtree(dir);
        }
}

static void test_wrong_dims(void **state) {
    char dir[512];
    test_tmpdir(dir, sizeof dir);
    idx_fixture f = make_fixture(2, 32, 28);
    write_split(dir, "train", &f, 1);
    expect_failure(dir, "train-images-idx3-ubyte", "expected 28x28");
    free_fixture(&f);
    test_rmtree(dir);
}

static void test_missing(void **state) {
    char dir[512], missing[600];
    test_tmpdir(dir, sizeof dir);
    snprintf(missing, sizeof missing, "%s/absent", dir);
    expect_failure(missing, missing, "t10k-labels-idx1-ubyte.gz");

    idx_fixture f = make_fixture(2, 28, 28);
    char path[1024];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    write_file(path, f.images, f.images_size, 1);
    expect_failure(dir, "train-labels-idx1-ubyte.gz", "not found");
    remove(path);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
    write_file(path, f.labels, f.labels_size, 0);
    expect_failure(dir, "train-images-idx3-ubyte.gz", "not found");
    free_fixture(&f);
    test_rmtree(dir);
}

/* A gzip stream cut in the middle is reported as such, with the path. */
static void test_truncated_gzip(void **state) {
    char dir[512], path[1024];
    test_tmpdir(dir, sizeof dir);
    idx_fixture f = make_fixture(20, 28, 28);
    for (size_t i = 16; i < f.images_size; i++) f.images[i] = (uint8_t)(i * 2654435761u >> 13);
    write_split(dir, "train", &f, 1);
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size / 2), 0);
    expect_failure(dir, "train-images-idx3-ubyte.gz", "gzip");
    free_fixture(&f);
    test_rmtree(dir);
}

/* The data set as installed: known sizes, balanced labels, and the normalisation gives the
 * un-padded pixels mean 0 and std 1 over the training set (that is what the mean/std are for). */
static void test_installed(void **state) {
    struct stat st;
    if (stat(FASHION_MNIST_DEFAULT_ROOT, &st) != 0) {
        printf("%s absent: installed data not checked\n", FASHION_MNIST_DEFAULT_ROOT);
        skip();
    }
    char err[1024] = "";
    for (int train = 1; train >= 0; train--) {
        dataset d;
        if (dataset_open_fashion_mnist(&d, NULL, train, err, sizeof err) != 0) fail_msg("%s", err);
        int64_t expected = train ? 60000 : 10000;
        assert_int_equal(d.count, expected);
        enum { CHUNK = 1000 };
        float *images = malloc((size_t)CHUNK * SIDE * SIDE * 3 * sizeof(float));
        int32_t labels[CHUNK];
        int64_t indices[CHUNK], per_class[10] = {0};
        double sum = 0, sum_sq = 0;
        for (int64_t start = 0; start < d.count; start += CHUNK) {
            for (int k = 0; k < CHUNK; k++) indices[k] = start + k;
            assert_int_equal(d.read(&d, images, labels, indices, CHUNK, err, sizeof err), 0);
            for (int k = 0; k < CHUNK; k++) {
                assert_in_range(labels[k], 0, 9);
                per_class[labels[k]]++;
                for (int y = 2; y < 30; y++)
                    for (int x = 2; x < 30; x++) {
                        double v = images[(((size_t)k * SIDE + y) * SIDE + x) * 3];
                        sum += v;
                        sum_sq += v * v;
                    }
            }
        }
        for (int c = 0; c < 10; c++) assert_int_equal(per_class[c], expected / 10);
        double n = (double)d.count * 28 * 28, mean = sum / n, std = sqrt(sum_sq / n - mean * mean);
        printf("%s: %lld samples, normalised mean %.4f std %.4f\n", train ? "train" : "test",
               (long long)d.count, mean, std);
        if (train) {
            expect_lt(fabs(mean), 0.005);
            expect_lt(fabs(std - 1.0), 0.01);
        }
        free(images);
        dataset_close(&d);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_values_gz),
        cmocka_unit_test(test_exact_values_plain),
        cmocka_unit_test(test_corrupt_files),
        cmocka_unit_test(test_wrong_dims),
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_truncated_gzip),
        cmocka_unit_test(test_installed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
