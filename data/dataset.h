/* One interface for every data set. A data set knows how many samples it has and delivers any
 * set of them, by index, as float32 NHWC images (already normalised, at the size the model sees)
 * and int32 labels. Readers live one per file (fashion_mnist.c, cifar10.c, synthetic.c, ...);
 * the loader (loader.h) draws shuffled batches from any of them on worker threads.
 * Errors name the file and what was expected; open functions return -1 with the message in err. */
#ifndef SUITE_DATASET_H
#define SUITE_DATASET_H

#include <stddef.h>
#include <stdint.h>

typedef struct dataset dataset;
struct dataset {
    char name[32];
    int64_t count;                   /* samples */
    int height, width, channels;     /* of each delivered image */
    int classes;
    /* Writes n images [n, height, width, channels] and labels; safe to call from several threads
     * at once on distinct output buffers. Returns 0, or -1 with the reason in err. */
    int (*read)(const dataset *d, float *images, int32_t *labels, const int64_t *indices, int n,
                char *err, size_t err_size);
    void (*close)(dataset *d);
    void *impl;
};

void dataset_close(dataset *d);
size_t dataset_image_floats(const dataset *d); /* height * width * channels */

/* For the readers: the whole content of a file, gzip-compressed or plain (zlib reads both), in a
 * malloc'ed buffer (*bytes, *size; free() it). A file that would exceed max_bytes once
 * decompressed is refused, so a corrupt or hostile archive cannot exhaust memory. */
int dataset_read_file(const char *path, size_t max_bytes, uint8_t **bytes, size_t *size,
                      char *err, size_t err_size);

/* Fashion-MNIST gzipped IDX files (train-images-idx3-ubyte.gz, ... as the Debian package ships them
 * under /usr/share/datasets/fashion-mnist): 28x28 grey images padded to 32x32, replicated to 3
 * channels, normalised with the training set's mean and std. */
#define FASHION_MNIST_DEFAULT_ROOT "/usr/share/datasets/fashion-mnist"
int dataset_open_fashion_mnist(dataset *d, const char *root, int train, char *err, size_t err_size);
/* The same from an IDX image file and its label file already in memory (the bytes are copied; the
 * names appear in messages). The file reader goes through this, and so does tests/fuzz_idx.c. */
int dataset_open_fashion_mnist_memory(dataset *d, const uint8_t *images, size_t images_size,
                                      const char *images_name, const uint8_t *labels,
                                      size_t labels_size, const char *labels_name, char *err,
                                      size_t err_size);

/* CIFAR-10, binary version (cifar-10-binary.tar.gz): data_batch_1.bin .. data_batch_5.bin for
 * training, test_batch.bin for testing, in root or in root/cifar-10-batches-bin (as the archive
 * unpacks). Records of 3073 bytes: a label, then 32x32 red, green and blue planes. Delivered as
 * 32x32x3, normalised per channel with the training set's usual mean and std. */
#define CIFAR10_RECORD_BYTES 3073
int dataset_open_cifar10(dataset *d, const char *root, int train, char *err, size_t err_size);
/* The same from records already in memory (copied; name appears in messages), for tests/fuzz. */
int dataset_open_cifar10_memory(dataset *d, const uint8_t *bytes, size_t size, const char *name,
                                char *err, size_t err_size);

/* Synthetic images shaped like a named data set (or any size): deterministic by seed, random
 * access, produced on the host like real data. Values are normal-ish (mean 0, std 1, like
 * normalised images); sample i depends only on (seed, i); its label is hash(seed, i) % classes
 * and shifts the image mean slightly, so a model can learn it (see synthetic.c). */
typedef struct synthetic_spec {
    int64_t count;
    int height, width, channels, classes;
    uint64_t seed;
} synthetic_spec;
int dataset_open_synthetic(dataset *d, const synthetic_spec *spec, char *err, size_t err_size);

#endif
