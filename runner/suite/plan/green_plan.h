/* Green-context partitions of a mix (run_suite --mode green): how many SMs each job gets. The
 * device splits its SMs into equal groups of `unit` SMs (its minimum partition, 8 on Hopper) and a
 * partition is a whole number of groups, so every count is rounded to the unit:
 *   --green-sm 64,64      each job's SMs, rounded to the nearest multiple of the unit
 *   --green-share 50,50   each job's percentage of the SMs the groups hold, rounded down
 *   neither               the whole GPU shared out by compute demand (FLOPs per step x planned
 *                         steps; equal shares where a demand is unknown), like MIG's `fill`;
 *                         identical jobs get identical partitions (a group may stay unused)
 * Pure (no GPU): the run learns the device's numbers from `job_host --probe`. */
#ifndef SUITE_GREEN_PLAN_H
#define SUITE_GREEN_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "runner/suite/plan/mix.h"

struct mig_gpu;

#define GREEN_MAX_PARTITIONS 16   /* as models/core/context.h's CONTEXT_MAX_PARTITIONS */

typedef struct green_gpu {
    int device_sms;               /* all of the device's SMs */
    int unit;                     /* SMs per group */
    int groups;                   /* groups the split yields (device_sms / unit, rounded down) */
} green_gpu;

typedef struct green_request {
    int count;                    /* jobs */
    const int *sm;                /* --green-sm: count entries, or NULL */
    const double *share;          /* --green-share: count percentages, or NULL */
    const double *demand;         /* each job's compute demand (<= 0 unknown), or NULL */
} green_request;

typedef struct green_plan {
    green_gpu gpu;
    int count;
    int sm[GREEN_MAX_PARTITIONS];         /* each job's SMs, multiples of gpu.unit */
    double demand_share[GREEN_MAX_PARTITIONS]; /* the share its demand asks for (0..1), NaN unknown */
    const char *basis;            /* "--green-sm", "--green-share", "compute demand", "equal shares" */
} green_plan;

/* 0, or -1 with a message naming the input at fault (run_suite exits 2): a list of the wrong
 * length, a share sum over 100%, fewer SMs than the minimum partition, more SMs than the GPU's
 * groups hold, more jobs than partitions. */
int green_plan_make(green_plan *p, const green_gpu *gpu, const green_request *req, char *err, size_t err_size);
/* The plan's lines for the dry run and the run's log; labels[i] names job i. */
void green_plan_print(const green_plan *p, const char *const *labels, FILE *out);
/* The split a GPU of this MIG table is expected to yield, without asking it: all its SMs in groups
 * of its architecture's unit (Ampere, names from 'A': 4; Hopper and later: 8; models/core/context.h
 * quotes the driver's rules). An estimate: the driver may keep more SMs out of the groups than the
 * remainder, so only `job_host --probe` on the GPU is its split. */
void green_estimate_gpu(const struct mig_gpu *table, green_gpu *gpu);
/* `job_host --probe`'s line -> gpu. 0, or -1 with a message. */
int green_parse_probe(const char *text, green_gpu *gpu, char *err, size_t err_size);
/* --green-sm "64,64" / --green-share "50,50" (or "50%,50%"): one value per job, or one value for
 * all `count` jobs. 0, or -1 with a message naming the option. */
int green_parse_sms(const char *text, int count, int *sm, char *err, size_t err_size);
int green_parse_shares(const char *text, int count, double *share, char *err, size_t err_size);

#endif
