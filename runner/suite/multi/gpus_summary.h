/* The summary of a run over several GPUs (run_suite --gpus): each card's figures and the whole
 * run's, read back from each card's summary.json and from its reference, the same jobs alone on
 * the same card (a serial run: the serial part of --mode all on each card, or --baseline's).
 *
 * Every job is measured against itself alone on the same kind of card, so the normalized metrics
 * (results/metrics.h) hold across cards: a card's STP is the sum of its jobs' normalized
 * throughputs, the whole run's the sum over every job (a sequential mode: 1 per card with jobs);
 * ANTT is the mean of turnaround / alone, turnaround counted from the card's first go (the whole
 * run: from the run's first go on any card). Where a reference or a measurement is missing the
 * field is null and "<field>_null_reason" says why; nothing prints "nan".
 * Samples are summed only over jobs of one workload (metrics_same_workload): each card and the
 * whole run list samples per workload, and total_samples only where every job is the same one. */
#ifndef SUITE_GPUS_SUMMARY_H
#define SUITE_GPUS_SUMMARY_H

#include <limits.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "runner/suite/plan/mix.h"
#include "runner/suite/plan/placement.h"

/* One card's part of the run. */
typedef struct gpus_card {
    int gpu;                           /* NVML index (a data-parallel job's run: its first card's) */
    int ddp;                           /* 1: the run of one data-parallel job over several cards (gpus.h),
                                          unmonitored: its energy is its cards' runs' */
    const char *mix;                   /* its jobs' mix; "" when it has none */
    int jobs[MIX_MAX_JOBS];            /* its jobs' places in the whole mix, in its mix's order */
    int job_count;
    int exit_status;                   /* its run_suite's */
    char run_folder[PATH_MAX];         /* its run folder; "" when none was made */
    char reference[PATH_MAX];          /* the folder of its reference summary.json; "" when none */
    char devices[GPU_LIST_MAX];        /* a data-parallel job's run: its jobs' CUDA_VISIBLE_DEVICES */
} gpus_card;

/* The summary of one mode over the cards: each card's <run_folder>[/<mode_dir>]/summary.json
 * against its reference's summary.json (no_reference: why there is none, for the null fields).
 * sequential: the mode runs one job at a time. Prints the table to out (NULL: nothing). */
cJSON *gpus_summary_mode(const mix *m, const gpus_card *cards, int count, const char *mode_dir, int sequential,
                         const char *no_reference, FILE *out);

#endif
