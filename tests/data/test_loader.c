/* Batch loader over a fake data set whose images carry their own index: every index exactly once
 * per epoch (with and without drop_last, batches that do not divide the count, several worker
 * counts and ring depths, reads finishing out of order), the order seeded per epoch, identity
 * without shuffle, a failing read reported to the consumer without deadlock, clean close and
 * restart mid-epoch, the caller's allocator, statistics. Sources of several fields (one block per
 * batch, fields at aligned offsets), windowed shuffling (each index once, batches local to a
 * window or two, seeded), an epoch of Criteo Terabyte's 4.4 billion rows opened without a
 * permutation, and the Criteo source over a range of a reader's rows. An alarm turns any hang
 * into a failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "data/loader.h"
#include "tests/support/testutil.h"

/* Image of sample i: [i, -i]; label: i % 7. */
typedef struct fake {
    int64_t fail_index;     /* a read including this index fails; -1: never */
    int delay_us;           /* per batch, times a factor from the first index, to reorder */
    atomic_int reads;
} fake;

static int fake_read(const dataset *d, float *images, int32_t *labels, const int64_t *indices,
                     int n, char *err, size_t err_size) {
    fake *f = d->impl;
    atomic_fetch_add(&f->reads, 1);
    if (f->delay_us && n > 0) usleep((useconds_t)(f->delay_us * (1 + indices[0] % 3)));
    for (int k = 0; k < n; k++) {
        if (indices[k] == f->fail_index) {
            snprintf(err, err_size, "fake: cannot read sample %lld", (long long)indices[k]);
            return -1;
        }
        images[2 * k] = (float)indices[k];
        images[2 * k + 1] = -(float)indices[k];
        labels[k] = (int32_t)(indices[k] % 7);
    }
    return 0;
}

static dataset fake_dataset(fake *f, int64_t count, int64_t fail_index, int delay_us) {
    f->fail_index = fail_index;
    f->delay_us = delay_us;
    atomic_init(&f->reads, 0);
    dataset d = {.count = count, .height = 2, .width = 1, .channels = 1, .classes = 7,
                 .read = fake_read, .impl = f};
    snprintf(d.name, sizeof d.name, "fake");
    return d;
}

static loader *open_ok(const dataset *d, loader_config c) {
    char err[512] = "";
    loader *l = loader_open(d, &c, err, sizeof err);
    if (!l) fail_msg("%s", err);
    return l;
}

/* Runs one epoch; checks batch numbering, sizes and that each image matches its label; writes the
 * delivered indices in order to `order` and returns how many there were. */
static int64_t run_epoch(loader *l, int epoch, int batch, int64_t count, int drop_last,
                         int64_t *order) {
    char err[512] = "";
    loader_start_epoch(l, epoch);
    int64_t batches = loader_batches_per_epoch(l), delivered = 0, b = 0;
    loader_batch lb;
    int status;
    while ((status = loader_next(l, &lb, err, sizeof err)) == 1) {
        assert_int_equal(lb.index, b);
        int64_t left = count - b * batch;
        assert_int_equal(lb.n, left < batch ? left : batch);
        for (int k = 0; k < lb.n; k++) {
            int64_t i = (int64_t)lb.images[2 * k];
            expect_eq(lb.images[2 * k + 1], -(float)i);
            assert_int_equal(lb.labels[k], i % 7);
            order[delivered++] = i;
        }
        b++;
    }
    if (status != 0) fail_msg("loader_next: %s", err);
    assert_int_equal(b, batches);
    assert_int_equal(batches, drop_last ? count / batch : (count + batch - 1) / batch);
    assert_int_equal(loader_next(l, &lb, err, sizeof err), 0); /* stays at the end */
    return delivered;
}

static void check_once_each(const int64_t *order, int64_t n, int64_t count) {
    char *seen = calloc((size_t)count, 1);
    for (int64_t k = 0; k < n; k++) {
        assert_in_range(order[k], 0, count - 1);
        if (seen[order[k]]++) fail_msg("index %lld delivered twice", (long long)order[k]);
    }
    free(seen);
}

