/* Data-parallel gradients over NCCL (see ddp.h). */
#include "models/core/ddp.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/spread.h"
#include "kernels/check.h"
#include "kernels/kernels.h"
#include "kernels/knobs.h"

#if SUITE_HAVE_NCCL

#include <nccl.h>

int ddp_make_id(char *hex, size_t size, char *err, size_t err_size) {
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
        snprintf(err, err_size, "ncclGetUniqueId: %s", ncclGetErrorString(r));
        return -1;
    }
    if (size < 2 * sizeof id.internal + 1) {
        snprintf(err, err_size, "ddp_make_id: buffer too small");
        return -1;
    }
    for (size_t i = 0; i < sizeof id.internal; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id.internal[i]);
    return 0;
}

static int id_from_hex(const char *hex, ncclUniqueId *id) {
    if (!hex || strlen(hex) != 2 * sizeof id->internal) return -1;
    for (size_t i = 0; i < sizeof id->internal; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) return -1;
        id->internal[i] = (char)v;
    }
    return 0;
}

static int by_address(const void *a, const void *b) {
    const float *x = *(const float *const *)a, *y = *(const float *const *)b;
    return (x > y) - (x < y);
}

static int param_index(const ddp *d, const float *p) {
    int lo = 0, hi = d->param_count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (d->param_ptr[mid] == p) return mid;
        if (d->param_ptr[mid] < p) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static void launch(ddp *d, ddp_bucket *b) {
    cudaStream_t compute = d->ctx->stream;
    /* the kernel trace's scope: the bucket, by its place in the pass (its cast and its all-reduce,
     * which reads and writes the bucket once here and once per peer in the ring) */
    char name[32];
    snprintf(name, sizeof name, "allreduce.bucket%d", (int)(b - d->buckets));
    int token = d->ctx->scopes ? kernel_scope_enter(d->ctx->scopes, NULL, name, KPASS_NONE, KCLASS_COLLECTIVE, 0,
                                                    2.0 * (double)b->count * sizeof(float))
                               : -1;
    /* bfloat16 weights: this bucket's float gradients are made from their bfloat16 copies here,
     * each once its layers have written them, so the all-reduce starts during the pass */
    if (d->half_grads && b->offset < d->half_count) {
        size_t n = b->count < d->half_count - b->offset ? b->count : d->half_count - b->offset;
        cast_bf16_to_f32(d->grads + b->offset, (const uint16_t *)d->half_grads + b->offset, n, compute);
    }
    CHECK_CUDA(cudaEventRecord((cudaEvent_t)b->ready, compute));
    CHECK_CUDA(cudaStreamWaitEvent(d->comm_stream, (cudaEvent_t)b->ready, 0));
    float *g = d->grads + b->offset;
    CHECK_NCCL(ncclAllReduce(g, g, b->count, ncclFloat32, ncclAvg, (ncclComm_t)d->comm, d->comm_stream));
    kernel_scope_leave(token);
    b->launched = 1;
}

static void on_begin(void *user) {
    ddp *d = user;
    for (int k = 0; k < d->bucket_count; k++) d->buckets[k].launched = 0, d->buckets[k].pending = 0;
    for (int i = 0; i < d->param_count; i++) d->buckets[d->param_bucket[i]].pending++;
    memset(d->param_seen, 0, (size_t)d->param_count);
    d->launches_early = 0;
}

static void on_ready(void *user, const float *param) {
    ddp *d = user;
    if (!d->overlap) return;
    int i = param_index(d, param);
    if (i < 0 || d->param_seen[i]) return;
    d->param_seen[i] = 1;
    ddp_bucket *b = &d->buckets[d->param_bucket[i]];
    if (--b->pending == 0 && !b->launched) {
        launch(d, b);
        d->launches_early++;
    }
}

/* An event on the compute stream that a timed replay of the step's graph records too. */
static void mark(ddp *d, void *event) {
    enum cudaStreamCaptureStatus capturing;
    CHECK_CUDA(cudaStreamIsCapturing(d->ctx->stream, &capturing));
    CHECK_CUDA(cudaEventRecordWithFlags((cudaEvent_t)event, d->ctx->stream,
                                        capturing == cudaStreamCaptureStatusActive ? cudaEventRecordExternal : 0));
}

static void on_end(void *user) {
    ddp *d = user;
    mark(d, d->pass_end);
    /* from the end of the buffer, the order backward fills it in */
    for (int k = d->bucket_count - 1; k >= 0; k--)
        if (!d->buckets[k].launched) launch(d, &d->buckets[k]);
    /* Rank 0's buffers (batch norm's running statistics, written by this step's forward, which
     * every bucket's event follows) become everyone's, as DDP's broadcast_buffers does before
     * each forward: every rank starts each step, and ends the last, from the same state. */
    if (d->buffer_floats)
        CHECK_NCCL(ncclBroadcast(d->ctx->arena.buffers, d->ctx->arena.buffers, d->buffer_floats, ncclFloat32, 0,
                                 (ncclComm_t)d->comm, d->comm_stream));
    CHECK_CUDA(cudaEventRecord((cudaEvent_t)d->done, d->comm_stream));
    CHECK_CUDA(cudaStreamWaitEvent(d->ctx->stream, (cudaEvent_t)d->done, 0));
    mark(d, d->comm_waited);
}

void ddp_sample_exposed(ddp *d) {
    if (!d->comm || d->exposed_count == DDP_EXPOSED_SAMPLES) return;
    float ms;
    cudaError_t e = cudaEventElapsedTime(&ms, (cudaEvent_t)d->pass_end, (cudaEvent_t)d->comm_waited);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: only this reading failed, and it is said at the end */
        d->exposed_error = cudaGetErrorString(e);
        return;
    }
    d->exposed_ms[d->exposed_count++] = ms;
}

