/* Reading ImageNet samples, two ways. The data set's read (imagenet_read) loads, decodes and
 * transforms each image on the calling thread, so the loader's workers are the decoding threads.
 * The encoded source (loader.h: loader_source_imagenet_encoded) only reads each file into the
 * batch and draws its crop from the frame header, for a GPU decoder to do the rest; a file that is
 * not a plain JPEG (image_jpeg_is_plain), or does not fit its field, is decoded here instead, as
 * the data set's read would. Both draw a sample's crop through imagenet_sample_crop. */
#include "data/imagenet_files.h"
#include "data/loader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The whole file at path: into buffer when one is given and the file fits its capacity (1 when it
 * does not: nothing is read, *size says how large it is), else into a malloc'ed buffer. *bytes
 * is where the file went (free() it unless it is buffer). 0, 1, or -1 with why. */
static int read_file(const char *path, uint8_t *buffer, size_t capacity, uint8_t **bytes,
                     size_t *size, char *why, size_t why_size) {
    *bytes = NULL;
    *size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, why_size, "cannot open: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (size_t)st.st_size > IN_MAX_FILE_BYTES) {
        snprintf(why, why_size, "%s", st.st_size <= 0 ? "empty file, expected a JPEG image"
                                                      : "not a regular file of at most 64 MB");
        close(fd);
        return -1;
    }
    size_t want = (size_t)st.st_size, got = 0;
    *size = want;
    if (buffer && want > capacity) {
        close(fd);
        return 1;
    }
    uint8_t *into = buffer ? buffer : malloc(want);
    if (!into) {
        snprintf(why, why_size, "out of memory for %zu bytes", want);
        close(fd);
        return -1;
    }
    while (got < want) {
        ssize_t n = read(fd, into + got, want - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            snprintf(why, why_size, "read failed after %zu of %zu bytes: %s", got, want,
                     n < 0 ? strerror(errno) : "file shrank");
            if (!buffer) free(into);
            close(fd);
            return -1;
        }
        got += (size_t)n;
    }
    close(fd);
    *bytes = into;
    return 0;
}

static uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

int imagenet_sample_crop(const imagenet *in, int64_t index, int epoch, int width, int height,
                         image_crop *crop) {
    if (!in->train) return image_eval_crop(crop, width, height, in->size, in->resize_to);
    if (width <= 0 || height <= 0) return -1;
    uint64_t rng = mix64(mix64(mix64(in->seed ^ 0x8A5CD789635D2DFFull) ^
                               (uint64_t)(uint32_t)epoch) ^ (uint64_t)index);
    *crop = image_train_crop(width, height, in->size, &rng);
    return 0;
}

static void sample_path(const imagenet *in, int64_t index, char *path) {
    snprintf(path, IN_PATH_BYTES, "%s/%s", in->root, in->names + in->name_offsets[index]);
}

int imagenet_load_one(const imagenet *in, int64_t index, int epoch, float *out, char *path,
                      char *why, size_t why_size) {
    sample_path(in, index, path);
    uint8_t *bytes;
    size_t size;
    if (read_file(path, NULL, 0, &bytes, &size, why, why_size) != 0) return -1;
    image_rgb image;
    int status = image_decode(&image, bytes, size, IMAGE_DEFAULT_MAX_PIXELS, why, why_size);
    free(bytes);
    if (status != 0) return -1;
    image_crop crop;
    if (imagenet_sample_crop(in, index, epoch, image.width, image.height, &crop) != 0) {
        snprintf(why, why_size, "a %dx%d image cannot be resized to %d", image.width,
                 image.height, in->resize_to);
        status = -1;
    } else if ((status = image_apply_crop(out, in->size, &image, &crop, dataset_imagenet_mean,
                                          dataset_imagenet_std)) != 0) {
        snprintf(why, why_size, "out of memory transforming a %dx%d image", image.width,
                 image.height);
    }
    image_free(&image);
    return status;
}

int imagenet_read(const dataset *d, float *images, int32_t *labels, const int64_t *indices, int n,
                  char *err, size_t err_size) {
    imagenet *in = d->impl;
    size_t image_floats = dataset_image_floats(d);
    int epoch = atomic_load(&in->epoch);
    char path[IN_PATH_BYTES], why[512];
    for (int k = 0; k < n; k++) {
        int64_t index = indices[k];
        if (dataset_check_index(d, index, err, err_size)) return -1;
        float *out = images + (size_t)k * image_floats;
        int64_t source = index;
        int tries = 0;
        while (imagenet_load_one(in, source, epoch, out, path, why, sizeof why) != 0) {
            if (!in->skip_bad) {
                snprintf(err, err_size, "%s: %s", path, why);
                return -1;
            }
            atomic_fetch_add(&in->bad_images, 1);
            if (++tries == IN_MAX_SKIPS || tries == d->count) {
                snprintf(err, err_size, "%s: sample %lld and the %d images after it could not be "
                         "read (skip_bad gives up); the last: %s: %s", d->name, (long long)index,
                         tries - 1, path, why);
                return -1;
            }
            source = (source + 1) % d->count;
        }
        labels[k] = in->labels[source];
    }
    return 0;
}

