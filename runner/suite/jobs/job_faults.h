/* What the runner concludes about failing jobs once a group has ended. */
#ifndef SUITE_JOB_FAULTS_H
#define SUITE_JOB_FAULTS_H

#include "runner/suite/jobs/job_process.h"

/* After a group ended: in a mode where one job's fatal fault ends the others (faults_spread: MPS
 * clients of one server, jobs of one process), every job that failed after the first job that
 * failed of its own (results_first_failure: an announced fault first, else the earliest to fail)
 * is re-recorded as "collateral of job N (mode M)", with its own error and the mode's evidence
 * (e.g. the MPS server log line) in job->evidence. Elsewhere failures stay each job's own.
 * Returns how many were classified collateral. */
int jobs_classify_collateral(job_record *jobs, int count, const char *mode, int faults_spread,
                             const char *mode_evidence);

#endif
