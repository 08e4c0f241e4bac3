/* nvJPEG behind jpeg_decoder.h. Per batch, on the thread that calls jpeg_decoder_decode (a loader
 * worker, which finishes the batch before the job sees it), all in the batch's slot:
 *   1. each JPEG's header is parsed (nvjpegJpegStreamParseHeader) and its frame checked against
 *      what the loader's worker read; the engines' backend is asked whether it takes the picture
 *      (nvjpegDecodeBatchedSupported), so the batch splits into the engines' group and the CUDA
 *      backend's (progressive files, the odd subsampling);
 *   2. each group is one nvjpegDecodeBatched into the slot's picture memory, interleaved RGB;
 *      a group that fails is retried picture by picture (nvjpegDecode), and what fails again
 *      goes to the host with the samples the workers already decoded there;
 *   3. one crop_resize_normalize over the batch; host-decoded samples are copied in beside it.
 * Each slot has its own nvJPEG states, stream and buffers, so the loader's workers may decode up to
 * `slots` batches at once. The engines' call holds its thread until the pictures are written, about
 * a ResNet-50 step under training; decodes at once did not overlap but slowed each other, so
 * training opens one slot (runner/train/workload_image.c). The handles are shared (nvJPEG's handles
 * may be used from several threads; its states may not).
 * Set-up and bookkeeping calls are CHECK_NVJPEG'd (kernels/check.h: fatal, like every library
 * error); per-picture calls go through TRY_NVJPEG, whose failure only sends the picture to the
 * host, reported (call, file:line, status name) for the first few. */
#include "runner/train/jpeg_decoder.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "models/core/context.h"
#include "kernels/crop_resize.h"

#if SUITE_HAVE_NVJPEG

#define PICTURE_ALIGN 256
#define FAILURES_SHOWN 5

enum picture_place { ON_HOST, DECODED_ON_HOST, ON_ENGINES, ON_CUDA };

/* One nvJPEG handle's share of a batch. */
typedef struct picture_group {
    int count;
    int *members;                  /* [batch] the samples' positions in the batch */
    const unsigned char **data;    /* [batch] */
    size_t *lengths;               /* [batch] */
    nvjpegImage_t *outputs;        /* [batch] */
} picture_group;

typedef struct decoder_slot {
    cudaStream_t stream;
    float *images;                 /* device [batch, size, size, 3]: what the job's stream takes */
    uint8_t *pictures;             /* device: the batch's decoded pictures, one after another */
    size_t picture_bytes;          /* allocated (grown as batches need) */
    crop_resize_source *sources;   /* device [batch] */
    crop_resize_source *staged;    /* pinned [batch]: the descriptors on their way */
    float *host_image;             /* pinned: one sample decoded on the host */
    nvjpegJpegState_t engine_state, cuda_state, single_state;
    int engine_batch, cuda_batch;  /* the batch size each state is initialised for (0: none) */
    nvjpegJpegStream_t header;     /* one picture's parsed header, of the parser's handle */
    enum picture_place *place;     /* [batch] */
    size_t *offset;                /* [batch] in the slot's pictures */
    picture_group on_engines, on_cuda;
    cudaEvent_t decoded;           /* the slot's stream: images written, pictures free */
} decoder_slot;

struct jpeg_decoder {
    int batch, size, slot_count;
    float mean[3], std[3];
    size_t image_floats;
    const job_context *ctx;        /* the job's place, taken by each decoding thread */
    nvjpegHandle_t engines;        /* NULL: no JPEG engines here, or nvJPEG refused them */
    nvjpegHandle_t cuda;           /* the CUDA backend */
    nvjpegHandle_t parser;         /* the engines' handle where they are (their support is asked) */
    int interpolates;
    decoder_slot *slots;           /* [slot_count] */
    atomic_llong host_fallbacks;
    atomic_int failures_shown;
};

/* A per-picture call: its failure sends the picture to the host, reported for the first few. */
#define TRY_NVJPEG(d, call) try_nvjpeg((d), (call), #call, __FILE__, __LINE__)

