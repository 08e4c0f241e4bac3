/* GPU monitor of a run: a thread samples the GPU every --sample-ms (utilisation, SM activity /
 * occupancy / DRAM bandwidth through GPM where the GPU has it, memory in total and per job
 * process, power, energy, PCIe, SM clock) and writes one timeline.csv row per watched unit with
 * the jobs' phase markers (ready/start/epoch/end) that happened since the previous row. The data
 * source is an interface, so tests feed values without NVML; the NVML source is one instance.
 * The sampler measures its own cost, so --no-monitor runs can show it is negligible. */
#ifndef SUITE_MONITOR_H
#define SUITE_MONITOR_H

#include <pthread.h>
#include <stdio.h>

#include "runner/suite/plan/mix.h"
#include "runner/suite/plan/placement.h"

#define MONITOR_MAX_UNITS 9      /* a GPU and up to 8 of its MIG instances */

/* One reading of one unit. Every field starts as NaN (= unknown, an empty CSV cell). */
typedef struct monitor_sample {
    double util_gpu, util_mem;                  /* % (nvmlDeviceGetUtilizationRates) */
    double sm_active, sm_occupancy, dram_active;/* % (GPM) */
    double mem_used, mem_total;                 /* bytes */
    double power_w, energy_j;                   /* energy: the driver's running counter */
    double pcie_rx, pcie_tx;                    /* bytes/s */
    double sm_clock_mhz;
    double job_mem[MIX_MAX_JOBS];               /* bytes used by job i's process */
} monitor_sample;

typedef struct monitor_source {
    void *self;
    int unit_count;                             /* rows per sampling tick */
    char unit_names[MONITOR_MAX_UNITS][32];     /* "gpu0", "gpu0-gi3" */
    /* Fills s for unit k; pids[i] is job i's pid (0: not running). 0, or -1 when nothing
     * could be read this time. Called from the sampling thread only. */
    int (*read)(void *self, int unit, const int *pids, int job_count, monitor_sample *s);
    void (*close)(void *self);
} monitor_source;

/* NVML source for GPU gpu_index and, under MIG, the GPU instances with the given ids (their
 * memory and GPM readings get rows of their own). 0, or -1 with the reason (NVML absent). */
int monitor_nvml_source(monitor_source *src, int gpu_index, const unsigned *gi_ids, int gi_count,
                        char *why, size_t why_size);

/* The GPU's identity and size, read once through NVML for run.json and the footprint check. */
typedef struct monitor_gpu {
    int nvml_ok;
    char why[512];                 /* why NVML could not tell */
    char name[96], uuid[96], driver[80];
    char visible[GPU_LIST_MAX];    /* CUDA_VISIBLE_DEVICES for it: its UUID, else its index; under
                                      run_suite --gpus, a data-parallel job's cards (SUITE_JOB_DEVICES) */
    int cuda_version;              /* 12040 = 12.4; 0 unknown */
    double memory_bytes;           /* NaN unknown */
    const char *memory_source;     /* "NVML", "SUITE_GPU_MEMORY" or NULL */
} monitor_gpu;

/* $SUITE_GPU_MEMORY (e.g. "80G") replaces the memory size: planning for another GPU, tests. */
void monitor_probe_gpu(int gpu_index, monitor_gpu *g);

/* Whether the GPUs a run is given exist as NVML counts them: 0 yes; -1 no, "GPU <i>: NVML counts N
 * GPU(s) on this machine (indices from 0)" in err (bad input: exit 2); 1 NVML cannot tell, why in err
 * (the caller says what it did not check). */
int monitor_gpus_exist(const int *index, int count, char *err, size_t err_size);

typedef struct monitor_point { double t, energy_j, mem_used; } monitor_point;

typedef struct monitor {
    monitor_source source;
    int job_count, sample_ms;
    char path[4096], partial_path[4200];
    FILE *csv;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int running, stop;
    int pids[MIX_MAX_JOBS];
    char markers[4096];                         /* since the last row, "job0:ready job1:start" */
    monitor_point *points;                      /* per tick, units summed: energy and memory */
    int point_count, point_cap;
    long ticks;
    double busy_s, started_mono, stopped_mono;  /* the sampler's own cost */
} monitor;

/* Opens <path>.partial, writes the header and starts the thread (it owns src from now on).
 * 0, or -1 with a message. */
int monitor_start(monitor *m, const monitor_source *src, const char *path, int job_count,
                  int sample_ms, char *err, size_t err_size);
void monitor_set_pid(monitor *m, int job, int pid);
/* Thread-safe; phase "ready", "start", "epoch", "end" (epoch: number > 0 is appended). */
void monitor_mark(monitor *m, int job, const char *phase, int epoch);
/* A job's phase as the job runner reports it ("spawn", "ready", "start", "epoch", "end"):
 * "spawn" records the job's pid for the per-process memory column, "end" forgets it, and every
 * other phase becomes a marker. */
void monitor_job_phase(monitor *m, int job, int pid, const char *phase, int epoch);
/* Takes a last sample (so the last markers land), stops the thread, renames the file to path.
 * Safe on a monitor that never started. */
void monitor_stop(monitor *m);
void monitor_free(monitor *m);

/* Energy the watched GPU spent between t0 and t1 (unix seconds), from the counter sampled
 * around them; 0, or -1 when the samples do not cover the window. */
int monitor_energy_between(const monitor *m, double t0, double t1, double *joules);
/* The same summed over windows (serial runs: each job's own); windows with a NaN end are
 * skipped. 0, or -1 when any window is not covered. */
int monitor_energy_windows(const monitor *m, const double *t0, const double *t1, int count,
                           double *joules);
/* Highest memory in use on the GPU between t0 and t1; NaN without samples. */
double monitor_peak_memory(const monitor *m, double t0, double t1);
/* Sampler cost: ticks, mean milliseconds per tick, fraction of the wall time it was busy. */
void monitor_cost(const monitor *m, long *ticks, double *mean_ms, double *busy_fraction);

/* One CSV row (without the newline) for a sample; the header names the same columns. */
void monitor_csv_header(FILE *f, int job_count);
void monitor_csv_row(FILE *f, double t, const char *unit, const monitor_sample *s, int job_count,
                     const char *markers);

#endif
