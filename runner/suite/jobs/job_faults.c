/* What the runner concludes about failing jobs (job_faults.h): which failures were a job's own and
 * which were the mode taking others down with it. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "runner/suite/jobs/job_faults.h"
#include "results/faults.h"

int jobs_classify_collateral(job_record *jobs, int count, const char *mode, int faults_spread,
                             const char *mode_evidence) {
    int first = results_first_failure(jobs, count);
    if (first < 0 || !faults_spread) return 0;
    double began = results_failure_time(&jobs[first]);
    int classified = 0;
    for (int i = 0; i < count; i++) {
        job_record *job = &jobs[i];
        if (i == first || job->fault_kind[0] || job->status != JOB_FAILED || results_stopped_by_runner(job))
            continue;
        if (job->collateral_of >= 0) continue; /* the mode already knew (the job host's report) */
        if (isnan(job->t_exit) || job->t_exit < began) continue; /* it failed first: its own failure */
        const char *err_last = job->proc->err_last;
        const char *saw = job->error_message[0] ? job->error_message : err_last[0] ? err_last : job->reason;
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