static nvjpegStatus_t try_nvjpeg(jpeg_decoder *d, nvjpegStatus_t status, const char *call,
                                 const char *file, int line) {
    if (status == NVJPEG_STATUS_SUCCESS) return status;
    int shown = atomic_fetch_add(&d->failures_shown, 1);
    if (shown < FAILURES_SHOWN)
        fprintf(stderr, "nvJPEG error %d (%s) in %s at %s:%d; decoding on the host instead%s\n",
                (int)status, suite_nvjpeg_message(status), call, file, line,
                shown == FAILURES_SHOWN - 1 ? " (further failures are only counted)" : "");
    return status;
}

static int group_alloc(picture_group *g, int batch) {
    g->members = calloc((size_t)batch, sizeof *g->members);
    g->data = calloc((size_t)batch, sizeof *g->data);
    g->lengths = calloc((size_t)batch, sizeof *g->lengths);
    g->outputs = calloc((size_t)batch, sizeof *g->outputs);
    return g->members && g->data && g->lengths && g->outputs ? 0 : -1;
}

static void group_free(picture_group *g) {
    free(g->members);
    free(g->data);
    free(g->lengths);
    free(g->outputs);
}

/* The first backend and flags nvjpegCreateEx accepts, interpolated chroma first. */
static nvjpegStatus_t create_handle(nvjpegBackend_t backend, int interpolate, nvjpegHandle_t *h,
                                    int *interpolates) {
    nvjpegStatus_t status = NVJPEG_STATUS_NOT_INITIALIZED;
    for (int with = interpolate; with >= 0; with--) {
        unsigned flags = with ? NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION : NVJPEG_FLAGS_DEFAULT;
        if ((status = nvjpegCreateEx(backend, NULL, NULL, flags, h)) == NVJPEG_STATUS_SUCCESS) {
            *interpolates = with;
            return status;
        }
    }
    *h = NULL;
    return status;
}

static int slot_open(jpeg_decoder *d, decoder_slot *slot) {
    slot->stream = context_stream_create(d->ctx, 1);
    CHECK_CUDA(cudaMalloc((void **)&slot->images, (size_t)d->batch * d->image_floats * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&slot->sources, (size_t)d->batch * sizeof *slot->sources));
    CHECK_CUDA(cudaMallocHost((void **)&slot->staged, (size_t)d->batch * sizeof *slot->staged));
    CHECK_CUDA(cudaMallocHost((void **)&slot->host_image, d->image_floats * sizeof(float)));
    if (d->engines) CHECK_NVJPEG(nvjpegJpegStateCreate(d->engines, &slot->engine_state));
    CHECK_NVJPEG(nvjpegJpegStateCreate(d->cuda, &slot->cuda_state));
    CHECK_NVJPEG(nvjpegJpegStateCreate(d->cuda, &slot->single_state));
    CHECK_NVJPEG(nvjpegJpegStreamCreate(d->parser, &slot->header));
    CHECK_CUDA(cudaEventCreateWithFlags(&slot->decoded, cudaEventDisableTiming));
    slot->place = calloc((size_t)d->batch, sizeof *slot->place);
    slot->offset = calloc((size_t)d->batch, sizeof *slot->offset);
    return slot->place && slot->offset && group_alloc(&slot->on_engines, d->batch) == 0 &&
                   group_alloc(&slot->on_cuda, d->batch) == 0
               ? 0
               : -1;
}

