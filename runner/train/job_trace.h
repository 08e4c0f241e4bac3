/* train --kernels PREFIX: the job's side of the kernel trace (models/core/kernel_trace.h). The job
 * joins the process's tracer before its GPU work (the tracer must see its streams made and its
 * step captured), its layers mark their launches (job_context.scopes), and over one window it
 * records every kernel: the runner's traced window ("trace T0 T1" after the measured ones, so that
 * those stay untraced: runner/train/step_window.h), or, for train run by a person, its last epoch.
 * Once a step has completed after the window's end, the job's stream is synchronised, collection
 * ends, PREFIX.kernels.csv and PREFIX.intervals.csv are written (runner/train/kernel_files.h) and
 * one event says so:
 *   {"event":"kernels","file":F,"intervals":F,"kernels":N,"dropped":D,"steps":S,"t0":T0,"t1":T1,
 *    "step_ms":M}
 * or, when the job cannot trace, {"event":"kernels","error":"<why>"}; the job trains on either way. */
#ifndef SUITE_JOB_TRACE_H
#define SUITE_JOB_TRACE_H

#include "models/core/context.h"
#include "models/core/model.h"
#include "runner/train/train_events.h"
#include "runner/train/train_options.h"

typedef struct job_trace job_trace;

/* NULL when the job does not trace (no --kernels). A tracer that cannot be joined is kept as the
 * reason its event will give. Before the workload's start. */
job_trace *job_trace_open(const train_options *o, const train_events *ev);
/* After the workload's start, before its step is captured: the context marks the layers'
 * launches, the parameter table names them. */
void job_trace_attach(job_trace *t, job_context *ctx, const param_table *params);
/* Records the window [t0, t1] (unix seconds; t1 INFINITY: until job_trace_finish). Once. */
void job_trace_begin(job_trace *t, double t0, double t1);
/* A step that completed at t_end (unix seconds) after ms: counted when inside the window; the
 * first after the window's end finishes the trace. */
void job_trace_step(job_trace *t, double t_end, double ms);
/* Finishes a trace still recording now, the window ending at t1 (the last epoch's end, or the job
 * stopped before a step completed after its window). */
void job_trace_finish(job_trace *t, double t1);
void job_trace_close(job_trace *t);

#endif
