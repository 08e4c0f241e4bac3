/* Host-side helpers shared by the kernel launchers in kernels/. */
#ifndef SUITE_LAUNCH_H
#define SUITE_LAUNCH_H

#include <stdint.h>

/* A launcher called with impossible arguments is a programming error in the caller: it names the
 * function and the argument, and exits with status 2. */
void kernel_bad_input(const char *fn, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
/* Multiprocessors of the current device (grids are sized in waves of resident blocks). */
int kernel_sm_count(void);
/* Whether kernels may use programmatic dependent launch (kernels/pdl.cuh): the current device is
 * of compute capability 9.0 or later and SUITE_PDL is not "0". */
int kernel_pdl_enabled(void);
/* Whether p is aligned to `bytes` (a power of two); NULL counts as aligned. */
static inline int kernel_aligned(const void *p, unsigned bytes) { return ((uintptr_t)p & (bytes - 1)) == 0; }

#endif
