/* Batches for training: an epoch is a seeded shuffle of the samples (a different one each epoch,
 * the same for the same seed), cut into batches that worker threads fill in a ring of host
 * buffers ahead of the consumer. Buffers come from the caller's allocator, so train passes
 * pinned memory (cudaHostAlloc) and copies each batch to the GPU asynchronously.
 *
 * Samples come from a loader_source: any number of samples, each made of up to
 * LOADER_MAX_FIELDS fixed-size fields (an image and its label; Criteo's dense features,
 * categorical indices and click). A batch is one host block holding each field's [batch, bytes]
 * array, field f at loader_field_offset(f) (each starting at a multiple of LOADER_FIELD_ALIGN),
 * so a consumer mirrors the block on the GPU and moves a whole batch in one copy. An image
 * data set (dataset.h) is a source of two fields, images and int32 labels (loader_open).
 *
 * Shuffling: up to LOADER_MAX_PERMUTATION samples, a permutation of the whole epoch (Fisher-
 * Yates, 8 bytes a sample). Beyond that, or when shuffle_window is set, nothing the size of the
 * epoch is allocated: the samples are cut into windows of shuffle_window consecutive samples
 * (LOADER_DEFAULT_WINDOW when 0), the whole windows are visited in a shuffled order (the
 * partial last window last), and each window is read in a shuffled order of its own. Both
 * orders come from keyed Feistel permutations computed per sample, so any batch of an epoch of
 * billions of rows (Criteo Terabyte: 4.4 billion) is found in constant time and memory. Reads
 * stay within a window or two per batch, so real files are read with locality (facebookresearch/
 * dlrm reads Terabyte's days in order; this is that order, shuffled within windows). */
#ifndef SUITE_LOADER_H
#define SUITE_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include "data/criteo.h"
#include "data/dataset.h"
#include "data/image_transform.h"

#define LOADER_MAX_FIELDS 4
#define LOADER_FIELD_ALIGN 256
#define LOADER_MAX_PERMUTATION ((int64_t)1 << 27)  /* samples; a 1 GiB permutation */
#define LOADER_DEFAULT_WINDOW ((int64_t)1 << 24)   /* samples per shuffle window */

typedef struct loader loader;

typedef struct loader_source loader_source;
struct loader_source {
    char name[32];
    int64_t count;                              /* samples */
    int fields;                                 /* 1 .. LOADER_MAX_FIELDS */
    size_t field_bytes[LOADER_MAX_FIELDS];      /* bytes of one sample's field f */
    /* Writes the n samples at indices: field f of sample k at (char *)out[f] + k * bytes[f].
     * Called from several threads at once on distinct outputs. 0, or -1 with the reason. */
    int (*read)(const loader_source *s, void *const out[LOADER_MAX_FIELDS], const int64_t *indices,
                int n, char *err, size_t err_size);
    void (*set_epoch)(const loader_source *s, int epoch); /* NULL: nothing depends on it */
    void (*close)(loader_source *s);                      /* NULL: nothing to free */
    void *impl;
};

/* Frees what the source's constructor allocated (after every loader over it is closed). */
void loader_source_close(loader_source *s);

typedef struct loader_batch loader_batch;
typedef struct loader_config {
    int batch;
    int workers;            /* threads filling batches; 0 = chosen from the CPU count */
    int depth;              /* batches in flight; 0 = 4 */
    int shuffle;            /* 0: in order (evaluation) */
    int drop_last;          /* 1: an incomplete last batch is dropped; 0: it is delivered short */
    uint64_t seed;
    void *(*alloc_host)(size_t bytes, void *user); /* NULL: malloc */
    void (*free_host)(void *ptr, void *user);
    void *user;
    int shards, shard;      /* data-parallel: batch b of this loader is batch b*shards+shard of the
                               epoch's order cut into batches (shards 0 or 1: all of them) */
    int64_t shuffle_window; /* with shuffle: 0 = whole-epoch permutation up to
                               LOADER_MAX_PERMUTATION samples, else windows of
                               LOADER_DEFAULT_WINDOW; > 0 = windows of this many samples */
    /* NULL, or called once for each batch, on the worker that filled its last chunk, before the
     * batch can be delivered: work that needs the whole batch (a GPU decoder's) then runs ahead
     * of the consumer, up to `depth` batches at once. b->slot is the batch's place in the ring:
     * batch b + depth takes it only after the consumer has released batch b. 0, or -1 with the
     * reason (the batch fails as a read error would). */
    int (*finish)(const loader_batch *b, void *user, char *err, size_t err_size);
    void *finish_user;
} loader_config;

