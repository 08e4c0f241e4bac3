#include "models/core/kernel_trace.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#include "kernels/check.h"

#define TRACE_MAX_JOBS 64
#define TRACE_BUFFER_BYTES ((size_t)8 << 20)
#define CONTEXT_SHARED UINT64_MAX   /* a context several jobs made streams in: not one job's */

/* --- a map of nonzero 64-bit keys (open addressing; cleared whole, never deleted from) -------- */

typedef struct u64map {
    uint64_t *keys, *values;
    size_t cap, count;
} u64map;

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL, x ^= x >> 33;
    return x;
}

static int map_get(const u64map *m, uint64_t key, uint64_t *value) {
    for (uint64_t i = mix64(key); m->cap; i++) {
        size_t at = i & (m->cap - 1);
        if (!m->keys[at]) return 0;
        if (m->keys[at] == key) {
            *value = m->values[at];
            return 1;
        }
    }
    return 0;
}

static void map_set_in(uint64_t *keys, uint64_t *values, size_t cap, uint64_t key, uint64_t value, size_t *count) {
    for (uint64_t i = mix64(key);; i++) {
        size_t at = i & (cap - 1);
        if (keys[at] && keys[at] != key) continue;
        if (!keys[at]) (*count)++;
        keys[at] = key, values[at] = value;
        return;
    }
}

/* 0, or -1 when out of memory (the entry is not kept). */
static int map_put(u64map *m, uint64_t key, uint64_t value) {
    if (2 * (m->count + 1) > m->cap) {
        size_t cap = m->cap ? 2 * m->cap : 4096, count = 0;
        uint64_t *keys = calloc(cap, sizeof *keys), *values = calloc(cap, sizeof *values);
        if (!keys || !values) {
            free(keys);
            free(values);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i]) map_set_in(keys, values, cap, m->keys[i], m->values[i], &count);
        free(m->keys);
        free(m->values);
        m->keys = keys, m->values = values, m->cap = cap, m->count = count;
    }
    map_set_in(m->keys, m->values, m->cap, key, value, &m->count);
    return 0;
}

static void map_free(u64map *m) {
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof *m);
}

/* --- the process's tracer ---------------------------------------------------------------------- */

struct kernel_trace_job {
    int slot;
    kernel_scopes *scopes;
    kernel_tally *tally;      /* while tracing: the buffer callbacks fill it */
    int tracing;              /* between start and stop */
    int stopped;              /* its stop is waiting for the others */
};

/* CUPTI allows one subscriber per process and delivers every context's records through one pair
 * of buffer callbacks, on its own thread, with one clock: the tracer that owns them is the
 * process's (one lock for all of it: jobs, maps, tallies). */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    CUpti_SubscriberHandle subscriber;
    int subscribed, users;
    kernel_trace_job *jobs[TRACE_MAX_JOBS];
    int tracing, stopped;     /* jobs tracing a window; of them, those waiting in stop */
    int switching;            /* collection is being turned on or off (CUPTI is called without the lock:
                                 it may hand buffers over, whose callback takes it) */
    atomic_int collecting;    /* eager launches are recorded (a window's start to its collection's end):
                                 read without the lock by every API call's callback */
    long closes;              /* collections ended: what a waiting job waits for */
    u64map nodes;             /* graph node id -> job slot << 32 | scope */
    u64map launches;          /* correlation id -> the same, for eager launches (traced windows only;
                                 kept past the collection's end, for a job still taking its tally) */
    u64map streams;           /* context id << 32 | stream id, with the top bit -> job slot */
    u64map contexts;          /* context id + 1 -> job slot, or CONTEXT_SHARED */
    uint64_t unattributed;    /* records of no joined job (another library's thread, a job gone) */
} tracer = {.lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER};

static uint64_t pack(int slot, int scope) { return (uint64_t)(uint32_t)slot << 32 | (uint32_t)scope; }

static int slot_of_locked(const kernel_scopes *s) {
    for (int i = 0; s && i < TRACE_MAX_JOBS; i++)
        if (tracer.jobs[i] && tracer.jobs[i]->scopes == s) return i;
    return -1;
}

static uint64_t stream_key(uint32_t context, uint32_t stream) {
    return (uint64_t)1 << 63 | (uint64_t)context << 32 | stream;
}

