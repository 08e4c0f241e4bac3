/* ImageNet 64x64 reader: .npz files written here with libzip (members stored and deflated, labels
 * of several integer types and byte orders, .npy format 1.0 and 2.0) must come back as NHWC,
 * normalised exactly with the ImageNet mean and std, labels 1..1000 as 0..999, across file
 * boundaries and in both folder layouts; wrong dtypes, shapes, label values and counts, truncated
 * and corrupted archives and missing files must be refused with a message naming the file (and
 * the member, and the record where there is one). */
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
#include <zip.h>

#include "data/dataset.h"
#include "tests/support/testutil.h"

#define IMG 12288
static const double mean[3] = {0.485, 0.456, 0.406};
static const double stdev[3] = {0.229, 0.224, 0.225};
static const int train_counts[10] = {2, 1, 3, 1, 1, 2, 1, 1, 1, 2}; /* 15 images */
static const char *const label_types[5] = {"<i8", "<i4", "|u1", "<u2", ">i2"};

static int label_of(int g) { return (g * 37) % 1000 + 1; } /* g = 27 gives 1000, g = 0 gives 1 */

static uint8_t level_of(int g, int c, int p) {
    return (uint8_t)(g * 31 + c * 77 + p * 7 + (p >> 6) * 3);
}

/* A .npy file: header (format 1.0, or 2.0 with a 4-byte length) padded to 64 bytes, then data. */
static uint8_t *make_npy(const char *dict, int version, const void *data, size_t data_size,
                         size_t *size) {
    size_t prefix = version == 1 ? 10 : 12, dict_length = strlen(dict);
    size_t total_header = (prefix + dict_length + 1 + 63) / 64 * 64;
    uint8_t *bytes = malloc(total_header + data_size + 1);
    memcpy(bytes, "\x93NUMPY", 6);
    bytes[6] = (uint8_t)version;
    bytes[7] = 0;
    size_t header_length = total_header - prefix;
    bytes[8] = (uint8_t)header_length;
    bytes[9] = (uint8_t)(header_length >> 8);
    if (version != 1) bytes[10] = bytes[11] = 0;
    memset(bytes + prefix, ' ', header_length);
    memcpy(bytes + prefix, dict, dict_length);
    bytes[total_header - 1] = '\n';
    if (data_size) memcpy(bytes + total_header, data, data_size);
    *size = total_header + data_size;
    return bytes;
}

/* Images first..first+count-1 as data.npy. */
static uint8_t *make_data_npy(int first, int count, int version, size_t *size) {
    uint8_t *pixels = malloc((size_t)count * IMG);
    for (int i = 0; i < count; i++)
        for (int c = 0; c < 3; c++)
            for (int p = 0; p < 4096; p++)
                pixels[(size_t)i * IMG + c * 4096 + p] = level_of(first + i, c, p);
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '|u1', 'fortran_order': False, 'shape': (%d, %d), }",
             count, IMG);
    uint8_t *npy = make_npy(dict, version, pixels, (size_t)count * IMG, size);
    free(pixels);
    return npy;
}

/* Labels of images first.. as the given numpy type ('<i8', '|u1', '>i2', ...). */
static uint8_t *make_labels_npy(int first, int count, const char *type, size_t *size) {
    int bytes = type[2] - '0', big = type[0] == '>';
    uint8_t *raw = calloc((size_t)count, (size_t)bytes);
    for (int i = 0; i < count; i++) {
        uint64_t v = (uint64_t)label_of(first + i);
        if (type[1] == 'u' && bytes == 1) v = (uint64_t)(label_of(first + i) % 250 + 1);
        for (int b = 0; b < bytes; b++)
            raw[(size_t)i * bytes + (big ? bytes - 1 - b : b)] = (uint8_t)(v >> (8 * b));
    }
    char dict[128];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }", type,
             count);
    uint8_t *npy = make_npy(dict, 1, raw, (size_t)count * bytes, size);
    free(raw);
    return npy;
}

/* The label a reader must deliver for image g stored with type. */
static int expected_label(int g, const char *type) {
    return (type[1] == 'u' && type[2] == '1' ? label_of(g) % 250 + 1 : label_of(g)) - 1;
}

