/* A training session: the job context, the arena planned for one model and its trainer, and the
 * model built in it. The two-pass build (plan on the host, then allocate and build for real) lives
 * here once, for train, the benchmarks and the tests. */
#ifndef SUITE_SESSION_H
#define SUITE_SESSION_H

#include <stddef.h>

#include "models/core/context.h"
#include "models/core/model.h"
#include "models/core/trainer.h"

typedef struct session {
    model_config config;
    arena plan;
    model *model;        /* after session_plan: the planning instance (no GPU memory) */
    trainer trainer;
    job_context ctx;
    /* where session_start's time went (seconds): the CUDA context and library handles; the
     * arena and the real model; the model's set-up (algorithm search, initial values) */
    double setup_context_s, setup_build_s, setup_model_s;
} session;

/* Host only: builds the model against a planning arena. -1 with a message for bad configs. */
int session_plan(session *s, const model_config *config, char *err, size_t err_size);
/* GPU: context, arena, real model and trainer scratch, model set-up (algorithm search, initial
 * values). Returns 0, or 1 (no GPU, out of memory) with a message. */
int session_start(session *s, int device, size_t workspace_limit, int allow_tf32, int optimizer_slots,
                  char *err, size_t err_size);
/* The same at a place (the whole device or a green context's SMs, models/core/context.h). */
int session_start_at(session *s, const context_place *place, size_t workspace_limit, int allow_tf32,
                     int optimizer_slots, char *err, size_t err_size);
/* Bytes on the GPU that the session allocated itself (arena and workspace). */
size_t session_gpu_bytes(const session *s);
void session_end(session *s);

#endif