static void test_each_index_once(void **state) {
    alarm(120);
    const int64_t counts[] = {1, 10, 37, 64};
    const int batches[] = {1, 5, 8, 64};
    const int workers[] = {1, 2, 3, 8};
    const int depths[] = {1, 2, 4};
    int64_t order[64];
    for (int ci = 0; ci < 4; ci++)
        for (int bi = 0; bi < 4; bi++)
            for (int drop = 0; drop < 2; drop++)
                for (int wi = 0; wi < 4; wi++)
                    for (int di = 0; di < 3; di++) {
                        fake f;
                        int64_t count = counts[ci];
                        dataset d = fake_dataset(&f, count, -1, (wi + di) % 3 == 0 ? 50 : 0);
                        loader_config c = {.batch = batches[bi], .workers = workers[wi],
                                           .depth = depths[di], .shuffle = 1, .drop_last = drop,
                                           .seed = 9};
                        char err[512] = "";
                        loader *l = loader_open(&d, &c, err, sizeof err);
                        if (drop && count < batches[bi]) { /* an empty epoch is refused */
                            assert_null(l);
                            assert_non_null(strstr(err, "drop_last"));
                            continue;
                        }
                        if (!l) fail_msg("%s", err);
                        for (int epoch = 0; epoch < 2; epoch++) {
                            int64_t n = run_epoch(l, epoch, batches[bi], count, drop, order);
                            assert_int_equal(n, drop ? count / batches[bi] * batches[bi] : count);
                            check_once_each(order, n, count);
                        }
                        loader_close(l);
                    }
    alarm(0);
}

