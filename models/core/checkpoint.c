#include "models/core/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "models/core/safetensors.h"

/* [out, kh, kw, in] <-> [out, in, kh, kw] */
static void krsc_to_kcrs(float *dst, const float *src, const int64_t *shape) {
    int64_t k = shape[0], c = shape[1], r = shape[2], s = shape[3];
    for (int64_t o = 0; o < k; o++)
        for (int64_t y = 0; y < r; y++)
            for (int64_t x = 0; x < s; x++)
                for (int64_t i = 0; i < c; i++)
                    dst[((o * c + i) * r + y) * s + x] = src[((o * r + y) * s + x) * c + i];
}

static void kcrs_to_krsc(float *dst, const float *src, const int64_t *shape) {
    int64_t k = shape[0], c = shape[1], r = shape[2], s = shape[3];
    for (int64_t o = 0; o < k; o++)
        for (int64_t y = 0; y < r; y++)
            for (int64_t x = 0; x < s; x++)
                for (int64_t i = 0; i < c; i++)
                    dst[((o * r + y) * s + x) * c + i] = src[((o * c + i) * r + y) * s + x];
}

static float *host_alloc(size_t n) {
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "out of host memory (%zu floats) for a checkpoint tensor\n", n);
        exit(1);
    }
    return p;
}

void param_download(const param_entry *e, const float *device, float *host, job_context *ctx) {
    size_t n = (size_t)param_numel(e);
    float *staging = e->krsc ? host_alloc(n) : host;
    CHECK_CUDA(cudaMemcpyAsync(staging, device, n * sizeof(float), cudaMemcpyDeviceToHost, ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    if (e->krsc) {
        krsc_to_kcrs(host, staging, e->shape);
        free(staging);
    }
}

void param_upload(const param_entry *e, float *device, const float *host, job_context *ctx) {
    size_t n = (size_t)param_numel(e);
    float *staging = NULL;
    if (e->krsc) {
        staging = host_alloc(n);
        kcrs_to_krsc(staging, host, e->shape);
    }
    CHECK_CUDA(cudaMemcpyAsync(device, staging ? staging : host, n * sizeof(float),
                               cudaMemcpyHostToDevice, ctx->stream));
    CHECK_CUDA(cudaStreamSynchronize(ctx->stream));
    free(staging);
}

int checkpoint_save_table(const param_table *params, job_context *ctx, const char *path,
                          const char *const *metadata, char *err, size_t err_size) {
    st_writer *w = st_writer_open(path);
    if (!w) {
        snprintf(err, err_size, "%s: cannot start a checkpoint (out of memory)", path);
        return -1;
    }
    st_writer_metadata(w, "format", "pt");
    for (int i = 0; metadata && metadata[i] && metadata[i + 1]; i += 2) st_writer_metadata(w, metadata[i], metadata[i + 1]);
    float *host = NULL;
    size_t capacity = 0;
    for (int i = 0; i < params->count; i++) {
        const param_entry *e = &params->entries[i];
        if (e->kind == PARAM_COUNTER) {
            st_writer_add(w, e->name, ST_I64, 0, e->shape, e->counter);
            continue;
        }
        size_t n = (size_t)param_numel(e);
        if (n > capacity) {
            free(host);
            host = host_alloc(capacity = n);
        }
        param_download(e, e->data, host, ctx);
        st_writer_add(w, e->name, ST_F32, e->ndim, e->shape, host);
    }
    free(host);
    return st_writer_close(w, err, err_size);
}

int checkpoint_save(const model *m, job_context *ctx, const char *path, char *err, size_t err_size) {
    return checkpoint_save_table(&m->params, ctx, path, NULL, err, err_size);
}

static int check_entry(const param_entry *e, const st_tensor *t, const char *path, char *err, size_t err_size) {
    st_dtype want = e->kind == PARAM_COUNTER ? ST_I64 : ST_F32;
    int same = t->dtype == want && t->ndim == e->ndim;
    for (int d = 0; same && d < e->ndim; d++) same = t->shape[d] == e->shape[d];
    if (same) return 0;
    char want_shape[96] = "", got_shape[96] = "";
    for (int d = 0; d < e->ndim; d++)
        snprintf(want_shape + strlen(want_shape), sizeof want_shape - strlen(want_shape), "%s%lld",
                 d ? ", " : "", (long long)e->shape[d]);
    for (int d = 0; d < t->ndim; d++)
        snprintf(got_shape + strlen(got_shape), sizeof got_shape - strlen(got_shape), "%s%lld",
                 d ? ", " : "", (long long)t->shape[d]);
    snprintf(err, err_size, "%s: tensor '%s' is %s [%s], expected %s [%s]", path, e->name,
             st_dtype_name(t->dtype), got_shape, st_dtype_name(want), want_shape);
    return -1;
}

int checkpoint_load_table(param_table *params, job_context *ctx, const char *path, const char *owner,
                          const char *expected, char *err, size_t err_size) {
    st_file f;
    char reason[512];
    if (st_open(&f, path, reason, sizeof reason) != 0) {
        snprintf(err, err_size, "%s", reason);
        return -1;
    }
    int status = 0;
    for (int i = 0; i < params->count && status == 0; i++) {
        const param_entry *e = &params->entries[i];
        const st_tensor *t = st_find(&f, e->name);
        if (!t) {
            snprintf(err, err_size, "%s: tensor '%s' is missing (%s is expected)", path, e->name, expected);
            status = -1;
        } else {
            status = check_entry(e, t, path, err, err_size);
        }
    }
    for (int i = 0; i < f.count && status == 0; i++) {
        int known = 0;
        for (int j = 0; j < params->count && !known; j++)
            known = strcmp(f.tensors[i].name, params->entries[j].name) == 0;
        if (!known) {
            snprintf(err, err_size, "%s: unexpected tensor '%s' (not part of %s)", path, f.tensors[i].name, owner);
            status = -1;
        }
    }
    for (int i = 0; i < params->count && status == 0; i++) {
        const param_entry *e = &params->entries[i];
        const st_tensor *t = st_find(&f, e->name);
        if (e->kind == PARAM_COUNTER) memcpy(e->counter, st_data(&f, t), sizeof(int64_t));
        else param_upload(e, e->data, st_data(&f, t), ctx);
    }
    st_close(&f);
    return status;
}

int checkpoint_load(model *m, job_context *ctx, const char *path, char *err, size_t err_size) {
    char expected[128];
    snprintf(expected, sizeof expected, "a %s checkpoint with %d classes and timm's names", m->config.name,
             m->config.classes);
    return checkpoint_load_table(&m->params, ctx, path, m->config.name, expected, err, err_size);
}
