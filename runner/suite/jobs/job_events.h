/* A job's event protocol, the runner's side: train's JSON lines turned into the job's record,
 * what the record says once the job has ended, and the dry run's footprint. */
#ifndef SUITE_JOB_EVENTS_H
#define SUITE_JOB_EVENTS_H

#include "runner/suite/jobs/job_process.h"
#include "runner/suite/request/run_request.h"

/* Parses one stdout line of a job (an event); unknown or malformed lines are ignored.
 * Returns the phase it causes ("ready", "epoch", "window", "kernels") or NULL. */
const char *job_handle_line(job_record *job, const char *line, double now);
/* The progress line of a job's "kernels" event: "traced N kernels over S steps" or why it could not. */
void job_kernels_describe(const job_record *job, char *out, size_t size);
/* Sets status and reason from the events and the wait status (after the job ended). */
void job_settle(job_record *job);

/* `train --dry-run --json` for one job: its footprint in bytes, without a GPU. */
typedef struct job_footprint {
    double params, parameters, gradients, optimizer, buffers, activations, workspace, total;
    double flops_per_step;       /* forward + backward, multiply-adds x 2; NaN when not reported */
    double samples_per_epoch;    /* a whole epoch of the job's data set; NaN when not reported */
} job_footprint;
/* Parses the dry-run object; 0, or -1 with a message naming what is missing. */
int job_parse_footprint(const char *text, job_footprint *fp, char *err, size_t err_size);
/* A job's compute demand in FLOPs: FLOPs per step x the steps the run's request plans it to train
 * (its epochs x its fixed steps per epoch, else x a whole epoch's batches). NaN when the dry run did
 * not say. */
double job_demand(const job_footprint *fp, const job_spec *spec, const run_request *r);

#endif
