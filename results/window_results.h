/* The window measurement's results: each job's rate over the common windows, how much of each
 * window the other jobs were training too, the per-window metrics and their spread, and the
 * columns and fields they add to jobs.csv and summary.json. */
#ifndef SUITE_RESULTS_WINDOW_RESULTS_H
#define SUITE_RESULTS_WINDOW_RESULTS_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "results/job_record.h"
#include "results/metrics.h"
#include "results/run_summary.h"

/* Below this share of the window with every other job training, a job's window is flagged: it
 * did not measure collocation (a `*` in the tables, "overlap_flag" in the files). */
#define RESULTS_MIN_OVERLAP 0.95
/* Whether job i's window carries that flag: only in a run whose jobs ran together, since a serial
 * run's jobs never overlap by design (what serial means, not a failed measurement). */
int results_overlap_flagged(const run_summary *s, int i);

/* The share of window w (0-based) of job i during which every other job of the group was training
 * (from their window events' training intervals; a job without one: its go to its end). 1 for a
 * job alone; NaN when job i has no such window. */
double results_window_overlap(const job_record *jobs, int count, int i, int w);
/* The window measurement's part of the summary (results_summarize calls it when window_length_s
 * > 0): rate_in_window, window_rate and overlap from the jobs' window events. */
void results_window_summarize(const job_record *jobs, int count, run_summary *s);
/* The per-window STP, ANTT and fairness (results_compare calls it after the metrics of the median
 * rates): each window's metrics over the jobs' rates in it; the run's headline STP, ANTT and
 * fairness become their medians (base/spread.h). */
void results_window_compare(run_summary *s, const metrics_input *in);
/* The window measurement's columns of jobs.csv (header, then job i's row) and fields of
 * summary.json (the run's and job i's). */
void results_window_csv_header(FILE *f);
void results_window_csv_row(FILE *f, const job_record *job, const run_summary *s, int i);
void results_window_json_run(cJSON *root, const run_summary *s);
void results_window_json_job(cJSON *o, const job_record *jobs, const run_summary *s, int i);

#endif
