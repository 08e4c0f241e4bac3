/* CIFAR-10, binary version: each file is a run of 3073-byte records (a label byte, then the
 * 32x32 red, green and blue planes, row-major). The records stay in memory as they are on disk
 * (150 MB for the training set); read() interleaves the planes into NHWC and normalises each
 * channel with the usual CIFAR-10 mean and std (as torchvision's ToTensor + Normalize). */
#include "data/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define C10_SIDE 32
#define C10_PLANE (C10_SIDE * C10_SIDE)
#define C10_CHANNELS 3
#define C10_CLASSES 10
#define C10_TRAIN_FILES 5
#define C10_MAX_FILE_BYTES ((size_t)1 << 30)

static const float c10_mean[C10_CHANNELS] = {0.4914f, 0.4822f, 0.4465f};
static const float c10_std[C10_CHANNELS] = {0.2470f, 0.2435f, 0.2616f};

typedef struct cifar10 {
    uint8_t *records;                       /* [count, 3073] as in the files */
    float normalised[C10_CHANNELS][256];    /* channel, level -> (level / 255 - mean) / std */
} cifar10;

/* A file's bytes must be whole records with labels 0..9; messages name the file and record. */
static int check_records(const uint8_t *bytes, size_t size, const char *name, char *err,
                         size_t err_size) {
    if (size == 0) {
        snprintf(err, err_size, "%s: empty, expected records of %d bytes", name,
                 CIFAR10_RECORD_BYTES);
        return -1;
    }
    size_t whole = size / CIFAR10_RECORD_BYTES, rest = size % CIFAR10_RECORD_BYTES;
    if (rest != 0) {
        snprintf(err, err_size,
                 "%s: %zu bytes is not a whole number of %d-byte records (record %zu is cut "
                 "short: %zu of %d bytes)",
                 name, size, CIFAR10_RECORD_BYTES, whole, rest, CIFAR10_RECORD_BYTES);
        return -1;
    }
    for (size_t r = 0; r < whole; r++) {
        uint8_t label = bytes[r * CIFAR10_RECORD_BYTES];
        if (label >= C10_CLASSES) {
            snprintf(err, err_size, "%s: record %zu has label %u, expected 0..%d", name, r, label,
                     C10_CLASSES - 1);
            return -1;
        }
    }
    return 0;
}

static int c10_read(const dataset *d, float *images, int32_t *labels, const int64_t *indices,
                    int n, char *err, size_t err_size) {
    const cifar10 *c = d->impl;
    for (int k = 0; k < n; k++) {
        int64_t index = indices[k];
        if (dataset_check_index(d, index, err, err_size)) return -1;
        const uint8_t *record = c->records + (size_t)index * CIFAR10_RECORD_BYTES;
        dataset_planes_to_nhwc(images + (size_t)k * C10_PLANE * C10_CHANNELS, record + 1, C10_PLANE,
                               (const float(*)[256])c->normalised);
        labels[k] = record[0];
    }
    return 0;
}

static void c10_close(dataset *d) {
    cifar10 *c = d->impl;
    if (!c) return;
    free(c->records);
    free(c);
    d->impl = NULL;
}

/* Takes ownership of records (already checked), whatever the outcome. */
static int c10_build(dataset *d, uint8_t *records, size_t size, char *err, size_t err_size) {
    cifar10 *c = calloc(1, sizeof *c);
    if (!c) {
        free(records);
        snprintf(err, err_size, "CIFAR-10: out of memory");
        return -1;
    }
    c->records = records;
    dataset_rgb_lut(c->normalised, c10_mean, c10_std);
    snprintf(d->name, sizeof d->name, "cifar10");
    d->count = (int64_t)(size / CIFAR10_RECORD_BYTES);
    d->height = C10_SIDE;
    d->width = C10_SIDE;
    d->channels = C10_CHANNELS;
    d->classes = C10_CLASSES;
    d->read = c10_read;
    d->close = c10_close;
    d->impl = c;
    return 0;
}

