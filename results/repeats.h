/* Repeats of a run (run_suite --repeat N): the same run launched N times, each into a complete run
 * folder of its own, summarised across them. Every value is read back from the repeats' summary.json
 * files by field name (and SM activity from their timeline.csv), so fields added to summary.json
 * later leave this reader as it is. Per mode (and per job for the metrics of one job) it keeps every
 * repeat's value and its spread (base/spread.h); repeats.json and repeats.csv hold both, the
 * printed table shows "median [min-max]", and one ranking line per metric says which differences
 * the repeats support: "STP: green > mps ~ streams > naive". */
#ifndef SUITE_REPEATS_H
#define SUITE_REPEATS_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "results/job_record.h"
#include "base/spread.h"

#define REPEATS_MAX 100        /* --repeat's bound */
#define REPEATS_MAX_MODES 16

/* A metric summarised across repeats: its summary.json field, how it is printed, and which way is
 * better (the ranking line puts the better first). */
typedef struct repeats_metric {
    const char *key, *label, *format;
    int lower_is_better;
} repeats_metric;

/* The run's metrics (one value per mode and repeat) and the job's (one per job, mode and repeat). */
const repeats_metric *repeats_run_metrics(int *count);
const repeats_metric *repeats_job_metrics(int *count);

typedef struct repeats_mode {
    char name[32];
    char status[REPEATS_MAX][16];              /* each repeat's summary status; "missing": none */
    double *run;                               /* [metric][repeat], NaN where absent */
    int job_count;
    char job_label[MIX_MAX_JOBS][64];
    double *job;                               /* [metric][job][repeat] */
} repeats_mode;

typedef struct repeats {
    int count;                                 /* repeats */
    int mode_count;
    repeats_mode modes[REPEATS_MAX_MODES];
} repeats;

/* Reads repeat_dirs[0..count): for each of the modes (their names, in the order to report them),
 * <repeat>/<mode>/summary.json (--mode all) or <repeat>/summary.json of that mode (one mode). A
 * repeat without it (a mode skipped or failed there) leaves NaNs. 0, or -1 with a message. */
int repeats_collect(repeats *r, const char *const *repeat_dirs, int count, const char *const *modes,
                    int mode_count, char *err, size_t err_size);
void repeats_free(repeats *r);
/* The values of one metric of mode m across the repeats (job -1: a run metric). */
const double *repeats_values(const repeats *r, int m, int metric, int job);
spread repeats_spread(const repeats *r, int m, int metric, int job);

/* The ranking rule, once: the entries with at least one value, better first by median (stable
 * among equal medians), neighbours joined by spread_rank's sign: ">" (or "<" where lower is
 * better) only where their ranges do not overlap and each has SPREAD_MIN_RANKED values, else "~".
 * "label: a > b ~ c"; "label: -" when no entry has a value. Returns what snprintf returns. */
int repeats_rank_line(char *out, size_t size, const char *label, const char *const *names, const spread *spreads,
                      int count, int lower_is_better);

/* {"repeats": N, "modes": [{"mode", "status": [...], "metrics": {key: {"values": [...], "spread":
 * {...}}}, "jobs": [{"index", "label", "metrics": {...}}]}], "rankings": {key: line}}. */
cJSON *repeats_json(const repeats *r);
/* repeats.json and repeats.csv (mode,job,label,metric,repeat_1..repeat_N,median,min,max,n) in dir. */
int repeats_write(const char *dir, const repeats *r, char *err, size_t err_size);
/* The run metrics per mode and the job metrics per mode and job as "median [min-max]", then one
 * ranking line per run metric where two modes or more have values. */
void repeats_print(FILE *out, const repeats *r);

#endif
