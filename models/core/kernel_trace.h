/* Every kernel a job runs, timed in place with CUPTI's activity API (CUPTI ships with the CUDA
 * toolkit), named by the scope that launched it (models/core/kernel_scope.h) and tallied per job
 * (models/core/kernel_tally.h).
 *
 * CUPTI is one per process: one callback subscriber, one set of activity buffers, one clock. So
 * the tracer is the process's, not a job's: jobs join it (train's one job, or job_host's several,
 * one thread each), and it hands each job the records that are its own. A record is a job's by
 *  - its graph node, for a kernel a CUDA graph launched (concurrent-kernel records carry the
 *    node's id): at capture, the node's creation is seen on the capturing thread, whose mark says
 *    the job and scope (CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED), and instantiating the graph
 *    clones each node into the executable graph, whose id the records carry
 *    (CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED hands the scope on to the clone);
 *  - its launch's correlation id, for a kernel or copy launched eagerly (recorded at the launch,
 *    in the traced window only);
 *  - else its stream (a stream made on a job's thread is the job's: one context, several jobs'
 *    streams, as in job_host's streams mode) or its context (a green context, or a process of
 *    its own), in the job's scope 0.
 * Joining subscribes the resource callbacks, which must see the step's graph captured: a job
 * joins before it builds its model. The subscription's API callbacks stay on and record eager
 * launches only while a window is collected (never switched under another job's CUDA calls).
 * Activity records are collected only while a job traces a window (kernel_trace_start to
 * kernel_trace_stop), so the measured windows run with the subscription alone. GPU times come
 * on CLOCK_REALTIME (cuptiActivityRegisterTimestampCallback), the clock of the window lines, so
 * that jobs in different processes share one time line. */
#ifndef SUITE_KERNEL_TRACE_H
#define SUITE_KERNEL_TRACE_H

#include <stddef.h>

#include "models/core/kernel_scope.h"
#include "models/core/kernel_tally.h"

/* How long a job that stopped tracing waits for the process's other tracing jobs to stop too:
 * activity collection ends for all at once, and only then are the buffers flushed whole. */
#define KERNEL_TRACE_WAIT_S 30.0

typedef struct kernel_trace_job kernel_trace_job;

/* Joins a job whose launches the scope table names; the calling thread becomes the job's (its
 * launches, and the streams it creates, are the job's: kernel_scope_bind_thread). NULL with a
 * message when CUPTI cannot trace in this process (another tool holds it: Nsight, a debugger). */
kernel_trace_job *kernel_trace_join(kernel_scopes *scopes, char *err, size_t err_size);
/* The job is done with the tracer; the last job out unsubscribes. NULL: nothing. */
void kernel_trace_leave(kernel_trace_job *j);
/* Collects the job's kernels that start in [t0, t1] (unix seconds; t1 may be INFINITY, closed by
 * kernel_trace_stop). 0, or -1 with a message (already tracing, CUPTI refused). */
int kernel_trace_start(kernel_trace_job *j, double t0, double t1, char *err, size_t err_size);
/* The job's work up to the window's end has completed (the caller synchronised its streams):
 * once every tracing job of the process has stopped (KERNEL_TRACE_WAIT_S at most), collection
 * ends and the buffers are flushed. t1: the window's end when start had none (else ignored).
 * Returns the job's tally, the caller's to free; NULL with a message. */
kernel_tally *kernel_trace_stop(kernel_trace_job *j, double t1, char *err, size_t err_size);

#endif
