/* One job's kernels over a traced window, as the tracer (models/core/kernel_trace.h) records them:
 * per (scope, kernel) the count and the total, shortest and longest duration, and each kernel's
 * interval, kept up to a cap (the runner's attribution needs them only for the window). A
 * kernel belongs to the window when it starts in [t0, t1]. Host only: the CPU tests feed it made-up
 * records. Not thread-safe: the tracer holds its own lock around it. */
#ifndef SUITE_KERNEL_TALLY_H
#define SUITE_KERNEL_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "models/core/kernel_scope.h"

#define KERNEL_TALLY_INTERVALS_MAX 2000000 /* the intervals file's cap (the trace format) */

typedef struct kernel_tally_row {
    int scope;
    kernel_class cls;
    int name;                  /* kernel_tally_name's index */
    uint64_t count;
    int64_t total_ns, min_ns, max_ns;
} kernel_tally_row;

typedef struct kernel_interval {
    int64_t start_ns, end_ns;  /* since t0 */
    int32_t scope;
    int16_t cls;
    uint32_t stream;
} kernel_interval;

typedef struct kernel_tally kernel_tally;

/* t0, t1: unix seconds (CLOCK_REALTIME); t1 may be INFINITY until the window's end is known
 * (kernel_tally_close). interval_cap: at most this many intervals are kept. NULL: out of memory. */
kernel_tally *kernel_tally_create(double t0, double t1, size_t interval_cap);
void kernel_tally_free(kernel_tally *t);
/* A kernel or copy that ran from start_ns to end_ns (unix ns) on CUPTI stream `stream`; name: the
 * kernel's (CUPTI's string, read now; the same pointer is recognised again cheaply). Outside the
 * window: ignored. 0, or -1 when out of memory (counted as dropped). */
int kernel_tally_add(kernel_tally *t, uint64_t start_ns, uint64_t end_ns, int scope, kernel_class cls,
                     uint32_t stream, const char *name);
/* Records lost before they reached the tally (CUPTI's dropped records). */
void kernel_tally_lost(kernel_tally *t, uint64_t records);
/* The window ends at t1 (a last epoch's end, known after it): kernels starting later go. */
void kernel_tally_close(kernel_tally *t, double t1);

double kernel_tally_t0(const kernel_tally *t);
double kernel_tally_t1(const kernel_tally *t);
uint64_t kernel_tally_kernels(const kernel_tally *t);  /* recorded in the window */
uint64_t kernel_tally_dropped(const kernel_tally *t);  /* lost, or past the interval cap */
/* The rows, by scope then by total time, longest first (sorted on each call after an add). */
size_t kernel_tally_rows(kernel_tally *t, const kernel_tally_row **rows);
const char *kernel_tally_name(const kernel_tally *t, int name);
/* The intervals, sorted by start. */
size_t kernel_tally_intervals(kernel_tally *t, const kernel_interval **intervals);

#endif
