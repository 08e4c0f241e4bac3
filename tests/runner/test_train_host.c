/* The loader's thread count when several jobs share the machine: --workers wins; otherwise the
 * CPU cores divided by SUITE_CONCURRENT_JOBS (run_suite's count of jobs running at once), at
 * least 1 and at most 16, and a missing or nonsensical count means one job. The expected counts
 * are worked out by hand from that rule for machines of chosen sizes, not from the machine this
 * runs on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "runner/train/train_host.h"
#include "tests/support/testutil.h"

static void test_the_rule(void **state) {
    static const struct {
        int workers;
        long cpus;
        const char *jobs; /* SUITE_CONCURRENT_JOBS; NULL: unset */
        int expected;
    } cases[] = {
        {5, 64, "7", 5},       /* --workers wins, whatever the share */
        {5, 1, "1000", 5},
        {0, 64, "7", 9},       /* 64 / 7 = 9.14: whole threads */
        {0, 12, "3", 4},
        {0, 12, "4", 3},
        {0, 2, "7", 1},        /* 2 / 7 = 0.29: at least 1 */
        {0, 12, "1000", 1},
        {0, 64, NULL, 16},     /* one job: the cores, at most 16 */
        {0, 12, NULL, 12},
        {0, 17, "1", 16},
        {0, 40, "2", 16},      /* 20 each: at most 16 */
        {0, 48, "3", 16},
        {0, 48, "4", 12},
        {0, 12, "0", 12},      /* nonsensical counts: one job */
        {0, 12, "-4", 12},
        {0, 12, "many", 12},
        {0, 12, "", 12},
        {0, 0, "2", 1},        /* no count of the cores (sysconf failed): one core */
        {0, -1, NULL, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int got = train_loader_workers_for(cases[i].workers, cases[i].cpus, cases[i].jobs);
        if (got != cases[i].expected)
            printf("--workers %d, %ld CPUs, SUITE_CONCURRENT_JOBS %s\n", cases[i].workers, cases[i].cpus,
                   cases[i].jobs ? cases[i].jobs : "unset");
        expect_eq(got, cases[i].expected);
    }
}

/* The option and the environment reach the rule: --workers as given, and a share of under one
 * core (on any machine of fewer than 4096 cores: the most the knob takes) as 1. */
static void test_options_and_environment_reach_it(void **state) {
    train_options o = {0};
    o.workers = 5;
    setenv("SUITE_CONCURRENT_JOBS", "4096", 1);
    expect_eq(train_loader_workers(&o), 5);
    o.workers = 0;
    expect_eq(train_loader_workers(&o), 1);
    unsetenv("SUITE_CONCURRENT_JOBS");
    int alone = train_loader_workers(&o);
    expect_ge(alone, 1);
    expect_le(alone, 16);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_the_rule),
                                       cmocka_unit_test(test_options_and_environment_reach_it)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
