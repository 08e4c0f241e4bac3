/* Parity of the recommender with PyTorch on the GPU: tests/parity/dlrm_reference.py writes the
 * reference architecture's weights (facebookresearch/dlrm's names) and one training step's batch,
 * sigmoid output, BCE loss, dense gradients and parameters after SGD, and for each table the rows
 * the batch touched with their coalesced sparse gradient and their values after the step (a
 * float64 reference, with PyTorch float32's own error per tensor). The suite loads the weights
 * through its checkpoint reader, runs one eager step and must match all of it; rows the batch did
 * not touch must keep their bits. The configuration follows from the files' shapes. Run the
 * script first and point SUITE_DLRM_PARITY_DIR at its output; without it the test is skipped.
 * SUITE_PARITY_LR gives the script's --lr when it was not 1.0; SUITE_PARITY_TF32=1 compares a
 * TF32 run of both sides.
 * Without SUITE_DLRM_PARITY_DIR the reference committed in tests/parity/reference/fp32/ is checked
 * (tests/parity/make_reference.py: Criteo Kaggle's shape, tables capped at 8 rows, batch 16): it
 * carries no weights file (the weights follow tests/support/parity_rule.h's rule) and its dense gradients
 * and updates are compared through their count sketches; the touched rows as above. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/check.h"
#include "models/dlrm.h"
#include "models/core/safetensors.h"
#include "tests/support/parity_rule.h"
#include "tests/support/testutil.h"

#define ERR_FACTOR 10.0
static const char *parity_dir;
static int tf32, failures;
static parity_table table; /* the committed reference's sketched tensors */

static const st_tensor *tensor(const st_file *f, const char *name, st_dtype dtype) {
    const st_tensor *t = st_find(f, name);
    if (!t) fail_msg("reference file lacks '%s'", name);
    if (t->dtype != dtype) fail_msg("'%s' is %s, expected %s", name, st_dtype_name(t->dtype), st_dtype_name(dtype));
    return t;
}

static const float *floats(const st_file *f, const char *name) { return st_data(f, tensor(f, name, ST_F32)); }

/* Relative L2 error against the float64 reference, bounded by ERR_FACTOR x PyTorch's own float32
 * error plus `floor` (the precision the comparison itself can reach). */
static double compare(const st_file *ref, const char *key, const float *ours, size_t n, double floor, double *worst) {
    char name[PARAM_NAME_MAX + 32];
    int row = st_find(ref, key) ? -1 : parity_table_find(&table, key);
    double e, torch_err;
    if (row >= 0) {
        e = parity_table_error(&table, row, ours, n);
        torch_err = table.torch_err[row];
    } else {
        e = test_rel_err_f(ours, floats(ref, key), n);
        snprintf(name, sizeof name, "torch_err.%s", key);
        torch_err = floats(ref, name)[0];
    }
    double bound = ERR_FACTOR * torch_err + floor;
    if (e > *worst) *worst = e;
    if (!(e <= bound)) {
        snprintf(name, sizeof name, "torch32.%s", key);
        const st_tensor *t32 = st_find(ref, name);
        double e32 = t32 ? test_rel_err_f(ours, st_data(ref, t32), n) : NAN;
        if (failures++ < 100)
            printf("  %s: relative error %.3e exceeds %.2e (PyTorch float32's own: %.2e); against PyTorch float32 %.3e\n",
                   key, e, bound, torch_err, e32);
    }
    return e;
}

/* The named configuration and cap whose tables have the weights file's shapes. */
static void config_from_weights(dlrm_config *c, const st_file *w, int batch) {
    const st_tensor *t0 = st_find(w, "emb_l.0.weight");
    if (!t0 || t0->ndim != 2) fail_msg("the weights file has no emb_l.0.weight [rows, dim]");
    const char *name = t0->shape[1] == 16 ? "criteo-kaggle" : t0->shape[1] == 128 ? "criteo-terabyte" : NULL;
    if (!name) fail_msg("emb_l.0.weight has dim %lld: neither criteo-kaggle (16) nor criteo-terabyte (128)",
                        (long long)t0->shape[1]);
    const int64_t *sizes = dlrm_table_sizes(name);
    int64_t cap = 0;
    for (int t = 0; t < 26; t++) {
        char key[64];
        snprintf(key, sizeof key, "emb_l.%d.weight", t);
        const st_tensor *e = st_find(w, key);
        if (!e) fail_msg("the weights file lacks %s", key);
        if (e->shape[0] < sizes[t] && e->shape[0] > cap) cap = e->shape[0];
    }
    char err[512];
    if (dlrm_config_named(c, name, cap, batch, 0, err, sizeof err) != 0) fail_msg("%s", err);
}

