/* A group of jobs run inside one job_host process (runner/train/job_host.c) instead of one `train`
 * process each: the in-process modes (streams, green, mig-emulate --via green). The jobs keep
 * their records (job_record), logs, start barrier and failure rules: the host's event lines carry
 * the job's index and go to that job's record and log; "go" is written once, when every job is
 * ready or has ended; a job ends with the host's "exit" event for it, and one that failed because
 * another job's CUDA fault poisoned the context they share says so ("collateral"). The host's own
 * stderr (every job's human-readable lines) goes to job_host.log in the run folder. */
#ifndef SUITE_HOST_GROUP_H
#define SUITE_HOST_GROUP_H

#include "runner/suite/jobs/jobs.h"

/* The job_host program: $SUITE_JOB_HOST when set (a stand-in: tests/support/fake_job_host.c), else the
 * one beside train_path (same build folder or install prefix). */
void host_group_program(const char *train_path, char *out, size_t size);

/* job_host's argv for the prepared jobs (each job's argv after its program name follows a
 * --job), with --green and the SM counts when green_sms is not NULL. NULL-terminated, malloc'd
 * (job_free_strv); NULL when out of memory. */
char **host_group_argv(const char *host_path, const job_record *jobs, int count, const int *green_sms);

/* Runs the group in one host process (argv from host_group_argv, the environment of jobs[0]);
 * log_dir holds job_host.log. Returns like jobs_run_group. */
group_result host_group_run(job_record *jobs, int count, char **argv, const char *log_dir,
                            const jobs_settings *settings);

#endif
