#include "kernels/demangle.h"

#include <cxxabi.h>
#include <stdio.h>
#include <stdlib.h>

char *kernel_name_demangle(const char *symbol, char *out, size_t size) {
    if (!size) return out;
    int status = -1;
    char *plain = symbol ? abi::__cxa_demangle(symbol, NULL, NULL, &status) : NULL;
    snprintf(out, size, "%s", status == 0 && plain ? plain : symbol ? symbol : "?");
    free(plain);
    return out;
}
