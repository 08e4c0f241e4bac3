#include "models/core/context.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "kernels/knobs.h"

/* The driver functions of green contexts, looked up through the runtime: linking libcuda itself
 * would keep every program from starting on a machine without the driver (CPU-only CI). Resolved
 * once; read-only afterwards. */
typedef struct driver_api {
    const char *missing;      /* the first function the driver lacks, or NULL */
    __typeof__(cuDeviceGet) *DeviceGet;
    __typeof__(cuDeviceGetDevResource) *DeviceGetDevResource;
    __typeof__(cuDevSmResourceSplitByCount) *DevSmResourceSplitByCount;
    __typeof__(cuDevResourceGenerateDesc) *DevResourceGenerateDesc;
    __typeof__(cuGreenCtxCreate) *GreenCtxCreate;
    __typeof__(cuGreenCtxDestroy) *GreenCtxDestroy;
    __typeof__(cuGreenCtxGetDevResource) *GreenCtxGetDevResource;
    __typeof__(cuGreenCtxStreamCreate) *GreenCtxStreamCreate;
    __typeof__(cuCtxFromGreenCtx) *CtxFromGreenCtx;
    __typeof__(cuCtxSetCurrent) *CtxSetCurrent;
    __typeof__(cuCtxGetExecAffinity) *CtxGetExecAffinity; /* optional: not a green context's */
} driver_api;

static driver_api driver_table;
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;

static void resolve_optional(const char *symbol, void **fn) {
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion(symbol, fn, CUDA_VERSION, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        *fn = NULL;
    }
}

static void resolve(const char *symbol, void **fn) {
    enum cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    /* each function as the toolkit we build with declares it (green contexts: 12.4, their streams 12.5) */
    if (cudaGetDriverEntryPointByVersion(symbol, fn, CUDA_VERSION, cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess || !*fn) {
        (void)cudaGetLastError();
        *fn = NULL;
        if (!driver_table.missing) driver_table.missing = symbol;
    }
}

static void resolve_all(void) {
    driver_api *d = &driver_table;
    resolve("cuDeviceGet", (void **)&d->DeviceGet);
    resolve("cuDeviceGetDevResource", (void **)&d->DeviceGetDevResource);
    resolve("cuDevSmResourceSplitByCount", (void **)&d->DevSmResourceSplitByCount);
    resolve("cuDevResourceGenerateDesc", (void **)&d->DevResourceGenerateDesc);
    resolve("cuGreenCtxCreate", (void **)&d->GreenCtxCreate);
    resolve("cuGreenCtxDestroy", (void **)&d->GreenCtxDestroy);
    resolve("cuGreenCtxGetDevResource", (void **)&d->GreenCtxGetDevResource);
    resolve("cuGreenCtxStreamCreate", (void **)&d->GreenCtxStreamCreate);
    resolve("cuCtxFromGreenCtx", (void **)&d->CtxFromGreenCtx);
    resolve("cuCtxSetCurrent", (void **)&d->CtxSetCurrent);
    resolve_optional("cuCtxGetExecAffinity", (void **)&d->CtxGetExecAffinity);
}

static const driver_api *driver(void) {
    pthread_once(&driver_once, resolve_all);
    return &driver_table;
}

cudaStream_t context_stream_create(const job_context *ctx, int first) {
    int least = 0, greatest = 0;
    CHECK_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    int priority = first ? greatest : least;
    if (ctx->green) {
        CUstream stream;
        CHECK_CU(driver()->GreenCtxStreamCreate(&stream, ctx->green, CU_STREAM_NON_BLOCKING, priority));
        return (cudaStream_t)stream;
    }
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, priority));
    return stream;
}

void context_bind_thread(const job_context *ctx) {
    CHECK_CUDA(cudaSetDevice(ctx->device));
    if (!ctx->green) return;
    const driver_api *d = driver();
    CUcontext as_context;
    CHECK_CU(d->CtxFromGreenCtx(&as_context, ctx->green));
    CHECK_CU(d->CtxSetCurrent(as_context));
}

/* The SMs the driver gave the calling thread's context (an MPS client's share), 0 when it cannot say. */
static int context_affinity_sms(void) {
    const driver_api *d = driver();
    CUexecAffinityParam affinity;
    memset(&affinity, 0, sizeof affinity);
    if (!d->CtxGetExecAffinity || d->CtxGetExecAffinity(&affinity, CU_EXEC_AFFINITY_TYPE_SM_COUNT) != CUDA_SUCCESS)
        return 0;
    return (int)affinity.param.smCount.val;
}

/* What the job's libraries are told (base/sm_target.h): a green context's SMs, or an MPS client's
 * share as the driver gave it; SUITE_SM_TARGET=0 tells nothing. */
