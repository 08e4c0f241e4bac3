/* Prefetching batch loader. Worker threads fill a ring of `depth` batch slots ahead of the single
 * consumer: batch b of an epoch goes to slot b % depth and holds permutation[b*batch ...], so the
 * consumer receives batches strictly in order while up to `depth` of them are read at once (one
 * worker fills one whole slot; several slots fill in parallel). A worker may claim batch b only
 * once the consumer has released batch b - depth, which keeps the ring bounded without a queue.
 *
 * Errors: a failed read marks its slot failed and stops further claims; batches claimed before it
 * still complete, so the consumer always reaches the failed batch and gets -1 with the reader's
 * message (again on every later call until the next epoch). Nothing ever waits on a batch that no
 * worker has claimed, so there is no deadlock. loader_start_epoch and loader_close first let reads
 * in progress finish (reads are finite), then reset or join.
 *
 * Threads: min(workers, depth), since a worker only ever fills a whole slot. Statistics per epoch:
 * wait_seconds is the consumer's time blocked in loader_next; samples_per_s is the samples read
 * over the time during which at least one read was in progress, i.e. the rate the workers sustain
 * (above the consumer's rate whenever the loader keeps up).
 *
 * loader_open, loader_start_epoch, loader_next and loader_close are called from one thread. */
#include "data/loader.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LOADER_DEFAULT_DEPTH 4
#define LOADER_MAX_AUTO_WORKERS 8
#define LOADER_ERR_BYTES 512
#define LOADER_READ_ERR_BYTES 400 /* the reader's message, leaving room for the loader's prefix */

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_FAILED };

typedef struct loader_slot {
    float *images;              /* [batch, H, W, C] */
    int32_t *labels;            /* [batch] */
    int n;
    int64_t index;              /* batch number it holds (or is filling) this epoch; -1: none */
    enum slot_state state;
    char err[LOADER_ERR_BYTES];
} loader_slot;

struct loader {
    const dataset *data;
    loader_config config;
    size_t image_floats;
    int64_t batches;            /* per epoch */
    int64_t *permutation;       /* [count], rewritten only while no read is in progress */
    loader_slot *slots;         /* [depth] */
    pthread_t *threads;
    int thread_count;

    pthread_mutex_t mutex;
    pthread_cond_t work;        /* workers: a batch may be claimed, or shutdown */
    pthread_cond_t done;        /* consumer: a slot finished, or the last read in progress ended */
    int running;                /* an epoch is under way: workers may claim */
    int shutdown;
    int failed;                 /* a read failed this epoch: no more claims */
    int error_delivered;        /* the consumer got the failure: repeat it */
    char error[LOADER_ERR_BYTES];
    int64_t next_claim;         /* next batch a worker takes */
    int64_t next_deliver;       /* next batch the consumer gets */
    int holding;                /* the consumer holds batch next_deliver - 1 */
    int filling;                /* reads in progress */

