/* What a run's faults did, as data (summary.json's "faults" and each job's fault fields) and as a
 * small table after the run's own: which jobs injected a fault, which failed of their own, which
 * the mode took down with them (collateral), and whether the mode contained the fault (every job
 * that did not fail of its own finished). The report shows it per mode. */
#ifndef SUITE_RESULTS_FAULTS_H
#define SUITE_RESULTS_FAULTS_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "runner/suite/jobs/jobs.h"

/* Adds to one job's object: failed (bool), collateral_of (index or null), fault ("kind@step" it
 * announced, or null), stalled (bool), evidence (string or null). */
void results_job_fault_fields(cJSON *job_object, const job_run *job);
/* {"injected":[{"job","kind","step"}], "failed", "own_failures", "collateral", "stalled",
 *  "contained": true/false (null when nothing failed), "first_failure": index or null}. */
cJSON *results_faults_json(const job_run *jobs, int count);
/* The table, only when a job failed: one line per failed job and a verdict line. */
void results_print_faults(FILE *out, const job_run *jobs, int count, const char *mode);

#endif
