/* Checkpoints are safetensors files holding exactly timm's state_dict: the same tensor names, shapes
 * and dtypes (float32, num_batches_tracked int64), so `model.load_state_dict(load_file(f))` loads
 * them strictly in PyTorch and weights saved from timm load here. Convolution weights are stored
 * [out, kh, kw, in] on the GPU and converted to PyTorch's [out, in, kh, kw] on the way out and back. */
#ifndef SUITE_CHECKPOINT_H
#define SUITE_CHECKPOINT_H

#include <stddef.h>

#include "models/core/context.h"
#include "models/core/model.h"

int checkpoint_save(const model *m, job_context *ctx, const char *path, char *err, size_t err_size);
/* Strict: every tensor of the model must be in the file with its dtype and shape, and the file may
 * hold nothing else. On error nothing is half-loaded: the file is checked completely first. */
int checkpoint_load(model *m, job_context *ctx, const char *path, char *err, size_t err_size);

/* The same for any parameter table (the recommender keeps one without an image model around it).
 * metadata: NULL, or key, value, ..., NULL for the file's __metadata__. owner names the model in
 * messages; expected describes the checkpoint the table needs (for a missing tensor). */
int checkpoint_save_table(const param_table *params, job_context *ctx, const char *path,
                          const char *const *metadata, char *err, size_t err_size);
int checkpoint_load_table(param_table *params, job_context *ctx, const char *path, const char *owner,
                          const char *expected, char *err, size_t err_size);

/* Copies a device tensor laid out like parameter e (e.g. its data or its gradient) into host memory
 * in PyTorch's layout. */
void param_download(const param_entry *e, const float *device, float *host, job_context *ctx);
/* The reverse: host data in PyTorch's layout into the device tensor. */
void param_upload(const param_entry *e, float *device, const float *host, job_context *ctx);

#endif
