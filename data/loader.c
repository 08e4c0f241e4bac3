/* Prefetching batch loader. Worker threads fill a ring of `depth` batch slots ahead of the single
 * consumer: batch b of an epoch goes to slot b % depth and holds the samples at positions
 * b*batch ... of the epoch's order, so the consumer receives batches strictly in order while up
 * to `depth` of them are read at once. Work is claimed by chunks of a batch (about batch /
 * workers samples, at least LOADER_MIN_CHUNK), so that every worker helps with the batch the
 * consumer needs next: with whole batches per worker, the first batch of an epoch would arrive
 * only after one thread had decoded all of it (a third of a second for 128 ImageNet JPEGs). A
 * worker may claim a chunk of batch b only once the consumer has released batch b - depth, which
 * keeps the ring bounded without a queue.
 *
 * Order: in order, a whole-epoch permutation array (Fisher-Yates, rewritten only while no read
 * is in progress), or windows (loader.h): a worker maps its batch's positions to samples itself
 * through two keyed Feistel networks (cycle-walking keeps a permutation of 2^(2h) values inside
 * [0, n)), into the slot's own index array.
 *
 * Errors: a failed read marks its slot failed and stops further claims; chunks claimed before it
 * still complete, so the consumer always reaches the failed batch and gets -1 with the reader's
 * message (again on every later call until the next epoch). Nothing ever waits on a batch that no
 * worker has claimed, so there is no deadlock. loader_start_epoch and loader_close first let reads
 * in progress finish (reads are finite), then reset or join.
 *
 * Threads: `workers`. Statistics per epoch:
 * wait_seconds is the consumer's time blocked in loader_next; samples_per_s is the samples read
 * over the time during which at least one read was in progress, i.e. the rate the workers sustain
 * (above the consumer's rate whenever the loader keeps up).
 *
 * loader_open, loader_start_epoch, loader_next and loader_close are called from one thread. */
#include "data/loader.h"
#include "base/clock.h"
#include "base/rng.h"

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
#define FEISTEL_ROUNDS 6
#define LOADER_MIN_CHUNK 8          /* samples: below that, claiming costs more than it spreads */

enum slot_state { SLOT_FREE, SLOT_FILLING, SLOT_READY, SLOT_FAILED };
enum order_kind { ORDER_IN_ORDER, ORDER_PERMUTATION, ORDER_WINDOWS };

typedef struct loader_slot {
    void *block;                /* every field of `batch` samples */
    int64_t *indices;           /* [batch] samples of the batch (not with a permutation array) */
    int n;
    int64_t index;              /* batch number it holds (or is filling) this epoch; -1: none */
    int chunks_left;            /* chunks of the batch not yet read */
    enum slot_state state;
    char err[LOADER_ERR_BYTES];
} loader_slot;

struct loader {
    loader_source source;
    const dataset *data;        /* loader_open: the image data set behind `source` */
    loader_config config;
    size_t field_offset[LOADER_MAX_FIELDS], block_bytes;
    int64_t batches;            /* per epoch */
    enum order_kind order;
    int64_t window;             /* ORDER_WINDOWS: samples per window */
    int epoch;                  /* the current epoch (keys the windowed order) */
    int64_t *permutation;       /* ORDER_PERMUTATION: [count], rewritten only while no read runs */
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
    int chunk, chunks_per_batch;/* samples per claimed chunk; chunks of a whole batch */
    int64_t next_claim;         /* next chunk a worker takes: batch next_claim / chunks_per_batch */
    int64_t next_deliver;       /* next batch the consumer gets */
    int holding;                /* the consumer holds batch next_deliver - 1 */
    int filling;                /* reads in progress */

    /* statistics of the current epoch */
    double wait_seconds;
    int64_t samples_filled;
    double busy_seconds;        /* time with at least one read in progress */
    double busy_since;
};

/* The generator state of (seed, epoch): the same pair gives the same order. */
static uint64_t epoch_state(uint64_t seed, int epoch) {
    uint64_t state = seed ^ 0x6A09E667F3BCC909ull;
    state = rng_next(&state) ^ ((uint64_t)(uint32_t)epoch * 0x9FB21C651E98DF25ull);
    rng_next(&state);
    return state;
}

/* Fisher-Yates over a generator keyed on (seed, epoch). */
static void make_permutation(int64_t *permutation, int64_t count, uint64_t seed, int epoch) {
    for (int64_t i = 0; i < count; i++) permutation[i] = i;
    uint64_t state = epoch_state(seed, epoch);
    for (int64_t i = count - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&state, (uint64_t)i + 1);
        int64_t t = permutation[i];
        permutation[i] = permutation[j];
        permutation[j] = t;
    }
}