struct loader_batch {
    float *images;          /* image sources: [n, H, W, C] (= fields[0]) */
    int32_t *labels;        /* image sources: [n] (= fields[1]) */
    int n;                  /* samples in this batch (config.batch except a short last one) */
    int64_t index;          /* batch number within the epoch */
    int slot;               /* index % depth: its place in the ring of buffers */
    void *fields[LOADER_MAX_FIELDS]; /* each [n, field_bytes], inside block */
    void *block;            /* the whole batch buffer, loader_block_bytes long */
    /* all of it is owned by the loader until the next loader_next */
};

typedef struct loader_stats {
    double wait_seconds;    /* consumer time spent waiting for a batch this epoch */
    double samples_per_s;   /* production rate of the workers this epoch */
} loader_stats;

/* An image data set: fields images (float) and labels (int32). */
loader *loader_open(const dataset *d, const loader_config *config, char *err, size_t err_size);
/* Any source; the source is copied, its impl must outlive the loader. */
loader *loader_open_source(const loader_source *s, const loader_config *config, char *err,
                           size_t err_size);
int64_t loader_batches_per_epoch(const loader *l);
/* Bytes of a batch block, and where field f starts in it (capacity `batch` for every field). */
size_t loader_block_bytes(const loader *l);
size_t loader_field_offset(const loader *l, int field);
/* Starts epoch `epoch` (0-based): its order and its batches. */
void loader_start_epoch(loader *l, int epoch);
/* Next batch of the current epoch: 1 and fills *b, 0 at the end of the epoch, -1 on a read error
 * (message in err). */
int loader_next(loader *l, loader_batch *b, char *err, size_t err_size);
loader_stats loader_epoch_stats(const loader *l);
void loader_close(loader *l);

/* The sample at position `position` of epoch `epoch` in windowed order (what a windowed loader
 * reads), for tests and tools: a permutation of [0, count) for each (seed, epoch, window). */
int64_t loader_window_index(int64_t position, int64_t count, int64_t window, uint64_t seed, int epoch);

/* Criteo rows [first_row, first_row + rows) of an open reader (data/criteo_dataset.c) as a
 * source of three fields: dense float [13], categorical indices int32 [26], click float [1]
 * (0 or 1), i.e. models/dlrm.h's input block. The reader must outlive the source; close the
 * source with loader_source_close. -1 with a message when the range is not within the reader's
 * rows. */
int loader_source_criteo(loader_source *s, const criteo *r, int64_t first_row, int64_t rows,
                         char *err, size_t err_size);

/* An ImageNet JPEG folder (dataset_open_imagenet) undecoded, for a decoder on the GPU
 * (runner/train/jpeg_decoder.h): a source of three fields per sample. The workers only read
 * files and draw crops; what the GPU cannot take is decoded by them as the data set's read does.
 *   IMAGENET_ENCODED_PAYLOAD  the JPEG file as read, or (record kind PIXELS) the sample decoded
 *                             and transformed on the host, float [size, size, 3] as read() gives
 *                             it: for files that are not plain JPEGs (image_jpeg_is_plain), do not
 *                             fit the field, or fail to read (then skip_bad applies as in read())
 *   IMAGENET_ENCODED_LABEL    int32
 *   IMAGENET_ENCODED_RECORD   an imagenet_encoded
 * The payload field holds the larger of a transformed image and IMAGENET_ENCODED_MIN_PAYLOAD,
 * so at 224 (602 KB) the batches take no more memory than decoded ones, and ImageNet's files
 * (110 KB on average) nearly all fit. d must outlive the source (no close needed). */
enum { IMAGENET_ENCODED_PAYLOAD, IMAGENET_ENCODED_LABEL, IMAGENET_ENCODED_RECORD };
enum { IMAGENET_ENCODED_JPEG, IMAGENET_ENCODED_PIXELS };
#define IMAGENET_ENCODED_MIN_PAYLOAD ((size_t)512 << 10)
typedef struct imagenet_encoded {
    int64_t index;           /* the sample: the host decodes it again where the GPU fails */
    int32_t kind;            /* IMAGENET_ENCODED_JPEG or _PIXELS */
    int32_t width, height;   /* JPEG: its frame header's */
    uint32_t bytes;          /* JPEG: the file's size */
    image_crop crop;         /* JPEG: drawn from (seed, epoch, index) as read() draws it */
} imagenet_encoded;
int loader_source_imagenet_encoded(loader_source *s, const dataset *d, char *err, size_t err_size);
/* Samples the encoded source has decoded on the host so far (kind PIXELS). */
int64_t dataset_imagenet_host_decoded(const dataset *d);

#endif
