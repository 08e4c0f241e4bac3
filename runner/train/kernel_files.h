/* A traced window's two files, as the kernel trace format names them (the runner's attribution
 * reads them): PREFIX.kernels.csv, the kernels aggregated per (scope, kernel) under `# key=value`
 * lines that say whose and when, and PREFIX.intervals.csv, every kernel's interval of the window
 * (models/core/kernel_tally.h keeps them). Host only: the CPU tests write and read them back. */
#ifndef SUITE_KERNEL_FILES_H
#define SUITE_KERNEL_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "base/precision.h"
#include "models/core/kernel_scope.h"
#include "models/core/kernel_tally.h"

#define KERNEL_NAME_MAX 120 /* the kernel column's longest name */

typedef struct kernel_file_header {
    const char *job, *model;
    precision_kind precision;
    int batch;
    const char *device_name;
    int device_sms, sm_count;       /* the device's SMs; the job's (its partition's, or all) */
    long steps;                     /* steps that completed in the window */
    double step_ms;                 /* their median */
    double peak_flops, peak_bytes_s; /* 0: unknown */
} kernel_file_header;

/* Writes PREFIX.kernels.csv and PREFIX.intervals.csv whole (each to a temporary file, synced and
 * renamed). 0, or -1 with the file and its reason. */
int kernel_files_write(const char *prefix, const kernel_file_header *h, kernel_tally *tally, const kernel_scopes *s,
                       char *err, size_t err_size);
/* The two paths of a prefix. */
void kernel_files_paths(const char *prefix, char *kernels, char *intervals, size_t size);

/* The kernel column: demangled, "void " and the argument list dropped, cut to KERNEL_NAME_MAX
 * characters ("..." ending a cut one). */
void kernel_name_short(const char *symbol, char *out, size_t size);
/* text as one RFC 4180 field: quoted, with quotes doubled, when it holds a comma, a quote or a
 * line break; as it is otherwise. */
void kernel_csv_field(const char *text, char *out, size_t size);

/* Dense tensor-core FLOP/s of a precision on `sms` SMs of compute capability major.minor at
 * clock_khz (strict fp32: the CUDA cores'); 0 for an architecture the table lacks. */
double kernel_peak_flops(int major, int minor, precision_kind precision, int sms, double clock_khz);
/* DRAM bytes/s from the memory clock (kHz, double data rate) and bus width (bits); 0 if unknown. */
double kernel_peak_bytes(double memory_clock_khz, int bus_bits);

#endif