int ddp_agree_stop(ddp *d, int told, long step) {
    if (!d->comm) return told;
    if (step % DDP_STOP_EVERY) return d->stop_agreed;
    cudaStream_t stream = d->ctx->stream;
    if (d->stop_rounds > 0) { /* the previous round ended DDP_STOP_EVERY steps ago */
        int previous = (int)((d->stop_rounds - 1) % 2);
        CHECK_CUDA(cudaEventSynchronize((cudaEvent_t)d->stop_read[previous]));
        d->stop_agreed = d->stop_host[2 + previous];
    }
    int slot = (int)(d->stop_rounds % 2);
    d->stop_host[slot] = told;
    CHECK_CUDA(cudaMemcpyAsync(d->stop_flags + slot, d->stop_host + slot, sizeof(int), cudaMemcpyHostToDevice, stream));
    CHECK_NCCL(ncclAllReduce(d->stop_flags + slot, d->stop_flags + slot, 1, ncclInt32, ncclMax, (ncclComm_t)d->comm,
                             stream));
    CHECK_CUDA(cudaMemcpyAsync(d->stop_host + 2 + slot, d->stop_flags + slot, sizeof(int), cudaMemcpyDeviceToHost,
                               stream));
    CHECK_CUDA(cudaEventRecord((cudaEvent_t)d->stop_read[slot], stream));
    d->stop_rounds++;
    return d->stop_agreed;
}

double ddp_exposed_ms(const ddp *d) {
    float sorted[DDP_EXPOSED_SAMPLES];
    memcpy(sorted, d->exposed_ms, (size_t)d->exposed_count * sizeof *sorted);
    return spread_median_floats(sorted, (size_t)(d->exposed_count));
}

