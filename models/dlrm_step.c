/* The recommender's training step and evaluation pass (models/dlrm.h), enqueued on the job's
 * stream and captured once per input slot in a CUDA graph:
 *
 *   main stream: lookups -> bottom MLP -> interaction -> top MLP -> BCE -> backward -> lr -> SGD
 *   side stream:            sort of the (row, bag) pairs ---------------------------> join
 *                                                               sparse SGD of the touched rows
 *
 * The sort depends only on the indices, so it runs beside the dense layers (a fork/join of
 * events, which a capture turns into graph edges). Matmuls are cuBLASLt (models/layers/linear.c); the
 * ReLUs are separate in-place passes, so every activation kept for backward is a layer output. */
#include <string.h>

#include "kernels/dlrm.h"
#include "kernels/kernels.h"
#include "kernels/check.h"
#include "models/dlrm.h"

static dlrm_lookups lookups_of(const dlrm *m, const dlrm_input *in) {
    dlrm_lookups l = {m->config.batch, in->indices, in->offsets, m->capacity};
    return l;
}

/* The kernel trace's scope of the recommender's own kernels (models/core/kernel_scope.h); the
 * MLPs' matmuls are their linear layers' (models/layers/linear.c). No FLOPs or bytes: the lookups'
 * bytes depend on the batch's keys. */
static int mark(const dlrm *m, const char *name, kernel_pass pass, kernel_class cls) {
    return kernel_scope_enter(m->ctx->scopes, NULL, name, pass, cls, 0, 0);
}

/* Forward to the top MLP's logits (top_out[last]). Training also writes the (row, bag) pairs
 * and forks their sort onto the side stream. */
static void forward(dlrm *m, const dlrm_input *in, int training) {
    const dlrm_config *c = &m->config;
    job_context *ctx = m->ctx;
    cudaStream_t stream = ctx->stream;
    const int B = c->batch;
    int token = mark(m, "embeddings", KPASS_FORWARD, KCLASS_EMBEDDING);
    dlrm_embedding_bag_forward(m->emb_out, training ? m->keys : NULL, training ? m->vals : NULL, m->embeddings,
                               m->tables, lookups_of(m, in), stream);
    if (training) {
        CHECK_CUDA(cudaEventRecord(m->fork, stream));
        CHECK_CUDA(cudaStreamWaitEvent(m->side, m->fork, 0));
        dlrm_sort_lookups(m->sorted_keys, m->sorted_vals, m->keys, m->vals, m->capacity, m->row_bits,
                          m->sort_scratch, m->sort_scratch_bytes, m->side);
        CHECK_CUDA(cudaEventRecord(m->join, m->side));
    }
    kernel_scope_leave(token);
    const float *x = in->dense;
    for (int i = 0; i < c->bottom_layers; i++) {
        linear_forward(&m->bottom[i], m->bottom_out[i], x, ctx);
        token = mark(m, "relu", KPASS_FORWARD, KCLASS_ELEMENTWISE);
        dlrm_relu_forward(m->bottom_out[i], (size_t)B * c->bottom[i + 1], stream);
        kernel_scope_leave(token);
        x = m->bottom_out[i];
    }
    token = mark(m, "interaction", KPASS_FORWARD, KCLASS_GEMM);
    dlrm_interaction_forward(m->inter, x, m->emb_out, B, c->tables, c->dim, stream);
    kernel_scope_leave(token);
    x = m->inter;
    for (int i = 0; i < c->top_layers; i++) {
        linear_forward(&m->top[i], m->top_out[i], x, ctx);
        token = mark(m, "relu", KPASS_FORWARD, KCLASS_ELEMENTWISE);
        if (i + 1 < c->top_layers) dlrm_relu_forward(m->top_out[i], (size_t)B * c->top[i + 1], stream);
        kernel_scope_leave(token);
        x = m->top_out[i];
    }
}

/* From dlogits (top_grad[last]) to every dense gradient and the bag gradients emb_grad. */
static void backward(dlrm *m, const dlrm_input *in) {
    const dlrm_config *c = &m->config;
    job_context *ctx = m->ctx;
    cudaStream_t stream = ctx->stream;
    const int B = c->batch;
    for (int i = c->top_layers - 1; i >= 0; i--) {
        int token = mark(m, "relu", KPASS_BACKWARD, KCLASS_ELEMENTWISE);
        if (i + 1 < c->top_layers) dlrm_relu_backward(m->top_grad[i], m->top_out[i], (size_t)B * c->top[i + 1], stream);
        kernel_scope_leave(token);
        linear_backward(&m->top[i], i ? m->top_grad[i - 1] : m->inter_grad, m->top_grad[i],
                        i ? m->top_out[i - 1] : m->inter, ctx);
    }
    int last = c->bottom_layers - 1;
    int token = mark(m, "interaction", KPASS_BACKWARD, KCLASS_GEMM);
    dlrm_interaction_backward(m->bottom_grad[last], m->emb_grad, m->inter_grad, m->bottom_out[last], m->emb_out,
                              B, c->tables, c->dim, stream);
    kernel_scope_leave(token);
    for (int i = last; i >= 0; i--) {
        token = mark(m, "relu", KPASS_BACKWARD, KCLASS_ELEMENTWISE);
        dlrm_relu_backward(m->bottom_grad[i], m->bottom_out[i], (size_t)B * c->bottom[i + 1], stream);
        kernel_scope_leave(token);
        linear_backward(&m->bottom[i], i ? m->bottom_grad[i - 1] : NULL, m->bottom_grad[i],
                        i ? m->bottom_out[i - 1] : in->dense, ctx);
    }
}

