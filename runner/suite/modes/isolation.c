/* The isolation pass (see isolation.h): each job alone in its own partition, through the
 * orchestrator's own seam for running a subset of the jobs (the run's execute, with job_of). */
#define _GNU_SOURCE
#include "runner/suite/modes/isolation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fills key[k] (job k's spec and partition) and returns an earlier job with the same key whose
 * solo rate is known, else -1. Without the mode's partition_key every job is measured. */
static int same_as_measured(const mode_run *r, int k, char key[][320]) {
    key[k][0] = '\0';
    if (!r->mode->partition_key) return -1;
    char spec[160], part[128];
    int job = r->job_of[k];
    if (mix_job_format(&r->ctx->o->mix.jobs[job], spec, sizeof spec) < 0) return -1;
    r->mode->partition_key(r, job, part, sizeof part);
    snprintf(key[k], sizeof key[k], "%s on %s", spec, part);
    for (int i = 0; i < k; i++)
        if (!isnan(r->summary.partition_rate[i]) && r->summary.partition_from[i] < 0 && !strcmp(key[i], key[k]))
            return i;
    return -1;
}

void suite_isolate(mode_run *r) {
    suite_ctx *c = r->ctx;
    const suite_mode *mode = r->mode;
    run_summary *s = &r->summary;
    for (int k = 0; k < MIX_MAX_JOBS; k++) s->partition_rate[k] = NAN, s->partition_from[k] = -1;
    s->partition_source[0] = '\0';
    if (!(mode->flags & MODE_PARTITIONED) || r->count < 2 || r->stopped || jobs_stop_signal()) return;
    char base[PATH_MAX], err[1024];
    if (snprintf(base, sizeof base, "%s/alone-in-partition", r->dir) >= (int)sizeof base ||
        results_make_dirs(base, err, sizeof err) != 0) {
        fprintf(stderr, "[%s] warning: no isolation pass: %s\n", mode->name, err);
        return;
    }
    /* The nested runs start and stop the mode again on its one state: keep the colocated run's. */
    void *saved = mode->state_size && r->state ? malloc(mode->state_size) : NULL;
    if (saved) memcpy(saved, r->state, mode->state_size);
    fprintf(stderr, "[%s] isolation: each of the %d jobs again, alone in its own partition\n", mode->name,
            r->count);
    char key[MIX_MAX_JOBS][320];
    for (int k = 0; k < r->count && !jobs_stop_signal(); k++) {
        if (r->jobs[k].status != JOB_OK) continue;  /* nothing to compare it with */
        int job = r->job_of[k];
        int same = same_as_measured(r, k, key);
        if (same >= 0) {
            s->partition_rate[k] = s->partition_rate[same];
            s->partition_from[k] = same;
            fprintf(stderr, "[%s] isolation: job %d is the same job in the same partition as job %d (%s): measured once\n",
                    mode->name, job, r->job_of[same], key[k]);
            continue;
        }
        char name[96], dir[PATH_MAX + 128];
        job_safe_name(name, sizeof name, c->o->mix.jobs[job].label);
        snprintf(dir, sizeof dir, "%s/job-%d-%s", base, job, name);
        run_summary alone;
        if (results_make_dirs(dir, err, sizeof err) != 0) {
            fprintf(stderr, "[%s] warning: %s\n", mode->name, err);
            continue;
        }
        if (c->execute(c, mode, &job, 1, dir, NULL, &alone) == 0 && alone.job_count == 1)
            s->partition_rate[k] = alone.window_length_s > 0 ? alone.window_rate[0] : alone.timed_rate[0];
    }
    if (saved) memcpy(r->state, saved, mode->state_size);
    free(saved);
    snprintf(s->partition_source, sizeof s->partition_source, "%s", base);
}
