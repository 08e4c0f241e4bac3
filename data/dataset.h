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

/* Fashion-MNIST gzipped IDX files (train-images-idx3-ubyte.gz, ... as the Debian package ships them
 * under /usr/share/datasets/fashion-mnist): 28x28 grey images padded to 32x32, replicated to 3
 * channels, normalised with the training set's mean and std. */
#define FASHION_MNIST_DEFAULT_ROOT "/usr/share/datasets/fashion-mnist"
int dataset_open_fashion_mnist(dataset *d, const char *root, int train, char *err, size_t err_size);

/* Synthetic images shaped like a named data set (or any size): deterministic by seed, random
 * access, produced on the host like real data. */
typedef struct synthetic_spec {
    int64_t count;
    int height, width, channels, classes;
    uint64_t seed;
} synthetic_spec;
int dataset_open_synthetic(dataset *d, const synthetic_spec *spec, char *err, size_t err_size);

#endif
