/* What a run's faults did, as data (summary.json's "faults" and each job's fault fields) and as a
 * small table after the run's own: which jobs injected a fault, which failed of their own, which
 * the mode took down with them (collateral), and whether the mode contained the fault (every job
 * that did not fail of its own finished). The report shows it per mode. */
#ifndef SUITE_RESULTS_FAULTS_H
#define SUITE_RESULTS_FAULTS_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "results/job_record.h"

/* Ended by run_suite's own stop (a signal, a set-up failure): nobody's fault. */
int results_stopped_by_runner(const job_record *job);
/* When the job's trouble began: its announced fault, else its exit (INFINITY when neither). */
double results_failure_time(const job_record *job);
/* Index of the job whose own failure came first (an announced fault preferred), -1 when none
 * failed. */
int results_first_failure(const job_record *jobs, int count);

/* Adds to one job's object: failed (bool), collateral_of (index or null), fault ("kind@step" it
 * announced, or null), stalled (bool), evidence (string or null). */
void results_job_fault_fields(cJSON *job_object, const job_record *job);
/* {"injected":[{"job","kind","step"}], "failed", "own_failures", "collateral", "stalled",
 *  "contained": true/false (null when nothing failed), "first_failure": index or null}. */
cJSON *results_faults_json(const job_record *jobs, int count);
/* The table, only when a job failed: one line per failed job and a verdict line. */
void results_print_faults(FILE *out, const job_record *jobs, int count, const char *mode);

#endif
