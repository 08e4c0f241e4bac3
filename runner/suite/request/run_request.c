/* The run request (see run_request.h). */
#include "runner/suite/request/run_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "models/catalog.h"
#include "runner/train/train_rules.h"

/* One block the request owns; they form a list, freed together. */
struct run_request_memory {
    run_request_memory *next;
    max_align_t data[];
};

void *run_request_alloc(run_request *r, size_t size) {
    run_request_memory *m = calloc(1, sizeof *m + size);
    if (!m) return NULL;
    m->next = r->memory;
    r->memory = m;
    return m->data;
}

const char *run_request_keep(run_request *r, const char *text) {
    if (!text) return NULL;
    char *copy = run_request_alloc(r, strlen(text) + 1);
    if (copy) memcpy(copy, text, strlen(text) + 1);
    return copy;
}

void run_request_free(run_request *r) {
    for (run_request_memory *m = r->memory, *next; m; m = next) {
        next = m->next;
        free(m);
    }
    r->memory = NULL;
}

const char *ddp_under_name(ddp_under d) {
#define DDP_UNDER_NAME_(kind, name) case kind: return name;
    switch (d) { DDP_UNDER_TABLE(DDP_UNDER_NAME_) }
#undef DDP_UNDER_NAME_
    return "unknown";
}

void run_request_settle(run_request *r, const run_request_given *given, int quick_sample_ms) {
    if (r->quick) { /* the window measurement's epochs after the warm-up stay whole: few epoch events */
        if (!given->steps && r->completion) r->steps_per_epoch = 10;
        if (!given->warmup) r->warmup_steps = 10;
        if (!given->sample_ms && quick_sample_ms) r->sample_ms = quick_sample_ms;
    }
    if (!given->epochs) r->epochs = 2;
    if (!given->window) r->window_s = r->quick ? 2.0 : 10.0;
    if (r->completion) r->window_s = 0, r->windows = 1;
    if (!given->kernels_window) r->kernels_window_s = r->kernels ? r->window_s : 0;
}

int run_request_set_mix(run_request *r, const char *text, char *err, size_t err_size) {
    char why[1536];
    r->mix_text = text;
    if (mix_parse(&r->mix, text, why, sizeof why) != 0) {
        snprintf(err, err_size, "--mix: %s", why);
        return -1;
    }
    for (int i = 0; r->precision && i < r->mix.count; i++) {
        job_spec *job = &r->mix.jobs[i];
        if (job->precision_given) continue;
        /* the rule train applies to the job (runner/train/train_rules.h), before any job starts */
        precision_kind p = (precision_kind)(r->precision - 1);
        if (train_rule_precision(catalog_find(job->model), job->model, p, why, sizeof why) != 0) {
            snprintf(err, err_size, "job %s: %s", job->label, why);
            r->mix.count = 0;
            return -1;
        }
        job->precision = p;
        job->precision_given = 1;
    }
    return 0;
}
