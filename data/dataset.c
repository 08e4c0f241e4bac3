/* What every data set shares: closing, image size, and reading a whole (possibly gzipped) file
 * for the readers, with size limits and messages that name the file. */
#include "data/dataset.h"
#include "base/file_kind.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

const float dataset_imagenet_mean[3] = {0.485f, 0.456f, 0.406f};
const float dataset_imagenet_std[3] = {0.229f, 0.224f, 0.225f};

void dataset_close(dataset *d) {
    if (d->close) d->close(d);
    memset(d, 0, sizeof *d);
}

size_t dataset_image_floats(const dataset *d) {
    return (size_t)d->height * d->width * d->channels;
}

dataset_file dataset_file_status(const char *path, char *err, size_t err_size) {
    char ignored[8];
    if (!err) err = ignored, err_size = sizeof ignored;
    struct stat st, link;
    if (stat(path, &st) != 0) {
        int e = errno;
        if ((e == ENOENT || e == ENOTDIR) && lstat(path, &link) != 0) return DATASET_FILE_ABSENT;
        snprintf(err, err_size, "%s: %s; expected a regular file of the data set", path,
                 e == ELOOP ? "is a symbolic link loop" : e == ENOENT ? "is a symbolic link to nothing" : strerror(e));
        return DATASET_FILE_BAD;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, err_size, "%s: is %s; expected a regular file of the data set", path, file_kind_name(st.st_mode));
        return DATASET_FILE_BAD;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, err_size, "%s: cannot be read: %s", path, strerror(errno));
        return DATASET_FILE_BAD;
    }
    close(fd);
    return DATASET_FILE_REGULAR;
}

int dataset_read_file(const char *path, size_t max_bytes, uint8_t **bytes, size_t *size,
                      char *err, size_t err_size) {
    *bytes = NULL;
    *size = 0;
    dataset_file there = dataset_file_status(path, err, err_size); /* gzopen would wait on a FIFO */
    if (there == DATASET_FILE_ABSENT) snprintf(err, err_size, "%s: cannot open: %s", path, strerror(ENOENT));
    if (there != DATASET_FILE_REGULAR) return -1;
    if (max_bytes > SIZE_MAX / 2) max_bytes = SIZE_MAX / 2; /* so max_bytes + 1 cannot wrap */
    errno = 0;
    gzFile file = gzopen(path, "rb");
    if (!file) {
        snprintf(err, err_size, "%s: cannot open: %s", path, errno ? strerror(errno) : "out of memory");
        return -1;
    }
    gzbuffer(file, 1 << 20);
    size_t capacity = 0, length = 0;
    uint8_t *buffer = NULL;
    for (;;) {
        if (length == capacity) {
            /* one byte past the limit is enough to know the file is too large */
            size_t grown = capacity ? capacity * 2 : (size_t)1 << 20;
            if (grown > max_bytes + 1) grown = max_bytes + 1;
            if (grown <= capacity) break;
            uint8_t *larger = realloc(buffer, grown);
            if (!larger) {
                snprintf(err, err_size, "%s: out of memory reading %zu bytes", path, grown);
                goto fail;
            }
            buffer = larger;
            capacity = grown;
        }
        size_t want = capacity - length;
        if (want > (1u << 30)) want = 1u << 30; /* gzread counts in unsigned int */
        int got = gzread(file, buffer + length, (unsigned)want);
        if (got < 0) break; /* reported below through gzerror */
        if (got == 0) break;
        length += (size_t)got;
    }
    int zstatus = Z_OK;
    const char *zmessage = gzerror(file, &zstatus);
    if (zstatus != Z_OK && zstatus != Z_STREAM_END) {
        snprintf(err, err_size, "%s: corrupt or truncated gzip data (%s)", path,
                 zstatus == Z_ERRNO ? strerror(errno) : zmessage);
        goto fail;
    }
    if (length > max_bytes) {
        snprintf(err, err_size, "%s: larger than the %zu bytes this data set can hold", path, max_bytes);
        goto fail;
    }
    gzclose_r(file);
    *bytes = buffer;
    *size = length;
    return 0;
fail:
    gzclose_r(file);
    free(buffer);
    return -1;
}

void dataset_set_epoch(const dataset *d, int epoch) {
    if (d && d->set_epoch) d->set_epoch(d, epoch);
}

int dataset_check_index(const dataset *d, int64_t index, char *err, size_t err_size) {
    if (index >= 0 && index < d->count) return 0;
    snprintf(err, err_size, "%s: sample index %lld out of range [0, %lld)", d->name, (long long)index,
             (long long)d->count);
    return -1;
}

void dataset_rgb_lut(float lut[3][256], const float mean[3], const float std[3]) {
    for (int c = 0; c < 3; c++)
        for (int level = 0; level < 256; level++) lut[c][level] = ((float)level / 255.0f - mean[c]) / std[c];
}

void dataset_planes_to_nhwc(float *out, const uint8_t *planes, int plane, const float lut[3][256]) {
    const uint8_t *red = planes, *green = red + plane, *blue = green + plane;
    for (int p = 0; p < plane; p++) {
        out[3 * p + 0] = lut[0][red[p]];
        out[3 * p + 1] = lut[1][green[p]];
        out[3 * p + 2] = lut[2][blue[p]];
    }
}
