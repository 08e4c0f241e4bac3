#include "base/kernel_class.h"

#include <string.h>

#define CLASS_NAME_(kind, name) name,
static const char *const CLASS_NAMES[] = {KERNEL_CLASS_TABLE(CLASS_NAME_)};
#undef CLASS_NAME_
#define PASS_NAME_(kind, name) name,
static const char *const PASS_NAMES[] = {KERNEL_PASS_TABLE(PASS_NAME_)};
#undef PASS_NAME_

const char *kernel_class_name(kernel_class c) {
    return (unsigned)c < KCLASS_COUNT ? CLASS_NAMES[c] : CLASS_NAMES[KCLASS_OTHER];
}

int kernel_class_parse(const char *name) {
    for (int c = 0; name && c < KCLASS_COUNT; c++)
        if (!strcmp(name, CLASS_NAMES[c])) return c;
    return -1;
}

const char *kernel_pass_name(kernel_pass p) { return (unsigned)p < KPASS_COUNT ? PASS_NAMES[p] : PASS_NAMES[KPASS_NONE]; }

int kernel_pass_parse(const char *name) {
    for (int p = 0; name && p < KPASS_COUNT; p++)
        if (!strcmp(name, PASS_NAMES[p])) return p;
    return -1;
}
