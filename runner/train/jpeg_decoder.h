/* A training job's JPEG decoder on the GPU: the batches of ImageNet's encoded source (data/loader.h,
 * loader_source_imagenet_encoded: the files as read, each with the crop the host would cut) are
 * decoded by nvJPEG's batched decode, on the GPU's JPEG engines (NVJPEG_BACKEND_HARDWARE: A100,
 * H100) where nvjpegCreateEx accepts it and the picture is one they take, else by its CUDA
 * backend; then one kernel (kernels/crop_resize.h) cuts, resizes, flips and normalises them into
 * float NHWC images, as the host transform would. What nvJPEG refuses or fails on is decoded on the
 * host instead (the data set's read, skip_bad included) and counted.
 *
 * It lives with the job because it is the job's: it runs on a stream of the job's place (its
 * green context too) and hands each batch to the job's stream; data/ stays host only, and kernels/
 * holds the kernel without knowing the data layer.
 *
 * Pipelining: the loader's workers decode (data/loader.h's finish hook), each batch in its ring
 * slot, up to `slots` batches at once and ahead of the job, whose stream then only waits for its
 * batch's decode (jpeg_decoder_images). A slot is written again only once the loader gives it to
 * a new batch, after the job released the old one, which it does once its step has copied the
 * images. Built without nvJPEG (SUITE_HAVE_NVJPEG 0), jpeg_decoder_open says so and no decoder
 * exists. */
#ifndef SUITE_JPEG_DECODER_H
#define SUITE_JPEG_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "models/core/context.h"

typedef struct jpeg_decoder jpeg_decoder;

/* Starts a decoder in the job's place for batches of at most `batch` images of size x size,
 * normalised with mean and std, in `slots` slots (the loader's depth). NULL with why when there is
 * none to be had: a build without nvJPEG, or nvJPEG refusing every backend here. */
jpeg_decoder *jpeg_decoder_open(const job_context *ctx, int batch, int size, int slots,
                                const float mean[3], const float std[3], char *why, size_t why_size);
void jpeg_decoder_close(jpeg_decoder *d);
/* "hardware" (the JPEG engines, with the CUDA backend for what they do not take) or "cuda". */
const char *jpeg_decoder_backend(const jpeg_decoder *d);
/* Whether chroma is upsampled with interpolation (as stb_image does) rather than replicated:
 * NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, where nvJPEG took the flag. */
int jpeg_decoder_interpolates(const jpeg_decoder *d);
/* Device bytes the decoder holds (its slots: images, decoded pictures, descriptors). */
size_t jpeg_decoder_gpu_bytes(const jpeg_decoder *d);
/* What a decoder of `slots` slots for batches of `batch` images will hold, planned before any file
 * is read (train --dry-run): its pictures counted at ImageNet's typical 500x375, so larger files
 * take more. nvJPEG's own state buffers are not in it. */
size_t jpeg_decoder_planned_bytes(int batch, int size, int slots);
/* Pictures of the batches so far that nvJPEG failed on, decoded on the host instead. */
int64_t jpeg_decoder_host_fallbacks(const jpeg_decoder *d);

/* Decodes batch b of the encoded source (payload_bytes: its payload field's size) into slot
 * b->slot, on any thread (it takes the job's place), over data for the host fallback (which may
 * change a sample's label, as skip_bad does), and returns once the GPU has read b's buffers. 0, or
 * -1 with err when the host fallback fails (an undecodable image without skip_bad). */
int jpeg_decoder_decode(jpeg_decoder *d, const loader_batch *b, size_t payload_bytes, const dataset *data,
                        char *err, size_t err_size);
/* The device images [b->n, size, size, 3] of decoded batch b, with `consumer` made to wait for
 * them; valid until the loader gives b's slot to another batch. */
const float *jpeg_decoder_images(jpeg_decoder *d, const loader_batch *b, cudaStream_t consumer);

#endif
