/* The error convention of the suite's checks: a function that refuses its input writes what was
 * wrong into the caller's buffer and returns -1. */
#ifndef SUITE_BASE_ERROR_H
#define SUITE_BASE_ERROR_H

#include <stddef.h>

/* Formats the message into err (when err and size allow) and returns -1. */
int error_set(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
