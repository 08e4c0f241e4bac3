/* Where a job's slowdown goes (run_suite --kernels): its traced window (results/kernel_trace.h) split
 * by class and by layer, shared and alone, and the class-by-class interference matrix. Pure host
 * code over the traced files; the runner says which files stand for each job alone.
 *
 * The rules:
 * - A job's window [t0, t1] is split exactly: at every instant the job's running kernels share it
 *   equally (the weight-gradient lane's kernels beside the backward chain's: the same rule alone and
 *   shared); an instant with none of its kernels is waiting, "waiting_others" when another job of
 *   the run had a kernel running then (under naive time-slicing: the step lost to the other
 *   contexts' slices) and "waiting_idle" otherwise. Divided by the steps completed in the window:
 *   ms per step by class, summing to the window's time per step.
 * - Alone: the same job's traced window in the serial run (or, in a partitioned mode, in the
 *   isolation run in its partition). Per class: ms per step alone and shared, the difference, and
 *   its share of the step's difference; per class alone, FLOPs and bytes per step (the scopes'
 *   figures times their launches), their intensity against the ridge point (peak FLOP/s over peak
 *   DRAM bytes/s, the job's own SMs): compute- or memory-bound, and the share of peak DRAM bandwidth
 *   and FLOP rate its kernels reach over their own time.
 * - The interference matrix, per mode: cell (a, b) is how much slower job j's class-a kernels ran
 *   while a class-b kernel of another job ran beside them: the time they overlapped that class,
 *   over the time the same work took alone, each kernel's alone time being its overlapped time
 *   divided by its slowdown (its duration over the mean duration alone of its layer, pass and class).
 *   That is the time-weighted harmonic mean of the kernels' slowdowns: an arithmetic mean weighted by
 *   time would count a scope's long kernel as slowed and its short one as sped up whenever they
 *   share a mean. Column "none": while no other job's kernel ran. Over every job: the jobs' times
 *   summed.
 *
 * kernels.csv (per mode, and in the top folder of --mode all, every mode's rows):
 *   mode,job,label,level,class,layer,pass,alone_ms,shared_ms,delta_ms,share_of_slowdown,alone_gflop,
 *   alone_mbytes,intensity,ridge,bound,alone_dram_fraction,alone_flop_fraction,alone_source,measurement
 *   level: step (the window per step), class, layer (layer, pass and class); ms are per step;
 *   alone_source: serial, partition, baseline, self (the serial run itself), "" (none);
 *   measurement: "traced" (traced numbers are always labelled as such).
 * interference.csv: mode,job,label,class,beside,slowdown,overlap_ms,measurement
 *   job "all": every job's summed. overlap_ms: the class's kernel time beside `beside` over the window. */
#ifndef SUITE_RESULTS_KERNEL_ATTRIBUTION_H
#define SUITE_RESULTS_KERNEL_ATTRIBUTION_H

#include <stddef.h>
#include <stdio.h>

#include "results/kernel_trace.h"

/* The parts a window splits into: the classes, then the two kinds of waiting. */
#define KATTR_WAITING_OTHERS KCLASS_COUNT
#define KATTR_WAITING_IDLE (KCLASS_COUNT + 1)
#define KATTR_PARTS (KCLASS_COUNT + 2)
/* The matrix's last column: no other job's kernel ran. */
#define KATTR_BESIDE_NONE KCLASS_COUNT

const char *kattr_part_name(int part); /* a class's name, "waiting_others", "waiting_idle" */

/* One layer, pass and class of a job's window. */
typedef struct kattr_key {
    char layer[128], pass[16];
    int cls;
    double ns;                   /* its kernels' share of the window (the split's rule) */
    double kernel_ns, launches, flops, bytes; /* its kernels' own time and launches; FLOPs and bytes
                                                 over the window */
} kattr_key;

typedef struct kattr_split {
    double window_ns, steps;
    double part_ns[KATTR_PARTS]; /* sums to window_ns */
    double kernel_ns[KCLASS_COUNT], flops[KCLASS_COUNT], bytes[KCLASS_COUNT]; /* over the window */
    double peak_flops, peak_bytes_s;
    kattr_key *keys;             /* sorted by layer, pass, class */
    int key_count;
} kattr_split;

/* Splits self's window by the rule above; others: the other jobs' traced windows of the same run
 * (their kernels tell waiting_others from waiting_idle). 0, or -1 when out of memory. */
int kattr_split_job(const ktrace *self, const ktrace *const *others, int other_count, kattr_split *out);
void kattr_split_free(kattr_split *s);

/* The matrix's sums: cell (a, b) = shared_ns / alone_ns. */
typedef struct kattr_matrix {
    double shared_ns[KCLASS_COUNT][KCLASS_COUNT + 1];
    double alone_ns[KCLASS_COUNT][KCLASS_COUNT + 1];
    double unmatched_ns;         /* self's kernel time whose layer, pass and class never ran alone */
} kattr_matrix;

/* Adds self's kernels to m (zero it first), against the same job alone. 0, or -1 when out of memory. */
int kattr_matrix_add(const ktrace *self, const ktrace *const *others, int other_count, const ktrace *alone,
                     kattr_matrix *m);

/* One job of a mode's run: its traced file (PREFIX.kernels.csv; NULL or "": none), and the same
 * job's alone, with where that came from (alone_source's words above). */
typedef struct kattr_job {
    int index;
    const char *label;
    const char *shared;
    const char *alone;
    const char *alone_source;
} kattr_job;

/* The traced file of job `index` of an earlier run in run_dir: its summary.json's kernels_file, else
 * where that is gone (the folder moved) the same name under run_dir/kernels/. 0 with the path in out,
 * -1 when the run traced none for it. */
int kattr_file_of_run(const char *run_dir, int index, char *out, size_t size);

/* kernels.csv and interference.csv of one mode's run into dir. A job whose files cannot be read is
 * left out with a warning on `warn` naming the file and why; no file is written when no job has
 * one. concurrent: the jobs' kernels may run at the same time (else, jobs one after another or
 * contexts taking turns, interference.csv holds its header only: an overlap of two jobs' intervals
 * is then one kernel stretched over another's slice, not two kernels sharing the GPU). 0, or -1
 * with a message when a file cannot be written. */
int kattr_write(const char *dir, const char *mode, const kattr_job *jobs, int count, int concurrent, FILE *warn, char *err,
                size_t err_size);
/* The top folder of --mode all: each mode's kernels.csv and interference.csv (mode_dirs, in order) as
 * one of each in dir; none where no mode has one. 0, or -1 with a message. */
int kattr_join(const char *dir, const char *const *mode_dirs, int count, char *err, size_t err_size);

#endif