    /* statistics of the current epoch */
    double wait_seconds;
    int64_t samples_filled;
    double busy_seconds;        /* time with at least one read in progress */
    double busy_since;
};

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [0, range) without modulo bias (Lemire's multiply-and-reject). */
static uint64_t uniform_below(uint64_t *state, uint64_t range) {
    __uint128_t product = (__uint128_t)splitmix64(state) * range;
    uint64_t low = (uint64_t)product;
    if (low < range) {
        uint64_t threshold = -range % range;
        while (low < threshold) {
            product = (__uint128_t)splitmix64(state) * range;
            low = (uint64_t)product;
        }
    }
    return (uint64_t)(product >> 64);
}

/* Fisher-Yates over a generator keyed on (seed, epoch): the same pair gives the same order. */
static void make_permutation(int64_t *permutation, int64_t count, int shuffle, uint64_t seed,
                             int epoch) {
    for (int64_t i = 0; i < count; i++) permutation[i] = i;
    if (!shuffle) return;
    uint64_t state = seed ^ 0x6A09E667F3BCC909ull;
    state = splitmix64(&state) ^ ((uint64_t)(uint32_t)epoch * 0x9FB21C651E98DF25ull);
    splitmix64(&state);
    for (int64_t i = count - 1; i > 0; i--) {
        int64_t j = (int64_t)uniform_below(&state, (uint64_t)i + 1);
        int64_t t = permutation[i];
        permutation[i] = permutation[j];
        permutation[j] = t;
    }
}

static int batch_size(const loader *l, int64_t b) {
    int64_t left = l->data->count - b * l->config.batch;
    return left < l->config.batch ? (int)left : l->config.batch;
}

static int claimable(const loader *l) {
    int64_t released = l->next_deliver - l->holding;
    return l->running && !l->failed && l->next_claim < l->batches &&
           l->next_claim < released + l->config.depth;
}

static void *worker_main(void *arg) {
    loader *l = arg;
    char err[LOADER_READ_ERR_BYTES];
    pthread_mutex_lock(&l->mutex);
    for (;;) {
        while (!l->shutdown && !claimable(l)) pthread_cond_wait(&l->work, &l->mutex);
        if (l->shutdown) break;
        int64_t b = l->next_claim++;
        loader_slot *slot = &l->slots[b % l->config.depth];
        slot->index = b;
        slot->n = batch_size(l, b);
        slot->state = SLOT_FILLING;
        if (l->filling++ == 0) l->busy_since = now_seconds();
        pthread_mutex_unlock(&l->mutex);

        err[0] = '\0';
        int status = l->data->read(l->data, slot->images, slot->labels,
                                   l->permutation + b * l->config.batch, slot->n, err, sizeof err);

        pthread_mutex_lock(&l->mutex);
        if (status == 0) {
            slot->state = SLOT_READY;
            l->samples_filled += slot->n;
        } else {
            snprintf(slot->err, sizeof slot->err, "%s: reading batch %lld failed: %s",
                     l->data->name, (long long)b, err[0] ? err : "(no message)");
            slot->state = SLOT_FAILED;
            l->failed = 1;
        }
        if (--l->filling == 0) l->busy_seconds += now_seconds() - l->busy_since;
        pthread_cond_broadcast(&l->done);
    }
    pthread_mutex_unlock(&l->mutex);
    return NULL;
}

static void free_slots(loader *l) {
    if (!l->slots) return;
    for (int i = 0; i < l->config.depth; i++) {
        loader_slot *s = &l->slots[i];
        if (l->config.alloc_host) {
            if (s->images) l->config.free_host(s->images, l->config.user);
            if (s->labels) l->config.free_host(s->labels, l->config.user);
        } else {
            free(s->images);
            free(s->labels);
        }
    }
    free(l->slots);
    l->slots = NULL;
}

static void *alloc_buffer(const loader_config *c, size_t bytes) {
    return c->alloc_host ? c->alloc_host(bytes, c->user) : malloc(bytes);
}

loader *loader_open(const dataset *d, const loader_config *config, char *err, size_t err_size) {
    if (!d || !d->read || d->count <= 0) {
        snprintf(err, err_size, "loader: data set %s is not open or holds no samples",
                 d && d->name[0] ? d->name : "(none)");
        return NULL;
    }
    loader_config c = *config;
    if (c.depth == 0) c.depth = LOADER_DEFAULT_DEPTH;
    if (c.workers == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        c.workers = cpus < 1 ? 1 : cpus > LOADER_MAX_AUTO_WORKERS ? LOADER_MAX_AUTO_WORKERS
                                                                  : (int)cpus;
    }
    if (c.batch <= 0 || c.workers < 0 || c.depth < 0) {
        snprintf(err, err_size,
                 "loader: batch %d, workers %d, depth %d; expected batch > 0, workers >= 0 and "
                 "depth >= 0 (0 = default)",
                 config->batch, config->workers, config->depth);
        return NULL;
    }
    if ((c.alloc_host == NULL) != (c.free_host == NULL)) {
        snprintf(err, err_size, "loader: alloc_host and free_host must be given together");
        return NULL;
    }
    int64_t batches = c.drop_last ? d->count / c.batch : (d->count + c.batch - 1) / c.batch;
    if (batches == 0) {
        snprintf(err, err_size,
                 "loader: %s holds %lld samples, fewer than one batch of %d, and drop_last is "
                 "set: an epoch would be empty",
                 d->name, (long long)d->count, c.batch);
        return NULL;
    }

    loader *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, err_size, "loader: out of memory");
        return NULL;
    }
    l->data = d;
    l->config = c;
    l->image_floats = dataset_image_floats(d);
    l->batches = batches;
    pthread_mutex_init(&l->mutex, NULL);
    pthread_cond_init(&l->work, NULL);
    pthread_cond_init(&l->done, NULL);
    l->permutation = malloc((size_t)d->count * sizeof *l->permutation);
    l->slots = calloc((size_t)c.depth, sizeof *l->slots);
    /* more threads than slots would never find work; thread_count counts only started ones */
    int want_threads = c.workers < c.depth ? c.workers : c.depth;
    l->threads = calloc((size_t)want_threads, sizeof *l->threads);
    if (!l->permutation || !l->slots || !l->threads) {
        snprintf(err, err_size, "loader: out of memory for %lld indices and %d slots",
                 (long long)d->count, c.depth);
        loader_close(l);
        return NULL;
    }
    size_t image_bytes = (size_t)c.batch * l->image_floats * sizeof(float);
    for (int i = 0; i < c.depth; i++) {
        loader_slot *s = &l->slots[i];
        s->index = -1;
        s->images = alloc_buffer(&c, image_bytes);
        s->labels = alloc_buffer(&c, (size_t)c.batch * sizeof(int32_t));
        if (!s->images || !s->labels) {
            snprintf(err, err_size, "loader: cannot allocate batch buffer %d of %zu bytes", i,
                     image_bytes);
            loader_close(l);
            return NULL;
        }
    }
    for (; l->thread_count < want_threads; l->thread_count++) {
        if (pthread_create(&l->threads[l->thread_count], NULL, worker_main, l) != 0) {
            snprintf(err, err_size, "loader: cannot start worker thread %d of %d",
                     l->thread_count + 1, want_threads);
            loader_close(l);
            return NULL;
        }
    }
    return l;
}

