/* The KIND@STEP grammar of injected faults (fault_spec.h), shared by train's option and the mix. */
#include "base/fault_spec.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *const kind_names[] = {"", "oom", "illegal-address", "nan", "exit", "hang", "sigkill"};
#define KIND_COUNT (sizeof kind_names / sizeof kind_names[0])

const char *fault_kind_name(fault_kind kind) {
    return (unsigned)kind < KIND_COUNT ? kind_names[kind] : "";
}

int fault_format(const train_fault *f, char *out, size_t size) {
    if (f->kind == FAULT_NONE) return snprintf(out, size, "%s", "");
    return snprintf(out, size, "%s@%ld", fault_kind_name(f->kind), f->step);
}

int fault_parse(const char *text, size_t len, train_fault *f, char *err, size_t err_size) {
    f->kind = FAULT_NONE;
    f->step = 0;
    const char *at = memchr(text, '@', len);
    size_t name_len = at ? (size_t)(at - text) : len;
    fault_kind kind = FAULT_NONE;
    for (size_t k = 1; k < KIND_COUNT; k++)
        if (strlen(kind_names[k]) == name_len && strncasecmp(text, kind_names[k], name_len) == 0)
            kind = (fault_kind)k;
    int shown = len > 64 ? 64 : (int)len;
    if (kind == FAULT_NONE || !at) {
        snprintf(err, err_size, "fault \"%.*s\": expected KIND@STEP with KIND one of " FAULT_KINDS
                 " and STEP a training step from 1, e.g. illegal-address@50", shown, text);
        return -1;
    }
    long step = 0;
    size_t digits = len - name_len - 1;
    for (size_t i = name_len + 1; i < len && step <= FAULT_MAX_STEP; i++) {
        if (text[i] < '0' || text[i] > '9') { step = -1; break; }
        step = step * 10 + (text[i] - '0');
    }
    if (digits == 0 || digits > 10 || step < 1 || step > FAULT_MAX_STEP) {
        snprintf(err, err_size, "fault \"%.*s\": the step after '@' must be a whole number in 1..%ld",
                 shown, text, FAULT_MAX_STEP);
        return -1;
    }
    f->kind = kind;
    f->step = step;
    return 0;
}