/* --- windowed order: keyed permutations of [0, n) computed per element --------------------- */

typedef struct feistel {
    uint64_t n, mask;
    int half;                   /* bits of each half */
    uint64_t keys[FEISTEL_ROUNDS];
} feistel;

static void feistel_init(feistel *f, uint64_t n, uint64_t key) {
    int bits = 2;
    while (bits < 64 && ((uint64_t)1 << bits) < n) bits++;
    f->n = n;
    f->half = (bits + 1) / 2;
    f->mask = ((uint64_t)1 << f->half) - 1;
    for (int r = 0; r < FEISTEL_ROUNDS; r++) f->keys[r] = rng_next(&key);
}

/* A permutation of [0, 2^(2 half)); walking its cycle until the value is below n restricts it
 * to a permutation of [0, n) (at most 4n values, so a few steps on average). */
static uint64_t feistel_apply(const feistel *f, uint64_t x) {
    if (f->n <= 1) return 0;
    do {
        uint64_t left = x >> f->half, right = x & f->mask;
        for (int r = 0; r < FEISTEL_ROUNDS; r++) {
            uint64_t mixed = right ^ f->keys[r];
            uint64_t next = left ^ (rng_next(&mixed) & f->mask);
            left = right;
            right = next;
        }
        x = left << f->half | right;
    } while (x >= f->n);
    return x;
}

/* Positions [first, first + n) of an epoch in windowed order: the whole windows in a shuffled
 * order, the partial last one last, each window in a shuffled order of its own. */
static void window_indices(int64_t *out, int64_t first, int n, int64_t count, int64_t window,
                           uint64_t seed, int epoch) {
    int64_t full = count / window, cached = -1, shuffled = 0;
    uint64_t key = epoch_state(seed, epoch);
    feistel windows, inside = {0}; /* set at the first position (cached starts at -1) */
    feistel_init(&windows, (uint64_t)full, key);
    for (int k = 0; k < n; k++) {
        int64_t p = first + k, w = p / window;
        if (w != cached) {
            cached = w;
            shuffled = w < full ? (int64_t)feistel_apply(&windows, (uint64_t)w) : w;
            int64_t length = w < full ? window : count - full * window;
            feistel_init(&inside, (uint64_t)length, key ^ ((uint64_t)shuffled + 1) * 0xC2B2AE3D27D4EB4Full);
        }
        out[k] = shuffled * window + (int64_t)feistel_apply(&inside, (uint64_t)(p % window));
    }
}

int64_t loader_window_index(int64_t position, int64_t count, int64_t window, uint64_t seed, int epoch) {
    int64_t index;
    window_indices(&index, position, 1, count, window, seed, epoch);
    return index;
}

/* The samples at positions [first, first + n) of the current epoch's order. */
static void fill_indices(const loader *l, int64_t *indices, int64_t first, int n) {
    if (l->order == ORDER_WINDOWS) {
        window_indices(indices, first, n, l->source.count, l->window, l->config.seed, l->epoch);
        return;
    }
    for (int k = 0; k < n; k++) indices[k] = first + k;
}

/* --- the worker ring ---------------------------------------------------------------------------- */

/* Batch b's first position in the epoch's order (data-parallel ranks take every shards-th). */
static int64_t batch_start(const loader *l, int64_t b) {
    int shards = l->config.shards > 1 ? l->config.shards : 1;
    return (b * shards + (shards > 1 ? l->config.shard : 0)) * l->config.batch;
}

static int batch_size(const loader *l, int64_t b) {
    int64_t left = l->source.count - batch_start(l, b);
    return left < l->config.batch ? (int)left : l->config.batch;
}

static int chunks_of(const loader *l, int64_t b) { return (batch_size(l, b) + l->chunk - 1) / l->chunk; }

static int claimable(loader *l) {
    int64_t b = l->next_claim / l->chunks_per_batch;
    /* a short last batch has fewer chunks: its missing ones are skipped */
    if (b < l->batches && l->next_claim % l->chunks_per_batch >= chunks_of(l, b))
        l->next_claim = (b + 1) * l->chunks_per_batch, b++;
    int64_t released = l->next_deliver - l->holding;
    return l->running && !l->failed && b < l->batches && b < released + l->config.depth;
}

