/* The spread over repeats (base/spread.h): median, min and max with NaNs left out, the
 * "median [min-max]" form, and the ranking rule (ranges that do not overlap, two repeats at least). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "base/spread.h"
#include "tests/support/testutil.h"

static void test_median_min_max(void **state) {
    double odd[] = {1.5, 1.2, 1.9};
    spread s = spread_of(odd, 3);
    assert_int_equal(s.n, 3);
    expect_eq(s.median, 1.5); expect_eq(s.min, 1.2); expect_eq(s.max, 1.9);
    double even[] = {4, 1, 3, 2};
    s = spread_of(even, 4);
    expect_eq(s.median, 2.5); expect_eq(s.min, 1); expect_eq(s.max, 4);
}

static void test_non_finite_left_out(void **state) {
    double v[] = {NAN, 2, INFINITY, 1};
    spread s = spread_of(v, 4);
    assert_int_equal(s.n, 2);
    expect_eq(s.median, 1.5);
    s = spread_of(v, 1);
    assert_int_equal(s.n, 0);
    assert_true(isnan(s.median) && isnan(s.min) && isnan(s.max));
    s = spread_of(NULL, 0);
    assert_int_equal(s.n, 0);
}

static void test_format(void **state) {
    char out[64];
    double v[] = {1.38, 1.47, 1.42};
    spread_format(out, sizeof out, spread_of(v, 3), "%.2f");
    assert_string_equal(out, "1.42 [1.38-1.47]");
    spread_format(out, sizeof out, spread_of(v, 1), "%.2f");
    assert_string_equal(out, "1.38");
    spread_format(out, sizeof out, spread_of(v, 0), "%.2f");
    assert_string_equal(out, "-");
}

static void test_rank(void **state) {
    double a[] = {1.50, 1.55, 1.52}, b[] = {1.40, 1.45, 1.42}, c[] = {1.44, 1.60};
    spread sa = spread_of(a, 3), sb = spread_of(b, 3), sc = spread_of(c, 2);
    assert_int_equal(spread_rank(sa, sb), 1);
    assert_int_equal(spread_rank(sb, sa), -1);
    assert_string_equal(spread_rank_sign(spread_rank(sa, sb)), ">");
    assert_int_equal(spread_rank(sa, sc), 0);   /* overlapping ranges */
    assert_string_equal(spread_rank_sign(0), "~");
    /* one run each ranks nothing, however far apart */
    assert_int_equal(spread_rank(spread_of(a, 1), spread_of(b, 1)), 0);
    assert_int_equal(spread_rank(sa, spread_of(b, 1)), 0);
}

static void test_json(void **state) {
    double v[] = {2, NAN};
    cJSON *o = spread_json(spread_of(v, 2));
    assert_true(cJSON_GetObjectItem(o, "median")->valuedouble == 2);
    assert_int_equal(cJSON_GetObjectItem(o, "n")->valueint, 1);
    cJSON_Delete(o);
    o = spread_json(spread_of(v, 0));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "median")));
    cJSON_Delete(o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_min_max), cmocka_unit_test(test_non_finite_left_out),
        cmocka_unit_test(test_format), cmocka_unit_test(test_rank), cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
