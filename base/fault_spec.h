/* Injected faults (train --inject-fault KIND@STEP, the mix's fault=KIND@STEP): a job that fails on
 * purpose at a known step, so the runner's handling of each sharing mode under a failing job is
 * measured rather than assumed. The kinds imitate what real jobs do:
 *   oom              allocate until cudaMalloc fails, then fail as a job out of memory does (exit 1)
 *   illegal-address  a kernel writes out of bounds: a sticky CUDA error, the context is lost (exit 1)
 *   nan              poison the first parameter tensor: the loss becomes NaN (the job diverges)
 *   exit             exit 1 at once, without an error event
 *   hang             stop making progress (sleep until signalled)
 *   sigkill          kill itself with SIGKILL
 * The grammar here is pure (train's option and run_suite's mix both read it); the GPU side that
 * does the fault is runner/train/fault.h. */
#ifndef SUITE_BASE_FAULT_SPEC_H
#define SUITE_BASE_FAULT_SPEC_H

#include <stddef.h>

typedef enum {
    FAULT_NONE = 0,
    FAULT_OOM,
    FAULT_ILLEGAL_ADDRESS,
    FAULT_NAN,
    FAULT_EXIT,
    FAULT_HANG,
    FAULT_SIGKILL,
} fault_kind;

#define FAULT_KINDS "oom, illegal-address, nan, exit, hang, sigkill"
#define FAULT_MAX_STEP 1000000000L

typedef struct train_fault {
    fault_kind kind;
    long step;                 /* 1-based, counted over the whole run (epochs included) */
} train_fault;

/* "illegal-address@50" -> {FAULT_ILLEGAL_ADDRESS, 50}. 0, or -1 with a message naming the text
 * and listing the kinds (text need not be NUL-terminated: len bytes are read). */
int fault_parse(const char *text, size_t len, train_fault *f, char *err, size_t err_size);
const char *fault_kind_name(fault_kind kind);
/* "kind@step" (what fault_parse reads back); "" for FAULT_NONE. Returns what snprintf returns. */
int fault_format(const train_fault *f, char *out, size_t size);

#endif
