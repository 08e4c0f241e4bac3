/* The window measurement, the runner's side (see runner/train/step_window.h for the job's): once
 * the last job training has reported its warm-up epoch, the window opens (T0 = then, on the
 * runner's clock) and "window T0 T1" goes to every training job, T1 = T0 + the length; with K
 * windows the next one, T1..T1 + length, goes when it opens. After the last window has closed and
 * every job still training has reported it ("window" event), "stop" goes to all; they then end
 * normally. A job that failed or ended holds nothing open; a job that reports late is waited for
 * at most JOB_WINDOW_REPORT_S after the end. Pure: jobs_run_group and host_group_run write what
 * it says to their jobs' stdin. */
#ifndef SUITE_JOB_WINDOW_H
#define SUITE_JOB_WINDOW_H

#include <stddef.h>

#include "runner/suite/jobs/jobs.h"

#define JOB_WINDOW_REPORT_S 60.0

typedef struct job_window_clock {
    double length_s;             /* 0: the completion measurement (no windows) */
    int count;                   /* windows of one launch */
    int sent;                    /* windows announced so far */
    double t0;                   /* the first window's start; NaN before it opened */
    int stop_sent;
} job_window_clock;

void job_window_clock_init(job_window_clock *c, const jobs_settings *s);
/* The line every training job gets now ("window T0 T1\n" or "stop\n", in line), 1; 0 when
 * nothing is due. Call after the start barrier released the jobs, on every pass of the loop. */
int job_window_due(job_window_clock *c, const job_record *jobs, int count, double now, char *line, size_t size);

#endif
