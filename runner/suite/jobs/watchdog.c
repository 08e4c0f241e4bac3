/* The watchdog and the stop of a job (watchdog.h). */
#include "runner/suite/jobs/watchdog.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "base/clock.h"

double jobs_stall_limit(const job_record *job, const jobs_settings *settings) {
    if (settings->stall_timeout_s > 0) return settings->stall_timeout_s;
    if (settings->stall_timeout_s < 0) return INFINITY;
    if (job->proc->longest_gap_s <= 0) return JOBS_STALL_FIRST_S;
    double limit = JOBS_STALL_FACTOR * job->proc->longest_gap_s;
    return limit < JOBS_STALL_MIN_S ? JOBS_STALL_MIN_S : limit;
}

void jobs_note_event(job_record *job, double mono) {
    job_process *p = job->proc;
    if (p->last_event_mono > 0 && mono - p->last_event_mono > p->longest_gap_s)
        p->longest_gap_s = mono - p->last_event_mono;
    p->last_event_mono = mono;
}

void watchdog_terminate(job_record *job, double grace_s, const char *why) {
    job_process *p = job->proc;
    if (!job->reason[0] && why) snprintf(job->reason, sizeof job->reason, "%s", why);
    if (p->stdin_fd >= 0) close(p->stdin_fd), p->stdin_fd = -1;
    if (p->pid > 0 && !p->reaped && !p->term_sent) {
        if (kill(-p->pid, SIGTERM) != 0) kill(p->pid, SIGTERM);
        p->term_sent = 1;
        p->kill_at = clock_monotonic() + grace_s;
    }
}


int watchdog_stalled(const job_record *job, const jobs_settings *s, double mono, char *why, size_t size) {
    const job_process *p = job->proc;
    if (p->phase != JOB_TRAINING || p->term_sent || p->reaped || mono - p->last_event_mono <= jobs_stall_limit(job, s))
        return 0;
    snprintf(why, size, "stopped by the watchdog: no event for %.0f s (--stall-timeout)", mono - p->last_event_mono);
    return 1;
}

void watchdog_escalate(job_record *job, double mono) {
    job_process *p = job->proc;
    if (p->term_sent && !p->kill_sent && !p->reaped && mono >= p->kill_at) {
        if (kill(-p->pid, SIGKILL) != 0) kill(p->pid, SIGKILL);
        p->kill_sent = 1;
    }
}
