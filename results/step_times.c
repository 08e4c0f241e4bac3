/* steps.csv: every measured step's time (see results.h), the distribution behind the quantiles of
 * jobs.csv and summary.json. */
#include "results/results.h"

#include <stdio.h>

/* A step of the measurement: inside one of the run's windows, or of the job's timed epoch. */
static int measured(const job_step *st, const run_summary *s, int timed_epoch) {
    if (s->window_length_s > 0) return st->window >= 0 && st->window < s->window_count;
    return timed_epoch > 0 && st->epoch == timed_epoch;
}

int results_write_steps_csv(const char *dir, const job_record *jobs, int count, const run_summary *s,
                            char *err, size_t err_size) {
    long rows = 0, lost = 0;
    for (int i = 0; i < count; i++) rows += jobs[i].step_count, lost += jobs[i].steps_lost;
    if (lost > 0)
        fprintf(stderr, "warning: steps.csv lacks %ld step time(s) the jobs reported (more than %ld for one job, "
                "or out of memory)\n", lost, (long)JOB_MAX_STEP_TIMES);
    if (rows == 0) return 0; /* no job reported its steps: no file (as before steps.csv) */
    results_text t;
    FILE *f = results_text_open(&t);
    if (!f) {
        snprintf(err, err_size, "out of memory writing steps.csv");
        return -1;
    }
    fprintf(f, "job,label,window,epoch,step,ms\n");
    for (int i = 0; i < count; i++) {
        const job_record *j = &jobs[i];
        int k = results_timed_epoch(j);
        int timed_epoch = k >= 0 ? j->epochs[k].epoch : 0;
        for (long n = 0; n < j->step_count; n++) {
            const job_step *st = &j->steps[n];
            if (!measured(st, s, timed_epoch)) continue;
            fprintf(f, "%d,", i);
            results_csv_field(f, j->spec.label);
            fputc(',', f);
            if (st->window >= 0) fprintf(f, "%d", st->window);
            fputc(',', f);
            if (st->epoch >= 0) fprintf(f, "%d", st->epoch);
            fprintf(f, ",%d,%.3f\n", st->step, st->ms);
        }
    }
    return results_text_commit(&t, dir, "steps.csv", err, err_size);
}
