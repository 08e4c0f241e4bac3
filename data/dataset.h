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
    /* Which epoch is being read (random augmentation keys on it); NULL without augmentation. */
    void (*set_epoch)(const dataset *d, int epoch);
    void *impl;
};

void dataset_close(dataset *d);
size_t dataset_image_floats(const dataset *d); /* height * width * channels */

/* For readers: 0 when index is a sample of d, else -1 with a message naming d and the range. */
int dataset_check_index(const dataset *d, int64_t index, char *err, size_t err_size);
/* The ImageNet normalisation (torchvision's mean and std of the training set), for every reader
 * of ImageNet pictures and the GPU decoder that stands in for one. */
extern const float dataset_imagenet_mean[3], dataset_imagenet_std[3];
/* lut[c][level] = (level / 255 - mean[c]) / std[c]: the normalisation of 8-bit RGB. */
void dataset_rgb_lut(float lut[3][256], const float mean[3], const float std[3]);
/* Three planes of `plane` bytes (red, green, blue, one after another) to `plane` NHWC pixels. */
void dataset_planes_to_nhwc(float *out, const uint8_t *planes, int plane, const float lut[3][256]);

/* What stands at a data file's path, looked at without opening anything but a regular file (a FIFO
 * or a device is never opened, so nothing waits on it): DATASET_FILE_REGULAR, a regular file that
 * can be read; DATASET_FILE_ABSENT, nothing of that name; DATASET_FILE_BAD, something else of that
 * name (a folder, a FIFO, a device, a socket, a link to nothing or in a loop, a file that cannot
 * be read), with err naming the path, what it is and what was expected. A name that is there in
 * any form makes its set present (the readers' *_present); every reader opens only what this calls
 * regular. err may be NULL. */
typedef enum { DATASET_FILE_BAD = -1, DATASET_FILE_REGULAR = 0, DATASET_FILE_ABSENT = 1 } dataset_file;
dataset_file dataset_file_status(const char *path, char *err, size_t err_size);
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
 * names appear in messages). The file reader goes through this, and so does tests/fuzz/fuzz_idx.c. */
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

/* ImageNet 64x64 (downsampled ImageNet, npz version): train_data_batch_1.npz ..
 * train_data_batch_10.npz for training, val_data.npz for validation, in root. Each .npz (a zip,
 * members stored or deflated) holds data.npy (uint8 [N, 12288]: red, green, blue 64x64 planes)
 * and labels.npy (an integer type, [N], 1..1000; delivered as 0..999). Every file is decoded once
 * into memory as it is on disk: 12288 bytes per image, 15.7 GB for the training set, 614 MB for
 * validation. With less memory, open a subset of the training files with _files. Images come out
 * 64x64x3, normalised with the ImageNet mean and std. */
#define IMAGENET64_SIDE 64
#define IMAGENET64_CLASSES 1000
#define IMAGENET64_TRAIN_FILES 10
int dataset_open_imagenet64(dataset *d, const char *root, int train, char *err, size_t err_size);
int dataset_open_imagenet64_files(dataset *d, const char *const *paths, int files, char *err,
                                  size_t err_size);
/* One .npz already in memory (not copied beyond what is decoded; name appears in messages), for
 * tests and tests/fuzz/fuzz_npy.c. */
int dataset_open_imagenet64_memory(dataset *d, const uint8_t *bytes, size_t size,
                                   const char *name, char *err, size_t err_size);

/* A .npy header (format 1.0, 2.0 or 3.0; the header is the Python dict literal numpy writes).
 * Parsed from the first `size` bytes of a .npy; data_offset is where the array's bytes begin. */
#define NPY_MAX_DIMS 8
typedef struct npy_header {
    char kind;                     /* 'u' unsigned, 'i' signed integer, 'f' float, 'b' bool, ... */
    int item_bytes;
    int big_endian;                /* '>' in descr; '|' and '<' are little-endian or bytes */
    int fortran_order;
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    size_t data_offset;
} npy_header;
int npy_parse_header(npy_header *h, const uint8_t *bytes, size_t size, const char *name, char *err,
                     size_t err_size);

/* ImageNet 2012 (ILSVRC-2012 CLS-LOC) from its JPEG folders under root:
 *   train/<wnid>/<image>.JPEG   class = position of the wnid among train/'s folders, sorted;
 *   val/<wnid>/<image>.JPEG     like train, or
 *   val/<image>.JPEG + a label file: LOC_val_solution.csv (Kaggle: "ImageId,PredictionString";
 *     the first wnid of the prediction string is the label) or a plain "filename label" file
 *     (val.txt / val_labels.txt, as Caffe's; label a wnid or a class index), looked for in root
 *     then in val/ unless options.val_labels names it.
 * Files ending .JPEG/.jpeg/.jpg/.png (any case) are images; grey, CMYK (Adobe) and PNG files are
 * delivered as RGB. Training: random-resized-crop + flip, drawn from (seed, epoch, index); eval:
 * resize to size * 256 / 224 (shorter side) + centre crop. Normalised with the ImageNet mean and
 * std. Decoding happens in read(), so reading is as fast as the CPU threads that call it. */
#define IMAGENET_DEFAULT_SIZE 224
typedef struct imagenet_options {
    const char *root;
    int train;                     /* 1: train/, random crops; 0: val/, centre crops */
    int image_size;                /* output side; 0: 224 */
    int skip_bad;                  /* undecodable image: replaced by the next good one, counted */
    uint64_t seed;
    const char *val_labels;        /* NULL: found as described above */
} imagenet_options;
int dataset_open_imagenet(dataset *d, const imagenet_options *options, char *err,
                          size_t err_size);
/* Images skipped as undecodable so far (skip_bad), for the run's log. */
int64_t dataset_imagenet_bad_images(const dataset *d);

/* Whether root holds any file of the set, well formed or not: a set with none of its files is
 * absent (train --data-if-present trains on synthetic data of its shape instead); one with some
 * of them is present and must be whole and well formed (data/data_check.h). */
int dataset_fashion_mnist_present(const char *root);
int dataset_cifar10_present(const char *root);
int dataset_imagenet64_present(const char *root);
int dataset_imagenet_present(const char *root);
/* ImageNet 64x64 without decoding its images: every file of both splits (zip directory, data.npy's
 * header and shape, labels.npy's shape and every label), as dataset_open_imagenet64 would find
 * them. 0, or -1 with the file and what is wrong in err. */
int dataset_check_imagenet64(const char *root, char *err, size_t err_size);

/* Tells a data set which epoch is being read, so random augmentation differs between epochs but
 * is reproducible. Call it while no read() is in progress (from the loader, between epochs); a
 * call during reads is safe but lets those reads' augmentation depend on timing. Data sets without
 * augmentation ignore it. */
void dataset_set_epoch(const dataset *d, int epoch);

#endif