static int same_order(const int64_t *a, const int64_t *b, int64_t n) {
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static void test_seeded_order(void **state) {
    alarm(60);
    enum { COUNT = 1000, BATCH = 32 };
    fake f;
    dataset d = fake_dataset(&f, COUNT, -1, 0);
    loader_config c = {.batch = BATCH, .workers = 3, .depth = 3, .shuffle = 1, .seed = 123};
    int64_t *orders[5];
    for (int i = 0; i < 5; i++) orders[i] = malloc(COUNT * sizeof(int64_t));
    loader *a = open_ok(&d, c);
    run_epoch(a, 0, BATCH, COUNT, 0, orders[0]);
    run_epoch(a, 1, BATCH, COUNT, 0, orders[1]);
    run_epoch(a, 0, BATCH, COUNT, 0, orders[2]); /* epoch 0 again: the same order */
    loader_close(a);
    loader *b = open_ok(&d, c);                 /* same seed, another loader */
    run_epoch(b, 1, BATCH, COUNT, 0, orders[3]);
    loader_close(b);
    c.seed = 124;
    loader *e = open_ok(&d, c);
    run_epoch(e, 0, BATCH, COUNT, 0, orders[4]);
    loader_close(e);

    assert_false(same_order(orders[0], orders[1], COUNT));
    assert_true(same_order(orders[0], orders[2], COUNT));
    assert_true(same_order(orders[1], orders[3], COUNT));
    assert_false(same_order(orders[0], orders[4], COUNT));
    int64_t in_place = 0; /* a shuffle, not a near-identity */
    for (int64_t i = 0; i < COUNT; i++) in_place += orders[0][i] == i;
    expect_lt(in_place, 20);
    for (int i = 0; i < 5; i++) free(orders[i]);
    alarm(0);
}

static void test_no_shuffle(void **state) {
    alarm(60);
    enum { COUNT = 203, BATCH = 16 };
    fake f;
    dataset d = fake_dataset(&f, COUNT, -1, 200);
    loader *l = open_ok(&d, (loader_config){.batch = BATCH, .workers = 4, .depth = 3, .seed = 5});
    int64_t order[COUNT];
    for (int epoch = 0; epoch < 2; epoch++) {
        assert_int_equal(run_epoch(l, epoch, BATCH, COUNT, 0, order), COUNT);
        for (int64_t i = 0; i < COUNT; i++) assert_int_equal(order[i], i);
    }
    loader_close(l);
    alarm(0);
}

/* Sample 50 fails: in order, the batches before it arrive (6 of 8, 1 of 32), then -1 with the
 * reader's message, repeated on later calls; a new epoch meets it again; close joins cleanly.
 * Batches of 32 with 4 workers are read in chunks of 8: one failing chunk fails its batch. */
static void test_error_propagation(void **state) {
    alarm(60);
    for (int shuffle = 0; shuffle < 2; shuffle++)
        for (int workers = 1; workers <= 4; workers += 3)
        for (int batch = 8; batch <= 32; batch *= 4) {
            fake f;
            dataset d = fake_dataset(&f, 200, 50, 100);
            loader *l = open_ok(&d, (loader_config){.batch = batch, .workers = workers, .depth = 4,
                                                     .shuffle = shuffle, .seed = 77});
            for (int epoch = 0; epoch < 2; epoch++) {
                loader_start_epoch(l, epoch);
                loader_batch b;
                char err[512] = "";
                int status, delivered = 0;
                while ((status = loader_next(l, &b, err, sizeof err)) == 1) delivered++;
                assert_int_equal(status, -1);
                if (!strstr(err, "fake: cannot read sample 50") || !strstr(err, "batch"))
                    fail_msg("unexpected message: %s", err);
                if (!shuffle) assert_int_equal(delivered, 48 / batch);
                expect_lt(delivered, (200 + batch - 1) / batch);
                err[0] = '\0';
                assert_int_equal(loader_next(l, &b, err, sizeof err), -1);
                assert_non_null(strstr(err, "sample 50"));
            }
            loader_close(l);
        }
    alarm(0);
}

/* What the finish hook saw: per batch of an epoch, how often it ran and on which slot. */
typedef struct finish_log {
    atomic_int calls[64];
    atomic_int slot[64];
    atomic_int concurrent, most_concurrent;
    int64_t fail_batch;   /* its finish fails; -1: none */
} finish_log;

/* Marks every label of the batch (+1000), as a decoder would rewrite a batch, slowly enough that
 * several batches finish at once. */
static int finish_marking(const loader_batch *b, void *user, char *err, size_t err_size) {
    finish_log *log = user;
    int now = atomic_fetch_add(&log->concurrent, 1) + 1;
    for (int seen = atomic_load(&log->most_concurrent); now > seen &&
         !atomic_compare_exchange_weak(&log->most_concurrent, &seen, now);) {}
    atomic_fetch_add(&log->calls[b->index], 1);
    atomic_store(&log->slot[b->index], b->slot);
    usleep(2000);
    atomic_fetch_sub(&log->concurrent, 1);
    if (b->index == log->fail_batch) {
        snprintf(err, err_size, "no decoder for batch %lld", (long long)b->index);
        return -1;
    }
    for (int k = 0; k < b->n; k++) b->labels[k] += 1000;
    return 0;
}

static void test_finish_hook(void **state) {
    alarm(60);
    enum { COUNT = 200, BATCH = 8, DEPTH = 4 };
    for (int epoch = 0; epoch < 2; epoch++) {
        fake f;
        dataset d = fake_dataset(&f, COUNT, -1, 0);
        static finish_log log;
        memset(&log, 0, sizeof log);
        log.fail_batch = -1;
        loader *l = open_ok(&d, (loader_config){.batch = BATCH, .workers = 4, .depth = DEPTH, .shuffle = 1,
                                                 .seed = 5, .finish = finish_marking, .finish_user = &log});
        loader_start_epoch(l, epoch);
        loader_batch b;
        char err[512] = "";
        int64_t n = 0;
        while (loader_next(l, &b, err, sizeof err) == 1) {
            /* finished before delivery, once, in its ring slot */
            assert_int_equal(atomic_load(&log.calls[b.index]), 1);
            assert_int_equal(b.slot, b.index % DEPTH);
            assert_int_equal(atomic_load(&log.slot[b.index]), b.slot);
            for (int k = 0; k < b.n; k++)
                assert_int_equal(b.labels[k], 1000 + (int64_t)b.images[2 * k] % 7);
            n += b.n;
        }
        assert_int_equal(n, COUNT);
        /* batches finish side by side, never more than the ring holds */
        assert_in_range(atomic_load(&log.most_concurrent), 1, DEPTH);
        loader_close(l);
    }
    /* a finish that fails fails its batch as a read would, with the hook's reason */
    fake f;
    dataset d = fake_dataset(&f, COUNT, -1, 0);
    static finish_log log;
    memset(&log, 0, sizeof log);
    log.fail_batch = 3;
    loader *l = open_ok(&d, (loader_config){.batch = BATCH, .workers = 2, .depth = DEPTH,
                                             .finish = finish_marking, .finish_user = &log});
    loader_start_epoch(l, 0);
    loader_batch b;
    char err[512] = "";
    int status, delivered = 0;
    while ((status = loader_next(l, &b, err, sizeof err)) == 1) delivered++;
    assert_int_equal(status, -1);
    assert_int_equal(delivered, 3);
    if (!strstr(err, "finishing batch 3 failed: no decoder for batch 3")) fail_msg("unexpected message: %s", err);
    log.fail_batch = -1;
    loader_start_epoch(l, 1); /* a new epoch starts clean, waiting for finishes in progress */
    while ((status = loader_next(l, &b, err, sizeof err)) == 1) delivered++;
    assert_int_equal(status, 0);
    loader_close(l);
    alarm(0);
}

static void test_close_and_restart_mid_epoch(void **state) {
    alarm(60);
    enum { COUNT = 500, BATCH = 10 };
    fake f;
    dataset d = fake_dataset(&f, COUNT, -1, 1000);
    loader_config c = {.batch = BATCH, .workers = 4, .depth = 4, .shuffle = 1, .seed = 1};
    char err[512];
    loader_batch b;

    loader_close(open_ok(&d, c)); /* never started */

    loader *l = open_ok(&d, c);
    loader_start_epoch(l, 0);
    loader_close(l); /* reads in flight */

    l = open_ok(&d, c);
    loader_start_epoch(l, 0);
    assert_int_equal(loader_next(l, &b, err, sizeof err), 1);
    assert_int_equal(loader_next(l, &b, err, sizeof err), 1);
    loader_close(l); /* holding a batch, ring full */

    /* restart: three batches of epoch 0, then a whole epoch 1 from its start */
    l = open_ok(&d, c);
    loader_start_epoch(l, 0);
    for (int i = 0; i < 3; i++) assert_int_equal(loader_next(l, &b, err, sizeof err), 1);
    int64_t order[COUNT];
    assert_int_equal(run_epoch(l, 1, BATCH, COUNT, 0, order), COUNT);
    check_once_each(order, COUNT, COUNT);
    loader_close(l);
    alarm(0);
}

typedef struct allocations {
    atomic_int allocs, frees;
} allocations;

static void *counting_alloc(size_t bytes, void *user) {
    atomic_fetch_add(&((allocations *)user)->allocs, 1);
    return malloc(bytes);
}

static void counting_free(void *ptr, void *user) {
    atomic_fetch_add(&((allocations *)user)->frees, 1);
    free(ptr);
}

static void test_allocator_and_stats(void **state) {
    alarm(60);
    enum { COUNT = 64, BATCH = 4 };
    fake f;
    dataset d = fake_dataset(&f, COUNT, -1, 2000); /* slow: the consumer has to wait */
    allocations counts;
    atomic_init(&counts.allocs, 0);
    atomic_init(&counts.frees, 0);
    loader *l = open_ok(&d, (loader_config){.batch = BATCH, .workers = 1, .depth = 2,
                                            .shuffle = 1, .seed = 3, .alloc_host = counting_alloc,
                                            .free_host = counting_free, .user = &counts});
    assert_int_equal(atomic_load(&counts.allocs), 2); /* one block (images and labels) per slot */
    int64_t order[COUNT];
    run_epoch(l, 0, BATCH, COUNT, 0, order);
    loader_stats s = loader_epoch_stats(l);
    printf("wait %.4f s, %.0f samples/s\n", s.wait_seconds, s.samples_per_s);
    expect_gt(s.wait_seconds, 0); /* a consumer of a slow source waits (how long is the machine's) */
    expect_gt(s.samples_per_s, 0);
    loader_close(l);
    assert_int_equal(atomic_load(&counts.frees), 2);
    alarm(0);
}

static void test_open_errors(void **state) {
    fake f;
    dataset d = fake_dataset(&f, 10, -1, 0);
    char err[512];
    loader_config bad_batch = {.batch = 0};
    assert_null(loader_open(&d, &bad_batch, err, sizeof err));
    assert_non_null(strstr(err, "batch"));
    loader_config half_allocator = {.batch = 2, .alloc_host = counting_alloc};
    assert_null(loader_open(&d, &half_allocator, err, sizeof err));
    assert_non_null(strstr(err, "free_host"));
    dataset empty = {0};
    loader_config fine = {.batch = 2};
    assert_null(loader_open(&empty, &fine, err, sizeof err));

    loader *l = open_ok(&d, fine);
    loader_batch b;
    assert_int_equal(loader_next(l, &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "loader_start_epoch"));
    loader_close(l);
}

/* Over a real reader: each batch equals a direct read of the indices it says it holds. */
static void test_synthetic(void **state) {
    alarm(60);
    synthetic_spec spec = {.count = 1000, .height = 64, .width = 64, .channels = 3,
                           .classes = 100, .seed = 8};
    dataset d;
    char err[512];
    assert_int_equal(dataset_open_synthetic(&d, &spec, err, sizeof err), 0);
    loader *l = open_ok(&d, (loader_config){.batch = 128, .workers = 0, .depth = 0,
                                            .shuffle = 1, .drop_last = 1, .seed = 8});
    assert_int_equal(loader_batches_per_epoch(l), 7);
    size_t floats = dataset_image_floats(&d);
    float *direct = malloc(floats * sizeof(float));
    loader_start_epoch(l, 0);
    loader_batch b;
    int64_t batches = 0;
    while (loader_next(l, &b, err, sizeof err) == 1) {
        /* find sample k's index by matching its label and content against a direct read */
        for (int k = 0; k < b.n; k += 37) {
            int found = 0;
            for (int64_t i = 0; i < d.count && !found; i++) {
                int32_t label;
                assert_int_equal(d.read(&d, direct, &label, &i, 1, err, sizeof err), 0);
                found = label == b.labels[k] &&
                        memcmp(direct, b.images + k * floats, floats * sizeof(float)) == 0;
            }
            assert_true(found);
        }
        batches++;
    }
    assert_int_equal(batches, 7);
    loader_stats s = loader_epoch_stats(l);
    printf("synthetic 64x64x3 batches of 128: wait %.4f s, workers %.0f samples/s\n",
           s.wait_seconds, s.samples_per_s);
    free(direct);
    loader_close(l);
    dataset_close(&d);
    alarm(0);
}

/* --- sources of several fields, windows, huge epochs, Criteo ---------------------------------- */

/* Sample i: field 0 = 13 floats i + j/16, field 1 = 26 int32 (i * 31 + j), field 2 = one float i % 2. */
static int three_field_read(const loader_source *s, void *const out[LOADER_MAX_FIELDS], const int64_t *indices,
                            int n, char *err, size_t err_size) {
    atomic_fetch_add(&((fake *)s->impl)->reads, 1);
    for (int k = 0; k < n; k++) {
        int64_t i = indices[k];
        for (int j = 0; j < 13; j++) ((float *)out[0])[k * 13 + j] = (float)i + j / 16.0f;
        for (int j = 0; j < 26; j++) ((int32_t *)out[1])[k * 26 + j] = (int32_t)(i * 31 + j);
        ((float *)out[2])[k] = (float)(i % 2);
    }
    return 0;
}

static loader_source three_fields(fake *f, int64_t count) {
    atomic_init(&f->reads, 0);
    loader_source s = {.count = count, .fields = 3, .field_bytes = {13 * sizeof(float), 26 * sizeof(int32_t), sizeof(float)},
                       .read = three_field_read, .impl = f};
    snprintf(s.name, sizeof s.name, "three-fields");
    return s;
}

static loader *open_source_ok(const loader_source *s, loader_config c) {
    char err[512] = "";
    loader *l = loader_open_source(s, &c, err, sizeof err);
    if (!l) fail_msg("%s", err);
    return l;
}

/* The sample index a three-field batch row holds, after checking all its fields agree. */
static int64_t three_field_index(const loader_batch *b, int k) {
    const float *dense = (const float *)b->fields[0] + k * 13;
    const int32_t *ints = (const int32_t *)b->fields[1] + k * 26;
    int64_t i = (int64_t)dense[0];
    for (int j = 0; j < 13; j++) expect_eq(dense[j], (float)i + j / 16.0f);
    for (int j = 0; j < 26; j++) assert_int_equal(ints[j], i * 31 + j);
    expect_eq(((const float *)b->fields[2])[k], (float)(i % 2));
    return i;
}

static void test_fields_in_one_block(void **state) {
    alarm(60);
    enum { COUNT = 103, BATCH = 10 };
    fake f;
    loader_source s = three_fields(&f, COUNT);
    loader *l = open_source_ok(&s, (loader_config){.batch = BATCH, .workers = 3, .depth = 3, .shuffle = 1, .seed = 4});
    /* fields one after another, each at a multiple of LOADER_FIELD_ALIGN, sized for a full batch */
    assert_int_equal(loader_field_offset(l, 0), 0);
    assert_int_equal(loader_field_offset(l, 1), 768);           /* 10 x 52 = 520 -> 768 */
    assert_int_equal(loader_field_offset(l, 2), 768 + 1280);    /* 10 x 104 = 1040 -> 1280 */
    assert_int_equal(loader_block_bytes(l), 768 + 1280 + 256);
    char err[512];
    loader_batch b;
    int64_t order[COUNT], seen = 0;
    loader_start_epoch(l, 0);
    while (loader_next(l, &b, err, sizeof err) == 1) {
        for (int fld = 0; fld < 3; fld++)
            assert_ptr_equal(b.fields[fld], (char *)b.block + loader_field_offset(l, fld));
        assert_null(b.images); /* not an image source */
        for (int k = 0; k < b.n; k++) order[seen++] = three_field_index(&b, k);
    }
    assert_int_equal(seen, COUNT);
    check_once_each(order, COUNT, COUNT);
    loader_close(l);
    /* bad sources are refused with a message */
    loader_source bad = s;
    bad.fields = 0;
    assert_null(loader_open_source(&bad, &(loader_config){.batch = 2}, err, sizeof err));
    assert_non_null(strstr(err, "fields"));
    bad = s;
    bad.field_bytes[1] = 0;
    assert_null(loader_open_source(&bad, &(loader_config){.batch = 2}, err, sizeof err));
    assert_non_null(strstr(err, "field 1"));
    assert_null(loader_open_source(&s, &(loader_config){.batch = 2, .shuffle_window = -1}, err, sizeof err));
    assert_non_null(strstr(err, "window"));
    alarm(0);
}

static void test_windowed_order(void **state) {
    alarm(60);
    enum { COUNT = 1000, BATCH = 8, WINDOW = 64 };
    fake f;
    loader_source s = three_fields(&f, COUNT);
    loader_config c = {.batch = BATCH, .workers = 4, .depth = 4, .shuffle = 1, .seed = 11, .shuffle_window = WINDOW};
    int64_t orders[3][COUNT];
    for (int run = 0; run < 3; run++) {
        loader *l = open_source_ok(&s, c);
        loader_start_epoch(l, run == 1 ? 1 : 0); /* epochs 0, 1, then 0 again */
        loader_batch b;
        char err[512];
        int64_t seen = 0;
        while (loader_next(l, &b, err, sizeof err) == 1) {
            int64_t windows[2] = {-1, -1};
            for (int k = 0; k < b.n; k++) {
                int64_t i = three_field_index(&b, k), w = i / WINDOW;
                orders[run][seen++] = i;
                /* a batch reads from at most two windows (one boundary of the visiting order) */
                if (windows[0] < 0 || windows[0] == w) windows[0] = w;
                else if (windows[1] < 0 || windows[1] == w) windows[1] = w;
                else fail_msg("batch %lld reads from three windows", (long long)b.index);
            }
        }
        assert_int_equal(seen, COUNT);
        check_once_each(orders[run], COUNT, COUNT);
        loader_close(l);
    }
    assert_false(same_order(orders[0], orders[1], COUNT));
    assert_true(same_order(orders[0], orders[2], COUNT));
    /* the windows are visited in a shuffled order, the partial one last, each shuffled inside */
    int shuffled_windows = 0, in_place = 0;
    for (int64_t p = 0; p < COUNT; p++) {
        in_place += orders[0][p] == p;
        if (p % WINDOW == 0 && p / WINDOW < COUNT / WINDOW) shuffled_windows += orders[0][p] / WINDOW != p / WINDOW;
        if (p >= COUNT / WINDOW * WINDOW) expect_ge(orders[0][p], COUNT / WINDOW * WINDOW); /* tail last */
    }
    expect_gt(shuffled_windows, 0);
    expect_lt(in_place, 30);
    for (int64_t p = 0; p < COUNT; p++) /* what the loader read is what loader_window_index says */
        assert_int_equal(orders[0][p], loader_window_index(p, COUNT, WINDOW, 11, 0));
    alarm(0);
}

/* Windows that do not divide the count, windows of one sample, a window larger than the epoch. */
static void test_window_index_permutes(void **state) {
    const int64_t counts[] = {1, 2, 7, 100, 257};
    const int64_t windows[] = {1, 3, 16, 64, 1000};
    for (int ci = 0; ci < 5; ci++)
        for (int wi = 0; wi < 5; wi++) {
            int64_t count = counts[ci], order[257];
            for (int64_t p = 0; p < count; p++) order[p] = loader_window_index(p, count, windows[wi], 5, 3);
            check_once_each(order, count, count);
        }
}

/* An epoch of Criteo Terabyte's rows: no permutation of 4.4 billion indices (35 GB) is made;
 * batches come at once, from the whole range when shuffled, in order when not. */
static void test_huge_epoch(void **state) {
    alarm(60);
    const int64_t count = 4373472329LL;
    fake f;
    loader_source s = three_fields(&f, count);
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        loader *l = open_source_ok(&s, (loader_config){.batch = 1024, .workers = 2, .depth = 2, .shuffle = shuffle,
                                                       .drop_last = 1, .seed = 3});
        assert_int_equal(loader_batches_per_epoch(l), count / 1024);
        loader_start_epoch(l, 0);
        loader_batch b;
        char err[512];
        int64_t seen[3 * 1024], n = 0;
        for (int batch = 0; batch < 3; batch++) {
            assert_int_equal(loader_next(l, &b, err, sizeof err), 1);
            for (int k = 0; k < b.n; k++) {
                float dense = ((const float *)b.fields[0])[k * 13]; /* the index, to float precision */
                expect_ge(dense, 0); expect_lt(dense, (float)count * 1.0001f);
                if (!shuffle) assert_int_equal((int64_t)dense, batch * 1024 + k);
                seen[n++] = (int64_t)dense;
            }
        }
        if (shuffle) { /* spread over a window of LOADER_DEFAULT_WINDOW samples, not the first 3072 */
            int64_t beyond = 0;
            for (int64_t k = 0; k < n; k++) beyond += seen[k] >= 3 * 1024;
            expect_gt(beyond, n / 2);
        }
        loader_close(l);
    }
    alarm(0);
}

