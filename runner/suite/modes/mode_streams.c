/* streams: every job of the mix in one process (job_host), one host thread, CUDA stream, set of
 * library handles, arena and CUDA graph per job, all in the device's one primary context: the
 * hardware schedules their kernels side by side, with no time-slicing between contexts and no MPS
 * daemon. The price: a CUDA fault in one job poisons that context for all (reported as collateral).
 * The in-process runner it shares with green and mig-emulate --via green is here too. */
#include <limits.h>
#include <stdio.h>

#include "runner/suite/jobs/host_group.h"
#include "runner/suite/modes/mode_run.h"

group_result mode_host_run(mode_run *r, job_record *jobs, int count, const jobs_settings *s, const int *green_sms) {
    char host[PATH_MAX];
    host_group_program(r->ctx->o->train_path, host, sizeof host);
    char **argv = host_group_argv(host, jobs, count, green_sms);
    if (!argv) {
        for (int i = 0; i < count; i++) snprintf(jobs[i].reason, sizeof jobs[i].reason, "out of memory");
        char *none[] = {host, NULL};
        return host_group_run(jobs, count, none, r->dir, s);
    }
    group_result g = host_group_run(jobs, count, argv, r->dir, s);
    job_free_strv(argv);
    return g;
}

static void describe(const suite_ctx *c, FILE *out, cJSON *json) {
    char host[PATH_MAX];
    host_group_program(c->o->train_path, host, sizeof host);
    if (json) cJSON_AddStringToObject(json, "job_host", host);
    else fprintf(out, "streams: %d jobs in one process (%s) on GPU %s, a CUDA stream and host thread each\n",
                 c->count, host, c->gpu.visible);
}

static group_result run_jobs(mode_run *r, job_record *jobs, int count, const jobs_settings *s) {
    return mode_host_run(r, jobs, count, s, NULL);
}

static void report(const mode_run *r, cJSON *run_json) {
    char host[PATH_MAX];
    host_group_program(r->ctx->o->train_path, host, sizeof host);
    cJSON *o = cJSON_AddObjectToObject(run_json, "in_process");
    cJSON_AddStringToObject(o, "job_host", host);
    cJSON_AddStringToObject(o, "context", "the device's primary context, shared by all jobs");
}

const suite_mode mode_streams = {
    .name = "streams",
    .help = "all jobs in one process, a CUDA stream and host thread each; no time-slicing, no MPS",
    .flags = MODE_IN_ALL | MODE_FAULTS_SPREAD,
    .no_data_parallel = "runs a card's jobs as threads of one process; a data-parallel job's ranks are processes "
                        "of their own",
    .describe = describe,
    .start = mode_plain_start,
    .job_env = mode_plain_job_env,
    .run_jobs = run_jobs,
    .stop = mode_plain_stop,
    .report = report,
};
