/* Placement of a mix's jobs over GPUs (see placement.h). */
#include "runner/suite/plan/placement.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/list.h"
#include "base/number.h"
#include "results/results.h"

static int span_of(const placement_job *j) { return j->gpus > 1 ? j->gpus : 1; }

static int fits_on(const placement *p, const placement_gpu *gpus, int slot, double footprint, int sequential) {
    double need = sequential ? fmax(p->memory[slot], footprint) : p->memory[slot] + footprint;
    return isnan(gpus[slot].memory_bytes) || need <= gpus[slot].memory_bytes;
}

/* The job in the message: which, how much, and each GPU's room at that point. */
static void refuse(const placement *p, const placement_gpu *gpus, const placement_job *jobs, int j,
                   char *err, size_t err_size) {
    char need[32], used[32], total[32];
    results_format_bytes(need, sizeof need, jobs[j].footprint_bytes);
    int n = snprintf(err, err_size, "job %d (%s on each of %d GPU%s) does not fit beside the others:", j,
                     need, span_of(&jobs[j]), span_of(&jobs[j]) > 1 ? "s" : "");
    for (int g = 0; g < p->gpu_count && n > 0 && (size_t)n < err_size; g++) {
        results_format_bytes(used, sizeof used, p->memory[g]);
        results_format_bytes(total, sizeof total, gpus[g].memory_bytes);
        n += snprintf(err + n, err_size - (size_t)n, " GPU %d holds %s of %s (%d job%s);", gpus[g].index, used,
                      total, p->jobs_on[g], p->jobs_on[g] == 1 ? "" : "s");
    }
}

typedef struct ranked { int job; double key; } ranked;

static int by_key_desc(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? 1 : -1;
    return x->job - y->job; /* stable: mix order among equals */
}

/* Places the jobs in `order`; balanced: least demand first among the GPUs with room, else the
 * first GPUs with room. -1 (and the job that failed in *failed) when one has no room. */
static int place(const placement_gpu *gpus, int gpu_count, const placement_job *jobs, const ranked *order,
                 int job_count, const double *weight, int sequential, int balanced, placement *p, int *failed) {
    memset(p, 0, sizeof *p);
    p->gpu_count = gpu_count, p->job_count = job_count;
    for (int r = 0; r < job_count; r++) {
        int j = order[r].job, k = span_of(&jobs[j]);
        int chosen[PLACEMENT_MAX_GPUS], n = 0;
        int taken[PLACEMENT_MAX_GPUS] = {0};
        while (n < k) {
            int best = -1;
            for (int g = 0; g < gpu_count; g++) {
                if (taken[g] || !fits_on(p, gpus, g, jobs[j].footprint_bytes, sequential)) continue;
                if (best < 0) best = g;
                else if (balanced && (p->demand[g] < p->demand[best] ||
                                      (p->demand[g] == p->demand[best] && p->jobs_on[g] < p->jobs_on[best])))
                    best = g;
            }
            if (best < 0) {
                *failed = j;
                return -1;
            }
            taken[best] = 1;
            chosen[n++] = best;
        }
        for (int i = 0; i < n; i++) {
            int g = chosen[i];
            p->gpus_of[j][i] = g;
            p->memory[g] = sequential ? fmax(p->memory[g], jobs[j].footprint_bytes) : p->memory[g] + jobs[j].footprint_bytes;
            p->demand[g] += weight[j];
            p->jobs_on[g]++;
        }
        p->span[j] = n;
    }
    return 0;
}

int placement_plan(const placement_gpu *gpus, int gpu_count, const placement_job *jobs, int job_count,
                   int sequential, placement *out, char *err, size_t err_size) {
    if (gpu_count < 1 || gpu_count > PLACEMENT_MAX_GPUS || job_count < 1 || job_count > PLACEMENT_MAX_JOBS) {
        snprintf(err, err_size, "placement: 1 to %d GPUs and 1 to %d jobs, not %d and %d", PLACEMENT_MAX_GPUS,
                 PLACEMENT_MAX_JOBS, gpu_count, job_count);
        return -1;
    }
    /* Demands in one unit: where any is unknown, every job weighs its footprint. */
    int known = 1;
    for (int j = 0; j < job_count; j++) known &= jobs[j].demand > 0 && !isnan(jobs[j].demand);
    double weight[PLACEMENT_MAX_JOBS];
    ranked order[PLACEMENT_MAX_JOBS];
    for (int j = 0; j < job_count; j++) {
        if (span_of(&jobs[j]) > gpu_count) {
            snprintf(err, err_size, "job %d is data-parallel over %d GPUs but --gpus gives %d", j,
                     span_of(&jobs[j]), gpu_count);
            return -1;
        }
        weight[j] = known ? jobs[j].demand : jobs[j].footprint_bytes;
        order[j] = (ranked){j, weight[j] * span_of(&jobs[j])};
    }
    qsort(order, (size_t)job_count, sizeof *order, by_key_desc);
    int failed = -1;
    if (place(gpus, gpu_count, jobs, order, job_count, weight, sequential, 1, out, &failed) == 0) {
        out->method = "balanced";
        return 0;
    }
    for (int j = 0; j < job_count; j++) order[j] = (ranked){j, jobs[j].footprint_bytes * span_of(&jobs[j])};
    qsort(order, (size_t)job_count, sizeof *order, by_key_desc);
    if (place(gpus, gpu_count, jobs, order, job_count, weight, sequential, 0, out, &failed) == 0) {
        out->method = "packed";
        return 0;
    }
    refuse(out, gpus, jobs, failed, err, err_size);
    return -1;
}

int placement_uses(const placement *p, int job, int slot) {
    for (int i = 0; i < p->span[job]; i++)
        if (p->gpus_of[job][i] == slot) return 1;
    return 0;
}

int placement_parse_gpus(const char *text, int *out, int max, char *err, size_t err_size) {
    list_entry e[PLACEMENT_MAX_GPUS + 1];
    int n = list_split("--gpus", text ? text : "", ',', e, max < PLACEMENT_MAX_GPUS ? max : PLACEMENT_MAX_GPUS, err,
                       err_size);
    for (int i = 0; i < n; i++) {
        char name[256];
        long long v;
        list_entry_name("--gpus", text, i, name, sizeof name);
        if (number_parse(NUMBER_WHOLE, 0, 1023, name, e[i].at, e[i].len, &v, NULL, err, err_size) != 0) return -1;
        for (int k = 0; k < i; k++)
            if (out[k] == (int)v) {
                snprintf(err, err_size, "--gpus %s: GPU %lld is named twice", text, v);
                return -1;
            }
        out[i] = (int)v;
    }
    return n;
}
