/* The job host on the GPU (runner/train/job_host.c, models/core/context.c): a green context's kernels
 * run on no more SMs than it holds (each block records %smid) and two partitions share none;
 * two jobs in one process train to the same losses as each alone (deterministic seeds), on
 * streams and in green contexts; a job's CUDA fault is reported for it, and for the other job,
 * which trains on through it and fails, as collateral of that fault, without taking the host down.
 * Exit 77 without a GPU. */
#define _GNU_SOURCE /* environ */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "kernels/smid.h"
#include "kernels/check.h"
#include "models/core/context.h"
#include "tests/support/testutil.h"

#define BLOCKS 4096
#define MAX_EPOCHS 8

static char out[1 << 20], err[1 << 20];

/* Distinct SMs the stream's blocks ran on; marks them in seen (256 entries). */
static int sms_used(cudaStream_t stream, unsigned char *seen) {
    int *d, h[BLOCKS];
    CHECK_CUDA(cudaMalloc((void **)&d, sizeof h));
    CHECK_CUDA(smid_record(d, BLOCKS, 20000, stream));
    CHECK_CUDA(cudaStreamSynchronize(stream));
    CHECK_CUDA(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(d));
    int distinct = 0;
    memset(seen, 0, 256);
    for (int b = 0; b < BLOCKS; b++) {
        expect_ge(h[b], 0); expect_lt(h[b], 256);
        distinct += !seen[h[b]];
        seen[h[b]] = 1;
    }
    return distinct;
}

static void test_partitions_hold_their_sms(void **state) {
    char e[512];
    int device_sms, unit, groups;
    assert_int_equal(context_sm_granularity(0, &device_sms, &unit, &groups, e, sizeof e), 0);
    printf("device: %d SMs, green-context groups of %d SMs, %d groups\n", device_sms, unit, groups);
    unsigned char whole[256], a[256], b[256];
    job_context ctx;
    assert_int_equal(context_init(&ctx, 0, 0, 0), CONTEXT_OK);
    int all = sms_used(ctx.stream, whole);
    context_free(&ctx);
    printf("whole device: blocks ran on %d SMs\n", all);
    expect_gt(all, device_sms / 2); /* the probe itself spreads */
    context_partitions parts;
    int want[2] = {unit * 2, unit * 4};
    assert_int_equal(context_partitions_create(&parts, 0, want, 2, e, sizeof e), 0);
    unsigned char *seen[2] = {a, b};
    for (int p = 0; p < 2; p++) {
        context_place place = context_partition_place(&parts, p);
        assert_int_equal(place.sm_count, want[p]);
        assert_int_equal(context_init_at(&ctx, &place, 0, 0), CONTEXT_OK);
        int used = sms_used(ctx.stream, seen[p]);
        context_free(&ctx);
        printf("partition %d of %d SMs: blocks ran on %d SMs\n", p, want[p], used);
        expect_le(used, want[p]);
        expect_ge(used, want[p] / 2);
    }
    for (int s = 0; s < 256; s++) assert_false(a[s] && b[s]); /* disjoint */
    context_partitions_free(&parts);
}

/* The "loss" of each epoch event of job `job` (-1: train's own output, no "job" key). */
static int losses_of(const char *text, int job, double *loss) {
    int n = 0;
    char key[32];
    snprintf(key, sizeof key, "{\"job\":%d,", job);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (job >= 0 && strncmp(line, key, strlen(key)) != 0) continue;
        const char *end = strchr(line, '\n');
        const char *ev = strstr(line, "\"event\":\"epoch\"");
        const char *l = strstr(line, "\"loss\":");
        if (!ev || !l || (end && (ev > end || l > end)) || n == MAX_EPOCHS) continue;
        loss[n++] = strtod(l + 7, NULL);
    }
    return n;
}

/* Two steps an epoch: the first epoch's loss is the initial weights' on the first batch, the
 * second's after one update. Which convolution algorithm is fastest is measured, and may differ
 * between two runs (alone or not), so losses agree to rounding, not bit for bit; a job reading
 * another's data or weights would be off by far more. */