/* An .npz of the two members (either may be NULL: left out), each stored or deflated. */
static void write_npz(const char *path, uint8_t *data, size_t data_size, int data_deflate,
                      uint8_t *labels, size_t labels_size, int labels_deflate) {
    int code = 0;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &code);
    assert_non_null(z);
    const char *names[2] = {"data.npy", "labels.npy"};
    uint8_t *buffers[2] = {data, labels};
    size_t sizes[2] = {data_size, labels_size};
    int deflate[2] = {data_deflate, labels_deflate};
    for (int m = 0; m < 2; m++) {
        if (!buffers[m]) continue;
        zip_source_t *s = zip_source_buffer(z, buffers[m], sizes[m], 0);
        assert_non_null(s);
        zip_int64_t index = zip_file_add(z, names[m], s, ZIP_FL_OVERWRITE);
        expect_ge(index, 0);
        assert_int_equal(zip_set_file_compression(z, (zip_uint64_t)index,
                                                  deflate[m] ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0),
                         0);
    }
    assert_int_equal(zip_close(z), 0);
}

/* File f of a fixture: images first..first+count-1, members stored or deflated by f. */
static void write_fixture_file(const char *path, int first, int count, int f) {
    size_t data_size, labels_size;
    uint8_t *data = make_data_npy(first, count, f % 3 == 2 ? 2 : 1, &data_size);
    uint8_t *labels = make_labels_npy(first, count, label_types[f % 5], &labels_size);
    write_npz(path, data, data_size, f % 2, labels, labels_size, f % 4 < 2);
    free(data);
    free(labels);
}

static void write_fixture(const char *dir) {
    char path[1024];
    for (int f = 0, first = 0; f < 10; first += train_counts[f], f++) {
        snprintf(path, sizeof path, "%s/train_data_batch_%d.npz", dir, f + 1);
        write_fixture_file(path, first, train_counts[f], f);
    }
    snprintf(path, sizeof path, "%s/val_data.npz", dir);
    write_fixture_file(path, 100, 4, 1);
}

/* Checks the samples at indices against images first + (file-local numbering) of the fixture. */
static void check_samples(const dataset *d, const int64_t *indices, int n, const int *global,
                          const int *file_of) {
    float *images = malloc((size_t)n * IMG * sizeof(float));
    int32_t *labels = malloc((size_t)n * sizeof(int32_t));
    char err[512] = "";
    if (d->read(d, images, labels, indices, n, err, sizeof err) != 0) fail_msg("%s", err);
    for (int k = 0; k < n; k++) {
        int g = global[indices[k]];
        assert_int_equal(labels[k], expected_label(g, label_types[file_of[indices[k]] % 5]));
        for (int p = 0; p < 4096; p++)
            for (int c = 0; c < 3; c++) {
                double want = (level_of(g, c, p) / 255.0 - mean[c]) / stdev[c];
                float got = images[((size_t)k * 4096 + p) * 3 + c];
                if (fabs(got - want) > 1e-5)
                    fail_msg("image %d pixel %d channel %d: got %.7f, want %.7f", g, p, c, got,
                             want);
            }
    }
    free(images);
    free(labels);
}

