/* What a mode sees of the run (see mode_run.h): its state, the footprint check, a job's command. */
#include "runner/suite/modes/mode_run.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kernels/knobs.h"

const suite_planned *suite_mode_planned(const suite_ctx *c, const suite_mode *mode) {
    for (int k = 0; k < c->mode_count; k++)
        if (c->modes[k].mode == mode) return &c->modes[k];
    return NULL;
}

void *suite_mode_state(const suite_ctx *c, const suite_mode *mode) {
    const suite_planned *p = suite_mode_planned(c, mode);
    return p ? p->state : NULL;
}

int suite_check_fit(unsigned mode_flags, const double *footprints, const long long *limits,
                    int count, double memory_bytes, char *err, size_t err_size) {
    char need[32], have[32], one[32];
    for (int i = 0; limits && i < count; i++)
        if (limits[i] > 0 && footprints[i] > (double)limits[i]) {
            results_format_bytes(one, sizeof one, footprints[i]);
            results_format_bytes(have, sizeof have, (double)limits[i]);
            snprintf(err, err_size, "job %d needs %s but its memory limit is %s", i, one, have);
            return -1;
        }
    int sequential = (mode_flags & MODE_SEQUENTIAL) != 0;
    double sum = 0, largest = 0;
    for (int i = 0; i < count; i++) {
        sum += footprints[i];
        if (footprints[i] > largest) largest = footprints[i];
    }
    double required = sequential ? largest : sum;
    if (isnan(memory_bytes) || required <= memory_bytes) return 0;
    results_format_bytes(need, sizeof need, required);
    results_format_bytes(have, sizeof have, memory_bytes);
    int n = snprintf(err, err_size, "the mix needs %s (%s) but the GPU has %s:", need,
                     sequential ? "its largest job" : "the sum of its jobs' footprints", have);
    for (int i = 0; i < count && n > 0 && (size_t)n < err_size; i++) {
        results_format_bytes(one, sizeof one, footprints[i]);
        n += snprintf(err + n, err_size - (size_t)n, " job %d %s;", i, one);
    }
    return -1;
}

int suite_node_checks_later(void) {
    const char *v = knob_text(KNOB_NODE_CHECKS);
    return v && !strcmp(v, "later");
}

int suite_fit(const suite_ctx *c, unsigned mode_flags, const long long *limits, char *err,
              size_t err_size) {
    double fps[MIX_MAX_JOBS];
    for (int i = 0; i < c->count; i++) fps[i] = c->fp[i].total;
    return suite_check_fit(mode_flags, fps, limits, c->count, c->gpu.memory_bytes, err, err_size);
}

char **suite_job_argv(const suite_ctx *c, int i) {
    /* where a traced job will write, as the run names it (the mode's folder is made at the run) */
    char prefix[64];
    snprintf(prefix, sizeof prefix, "<run>/kernels/job%d", i);
    return job_build_argv(c->o, &c->o->mix.jobs[i], JOB_ARGV_RUN, c->o->kernels ? prefix : NULL);
}