static void test_parity(void **state) {
    char path[4096], weights[4096], err[1024];
    snprintf(path, sizeof path, "%s/dlrm_ref.safetensors", parity_dir);
    snprintf(weights, sizeof weights, "%s/dlrm_weights.safetensors", parity_dir);
    st_file ref, w = {0};
    if (st_open(&ref, path, err, sizeof err) != 0) fail_msg("%s", err);
    int by_rule = st_find(&ref, "table.sketch") != NULL; /* the committed reference: weights by the rule */
    if (!by_rule && st_open(&w, weights, err, sizeof err) != 0) fail_msg("%s", err);
    const st_tensor *dense_t = tensor(&ref, "dense", ST_F32);
    int B = (int)dense_t->shape[0];
    dlrm_config c;
    if (by_rule) {
        int64_t cap = ((const int32_t *)st_data(&ref, tensor(&ref, "max_rows", ST_I32)))[0];
        if (dlrm_config_named(&c, "criteo-kaggle", cap, B, 0, err, sizeof err) != 0) fail_msg("%s", err);
    } else {
        config_from_weights(&c, &w, B);
    }
    job_context ctx;
    if (context_init(&ctx, 0, (size_t)64 << 20, tf32) != CONTEXT_OK) fail_msg("no GPU");
    dlrm m;
    if (dlrm_plan(&m, &c, 0, err, sizeof err) != 0 || dlrm_start(&m, &ctx, err, sizeof err) != 0) fail_msg("%s", err);
    float **rule_weights = calloc((size_t)m.params.count, sizeof *rule_weights); /* by_rule: each table before */
    if (by_rule) {
        char **keys = malloc((size_t)m.params.count * 2 * sizeof *keys);
        int count = 0;
        for (int i = 0; i < m.params.count; i++) {
            const param_entry *e = &m.params.entries[i];
            rule_weights[i] = malloc((size_t)param_numel(e) * sizeof(float));
            parity_values(e->name, e->ndim, e->shape, rule_weights[i]);
            CHECK_CUDA(cudaMemcpy(e->data, rule_weights[i], (size_t)param_numel(e) * sizeof(float),
                                  cudaMemcpyHostToDevice));
            if (strncmp(e->name, "emb_l.", 6) == 0) continue;
            for (int k = 0; k < 2; k++) {
                keys[count] = malloc(PARAM_NAME_MAX + 16);
                snprintf(keys[count++], PARAM_NAME_MAX + 16, "%s.%s", k ? "updated" : "grad", e->name);
            }
        }
        CHECK_CUDA(cudaDeviceSynchronize());
        int rc = parity_table_open(&table, &ref, keys, count, err, sizeof err);
        for (int i = 0; i < count; i++) free(keys[i]);
        free(keys);
        if (rc != 0) fail_msg("%s: %s", path, err);
    } else if (dlrm_load(&m, weights, err, sizeof err) != 0) {
        fail_msg("%s", err);
    }

    size_t bytes = dlrm_input_bytes(&c);
    char *block = calloc(1, bytes);
    dlrm_input in = dlrm_input_at(&c, block);
    memcpy(in.dense, floats(&ref, "dense"), (size_t)B * DLRM_DENSE * sizeof(float));
    memcpy(in.indices, st_data(&ref, tensor(&ref, "indices", ST_I32)), (size_t)B * 26 * sizeof(int32_t));
    memcpy(in.labels, floats(&ref, "labels"), (size_t)B * sizeof(float));
    CHECK_CUDA(cudaMemcpy(m.input_block[0], block, bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaDeviceSynchronize()); /* the job's stream does not wait for the legacy one */
    free(block);
    const char *lr_text = getenv("SUITE_PARITY_LR");
    float lr = lr_text ? strtof(lr_text, NULL) : 1.0f;
    dlrm_lr_policy constant = {lr, 0, 0, 0};
    dlrm_prepare(&m, constant, 0);
    dlrm_train_step_body(&m, 0); /* one step, eagerly */
    CHECK_CUDA(cudaStreamSynchronize(ctx.stream));

    failures = 0;
    double worst_out = 0, worst_grad = 0, worst_update = 0, worst_rows = 0;
    float *logits = malloc((size_t)B * sizeof *logits), *probs = malloc((size_t)B * sizeof *probs);
    test_to_host(logits, m.top_out[c.top_layers - 1], (size_t)B);
    for (int i = 0; i < B; i++) probs[i] = (float)(1.0 / (1.0 + exp(-(double)logits[i])));
    double e_probs = compare(&ref, "probs", probs, (size_t)B, 1e-6, &worst_out);
    double loss_sum, correct;
    dlrm_take_sums(&m, &loss_sum, &correct);
    float loss = (float)(loss_sum / B);
    compare(&ref, "loss", &loss, 1, 1e-6, &worst_out);

    size_t untouched_changed = 0, touched = 0;
    for (int i = 0; i < m.params.count; i++) {
        const param_entry *e = &m.params.entries[i];
        size_t n = (size_t)param_numel(e);
        char key[PARAM_NAME_MAX + 32];
        float *ours = malloc(n * sizeof *ours);
        if (strncmp(e->name, "emb_l.", 6) != 0) {
            snprintf(key, sizeof key, "grad.%s", e->name);
            test_to_host(ours, arena_grad_of(&ctx.arena, e->data), n);
            compare(&ref, key, ours, n, 1e-5, &worst_grad);
            snprintf(key, sizeof key, "updated.%s", e->name);
            test_to_host(ours, e->data, n);
            compare(&ref, key, ours, n, 1e-6, &worst_update);
            free(ours);
            continue;
        }
        /* a table: touched rows against the reference, the rest against the weights file bit for bit */
        int dim = (int)e->shape[1];
        test_to_host(ours, e->data, n);
        const float *before = by_rule ? rule_weights[i] : floats(&w, e->name);
        snprintf(key, sizeof key, "rows.%s", e->name);
        const st_tensor *rows_t = tensor(&ref, key, ST_I32);
        const int32_t *rows = st_data(&ref, rows_t);
        size_t u = (size_t)rows_t->shape[0];
        char *hit = calloc((size_t)e->shape[0], 1);
        float *updated = malloc(u * dim * sizeof *updated), *grad = malloc(u * dim * sizeof *grad);
        double noise = 0, scale = 0; /* rounding of the stored rows, as a gradient error */
        const float *grad_ref = NULL;
        snprintf(key, sizeof key, "grad_rows.%s", e->name);
        grad_ref = floats(&ref, key);
        for (size_t k = 0; k < u; k++) {
            hit[rows[k]] = 1;
            for (int d = 0; d < dim; d++) {
                float now = ours[(size_t)rows[k] * dim + d], was = before[(size_t)rows[k] * dim + d];
                updated[k * dim + d] = now;
                grad[k * dim + d] = (float)(((double)was - now) / lr);
                double ulp = nextafterf(fabsf(now), INFINITY) - fabsf(now);
                noise += (0.5 * ulp / lr) * (0.5 * ulp / lr);
                scale += (double)grad_ref[k * dim + d] * grad_ref[k * dim + d];
            }
        }
        for (int64_t r = 0; r < e->shape[0]; r++)
            if (!hit[r]) untouched_changed += memcmp(ours + r * dim, before + r * dim, dim * sizeof(float)) != 0;
        touched += u;
        double floor = 4 * sqrt(noise / (scale > 0 ? scale : 1)) + 1e-6;
        compare(&ref, key, grad, u * dim, floor, &worst_rows);
        snprintf(key, sizeof key, "updated_rows.%s", e->name);
        if (st_find(&ref, key)) compare(&ref, key, updated, u * dim, 1e-6, &worst_update); /* committed: the
                                                                 * gradient above is read off the update */
        free(hit), free(updated), free(grad), free(ours);
    }
    printf("dlrm %s max_rows %lld batch %d lr %g (%s): probs rel err %.2e, loss %.6f vs %.6f; worst dense gradient "
           "%.2e, worst table gradient %.2e (%zu rows touched), worst update %.2e; untouched rows changed: %zu\n",
           c.name, (long long)c.max_rows, B, lr, tf32 ? "TF32" : "FP32", e_probs, loss, floats(&ref, "loss")[0],
           worst_grad, worst_rows, touched, worst_update, untouched_changed);
    free(logits), free(probs);
    for (int i = 0; i < m.params.count; i++) free(rule_weights[i]);
    free(rule_weights);
    dlrm_free(&m);
    context_free(&ctx);
    parity_table_free(&table);
    st_close(&ref);
    if (!by_rule) st_close(&w);
    if (untouched_changed) fail_msg("%zu rows the batch did not touch changed", untouched_changed);
    if (failures) fail_msg("%d tensors outside their bounds", failures);
}

int main(void) {
    test_require_gpu();
    parity_dir = getenv("SUITE_DLRM_PARITY_DIR");
    if (!parity_dir || !*parity_dir) parity_dir = SUITE_SOURCE_DIR "/tests/parity/reference/fp32";
    tf32 = getenv("SUITE_PARITY_TF32") && atoi(getenv("SUITE_PARITY_TF32")) == 1;
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_parity)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
