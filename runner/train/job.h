/* One training job as a callable unit, the same for `train` (one job, one process) and the job
 * host (several jobs in one process, one thread each): options already parsed and validated, the
 * events sink (stdout or the host's), and the place on the GPU (the whole device or a green
 * context's SMs). */
#ifndef SUITE_JOB_H
#define SUITE_JOB_H

#include "models/core/context.h"
#include "runner/train/train_events.h"
#include "runner/train/train_options.h"

/* Runs the job to its end (dry run included) and returns train's exit code: 0 done, 1 runtime
 * error, 2 bad input; the error event has been emitted. A failing CUDA/cuDNN/cuBLAS check exits
 * the process, or unwinds to the calling thread's trap when one is armed (kernels/check.h). */
int train_job_run(const train_options *options, const train_events *events, const context_place *place);

#endif
