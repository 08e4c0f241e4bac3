#include "base/precision.h"

#include <string.h>
#include <strings.h>

#define PRECISION_NAME_(kind, name) [kind] = name,
static const char *const PRECISION_NAMES[PRECISION_COUNT] = {PRECISION_TABLE(PRECISION_NAME_)};
#undef PRECISION_NAME_

const char *precision_name(precision_kind p) {
    return (unsigned)p < PRECISION_COUNT ? PRECISION_NAMES[p] : "unknown";
}

int precision_parse(const char *name, precision_kind *out) {
    for (int i = 0; name && i < PRECISION_COUNT; i++)
        if (!strcmp(name, PRECISION_NAMES[i])) {
            *out = (precision_kind)i;
            return 0;
        }
    return -1;
}

int precision_find(const char *text, size_t n) {
    for (int i = 0; i < PRECISION_COUNT; i++)
        if (strlen(PRECISION_NAMES[i]) == n && !strncasecmp(text, PRECISION_NAMES[i], n)) return i;
    return -1;
}