static void slot_fields(const loader *l, const loader_slot *slot, void *fields[LOADER_MAX_FIELDS]) {
    for (int f = 0; f < LOADER_MAX_FIELDS; f++)
        fields[f] = f < l->source.fields ? (char *)slot->block + l->field_offset[f] : NULL;
}

static void batch_view(const loader *l, const loader_slot *slot, loader_batch *b) {
    slot_fields(l, slot, b->fields);
    b->block = slot->block;
    b->images = l->data ? (float *)b->fields[0] : NULL;
    b->labels = l->data ? (int32_t *)b->fields[1] : NULL;
    b->n = slot->n;
    b->index = slot->index;
    b->slot = (int)(slot - l->slots);
}

/* Runs the configuration's finish on a filled batch, with the mutex released (called holding it;
 * the worker still counts as filling, so an epoch's restart waits for it). */
static int finish_batch(loader *l, loader_slot *slot, char *err, size_t err_size) {
    loader_batch b;
    batch_view(l, slot, &b);
    pthread_mutex_unlock(&l->mutex);
    err[0] = '\0';
    int status = l->config.finish(&b, l->config.finish_user, err, err_size);
    pthread_mutex_lock(&l->mutex);
    return status;
}

static void *worker_main(void *arg) {
    loader *l = arg;
    char err[LOADER_READ_ERR_BYTES];
    pthread_mutex_lock(&l->mutex);
    for (;;) {
        while (!l->shutdown && !claimable(l)) pthread_cond_wait(&l->work, &l->mutex);
        if (l->shutdown) break;
        int64_t unit = l->next_claim++, b = unit / l->chunks_per_batch;
        int c = (int)(unit % l->chunks_per_batch);
        loader_slot *slot = &l->slots[b % l->config.depth];
        if (c == 0) {
            slot->index = b;
            slot->n = batch_size(l, b);
            slot->chunks_left = chunks_of(l, b);
            slot->state = SLOT_FILLING;
        }
        int offset = c * l->chunk, n = slot->n - offset < l->chunk ? slot->n - offset : l->chunk;
        if (l->filling++ == 0) l->busy_since = clock_monotonic();
        pthread_mutex_unlock(&l->mutex);

        err[0] = '\0';
        int64_t first = batch_start(l, b) + offset;
        const int64_t *indices; /* only a permutation order has l->permutation (NULL otherwise) */
        if (l->order == ORDER_PERMUTATION) {
            indices = l->permutation + first;
        } else {
            fill_indices(l, slot->indices + offset, first, n);
            indices = slot->indices + offset;
        }
        void *fields[LOADER_MAX_FIELDS];
        slot_fields(l, slot, fields);
        for (int f = 0; f < l->source.fields; f++)
            fields[f] = (char *)fields[f] + (size_t)offset * l->source.field_bytes[f];
        int status = l->source.read(&l->source, fields, indices, n, err, sizeof err);

        pthread_mutex_lock(&l->mutex);
        if (status == 0) {
            l->samples_filled += n;
        } else if (slot->state != SLOT_FAILED) {
            snprintf(slot->err, sizeof slot->err, "%s: reading batch %lld failed: %s",
                     l->source.name, (long long)b, err[0] ? err : "(no message)");
            slot->state = SLOT_FAILED;
            l->failed = 1;
        }
        if (--slot->chunks_left == 0 && slot->state == SLOT_FILLING) {
            if (l->config.finish && finish_batch(l, slot, err, sizeof err) != 0) {
                snprintf(slot->err, sizeof slot->err, "%s: finishing batch %lld failed: %s", l->source.name,
                         (long long)b, err[0] ? err : "(no message)");
                slot->state = SLOT_FAILED;
                l->failed = 1;
            } else if (slot->state == SLOT_FILLING) {
                slot->state = SLOT_READY;
            }
        }
        if (--l->filling == 0) l->busy_seconds += clock_monotonic() - l->busy_since;
        pthread_cond_broadcast(&l->done);
    }
    pthread_mutex_unlock(&l->mutex);
    return NULL;
}

static void free_slots(loader *l) {
    if (!l->slots) return;
    for (int i = 0; i < l->config.depth; i++) {
        loader_slot *s = &l->slots[i];
        if (s->block) {
            if (l->config.alloc_host) l->config.free_host(s->block, l->config.user);
            else free(s->block);
        }
        free(s->indices);
    }
    free(l->slots);
    l->slots = NULL;
}

/* --- opening ------------------------------------------------------------------------------------- */