/* --- the encoded source ------------------------------------------------------------------- */

/* The file of sample index into payload with its record, when it is a plain JPEG that fits and
 * its crop can be drawn; 0, else -1 (the caller decodes the sample on the host). */
static int encode_one(const imagenet *in, int64_t index, int epoch, uint8_t *payload,
                      size_t capacity, imagenet_encoded *record) {
    char path[IN_PATH_BYTES], why[256];
    sample_path(in, index, path);
    uint8_t *bytes;
    size_t size;
    if (read_file(path, payload, capacity, &bytes, &size, why, sizeof why) != 0) return -1;
    image_jpeg_header header;
    if (image_jpeg_header_read(bytes, size, &header) != 0 ||
        !image_jpeg_is_plain(&header, IMAGE_DEFAULT_MAX_PIXELS))
        return -1;
    memset(record, 0, sizeof *record);
    record->index = index;
    record->kind = IMAGENET_ENCODED_JPEG;
    record->width = header.width;
    record->height = header.height;
    record->bytes = (uint32_t)size;
    return imagenet_sample_crop(in, index, epoch, header.width, header.height, &record->crop);
}

static int encoded_read(const loader_source *s, void *const out[LOADER_MAX_FIELDS],
                        const int64_t *indices, int n, char *err, size_t err_size) {
    const dataset *d = s->impl;
    imagenet *in = d->impl;
    size_t capacity = s->field_bytes[IMAGENET_ENCODED_PAYLOAD];
    int epoch = atomic_load(&in->epoch);
    for (int k = 0; k < n; k++) {
        int64_t index = indices[k];
        if (dataset_check_index(d, index, err, err_size)) return -1;
        uint8_t *payload = (uint8_t *)out[IMAGENET_ENCODED_PAYLOAD] + (size_t)k * capacity;
        int32_t *label = (int32_t *)out[IMAGENET_ENCODED_LABEL] + k;
        imagenet_encoded *record = (imagenet_encoded *)out[IMAGENET_ENCODED_RECORD] + k;
        if (encode_one(in, index, epoch, payload, capacity, record) == 0) {
            *label = in->labels[index];
            continue;
        }
        /* decoded here as the data set's read does: its message, or with skip_bad its substitute */
        if (imagenet_read(d, (float *)payload, label, &index, 1, err, err_size) != 0) return -1;
        memset(record, 0, sizeof *record);
        record->index = index;
        record->kind = IMAGENET_ENCODED_PIXELS;
        atomic_fetch_add(&in->host_decoded, 1);
    }
    return 0;
}

static void encoded_set_epoch(const loader_source *s, int epoch) {
    dataset_set_epoch((const dataset *)s->impl, epoch);
}

int loader_source_imagenet_encoded(loader_source *s, const dataset *d, char *err,
                                   size_t err_size) {
    memset(s, 0, sizeof *s);
    if (!d || d->read != imagenet_read || !d->impl) {
        snprintf(err, err_size, "the encoded source reads an ImageNet JPEG folder; %s is not one",
                 d && d->name[0] ? d->name : "(none)");
        return -1;
    }
    size_t pixels = dataset_image_floats(d) * sizeof(float);
    size_t payload = pixels > IMAGENET_ENCODED_MIN_PAYLOAD ? pixels : IMAGENET_ENCODED_MIN_PAYLOAD;
    snprintf(s->name, sizeof s->name, "%s", d->name);
    s->count = d->count;
    s->fields = 3;
    s->field_bytes[IMAGENET_ENCODED_PAYLOAD] = (payload + 255) / 256 * 256;
    s->field_bytes[IMAGENET_ENCODED_LABEL] = sizeof(int32_t);
    s->field_bytes[IMAGENET_ENCODED_RECORD] = sizeof(imagenet_encoded);
    s->read = encoded_read;
    s->set_epoch = encoded_set_epoch;
    s->impl = (void *)d;
    return 0;
}

int64_t dataset_imagenet_host_decoded(const dataset *d) {
    if (!d || d->read != imagenet_read || !d->impl) return 0;
    return atomic_load(&((imagenet *)d->impl)->host_decoded);
}
