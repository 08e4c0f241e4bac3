/* The ImageNet reader's state, shared by its two files: imagenet.c lists the folders and opens
 * the data set, imagenet_read.c reads samples (decoded on the host for the data set's read, or
 * as their undecoded files for a GPU decoder: loader.h's loader_source_imagenet_encoded). Not for
 * other readers; the public interface is dataset.h's. */
#ifndef SUITE_IMAGENET_FILES_H
#define SUITE_IMAGENET_FILES_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/image_transform.h"

#define IN_MAX_FILE_BYTES ((size_t)64 << 20)   /* the largest ImageNet JPEG is about 15 MB */
#define IN_MAX_LABEL_FILE_BYTES ((size_t)64 << 20)
#define IN_MAX_SKIPS 64                         /* consecutive bad images before giving up */
#define IN_PATH_BYTES 4096

typedef struct imagenet {
    char *root;
    char *names;             /* pool of NUL-terminated paths relative to root */
    int64_t *name_offsets;   /* [count] */
    int32_t *labels;         /* [count] */
    int train, size, resize_to, skip_bad;
    uint64_t seed;
    atomic_int epoch;
    atomic_llong bad_images;
    atomic_llong host_decoded; /* samples the encoded source decoded on the host */
} imagenet;

/* Sample index's crop from a width x height picture: in training drawn from a generator keyed on
 * (seed, epoch, index), so the host transform and the GPU decoder cut the same window whichever
 * thread asks and in whatever order; in evaluation the centre crop. 0, or -1 when it does not fit. */
int imagenet_sample_crop(const imagenet *in, int64_t index, int epoch, int width, int height,
                         image_crop *crop);
/* Loads, decodes and transforms one image into out (float [size, size, 3]); -1 with why (and the
 * file's path in path, IN_PATH_BYTES) on any failure. */
int imagenet_load_one(const imagenet *in, int64_t index, int epoch, float *out, char *path,
                      char *why, size_t why_size);
/* The data set's read (dataset.h): each sample decoded on the calling thread; with skip_bad an
 * undecodable image is replaced by the next good one (its label too) and counted. */
int imagenet_read(const dataset *d, float *images, int32_t *labels, const int64_t *indices, int n,
                  char *err, size_t err_size);

#endif