static void slot_close(decoder_slot *slot) {
    if (slot->stream) CHECK_CUDA(cudaStreamSynchronize(slot->stream));
    if (slot->images) CHECK_CUDA(cudaFree(slot->images));
    if (slot->pictures) CHECK_CUDA(cudaFree(slot->pictures));
    if (slot->sources) CHECK_CUDA(cudaFree(slot->sources));
    if (slot->staged) CHECK_CUDA(cudaFreeHost(slot->staged));
    if (slot->host_image) CHECK_CUDA(cudaFreeHost(slot->host_image));
    if (slot->engine_state) CHECK_NVJPEG(nvjpegJpegStateDestroy(slot->engine_state));
    if (slot->cuda_state) CHECK_NVJPEG(nvjpegJpegStateDestroy(slot->cuda_state));
    if (slot->single_state) CHECK_NVJPEG(nvjpegJpegStateDestroy(slot->single_state));
    if (slot->header) CHECK_NVJPEG(nvjpegJpegStreamDestroy(slot->header));
    if (slot->decoded) CHECK_CUDA(cudaEventDestroy(slot->decoded));
    if (slot->stream) CHECK_CUDA(cudaStreamDestroy(slot->stream));
    group_free(&slot->on_engines);
    group_free(&slot->on_cuda);
    free(slot->place);
    free(slot->offset);
}

jpeg_decoder *jpeg_decoder_open(const job_context *ctx, int batch, int size, int slots,
                                const float mean[3], const float std[3], char *why, size_t why_size) {
    jpeg_decoder *d = calloc(1, sizeof *d);
    if (!d || slots < 1 || !(d->slots = calloc((size_t)slots, sizeof *d->slots))) {
        snprintf(why, why_size, slots < 1 ? "%d decoder slots (at least 1)" : "out of memory", slots);
        free(d);
        return NULL;
    }
    int interpolates = 0;
    nvjpegStatus_t status = create_handle(NVJPEG_BACKEND_GPU_HYBRID, 1, &d->cuda, &interpolates);
    if (status != NVJPEG_STATUS_SUCCESS)
        status = create_handle(NVJPEG_BACKEND_DEFAULT, 1, &d->cuda, &interpolates);
    if (status != NVJPEG_STATUS_SUCCESS) {
        snprintf(why, why_size, "nvJPEG did not start: nvjpegCreateEx gave %s",
                 suite_nvjpeg_message(status));
        free(d->slots);
        free(d);
        return NULL;
    }
    d->interpolates = interpolates;
    unsigned engine_count = 0, cores = 0;
    /* NVJPEG_STATUS_ARCH_MISMATCH where the GPU has no JPEG engines: the CUDA backend does it all */
    if (create_handle(NVJPEG_BACKEND_HARDWARE, interpolates, &d->engines, &interpolates) ==
        NVJPEG_STATUS_SUCCESS) {
        if (nvjpegGetHardwareDecoderInfo(d->engines, &engine_count, &cores) != NVJPEG_STATUS_SUCCESS ||
            engine_count == 0) {
            CHECK_NVJPEG(nvjpegDestroy(d->engines));
            d->engines = NULL;
        } else {
            d->interpolates = interpolates;
        }
    }
    d->batch = batch, d->size = size, d->slot_count = slots, d->ctx = ctx;
    memcpy(d->mean, mean, sizeof d->mean);
    memcpy(d->std, std, sizeof d->std);
    d->image_floats = (size_t)size * size * 3;
    d->parser = d->engines ? d->engines : d->cuda;
    for (int s = 0; s < slots; s++)
        if (slot_open(d, &d->slots[s]) != 0) {
            snprintf(why, why_size, "out of memory for a batch of %d", batch);
            jpeg_decoder_close(d);
            return NULL;
        }
    return d;
}

void jpeg_decoder_close(jpeg_decoder *d) {
    if (!d) return;
    for (int s = 0; s < d->slot_count && d->slots; s++) slot_close(&d->slots[s]);
    free(d->slots);
    if (d->engines) CHECK_NVJPEG(nvjpegDestroy(d->engines));
    if (d->cuda) CHECK_NVJPEG(nvjpegDestroy(d->cuda));
    free(d);
}