static void decide_sm_target(job_context *ctx) {
    int device_sms = 0, mps = 0;
    CHECK_CUDA(cudaDeviceGetAttribute(&device_sms, cudaDevAttrMultiProcessorCount, ctx->device));
    if (cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, ctx->device) != cudaSuccess) {
        (void)cudaGetLastError(); /* older drivers do not know the attribute: not MPS */
        mps = 0;
    }
    context_sm_target *t = &ctx->sm_target;
    t->percent = mps ? sm_target_percent(getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")) : 0;
    t->device_sms = device_sms;
    t->context_sms = ctx->green ? ctx->sm_count : context_affinity_sms();
    sm_target_place place = {.telling = knob_flag(KNOB_SM_TARGET), .green_sms = ctx->green ? ctx->sm_count : 0,
                             .mps_client = mps, .percent = t->percent, .device_sms = device_sms,
                             .context_sms = t->context_sms};
    t->sms = sm_target_decide(&place, &t->from);
}

context_status context_init(job_context *ctx, int device, size_t workspace_limit, int allow_tf32) {
    context_place whole = {.device = device};
    return context_init_at(ctx, &whole, workspace_limit, allow_tf32);
}

context_status context_init_at(job_context *ctx, const context_place *place, size_t workspace_limit,
                               int allow_tf32) {
    int device = place->device;
    memset(ctx, 0, sizeof *ctx);
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        fprintf(stderr, "no usable CUDA device: %s\n",
                err != cudaSuccess ? cudaGetErrorString(err) : "the driver reports 0 devices");
        return CONTEXT_NO_DEVICE;
    }
    if (device < 0 || device >= count) {
        fprintf(stderr, "device %d does not exist: %d device(s) are visible\n", device, count);
        return CONTEXT_NO_DEVICE;
    }
    ctx->device = device;
    ctx->process_jobs = place->process_jobs;
    ctx->workspace_limit = workspace_limit;
    ctx->allow_tf32 = allow_tf32;
    CHECK_CUDA(cudaSetDevice(device));
    /* A host thread waiting for the GPU sleeps rather than spins: the CPU cores belong to the data
     * loader's workers and, under collocation, to the other jobs (a spinning wait takes a whole
     * core for nothing). The steps are enqueued a step ahead, so the wake-up is never on the
     * GPU's critical path. */
    CHECK_CUDA(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    if (place->green) {
        /* The runtime follows the thread's current driver context: from here on this thread's
         * allocations, handles and launches are the green context's. */
        ctx->green = place->green;
        ctx->sm_count = place->sm_count;
        context_bind_thread(ctx);
    }
    ctx->stream = context_stream_create(ctx, 1);
    decide_sm_target(ctx); /* the stream made the context the driver is asked about */
    CHECK_CUDNN(cudnnCreate(&ctx->cudnn));
    CHECK_CUDNN(cudnnSetStream(ctx->cudnn, ctx->stream));
    CHECK_CUBLAS(cublasLtCreate(&ctx->cublaslt));
    return CONTEXT_OK;
}

void context_tell_matmul(const job_context *ctx, cublasLtMatmulDesc_t desc) {
    int32_t sms = ctx->sm_target.sms;
    if (sms > 0)
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sms, sizeof sms));
}

void context_reserve_workspace(job_context *ctx, size_t bytes) {
    if (bytes > ctx->workspace_bytes) context_set_workspace(ctx, bytes);
}

void context_set_workspace(job_context *ctx, size_t bytes) {
    if (bytes == ctx->workspace_bytes) return;
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    if (ctx->workspace) CHECK_CUDA(cudaFree(ctx->workspace));
    ctx->workspace = NULL;
    if (bytes) CHECK_CUDA(cudaMalloc(&ctx->workspace, bytes));
    ctx->workspace_bytes = bytes;
}

void context_free(job_context *ctx) {
    if (ctx->stream) CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    arena_free(&ctx->arena);
    if (ctx->workspace) CHECK_CUDA(cudaFree(ctx->workspace));
    if (ctx->cublaslt) CHECK_CUBLAS(cublasLtDestroy(ctx->cublaslt));
    if (ctx->cudnn) CHECK_CUDNN(cudnnDestroy(ctx->cudnn));
    if (ctx->stream) CHECK_CUDA(cudaStreamDestroy(ctx->stream));
    memset(ctx, 0, sizeof *ctx);
}

/* --- green-context partitions ---------------------------------------------------------------- */

