/* A kernel's name as a person reads it: CUPTI's records carry the mangled symbol
 * ("_Z9bn_applyPfS_..."), and the demangler is the C++ runtime's (host code; a .cu so that the C++
 * stays in the one layer built as C++). */
#ifndef SUITE_DEMANGLE_H
#define SUITE_DEMANGLE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes the demangled name of `symbol` to out (a name that is not a mangled C++ symbol, such as
 * an extern "C" kernel's or "[memcpy HtoD]", as it is), cut to size - 1 characters. Returns out. */
char *kernel_name_demangle(const char *symbol, char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