static uint64_t CUPTIAPI realtime_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A node made while a job's thread captures: the job's scope at that moment. */
static void node_created(const CUpti_GraphData *g, const kernel_scopes *s, int scope) {
    uint64_t id = 0;
    if (!g || cuptiGetGraphNodeId(g->node, &id) != CUPTI_SUCCESS || !id) return; /* its kernels: unscoped */
    pthread_mutex_lock(&tracer.lock);
    int slot = slot_of_locked(s);
    if (slot >= 0) map_put(&tracer.nodes, id, pack(slot, scope));
    pthread_mutex_unlock(&tracer.lock);
}

/* Instantiation clones every node into the executable graph: the clone's kernels carry its id. */
static void node_cloned(const CUpti_GraphData *g) {
    uint64_t original = 0, clone = 0, value;
    if (!g || cuptiGetGraphNodeId(g->originalNode, &original) != CUPTI_SUCCESS ||
        cuptiGetGraphNodeId(g->node, &clone) != CUPTI_SUCCESS || !clone)
        return;
    pthread_mutex_lock(&tracer.lock);
    if (map_get(&tracer.nodes, original, &value)) map_put(&tracer.nodes, clone, value);
    pthread_mutex_unlock(&tracer.lock);
}

/* A stream made on a job's thread is the job's; so is its context, unless another job's streams
 * are made there too (job_host's streams mode: one context). */
static void stream_created(const CUpti_ResourceData *r, const kernel_scopes *s) {
    uint32_t context = 0, stream = 0;
    if (cuptiGetContextId(r->context, &context) != CUPTI_SUCCESS ||
        cuptiGetStreamIdEx(r->context, r->resourceHandle.stream, 0, &stream) != CUPTI_SUCCESS)
        return;
    pthread_mutex_lock(&tracer.lock);
    int slot = slot_of_locked(s);
    uint64_t owner;
    if (slot >= 0) {
        map_put(&tracer.streams, stream_key(context, stream), (uint64_t)slot);
        int known = map_get(&tracer.contexts, (uint64_t)context + 1, &owner);
        map_put(&tracer.contexts, (uint64_t)context + 1, known && owner != (uint64_t)slot ? CONTEXT_SHARED : (uint64_t)slot);
    }
    pthread_mutex_unlock(&tracer.lock);
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
    int scope;
    kernel_scopes *s = kernel_scope_current(&scope);
    if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
        const CUpti_ResourceData *r = data;
        if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) node_cloned(r->resourceDescriptor);
        else if (s && cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) node_created(r->resourceDescriptor, s, scope);
        else if (s && cbid == CUPTI_CBID_RESOURCE_STREAM_CREATED) stream_created(r, s);
        return;
    }
    /* the runtime and driver domains, on while subscribed: eager launches, recorded while collecting */
    const CUpti_CallbackData *c = data;
    if (!s || c->callbackSite != CUPTI_API_ENTER || !c->correlationId ||
        !atomic_load_explicit(&tracer.collecting, memory_order_relaxed))
        return;
    pthread_mutex_lock(&tracer.lock);
    int slot = slot_of_locked(s);
    if (slot >= 0 && atomic_load_explicit(&tracer.collecting, memory_order_relaxed))
        map_put(&tracer.launches, c->correlationId, pack(slot, scope));
    pthread_mutex_unlock(&tracer.lock);
}

/* --- the records ------------------------------------------------------------------------------- */

typedef struct trace_record {
    uint64_t start, end, node;
    uint32_t correlation, context, stream;
    const char *name;
    int copy;
} trace_record;

static const char *memcpy_name(uint8_t kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "[memcpy HtoD]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "[memcpy DtoH]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "[memcpy DtoD]";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "[memcpy PtoP]";
    default: return "[memcpy]";
    }
}

/* The kinds the tracer enables; 0 for any other record. */
static int read_record(const CUpti_Activity *a, trace_record *r) {
    if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || a->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
        *r = (trace_record){k->start, k->end, k->graphNodeId, k->correlationId, k->contextId, k->streamId, k->name, 0};
        return 1;
    }
    if (a->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)a;
        *r = (trace_record){m->start, m->end, m->graphNodeId, m->correlationId, m->contextId, m->streamId,
                            memcpy_name(m->copyKind), 1};
        return 1;
    }
    if (a->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)a;
        *r = (trace_record){m->start, m->end, m->graphNodeId, m->correlationId, m->contextId, m->streamId,
                            "[memset]", 1};
        return 1;
    }
    return 0;
}

