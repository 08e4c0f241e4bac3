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
 * Pipelining: two slots, used in turn. Batch k decodes on the decoder's stream into slot k % 2
 * while the job's stream still trains on batch k - 1; the job's stream waits for the decode
 * (jpeg_decoder_run), and the slot is written again only once the job's stream has taken its
 * images (jpeg_decoder_taken). Built without nvJPEG (SUITE_HAVE_NVJPEG 0), jpeg_decoder_open says
 * so and no decoder exists. */
#ifndef SUITE_JPEG_DECODER_H
#define SUITE_JPEG_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/loader.h"
#include "models/core/context.h"

typedef struct jpeg_decoder jpeg_decoder;

/* Starts a decoder in the job's place for batches of at most `batch` images of size x size,
 * normalised with mean and std. NULL with why when there is none to be had: a build without
 * nvJPEG, or nvJPEG refusing every backend here. */
jpeg_decoder *jpeg_decoder_open(const job_context *ctx, int batch, int size, const float mean[3],
                                const float std[3], char *why, size_t why_size);
void jpeg_decoder_close(jpeg_decoder *d);
/* "hardware" (the JPEG engines, with the CUDA backend for what they do not take) or "cuda". */
const char *jpeg_decoder_backend(const jpeg_decoder *d);
/* Whether chroma is upsampled with interpolation (as stb_image does) rather than replicated:
 * NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, where nvJPEG took the flag. */
int jpeg_decoder_interpolates(const jpeg_decoder *d);
/* Device bytes the decoder holds (its two slots: images, decoded pictures, descriptors). */
size_t jpeg_decoder_gpu_bytes(const jpeg_decoder *d);
/* Pictures of the batches so far that nvJPEG failed on, decoded on the host instead. */
int64_t jpeg_decoder_host_fallbacks(const jpeg_decoder *d);

/* Enqueues the decode of batch b of the encoded source (payload_bytes: its payload field's size)
 * over data (for the host fallback, which may change a sample's label, as skip_bad does) and makes
 * `consumer` wait for it. Returns the device images [b->n, size, size, 3], valid until the second
 * call after this one; NULL with err when the host fallback fails (an undecodable image without
 * skip_bad). Call jpeg_decoder_taken once the consumer's work that reads them is enqueued. */
const float *jpeg_decoder_run(jpeg_decoder *d, const loader_batch *b, size_t payload_bytes,
                              const dataset *data, cudaStream_t consumer, char *err,
                              size_t err_size);
/* The consumer has enqueued what reads the last batch's images: their slot may be written again
 * once that work is done. */
void jpeg_decoder_taken(jpeg_decoder *d, cudaStream_t consumer);
/* Waits until the last batch's inputs (the loader's buffers) are read: the loader may refill them. */
void jpeg_decoder_wait_inputs(jpeg_decoder *d);

#endif