/* An image data set as a source: images float [H, W, C], labels int32. */
static int dataset_source_read(const loader_source *s, void *const out[LOADER_MAX_FIELDS],
                               const int64_t *indices, int n, char *err, size_t err_size) {
    const dataset *d = s->impl;
    return d->read(d, out[0], out[1], indices, n, err, err_size);
}

static void dataset_source_epoch(const loader_source *s, int epoch) {
    dataset_set_epoch((const dataset *)s->impl, epoch);
}

loader *loader_open(const dataset *d, const loader_config *config, char *err, size_t err_size) {
    if (!d || !d->read || d->count <= 0) {
        snprintf(err, err_size, "loader: data set %s is not open or holds no samples",
                 d && d->name[0] ? d->name : "(none)");
        return NULL;
    }
    loader_source s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "%s", d->name);
    s.count = d->count;
    s.fields = 2;
    s.field_bytes[0] = dataset_image_floats(d) * sizeof(float);
    s.field_bytes[1] = sizeof(int32_t);
    s.read = dataset_source_read;
    s.set_epoch = dataset_source_epoch;
    s.impl = (void *)d;
    loader *l = loader_open_source(&s, config, err, err_size);
    if (l) l->data = d;
    return l;
}

static void *alloc_buffer(const loader_config *c, size_t bytes) {
    return c->alloc_host ? c->alloc_host(bytes, c->user) : malloc(bytes);
}

static int check_source(const loader_source *s, char *err, size_t err_size) {
    const char *name = s && s->name[0] ? s->name : "(none)";
    if (!s || !s->read || s->count <= 0) {
        snprintf(err, err_size, "loader: data set %s is not open or holds no samples", name);
        return -1;
    }
    if (s->fields < 1 || s->fields > LOADER_MAX_FIELDS) {
        snprintf(err, err_size, "loader: %s has %d fields per sample, expected 1..%d", name, s->fields,
                 LOADER_MAX_FIELDS);
        return -1;
    }
    for (int f = 0; f < s->fields; f++)
        if (s->field_bytes[f] == 0 || s->field_bytes[f] > ((size_t)1 << 30)) {
            snprintf(err, err_size, "loader: %s field %d is %zu bytes a sample, expected 1 byte to 1 GiB",
                     name, f, s->field_bytes[f]);
            return -1;
        }
    return 0;
}

