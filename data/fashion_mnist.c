/* Fashion-MNIST from its IDX files (gzipped as distributed, or plain). The 28x28 grey images stay
 * in memory as bytes (47 MB for the training set); read() turns each requested one into what the
 * models see: padded to 32x32 with black (as torchvision's Pad(2) before ToTensor), scaled to
 * [0, 1], normalised with the training set's mean and std, and replicated to 3 channels (NHWC).
 * Every field of the files is checked, so a corrupt download is reported, never read past. */
#include "data/dataset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FM_ROWS 28
#define FM_COLS 28
#define FM_PAD 2
#define FM_SIDE (FM_ROWS + 2 * FM_PAD)
#define FM_CHANNELS 3
#define FM_CLASSES 10
#define FM_MEAN 0.2860f
#define FM_STD 0.3530f
#define IDX_IMAGES_MAGIC 0x00000803u /* unsigned bytes, 3 dimensions */
#define IDX_LABELS_MAGIC 0x00000801u /* unsigned bytes, 1 dimension */
#define FM_MAX_IMAGES_BYTES ((size_t)1 << 30)
#define FM_MAX_LABELS_BYTES ((size_t)1 << 26)

typedef struct fashion_mnist {
    uint8_t *pixels;        /* [count, 28, 28] */
    uint8_t *labels;        /* [count] */
    float normalised[256];  /* grey level -> (level / 255 - mean) / std */
} fashion_mnist;

