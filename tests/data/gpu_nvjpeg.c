/* The GPU JPEG decoder (runner/train/jpeg_decoder.h: nvJPEG, then kernels/crop_resize.h) against
 * the host's (stb_image, then data/image_transform.c) on generated JPEGs: 4:2:0 and 4:4:4 colour,
 * grey, landscape and portrait, tiny and ImageNet-sized, each cut with the same crop and flip (the
 * encoded source's records, drawn as the host draws them) in two epochs; PNG and CMYK files
 * decoded by the loader's workers and a picture the decoder refuses (its record disagrees with its
 * header) decoded by the host fallback, both bit for bit the host's; then `train --decode gpu`
 * end to end (its setup and epoch events).
 *
 * Tolerance, in 8-bit levels of the picture (a difference of the normalised values times 255 x
 * std), per image: the decoders' IDCTs and colour conversions differ by a level or two per pixel,
 * and their chroma upsampling of 4:2:0 (stb_image's triangle filter, nvJPEG's interpolation or
 * replication) by more at colour edges; resampling then averages these. So: 4:4:4 and grey at
 * most 8 levels anywhere and 1.0 on average; 4:2:0 at most 48 and 3.0 on average. Each image's
 * figures are printed, so a run shows how close they are. Exit 77 without a GPU, in a build without
 * nvJPEG, or where nvJPEG does not start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "kernels/check.h"
#include "models/core/context.h"
#include "runner/train/jpeg_decoder.h"
#include "tests/support/image_fixtures.h"
#include "tests/support/testutil.h"

#define SIZE 224
#define SLOTS 3 /* the decoder's slots, the loaders' depth */

enum kind { CHROMA_420, CHROMA_444, GREY, ON_HOST };
static const struct { double max_levels, mean_levels; } tolerance[] = {
    [CHROMA_420] = {48.0, 3.0}, [CHROMA_444] = {8.0, 1.0}, [GREY] = {8.0, 1.0}, [ON_HOST] = {0.0, 0.0}};

/* In the folder's (sorted) order: train/n000 then train/n001. */
static const struct { const char *file; int width, height, quality; enum kind kind; } pictures[] = {
    {"train/n000/a.JPEG", 500, 375, 90, CHROMA_420},
    {"train/n000/b.JPEG", 500, 375, 95, CHROMA_444},
    {"train/n000/c.JPEG", 333, 500, 85, CHROMA_420},
    {"train/n000/d.JPEG", 37, 23, 95, CHROMA_444},
    {"train/n000/e.JPEG", 16, 12, 0, GREY},
    {"train/n001/f.png", 40, 30, 0, ON_HOST},
    {"train/n001/g.JPEG", 8, 8, 0, ON_HOST}, /* CMYK */
    {"train/n001/h.JPEG", 1024, 683, 75, CHROMA_420},
};
#define PICTURES (int)(sizeof pictures / sizeof *pictures)

static char root[512];
static job_context ctx;

static void *pinned_alloc(size_t bytes, void *user) {
    void *p = NULL;
    CHECK_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocPortable));
    return p;
}
static void pinned_free(void *p, void *user) { CHECK_CUDA(cudaFreeHost(p)); }

static void write_pictures(void) {
    make_folder(root, "train");
    make_folder(root, "train/n000");
    make_folder(root, "train/n001");
    for (int k = 0; k < PICTURES; k++) {
        if (pictures[k].quality > 0)
            write_image(root, pictures[k].file, pictures[k].width, pictures[k].height, (unsigned)k,
                        pictures[k].quality);
        else if (pictures[k].kind == GREY)
            write_bytes(root, pictures[k].file, grey_jpeg, sizeof grey_jpeg);
        else if (strstr(pictures[k].file, ".png"))
            write_constant_png(root, pictures[k].file, pictures[k].width, pictures[k].height);
        else
            write_bytes(root, pictures[k].file, cmyk_jpeg, sizeof cmyk_jpeg);
    }
}

