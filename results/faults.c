/* A run's faults as data and as a table (see faults.h). */
#include "results/faults.h"

#include <string.h>

static int failed(const job_run *j) { return j->status != JOB_OK; }

void results_job_fault_fields(cJSON *o, const job_run *j) {
    cJSON_AddBoolToObject(o, "failed", failed(j));
    if (j->collateral_of >= 0) cJSON_AddNumberToObject(o, "collateral_of", j->collateral_of);
    else cJSON_AddNullToObject(o, "collateral_of");
    if (j->fault_kind[0]) {
        char text[64];
        snprintf(text, sizeof text, "%s@%ld", j->fault_kind, j->fault_step);
        cJSON_AddStringToObject(o, "fault", text);
    } else {
        cJSON_AddNullToObject(o, "fault");
    }
    cJSON_AddBoolToObject(o, "stalled", j->stalled);
    if (j->evidence[0]) cJSON_AddStringToObject(o, "evidence", j->evidence);
    else cJSON_AddNullToObject(o, "evidence");
}

typedef struct tally { int failed, own, collateral, stalled, first; } tally;

static tally count_faults(const job_run *jobs, int count) {
    tally t = {0, 0, 0, 0, jobs_first_failure(jobs, count)};
    for (int i = 0; i < count; i++) {
        if (!failed(&jobs[i])) continue;
        t.failed++;
        t.stalled += jobs[i].stalled;
        if (jobs[i].collateral_of >= 0) t.collateral++;
        else t.own++;
    }
    return t;
}

/* Contained: the failures stayed with the jobs that failed of their own; with an injected fault,
 * only the jobs that injected one failed. */
static int contained(const job_run *jobs, int count, const tally *t) {
    if (t->collateral) return 0;
    int injected = 0;
    for (int i = 0; i < count; i++) injected += jobs[i].fault_kind[0] != 0;
    if (!injected) return 1;
    for (int i = 0; i < count; i++)
        if (failed(&jobs[i]) && !jobs[i].fault_kind[0]) return 0;
    return 1;
}

cJSON *results_faults_json(const job_run *jobs, int count) {
    tally t = count_faults(jobs, count);
    cJSON *o = cJSON_CreateObject();
    cJSON *injected = cJSON_AddArrayToObject(o, "injected");
    for (int i = 0; i < count; i++) {
        if (!jobs[i].fault_kind[0]) continue;
        cJSON *f = cJSON_CreateObject();
        cJSON_AddNumberToObject(f, "job", i);
        cJSON_AddStringToObject(f, "kind", jobs[i].fault_kind);
        cJSON_AddNumberToObject(f, "step", (double)jobs[i].fault_step);
        cJSON_AddItemToArray(injected, f);
    }
    cJSON_AddNumberToObject(o, "failed", t.failed);
    cJSON_AddNumberToObject(o, "own_failures", t.own);
    cJSON_AddNumberToObject(o, "collateral", t.collateral);
    cJSON_AddNumberToObject(o, "stalled", t.stalled);
    if (t.failed) cJSON_AddBoolToObject(o, "contained", contained(jobs, count, &t));
    else cJSON_AddNullToObject(o, "contained");
    if (t.first >= 0) cJSON_AddNumberToObject(o, "first_failure", t.first);
    else cJSON_AddNullToObject(o, "first_failure");
    return o;
}

void results_print_faults(FILE *out, const job_run *jobs, int count, const char *mode) {
    tally t = count_faults(jobs, count);
    if (!t.failed) return;
    fprintf(out, "\nfaults (%s):\n%-4s %-10s %-22s %s\n", mode, "job", "failed", "fault", "reason");
    for (int i = 0; i < count; i++) {
        const job_run *j = &jobs[i];
        if (!failed(j)) continue;
        char fault[64] = "-";
        if (j->fault_kind[0]) snprintf(fault, sizeof fault, "%s@%ld", j->fault_kind, j->fault_step);
        fprintf(out, "%-4d %-10s %-22s %s\n", i, j->collateral_of >= 0 ? "collateral" : j->stalled ? "stalled" : "own",
                fault, j->reason);
        if (j->evidence[0]) fprintf(out, "     evidence: %s\n", j->evidence);
    }
    fprintf(out, "%s: %d failed of their own, %d as collateral, %d finished: the fault was %s\n", mode, t.own,
            t.collateral, count - t.failed, contained(jobs, count, &t) ? "contained" : "NOT contained");
}
