/* A run's faults as data and as a table (see faults.h). */
#include "results/faults.h"

#include <math.h>
#include <string.h>

static int failed(const job_record *j) { return j->status != JOB_OK; }

int results_stopped_by_runner(const job_record *job) {
    return strncmp(job->reason, "stopped by run_suite", 20) == 0 || strncmp(job->reason, "not started", 11) == 0;
}

double results_failure_time(const job_record *job) {
    if (!isnan(job->t_fault)) return job->t_fault;
    return isnan(job->t_exit) ? INFINITY : job->t_exit;
}

/* A record gets its status when the job has ended: a failed one failed on its own unless the
 * runner stopped it. */
static int failed_on_its_own(const job_record *job) {
    return failed(job) && !results_stopped_by_runner(job);
}

int results_first_failure(const job_record *jobs, int count) {
    int first = -1, announced = 0;
    for (int i = 0; i < count; i++) {
        const job_record *job = &jobs[i];
        if (!failed_on_its_own(job)) continue;
        int a = job->fault_kind[0] != 0;
        if (first < 0 || (a && !announced) ||
            (a == announced && results_failure_time(job) < results_failure_time(&jobs[first]))) {
            first = i;
            announced = a;
        }
    }
    return first;
}

void results_job_fault_fields(cJSON *o, const job_record *j) {
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

static tally count_faults(const job_record *jobs, int count) {
    tally t = {0, 0, 0, 0, results_first_failure(jobs, count)};
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
static int contained(const job_record *jobs, int count, const tally *t) {
    if (t->collateral) return 0;
    int injected = 0;
    for (int i = 0; i < count; i++) injected += jobs[i].fault_kind[0] != 0;
    if (!injected) return 1;
    for (int i = 0; i < count; i++)
        if (failed(&jobs[i]) && !jobs[i].fault_kind[0]) return 0;
    return 1;
}

cJSON *results_faults_json(const job_record *jobs, int count) {
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

void results_print_faults(FILE *out, const job_record *jobs, int count, const char *mode) {
    tally t = count_faults(jobs, count);
    if (!t.failed) return;
    fprintf(out, "\nfaults (%s):\n%-4s %-10s %-22s %s\n", mode, "job", "failed", "fault", "reason");
    for (int i = 0; i < count; i++) {
        const job_record *j = &jobs[i];
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
