#include "base/job_spec.h"

#include <string.h>

void job_safe_name(char *out, size_t size, const char *text) {
    size_t n = 0;
    for (const char *p = text; *p && n + 1 < size; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '+' || c == '.' || c == '_' || c == '-';
        out[n++] = ok ? c : '_';
    }
    if (n > 0 && out[0] == '.') out[0] = '_'; /* never a hidden file or ".." */
    out[n] = 0;
}

int job_spec_may_decode_on_gpu(const job_spec *spec) {
    return strcmp(spec->data, "imagenet") == 0 && (!spec->decode_given || spec->decode != DECODE_CPU);
}
