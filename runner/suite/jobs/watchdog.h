/* The watchdog and the stop of a job: a training job silent for longer than its limit is stopped,
 * and a job asked to stop (SIGTERM to its process group) is killed (SIGKILL) when its grace has
 * passed. */
#ifndef SUITE_WATCHDOG_H
#define SUITE_WATCHDOG_H

#include "runner/suite/jobs/job_process.h"

/* The watchdog's limit for one job now: the setting when given, else JOBS_STALL_FACTOR times the
 * longest wait between its events so far (events come every epoch or progress report, so this is
 * its measured step time times the steps between reports), at least JOBS_STALL_MIN_S; before its
 * first event after "go" nothing is measured yet: JOBS_STALL_FIRST_S. */
#define JOBS_STALL_FACTOR 8.0
#define JOBS_STALL_MIN_S 30.0
#define JOBS_STALL_FIRST_S 600.0
double jobs_stall_limit(const job_record *job, const jobs_settings *settings);
/* Records an event line's arrival (monotonic now) for the watchdog. */
void jobs_note_event(job_record *job, double mono);
/* Asks the job to stop: why becomes its reason (when it has none), stdin closes, SIGTERM goes to
 * its process group, and the SIGKILL deadline is grace_s from now. */
void watchdog_terminate(job_record *job, double grace_s, const char *why);
/* Once per pass of the loop for a job not finished: 1 when a training job has been silent past its
 * limit (the caller stops it, with the message in why); the SIGKILL of a job whose grace has
 * passed. */
int watchdog_stalled(const job_record *job, const jobs_settings *s, double mono, char *why, size_t size);
void watchdog_escalate(job_record *job, double mono);

#endif