int dataset_open_cifar10_memory(dataset *d, const uint8_t *bytes, size_t size, const char *name,
                                char *err, size_t err_size) {
    memset(d, 0, sizeof *d);
    if (check_records(bytes, size, name, err, err_size) != 0) return -1;
    uint8_t *records = malloc(size);
    if (!records) {
        snprintf(err, err_size, "%s: out of memory holding %zu bytes", name, size);
        return -1;
    }
    memcpy(records, bytes, size);
    return c10_build(d, records, size, err, err_size);
}

static const char *expected_files =
    "data_batch_1.bin .. data_batch_5.bin and test_batch.bin (the binary version, "
    "cifar-10-binary.tar.gz), directly or under cifar-10-batches-bin/";


int dataset_open_cifar10(dataset *d, const char *root, int train, char *err, size_t err_size) {
    memset(d, 0, sizeof *d);
    struct stat st;
    if (!root || !*root || stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "CIFAR-10: folder %s %s; expected it to hold %s",
                 root && *root ? root : "(none given)",
                 root && *root && stat(root, &st) == 0 ? "is not a folder" : "not found",
                 expected_files);
        return -1;
    }
    int files = train ? C10_TRAIN_FILES : 1;
    char names[C10_TRAIN_FILES][32];
    for (int f = 0; f < files; f++) {
        if (train) snprintf(names[f], sizeof names[f], "data_batch_%d.bin", f + 1);
        else snprintf(names[f], sizeof names[f], "test_batch.bin");
    }
    char folder[4000], path[4096];
    if (strlen(root) + sizeof "/cifar-10-batches-bin" > sizeof folder) {
        snprintf(err, err_size, "CIFAR-10: folder path too long (%zu characters)", strlen(root));
        return -1;
    }
    /* The archive unpacks into cifar-10-batches-bin/; accept the root itself or that folder. */
    snprintf(folder, sizeof folder, "%s", root);
    snprintf(path, sizeof path, "%s/%s", folder, names[0]);
    if (dataset_file_status(path, NULL, 0) == DATASET_FILE_ABSENT) {
        char nested[sizeof folder];
        snprintf(nested, sizeof nested, "%s/cifar-10-batches-bin", root);
        snprintf(path, sizeof path, "%s/%s", nested, names[0]);
        if (dataset_file_status(path, NULL, 0) != DATASET_FILE_ABSENT) snprintf(folder, sizeof folder, "%s", nested);
    }

    uint8_t *all = NULL;
    size_t total = 0;
    for (int f = 0; f < files; f++) {
        snprintf(path, sizeof path, "%s/%s", folder, names[f]);
        dataset_file there = dataset_file_status(path, err, err_size); /* a FIFO or a folder of that name: bad */
        if (there == DATASET_FILE_ABSENT)
            snprintf(err, err_size, "CIFAR-10: %s not found; the folder should hold %s", path, expected_files);
        if (there != DATASET_FILE_REGULAR) {
            free(all);
            return -1;
        }
        uint8_t *bytes;
        size_t size;
        if (dataset_read_file(path, C10_MAX_FILE_BYTES, &bytes, &size, err, err_size) != 0) {
            free(all);
            return -1;
        }
        if (check_records(bytes, size, path, err, err_size) != 0) {
            free(bytes);
            free(all);
            return -1;
        }
        if (f == 0) {
            all = bytes;
            total = size;
            continue;
        }
        uint8_t *larger = realloc(all, total + size);
        if (!larger) {
            snprintf(err, err_size, "CIFAR-10: out of memory holding %zu bytes", total + size);
            free(bytes);
            free(all);
            return -1;
        }
        all = larger;
        memcpy(all + total, bytes, size);
        total += size;
        free(bytes);
    }
    return c10_build(d, all, total, err, err_size);
}

int dataset_cifar10_present(const char *root) {
    if (!root || !*root) return 0;
    static const char *const folders[] = {"", "/cifar-10-batches-bin"};
    char path[4096];
    for (int f = 0; f < 2; f++)
        for (int file = 0; file <= C10_TRAIN_FILES; file++) {
            if (file < C10_TRAIN_FILES) snprintf(path, sizeof path, "%s%s/data_batch_%d.bin", root, folders[f], file + 1);
            else snprintf(path, sizeof path, "%s%s/test_batch.bin", root, folders[f]);
            if (dataset_file_status(path, NULL, 0) != DATASET_FILE_ABSENT) return 1; /* there, in any form */
        }
    return 0;
}
