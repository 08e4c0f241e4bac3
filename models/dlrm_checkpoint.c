/* Recommender checkpoints: safetensors files holding exactly the reference's state_dict
 * (emb_l.<t>.weight, bot_l.<2i>.weight/bias, top_l.<2i>.weight/bias, float32, PyTorch's
 * shapes), so `DLRM_Net.load_state_dict(safetensors.torch.load_file(f))` takes them and a file
 * written by PyTorch loads here. The model keeps its own parameter table rather than an image
 * `model`; models/core/checkpoint.h reads and writes tables. Tables move through host memory whole: a
 * 28 GB XL checkpoint needs that much host memory twice. */
#include <stdio.h>

#include "models/core/checkpoint.h"
#include "models/dlrm.h"

int dlrm_save(const dlrm *m, const char *path, char *err, size_t err_size) {
    char cap[32];
    snprintf(cap, sizeof cap, "%lld", (long long)m->config.max_rows);
    const char *const metadata[] = {"model", "dlrm", "config", m->config.name, "max_rows", cap, NULL};
    return checkpoint_save_table(&m->params, m->ctx, path, metadata, err, err_size);
}

int dlrm_load(dlrm *m, const char *path, char *err, size_t err_size) {
    char expected[160];
    snprintf(expected, sizeof expected, "a %s checkpoint with the reference's names and --max-rows %lld",
             m->config.name, (long long)m->config.max_rows);
    return checkpoint_load_table(&m->params, m->ctx, path, m->config.name, expected, err, err_size);
}