/* Buckets over the flat buffer, cut at parameter boundaries, about DDP_BUCKET_BYTES each. */
static int cut_buckets(ddp *d, char *err, size_t err_size) {
    size_t limit = DDP_BUCKET_BYTES / sizeof(float), start = 0;
    d->bucket_count = 0;
    for (int i = 0; i < d->param_count; i++) {
        size_t offset = (size_t)(arena_grad_of(&d->ctx->arena, d->param_ptr[i]) - d->grads);
        size_t end = i + 1 < d->param_count ? (size_t)(arena_grad_of(&d->ctx->arena, d->param_ptr[i + 1]) - d->grads)
                                            : d->count;
        if (end - start > limit && offset > start) { /* close the bucket before this parameter */
            if (d->bucket_count == DDP_MAX_BUCKETS) break;
            d->buckets[d->bucket_count++] = (ddp_bucket){.offset = start, .count = offset - start};
            start = offset;
        }
        d->param_bucket[i] = d->bucket_count;
    }
    if (d->bucket_count >= DDP_MAX_BUCKETS) {
        snprintf(err, err_size, "ddp: more than %d gradient buckets", DDP_MAX_BUCKETS);
        return -1;
    }
    d->buckets[d->bucket_count++] = (ddp_bucket){.offset = start, .count = d->count - start};
    for (int k = 0; k < d->bucket_count; k++)
        CHECK_CUDA(cudaEventCreateWithFlags((cudaEvent_t *)&d->buckets[k].ready, cudaEventDisableTiming));
    return 0;
}

