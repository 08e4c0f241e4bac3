/* What the runner concludes about failing jobs (see jobs.h): the watchdog's limit for a silent
 * job, and which failures were a job's own and which were the mode taking others down with it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runner/suite/jobs/jobs.h"

double jobs_stall_limit(const job_run *job, const jobs_settings *settings) {
    if (settings->stall_timeout_s > 0) return settings->stall_timeout_s;
    if (settings->stall_timeout_s < 0) return INFINITY;
    if (job->longest_gap_s <= 0) return JOBS_STALL_FIRST_S;
    double limit = JOBS_STALL_FACTOR * job->longest_gap_s;
    return limit < JOBS_STALL_MIN_S ? JOBS_STALL_MIN_S : limit;
}

void jobs_note_event(job_run *job, double mono) {
    if (job->last_event_mono > 0 && mono - job->last_event_mono > job->longest_gap_s)
        job->longest_gap_s = mono - job->last_event_mono;
    job->last_event_mono = mono;
}

/* Ended by run_suite's own stop (a signal, a set-up failure): nobody's fault. */
static int stopped_by_runner(const job_run *job) {
    return strncmp(job->reason, "stopped by run_suite", 20) == 0 || strncmp(job->reason, "not started", 11) == 0;
}

static int failed_on_its_own(const job_run *job) {
    return job->status != JOB_OK && job->phase == JOB_FINISHED && !stopped_by_runner(job);
}

/* When the job's trouble began: its announced fault, else its exit. */
static double failure_time(const job_run *job) {
    if (!isnan(job->t_fault)) return job->t_fault;
    return isnan(job->t_exit) ? INFINITY : job->t_exit;
}

int jobs_first_failure(const job_run *jobs, int count) {
    int first = -1, announced = 0;
    for (int i = 0; i < count; i++) {
        const job_run *job = &jobs[i];
        if (!failed_on_its_own(job)) continue;
        int a = job->fault_kind[0] != 0;
        if (first < 0 || (a && !announced) ||
            (a == announced && failure_time(job) < failure_time(&jobs[first]))) {
            first = i;
            announced = a;
        }
    }
    return first;
}

int jobs_classify_collateral(job_run *jobs, int count, const char *mode, int faults_spread,
                             const char *mode_evidence) {
    int first = jobs_first_failure(jobs, count);
    if (first < 0 || !faults_spread) return 0;
    double began = failure_time(&jobs[first]);
    int classified = 0;
    for (int i = 0; i < count; i++) {
        job_run *job = &jobs[i];
        if (i == first || job->fault_kind[0] || job->status != JOB_FAILED || stopped_by_runner(job)) continue;
        if (job->collateral_of >= 0) continue; /* the mode already knew (the job host's report) */
        if (isnan(job->t_exit) || job->t_exit < began) continue; /* it failed first: its own failure */
        const char *saw = job->error_message[0] ? job->error_message : job->err_last[0] ? job->err_last : job->reason;
        snprintf(job->evidence, sizeof job->evidence, "%s%sjob %d saw: %s", mode_evidence ? mode_evidence : "",
                 mode_evidence && *mode_evidence ? "; " : "", i, saw);
        char own[sizeof job->reason];
        snprintf(own, sizeof own, "%s", job->reason);
        snprintf(job->reason, sizeof job->reason, "collateral of job %d (mode %s): %s", first, mode, own);
        job->collateral_of = first;
        classified++;
    }
    return classified;
}
