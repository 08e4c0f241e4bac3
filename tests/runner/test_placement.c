/* Placement of a mix's jobs over GPUs: compute balanced, memory respected, data-parallel jobs on
 * distinct GPUs, the packed fallback, sequential modes, refusals with the numbers, --gpus parsing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "runner/suite/plan/placement.h"
#include "tests/support/testutil.h"

#define G ((double)(1ull << 30))

static placement_gpu gpus4[] = {{0, 80 * G}, {1, 80 * G}, {2, 80 * G}, {3, 80 * G}};

static void test_balances_compute(void **state) {
    (void)state;
    placement_job jobs[] = {{1 * G, 3, 1}, {1 * G, 7, 1}, {1 * G, 4, 1}, {1 * G, 1, 1}, {1 * G, 5, 1}};
    placement p;
    char err[512];
    assert_int_equal(placement_plan(gpus4, 2, jobs, 5, 0, &p, err, sizeof err), 0);
    assert_string_equal(p.method, "balanced");
    expect_lt(fabs(p.demand[0] - 10), 1e-9); expect_lt(fabs(p.demand[1] - 10), 1e-9);
    assert_int_equal(p.gpus_of[1][0], 0); /* heaviest first, on the first GPU */
    assert_int_equal(p.gpus_of[4][0], 1);
    /* four equal jobs over four GPUs: one each */
    placement_job same[] = {{2 * G, 5, 1}, {2 * G, 5, 1}, {2 * G, 5, 1}, {2 * G, 5, 1}};
    assert_int_equal(placement_plan(gpus4, 4, same, 4, 0, &p, err, sizeof err), 0);
    for (int g = 0; g < 4; g++) assert_int_equal(p.jobs_on[g], 1);
    for (int j = 0; j < 4; j++) assert_int_equal(p.gpus_of[j][0], j); /* ties: mix order, lowest GPU */
}

static void test_unknown_demand_weighs_footprint(void **state) {
    (void)state;
    placement_job jobs[] = {{30 * G, 0, 1}, {10 * G, 100, 1}, {10 * G, NAN, 1}, {10 * G, 0, 1}};
    placement p;
    char err[512];
    assert_int_equal(placement_plan(gpus4, 2, jobs, 4, 0, &p, err, sizeof err), 0);
    expect_lt(fabs(p.memory[0] - 30 * G), 1); expect_lt(fabs(p.memory[1] - 30 * G), 1);
}

static void test_data_parallel_spans_distinct_gpus(void **state) {
    (void)state;
    placement_job jobs[] = {{20 * G, 10, 2}, {5 * G, 1, 1}, {5 * G, 1, 1}};
    placement p;
    char err[512];
    assert_int_equal(placement_plan(gpus4, 3, jobs, 3, 0, &p, err, sizeof err), 0);
    assert_int_equal(p.span[0], 2);
    assert_int_not_equal(p.gpus_of[0][0], p.gpus_of[0][1]);
    assert_true(placement_uses(&p, 0, p.gpus_of[0][1]));
    /* the third GPU, free of the replicas, takes the small jobs */
    int free_slot = 3 - p.gpus_of[0][0] - p.gpus_of[0][1];
    assert_int_equal(p.jobs_on[free_slot], 2);
    placement_job too_wide[] = {{1 * G, 1, 3}};
    assert_int_equal(placement_plan(gpus4, 2, too_wide, 1, 0, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "data-parallel over 3 GPUs but --gpus gives 2"));
}

static void test_packed_fallback(void **state) {
    (void)state;
    placement_gpu small[] = {{0, 10 * G}, {1, 10 * G}};
    /* demand first puts A and B apart and leaves no room for C; largest first packs A+B */
    placement_job jobs[] = {{5 * G, 5, 1}, {5 * G, 5, 1}, {10 * G, 1, 1}};
    placement p;
    char err[512];
    assert_int_equal(placement_plan(small, 2, jobs, 3, 0, &p, err, sizeof err), 0);
    assert_string_equal(p.method, "packed");
    assert_int_equal(p.gpus_of[2][0], 0);
    assert_int_equal(p.jobs_on[1], 2);
}

static void test_sequential_needs_the_largest(void **state) {
    (void)state;
    placement_gpu one[] = {{5, 10 * G}};
    placement_job jobs[] = {{8 * G, 1, 1}, {8 * G, 1, 1}, {8 * G, 1, 1}};
    placement p;
    char err[512];
    assert_int_equal(placement_plan(one, 1, jobs, 3, 1, &p, err, sizeof err), 0);
    expect_lt(fabs(p.memory[0] - 8 * G), 1);
    assert_int_equal(placement_plan(one, 1, jobs, 3, 0, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "does not fit"));
    assert_non_null(strstr(err, "GPU 5 holds 8.00 GiB of 10.00 GiB (1 job)"));
}

static void test_refusal(void **state) {
    (void)state;
    placement_gpu two[] = {{0, 40 * G}, {1, 40 * G}};
    placement_job jobs[] = {{30 * G, 3, 1}, {30 * G, 2, 1}, {30 * G, 1, 1}};
    placement p;
    char err[1024];
    assert_int_equal(placement_plan(two, 2, jobs, 3, 0, &p, err, sizeof err), -1);
    assert_non_null(strstr(err, "job 2 (30.00 GiB on each of 1 GPU) does not fit"));
    /* unknown memory is not checked */
    placement_gpu unknown[] = {{0, NAN}};
    assert_int_equal(placement_plan(unknown, 1, jobs, 3, 0, &p, err, sizeof err), 0);
    assert_int_equal(placement_plan(two, 0, jobs, 3, 0, &p, err, sizeof err), -1);
}

static void test_parse_gpus(void **state) {
    (void)state;
    int out[8];
    char err[256];
    assert_int_equal(placement_parse_gpus("0,1,2,3", out, 8, err, sizeof err), 4);
    assert_int_equal(out[3], 3);
    assert_int_equal(placement_parse_gpus("7", out, 8, err, sizeof err), 1);
    assert_int_equal(out[0], 7);
    const char *bad[] = {"", "a", "1,", ",1", "1,,2", "0,0", "-1", "1024", "1 2", "0,1,2,3,4,5,6,7,8"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        assert_int_equal(placement_parse_gpus(bad[i], out, 8, err, sizeof err), -1);
        assert_non_null(strstr(err, "--gpus"));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_balances_compute),         cmocka_unit_test(test_unknown_demand_weighs_footprint),
        cmocka_unit_test(test_data_parallel_spans_distinct_gpus), cmocka_unit_test(test_packed_fallback),
        cmocka_unit_test(test_sequential_needs_the_largest), cmocka_unit_test(test_refusal),
        cmocka_unit_test(test_parse_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