#define JOB_ARGS(seed) "--model", "resnet26", "--data", "synthetic", "--batch", "32", "--image-size", "32", \
                       "--classes", "10", "--steps-per-epoch", "2", "--epochs", "2", "--seed", seed,     \
                       "--lr", "0.01", "--workers", "2", "--json"

static void compare(const char *how, const double *alone, int n_alone, const double *in_host, int n_host) {
    assert_int_equal(n_alone, 2);
    assert_int_equal(n_host, 2);
    for (int k = 0; k < 2; k++) {
        double rel = fabs(in_host[k] - alone[k]) / fabs(alone[k]);
        printf("%s epoch %d: alone %.9g, in the host %.9g (relative difference %.2e%s)\n", how, k + 1, alone[k],
               in_host[k], rel, rel == 0 ? ", identical" : "");
        expect_le(rel, 1e-3);
    }
}

static void test_same_losses_as_alone(void **state) {
    double alone[2][MAX_EPOCHS], host[2][MAX_EPOCHS];
    int n_alone[2];
    const char *seeds[2] = {"7", "9"};
    for (int j = 0; j < 2; j++) {
        int rc = test_run_binary("train", out, sizeof out, err, sizeof err, JOB_ARGS(seeds[j]), NULL);
        if (rc != 0) fprintf(stderr, "%s\n", err);
        assert_int_equal(rc, 0);
        n_alone[j] = losses_of(out, -1, alone[j]);
    }
    int rc = test_run_binary("job_host", out, sizeof out, err, sizeof err, "--job", JOB_ARGS("7"), "--job",
                             JOB_ARGS("9"), NULL);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    for (int j = 0; j < 2; j++) {
        int n = losses_of(out, j, host[j]);
        compare(j ? "streams, job 1" : "streams, job 0", alone[j], n_alone[j], host[j], n);
    }
    rc = test_run_binary("job_host", out, sizeof out, err, sizeof err, "--green", test_two_green_partitions(), "--job", JOB_ARGS("7"),
                         "--job", JOB_ARGS("9"), NULL);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"green\":true"));
    for (int j = 0; j < 2; j++) {
        int n = losses_of(out, j, host[j]);
        compare(j ? "green, job 1" : "green, job 0", alone[j], n_alone[j], host[j], n);
    }
}

static int is(const cJSON *e, int job, const char *name) {
    const cJSON *j = cJSON_GetObjectItem(e, "job"), *n = cJSON_GetObjectItem(e, "event");
    return cJSON_IsNumber(j) && j->valueint == job && cJSON_IsString(n) && !strcmp(n->valuestring, name);
}

/* The first event of job `job` named `name` among the host's events, or NULL. */
static const cJSON *event_of(const cJSON *events, int job, const char *name) {
    for (const cJSON *e = events->child; e; e = e->next)
        if (is(e, job, name)) return e;
    return NULL;
}

/* The next event on the host's stdout, appended to events; NULL at the end of its output. */
static const cJSON *next_event(FILE *from, cJSON *events) {
    static char *line;
    static size_t size;
    while (getline(&line, &size, from) > 0) {
        cJSON *e = cJSON_Parse(line);
        if (!e) continue; /* not an event */
        cJSON_AddItemToArray(events, e);
        return e;
    }
    return NULL;
}

/* Job 0 writes out of bounds at its third step. Job 1 trains on after its warm-up until "stop"
 * (the window protocol), and the test ends its stdin only once job 0 has reported its exit: so job
 * 1 is certainly training after the fault, whatever the two jobs' pace, and its next CUDA call
 * meets the sticky error. The host is one fault domain, green contexts included (job_host.c's
 * origin_of relies on it; this test is what shows it), so job 1 must fail too, reported as
 * collateral of job 0 (the job that injected the fault is the origin, not whichever saw it first),
 * and the host must end normally with exit status 1. */
