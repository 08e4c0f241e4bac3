/* How fast the host turns ImageNet JPEGs into training inputs: writes N textured 500x375 JPEGs
 * (ImageNet's most common size, quality 90: about the size of its files) into a temporary
 * train/<wnid>/ tree, then measures, in images/s:
 *   decode             stb_image alone, from memory
 *   decode+crop        the ImageNet reader's read(): load, decode, random-resized-crop to 224,
 *                      flip, normalise (what a training step asks of the CPU per image)
 *   eval               the same with resize 256 + centre crop
 *   loader             decode+crop through the prefetching loader at each --threads count
 * CPU only; the GPU machine has more cores, so pass --threads 2,8,16 there.
 *
 * Each rate is the best of --repeat runs (after a warm-up for decoding), since other work on the
 * machine only ever slows a run down.
 *
 * bench_jpeg [--images N] [--threads 2,8,16] [--size 224] [--batch 32] [--repeat 3]
 *
 * --width/--height change the pictures' size (500x375 by default). bench_jpeg --write DIR
 * [--images N] [--classes K] only writes such a data set, in ImageNet's
 * layout (DIR/train/<wnid>/<image>.JPEG, and DIR/val linked to train), on all cores, for training runs
 * on JPEGs (train --data imagenet --data-root DIR). */
#define _GNU_SOURCE /* nftw's FTW_DEPTH */
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/stb_image_write_impl.h"

#include "base/clock.h"
#include "base/list.h"
#include "base/number.h"
#include "base/rng.h"
#include "data/dataset.h"
#include "data/image_transform.h"
#include "data/loader.h"
#include "runner/cli.h"

#define BENCH_CLASSES 4
#define BENCH_MAX_THREAD_COUNTS 8

