/* The job host on the GPU (runner/train/job_host.c, models/core/context.c): a green context's kernels
 * run on no more SMs than it holds (each block records %smid) and two partitions share none;
 * two jobs in one process train to the same losses as each alone (deterministic seeds), on
 * streams and in green contexts; a job's CUDA fault is reported for it, and for the job sharing
 * its context as collateral, without taking the host down. Exit 77 without a GPU. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/smid.h"
#include "kernels/check.h"
#include "models/core/context.h"
#include "tests/testutil.h"

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

/* Job 0 writes out of bounds at its third step; job 1 trains on. */
static void fault_case(const char *green) {
    const char *args[64];
    int n = 0;
    if (green) args[n++] = "--green", args[n++] = green;
    const char *job0[] = {"--job", "--model", "resnet26", "--data", "synthetic", "--batch", "32", "--steps-per-epoch",
                          "20", "--epochs", "2", "--inject-fault", "illegal-address@3", "--json", NULL};
    const char *job1[] = {"--job", "--model", "resnet26", "--data", "synthetic", "--batch", "32", "--steps-per-epoch",
                          "200", "--epochs", "2", "--json", NULL};
    for (int i = 0; job0[i]; i++) args[n++] = job0[i];
    for (int i = 0; job1[i]; i++) args[n++] = job1[i];
    args[n] = NULL;
    char *argv[66] = {(char *)test_binary("job_host")};
    for (int i = 0; i <= n; i++) argv[i + 1] = (char *)args[i];
    int rc = test_run(argv, out, sizeof out, err, sizeof err);
    printf("%s: job_host exit %d\n", green ? "green" : "streams", rc);
    assert_int_equal(rc, 1); /* a job failed; the host itself ended normally */
    const char *e0 = strstr(out, "{\"job\":0,\"event\":\"error\"");
    assert_non_null(e0);
    assert_non_null(strstr(out, "{\"job\":0,\"event\":\"exit\",\"code\":1"));
    assert_non_null(strstr(out, "{\"job\":1,\"event\":\"exit\""));
    const char *collateral = strstr(out, "{\"job\":1,\"event\":\"collateral\",\"origin\":0");
    const char *ok1 = strstr(out, "{\"job\":1,\"event\":\"exit\",\"code\":0");
    /* both failing in one poisoned context: which one saw the fault first is a race, either way
     * the two failures are reported as one */
    const char *reversed = strstr(out, "{\"job\":0,\"event\":\"collateral\",\"origin\":1");
    char line[400] = "";
    sscanf(e0, "%399[^\n]", line);
    printf("%s: job 0: %s\n%s: job 1: %s\n", green ? "green" : "streams", line, green ? "green" : "streams",
           collateral ? "failed, reported as collateral of job 0's fault"
           : ok1      ? "finished (not poisoned)"
           : reversed ? "failed first in the poisoned context (job 0 reported as its collateral)"
                      : "failed on its own");
    assert_true(collateral || ok1 || reversed);
}

static void test_fault_is_reported(void **state) {
    fault_case(NULL);
    fault_case(test_two_green_partitions());
}

int main(void) {
    test_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partitions_hold_their_sms),
        cmocka_unit_test(test_same_losses_as_alone),
        cmocka_unit_test(test_fault_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
