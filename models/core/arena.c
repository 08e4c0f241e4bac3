#include "models/core/arena.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kernels/check.h"

#define ARENA_ALIGN 256

static size_t round_up(size_t bytes) { return (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN; }

void arena_plan(arena *a) {
    memset(a, 0, sizeof *a);
    a->planning = 1;
}

static int device_alloc(char **ptr, size_t bytes, const char *what) {
    if (bytes == 0) {
        *ptr = NULL;
        return 0;
    }
    cudaError_t err = cudaMalloc((void **)ptr, bytes);
    if (err == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        fprintf(stderr, "out of GPU memory: %s needs %.1f MiB, %.1f MiB of %.1f MiB free\n", what,
                bytes / 1048576.0, free_b / 1048576.0, total_b / 1048576.0);
        *ptr = NULL;
        return -1;
    }
    CHECK_CUDA(err);
    return 0;
}

/* Two bfloat16 copies of the weight region: as many bytes as the float32 region itself. */
static size_t arena_half_bytes(const arena *plan) { return plan->half_weights ? plan->used[ARENA_WEIGHTS] : 0; }

int arena_allocate(arena *a, const arena *plan, int optimizer_slots) {
    memset(a, 0, sizeof *a);
    memcpy(a->planned, plan->used, sizeof a->planned);
    a->optimizer_slots = optimizer_slots;
    a->half_weights = plan->half_weights;
    a->params_bytes = plan->used[ARENA_WEIGHTS] + plan->used[ARENA_NO_DECAY];
    size_t param_block = a->params_bytes * (size_t)(2 + optimizer_slots);
    if (device_alloc(&a->params, param_block, "parameters, gradients and optimizer state") ||
        device_alloc(&a->buffers, plan->used[ARENA_BUFFERS], "buffers") ||
        device_alloc(&a->activations, plan->used[ARENA_ACTIVATIONS], "activations") ||
        device_alloc(&a->scratch, plan->used[ARENA_SCRATCH], "scratch") ||
        device_alloc(&a->half, arena_half_bytes(plan), "bfloat16 weights and gradients")) {
        arena_free(a);
        return -1;
    }
    /* Optimizer state starts at zero; activations stay uninitialised (every kernel writes its
     * outputs before anything reads them, and the tests poison them to prove it). */
    if (a->params) CHECK_CUDA(cudaMemset(a->params, 0, param_block));
    if (a->half) CHECK_CUDA(cudaMemset(a->half, 0, arena_half_bytes(plan)));
    if (a->scratch) CHECK_CUDA(cudaMemset(a->scratch, 0, plan->used[ARENA_SCRATCH]));
    a->allocated = param_block + plan->used[ARENA_BUFFERS] + plan->used[ARENA_ACTIVATIONS] +
                   plan->used[ARENA_SCRATCH] + arena_half_bytes(plan);
    return 0;
}

void arena_free(arena *a) {
    char *blocks[] = {a->params, a->buffers, a->activations, a->scratch, a->half};
    for (size_t i = 0; i < sizeof blocks / sizeof *blocks; i++)
        if (blocks[i]) CHECK_CUDA(cudaFree(blocks[i]));
    memset(a, 0, sizeof *a);
}

void *arena_take(arena *a, arena_region region, size_t bytes) {
    size_t offset = a->used[region];
    a->used[region] += round_up(bytes);
    if (a->planning) return NULL;
    if (a->used[region] > a->planned[region]) {
        fprintf(stderr, "arena: region %d overflows its plan (%zu > %zu bytes): the model was built "
                "differently the second time\n", (int)region, a->used[region], a->planned[region]);
        abort();
    }
    switch (region) {
    case ARENA_WEIGHTS: return a->params + offset;
    case ARENA_NO_DECAY: return a->params + a->planned[ARENA_WEIGHTS] + offset;
    case ARENA_BUFFERS: return a->buffers + offset;
    case ARENA_ACTIVATIONS: return a->activations + offset;
    case ARENA_SCRATCH: return a->scratch + offset;
    default: abort();
    }
}

float *arena_grads(const arena *a) { return (float *)(a->params + a->params_bytes); }
float *arena_slot(const arena *a, int slot) {
    return (float *)(a->params + a->params_bytes * (size_t)(2 + slot));
}
float *arena_grad_of(const arena *a, const float *param) {
    return param ? arena_grads(a) + (param - (const float *)a->params) : NULL;
}
float *arena_slot_of(const arena *a, const float *param, int slot) {
    return param ? arena_slot(a, slot) + (param - (const float *)a->params) : NULL;
}
void *arena_half_weights(const arena *a) { return a->half; }
void *arena_half_grads(const arena *a) { return a->half ? a->half + a->planned[ARENA_WEIGHTS] / 2 : NULL; }

static void *half_at(char *base, const arena *a, const float *param) {
    if (!base || !param) return NULL;
    ptrdiff_t index = param - (const float *)a->params;
    if (index < 0 || (size_t)index >= arena_decay_floats(a)) {
        fprintf(stderr, "arena: a bfloat16 copy was asked for a parameter outside the weight region\n");
        abort();
    }
    return base + (size_t)index * 2;
}
void *arena_half_of(const arena *a, const float *param) { return half_at(arena_half_weights(a), a, param); }
void *arena_half_grad_of(const arena *a, const float *param) { return half_at(arena_half_grads(a), a, param); }
size_t arena_trainable_floats(const arena *a) { return a->params_bytes / sizeof(float); }
size_t arena_decay_floats(const arena *a) { return a->planned[ARENA_WEIGHTS] / sizeof(float); }

arena_footprint arena_footprint_of(const arena *plan, int optimizer_slots) {
    arena_footprint f;
    f.parameters = plan->used[ARENA_WEIGHTS] + plan->used[ARENA_NO_DECAY];
    f.gradients = f.parameters;
    f.optimizer = f.parameters * (size_t)optimizer_slots;
    f.buffers = plan->used[ARENA_BUFFERS];
    f.activations = plan->used[ARENA_ACTIVATIONS];
    f.scratch = plan->used[ARENA_SCRATCH];
    /* the bfloat16 copies count with what they copy */
    f.parameters += arena_half_bytes(plan) / 2;
    f.gradients += arena_half_bytes(plan) / 2;
    f.total = f.parameters + f.gradients + f.optimizer + f.buffers + f.activations + f.scratch;
    return f;
}
