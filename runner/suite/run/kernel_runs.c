/* Which traced files stand for each job (see kernel_runs.h). */
#include "runner/suite/run/kernel_runs.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/kernel_attribution.h"

/* The job's isolation run in its partition (suite_isolate's folder: job-<mix index>-<label>, its one
 * job traced as job 0); the same job in the same partition is measured once. */
static int partition_file(const mode_run *r, int k, char *out, size_t size) {
    const run_summary *s = &r->summary;
    if (!s->partition_source[0]) return -1;
    int from = s->partition_from[k] >= 0 ? s->partition_from[k] : k;
    char name[96], dir[PATH_MAX + 160];
    job_safe_name(name, sizeof name, r->jobs[from].spec.label);
    snprintf(dir, sizeof dir, "%s/job-%d-%s", s->partition_source, r->job_of[from], name);
    return kattr_file_of_run(dir, 0, out, size);
}

void suite_attribute_kernels(const mode_run *r, const serial_baseline *base) {
    if (!r->ctx->o->kernels || !r->jobs) return;
    char (*alone)[PATH_MAX] = calloc(MIX_MAX_JOBS, sizeof *alone); /* each job's file alone */
    kattr_job jobs[MIX_MAX_JOBS];
    if (!alone) {
        fprintf(stderr, "[%s] error: out of memory attributing the traced kernels\n", r->mode->name);
        return;
    }
    /* one job of a partitioned mode runs alone in its partition (the isolation pass's runs) */
    int sequential = (r->mode->flags & MODE_SEQUENTIAL) || ((r->mode->flags & MODE_PARTITIONED) && r->count == 1);
    for (int k = 0; k < r->count; k++) {
        const job_record *j = &r->jobs[k];
        kattr_job *one = &jobs[k];
        *one = (kattr_job){.index = k, .label = j->spec.label, .alone_source = ""};
        one->shared = j->kernels.reported && !j->kernels.error[0] ? j->kernels.file : NULL;
        alone[k][0] = 0;
        if (sequential) {
            one->alone = one->shared, one->alone_source = "self";
        } else if ((r->mode->flags & MODE_PARTITIONED) && partition_file(r, k, alone[k], sizeof alone[k]) == 0) {
            one->alone = alone[k], one->alone_source = "partition";
        } else if (base && base->known && base->dir[0] &&
                   kattr_file_of_run(base->dir, r->job_of[k], alone[k], sizeof alone[k]) == 0) {
            /* a --baseline folder is its own source; the serial part of this run names itself */
            one->alone = alone[k], one->alone_source = strcmp(base->source, base->dir) ? "serial" : "baseline";
        }
        if (one->shared && !one->alone)
            fprintf(stderr, "[%s] job %d %s: no traced run of it alone (a serial run with --kernels: --mode all, or "
                    "--baseline): its kernels are attributed without one\n", r->mode->name, k, j->spec.label);
    }
    char err[1024];
    int concurrent = !(r->mode->flags & (MODE_SEQUENTIAL | MODE_TIME_SLICED));
    if (kattr_write(r->dir, r->mode->name, jobs, r->count, concurrent, stderr, err, sizeof err) != 0)
        fprintf(stderr, "[%s] error: %s\n", r->mode->name, err);
    free(alone);
}