static void check_fixture(const char *root) {
    int global[15], file_of[15];
    for (int f = 0, i = 0; f < 10; f++)
        for (int j = 0; j < train_counts[f]; j++, i++) {
            global[i] = i;
            file_of[i] = f;
        }
    char err[1024] = "";
    dataset d;
    if (dataset_open_imagenet64(&d, root, 1, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(d.count, 15);
    assert_int_equal(d.height, 64);
    assert_int_equal(d.width, 64);
    assert_int_equal(d.channels, 3);
    assert_int_equal(d.classes, 1000);
    int64_t order[] = {14, 0, 3, 2, 7, 8, 1, 13, 5, 4, 6, 9, 10, 11, 12};
    check_samples(&d, order, 15, global, file_of);
    int64_t outside[] = {15};
    float *image = malloc(IMG * sizeof(float));
    int32_t label;
    assert_int_equal(d.read(&d, image, &label, outside, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "out of range"));
    free(image);
    dataset_close(&d);

    if (dataset_open_imagenet64(&d, root, 0, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(d.count, 4);
    int val_global[4] = {100, 101, 102, 103}, val_file[4] = {1, 1, 1, 1};
    int64_t all[] = {3, 1, 0, 2};
    check_samples(&d, all, 4, val_global, val_file);
    dataset_close(&d);
}

static void test_exact_values(void **state) {
    char dir[512];
    test_tmpdir(dir, sizeof dir);
    write_fixture(dir);
    check_fixture(dir);
    test_rmtree(dir);
}

static void test_nested_folders(void **state) {
    char dir[512], train[600], val[600], from[1024], to[1024];
    test_tmpdir(dir, sizeof dir);
    snprintf(train, sizeof train, "%s/Imagenet64_train_npz", dir);
    snprintf(val, sizeof val, "%s/Imagenet64_val_npz", dir);
    assert_int_equal(mkdir(train, 0700), 0);
    assert_int_equal(mkdir(val, 0700), 0);
    write_fixture(train);
    snprintf(from, sizeof from, "%s/val_data.npz", train);
    snprintf(to, sizeof to, "%s/val_data.npz", val);
    assert_int_equal(rename(from, to), 0);
    check_fixture(dir);
    test_rmtree(dir);
}

/* A subset of files, in the order given; the same file from memory. */
static void test_files_and_memory(void **state) {
    char dir[512], a[600], b[600];
    test_tmpdir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/a.npz", dir);
    snprintf(b, sizeof b, "%s/b.npz", dir);
    write_fixture_file(a, 0, 3, 0);
    write_fixture_file(b, 3, 2, 1);
    const char *paths[] = {b, a};
    char err[512] = "";
    dataset d;
    if (dataset_open_imagenet64_files(&d, paths, 2, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(d.count, 5);
    int global[5] = {3, 4, 0, 1, 2}, file_of[5] = {1, 1, 0, 0, 0};
    int64_t all[] = {0, 1, 2, 3, 4};
    check_samples(&d, all, 5, global, file_of);
    dataset_close(&d);

    uint8_t *bytes;
    size_t size;
    assert_int_equal(dataset_read_file(a, 1 << 24, &bytes, &size, err, sizeof err), 0);
    if (dataset_open_imagenet64_memory(&d, bytes, size, "mem.npz", err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(d.count, 3);
    int global_a[3] = {0, 1, 2}, file_a[3] = {0, 0, 0};
    int64_t three[] = {2, 0, 1};
    check_samples(&d, three, 3, global_a, file_a);
    dataset_close(&d);
    /* cut short: the zip directory at its end is gone */
    assert_int_equal(dataset_open_imagenet64_memory(&d, bytes, size / 2, "mem.npz", err,
                                                    sizeof err), -1);
    assert_non_null(strstr(err, "mem.npz: not a readable .npz"));
    free(bytes);
    test_rmtree(dir);
}

static void expect_refused(const char *path, const char *part1, const char *part2) {
    char err[1024] = "";
    dataset d;
    assert_int_equal(dataset_open_imagenet64_files(&d, &path, 1, err, sizeof err), -1);
    if (!strstr(err, part1) || !strstr(err, part2))
        fail_msg("message \"%s\" should contain \"%s\" and \"%s\"", err, part1, part2);
    assert_null(d.impl);
}

/* An .npz from a data dict and a labels dict with the given payloads. */
static void write_custom(const char *path, const char *data_dict, size_t data_bytes,
                         const char *labels_dict, const void *labels, size_t labels_bytes,
                         int deflate) {
    uint8_t *pixels = calloc(1, data_bytes + 1);
    size_t data_size = 0, labels_size = 0;
    uint8_t *data = data_dict ? make_npy(data_dict, 1, pixels, data_bytes, &data_size) : NULL;
    uint8_t *lab = labels_dict ? make_npy(labels_dict, 1, labels, labels_bytes, &labels_size)
                               : NULL;
    write_npz(path, data, data_size, deflate, lab, labels_size, deflate);
    free(pixels);
    free(data);
    free(lab);
}

static void test_corrupt_files(void **state) {
    char dir[512], path[700];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bad.npz", dir);
    const char *good_data = "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 12288), }";
    const char *good_labels = "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }";
    int64_t labels[2] = {1, 1000};

    write_custom(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 12288), }",
                 2 * IMG * 4, good_labels, labels, 16, 0);
    expect_refused(path, "bad.npz: data.npy is f4", "expected uint8 (N, 12288)");
    write_custom(path, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 64, 64, 3), }",
                 2 * IMG, good_labels, labels, 16, 1);
    expect_refused(path, "data.npy is u1 (2, 64, 64, 3)", "expected uint8 (N, 12288)");
    write_custom(path, "{'descr': '|u1', 'fortran_order': True, 'shape': (2, 12288), }", 2 * IMG,
                 good_labels, labels, 16, 0);
    expect_refused(path, "fortran_order True", "C order");
    write_custom(path, "{'descr': '|u1', 'fortran_order': False, 'shape': (3, 12288), }",
                 2 * IMG, good_labels, labels, 16, 0);
    expect_refused(path, "declares 3 images", "holds 24576 bytes");
    write_custom(path, good_data, 2 * IMG, "{'descr': '<f8', 'fortran_order': False, "
                 "'shape': (2,), }", labels, 16, 0);
    expect_refused(path, "labels.npy is f8", "integer");
    write_custom(path, good_data, 2 * IMG, "{'descr': '<i8', 'fortran_order': False, "
                 "'shape': (1,), }", labels, 8, 1);
    expect_refused(path, "labels.npy holds 1 labels", "for 2 images");
    int64_t out_of_range[2] = {1000, 1001};
    write_custom(path, good_data, 2 * IMG, good_labels, out_of_range, 16, 1);
    expect_refused(path, "labels.npy: record 1 has label 1001", "1..1000");
    int64_t zero[2] = {0, 5};
    write_custom(path, good_data, 2 * IMG, good_labels, zero, 16, 0);
    expect_refused(path, "record 0 has label 0", "1..1000");
    write_custom(path, good_data, 2 * IMG, NULL, NULL, 0, 0);
    expect_refused(path, "bad.npz: no labels.npy", "data.npy and labels.npy");
    write_custom(path, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 12288), 'x': 1}",
                 2 * IMG, good_labels, labels, 16, 0);
    expect_refused(path, "bad.npz: data.npy", "unexpected key 'x'");
    write_custom(path, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 12288 }", 2 * IMG,
                 good_labels, labels, 16, 0);
    expect_refused(path, "bad.npz: data.npy", "malformed .npy header");

    /* a stored member with one pixel changed on disk: libzip's CRC check catches it */
    write_custom(path, good_data, 2 * IMG, good_labels, labels, 16, 0);
    uint8_t *bytes;
    size_t size;
    char err[512];
    assert_int_equal(dataset_read_file(path, 1 << 24, &bytes, &size, err, sizeof err), 0);
    uint8_t *magic = memmem(bytes, size, "\x93NUMPY", 6);
    assert_non_null(magic);
    magic[128 + 5000] ^= 0x40;
    FILE *f = fopen(path, "wb");
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    fclose(f);
    expect_refused(path, "bad.npz: data.npy", "CRC");
    /* the same file cut in the middle */
    f = fopen(path, "wb");
    assert_int_equal(fwrite(bytes, 1, size / 2, f), size / 2);
    fclose(f);
    expect_refused(path, "bad.npz", "not a readable .npz");
    free(bytes);

    /* a plain .npy is not an archive */
    size_t npy_size;
    uint8_t *npy = make_data_npy(0, 1, 1, &npy_size);
    f = fopen(path, "wb");
    assert_int_equal(fwrite(npy, 1, npy_size, f), npy_size);
    fclose(f);
    free(npy);
    expect_refused(path, "bad.npz", "Not a zip archive");
    test_rmtree(dir);
}

static void test_missing_files(void **state) {
    char dir[512], path[700], err[1024];
    dataset d;
    test_tmpdir(dir, sizeof dir);
    write_fixture(dir);
    snprintf(path, sizeof path, "%s/train_data_batch_7.npz", dir);
    assert_int_equal(remove(path), 0);
    assert_int_equal(dataset_open_imagenet64(&d, dir, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "train_data_batch_7.npz not found"));
    assert_non_null(strstr(err, "val_data.npz"));
    assert_int_equal(dataset_open_imagenet64(&d, dir, 0, err, sizeof err), 0); /* val still */
    dataset_close(&d);
    snprintf(path, sizeof path, "%s/absent", dir);
    assert_int_equal(dataset_open_imagenet64(&d, path, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "absent not found"));
    assert_non_null(strstr(err, "train_data_batch_1.npz"));
    snprintf(path, sizeof path, "%s/val_data.npz", dir);
    assert_int_equal(dataset_open_imagenet64(&d, path, 0, err, sizeof err), -1);
    assert_non_null(strstr(err, "is not a folder"));
    test_rmtree(dir);
}

static void expect_header(const char *dict, int version, const char *error_part) {
    size_t size;
    uint8_t *npy = make_npy(dict, version, NULL, 0, &size);
    npy_header h;
    char err[512] = "";
    int status = npy_parse_header(&h, npy, size, "x.npy", err, sizeof err);
    free(npy);
    if (!error_part) {
        if (status != 0) fail_msg("%s: %s", dict, err);
        assert_int_equal(h.data_offset, size);
    } else if (status == 0 || !strstr(err, error_part) || !strstr(err, "x.npy")) {
        fail_msg("%s: expected an error with \"%s\", got %d \"%s\"", dict, error_part, status, err);
    }
}

static void test_npy_header(void **state) {
    size_t size;
    uint8_t *npy = make_npy("{\"descr\": \">i2\", \"fortran_order\": True, \"shape\": (), }", 2,
                            NULL, 0, &size);
    npy_header h;
    char err[512] = "";
    assert_int_equal(npy_parse_header(&h, npy, size, "x.npy", err, sizeof err), 0);
    assert_int_equal(h.kind, 'i');
    assert_int_equal(h.item_bytes, 2);
    assert_int_equal(h.big_endian, 1);
    assert_int_equal(h.fortran_order, 1);
    assert_int_equal(h.ndim, 0);
    assert_int_equal(h.data_offset, size);
    /* cut anywhere inside the header: refused, never read past */
    for (size_t cut = 0; cut < size; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, npy, cut);
        assert_int_equal(npy_parse_header(&h, copy, cut, "x.npy", err, sizeof err), -1);
        free(copy);
    }
    free(npy);
    expect_header("{'descr': '<u2', 'fortran_order': False, 'shape': (3, 4, 5)}", 1, NULL);
    expect_header("{'shape': (7,), 'descr': '|b1', 'fortran_order': False}", 1, NULL);
    expect_header("{'descr': '<u2', 'fortran_order': False}", 1, "lacks 'shape'");
    expect_header("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}", 1,
                  "structured");
    expect_header("{'descr': '<u', 'fortran_order': False, 'shape': (1,)}", 1, "descr '<u'");
    expect_header("{'descr': '<u1', 'fortran_order': Maybe, 'shape': (1,)}", 1, "malformed");
    expect_header("{'descr': '<u1', 'fortran_order': False, 'shape': (1, 2, 3, 4, 5, 6, 7, 8, "
                  "9)}", 1, "more than 8 dimensions");
    expect_header("{'descr': '<u1', 'fortran_order': False, 'shape': (-1,)}", 1, "malformed");
    uint8_t not_npy[16] = "\x93NUMPX\x01\x00\x04\x00{}  ";
    assert_int_equal(npy_parse_header(&h, not_npy, 16, "y.npy", err, sizeof err), -1);
    assert_non_null(strstr(err, "y.npy: not a .npy"));
    uint8_t version9[16] = "\x93NUMPY\x09\x00\x04\x00{}  ";
    assert_int_equal(npy_parse_header(&h, version9, 16, "y.npy", err, sizeof err), -1);
    assert_non_null(strstr(err, "version 9.0"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_values),
        cmocka_unit_test(test_nested_folders),
        cmocka_unit_test(test_files_and_memory),
        cmocka_unit_test(test_corrupt_files),
        cmocka_unit_test(test_missing_files),
        cmocka_unit_test(test_npy_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
