/* A job's traced window as its files hold it (run_suite --kernels; train --kernels PREFIX writes them,
 * runner/train): PREFIX.kernels.csv, the kernels aggregated per scope (a layer and pass) and kernel,
 * and PREFIX.intervals.csv, every kernel's interval in the window. The files' format:
 *
 * PREFIX.kernels.csv: leading "# key=value" lines, every one of KTRACE_HEADER_KEYS present (others
 * are ignored): job, model, precision, batch, device_name, device_sms, sm_count (the job's SMs),
 * clock ("realtime"), t0, t1 (unix seconds, up to 9 decimals), steps (completed in [t0, t1]),
 * step_ms (their median), kernels, dropped, peak_flops (dense FLOP/s of the job's precision on its
 * SMs; 0 unknown), peak_bytes_s (DRAM bytes/s; 0 unknown). Then the header
 *   scope,layer,pass,class,kernel,count,total_ns,min_ns,max_ns,flops,bytes
 * and one row per scope and kernel: pass one of forward, dgrad, wgrad, backward, update, "-"; class
 * one of base/kernel_class.h's; kernel quoted per RFC 4180; flops and bytes per ONE launch of the
 * scope (its first row; 0 on its other kernels' rows, and where unknown).
 *
 * PREFIX.intervals.csv: the header start_ns,end_ns,scope,class,stream and one row per kernel: its
 * GPU start and end in ns since t0 (never negative), its scope (an id of the kernels file), its
 * class (the name, or its place in the list of classes) and its stream.
 *
 * A file that breaks a rule is refused with its path, line and what was expected. Pure host code. */
#ifndef SUITE_RESULTS_KERNEL_TRACE_H
#define SUITE_RESULTS_KERNEL_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "base/kernel_class.h"
#include "results/job_record.h"


/* One row of the kernels file. */
typedef struct ktrace_row {
    int scope;
    char layer[128];
    char pass[16];
    int cls;
    char kernel[128];
    double count, total_ns, min_ns, max_ns, flops, bytes;
} ktrace_row;

/* One kernel's interval: ns since the window's t0. */
typedef struct ktrace_interval {
    int64_t start, end;
    int scope, cls, stream;
} ktrace_interval;

typedef struct ktrace {
    char job[64], model[64], precision[32], device_name[128], clock[32];
    int batch, device_sms, sm_count;
    int64_t t0_ns, t1_ns;        /* unix ns */
    double steps, step_ms, kernels, dropped, peak_flops, peak_bytes_s;
    ktrace_row *rows;
    int row_count;
    int *scope_row;              /* scope id -> its first row; -1 none (ids up to scope_max) */
    int scope_max;
    ktrace_interval *intervals;  /* sorted by start */
    long interval_count;
} ktrace;

/* Reads PREFIX.kernels.csv at kernels_path and PREFIX.intervals.csv beside it. 0, or -1 with the
 * file, line and rule broken (t is then empty). */
int ktrace_read(ktrace *t, const char *kernels_path, char *err, size_t err_size);
void ktrace_free(ktrace *t);
/* PREFIX.intervals.csv for PREFIX.kernels.csv (into out); -1 when the name does not end so. */
int ktrace_intervals_path(const char *kernels_path, char *out, size_t size);
/* The row of a scope id; NULL when the file has none. */
const ktrace_row *ktrace_scope_row(const ktrace *t, int scope);

/* The "kernels" event in a job's record as jobs.csv's columns (after the others: header, then each
 * row) and as run.json's and summary.json's "kernels" object (NULL when the job sent none). */
void ktrace_csv_header(FILE *f);
void ktrace_csv_row(FILE *f, const job_record *job);
int ktrace_any_reported(const job_record *jobs, int count);
cJSON *ktrace_event_json(const job_record *job);

#endif