static void fault_case(const char *green) {
    const char *how = green ? "green" : "streams";
    const char *argv[64] = {test_binary("job_host")};
    int n = 1;
    if (green) argv[n++] = "--green", argv[n++] = green;
    const char *jobs[] = {"--job", "--model", "resnet26", "--data", "synthetic", "--batch", "32", "--steps-per-epoch",
                          "20", "--epochs", "2", "--inject-fault", "illegal-address@3", "--wait-go", "--json",
                          "--job", "--model", "resnet26", "--data", "synthetic", "--batch", "32", "--steps-per-epoch",
                          "20", "--epochs", "1", "--wait-go", "--window-protocol", "--json", NULL};
    for (int i = 0; jobs[i]; i++) argv[n++] = jobs[i];
    argv[n] = NULL;
    int in_pipe[2], out_pipe[2];
    assert_int_equal(pipe(in_pipe), 0);
    assert_int_equal(pipe(out_pipe), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_addclose(&actions, in_pipe[1]);
    posix_spawn_file_actions_addclose(&actions, out_pipe[0]);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, argv[0], &actions, NULL, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(in_pipe[0]), close(out_pipe[1]);
    FILE *from = fdopen(out_pipe[0], "r");
    assert_non_null(from);
    cJSON *events = cJSON_CreateArray();
    int ready = 0, stdin_open = 1;
    for (const cJSON *e; (e = next_event(from, events));) {
        if ((is(e, 0, "ready") || is(e, 1, "ready")) && ++ready == 2)
            assert_int_equal(write(in_pipe[1], "go\n", 3), 3); /* both set up: the start barrier */
        if (stdin_open && is(e, 0, "exit")) close(in_pipe[1]), stdin_open = 0; /* "stop" for job 1 */
    }
    if (stdin_open) close(in_pipe[1]);
    fclose(from);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    const cJSON *error0 = event_of(events, 0, "error"), *exit0 = event_of(events, 0, "exit"), *exit1 = event_of(events, 1, "exit");
    const cJSON *collateral1 = event_of(events, 1, "collateral");
    char *text0 = exit0 ? cJSON_PrintUnformatted(exit0) : NULL, *text1 = exit1 ? cJSON_PrintUnformatted(exit1) : NULL;
    printf("%s: job_host exit %d\n  job 0: %s\n  job 1: %s\n  job 1 collateral: %s\n", how, rc, text0 ? text0 : "(no exit)",
           text1 ? text1 : "(no exit)", collateral1 ? "yes" : "no");
    free(text0), free(text1);
    assert_int_equal(rc, 1); /* a job failed; the host itself ended normally */
    assert_int_equal(ready, 2);
    /* job 0: its own fault, reported by itself */
    assert_non_null(error0);
    const cJSON *message = cJSON_GetObjectItem(error0, "message");
    assert_true(cJSON_IsString(message));
    assert_non_null(strstr(message->valuestring, "injected fault illegal-address at step 3"));
    assert_non_null(exit0);
    expect_eq(cJSON_GetObjectItem(exit0, "code")->valuedouble, 1);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(exit0, "poisoned")));
    assert_null(event_of(events, 0, "collateral"));
    /* job 1: failed after the fault, and reported as its collateral */
    assert_non_null(exit1);
    expect_eq(cJSON_GetObjectItem(exit1, "code")->valuedouble, 1);
    assert_non_null(collateral1);
    expect_eq(cJSON_GetObjectItem(collateral1, "origin")->valuedouble, 0);
    const cJSON *fault = cJSON_GetObjectItem(collateral1, "fault");
    assert_true(cJSON_IsString(fault));
    assert_non_null(strstr(fault->valuestring, "injected fault illegal-address at step 3"));
    cJSON_Delete(events);
}

static void test_fault_is_reported(void **state) {
    fault_case(NULL);
    fault_case(test_two_green_partitions());
}

int main(void) {
    test_require_gpu();
    signal(SIGPIPE, SIG_IGN); /* a job host gone before "go" fails the write, not the test program */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partitions_hold_their_sms),
        cmocka_unit_test(test_same_losses_as_alone),
        cmocka_unit_test(test_fault_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