/* The job slot and scope a record is filed under: its graph node, its launch, its stream, its
 * context, in that order; -1 when none says. The context names a job only while one job has
 * joined: with several in the process, a context that looks like one job's may be another's
 * whose streams are not made yet (job_host's jobs set up in turn, one may train and trace while
 * the next sets up), so work on streams no job made is nobody's there. */
static int owner_locked(const trace_record *r, int *scope) {
    uint64_t v;
    *scope = 0;
    if ((r->node && map_get(&tracer.nodes, r->node, &v)) || (r->correlation && map_get(&tracer.launches, r->correlation, &v))) {
        *scope = (int)(uint32_t)v;
        return (int)(v >> 32);
    }
    if (map_get(&tracer.streams, stream_key(r->context, r->stream), &v)) return (int)v;
    if (tracer.users == 1 && map_get(&tracer.contexts, (uint64_t)r->context + 1, &v) && v != CONTEXT_SHARED)
        return (int)v;
    return -1;
}

static void take_record(const CUpti_Activity *a) {
    trace_record r;
    if (!read_record(a, &r)) return;
    if (!r.start || !r.end || r.end < r.start) return; /* incomplete (a forced flush): after every window's end */
    int scope;
    pthread_mutex_lock(&tracer.lock);
    int slot = owner_locked(&r, &scope);
    kernel_trace_job *j = slot >= 0 && slot < TRACE_MAX_JOBS ? tracer.jobs[slot] : NULL;
    if (!j) tracer.unattributed++;
    if (j && j->tally) {
        kernel_class cls = r.copy ? KCLASS_COPY
                           : scope ? kernel_scopes_info(j->scopes, scope).cls : kernel_class_of_name(r.name);
        kernel_tally_add(j->tally, r.start, r.end, scope, cls, r.stream, r.name);
    }
    pthread_mutex_unlock(&tracer.lock);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, TRACE_BUFFER_BYTES); /* NULL: CUPTI drops and counts */
    *size = *buffer ? TRACE_BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    CUpti_Activity *a = NULL;
    while (buffer && cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) take_record(a);
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS && dropped) {
        /* whose records CUPTI lost is not known: every tracing job's count says it */
        pthread_mutex_lock(&tracer.lock);
        for (int i = 0; i < TRACE_MAX_JOBS; i++)
            if (tracer.jobs[i] && tracer.jobs[i]->tally) kernel_tally_lost(tracer.jobs[i]->tally, dropped);
        pthread_mutex_unlock(&tracer.lock);
    }
    free(buffer);
}

/* --- joining, windows -------------------------------------------------------------------------- */

static int cupti_failed(CUptiResult status, const char *what, char *err, size_t err_size) {
    if (status == CUPTI_SUCCESS) return 0;
    snprintf(err, err_size, "CUPTI: %s failed (%s)", what, suite_cupti_message(status));
    return -1;
}

static const CUpti_CallbackIdResource RESOURCE_CALLBACKS[] = {
    CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED, CUPTI_CBID_RESOURCE_STREAM_CREATED};
/* The API callbacks go on with the subscription and stay on: switched per window, they changed
 * while another job's thread was inside a CUDA call (its set-up or teardown, which take the
 * context turn beside this job's steps), and in that job's own window afterwards none of its
 * eager copies was found by its correlation id (gpu_kernel_trace's two jobs: scope 0). Outside a
 * collection the callback returns before it takes the lock. */
static const CUpti_CallbackDomain API_DOMAINS[] = {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API};
static const CUpti_ActivityKind ACTIVITIES[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                CUPTI_ACTIVITY_KIND_MEMSET};
#define COUNT_OF(a) (sizeof a / sizeof a[0])