int64_t loader_batches_per_epoch(const loader *l) {
    return l->batches;
}

void loader_start_epoch(loader *l, int epoch) {
    pthread_mutex_lock(&l->mutex);
    l->running = 0; /* no new claims; reads in progress end, then nothing touches the slots */
    while (l->filling > 0) pthread_cond_wait(&l->done, &l->mutex);
    for (int i = 0; i < l->config.depth; i++) {
        l->slots[i].state = SLOT_FREE;
        l->slots[i].index = -1;
    }
    make_permutation(l->permutation, l->data->count, l->config.shuffle, l->config.seed, epoch);
    dataset_set_epoch(l->data, epoch); /* no read is in progress here */
    l->next_claim = 0;
    l->next_deliver = 0;
    l->holding = 0;
    l->failed = 0;
    l->error_delivered = 0;
    l->wait_seconds = 0;
    l->samples_filled = 0;
    l->busy_seconds = 0;
    l->running = 1;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->mutex);
}

int loader_next(loader *l, loader_batch *b, char *err, size_t err_size) {
    pthread_mutex_lock(&l->mutex);
    if (!l->running) {
        pthread_mutex_unlock(&l->mutex);
        snprintf(err, err_size, "loader: loader_next called before loader_start_epoch");
        return -1;
    }
    if (l->error_delivered) {
        snprintf(err, err_size, "%s", l->error);
        pthread_mutex_unlock(&l->mutex);
        return -1;
    }
    if (l->holding) { /* the previous batch goes back to the workers */
        l->slots[(l->next_deliver - 1) % l->config.depth].state = SLOT_FREE;
        l->holding = 0;
        pthread_cond_broadcast(&l->work);
    }
    if (l->next_deliver == l->batches) {
        pthread_mutex_unlock(&l->mutex);
        return 0;
    }
    loader_slot *slot = &l->slots[l->next_deliver % l->config.depth];
    double start = now_seconds();
    while (!(slot->index == l->next_deliver &&
             (slot->state == SLOT_READY || slot->state == SLOT_FAILED)))
        pthread_cond_wait(&l->done, &l->mutex);
    l->wait_seconds += now_seconds() - start;
    if (slot->state == SLOT_FAILED) {
        snprintf(l->error, sizeof l->error, "%s", slot->err);
        l->error_delivered = 1;
        snprintf(err, err_size, "%s", l->error);
        pthread_mutex_unlock(&l->mutex);
        return -1;
    }
    b->images = slot->images;
    b->labels = slot->labels;
    b->n = slot->n;
    b->index = slot->index;
    l->next_deliver++;
    l->holding = 1;
    pthread_mutex_unlock(&l->mutex);
    return 1;
}

loader_stats loader_epoch_stats(const loader *l) {
    loader *m = (loader *)l; /* the mutex guards the counters; reading them does not change l */
    pthread_mutex_lock(&m->mutex);
    double busy = m->busy_seconds + (m->filling > 0 ? now_seconds() - m->busy_since : 0.0);
    loader_stats s = {
        .wait_seconds = m->wait_seconds,
        .samples_per_s = busy > 0 ? (double)m->samples_filled / busy : 0.0,
    };
    pthread_mutex_unlock(&m->mutex);
    return s;
}

void loader_close(loader *l) {
    if (!l) return;
    pthread_mutex_lock(&l->mutex);
    l->shutdown = 1;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->mutex);
    for (int i = 0; i < l->thread_count; i++) pthread_join(l->threads[i], NULL);
    free_slots(l);
    free(l->threads);
    free(l->permutation);
    pthread_cond_destroy(&l->work);
    pthread_cond_destroy(&l->done);
    pthread_mutex_destroy(&l->mutex);
    free(l);
}
