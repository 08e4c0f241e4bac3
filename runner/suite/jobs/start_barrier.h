/* The start barrier: every job is started and waits for "go" once it is ready, so that the timed
 * work really overlaps; the group releases them together (the go relay may hold the release for
 * other runs' jobs, go_relay.h). */
#ifndef SUITE_START_BARRIER_H
#define SUITE_START_BARRIER_H

#include "runner/suite/jobs/job_process.h"

/* Jobs started and not yet ready (or ended). */
int barrier_waiting(const job_record *jobs, int count);
/* Writes "go" to every ready job, back to back, and makes it a training job (its go time, the
 * watchdog's clock); without windows its stdin then closes (EOF: nothing more comes). Returns the
 * go time (unix seconds). */
double barrier_release(job_record *jobs, int count, int windows);

#endif
