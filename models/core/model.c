#include "models/core/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/check.h"
#include "base/rng.h"

void param_table_add(param_table *t, const param_entry *e) {
    if (t->count == t->capacity) {
        t->capacity = t->capacity ? 2 * t->capacity : 64;
        t->entries = realloc(t->entries, (size_t)t->capacity * sizeof *t->entries);
        if (!t->entries) {
            fprintf(stderr, "out of host memory for the parameter table\n");
            exit(1);
        }
    }
    t->entries[t->count++] = *e;
}

int64_t param_numel(const param_entry *e) {
    int64_t n = 1;
    for (int i = 0; i < e->ndim; i++) n *= e->shape[i];
    return n;
}

void param_table_free(param_table *t) {
    free(t->entries);
    memset(t, 0, sizeof *t);
}

elem_type model_activation_type(const model_config *config) {
    return config->precision == PRECISION_BF16 ? ELEM_BF16 : ELEM_F32;
}

/* The checks are here, not in the models, so no model has to know about the trainer: inside
 * trainer_step_body the optimizer at the end of the previous step (or the eager warm-up pass in
 * trainer_init, which casts) has already written the copy, and this step's optimizer reads the
 * bfloat16 gradients itself. Data-parallel hooks all-reduce the float32 gradients: hooks that cast
 * them bucket by bucket (ddp) are left to it, any others get the whole cast here. */
/* The casts' scopes in the kernel trace: each reads one copy of the weights and writes the other. */
static int mark_cast(job_context *ctx, const char *name, kernel_pass pass) {
    double n = (double)arena_decay_floats(&ctx->arena);
    return ctx->scopes ? kernel_scope_enter(ctx->scopes, NULL, name, pass, KCLASS_ELEMENTWISE, 0, 6.0 * n) : -1;
}

void model_weights_to_half(job_context *ctx) {
    if (ctx->optimizer_owns_half) return;
    int token = mark_cast(ctx, "weights.to_bf16", KPASS_FORWARD);
    cast_f32_to_bf16(arena_half_weights(&ctx->arena), (const float *)ctx->arena.params,
                     arena_decay_floats(&ctx->arena), ctx->stream);
    kernel_scope_leave(token);
}

void model_grads_from_half(job_context *ctx) {
    if (ctx->grad_hooks ? ctx->grad_hooks->casts_half_grads : ctx->optimizer_owns_half) return;
    int token = mark_cast(ctx, "grads.to_f32", KPASS_BACKWARD);
    cast_bf16_to_f32(arena_grads(&ctx->arena), arena_half_grads(&ctx->arena), arena_decay_floats(&ctx->arena),
                     ctx->stream);
    kernel_scope_leave(token);
}

void model_free(model *m) {
    if (!m) return;
    if (m->destroy) m->destroy(m);
    param_table_free(&m->params);
    free(m);
}

int64_t model_param_count(const model *m) {
    int64_t n = 0;
    for (int i = 0; i < m->params.count; i++)
        if (m->params.entries[i].kind == PARAM_WEIGHT || m->params.entries[i].kind == PARAM_NO_DECAY)
            n += param_numel(&m->params.entries[i]);
    return n;
}

void model_init_params(model *m, job_context *ctx) {
    uint64_t state = m->config.seed * 0x2545F4914F6CDD1Dull + 1;
    size_t capacity = 0;
    float *host = NULL;
    for (int i = 0; i < m->params.count; i++) {
        const param_entry *e = &m->params.entries[i];
        if (e->init == PARAM_INIT_NONE) continue;
        size_t n = (size_t)param_numel(e);
        if (n > capacity) {
            free(host);
            capacity = n;
            host = malloc(n * sizeof *host);
            if (!host) {
                fprintf(stderr, "out of host memory initialising %s\n", e->name);
                exit(1);
            }
        }
        /* Elements are i.i.d., so the storage order (KRSC or not) does not change the draw's law. */
        if (e->init == PARAM_INIT_TRUNC_NORMAL_002) {
            for (size_t j = 0; j < n; j++) {
                float v;
                do v = rng_normal(&state); while (v < -100.0f || v > 100.0f); /* |0.02 v| <= 2 */
                host[j] = 0.02f * v;
            }
        } else if (e->init == PARAM_INIT_KAIMING_FAN_OUT) {
            float std = sqrtf(2.0f / (float)e->fan);
            for (size_t j = 0; j < n; j++) host[j] = std * rng_normal(&state);
        } else {
            float bound = 1.0f / sqrtf((float)e->fan);
            for (size_t j = 0; j < n; j++) host[j] = bound * (2.0f * rng_uniform(&state) - 1.0f);
        }
        CHECK_CUDA(cudaMemcpyAsync(e->data, host, n * sizeof *host, cudaMemcpyHostToDevice, ctx->stream));
        CHECK_CUDA(cudaStreamSynchronize(ctx->stream)); /* host buffer is reused next iteration */
    }
    free(host);
}

void model_backward(model *m, job_context *ctx) {
    grad_hooks *h = ctx->grad_hooks;
    /* what no layer marks (a family's own kernels) is the model's backward in the kernel trace */
    int token = kernel_scope_enter(ctx->scopes, NULL, "model", KPASS_BACKWARD, KCLASS_OTHER, 0, 0);
    if (h) h->begin(h->user);
    m->backward(m, ctx);
    if (h) h->end(h->user);
    kernel_scope_leave(token);
}