#define DRIVER_TRY(call, what)                                                                     \
    do {                                                                                           \
        CUresult status_ = (call);                                                                 \
        if (status_ != CUDA_SUCCESS) {                                                             \
            snprintf(err, err_size, "%s: %s failed (%s)", what, #call, suite_cu_message(status_)); \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Splits the device's SMs into its smallest equal groups; *groups is malloc'd (count in *n).
 * Returns the device's SM count, or -1 with a message. */
static int split_device(int device, CUdevice *dev, CUdevResource **groups, unsigned *n, char *err,
                        size_t err_size) {
    CUdevResource all;
    *groups = NULL;
    int count = 0;
    cudaError_t rt = cudaGetDeviceCount(&count);
    if (rt != cudaSuccess || device < 0 || device >= count) {
        snprintf(err, err_size, "green contexts need CUDA device %d: %s", device,
                 rt != cudaSuccess ? cudaGetErrorString(rt) : "it does not exist");
        return -1;
    }
    CHECK_CUDA(cudaSetDevice(device)); /* initialises the runtime and with it the driver */
    const driver_api *d = driver();
    if (d->missing) {
        snprintf(err, err_size, "the driver has no green contexts (%s is missing; drivers for CUDA 12.5 "
                 "or newer have them)", d->missing);
        return -1;
    }
    DRIVER_TRY(d->DeviceGet(dev, device), "green contexts");
    DRIVER_TRY(d->DeviceGetDevResource(*dev, &all, CU_DEV_RESOURCE_TYPE_SM), "the device's SMs");
    unsigned min = all.sm.minSmPartitionSize, align = all.sm.smCoscheduledAlignment;
    unsigned size = min > align ? min : align;
    DRIVER_TRY(d->DevSmResourceSplitByCount(NULL, n, &all, NULL, 0, size), "splitting the SMs");
    *groups = calloc(*n ? *n : 1, sizeof **groups);
    if (!*groups) {
        snprintf(err, err_size, "out of memory splitting the SMs");
        return -1;
    }
    DRIVER_TRY(d->DevSmResourceSplitByCount(*groups, n, &all, NULL, 0, size), "splitting the SMs");
    if (*n == 0) {
        snprintf(err, err_size, "the device's %u SMs do not split into groups of %u", all.sm.smCount, size);
        goto fail;
    }
    return (int)all.sm.smCount;
fail:
    free(*groups);
    *groups = NULL;
    return -1;
}

int context_sm_granularity(int device, int *device_sms, int *unit, int *groups, char *err, size_t err_size) {
    CUdevice dev;
    CUdevResource *g;
    unsigned n;
    int sms = split_device(device, &dev, &g, &n, err, err_size);
    if (sms < 0) return -1;
    *device_sms = sms;
    *unit = (int)g[0].sm.smCount;
    *groups = (int)n;
    free(g);
    return 0;
}

int context_partitions_create(context_partitions *p, int device, const int *sm_counts, int count,
                              char *err, size_t err_size) {
    memset(p, 0, sizeof *p);
    p->device = device;
    CUdevice dev;
    CUdevResource *g = NULL;
    unsigned n = 0, next = 0;
    int sms = split_device(device, &dev, &g, &n, err, err_size);
    if (sms < 0) return -1;
    const driver_api *d = driver();
    p->device_sms = sms;
    p->unit = (int)g[0].sm.smCount;
    p->groups = (int)n;
    if (count > CONTEXT_MAX_PARTITIONS) {
        snprintf(err, err_size, "%d partitions asked; at most %d", count, CONTEXT_MAX_PARTITIONS);
        goto fail;
    }
    for (int i = 0; i < count; i++) {
        unsigned k = (unsigned)(sm_counts[i] / p->unit);
        if (k == 0 || sm_counts[i] % p->unit != 0 || next + k > n) {
            snprintf(err, err_size, "partition %d: %d SMs is not a whole number of the device's groups of %d "
                     "SMs, or more than the %u groups left", i, sm_counts[i], p->unit, n - next);
            goto fail;
        }
        CUdevResourceDesc desc;
        CUdevResource got;
        /* a partition of k groups: one descriptor over k results of the same split */
        DRIVER_TRY(d->DevResourceGenerateDesc(&desc, &g[next], k), "a partition's descriptor");
        DRIVER_TRY(d->GreenCtxCreate(&p->green[i], desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "a green context");
        p->count = i + 1;
        DRIVER_TRY(d->GreenCtxGetDevResource(p->green[i], &got, CU_DEV_RESOURCE_TYPE_SM), "a green context's SMs");
        p->sm_count[i] = (int)got.sm.smCount;
        next += k;
    }
    free(g);
    return 0;
fail:
    free(g);
    context_partitions_free(p);
    return -1;
}

context_place context_partition_place(const context_partitions *p, int index) {
    context_place place = {.device = p->device, .green = p->green[index], .sm_count = p->sm_count[index]};
    return place;
}

void context_partitions_free(context_partitions *p) {
    for (int i = 0; i < p->count; i++)
        if (p->green[i]) CHECK_CU(driver()->GreenCtxDestroy(p->green[i]));
    p->count = 0;
}

static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int holding_turn;

void context_turn_take(void) {
    if (holding_turn) return;
    if (pthread_mutex_lock(&turn_lock) != 0) {
        fprintf(stderr, "context_turn_take: pthread_mutex_lock failed\n");
        exit(1);
    }
    holding_turn = 1;
}

void context_turn_give(void) {
    if (!holding_turn) return;
    holding_turn = 0;
    pthread_mutex_unlock(&turn_lock);
}