/* Smooth colour fields with edges and noise, so the JPEGs compress like photographs do. */
static void make_picture(uint8_t *rgb, int index, int width, int height) {
    uint64_t state = (uint64_t)index * 7919 + 1;
    double fx[3], fy[3], phase[3];
    for (int c = 0; c < 3; c++) {
        fx[c] = 0.005 + (rng_next(&state) % 1000) * 4e-5;
        fy[c] = 0.005 + (rng_next(&state) % 1000) * 4e-5;
        phase[c] = (rng_next(&state) % 628) / 100.0;
    }
    int edge = (int)(rng_next(&state) % (uint64_t)width);
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++)
            for (int c = 0; c < 3; c++) {
                double v = 128 + 90 * __builtin_sin(fx[c] * x * 6.283 + fy[c] * y * 6.283 +
                                                    phase[c]);
                if (x > edge) v = 255 - v;
                v += (double)(rng_next(&state) % 41) - 20.0;
                rgb[((size_t)y * width + x) * 3 + c] =
                    (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    return remove(path);
}

typedef struct writer_share {
    const char *root;
    int images, classes, threads, failed, width, height;
} writer_share;

typedef struct writer_arg {
    writer_share *share;
    int first;
} writer_arg;

static void *write_some(void *p) {
    writer_arg *a = p;
    writer_share *w = a->share;
    uint8_t *rgb = malloc((size_t)w->width * w->height * 3);
    char path[1024];
    for (int i = a->first; rgb && i < w->images; i += w->threads) {
        make_picture(rgb, i, w->width, w->height);
        snprintf(path, sizeof path, "%s/train/n%08d/img_%06d.JPEG", w->root, i % w->classes, i);
        if (!stbi_write_jpg(path, w->width, w->height, 3, rgb, 90)) {
            fprintf(stderr, "bench_jpeg: cannot write %s\n", path);
            __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    if (!rgb) __atomic_store_n(&w->failed, 1, __ATOMIC_RELAXED);
    free(rgb);
    return NULL;
}

/* The data set alone: DIR/train/<wnid>/ with `images` JPEGs spread over `classes`, DIR/val -> train. */
static int write_dataset(const char *root, int images, int classes, int width, int height) {
    char path[1024];
    mkdir(root, 0755);
    snprintf(path, sizeof path, "%s/train", root);
    if (mkdir(path, 0755) != 0) {
        fprintf(stderr, "bench_jpeg: cannot create %s (it must not exist yet)\n", path);
        return 1;
    }
    for (int c = 0; c < classes; c++) {
        snprintf(path, sizeof path, "%s/train/n%08d", root, c);
        mkdir(path, 0755);
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    writer_share share = {root, images, classes, cpus < 1 ? 1 : cpus > 64 ? 64 : (int)cpus, 0,
                          width, height};
    pthread_t threads[64];
    writer_arg args[64];
    for (int t = 0; t < share.threads; t++) {
        args[t] = (writer_arg){&share, t};
        pthread_create(&threads[t], NULL, write_some, &args[t]);
    }
    for (int t = 0; t < share.threads; t++) pthread_join(threads[t], NULL);
    snprintf(path, sizeof path, "%s/val", root);
    if (share.failed || symlink("train", path) != 0) {
        fprintf(stderr, "bench_jpeg: writing the data set under %s failed\n", root);
        return 1;
    }
    printf("bench_jpeg: wrote %d JPEGs of %dx%d in %d classes under %s/train (val -> train)\n", images,
           width, height, classes, root);
    return 0;
}

/* Reads every sample in batches on this thread, repeat times; the best images/s. */
static double read_all(const dataset *d, int batch, int repeat, char *err, size_t err_size) {
    size_t floats = dataset_image_floats(d);
    float *images = malloc((size_t)batch * floats * sizeof(float));
    int32_t *labels = malloc((size_t)batch * sizeof(int32_t));
    int64_t *indices = malloc((size_t)batch * sizeof(int64_t));
    double best = 0.0;
    int ok = 1;
    for (int run = 0; run < repeat && ok; run++) {
        double start = clock_monotonic();
        for (int64_t first = 0; first < d->count && ok; first += batch) {
            int n = (int)(d->count - first < batch ? d->count - first : batch);
            for (int k = 0; k < n; k++) indices[k] = first + k;
            ok = d->read(d, images, labels, indices, n, err, err_size) == 0;
        }
        double rate = d->count / (clock_monotonic() - start);
        if (rate > best) best = rate;
    }
    free(images);
    free(labels);
    free(indices);
    return ok ? best : -1.0;
}

typedef struct bench_args {
    int images, size, batch, repeat, classes, width, height;
    const char *threads, *write_root;
} bench_args;

#define T bench_args
/* One row per option (the row format is in runner/cli.h). */
static const cli_option OPTIONS[] = {
    {"--images", "N", "pictures to write and decode", CLI_INT(T, images, 1, 1000000), .fallback = "200"},
    {"--threads", "N[,N...]", "loader thread counts to measure, at most 8", CLI_STR(T, threads), .fallback = "2"},
    {"--size", "N", "crop side", CLI_INT(T, size, 8, 2048), .fallback = "224"},
    {"--batch", "N", "images per loader batch", CLI_INT(T, batch, 1, 65536), .fallback = "32"},
    {"--repeat", "N", "runs per rate (the best counts)", CLI_INT(T, repeat, 1, 1000), .fallback = "3"},
    {"--width", "N", "pictures' width", CLI_INT(T, width, 16, 8192), .fallback = "500"},
    {"--height", "N", "pictures' height", CLI_INT(T, height, 16, 8192), .fallback = "375"},
    {"--write", "DIR", "only write a data set in ImageNet's layout there (on all cores)", CLI_STR(T, write_root)},
    {"--classes", "K", "with --write: classes (folders), at most --images", CLI_INT(T, classes, 1, 1000000),
     .fallback = CLI_TEXT_OF(BENCH_CLASSES)},
    {0}};
#undef T

static const cli_program PROGRAM = {
    .name = "bench_jpeg",
    .synopsis = "usage: bench_jpeg [--images N] [--threads 2,8,16] [--size 224] [--batch 32] [--repeat 3]\n"
                "       bench_jpeg --write DIR [--images N] [--classes K] [--width 500 --height 375]\n",
    .options = OPTIONS};

/* "1,8,16" into counts[] (each 1 to 256), by the list and number rules of every grammar
 * (base/list.h, base/number.h); the number of counts, or -1 with a message. */
static int parse_thread_counts(const char *text, int *counts, int max) {
    list_entry e[16];
    char err[512];
    int n = list_split("--threads", text, ',', e, max < 16 ? max : 16, err, sizeof err);
    for (int i = 0; i < n; i++) {
        char name[256];
        long long v;
        list_entry_name("--threads", text, i, name, sizeof name);
        if (number_parse(NUMBER_WHOLE, 1, 256, name, e[i].at, e[i].len, &v, NULL, err, sizeof err) != 0) n = -1;
        else counts[i] = (int)v;
    }
    if (n < 0) fprintf(stderr, "bench_jpeg: %s\n", err);
    return n;
}

int main(int argc, char **argv) {
    bench_args args = {0};
    cli_parse_or_exit(&PROGRAM, &args, argc, argv);
    int images = args.images, size = args.size, batch = args.batch, repeat = args.repeat;
    int classes = args.classes, width = args.width, height = args.height;
    const char *write_root = args.write_root;
    int thread_counts[BENCH_MAX_THREAD_COUNTS];
    int thread_runs = parse_thread_counts(args.threads, thread_counts, BENCH_MAX_THREAD_COUNTS);
    if (thread_runs < 1) return 2;
    if (classes > images) {
        fprintf(stderr, "bench_jpeg: --classes %d: at most --images (%d)\n", classes, images);
        return 2;
    }
    if (write_root) return write_dataset(write_root, images, classes, width, height);

    char root[512], path[1024], err[1024];
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/bench-jpeg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root)) {
        perror("bench_jpeg: mkdtemp");
        return 1;
    }
    snprintf(path, sizeof path, "%s/train", root);
    mkdir(path, 0700);
    for (int c = 0; c < BENCH_CLASSES; c++) {
        snprintf(path, sizeof path, "%s/train/n%08d", root, c);
        mkdir(path, 0700);
    }
    uint8_t *rgb = malloc((size_t)width * height * 3);
    uint8_t **files = calloc((size_t)images, sizeof *files);
    size_t *file_sizes = calloc((size_t)images, sizeof *file_sizes), total_bytes = 0;
    int status = 1;
    for (int i = 0; i < images; i++) {
        make_picture(rgb, i, width, height);
        snprintf(path, sizeof path, "%s/train/n%08d/img_%06d.JPEG", root, i % BENCH_CLASSES, i);
        if (!stbi_write_jpg(path, width, height, 3, rgb, 90) ||
            dataset_read_file(path, (size_t)1 << 26, &files[i], &file_sizes[i], err,
                              sizeof err) != 0) {
            fprintf(stderr, "bench_jpeg: cannot write %s\n", path);
            goto done;
        }
        total_bytes += file_sizes[i];
    }

    /* decode only, from memory; the first pass warms caches and the allocator */
    double start = 0.0, decode_rate = 0.0;
    for (int pass = 0; pass <= repeat; pass++) {
        start = clock_monotonic();
        for (int i = 0; i < images; i++) {
            image_rgb image;
            char why[256];
            if (image_decode(&image, files[i], file_sizes[i], IMAGE_DEFAULT_MAX_PIXELS, why,
                             sizeof why) != 0) {
                fprintf(stderr, "bench_jpeg: image %d: %s\n", i, why);
                goto done;
            }
            image_free(&image);
        }
        double rate = images / (clock_monotonic() - start);
        if (pass > 0 && rate > decode_rate) decode_rate = rate;
    }

    dataset train, eval;
    imagenet_options options = {.root = root, .train = 1, .image_size = size, .seed = 1};
    if (dataset_open_imagenet(&train, &options, err, sizeof err) != 0) {
        fprintf(stderr, "bench_jpeg: %s\n", err);
        goto done;
    }
    double crop_rate = read_all(&train, batch, repeat, err, sizeof err);
    /* evaluation reads val/: point a second reader at the same files through a val/ link */
    char train_path[1024], val_path[1024];
    snprintf(train_path, sizeof train_path, "%s/train", root);
    snprintf(val_path, sizeof val_path, "%s/val", root);
    double eval_rate = -1.0;
    if (symlink(train_path, val_path) == 0) {
        options.train = 0;
        if (dataset_open_imagenet(&eval, &options, err, sizeof err) == 0) {
            eval_rate = read_all(&eval, batch, repeat, err, sizeof err);
            dataset_close(&eval);
        }
        unlink(val_path);
    }

    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_jpeg: %d JPEGs of %dx%d (%.0f KB on average), output %dx%d, batch %d, "
           "%ld CPUs, best of %d\n\n", images, width, height,
           total_bytes / 1024.0 / images, size, size, batch, cpus, repeat);
    printf("| %-44s | %7s | %9s | %9s |\n", "stage", "threads", "images/s", "ms/image");
    printf("|----------------------------------------------|---------|-----------|-----------|\n");
    printf("| %-44s | %7d | %9.1f | %9.2f |\n", "decode (stb_image, from memory)", 1, decode_rate,
           1e3 / decode_rate);
    printf("| %-44s | %7d | %9.1f | %9.2f |\n", "read + decode + random-resized-crop + flip", 1,
           crop_rate, 1e3 / crop_rate);
    if (eval_rate > 0)
        printf("| %-44s | %7d | %9.1f | %9.2f |\n", "read + decode + resize 256 + centre crop", 1,
               eval_rate, 1e3 / eval_rate);
    for (int t = 0; t < thread_runs; t++) {
        loader_config config = {.batch = batch, .workers = thread_counts[t],
                                .depth = 2 * thread_counts[t], .shuffle = 1, .seed = 3};
        loader *l = loader_open(&train, &config, err, sizeof err);
        if (!l) {
            fprintf(stderr, "bench_jpeg: %s\n", err);
            dataset_close(&train);
            goto done;
        }
        loader_batch b;
        int got = 0;
        double rate = 0.0;
        for (int epoch = 0; epoch < repeat && got >= 0; epoch++) {
            int64_t seen = 0;
            start = clock_monotonic();
            loader_start_epoch(l, epoch);
            while ((got = loader_next(l, &b, err, sizeof err)) == 1) seen += b.n;
            double epoch_rate = seen / (clock_monotonic() - start);
            if (epoch_rate > rate) rate = epoch_rate;
        }
        loader_close(l);
        if (got < 0) {
            fprintf(stderr, "bench_jpeg: %s\n", err);
            dataset_close(&train);
            goto done;
        }
        printf("| %-44s | %7d | %9.1f | %9.2f |\n", "decode + crop through the loader",
               thread_counts[t], rate, 1e3 / rate);
    }
    dataset_close(&train);
    status = 0;
done:
    for (int i = 0; i < images; i++) free(files[i]);
    free(files);
    free(file_sizes);
    free(rgb);
    nftw(root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return status;
}