static uint32_t read_be32(const uint8_t *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks the magic number and reads the dimensions of an IDX header; *header_bytes is where the
 * data begins. */
static int parse_idx_header(const uint8_t *bytes, size_t size, const char *name, uint32_t magic,
                            const char *what, uint32_t *dims, int ndims, size_t *header_bytes,
                            char *err, size_t err_size) {
    size_t need = 4 + 4 * (size_t)ndims;
    if (size < 4) {
        snprintf(err, err_size, "%s: %zu bytes, too short for an IDX header (expected %s)", name,
                 size, what);
        return -1;
    }
    uint32_t found = read_be32(bytes);
    if (found != magic) {
        snprintf(err, err_size, "%s: bad magic number 0x%08x, expected 0x%08x (IDX %s)", name,
                 found, magic, what);
        return -1;
    }
    if (size < need) {
        snprintf(err, err_size, "%s: truncated IDX header (%zu bytes, expected at least %zu)", name,
                 size, need);
        return -1;
    }
    for (int i = 0; i < ndims; i++) dims[i] = read_be32(bytes + 4 + 4 * i);
    *header_bytes = need;
    return 0;
}

static int fm_read(const dataset *d, float *images, int32_t *labels, const int64_t *indices, int n,
                   char *err, size_t err_size) {
    const fashion_mnist *fm = d->impl;
    const float pad = fm->normalised[0];
    for (int k = 0; k < n; k++) {
        int64_t index = indices[k];
        if (dataset_check_index(d, index, err, err_size)) return -1;
        const uint8_t *src = fm->pixels + (size_t)index * FM_ROWS * FM_COLS;
        float *out = images + (size_t)k * FM_SIDE * FM_SIDE * FM_CHANNELS;
        for (int y = 0; y < FM_SIDE; y++) {
            int row = y - FM_PAD;
            for (int x = 0; x < FM_SIDE; x++) {
                int col = x - FM_PAD;
                float v = (row >= 0 && row < FM_ROWS && col >= 0 && col < FM_COLS)
                              ? fm->normalised[src[row * FM_COLS + col]]
                              : pad;
                out[0] = v;
                out[1] = v;
                out[2] = v;
                out += FM_CHANNELS;
            }
        }
        labels[k] = fm->labels[index];
    }
    return 0;
}

static void fm_close(dataset *d) {
    fashion_mnist *fm = d->impl;
    if (!fm) return;
    free(fm->pixels);
    free(fm->labels);
    free(fm);
    d->impl = NULL;
}

int dataset_open_fashion_mnist_memory(dataset *d, const uint8_t *images, size_t images_size,
                                      const char *images_name, const uint8_t *labels,
                                      size_t labels_size, const char *labels_name, char *err,
                                      size_t err_size) {
    memset(d, 0, sizeof *d);
    uint32_t image_dims[3], label_dims[1];
    size_t image_header, label_header;
    if (parse_idx_header(images, images_size, images_name, IDX_IMAGES_MAGIC,
                         "unsigned-byte images, 3 dimensions", image_dims, 3, &image_header, err,
                         err_size) != 0)
        return -1;
    if (parse_idx_header(labels, labels_size, labels_name, IDX_LABELS_MAGIC,
                         "unsigned-byte labels, 1 dimension", label_dims, 1, &label_header, err,
                         err_size) != 0)
        return -1;
    uint64_t count = image_dims[0];
    if (image_dims[1] != FM_ROWS || image_dims[2] != FM_COLS) {
        snprintf(err, err_size, "%s: images are %ux%u, expected %dx%d", images_name, image_dims[1],
                 image_dims[2], FM_ROWS, FM_COLS);
        return -1;
    }
    if (count == 0) {
        snprintf(err, err_size, "%s: holds 0 images, expected at least one", images_name);
        return -1;
    }
    uint64_t pixel_bytes = count * FM_ROWS * FM_COLS; /* count < 2^32: cannot overflow */
    if ((uint64_t)images_size != image_header + pixel_bytes) {
        snprintf(err, err_size, "%s: %zu bytes, expected %llu for %llu images of %dx%d (%s)",
                 images_name, images_size, (unsigned long long)(image_header + pixel_bytes),
                 (unsigned long long)count, FM_ROWS, FM_COLS,
                 (uint64_t)images_size < image_header + pixel_bytes ? "truncated" : "trailing data");
        return -1;
    }
    if (label_dims[0] != count) {
        snprintf(err, err_size, "%s: holds %u labels but %s holds %llu images; they must match",
                 labels_name, label_dims[0], images_name, (unsigned long long)count);
        return -1;
    }
    if ((uint64_t)labels_size != label_header + count) {
        snprintf(err, err_size, "%s: %zu bytes, expected %llu for %llu labels (%s)", labels_name,
                 labels_size, (unsigned long long)(label_header + count), (unsigned long long)count,
                 (uint64_t)labels_size < label_header + count ? "truncated" : "trailing data");
        return -1;
    }
    for (uint64_t i = 0; i < count; i++) {
        uint8_t label = labels[label_header + i];
        if (label >= FM_CLASSES) {
            snprintf(err, err_size, "%s: label %u of sample %llu is out of range (expected 0..%d)",
                     labels_name, label, (unsigned long long)i, FM_CLASSES - 1);
            return -1;
        }
    }

    fashion_mnist *fm = calloc(1, sizeof *fm);
    if (fm) {
        fm->pixels = malloc(pixel_bytes);
        fm->labels = malloc(count);
    }
    if (!fm || !fm->pixels || !fm->labels) {
        snprintf(err, err_size, "%s: out of memory holding %llu images", images_name,
                 (unsigned long long)count);
        if (fm) {
            free(fm->pixels);
            free(fm->labels);
        }
        free(fm);
        return -1;
    }
    memcpy(fm->pixels, images + image_header, pixel_bytes);
    memcpy(fm->labels, labels + label_header, count);
    for (int level = 0; level < 256; level++)
        fm->normalised[level] = ((float)level / 255.0f - FM_MEAN) / FM_STD;

    snprintf(d->name, sizeof d->name, "fashion_mnist");
    d->count = (int64_t)count;
    d->height = FM_SIDE;
    d->width = FM_SIDE;
    d->channels = FM_CHANNELS;
    d->classes = FM_CLASSES;
    d->read = fm_read;
    d->close = fm_close;
    d->impl = fm;
    return 0;
}

static const char *expected_files =
    "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and "
    "t10k-labels-idx1-ubyte.gz (gzipped, or the same names without .gz)";

/* root/base.gz, else root/base uncompressed; -1 with a message naming both when neither exists. */
static int find_file(const char *root, const char *base, char *path, size_t path_size, char *err,
                     size_t err_size) {
    for (int gz = 1; gz >= 0; gz--) {
        snprintf(path, path_size, "%s/%s%s", root, base, gz ? ".gz" : "");
        dataset_file there = dataset_file_status(path, err, err_size);
        if (there == DATASET_FILE_REGULAR) return 0;
        if (there == DATASET_FILE_BAD) return -1; /* a FIFO, a folder, a device of that name */
    }
    snprintf(err, err_size,
             "Fashion-MNIST: %s/%s.gz not found (nor %s/%s); the folder should hold %s", root,
             base, root, base, expected_files);
    return -1;
}

int dataset_open_fashion_mnist(dataset *d, const char *root, int train, char *err,
                               size_t err_size) {
    memset(d, 0, sizeof *d);
    if (!root || !*root) root = FASHION_MNIST_DEFAULT_ROOT;
    struct stat st;
    if (stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "Fashion-MNIST: folder %s %s; expected it to hold %s", root,
                 stat(root, &st) != 0 ? "not found" : "is not a folder", expected_files);
        return -1;
    }
    const char *split = train ? "train" : "t10k";
    char images_base[64], labels_base[64], images_path[4096], labels_path[4096];
    snprintf(images_base, sizeof images_base, "%s-images-idx3-ubyte", split);
    snprintf(labels_base, sizeof labels_base, "%s-labels-idx1-ubyte", split);
    if (find_file(root, images_base, images_path, sizeof images_path, err, err_size) != 0 ||
        find_file(root, labels_base, labels_path, sizeof labels_path, err, err_size) != 0)
        return -1;

    uint8_t *images = NULL, *labels = NULL;
    size_t images_size = 0, labels_size = 0;
    int status = -1;
    if (dataset_read_file(images_path, FM_MAX_IMAGES_BYTES, &images, &images_size, err,
                          err_size) == 0 &&
        dataset_read_file(labels_path, FM_MAX_LABELS_BYTES, &labels, &labels_size, err,
                          err_size) == 0)
        status = dataset_open_fashion_mnist_memory(d, images, images_size, images_path, labels,
                                                   labels_size, labels_path, err, err_size);
    free(images);
    free(labels);
    return status;
}

int dataset_fashion_mnist_present(const char *root) {
    if (!root || !*root) root = FASHION_MNIST_DEFAULT_ROOT;
    static const char *const bases[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                        "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    char path[4096];
    for (size_t b = 0; b < sizeof bases / sizeof *bases; b++)
        for (int gz = 1; gz >= 0; gz--) { /* there in any form: present, then checked */
            snprintf(path, sizeof path, "%s/%s%s", root, bases[b], gz ? ".gz" : "");
            if (dataset_file_status(path, NULL, 0) != DATASET_FILE_ABSENT) return 1;
        }
    return 0;
}
