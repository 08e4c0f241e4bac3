/* Injected faults (--inject-fault KIND@STEP, mix override fault=KIND@STEP): a job that fails on
 * purpose at a known step, so the runner's handling of each sharing mode under a failing job is
 * measured rather than assumed. The kinds imitate what real jobs do:
 *   oom              allocate until cudaMalloc fails, then fail as a job out of memory does (exit 1)
 *   illegal-address  a kernel writes out of bounds: a sticky CUDA error, the context is lost (exit 1)
 *   nan              poison the first parameter tensor: the loss becomes NaN (the job diverges)
 *   exit             exit 1 at once, without an error event
 *   hang             stop making progress (sleep until signalled)
 *   sigkill          kill itself with SIGKILL
 * The spec functions are pure (run_suite's mix grammar uses them too); train_fault_at runs on the
 * GPU, once per training step. */
#ifndef SUITE_TRAIN_FAULT_H
#define SUITE_TRAIN_FAULT_H

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

/* GPU side (fault.c). Called after each training step with the step just taken; at the fault's
 * step it announces a "fault" event ({"event":"fault","kind":..,"step":..}) and a stderr line,
 * then does the fault: every kind but nan ends the process here; nan returns and lets the
 * training loop find the NaN loss as it would find a real one. params: the model's parameter
 * table (device data). The types are declared, not included, so the spec half stays host-only. */
struct CUstream_st;
struct train_events;
struct param_table;
void train_fault_at(const train_fault *f, long step, const struct train_events *ev,
                    struct CUstream_st *stream, const struct param_table *params);

#endif
