/* libFuzzer target: the mix grammar (mix_parse, with its fault=KIND@STEP override) on text a user
 * typed or a script built. Either the mix is refused with a message naming what is valid (and the
 * mix left empty), or every job is in range, and its canonical form (mix_job_format) parses back
 * to the same job, label aside. The text is copied into an exact-size NUL-terminated buffer so a
 * read past its end is caught by the sanitizers. Seeds: tests/fuzz/mix/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/plan/mix.h"

static int same_job(const job_spec *a, const job_spec *b) {
    return !strcmp(a->model, b->model) && !strcmp(a->data, b->data) && a->image_size == b->image_size &&
           a->classes == b->classes && a->batch == b->batch && a->epochs == b->epochs &&
           a->steps_per_epoch == b->steps_per_epoch && a->max_rows == b->max_rows &&
           a->fault.kind == b->fault.kind && a->fault.step == b->fault.step;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 4096) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    static mix m, again;
    char err[2048] = "";
    if (mix_parse(&m, text, err, sizeof err) != 0) {
        free(text);
        if (!err[0] || m.count != 0) abort(); /* a refusal says why and leaves nothing behind */
        return 0;
    }
    free(text);
    if (m.count < 1 || m.count > MIX_MAX_JOBS) abort();
    for (int i = 0; i < m.count; i++) {
        const job_spec *j = &m.jobs[i];
        if (j->batch < 1 || j->batch > 65536 || j->epochs < 0 || j->steps_per_epoch < 0 || j->max_rows < 0) abort();
        if (j->fault.kind != FAULT_NONE && (j->fault.step < 1 || j->fault.step > FAULT_MAX_STEP)) abort();
        char canonical[512];
        int n = mix_job_format(j, canonical, sizeof canonical);
        if (n < 0 || (size_t)n >= sizeof canonical) abort();
        if (mix_parse(&again, canonical, err, sizeof err) != 0 || again.count != 1 || !same_job(j, &again.jobs[0]))
            abort();
    }
    return 0;
}