loader *loader_open_source(const loader_source *s, const loader_config *config, char *err,
                           size_t err_size) {
    if (check_source(s, err, err_size) != 0) return NULL;
    loader_config c = *config;
    if (c.depth == 0) c.depth = LOADER_DEFAULT_DEPTH;
    if (c.workers == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        c.workers = cpus < 1 ? 1 : cpus > LOADER_MAX_AUTO_WORKERS ? LOADER_MAX_AUTO_WORKERS
                                                                  : (int)cpus;
    }
    if (c.batch <= 0 || c.workers < 0 || c.depth < 0 || c.shuffle_window < 0) {
        snprintf(err, err_size,
                 "loader: batch %d, workers %d, depth %d, shuffle window %lld; expected batch > 0, "
                 "workers >= 0, depth >= 0 (0 = default) and a window >= 0 (0 = automatic)",
                 config->batch, config->workers, config->depth, (long long)config->shuffle_window);
        return NULL;
    }
    if ((c.alloc_host == NULL) != (c.free_host == NULL)) {
        snprintf(err, err_size, "loader: alloc_host and free_host must be given together");
        return NULL;
    }
    int shards = c.shards > 1 ? c.shards : 1;
    if (shards > 1 && (c.shard < 0 || c.shard >= shards)) {
        snprintf(err, err_size, "loader: shard %d of %d; expected 0..%d", c.shard, shards, shards - 1);
        return NULL;
    }
    /* a shard takes only whole batches, so that every rank has as many */
    int64_t batches = shards > 1 ? s->count / ((int64_t)c.batch * shards)
                      : c.drop_last ? s->count / c.batch : (s->count + c.batch - 1) / c.batch;
    if (batches == 0) {
        snprintf(err, err_size,
                 "loader: %s holds %lld samples, fewer than one batch of %d, and drop_last is "
                 "set: an epoch would be empty",
                 s->name, (long long)s->count, c.batch);
        return NULL;
    }

    loader *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, err_size, "loader: out of memory");
        return NULL;
    }
    l->source = *s;
    l->config = c;
    l->batches = batches;
    for (int f = 0; f < s->fields; f++) {
        l->field_offset[f] = l->block_bytes;
        size_t bytes = (size_t)c.batch * s->field_bytes[f];
        l->block_bytes += (bytes + LOADER_FIELD_ALIGN - 1) / LOADER_FIELD_ALIGN * LOADER_FIELD_ALIGN;
    }
    l->order = !c.shuffle ? ORDER_IN_ORDER
               : c.shuffle_window == 0 && s->count <= LOADER_MAX_PERMUTATION ? ORDER_PERMUTATION
                                                                            : ORDER_WINDOWS;
    l->window = c.shuffle_window > 0 ? c.shuffle_window : LOADER_DEFAULT_WINDOW;
    pthread_mutex_init(&l->mutex, NULL);
    pthread_cond_init(&l->work, NULL);
    pthread_cond_init(&l->done, NULL);
    if (l->order == ORDER_PERMUTATION) l->permutation = malloc((size_t)s->count * sizeof *l->permutation);
    l->slots = calloc((size_t)c.depth, sizeof *l->slots);
    /* thread_count counts only started ones */
    int want_threads = c.workers;
    l->chunk = (c.batch + c.workers - 1) / c.workers;
    if (l->chunk < LOADER_MIN_CHUNK) l->chunk = LOADER_MIN_CHUNK;
    if (l->chunk > c.batch) l->chunk = c.batch;
    l->chunks_per_batch = (c.batch + l->chunk - 1) / l->chunk;
    l->threads = calloc((size_t)want_threads, sizeof *l->threads);
    if ((l->order == ORDER_PERMUTATION && !l->permutation) || !l->slots || !l->threads) {
        snprintf(err, err_size, "loader: out of memory for %lld indices and %d slots",
                 (long long)s->count, c.depth);
        loader_close(l);
        return NULL;
    }
    for (int i = 0; i < c.depth; i++) {
        loader_slot *slot = &l->slots[i];
        slot->index = -1;
        slot->block = alloc_buffer(&c, l->block_bytes);
        if (l->order != ORDER_PERMUTATION) slot->indices = malloc((size_t)c.batch * sizeof *slot->indices);
        if (!slot->block || (l->order != ORDER_PERMUTATION && !slot->indices)) {
            snprintf(err, err_size, "loader: cannot allocate batch buffer %d of %zu bytes", i,
                     l->block_bytes);
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

void loader_source_close(loader_source *s) {
    if (s && s->close) s->close(s);
}

int64_t loader_batches_per_epoch(const loader *l) {
    return l->batches;
}

size_t loader_block_bytes(const loader *l) { return l->block_bytes; }

size_t loader_field_offset(const loader *l, int field) {
    return field >= 0 && field < l->source.fields ? l->field_offset[field] : 0;
}

/* --- epochs and batches ---------------------------------------------------------------------------- */

void loader_start_epoch(loader *l, int epoch) {
    pthread_mutex_lock(&l->mutex);
    l->running = 0; /* no new claims; reads in progress end, then nothing touches the slots */
    while (l->filling > 0) pthread_cond_wait(&l->done, &l->mutex);
    for (int i = 0; i < l->config.depth; i++) {
        l->slots[i].state = SLOT_FREE;
        l->slots[i].index = -1;
    }
    l->epoch = epoch;
    if (l->order == ORDER_PERMUTATION)
        make_permutation(l->permutation, l->source.count, l->config.seed, epoch);
    if (l->source.set_epoch) l->source.set_epoch(&l->source, epoch); /* no read is in progress */
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
    double start = clock_monotonic();
    while (!(slot->index == l->next_deliver &&
             (slot->state == SLOT_READY || slot->state == SLOT_FAILED)))
        pthread_cond_wait(&l->done, &l->mutex);
    l->wait_seconds += clock_monotonic() - start;
    if (slot->state == SLOT_FAILED) {
        snprintf(l->error, sizeof l->error, "%s", slot->err);
        l->error_delivered = 1;
        snprintf(err, err_size, "%s", l->error);
        pthread_mutex_unlock(&l->mutex);
        return -1;
    }
    batch_view(l, slot, b);
    l->next_deliver++;
    l->holding = 1;
    pthread_mutex_unlock(&l->mutex);
    return 1;
}

loader_stats loader_epoch_stats(const loader *l) {
    loader *m = (loader *)l; /* the mutex guards the counters; reading them does not change l */
    pthread_mutex_lock(&m->mutex);
    double busy = m->busy_seconds + (m->filling > 0 ? clock_monotonic() - m->busy_since : 0.0);
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
