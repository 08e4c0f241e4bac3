/* When the runner opens, announces and closes the common windows (see jobs.h, job_window_clock). */
#include "runner/suite/jobs/job_window.h"

#include <math.h>
#include <stdio.h>

void job_window_clock_init(job_window_clock *c, const jobs_settings *s) {
    c->length_s = s->window_s > 0 ? s->window_s : 0;
    c->count = s->windows > 0 ? s->windows : 1;
    c->sent = c->stop_sent = 0;
    c->t0 = NAN;
    c->from_relay = 0;
    c->trace_s = c->length_s > 0 && s->trace_s > 0 ? s->trace_s : 0;
    c->trace_sent = 0;
    c->trace_t0 = c->trace_t1 = NAN;
}

static int training(const job_record *job) { return job->proc->phase == JOB_TRAINING; }

int job_window_warm(const job_record *jobs, int count) {
    int any = 0;
    for (int i = 0; i < count; i++) {
        if (!training(&jobs[i])) continue;
        if (jobs[i].epoch_count == 0) return 0; /* still warming up */
        any = 1;
    }
    return any;
}

int job_window_due(job_window_clock *c, const job_record *jobs, int count, double now, char *line, size_t size) {
    if (c->length_s <= 0 || c->stop_sent) return 0;
    if (isnan(c->t0)) {
        if (c->from_relay || !job_window_warm(jobs, count)) return 0;
        c->t0 = now;
    }
    double end = c->t0 + c->count * c->length_s;
    if (c->sent < c->count) {
        double t0 = c->t0 + c->sent * c->length_s;
        if (now < t0) return 0;
        c->sent++;
        snprintf(line, size, "window %.6f %.6f\n", t0, t0 + c->length_s);
        return 1;
    }
    if (now < end) return 0;
    int any = 0;
    for (int i = 0; i < count; i++) {
        if (!training(&jobs[i])) continue;
        any = 1;
        if (jobs[i].window_count < c->count && now < end + JOB_WINDOW_REPORT_S) return 0;
    }
    if (c->trace_s > 0 && !c->trace_sent && any) {
        c->trace_sent = 1;
        c->trace_t0 = now + JOB_TRACE_LEAD_S;
        c->trace_t1 = c->trace_t0 + c->trace_s;
        snprintf(line, size, "trace %.6f %.6f\n", c->trace_t0, c->trace_t1);
        return 1;
    }
    if (c->trace_sent) {
        if (now < c->trace_t1) return 0;
        for (int i = 0; i < count && now < c->trace_t1 + JOB_WINDOW_REPORT_S; i++)
            if (training(&jobs[i]) && !jobs[i].kernels.reported) return 0;
    }
    c->stop_sent = 1;
    snprintf(line, size, "stop\n");
    return 1;
}