static int subscribe_locked(char *err, size_t err_size) {
    if (cupti_failed(cuptiSubscribe(&tracer.subscriber, on_callback, NULL),
                     "subscribing (another tool, such as Nsight or a debugger, may hold CUPTI)", err, err_size))
        return -1;
    /* the clock before any record: the window lines' */
    int rc = cupti_failed(cuptiActivityRegisterTimestampCallback(realtime_ns), "the CLOCK_REALTIME timestamps", err,
                          err_size);
    if (!rc) rc = cupti_failed(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "the activity buffers",
                               err, err_size);
    for (size_t i = 0; !rc && i < COUNT_OF(RESOURCE_CALLBACKS); i++)
        rc = cupti_failed(cuptiEnableCallback(1, tracer.subscriber, CUPTI_CB_DOMAIN_RESOURCE, RESOURCE_CALLBACKS[i]),
                          "the graph and stream callbacks", err, err_size);
    for (size_t i = 0; !rc && i < COUNT_OF(API_DOMAINS); i++)
        rc = cupti_failed(cuptiEnableDomain(1, tracer.subscriber, API_DOMAINS[i]), "the launch callbacks", err, err_size);
    if (rc) {
        cuptiUnsubscribe(tracer.subscriber); /* its own failure adds nothing to the first one's message */
        return -1;
    }
    tracer.subscribed = 1;
    return 0;
}

kernel_trace_job *kernel_trace_join(kernel_scopes *scopes, char *err, size_t err_size) {
    kernel_trace_job *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(err, err_size, "out of memory joining the kernel tracer");
        return NULL;
    }
    j->scopes = scopes;
    j->slot = -1;
    pthread_mutex_lock(&tracer.lock);
    for (int i = 0; i < TRACE_MAX_JOBS && j->slot < 0; i++)
        if (!tracer.jobs[i]) j->slot = i;
    if (j->slot < 0) snprintf(err, err_size, "more than %d jobs in one process joined the kernel tracer", TRACE_MAX_JOBS);
    else if (!tracer.subscribed && subscribe_locked(err, err_size) != 0) j->slot = -1;
    if (j->slot >= 0) {
        tracer.jobs[j->slot] = j;
        tracer.users++;
    }
    pthread_mutex_unlock(&tracer.lock);
    if (j->slot < 0) {
        free(j);
        return NULL;
    }
    kernel_scope_bind_thread(scopes);
    return j;
}

void kernel_trace_leave(kernel_trace_job *j) {
    if (!j) return;
    pthread_mutex_lock(&tracer.lock);
    if (j->tracing) tracer.tracing--, tracer.stopped -= j->stopped;
    tracer.jobs[j->slot] = NULL;
    kernel_tally_free(j->tally);
    int last = --tracer.users == 0 && tracer.subscribed && !tracer.tracing;
    CUpti_SubscriberHandle subscriber = tracer.subscriber;
    if (last) {
        tracer.subscribed = 0;
        atomic_store(&tracer.collecting, 0);
        map_free(&tracer.nodes), map_free(&tracer.launches), map_free(&tracer.streams), map_free(&tracer.contexts);
    }
    pthread_cond_broadcast(&tracer.changed);
    pthread_mutex_unlock(&tracer.lock);
    if (last) CHECK_CUPTI(cuptiUnsubscribe(subscriber)); /* outside the lock: a failing check unwinds */
    if (kernel_scope_current(&(int){0}) == j->scopes) kernel_scope_unbind_thread();
    free(j);
}

/* Collection on (the first job to trace) or off (the last to stop): the records only (the API
 * callbacks stay on, API_DOMAINS); without the lock, while `switching` keeps other jobs' starts
 * and stops waiting. */
static int collect(int on, char *err, size_t err_size) {
    int rc = 0;
    for (size_t i = 0; i < COUNT_OF(ACTIVITIES) && (rc == 0 || !on); i++)
        if (cupti_failed(on ? cuptiActivityEnable(ACTIVITIES[i]) : cuptiActivityDisable(ACTIVITIES[i]),
                         on ? "enabling kernel and copy records" : "disabling kernel and copy records", err, err_size))
            rc = -1;
    if (rc && on) collect(0, err + strlen(err), 0); /* what was turned on goes off again */
    return rc;
}

/* A job of a collection that has ended, its thread not yet back from kernel_trace_stop with its
 * tally: buffers handed over until then still look its copies up in `launches`. */
static int tally_pending_locked(void) {
    for (int i = 0; i < TRACE_MAX_JOBS; i++)
        if (tracer.jobs[i] && tracer.jobs[i]->tally && !tracer.jobs[i]->tracing) return 1;
    return 0;
}