/* update 0: everything but the learning rate and the two SGD updates (the warm-up pass). */
static void step_body(dlrm *m, int slot, int update) {
    const dlrm_config *c = &m->config;
    cudaStream_t stream = m->ctx->stream;
    const dlrm_input *in = &m->input[slot];
    int token = mark(m, "model", KPASS_FORWARD, KCLASS_OTHER); /* what no scope below marks */
    forward(m, in, 1);
    kernel_scope_leave(token);
    token = mark(m, "loss", KPASS_NONE, KCLASS_LOSS);
    dlrm_bce_forward_backward(m->top_grad[c->top_layers - 1], m->sums, m->top_out[c->top_layers - 1], in->labels,
                              c->batch, stream);
    kernel_scope_leave(token);
    token = mark(m, "model", KPASS_BACKWARD, KCLASS_OTHER);
    backward(m, in);
    kernel_scope_leave(token);
    if (update) {
        arena *a = &m->ctx->arena;
        token = mark(m, "optimizer", KPASS_UPDATE, KCLASS_OPTIMIZER);
        dlrm_lr_step(m->lr, m->step, m->policy, stream);
        /* the reference's optimizer: plain SGD, no momentum, no weight decay */
        sgd_update((float *)a->params, NULL, NULL, arena_grads(a), NULL, m->lr, arena_trainable_floats(a), 0, 0,
                   0.0f, 0.0f, 0, stream);
        kernel_scope_leave(token);
    }
    CHECK_CUDA(cudaStreamWaitEvent(stream, m->join, 0)); /* the sorted pairs */
    token = mark(m, "embeddings", KPASS_UPDATE, KCLASS_EMBEDDING);
    if (update)
        dlrm_sparse_sgd(m->embeddings, m->sorted_keys, m->sorted_vals, m->emb_grad, m->lr, m->capacity, c->dim,
                        m->partials, stream);
    kernel_scope_leave(token);
}

void dlrm_train_step_body(dlrm *m, int slot) { step_body(m, slot, 1); }

void dlrm_prepare(dlrm *m, dlrm_lr_policy policy, int use_graph) {
    cudaStream_t stream = m->ctx->stream;
    m->policy = policy;
    /* Libraries (cuBLASLt, CUB) set themselves up on first use, which must not happen inside a
     * capture: one pass now, without the updates, so no parameter changes. */
    step_body(m, 0, 0);
    CHECK_CUDA(cudaMemsetAsync(m->step, 0, sizeof(int64_t), stream));
    CHECK_CUDA(cudaMemsetAsync(m->sums, 0, 2 * sizeof(double), stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    m->steps_taken = 0;
    m->use_graph = use_graph;
    if (!use_graph) return;
    for (int s = 0; s < 2; s++) {
        CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        step_body(m, s, 1);
        CHECK_CUDA(cudaStreamEndCapture(stream, &m->graph[s]));
        CHECK_CUDA(cudaGraphInstantiate(&m->exec[s], m->graph[s], 0));
        CHECK_CUDA(cudaGraphUpload(m->exec[s], stream));
    }
    CHECK_CUDA(cudaStreamSynchronize(stream));
}

void dlrm_train_step(dlrm *m, int slot) {
    if (m->use_graph) CHECK_CUDA(cudaGraphLaunch(m->exec[slot], m->ctx->stream));
    else step_body(m, slot, 1);
    m->steps_taken++;
}

void dlrm_eval_batch(dlrm *m, int slot, int n_valid) {
    const dlrm_config *c = &m->config;
    const dlrm_input *in = &m->input[slot];
    forward(m, in, 0);
    dlrm_bce_eval(m->probs, m->sums, m->top_out[c->top_layers - 1], in->labels, c->batch, n_valid, m->ctx->stream);
}

void dlrm_take_sums(dlrm *m, double *loss_sum, double *correct) {
    double host[2];
    cudaStream_t stream = m->ctx->stream;
    CHECK_CUDA(cudaMemcpyAsync(host, m->sums, sizeof host, cudaMemcpyDeviceToHost, stream));
    CHECK_CUDA(cudaMemsetAsync(m->sums, 0, sizeof host, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    *loss_sum = host[0];
    *correct = host[1];
}
