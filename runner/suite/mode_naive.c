/* naive: all jobs at once as plain processes on the whole GPU; the driver time-slices them.
 * Its plain-process parts (kept off MPS, given their GPU) are shared with serial and mig. */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "results/results.h"
#include "runner/suite/suite.h"

static void no_mps_dir(const mode_run *r, char *out, size_t size) { snprintf(out, size, "%s/no-mps", r->dir); }

int mode_plain_start(mode_run *r, char *err, size_t err_size) {
    (void)err, (void)err_size;
    char dir[PATH_MAX + 16], why[1024];
    no_mps_dir(r, dir, sizeof dir);
    if (results_make_dirs(dir, why, sizeof why) != 0) fprintf(stderr, "warning: %s\n", why);
    return 0;
}

void mode_plain_stop(mode_run *r) {
    char dir[PATH_MAX + 16];
    no_mps_dir(r, dir, sizeof dir);
    rmdir(dir); /* it only kept the jobs off MPS; empty */
}

void mode_plain_env(const mode_run *r, const char *visible, job_env *env) {
    char dir[PATH_MAX + 16];
    no_mps_dir(r, dir, sizeof dir);
    /* an empty private pipe folder keeps them off any MPS daemon that may run */
    job_env_set(env, "CUDA_MPS_PIPE_DIRECTORY", "%s", dir);
    job_env_set(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", NULL);
    job_env_set(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", NULL);
    job_env_set(env, "CUDA_VISIBLE_DEVICES", "%s", visible);
}

void mode_plain_job_env(const mode_run *r, int job, job_env *env) {
    (void)job;
    mode_plain_env(r, r->ctx->gpu.visible, env);
}

static void describe(const suite_ctx *c, FILE *out, cJSON *json) {
    if (!json) fprintf(out, "naive: %d processes at once on GPU %s\n", c->count, c->gpu.visible);
}

const suite_mode mode_naive = {
    .name = "naive",
    .help = "all jobs at once as separate processes; the driver time-slices them",
    .flags = MODE_IN_ALL,
    .describe = describe,
    .start = mode_plain_start,
    .job_env = mode_plain_job_env,
    .stop = mode_plain_stop,
};