int kernel_trace_start(kernel_trace_job *j, double t0, double t1, char *err, size_t err_size) {
    if (j->tracing) {
        snprintf(err, err_size, "a window is being traced already");
        return -1;
    }
    kernel_tally *tally = kernel_tally_create(t0, t1, KERNEL_TALLY_INTERVALS_MAX);
    if (!tally) {
        snprintf(err, err_size, "out of memory for the kernel tally");
        return -1;
    }
    pthread_mutex_lock(&tracer.lock);
    /* a flush in flight ends first; a collection begins once the last one's tallies are taken */
    while (tracer.switching || (tracer.tracing == 0 && tally_pending_locked()))
        pthread_cond_wait(&tracer.changed, &tracer.lock);
    int rc = 0;
    if (tracer.tracing == 0) {
        map_free(&tracer.launches); /* the last collection's */
        atomic_store(&tracer.collecting, 1);
        tracer.switching = 1;
        pthread_mutex_unlock(&tracer.lock);
        rc = collect(1, err, err_size);
        pthread_mutex_lock(&tracer.lock);
        if (rc) atomic_store(&tracer.collecting, 0);
        tracer.switching = 0;
        pthread_cond_broadcast(&tracer.changed);
    }
    if (rc == 0) {
        j->tally = tally, j->tracing = 1, j->stopped = 0;
        tracer.tracing++;
    }
    pthread_mutex_unlock(&tracer.lock);
    if (rc) kernel_tally_free(tally);
    return rc;
}

/* Ends collection and hands every buffer over (called without the lock: the buffer callbacks
 * take it). Incomplete records of kernels still running are after every window's end. */
static int flush_all(char *err, size_t err_size) {
    return cupti_failed(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), "flushing the records", err, err_size);
}

static void deadline_after(struct timespec *ts, double seconds) {
    clock_gettime(CLOCK_REALTIME, ts);
    double whole = floor(seconds);
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

kernel_tally *kernel_trace_stop(kernel_trace_job *j, double t1, char *err, size_t err_size) {
    if (!j->tracing) {
        snprintf(err, err_size, "no window is being traced");
        return NULL;
    }
    int rc = 0;
    pthread_mutex_lock(&tracer.lock);
    j->stopped = 1;
    tracer.stopped++;
    long closes = tracer.closes;
    struct timespec deadline;
    deadline_after(&deadline, KERNEL_TRACE_WAIT_S);
    int waited_out = 0;
    /* the others still tracing, or one of them ending the collection now: wait for that */
    while (tracer.closes == closes && (tracer.stopped < tracer.tracing || tracer.switching) && !waited_out)
        waited_out = pthread_cond_timedwait(&tracer.changed, &tracer.lock, &deadline) == ETIMEDOUT;
    while (tracer.switching) pthread_cond_wait(&tracer.changed, &tracer.lock); /* a close once begun ends */
    if (tracer.closes != closes) waited_out = 0; /* closed meanwhile: this job's records are in */
    if (tracer.closes == closes && !waited_out) {
        /* the last to stop: collection ends for every job, then the buffers come */
        tracer.switching = 1;
        pthread_mutex_unlock(&tracer.lock);
        rc = collect(0, err, err_size);
        if (flush_all(err, err_size) != 0) rc = -1;
        pthread_mutex_lock(&tracer.lock);
        /* launches stays until the next collection: a job that stopped first takes its tally
         * once its thread wakes (tally_pending_locked) */
        atomic_store(&tracer.collecting, 0);
        for (int i = 0; i < TRACE_MAX_JOBS; i++)
            if (tracer.jobs[i] && tracer.jobs[i]->tracing) tracer.jobs[i]->tracing = 0;
        tracer.tracing = tracer.stopped = 0;
        tracer.switching = 0;
        tracer.closes++;
        pthread_cond_broadcast(&tracer.changed);
    } else if (waited_out) {
        /* a job that never stopped (it failed, or never saw its window's end): this job leaves
         * the collection to it and flushes what is complete of its own */
        j->tracing = 0;
        tracer.tracing--, tracer.stopped--;
        pthread_mutex_unlock(&tracer.lock);
        rc = flush_all(err, err_size);
        pthread_mutex_lock(&tracer.lock);
    }
    kernel_tally *tally = j->tally;
    j->tally = NULL, j->tracing = 0, j->stopped = 0;
    pthread_cond_broadcast(&tracer.changed); /* a start waiting for the last collection's tallies */
    pthread_mutex_unlock(&tracer.lock);
    if (rc) {
        kernel_tally_free(tally);
        return NULL;
    }
    if (!isfinite(kernel_tally_t1(tally))) kernel_tally_close(tally, t1);
    return tally;
}