const char *jpeg_decoder_backend(const jpeg_decoder *d) { return d->engines ? "hardware" : "cuda"; }
int jpeg_decoder_interpolates(const jpeg_decoder *d) { return d->interpolates; }
int64_t jpeg_decoder_host_fallbacks(const jpeg_decoder *d) {
    return (int64_t)atomic_load(&((jpeg_decoder *)d)->host_fallbacks);
}

size_t jpeg_decoder_gpu_bytes(const jpeg_decoder *d) {
    size_t bytes = 0;
    for (int s = 0; s < d->slot_count; s++)
        bytes += (size_t)d->batch * (d->image_floats * sizeof(float) + sizeof(crop_resize_source)) +
                 d->slots[s].picture_bytes;
    return bytes;
}

/* The worker's crop inside the picture, the window inside the scaled region (as image_resample
 * requires of the host's). */
static int crop_fits(const imagenet_encoded *r, int size) {
    const image_crop *c = &r->crop;
    return r->width > 0 && r->height > 0 && c->region.x >= 0 && c->region.y >= 0 &&
           c->region.width > 0 && c->region.height > 0 &&
           c->region.width <= r->width - c->region.x && c->region.height <= r->height - c->region.y &&
           c->scaled_width > 0 && c->scaled_height > 0 && c->offset_x >= 0 && c->offset_y >= 0 &&
           size <= c->scaled_width - c->offset_x && size <= c->scaled_height - c->offset_y;
}

/* Step 1 for sample k: where its picture decodes, and its place in the slot's pictures. */
static void classify(jpeg_decoder *d, decoder_slot *slot, int k, const imagenet_encoded *r,
                     const uint8_t *bytes, size_t *pictures_needed) {
    slot->place[k] = ON_HOST;
    if (r->kind == IMAGENET_ENCODED_PIXELS) {
        slot->place[k] = DECODED_ON_HOST;
        return;
    }
    unsigned width = 0, height = 0;
    if (r->kind != IMAGENET_ENCODED_JPEG || !crop_fits(r, d->size) ||
        TRY_NVJPEG(d, nvjpegJpegStreamParseHeader(d->parser, bytes, r->bytes, slot->header)) !=
            NVJPEG_STATUS_SUCCESS)
        return;
    CHECK_NVJPEG(nvjpegJpegStreamGetFrameDimensions(slot->header, &width, &height));
    if ((int)width != r->width || (int)height != r->height) return;
    int unsupported = 1;
    if (d->engines && nvjpegDecodeBatchedSupported(d->engines, slot->header, &unsupported) !=
                          NVJPEG_STATUS_SUCCESS)
        unsupported = 1;
    picture_group *g = d->engines && unsupported == 0 ? &slot->on_engines : &slot->on_cuda;
    slot->place[k] = g == &slot->on_engines ? ON_ENGINES : ON_CUDA;
    slot->offset[k] = *pictures_needed;
    *pictures_needed += ((size_t)width * height * 3 + PICTURE_ALIGN - 1) / PICTURE_ALIGN * PICTURE_ALIGN;
    g->members[g->count] = k;
    g->data[g->count] = bytes;
    g->lengths[g->count] = r->bytes;
    g->count++;
}

/* Step 2: one group's batched decode; a failed batch is retried picture by picture. */
static void decode_group(jpeg_decoder *d, decoder_slot *slot, picture_group *g, nvjpegHandle_t handle,
                         nvjpegJpegState_t state, int *initialised_for) {
    if (g->count == 0) return;
    if (*initialised_for != g->count) {
        CHECK_NVJPEG(nvjpegDecodeBatchedInitialize(handle, state, g->count, 1, NVJPEG_OUTPUT_RGBI));
        *initialised_for = g->count;
    }
    if (TRY_NVJPEG(d, nvjpegDecodeBatched(handle, state, g->data, g->lengths, g->outputs,
                                          slot->stream)) == NVJPEG_STATUS_SUCCESS)
        return;
    *initialised_for = 0; /* nvJPEG: a failed batch is reset by initialising again */
    for (int i = 0; i < g->count; i++)
        if (TRY_NVJPEG(d, nvjpegDecode(d->cuda, slot->single_state, g->data[i], g->lengths[i],
                                       NVJPEG_OUTPUT_RGBI, &g->outputs[i], slot->stream)) !=
            NVJPEG_STATUS_SUCCESS)
            slot->place[g->members[i]] = ON_HOST;
}

