/* The loader's thread count when several jobs share the machine: --workers wins; otherwise the
 * CPU cores divided by SUITE_CONCURRENT_JOBS (run_suite's count of jobs running at once), at
 * least 1 and at most 16, and a missing or nonsensical count means one job. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <unistd.h>

#include "runner/train/train_host.h"

static int expected(long cpus, long jobs) {
    long w = cpus / jobs;
    return w < 1 ? 1 : w > 16 ? 16 : (int)w;
}

static void test_workers(void **state) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus < 1) cpus = 1;
    train_options o = {0};
    o.workers = 5;
    setenv("SUITE_CONCURRENT_JOBS", "7", 1);
    assert_int_equal(train_loader_workers(&o), 5);
    o.workers = 0;
    assert_int_equal(train_loader_workers(&o), expected(cpus, 7));
    setenv("SUITE_CONCURRENT_JOBS", "1000", 1);
    assert_int_equal(train_loader_workers(&o), 1);
    setenv("SUITE_CONCURRENT_JOBS", "0", 1);
    assert_int_equal(train_loader_workers(&o), expected(cpus, 1));
    setenv("SUITE_CONCURRENT_JOBS", "many", 1);
    assert_int_equal(train_loader_workers(&o), expected(cpus, 1));
    unsetenv("SUITE_CONCURRENT_JOBS");
    assert_int_equal(train_loader_workers(&o), expected(cpus, 1));
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_workers)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