static jpeg_decoder *open_decoder(int batch) {
    char why[256];
    jpeg_decoder *decoder =
        jpeg_decoder_open(&ctx, batch, SIZE, SLOTS, dataset_imagenet_mean, dataset_imagenet_std, why, sizeof why);
    if (!decoder) {
        printf("no GPU decoder here (%s): skipped\n", why);
        exit(77);
    }
    return decoder;
}

/* The largest and the mean difference of image k, in 8-bit levels. */
static void difference(const float *gpu, const float *host, double *max, double *mean) {
    *max = 0, *mean = 0;
    for (size_t i = 0; i < (size_t)SIZE * SIZE * 3; i++) {
        double levels = fabs(gpu[i] - host[i]) * dataset_imagenet_std[i % 3] * 255.0;
        if (!(levels <= *max)) *max = levels; /* NaN too */
        *mean += levels;
    }
    *mean /= (double)SIZE * SIZE * 3;
}

/* Decodes the loader's batch on the GPU and compares each image with the data set's read(). */
static void compare_batch(jpeg_decoder *decoder, const loader_source *source, const loader_batch *b,
                          const dataset *d, const char *what) {
    char err[1024] = "";
    if (jpeg_decoder_decode(decoder, b, source->field_bytes[IMAGENET_ENCODED_PAYLOAD], d, err, sizeof err) != 0)
        fail_msg("%s", err);
    const float *images = jpeg_decoder_images(decoder, b, ctx.stream);
    size_t floats = (size_t)SIZE * SIZE * 3;
    float *gpu = malloc((size_t)b->n * floats * sizeof(float)), *host = malloc(floats * sizeof(float));
    CHECK_CUDA(cudaMemcpyAsync(gpu, images, (size_t)b->n * floats * sizeof(float), cudaMemcpyDeviceToHost,
                               ctx.stream));
    CHECK_CUDA(cudaStreamSynchronize(ctx.stream));
    const imagenet_encoded *records = b->fields[IMAGENET_ENCODED_RECORD];
    const int32_t *labels = b->fields[IMAGENET_ENCODED_LABEL];
    for (int k = 0; k < b->n; k++) {
        int64_t index = records[k].index;
        int32_t label;
        if (d->read(d, host, &label, &index, 1, err, sizeof err) != 0) fail_msg("%s", err);
        assert_int_equal(labels[k], label);
        enum kind kind = pictures[index].kind;
        double max, mean;
        difference(gpu + (size_t)k * floats, host, &max, &mean);
        printf("%s %-18s %s: max %.2f levels, mean %.3f (tolerance %.0f, %.1f)\n", what, pictures[index].file,
               records[k].kind == IMAGENET_ENCODED_PIXELS ? "host " : (records[k].crop.flip ? "flip " : "     "),
               max, mean, tolerance[kind].max_levels, tolerance[kind].mean_levels);
        if (!(max <= tolerance[kind].max_levels && mean <= tolerance[kind].mean_levels))
            fail_msg("%s %s: GPU and host differ by up to %.2f levels, %.3f on average", what,
                     pictures[index].file, max, mean);
    }
    free(gpu);
    free(host);
}