/* The slot's picture memory holds at least `bytes` (its earlier batch is done with it). */
static void reserve_pictures(decoder_slot *slot, size_t bytes) {
    if (bytes <= slot->picture_bytes) return;
    context_turn_take(); /* the free synchronises the device: not during another job's capture */
    if (slot->pictures) CHECK_CUDA(cudaFree(slot->pictures));
    slot->picture_bytes = bytes + bytes / 4; /* batches vary: room for larger ones */
    CHECK_CUDA(cudaMalloc((void **)&slot->pictures, slot->picture_bytes));
    context_turn_give();
}

/* Step 3's host part: sample k decoded on the host (the data set's read: skip_bad may give another
 * image and label) and copied into the slot's images. 0, or -1 with err. */
static int decode_on_host(jpeg_decoder *d, decoder_slot *slot, const dataset *data,
                          const imagenet_encoded *r, int32_t *label, int k, char *err,
                          size_t err_size) {
    int64_t index = r->index;
    if (data->read(data, slot->host_image, label, &index, 1, err, err_size) != 0) return -1;
    CHECK_CUDA(cudaMemcpyAsync(slot->images + (size_t)k * d->image_floats, slot->host_image,
                               d->image_floats * sizeof(float), cudaMemcpyHostToDevice, slot->stream));
    CHECK_CUDA(cudaStreamSynchronize(slot->stream)); /* host_image is needed again; this is rare */
    atomic_fetch_add(&d->host_fallbacks, 1);
    return 0;
}

int jpeg_decoder_decode(jpeg_decoder *d, const loader_batch *b, size_t payload_bytes, const dataset *data,
                        char *err, size_t err_size) {
    int n = b->n;
    if (n > d->batch || b->slot < 0 || b->slot >= d->slot_count) {
        snprintf(err, err_size, "a batch of %d in slot %d for a decoder of %d in %d slots", n, b->slot,
                 d->batch, d->slot_count);
        return -1;
    }
    decoder_slot *slot = &d->slots[b->slot];
    context_bind_thread(d->ctx);
    /* The slot's last batch is decoded and was taken: the loader gives a slot to a new batch only
     * after the job released the old one, which it does once the step copied it. The engines'
     * nvjpegDecodeBatched writes its pictures when called, whatever its stream has queued (as
     * torchcodec found, meta-pytorch/torchcodec#1634), so this wait is the host's. */
    CHECK_CUDA(cudaEventSynchronize(slot->decoded));
    const uint8_t *payloads = b->fields[IMAGENET_ENCODED_PAYLOAD];
    int32_t *labels = b->fields[IMAGENET_ENCODED_LABEL];
    const imagenet_encoded *records = b->fields[IMAGENET_ENCODED_RECORD];
    size_t pictures_needed = 0;
    slot->on_engines.count = slot->on_cuda.count = 0;
    for (int k = 0; k < n; k++)
        classify(d, slot, k, &records[k], payloads + (size_t)k * payload_bytes, &pictures_needed);
    reserve_pictures(slot, pictures_needed);
    picture_group *groups[2] = {&slot->on_engines, &slot->on_cuda};
    for (int g = 0; g < 2; g++)
        for (int i = 0; i < groups[g]->count; i++) {
            int k = groups[g]->members[i];
            nvjpegImage_t *o = &groups[g]->outputs[i];
            memset(o, 0, sizeof *o);
            o->channel[0] = slot->pictures + slot->offset[k];
            o->pitch[0] = (size_t)records[k].width * 3;
        }
    decode_group(d, slot, &slot->on_engines, d->engines, slot->engine_state, &slot->engine_batch);
    decode_group(d, slot, &slot->on_cuda, d->cuda, slot->cuda_state, &slot->cuda_batch);
    for (int k = 0; k < n; k++) {
        const imagenet_encoded *r = &records[k];
        crop_resize_source *s = &slot->staged[k];
        memset(s, 0, sizeof *s);
        if (slot->place[k] == DECODED_ON_HOST) {
            CHECK_CUDA(cudaMemcpyAsync(slot->images + (size_t)k * d->image_floats,
                                       payloads + (size_t)k * payload_bytes,
                                       d->image_floats * sizeof(float), cudaMemcpyHostToDevice,
                                       slot->stream));
        } else if (slot->place[k] == ON_HOST) {
            if (decode_on_host(d, slot, data, r, &labels[k], k, err, err_size) != 0) return -1;
        } else {
            *s = (crop_resize_source){slot->pictures + slot->offset[k], (size_t)r->width * 3, r->width,
                                      r->height, r->crop.region.x, r->crop.region.y,
                                      r->crop.region.width, r->crop.region.height,
                                      r->crop.scaled_width, r->crop.scaled_height,
                                      r->crop.offset_x, r->crop.offset_y, r->crop.flip};
        }
    }
    CHECK_CUDA(cudaMemcpyAsync(slot->sources, slot->staged, (size_t)n * sizeof *slot->staged,
                               cudaMemcpyHostToDevice, slot->stream));
    crop_resize_normalize(slot->images, slot->sources, n, d->size, d->mean, d->std, slot->stream);
    CHECK_CUDA(cudaEventRecord(slot->decoded, slot->stream));
    /* The GPU has read the batch's host buffers (the files, samples decoded on the host) before the
     * loader may refill them, even for a batch the job never takes (an epoch cut short). */
    CHECK_CUDA(cudaEventSynchronize(slot->decoded));
    return 0;
}

