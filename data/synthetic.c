/* Synthetic images for runs that must not wait on real data, but should still cost the host what
 * a real reader costs (a copy of every image into the batch buffer) rather than nothing.
 *
 * Running a generator per pixel per batch would be slower than the GPU it feeds, so the random
 * numbers are drawn once: open() fills a pool of pool_floats + image_floats normal values
 * (mean 0, std 1, Box-Muller over splitmix64 seeded by spec.seed; pool_floats = max(2^20,
 * 4 * image_floats), 4 MB or more). Sample i is then
 *     h1 = hash(seed, i), h2 = hash(h1)
 *     label  = h1 % classes
 *     offset = h2 % pool_floats
 *     image[j] = pool[offset + j] + class_shift(label) + jitter(h2)   for j < image_floats
 * where class_shift spreads the classes evenly over [-0.25, 0.25] (so a model can learn the
 * labels and a training loss falls) and jitter is uniform in [-0.05, 0.05]. Each sample is one
 * streaming copy-and-add over a window of the pool, as fast as memcpy; its content depends only
 * on (seed, i), so any subset is produced in any order by any thread with the same result. */
#include "data/dataset.h"
#include "base/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYN_MIN_POOL_FLOATS ((size_t)1 << 20)
#define SYN_MAX_IMAGE_FLOATS ((size_t)1 << 28) /* 1 GiB per image: beyond any model here */
#define SYN_CLASS_SPREAD 0.25f
#define SYN_JITTER 0.05f

typedef struct synthetic {
    float *pool;        /* [pool_floats + image_floats] */
    size_t pool_floats; /* windows start in [0, pool_floats) */
    uint64_t seed;
} synthetic;

static uint64_t hash2(uint64_t a, uint64_t b) {
    uint64_t state = a ^ (b * 0xD6E8FEB86659FD93ull);
    rng_next(&state);
    return rng_next(&state);
}

static int syn_read(const dataset *d, float *images, int32_t *labels, const int64_t *indices,
                    int n, char *err, size_t err_size) {
    const synthetic *s = d->impl;
    size_t image_floats = dataset_image_floats(d);
    for (int k = 0; k < n; k++) {
        int64_t index = indices[k];
        if (dataset_check_index(d, index, err, err_size)) return -1;
        uint64_t h1 = hash2(s->seed, (uint64_t)index), h2 = hash2(h1, 0x5EED);
        int label = (int)(h1 % (uint64_t)d->classes);
        float class_shift =
            d->classes > 1 ? SYN_CLASS_SPREAD * (2.0f * label / (d->classes - 1) - 1.0f) : 0.0f;
        float jitter = SYN_JITTER * (2.0f * (float)((h2 >> 40) * (1.0 / 16777216.0)) - 1.0f);
        float shift = class_shift + jitter;
        const float *restrict src = s->pool + h2 % s->pool_floats;
        float *restrict out = images + (size_t)k * image_floats;
        for (size_t j = 0; j < image_floats; j++) out[j] = src[j] + shift;
        labels[k] = label;
    }
    return 0;
}

static void syn_close(dataset *d) {
    synthetic *s = d->impl;
    if (!s) return;
    free(s->pool);
    free(s);
    d->impl = NULL;
}

int dataset_open_synthetic(dataset *d, const synthetic_spec *spec, char *err, size_t err_size) {
    memset(d, 0, sizeof *d);
    if (spec->count <= 0 || spec->height <= 0 || spec->width <= 0 || spec->channels <= 0 ||
        spec->classes <= 0) {
        snprintf(err, err_size,
                 "synthetic: count %lld, height %d, width %d, channels %d, classes %d; all must "
                 "be positive",
                 (long long)spec->count, spec->height, spec->width, spec->channels, spec->classes);
        return -1;
    }
    size_t image_floats = (size_t)spec->height * spec->width * spec->channels;
    if ((uint64_t)spec->height * spec->width * spec->channels > SYN_MAX_IMAGE_FLOATS) {
        snprintf(err, err_size, "synthetic: images of %dx%dx%d exceed the %zu values allowed",
                 spec->height, spec->width, spec->channels, SYN_MAX_IMAGE_FLOATS);
        return -1;
    }
    size_t pool_floats = 4 * image_floats > SYN_MIN_POOL_FLOATS ? 4 * image_floats
                                                                : SYN_MIN_POOL_FLOATS;
    synthetic *s = calloc(1, sizeof *s);
    float *pool = malloc((pool_floats + image_floats) * sizeof(float));
    if (!s || !pool) {
        snprintf(err, err_size, "synthetic: out of memory for a pool of %zu values",
                 pool_floats + image_floats);
        free(s);
        free(pool);
        return -1;
    }
    uint64_t state = spec->seed ^ 0x243F6A8885A308D3ull;
    size_t total = pool_floats + image_floats;
    for (size_t j = 0; j < total; j += 2) {
        double u1 = ((rng_next(&state) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
        double u2 = (rng_next(&state) >> 11) * (1.0 / 9007199254740992.0);
        double radius = sqrt(-2.0 * log(u1)), angle = 6.283185307179586 * u2;
        pool[j] = (float)(radius * cos(angle));
        if (j + 1 < total) pool[j + 1] = (float)(radius * sin(angle));
    }
    s->pool = pool;
    s->pool_floats = pool_floats;
    s->seed = spec->seed;

    snprintf(d->name, sizeof d->name, "synthetic");
    d->count = spec->count;
    d->height = spec->height;
    d->width = spec->width;
    d->channels = spec->channels;
    d->classes = spec->classes;
    d->read = syn_read;
    d->close = syn_close;
    d->impl = s;
    return 0;
}
