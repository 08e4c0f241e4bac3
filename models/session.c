#include "models/session.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "models/model_build.h"

int session_plan(session *s, const model_config *config, char *err, size_t err_size) {
    memset(s, 0, sizeof *s);
    s->config = *config;
    arena_plan(&s->plan);
    s->model = model_build(config, &s->plan, err, err_size);
    if (!s->model) return -1;
    trainer_build(&s->trainer, &s->plan);
    return 0;
}

int session_start(session *s, int device, size_t workspace_limit, int allow_tf32, int optimizer_slots,
                  char *err, size_t err_size) {
    context_place whole = {.device = device};
    return session_start_at(s, &whole, workspace_limit, allow_tf32, optimizer_slots, err, err_size);
}

int session_start_at(session *s, const context_place *place, size_t workspace_limit, int allow_tf32,
                     int optimizer_slots, char *err, size_t err_size) {
    double t0 = clock_monotonic();
    if (context_init_at(&s->ctx, place, workspace_limit, allow_tf32) != CONTEXT_OK) {
        snprintf(err, err_size, "no usable GPU: training needs a CUDA device");
        return 1;
    }
    if (arena_allocate(&s->ctx.arena, &s->plan, optimizer_slots) != 0) {
        snprintf(err, err_size, "out of GPU memory allocating %s at batch %d", s->config.name, s->config.batch);
        return 1;
    }
    double t1 = clock_monotonic();
    model_free(s->model);
    s->model = model_build(&s->config, &s->ctx.arena, err, err_size);
    if (!s->model) return 1;
    trainer_build(&s->trainer, &s->ctx.arena);
    double t2 = clock_monotonic();
    s->model->setup(s->model, &s->ctx);
    s->setup_context_s = t1 - t0, s->setup_build_s = t2 - t1, s->setup_model_s = clock_monotonic() - t2;
    return 0;
}

size_t session_gpu_bytes(const session *s) {
    return s->ctx.arena.allocated + s->ctx.workspace_bytes + (s->model ? s->model->side_workspace_bytes : 0);
}

void session_end(session *s) {
    trainer_free(&s->trainer);
    model_free(s->model);
    s->model = NULL;
    if (s->ctx.stream) context_free(&s->ctx);
}
