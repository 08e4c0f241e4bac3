/* The window measurement's clock, the runner's side. */
#ifndef SUITE_JOB_WINDOW_H
#define SUITE_JOB_WINDOW_H

#include "runner/suite/jobs/job_process.h"

/* The window measurement, the runner's side (see runner/train/step_window.h for the job's): once
 * the last job training has reported its warm-up epoch, the window opens (T0 = then, on the
 * runner's clock; a relayed run's T0 is the go relay's common one, above) and "window T0 T1" goes
 * to every training job, T1 = T0 + the length; with K windows the next one, T1..T1 + length, goes
 * when it opens. After the last window has closed and every job still training has reported it
 * ("window" event), "stop" goes to all; they then end normally. A job that failed or ended holds
 * nothing open; a job that reports late is waited for at most JOB_WINDOW_REPORT_S after the end.
 * With --kernels (trace_s > 0), once the last window has closed and been reported, one traced
 * window follows before "stop": "trace T0 T1" (the window lines' clock; T0 = then + JOB_TRACE_LEAD_S,
 * T1 = T0 + trace_s); "stop" goes once every job still training has sent its "kernels" event, or
 * JOB_WINDOW_REPORT_S after T1. The measured windows stay untraced: tracing costs short kernels a
 * share of their time (results/kernel_attribution.h).
 * jobs_run_group and host_group_run write what it says to their jobs' stdin; job_window.c holds it. */
#define JOB_WINDOW_REPORT_S 60.0
/* How far ahead of the traced window its line goes: a job reads its stdin between steps and turns
 * its tracer on when it reads the line, so a step or two must fit in the lead before the window's
 * kernels start. */
#define JOB_TRACE_LEAD_S 1.0

typedef struct job_window_clock {
    double length_s;             /* 0: the completion measurement (no windows) */
    int count;                   /* windows of one launch */
    int sent;                    /* windows announced so far */
    double t0;                   /* the first window's start; NaN before it opened */
    int stop_sent;
    int from_relay;              /* 1: t0 comes from the go relay's "window-start" (jobs_run_group
                                    sets it); job_window_due does not open the window itself */
    double trace_s;              /* the traced window's length; 0: none */
    int trace_sent;
    double trace_t0, trace_t1;   /* unix seconds, once trace_sent */
} job_window_clock;

void job_window_clock_init(job_window_clock *c, const jobs_settings *s);
/* 1 when the window may open: a job is training and every job training has finished its warm-up
 * epoch. */
int job_window_warm(const job_record *jobs, int count);
/* The line every training job gets now ("window T0 T1\n", "trace T0 T1\n" or "stop\n", in line), 1; 0 when
 * nothing is due. Call after the start barrier released the jobs, on every pass of the loop. */
int job_window_due(job_window_clock *c, const job_record *jobs, int count, double now, char *line, size_t size);

#endif
