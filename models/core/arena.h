/* One device arena per job. A model is built twice: first against a planning arena, which only
 * counts bytes (no GPU needed: this is what `train --dry-run` reports), then against the real one,
 * allocated from that plan in a few cudaMalloc blocks. Trainable parameters are laid out as
 * [weights that take weight decay | parameters that do not], and their gradients and optimizer
 * state mirror that layout, so the optimizer is one pass over flat buffers. A bfloat16 model
 * (half_weights) also keeps a bfloat16 copy of the weights with decay (the convolution and linear
 * weights its tensor-core calls read) and of their gradients (what those calls write), in one
 * block mirroring that region: the float32 weights stay the master copy the optimizer updates
 * (inside a training step it also writes the bfloat16 copy and reads the bfloat16 gradients:
 * models/core/trainer.c). */
#ifndef SUITE_ARENA_H
#define SUITE_ARENA_H

#include <stddef.h>

typedef enum {
    ARENA_WEIGHTS,      /* trainable, with weight decay (conv and linear weights) */
    ARENA_NO_DECAY,     /* trainable, without weight decay (BN gamma/beta, biases) */
    ARENA_BUFFERS,      /* state that is saved but not trained (BN running statistics) */
    ARENA_ACTIVATIONS,  /* activations and their gradients */
    ARENA_SCRATCH,      /* per-step scratch: reduction partials, loss accumulators, labels */
    ARENA_REGIONS
} arena_region;

typedef struct arena {
    int planning;                  /* 1: count only, every take returns NULL */
    size_t used[ARENA_REGIONS];    /* bytes taken so far in each region */
    size_t planned[ARENA_REGIONS]; /* the plan this arena was allocated from */
    int optimizer_slots;           /* copies of the parameters the optimizer keeps (SGD: 1) */
    int half_weights;              /* keeps the bfloat16 copies (set on the plan; copied from it) */
    char *params;                  /* device: [weights | no-decay], then grads, then slots */
    size_t params_bytes;           /* weights + no-decay */
    char *buffers, *activations, *scratch;
    char *half;                    /* device: [bfloat16 weights | their bfloat16 gradients] */
    size_t allocated;              /* bytes obtained from cudaMalloc */
} arena;

/* A planning arena: counts what the model takes. */
void arena_plan(arena *a);
/* Allocates a real arena for what `plan` counted; 0 on success, -1 when the device is out of
 * memory (message printed, nothing left allocated). */
int arena_allocate(arena *a, const arena *plan, int optimizer_slots);
void arena_free(arena *a);

/* bytes rounded up to 256; NULL while planning. Taking more than was planned is a bug and aborts. */
void *arena_take(arena *a, arena_region region, size_t bytes);
#define arena_take_floats(a, region, n) ((float *)arena_take((a), (region), (size_t)(n) * sizeof(float)))

/* The gradient and optimizer slot `slot` that mirror a trainable parameter. */
float *arena_grad_of(const arena *a, const float *param);
float *arena_slot_of(const arena *a, const float *param, int slot);
float *arena_grads(const arena *a);
/* The bfloat16 copy of a weight with decay, and of its gradient (NULL while planning or without
 * half_weights); the whole copies, arena_decay_floats elements each. */
void *arena_half_of(const arena *a, const float *param);
void *arena_half_grad_of(const arena *a, const float *param);
void *arena_half_weights(const arena *a);
void *arena_half_grads(const arena *a);
float *arena_slot(const arena *a, int slot);
size_t arena_trainable_floats(const arena *a);
size_t arena_decay_floats(const arena *a);

/* Planned bytes, split the way the footprint is reported. */
typedef struct arena_footprint {
    size_t parameters, gradients, optimizer, buffers, activations, scratch, total;
} arena_footprint;
arena_footprint arena_footprint_of(const arena *plan, int optimizer_slots);

#endif