static void open_set(dataset *d, loader_source *source, loader **l) {
    imagenet_options o = {.root = root, .train = 1, .image_size = SIZE, .seed = 5};
    char err[1024] = "";
    if (dataset_open_imagenet(d, &o, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(d->count, PICTURES);
    assert_int_equal(loader_source_imagenet_encoded(source, d, err, sizeof err), 0);
    loader_config lc = {.batch = PICTURES, .workers = 2, .depth = SLOTS, .alloc_host = pinned_alloc,
                        .free_host = pinned_free};
    *l = loader_open_source(source, &lc, err, sizeof err);
    if (!*l) fail_msg("%s", err);
}

static void test_gpu_matches_host(void **state) {
    dataset d;
    loader_source source;
    loader *l;
    open_set(&d, &source, &l);
    jpeg_decoder *decoder = open_decoder(PICTURES);
    printf("nvJPEG backend: %s, chroma %s\n", jpeg_decoder_backend(decoder),
           jpeg_decoder_interpolates(decoder) ? "interpolated" : "replicated");
    char err[1024] = "", what[16];
    for (int epoch = 0; epoch < 3; epoch++) { /* three batches: both slots, one of them again */
        loader_start_epoch(l, epoch);
        loader_batch b;
        assert_int_equal(loader_next(l, &b, err, sizeof err), 1);
        snprintf(what, sizeof what, "epoch %d", epoch);
        compare_batch(decoder, &source, &b, &d, what);
    }
    assert_int_equal(dataset_imagenet_host_decoded(&d), 3 * 2); /* the PNG and the CMYK JPEG */
    assert_int_equal(jpeg_decoder_host_fallbacks(decoder), 0);

    /* a picture whose header disagrees with its record goes to the host, and still comes out right */
    loader_start_epoch(l, 3);
    loader_batch b;
    assert_int_equal(loader_next(l, &b, err, sizeof err), 1);
    imagenet_encoded *records = b.fields[IMAGENET_ENCODED_RECORD];
    records[0].width++;
    compare_batch(decoder, &source, &b, &d, "refused");
    assert_int_equal(jpeg_decoder_host_fallbacks(decoder), 1);
    jpeg_decoder_close(decoder);
    loader_close(l);
    dataset_close(&d);
}

/* How fast the decoder turns ImageNet-sized JPEGs into a batch (informational: the training
 * throughput is lab/device_run.sh's nvjpeg stage). */
typedef struct rate_run {
    jpeg_decoder *decoder;
    loader_batch batch;
    size_t payload_bytes;
    const dataset *data;
    int rounds;
} rate_run;

/* A thread's share of the rate: the same batch decoded again and again in its own slot. */
static void *decode_rounds(void *arg) {
    rate_run *r = arg;
    char err[1024] = "";
    for (int i = 0; i < r->rounds; i++)
        if (jpeg_decoder_decode(r->decoder, &r->batch, r->payload_bytes, r->data, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
    return NULL;
}

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void test_decode_rate(void **state) {
    enum { BATCH = 128, ROUNDS = 8 };
    char folder[600];
    snprintf(folder, sizeof folder, "%s/rate", root);
    make_folder(folder, "");
    make_folder(folder, "train");
    make_folder(folder, "train/n000");
    for (int k = 0; k < BATCH; k++) {
        char name[64];
        snprintf(name, sizeof name, "train/n000/%03d.JPEG", k);
        write_image(folder, name, 500, 375, (unsigned)k, 90);
    }
    imagenet_options o = {.root = folder, .train = 1, .image_size = SIZE, .seed = 1};
    dataset d;
    loader_source source;
    char err[1024] = "";
    if (dataset_open_imagenet(&d, &o, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(loader_source_imagenet_encoded(&source, &d, err, sizeof err), 0);
    loader_config lc = {.batch = BATCH, .workers = 4, .depth = SLOTS, .alloc_host = pinned_alloc,
                        .free_host = pinned_free};
    loader *l = loader_open_source(&source, &lc, err, sizeof err);
    if (!l) fail_msg("%s", err);
    loader_start_epoch(l, 0);
    loader_batch b;
    assert_int_equal(loader_next(l, &b, err, sizeof err), 1);
    const imagenet_encoded *records = b.fields[IMAGENET_ENCODED_RECORD];
    double bytes = 0;
    for (int k = 0; k < BATCH; k++) bytes += records[k].bytes;
    jpeg_decoder *decoder = open_decoder(BATCH);
    /* one thread, then one per slot at once (as the loader's workers decode) */
    for (int threads = 1; threads <= SLOTS; threads += SLOTS - 1) {
        rate_run runs[SLOTS];
        pthread_t ids[SLOTS];
        for (int t = 0; t < threads; t++) {
            runs[t] = (rate_run){decoder, b, source.field_bytes[IMAGENET_ENCODED_PAYLOAD], &d, 1};
            runs[t].batch.slot = t;
            decode_rounds(&runs[t]); /* warm-up */
            runs[t].rounds = ROUNDS;
        }
        double start = now_seconds();
        for (int t = 0; t < threads; t++) assert_int_equal(pthread_create(&ids[t], NULL, decode_rounds, &runs[t]), 0);
        for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
        double seconds = now_seconds() - start;
        printf("GPU decode + crop of 500x375 JPEGs (4:2:0, %.0f KB on average), batches of %d, %d thread(s): "
               "%.0f images/s (%s)\n", bytes / BATCH / 1000, BATCH, threads, threads * ROUNDS * BATCH / seconds,
               jpeg_decoder_backend(decoder));
    }
    jpeg_decoder_close(decoder);
    loader_close(l);
    dataset_close(&d);
}

static cJSON *event_of(const char *text, const char *name) {
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        cJSON *e = cJSON_Parse(line);
        const cJSON *kind = e ? cJSON_GetObjectItem(e, "event") : NULL;
        if (kind && cJSON_IsString(kind) && !strcmp(kind->valuestring, name)) return e;
        cJSON_Delete(e);
    }
    return NULL;
}

/* train --decode gpu and cpu on a small folder: the setup event says which decoder and why; the
 * epochs count what the host decoded and the CPU cores used. */
static void test_train_decodes_on_the_gpu(void **state) {
    static char out[1 << 20], err[1 << 16];
    char folder[600];
    snprintf(folder, sizeof folder, "%s/train-run", root);
    make_folder(folder, "");
    const char *folders[] = {"train", "train/n000", "train/n001", "val", "val/n000", "val/n001"};
    for (size_t i = 0; i < sizeof folders / sizeof *folders; i++) make_folder(folder, folders[i]);
    for (int k = 0; k < 32; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s/n00%d/%02d.JPEG", k < 24 ? "train" : "val", k % 2, k);
        write_image(folder, name, 120 + k, 90 + 2 * k, (unsigned)k, 90);
    }
    for (int gpu = 1; gpu >= 0; gpu--) {
        int rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--data",
                                 "imagenet", "--data-root", folder, "--image-size", "64", "--batch", "8", "--epochs",
                                 "2", "--decode", gpu ? "gpu" : "cpu", "--json", NULL);
        if (rc != 0) fail_msg("train --decode %s: exit %d: %s", gpu ? "gpu" : "cpu", rc, err);
        cJSON *setup = event_of(out, "setup"), *epoch = event_of(out, "epoch");
        assert_non_null(setup);
        assert_non_null(epoch);
        assert_string_equal(cJSON_GetObjectItem(setup, "decode")->valuestring, gpu ? "gpu" : "cpu");
        printf("--decode %s: %s (%s), epoch 1 on %.1f CPU cores\n", gpu ? "gpu" : "cpu",
               cJSON_GetObjectItem(setup, "decode_why")->valuestring,
               gpu ? cJSON_GetObjectItem(setup, "decode_backend")->valuestring : "loader threads",
               cJSON_GetObjectItem(epoch, "cpu_cores")->valuedouble);
        expect_gt(cJSON_GetObjectItem(epoch, "cpu_cores")->valuedouble, 0);
        if (gpu) assert_true(cJSON_GetObjectItem(epoch, "host_decoded")->valuedouble == 0);
        else assert_null(cJSON_GetObjectItem(epoch, "host_decoded"));
        cJSON_Delete(setup);
        cJSON_Delete(epoch);
    }
}

int main(void) {
    if (!SUITE_HAVE_NVJPEG) {
        printf("built without nvJPEG (SUITE_HAVE_NVJPEG 0): skipped\n");
        return 77;
    }
    test_require_gpu();
    if (context_init(&ctx, 0, 0, 1) != CONTEXT_OK) return 77;
    test_tmpdir(root, sizeof root);
    write_pictures();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpu_matches_host),
        cmocka_unit_test(test_decode_rate),
        cmocka_unit_test(test_train_decodes_on_the_gpu),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    context_free(&ctx);
    test_rmtree(root);
    return failed;
}