int ddp_init(ddp *d, job_context *ctx, model *m, int rank, int world, const char *id_hex, char *err,
             size_t err_size) {
    memset(d, 0, sizeof *d);
    d->rank = rank, d->world = world, d->ctx = ctx;
    ncclUniqueId id;
    if (id_from_hex(id_hex, &id) != 0) {
        snprintf(err, err_size, "ddp: the NCCL id is not %zu hex digits", 2 * sizeof id.internal);
        return -1;
    }
    ncclComm_t comm;
    CHECK_CUDA(cudaSetDevice(ctx->device));
    ncclResult_t r = ncclCommInitRank(&comm, world, id, rank);
    if (r != ncclSuccess) {
        snprintf(err, err_size, "ncclCommInitRank (rank %d of %d): %s", rank, world, ncclGetErrorString(r));
        return -1;
    }
    d->comm = comm;
    d->comm_stream = context_stream_create(ctx, 1);
    CHECK_CUDA(cudaEventCreateWithFlags((cudaEvent_t *)&d->done, cudaEventDisableTiming));
    CHECK_CUDA(cudaMalloc((void **)&d->stop_flags, 2 * sizeof(int)));
    CHECK_CUDA(cudaMallocHost((void **)&d->stop_host, 4 * sizeof(int)));
    for (int k = 0; k < 2; k++) CHECK_CUDA(cudaEventCreateWithFlags((cudaEvent_t *)&d->stop_read[k], cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreate((cudaEvent_t *)&d->pass_end));
    CHECK_CUDA(cudaEventCreate((cudaEvent_t *)&d->comm_waited));
    arena *a = &ctx->arena;
    d->grads = arena_grads(a);
    d->count = arena_trainable_floats(a);
    d->param_ptr = calloc((size_t)m->params.count + 1, sizeof *d->param_ptr);
    d->param_bucket = calloc((size_t)m->params.count + 1, sizeof *d->param_bucket);
    d->param_seen = calloc((size_t)m->params.count + 1, 1);
    if (!d->param_ptr || !d->param_bucket || !d->param_seen) {
        snprintf(err, err_size, "ddp: out of host memory");
        return -1;
    }
    for (int i = 0; i < m->params.count; i++) {
        const param_entry *e = &m->params.entries[i];
        if (e->kind == PARAM_WEIGHT || e->kind == PARAM_NO_DECAY) d->param_ptr[d->param_count++] = e->data;
    }
    qsort(d->param_ptr, (size_t)d->param_count, sizeof *d->param_ptr, by_address);
    if (cut_buckets(d, err, err_size) != 0) return -1;
    d->half_grads = arena_half_grads(a);
    d->half_count = d->half_grads ? arena_decay_floats(a) : 0;
    d->overlap = knob_flag(KNOB_DDP_OVERLAP);
    d->buffer_floats = knob_flag(KNOB_DDP_BROADCAST_BUFFERS) ? a->planned[ARENA_BUFFERS] / sizeof(float) : 0;
    /* Rank 0's initial state is everyone's: parameters and buffers (BN running statistics). */
    CHECK_NCCL(ncclBroadcast(a->params, a->params, a->params_bytes / sizeof(float), ncclFloat32, 0, comm, ctx->stream));
    if (a->planned[ARENA_BUFFERS])
        CHECK_NCCL(ncclBroadcast(a->buffers, a->buffers, a->planned[ARENA_BUFFERS] / sizeof(float), ncclFloat32, 0,
                                 comm, ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    d->hooks = (grad_hooks){d, on_begin, on_ready, on_end, 1};
    ctx->grad_hooks = &d->hooks;
    return 0;
}

/* FNV-1a over bytes, continued from h. */
static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

int ddp_state_identical(ddp *d, uint64_t *hash, char *err, size_t err_size) {
    arena *a = &d->ctx->arena;
    size_t bytes[2] = {a->params_bytes, a->planned[ARENA_BUFFERS]};
    const void *where[2] = {a->params, a->buffers};
    uint64_t h = 0xcbf29ce484222325ull;
    CHECK_CUDA(cudaStreamSynchronize(d->ctx->stream));
    for (int k = 0; k < 2; k++) {
        if (!bytes[k]) continue;
        unsigned char *host = malloc(bytes[k]);
        if (!host) {
            snprintf(err, err_size, "ddp: out of host memory for a %zu-byte copy of the state", bytes[k]);
            return -1;
        }
        CHECK_CUDA(cudaMemcpy(host, where[k], bytes[k], cudaMemcpyDeviceToHost));
        h = fnv1a(h, host, bytes[k]);
        free(host);
    }
    *hash = h;
    uint64_t *all;
    CHECK_CUDA(cudaMalloc((void **)&all, (size_t)d->world * sizeof *all));
    CHECK_CUDA(cudaMemcpy(all + d->rank, &h, sizeof h, cudaMemcpyHostToDevice));
    CHECK_NCCL(ncclAllGather(all + d->rank, all, 1, ncclUint64, (ncclComm_t)d->comm, d->ctx->stream));
    uint64_t *seen = malloc((size_t)d->world * sizeof *seen);
    if (!seen) {
        CHECK_CUDA(cudaFree(all));
        snprintf(err, err_size, "ddp: out of host memory");
        return -1;
    }
    CHECK_CUDA(cudaMemcpyAsync(seen, all, (size_t)d->world * sizeof *seen, cudaMemcpyDeviceToHost, d->ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(d->ctx->stream));
    CHECK_CUDA(cudaFree(all));
    int same = 1;
    for (int r = 0; r < d->world; r++) same &= seen[r] == h;
    free(seen);
    return same;
}

double ddp_time_allreduce(ddp *d) {
    enum { WARMUP = 3, TIMED = 9 };
    cudaEvent_t start[TIMED], stop[TIMED];
    float ms[TIMED];
    for (int i = 0; i < TIMED; i++) {
        CHECK_CUDA(cudaEventCreate(&start[i]));
        CHECK_CUDA(cudaEventCreate(&stop[i]));
    }
    /* on a scratch copy: the gradients themselves are left as they are */
    float *copy;
    CHECK_CUDA(cudaMalloc((void **)&copy, d->count * sizeof(float)));
    CHECK_CUDA(cudaMemcpyAsync(copy, d->grads, d->count * sizeof(float), cudaMemcpyDeviceToDevice, d->comm_stream));
    for (int i = 0; i < WARMUP + TIMED; i++) {
        if (i >= WARMUP) CHECK_CUDA(cudaEventRecord(start[i - WARMUP], d->comm_stream));
        for (int k = 0; k < d->bucket_count; k++)
            CHECK_NCCL(ncclAllReduce(copy + d->buckets[k].offset, copy + d->buckets[k].offset, d->buckets[k].count,
                                     ncclFloat32, ncclAvg, (ncclComm_t)d->comm, d->comm_stream));
        if (i >= WARMUP) CHECK_CUDA(cudaEventRecord(stop[i - WARMUP], d->comm_stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(d->comm_stream));
    for (int i = 0; i < TIMED; i++) {
        CHECK_CUDA(cudaEventElapsedTime(&ms[i], start[i], stop[i]));
        CHECK_CUDA(cudaEventDestroy(start[i]));
        CHECK_CUDA(cudaEventDestroy(stop[i]));
    }
    CHECK_CUDA(cudaFree(copy));
    d->allreduce_alone_ms = spread_median_floats(ms, (size_t)(TIMED));
    return d->allreduce_alone_ms;
}

int ddp_check(ddp *d, char *err, size_t err_size) {
    if (!d->comm) return 0;
    ncclResult_t async;
    ncclResult_t r = ncclCommGetAsyncError((ncclComm_t)d->comm, &async);
    if (r == ncclSuccess && async == ncclSuccess) return 0;
    if (r == ncclSuccess && async == ncclInProgress) return 0;
    snprintf(err, err_size, "NCCL (rank %d of %d): %s", d->rank, d->world,
             ncclGetErrorString(r != ncclSuccess ? r : async));
    ddp_abort(d);
    return -1;
}

void ddp_abort(ddp *d) {
    if (!d->comm) return;
    ncclCommAbort((ncclComm_t)d->comm); /* its own result is of no use: the communicator is gone */
    d->comm = NULL;
}

void ddp_free(ddp *d) {
    if (d->ctx && d->ctx->grad_hooks == &d->hooks) d->ctx->grad_hooks = NULL;
    for (int k = 0; k < d->bucket_count; k++)
        if (d->buckets[k].ready) CHECK_CUDA(cudaEventDestroy((cudaEvent_t)d->buckets[k].ready));
    if (d->done) CHECK_CUDA(cudaEventDestroy((cudaEvent_t)d->done));
    for (int k = 0; k < 2; k++)
        if (d->stop_read[k]) CHECK_CUDA(cudaEventDestroy((cudaEvent_t)d->stop_read[k]));
    if (d->stop_flags) CHECK_CUDA(cudaFree(d->stop_flags));
    if (d->stop_host) CHECK_CUDA(cudaFreeHost(d->stop_host));
    if (d->pass_end) CHECK_CUDA(cudaEventDestroy((cudaEvent_t)d->pass_end));
    if (d->comm_waited) CHECK_CUDA(cudaEventDestroy((cudaEvent_t)d->comm_waited));
    if (d->comm_stream) CHECK_CUDA(cudaStreamDestroy(d->comm_stream));
    if (d->comm) CHECK_NCCL(ncclCommDestroy((ncclComm_t)d->comm));
    free(d->param_ptr), free(d->param_bucket), free(d->param_seen);
    memset(d, 0, sizeof *d);
}

#else /* built without NCCL */

static int no_nccl(char *err, size_t err_size) {
    snprintf(err, err_size, "this build has no NCCL (data-parallel training needs it: set NCCL_ROOT and rebuild)");
    return -1;
}
int ddp_make_id(char *hex, size_t size, char *err, size_t err_size) { return no_nccl(err, err_size); }
int ddp_init(ddp *d, job_context *ctx, model *m, int rank, int world, const char *id_hex, char *err,
             size_t err_size) {
    memset(d, 0, sizeof *d);
    return no_nccl(err, err_size);
}
int ddp_check(ddp *d, char *err, size_t err_size) { return 0; }
void ddp_sample_exposed(ddp *d) {}
int ddp_agree_stop(ddp *d, int told, long step) { return told; }
double ddp_exposed_ms(const ddp *d) { return NAN; }
int ddp_state_identical(ddp *d, uint64_t *hash, char *err, size_t err_size) { return no_nccl(err, err_size); }
double ddp_time_allreduce(ddp *d) { return 0.0; }
void ddp_abort(ddp *d) {}
void ddp_free(ddp *d) {}

#endif
