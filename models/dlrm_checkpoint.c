/* Recommender checkpoints: safetensors files holding exactly the reference's state_dict
 * (emb_l.<t>.weight, bot_l.<2i>.weight/bias, top_l.<2i>.weight/bias, float32, PyTorch's
 * shapes), so `DLRM_Net.load_state_dict(safetensors.torch.load_file(f))` takes them and a file
 * written by PyTorch loads here. The model keeps its own parameter table rather than an image
 * `model`, so this is a small table-level writer and reader over models/safetensors.h. Tables
 * move through host memory whole: a 28 GB XL checkpoint needs that much host memory twice. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/check.h"
#include "models/dlrm.h"
#include "models/safetensors.h"

static void shape_text(char *out, size_t size, int ndim, const int64_t *shape) {
    out[0] = '\0';
    for (int d = 0; d < ndim; d++)
        snprintf(out + strlen(out), size - strlen(out), "%s%lld", d ? ", " : "", (long long)shape[d]);
}

int dlrm_save(const dlrm *m, const char *path, char *err, size_t err_size) {
    /* the parameters are written on the job's (non-blocking) stream: let it finish first */
    CHECK_CUDA(cudaStreamSynchronize(m->ctx->stream));
    st_writer *w = st_writer_open(path);
    if (!w) {
        snprintf(err, err_size, "%s: cannot start a checkpoint (out of memory)", path);
        return -1;
    }
    char cap[32];
    snprintf(cap, sizeof cap, "%lld", (long long)m->config.max_rows);
    st_writer_metadata(w, "format", "pt");
    st_writer_metadata(w, "model", "dlrm");
    st_writer_metadata(w, "config", m->config.name);
    st_writer_metadata(w, "max_rows", cap);
    size_t capacity = 0;
    float *host = NULL;
    int status = 0;
    for (int i = 0; i < m->params.count && status == 0; i++) {
        const param_entry *e = &m->params.entries[i];
        size_t n = (size_t)param_numel(e);
        if (n > capacity) {
            free(host);
            host = malloc((capacity = n) * sizeof *host);
            if (!host) {
                snprintf(err, err_size, "%s: out of host memory for %s (%zu floats)", path, e->name, n);
                status = -1;
                break;
            }
        }
        CHECK_CUDA(cudaMemcpy(host, e->data, n * sizeof *host, cudaMemcpyDeviceToHost));
        if (st_writer_add(w, e->name, ST_F32, e->ndim, e->shape, host) != 0) break; /* reported at close */
    }
    free(host);
    char reason[512];
    int closed = st_writer_close(w, reason, sizeof reason); /* writes, frees the writer */
    if (status == 0 && closed != 0) {
        snprintf(err, err_size, "%s", reason);
        status = -1;
    }
    return status;
}

int dlrm_load(dlrm *m, const char *path, char *err, size_t err_size) {
    CHECK_CUDA(cudaStreamSynchronize(m->ctx->stream));
    st_file f;
    char reason[512];
    if (st_open(&f, path, reason, sizeof reason) != 0) {
        snprintf(err, err_size, "%s", reason);
        return -1;
    }
    int status = 0;
    for (int i = 0; i < m->params.count && status == 0; i++) {
        const param_entry *e = &m->params.entries[i];
        const st_tensor *t = st_find(&f, e->name);
        if (!t) {
            snprintf(err, err_size, "%s: tensor '%s' is missing (a %s checkpoint with the reference's names "
                     "and --max-rows %lld is expected)", path, e->name, m->config.name, (long long)m->config.max_rows);
            status = -1;
            break;
        }
        int same = t->dtype == ST_F32 && t->ndim == e->ndim;
        for (int d = 0; same && d < e->ndim; d++) same = t->shape[d] == e->shape[d];
        if (!same) {
            char want[96], got[96];
            shape_text(want, sizeof want, e->ndim, e->shape);
            shape_text(got, sizeof got, t->ndim, t->shape);
            snprintf(err, err_size, "%s: tensor '%s' is %s [%s], expected F32 [%s]", path, e->name,
                     st_dtype_name(t->dtype), got, want);
            status = -1;
        }
    }
    for (int i = 0; i < f.count && status == 0; i++) {
        int known = 0;
        for (int j = 0; j < m->params.count && !known; j++) known = !strcmp(f.tensors[i].name, m->params.entries[j].name);
        if (!known) {
            snprintf(err, err_size, "%s: unexpected tensor '%s' (not part of %s)", path, f.tensors[i].name,
                     m->config.name);
            status = -1;
        }
    }
    for (int i = 0; i < m->params.count && status == 0; i++) {
        const param_entry *e = &m->params.entries[i];
        const st_tensor *t = st_find(&f, e->name);
        CHECK_CUDA(cudaMemcpy(e->data, st_data(&f, t), (size_t)param_numel(e) * sizeof(float),
                              cudaMemcpyHostToDevice));
    }
    /* a pageable copy may still be in flight when cudaMemcpy returns, and the job's stream does
     * not wait for the legacy stream */
    CHECK_CUDA(cudaDeviceSynchronize());
    st_close(&f);
    return status;
}