const float *jpeg_decoder_images(jpeg_decoder *d, const loader_batch *b, cudaStream_t consumer) {
    decoder_slot *slot = &d->slots[b->slot];
    CHECK_CUDA(cudaStreamWaitEvent(consumer, slot->decoded, 0));
    return slot->images;
}

#else /* built without nvJPEG: no decoder can be opened, so the rest is never reached */

struct jpeg_decoder {
    int batch;
};

jpeg_decoder *jpeg_decoder_open(const job_context *ctx, int batch, int size, int slots,
                                const float mean[3], const float std[3], char *why, size_t why_size) {
    snprintf(why, why_size, "this build has no nvJPEG (SUITE_HAVE_NVJPEG 0: pip install "
             "nvidia-nvjpeg, then configure and build again)");
    return NULL;
}
void jpeg_decoder_close(jpeg_decoder *d) { free(d); }
const char *jpeg_decoder_backend(const jpeg_decoder *d) { return "none"; }
int jpeg_decoder_interpolates(const jpeg_decoder *d) { return 0; }
size_t jpeg_decoder_gpu_bytes(const jpeg_decoder *d) { return 0; }
int64_t jpeg_decoder_host_fallbacks(const jpeg_decoder *d) { return 0; }
int jpeg_decoder_decode(jpeg_decoder *d, const loader_batch *b, size_t payload_bytes, const dataset *data,
                        char *err, size_t err_size) {
    snprintf(err, err_size, "this build has no nvJPEG");
    return -1;
}
const float *jpeg_decoder_images(jpeg_decoder *d, const loader_batch *b, cudaStream_t consumer) { return NULL; }

#endif

size_t jpeg_decoder_planned_bytes(int batch, int size, int slots) {
    /* pictures grow with the files (reserve_pictures, with its quarter of room): ImageNet's are
     * about 500x375 */
    size_t picture = (size_t)500 * 375 * 3;
    size_t sample = (size_t)size * size * 3 * sizeof(float) + sizeof(crop_resize_source) + picture + picture / 4;
    return (size_t)slots * (size_t)batch * sample;
}
