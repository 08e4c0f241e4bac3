#include "base/decode.h"

#include <string.h>
#include <strings.h>

#define DECODE_NAME_(kind, name) [kind] = name,
static const char *const DECODE_NAMES[] = {DECODE_TABLE(DECODE_NAME_)};
#undef DECODE_NAME_
#define DECODE_COUNT ((int)(sizeof DECODE_NAMES / sizeof DECODE_NAMES[0]))

const char *decode_kind_name(decode_kind kind) {
    return (unsigned)kind < (unsigned)DECODE_COUNT ? DECODE_NAMES[kind] : "unknown";
}

int decode_find(const char *text, size_t n) {
    for (int i = 0; i < DECODE_COUNT; i++)
        if (strlen(DECODE_NAMES[i]) == n && !strncasecmp(text, DECODE_NAMES[i], n)) return i;
    return -1;
}
