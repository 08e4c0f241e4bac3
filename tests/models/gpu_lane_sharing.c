/* The weight-gradient lane under sharing (models/core/wgrad_lane.h): in a green-context
 * partition, and in a process whose jobs have fewer hardware work queues than two streams each,
 * the lane stalls the jobs it shares with, so a job leaves it off there and its setup event says
 * so; where it stays in effect (two jobs on streams in one process, which job_host gives 32 work
 * queues) the setup event says that too. What the lane costs or gains under each mode is measured,
 * not asserted here: bench/lane_modes.sh (e.g. `bench/lane_modes.sh build out 'S+S' 300 streams`).
 * Exit 77 without a GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/testutil.h"

static char out[1 << 20], err[1 << 20];

/* Runs two S-shaped jobs (resnet26, 32x32, batch 128) in one job_host, on streams or in green
 * partitions, with SUITE_WGRAD_LANE and CUDA_DEVICE_MAX_CONNECTIONS as given (NULL: unset).
 * Returns the sum of the jobs' second-epoch samples/s. */
static double run_pair(const char *green, const char *lane, const char *queues, int steps) {
    if (lane) setenv("SUITE_WGRAD_LANE", lane, 1);
    else unsetenv("SUITE_WGRAD_LANE");
    if (queues) setenv("CUDA_DEVICE_MAX_CONNECTIONS", queues, 1);
    else unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    char steps_text[16];
    snprintf(steps_text, sizeof steps_text, "%d", steps);
#define S_JOB "--job", "--model", "resnet26", "--data", "synthetic", "--batch", "128", "--image-size", "32", \
              "--classes", "10", "--steps-per-epoch", steps_text, "--epochs", "2", "--workers", "2", "--json"
    int rc = green ? test_run_binary("job_host", out, sizeof out, err, sizeof err, "--green", green, S_JOB, S_JOB, NULL)
                   : test_run_binary("job_host", out, sizeof out, err, sizeof err, S_JOB, S_JOB, NULL);
#undef S_JOB
    if (rc != 0) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    unsetenv("SUITE_WGRAD_LANE");
    unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    double sum = 0;
    int found = 0;
    for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *end = strchr(line, '\n'), *epoch = strstr(line, "\"event\":\"epoch\",\"epoch\":2,");
        const char *rate = strstr(line, "\"samples_per_s\":");
        if (epoch && rate && (!end || (epoch < end && rate < end))) sum += strtod(rate + 16, NULL), found++;
    }
    assert_int_equal(found, 2);
    return sum;
}

/* Each job's setup event, as "asked in_effect why" lines. */
static void expect_lane(const char *how, int asked, int in_effect, const char *why) {
    int setups = 0;
    for (const char *line = out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char text[4096] = "";
        sscanf(line, "%4095[^\n]", text);
        if (!strstr(text, "\"event\":\"setup\"")) continue;
        setups++;
        const char *off = strstr(text, "\"wgrad_lane_off\":");
        printf("%s: setup %s%s%s\n", how, strstr(text, "\"wgrad_lane\":true") ? "lane in effect" : "lane off",
               off ? ", " : "", off ? off : "");
        assert_non_null(strstr(text, asked ? "\"wgrad_lane_asked\":true" : "\"wgrad_lane_asked\":false"));
        assert_non_null(strstr(text, in_effect ? "\"wgrad_lane\":true" : "\"wgrad_lane\":false"));
        if (why) assert_non_null(strstr(text, why));
    }
    assert_int_equal(setups, 2);
}

static void test_setup_event_says_where_the_lane_is(void **state) {
    run_pair(NULL, NULL, NULL, 10);
    expect_lane("streams, 32 work queues", 1, 1, NULL);
    run_pair(NULL, NULL, "2", 10);
    expect_lane("streams, 2 work queues", 1, 0, "hardware work queues");
    run_pair(test_two_green_partitions(), NULL, NULL, 10);
    expect_lane("green", 1, 0, "green-context partition");
    run_pair(NULL, "0", NULL, 10);
    expect_lane("streams, SUITE_WGRAD_LANE=0", 0, 0, NULL);
    run_pair(test_two_green_partitions(), "force", "2", 10);
    expect_lane("green, 2 work queues, forced", 1, 1, NULL);
}

int main(void) {
    test_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_setup_event_says_where_the_lane_is),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