/* Rows 100..399 of a synthetic Criteo reader through the loader equal direct reads. */
static void test_criteo_source(void **state) {
    alarm(60);
    criteo_synthetic_spec spec = {.rows = 500, .seed = 2};
    for (int t = 0; t < CRITEO_SPARSE; t++) spec.table_sizes[t] = 10 + t * 1000;
    criteo *r;
    char err[512];
    assert_int_equal(criteo_open_synthetic(&r, &spec, err, sizeof err), 0);
    loader_source s;
    assert_int_equal(loader_source_criteo(&s, r, 100, 300, err, sizeof err), 0);
    assert_int_equal(s.count, 300);
    loader *l = open_source_ok(&s, (loader_config){.batch = 64, .workers = 2, .seed = 1});
    loader_start_epoch(l, 0);
    loader_batch b;
    int64_t position = 0;
    while (loader_next(l, &b, err, sizeof err) == 1) {
        float dense[64 * CRITEO_DENSE], labels[64];
        int32_t sparse[64 * CRITEO_SPARSE];
        int64_t rows[64];
        for (int k = 0; k < b.n; k++) rows[k] = 100 + position + k;
        assert_int_equal(criteo_read(r, dense, sparse, labels, rows, b.n, err, sizeof err), 0);
        assert_memory_equal(b.fields[0], dense, (size_t)b.n * CRITEO_DENSE * sizeof(float));
        assert_memory_equal(b.fields[1], sparse, (size_t)b.n * CRITEO_SPARSE * sizeof(int32_t));
        assert_memory_equal(b.fields[2], labels, (size_t)b.n * sizeof(float));
        position += b.n;
    }
    assert_int_equal(position, 300);
    loader_close(l);
    loader_source_close(&s);
    assert_int_equal(loader_source_criteo(&s, r, 400, 101, err, sizeof err), -1);
    assert_non_null(strstr(err, "not within the 500 rows"));
    criteo_close(r);
    alarm(0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_index_once),
        cmocka_unit_test(test_seeded_order),
        cmocka_unit_test(test_no_shuffle),
        cmocka_unit_test(test_error_propagation),
        cmocka_unit_test(test_finish_hook),
        cmocka_unit_test(test_close_and_restart_mid_epoch),
        cmocka_unit_test(test_allocator_and_stats),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_synthetic),
        cmocka_unit_test(test_fields_in_one_block),
        cmocka_unit_test(test_windowed_order),
        cmocka_unit_test(test_window_index_permutes),
        cmocka_unit_test(test_huge_epoch),
        cmocka_unit_test(test_criteo_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
