/* The SM count a job's libraries are told (base/sm_target.h, issue 50): the MPS share's rule, the
 * percentage as a client reads it, and the decision per place (green context, MPS share, whole
 * device, telling off), with the shares the modes hand out: mps's --mps-sm and mig-emulate's
 * instance fractions on the H100's and A100's tables. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "base/sm_target.h"
#include "runner/suite/plan/mig_profiles.h"
#include "tests/support/testutil.h"

static void test_share_rounds_down_to_whole_tpcs(void **state) {
    (void)state;
    assert_int_equal(sm_target_of_share(132, 50), 66);   /* 33 TPCs */
    assert_int_equal(sm_target_of_share(132, 25), 32);   /* 16.5 TPCs down to 16 */
    assert_int_equal(sm_target_of_share(132, 12), 14);   /* 7.92 TPCs down to 7: the driver's 14 on an H200 */
    assert_int_equal(sm_target_of_share(132, 13), 16);   /* 8.58 down to 8 */
    assert_int_equal(sm_target_of_share(132, 1), 2);     /* at least one TPC */
    assert_int_equal(sm_target_of_share(132, 100), 132);
    assert_int_equal(sm_target_of_share(108, 99), 106);  /* 53.46 TPCs down to 53 */
    assert_int_equal(sm_target_of_share(7, 100), 7);     /* never above the device's */
    assert_int_equal(sm_target_of_share(0, 50), 0);
    assert_int_equal(sm_target_of_share(132, 0), 0);
    assert_int_equal(sm_target_of_share(132, 101), 0);
}

static void test_percent_as_a_client_reads_it(void **state) {
    (void)state;
    assert_int_equal(sm_target_percent("50"), 50);
    assert_int_equal(sm_target_percent("100"), 100);
    assert_int_equal(sm_target_percent("12.5"), 12);
    assert_int_equal(sm_target_percent(NULL), 0);
    assert_int_equal(sm_target_percent(""), 0);
    assert_int_equal(sm_target_percent("0"), 0);
    assert_int_equal(sm_target_percent("101"), 0);
    assert_int_equal(sm_target_percent("50%"), 0);
    assert_int_equal(sm_target_percent("abc"), 0);
}

static void test_decision_per_place(void **state) {
    (void)state;
    sm_target_from from;
    /* green: the partition's own count */
    sm_target_place green = {.telling = 1, .green_sms = 56, .device_sms = 132};
    assert_int_equal(sm_target_decide(&green, &from), 56);
    assert_int_equal(from, SM_TARGET_GREEN);
    /* an MPS share whose device reports all its SMs: the driver's count for the context, told */
    sm_target_place mps = {.telling = 1, .mps_client = 1, .percent = 50, .device_sms = 132, .context_sms = 66};
    assert_int_equal(sm_target_decide(&mps, &from), 66);
    assert_int_equal(from, SM_TARGET_MPS);
    mps.context_sms = 68;
    assert_int_equal(sm_target_decide(&mps, &from), 68);
    /* a driver that cannot say the context's count: nothing to go on, nothing told */
    sm_target_place unknown = {.telling = 1, .mps_client = 1, .percent = 25, .device_sms = 132};
    assert_int_equal(sm_target_decide(&unknown, &from), 0);
    assert_int_equal(from, SM_TARGET_WHOLE);
    /* a percentage without MPS, or of 100: the whole device, nothing told */
    sm_target_place plain = {.telling = 1, .mps_client = 0, .percent = 50, .device_sms = 132};
    assert_int_equal(sm_target_decide(&plain, &from), 0);
    assert_int_equal(from, SM_TARGET_WHOLE);
    sm_target_place all = {.telling = 1, .mps_client = 1, .percent = 100, .device_sms = 132, .context_sms = 132};
    assert_int_equal(sm_target_decide(&all, &from), 0);
    assert_int_equal(from, SM_TARGET_WHOLE);
    /* a driver that reports the share as the device's count (as on the H200: 14 of 132 at 12%): the
     * libraries see it there; nothing told, with telling on or off */
    sm_target_place seen = {.telling = 1, .mps_client = 1, .percent = 12, .device_sms = 14, .context_sms = 14};
    assert_int_equal(sm_target_decide(&seen, &from), 0);
    assert_int_equal(from, SM_TARGET_SEEN);
    seen.telling = 0;
    assert_int_equal(sm_target_decide(&seen, &from), 0);
    assert_int_equal(from, SM_TARGET_SEEN);
    /* telling off: nothing, and the setup event says a partition went untold */
    green.telling = 0, mps.telling = 0;
    assert_int_equal(sm_target_decide(&green, &from), 0);
    assert_int_equal(from, SM_TARGET_OFF);
    assert_int_equal(sm_target_decide(&mps, &from), 0);
    assert_int_equal(from, SM_TARGET_OFF);
    plain.telling = 0;
    assert_int_equal(sm_target_decide(&plain, &from), 0);
    assert_int_equal(from, SM_TARGET_WHOLE);
    assert_string_equal(sm_target_from_name(SM_TARGET_GREEN), "green");
    assert_string_equal(sm_target_from_name(SM_TARGET_OFF), "off");
    assert_string_equal(sm_target_from_name((sm_target_from)42), "unknown");
}

/* mig-emulate's share of an instance is the least percent whose share holds its SMs
 * (sm_target_percent_for): each profile of the known tables gets at least its own SMs and at most
 * one TPC more. */
static void test_mig_emulate_shares_on_known_tables(void **state) {
    (void)state;
    const char *gpus[] = {"H100-80GB", "A100-40GB", "H200-141GB"};
    for (size_t g = 0; g < sizeof gpus / sizeof *gpus; g++) {
        const mig_gpu *gpu = mig_known_gpu(gpus[g]);
        assert_non_null(gpu);
        for (int i = 0; i < gpu->profile_count; i++) {
            const mig_profile *p = &gpu->profiles[i];
            if (!p->plannable) continue;
            int percent = sm_target_percent_for(gpu->total_sms, (double)p->sm_count / gpu->total_sms);
            int sms = sm_target_of_share(gpu->total_sms, percent);
            expect_ge(sms, p->sm_count);
            expect_le(sms, p->sm_count + 2);
            if (percent > 1) expect_lt(sm_target_of_share(gpu->total_sms, percent - 1), p->sm_count);
        }
    }
    const mig_gpu *h100 = mig_known_gpu("H100-80GB");
    assert_int_equal(sm_target_percent_for(h100->total_sms, 16.0 / 132), 13); /* 1g: 16 SMs of 132 */
    assert_int_equal(sm_target_of_share(h100->total_sms, 13), 16);
    assert_int_equal(sm_target_percent_for(h100->total_sms, 60.0 / 132), 46); /* 3g: 60 */
    assert_int_equal(sm_target_of_share(h100->total_sms, 46), 60);
    assert_int_equal(sm_target_percent_for(132, 0.001), 1);
    assert_int_equal(sm_target_percent_for(132, 1.5), 100);
    assert_int_equal(sm_target_percent_for(0, 16.0 / 132), 13); /* no count: the fraction rounded up */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_share_rounds_down_to_whole_tpcs),
        cmocka_unit_test(test_percent_as_a_client_reads_it),
        cmocka_unit_test(test_decision_per_place),
        cmocka_unit_test(test_mig_emulate_shares_on_known_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
