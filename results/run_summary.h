/* What a run measured, summed up over its jobs (results_summarize fills it, results.h), and the
 * serial numbers a collocated run is compared with. */
#ifndef SUITE_RESULTS_RUN_SUMMARY_H
#define SUITE_RESULTS_RUN_SUMMARY_H

#include <limits.h>

#include "results/job_record.h"
#include "results/metrics.h"

/* The serial numbers a collocated run is compared with: from the serial part of --mode all or
 * from a previous serial run of the same mix (--baseline DIR). */
typedef struct serial_baseline {
    int known;
    char source[PATH_MAX];
    char dir[PATH_MAX];                         /* the serial run's folder (its traced files); "" unknown */
    double makespan_s, energy_j;                /* NaN when unknown */
    int job_count;
    double solo_timed_s[MIX_MAX_JOBS];          /* each job's timed epoch, alone */
    double solo_rate[MIX_MAX_JOBS];             /* ... its samples/s */
    double solo_window_s[MIX_MAX_JOBS];         /* each job's go-to-end, alone */
} serial_baseline;

typedef struct run_summary {
    char mode[32];                              /* "naive", "mig-emulate", ... */
    const char *status;                         /* "complete", "partial", "interrupted" */
    int job_count, ok, failed, diverged;
    double first_go, last_end;                  /* unix seconds */
    double makespan_s;                          /* see results_summarize */
    double total_samples, aggregate_samples_per_s, timed_samples_per_s_sum;
    double energy_j, peak_gpu_memory;           /* NaN without the monitor */
    double speedup, energy_vs_serial;           /* NaN without a baseline */
    int timed_epoch[MIX_MAX_JOBS];              /* 1-based; 0 when the job has no epoch */
    double timed_s[MIX_MAX_JOBS], timed_rate[MIX_MAX_JOBS], peak_bytes[MIX_MAX_JOBS];
    double solo_s[MIX_MAX_JOBS], slowdown[MIX_MAX_JOBS];
    double go_t[MIX_MAX_JOBS], end_t[MIX_MAX_JOBS]; /* job i's go and end (unix seconds): summary.json's go_t, end_t */
    long monitor_ticks;
    double monitor_mean_ms, monitor_busy_fraction;
    int monitor_on;
    int sequential;                             /* jobs ran one after another */
    int same_workload;                          /* metrics_same_workload of the jobs */
    double samples[MIX_MAX_JOBS];               /* each job's samples, all epochs */
    double turnaround_s[MIX_MAX_JOBS];          /* run's first go to the job's end (sequential: the
                                                   windows before it included) */
    /* Partitioned modes: each job alone in a partition of its own size (NaN: not measured),
     * filled by the orchestrator's isolation pass before results_compare. */
    double partition_rate[MIX_MAX_JOBS];
    /* the job whose solo run stands for this one (the same job in the same partition: measured
     * once), -1 when it was measured itself or not at all */
    int partition_from[MIX_MAX_JOBS];
    char partition_source[PATH_MAX];            /* where those solo runs are */
    run_metrics metrics;                        /* results_compare; see metrics.h */
    /* The window measurement (metrics.h): the window's length and count, set by the caller before
     * results_summarize (which keeps them, as partition_rate); length 0: the completion
     * measurement, and nothing below applies. */
    double window_length_s;
    int window_count;
    double window_rate[MIX_MAX_JOBS];           /* median over the job's windows of its samples/s */
    double overlap[MIX_MAX_JOBS];               /* lowest over its windows (results_window_overlap) */
    double rate_in_window[MIX_MAX_JOBS][JOB_MAX_WINDOWS]; /* job i's samples/s in window w; NaN: none */
    int windows_measured;                       /* windows with per-window metrics below */
    double window_stp[JOB_MAX_WINDOWS], window_antt[JOB_MAX_WINDOWS], window_fairness[JOB_MAX_WINDOWS];
    /* Energy per trained sample over the common windows: the GPU's energy over window w (set by the
     * caller from the monitor after results_summarize, which leaves it NaN: collocated, over the window
     * every job shares; one after another, summed over each job's own window) and the samples every
     * job's steps completed inside it (results_window_summarize); results_window_compare sums both
     * over the windows and divides. NaN unknown, energy_note then saying why ("" when known). */
    double window_energy_j[JOB_MAX_WINDOWS], window_samples[JOB_MAX_WINDOWS];
    double window_energy_total_j, window_samples_total, window_energy_per_sample_j;
    char window_energy_note[256];
} run_summary;

#endif
