/* naive: all jobs at once as plain processes on the whole GPU; the driver time-slices them.
 * Its plain-process parts (kept off MPS, given their GPU) are shared with serial and mig. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runner/suite/gpu/mps.h"
#include "runner/suite/modes/mode_run.h"

/* <run>/no-mps, or where that is too long for MPS's sockets (mps_pipe_dir_fits) a folder in /tmp
 * named after the run folder, so that start, each job and stop find the same one. */
static void no_mps_dir(const mode_run *r, char *out, size_t size) {
    snprintf(out, size, "%s/no-mps", r->dir);
    if (mps_pipe_dir_fits(out)) return;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *p = r->dir; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    snprintf(out, size, "/tmp/suite-no-mps-%u-%016llx", (unsigned)getuid(), (unsigned long long)h);
}

int mode_plain_start(mode_run *r, char *err, size_t err_size) {
    char dir[PATH_MAX + 16];
    no_mps_dir(r, dir, sizeof dir);
    struct stat st;
    if (mkdir(dir, 0700) != 0 && !(errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
                                   st.st_uid == getuid())) {
        snprintf(err, err_size, "cannot make the empty MPS pipe folder %s that keeps the jobs off MPS: %s", dir,
                 errno == EEXIST ? "it exists and is not a folder of ours" : strerror(errno));
        return -1;
    }
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
    .flags = MODE_IN_ALL | MODE_PLAIN | MODE_IN_STUDY | MODE_TIME_SLICED,
    .describe = describe,
    .start = mode_plain_start,
    .job_env = mode_plain_job_env,
    .stop = mode_plain_stop,
};
