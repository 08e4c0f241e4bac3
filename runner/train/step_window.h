/* The window measurement, the job's side (run_suite's default; README "run_suite"): after its
 * warm-up epoch a job trains until the runner says "stop", and the runner names the common
 * windows it measures every job over ("window T0 T1": unix seconds, CLOCK_REALTIME, the host's
 * clock). For each window the job reports the steps that COMPLETED inside [T0, T1] (their samples,
 * samples / (T1 - T0), their step-time quantiles) and its own training interval (first step's
 * start, latest step's end), from which the runner tells how much of the window every other job
 * was training too. Pure host code: the job feeds it each step's completion time (train: from its
 * CUDA events, runner/train/job.c; the CPU tests' fake train: from its clock), so both speak the
 * protocol through the same arithmetic. A window line may arrive after its T0 (the job reads
 * stdin between steps): the steps of the last STEP_WINDOW_HISTORY_S seconds, and every step since
 * the oldest window not yet reported, are kept.
 *
 * Every step's time also leaves the job, for the distribution a median hides (the runner's
 * steps.csv): a window's, before its "window" event, and (the completion measurement) an epoch's,
 * before its "epoch" event, as "steps" events of STEP_EVENT_STEPS durations at most:
 *   {"event":"steps","window":K,"first":F,"ms":[12.345,...]}   ("epoch":K for an epoch's)
 * the times in ms (3 decimals) of its steps F+1, F+2, ... in completion order. Short lines: a fast
 * job's window holds thousands of steps, and the runner parses lines up to 16 KiB
 * (runner/suite/jobs/jobs.h, JOB_LINE_MAX).
 *
 * With train --kernels, after the measured windows the runner names one traced window, "trace T0
 * T1" (the same clock): the job records its kernels over it (runner/train/job_trace.h); the line
 * is kept here for the job to take. */
#ifndef SUITE_STEP_WINDOW_H
#define SUITE_STEP_WINDOW_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define STEP_WINDOW_MAX 64           /* windows one job measures (run_suite --windows at most) */
#define STEP_WINDOW_HISTORY_S 120.0
#define STEP_EVENT_STEPS 512         /* durations per "steps" event: ~6 KiB of JSON at most */

typedef struct step_done {
    double t_end;                    /* unix seconds the step completed */
    float ms;                        /* its duration */
} step_done;

typedef struct step_window_span {
    double t0, t1;
    int reported;
} step_window_span;

typedef struct step_windows {
    int batch;                       /* samples per step */
    step_done *steps;                /* history, oldest first, from steps[first] */
    size_t first, count, cap;
    double train_start, train_end;   /* NaN before the first step */
    step_window_span windows[STEP_WINDOW_MAX];
    int window_count;
    int stopped;                     /* "stop" (or the end of stdin) arrived */
    step_window_span trace;          /* the traced window ("trace T0 T1"); reported: taken by the job */
    int traced;                      /* a trace line arrived */
    /* the window being reported: its steps' times go out first, then its event */
    cJSON *report;                   /* its "window" event; NULL when none is being reported */
    int report_window;
    float *report_ms;                /* its steps' times, completion order */
    size_t report_count, report_sent;
} step_windows;

void step_windows_init(step_windows *w, int batch);
void step_windows_free(step_windows *w);
/* A step that completed at t_end after ms milliseconds (in completion order). 0, or -1 when out
 * of memory. */
int step_windows_add(step_windows *w, double t_end, double ms);
/* One line of the runner's: "window T0 T1" (0), "stop" (1; also sets stopped), "trace T0 T1" (2;
 * sets trace, once: a second is -1), else -1. */
int step_windows_command(step_windows *w, const char *line);
/* The next event of a window whose figures are final (a step completed after its T1, or final: no
 * more steps come): its "steps" events, then its "window" event; NULL when none. Each window is
 * reported once. */
cJSON *step_windows_next_event(step_windows *w, int final);
/* The next "steps" event of a span (key "window" or "epoch", its index) whose count step times
 * (ms, completion order) are ms: those from *first on, STEP_EVENT_STEPS at most; *first advances.
 * NULL when none are left. */
cJSON *step_times_event(const char *key, int index, const float *ms, size_t count, size_t *first);

#endif
