/* Normalized metrics of a collocated run: every job measured against the same job alone, so
 * that mixes of unlike jobs (images and recommender rows) can be compared at all. Pure functions
 * on numbers; results.c feeds them from the jobs and the serial baseline.
 *
 * Two measurements feed them (run_suite's default is the first):
 *   window      every job of a run is measured over ONE common window of fixed length (T0 = when
 *               the last job finished its warm-up epoch, T1 = T0 + --window seconds), all jobs
 *               training throughout: rate_i = the samples of job i's steps that completed inside
 *               [T0, T1] / (T1 - T0). Its solo reference is the same job alone over a window of
 *               the same length (the serial run, --baseline; the isolation pass for
 *               interference). Overlap_i = the share of the window during which every other job
 *               was training; below 0.95 the job's numbers are flagged (they do not describe
 *               collocation). With K windows each window's STP, ANTT and fairness are computed
 *               from the jobs' rates in it and summarised by base/spread.h; the run's headline
 *               numbers are their medians, each job's rate the median of its windows'.
 *   completion  each job's second epoch timed, every job run to completion (--completion):
 *               rate_i = the timed epoch's samples/s; turnaround, makespan and energy to complete.
 *
 * Per job i (NaN where an input is missing):
 *   normalized throughput NP_i = rate_i / solo_rate_i: samples/s in this run against the same
 *                           job alone (the serial run, or --baseline);
 *   slowdown               1 / NP_i;
 *   energy per sample      the run's energy split by solo-equivalent work (samples_i /
 *                           solo_rate_i, the seconds the job's samples take alone), per sample;
 *   interference ratio     rate_i / partition_rate_i: against the same job alone in a partition
 *                           of its own size (MIG instance, emulated share); 1.00 = isolated.
 * Per run:
 *   STP       system throughput, sum of NP_i (jobs' worth of solo progress per unit time); a
 *             sequential run progresses one job at a time: 1 by definition;
 *   ANTT      window: mean of 1 / NP_i (the mean slowdown over the window); completion: average
 *             normalized turnaround, mean of turnaround_i / alone_i, turnaround counted from the
 *             run's first start (a sequential run's later jobs include their wait);
 *   fairness  min NP_i / max NP_i (1 = every job slowed alike);
 *   speed-up  serial makespan / makespan;  energy vs serial  energy / serial energy (completion
 *             only: a window run's makespan is its warm-up and windows, not its jobs' work);
 *   samples/s sum  only when every job is the same workload: otherwise it adds up
 *             incomparable units (recommender rows plus images) and is left out. */
#ifndef SUITE_METRICS_H
#define SUITE_METRICS_H

#include "results/job_record.h"

typedef struct metrics_job_input {
    double rate;              /* samples/s over the window (or the timed epoch) in this run */
    double solo_rate;         /* the same job alone */
    double partition_rate;    /* the same job alone in its own partition */
    double samples;           /* samples trained in this run, all epochs */
    double turnaround_s;      /* from the run's first start to the job's end */
    double alone_s;           /* the same job's start-to-end alone */
} metrics_job_input;

typedef struct metrics_input {
    int count;
    int sequential;           /* jobs one after another (serial) */
    int same_workload;        /* every job the same workload: see metrics_same_workload */
    int window;               /* the window measurement: ANTT is the mean slowdown, no speed-up */
    double makespan_s, energy_j;
    double serial_makespan_s, serial_energy_j;
    metrics_job_input jobs[MIX_MAX_JOBS];
} metrics_input;

typedef struct job_metrics {
    double normalized, slowdown, energy_per_sample, interference, turnaround;  /* turnaround: normalized */
} job_metrics;

typedef struct run_metrics {
    int count;
    job_metrics jobs[MIX_MAX_JOBS];
    double stp, antt, fairness, speedup, energy_vs_serial;
    double interference_min, interference_mean;
    double samples_per_s_sum;  /* NaN unless every job is the same workload */
} run_metrics;

/* A metrics_input with every number NaN (count, flags 0). */
void metrics_input_init(metrics_input *in);
void metrics_compute(const metrics_input *in, run_metrics *out);
/* 1 when every job is the same workload (same model, data, batch and shape; labels and epoch
 * or step overrides aside), else 0. */
int metrics_same_workload(const job_spec *specs, int count);

#endif
