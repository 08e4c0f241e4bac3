/* Green-context partition planning (runner/suite/plan/green_plan.c) and the job host's command line
 * (runner/suite/jobs/host_group.c), on the host: SM counts rounded to the device's groups, shares by
 * compute demand over the whole GPU, every bad share refused with a message naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "runner/suite/plan/green_plan.h"
#include "runner/suite/jobs/host_group.h"

static const green_gpu H100 = {132, 8, 16};
static const green_gpu A100 = {108, 4, 27};

static void test_sm_counts_round_to_groups(void **state) {
    green_plan p;
    char err[512];
    int sm[3] = {60, 30, 30};
    green_request req = {3, sm, NULL, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), 0);
    assert_int_equal(p.sm[0], 64); /* 60 is 7.5 groups: the nearest, halves up */
    assert_int_equal(p.sm[1], 32);
    assert_int_equal(p.sm[2], 32);
    assert_string_equal(p.basis, "--green-sm");
    int exact[2] = {64, 64};
    req = (green_request){2, exact, NULL, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), 0);
    assert_int_equal(p.sm[0] + p.sm[1], 128);
    int ampere[2] = {50, 50};
    req = (green_request){2, ampere, NULL, NULL};
    assert_int_equal(green_plan_make(&p, &A100, &req, err, sizeof err), 0);
    assert_int_equal(p.sm[0], 52); /* 12.5 groups of 4 -> 13 */
    int too_many[2] = {54, 54}; /* 2 x 14 groups: the A100's 108 SMs make 27 */
    req.sm = too_many;
    assert_int_equal(green_plan_make(&p, &A100, &req, err, sizeof err), -1);
}

static void test_shares(void **state) {
    green_plan p;
    char err[512];
    double share[3] = {50, 25, 25};
    green_request req = {3, NULL, share, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), 0);
    assert_int_equal(p.sm[0], 64);
    assert_int_equal(p.sm[1], 32);
    assert_int_equal(p.sm[2], 32);
    double thirds[3] = {33.3, 33.3, 33.3};
    req.share = thirds;
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), 0);
    assert_int_equal(p.sm[0], 40); /* 5.3 groups: rounded down, so the sum never passes the GPU */
}

static void test_demand_fills_the_gpu(void **state) {
    green_plan p;
    char err[512];
    double demand[3] = {1.0, 2.0, 2.0}; /* S+M+M: M does twice S's work */
    green_request req = {3, NULL, NULL, demand};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), 0);
    assert_string_equal(p.basis, "compute demand");
    assert_int_equal(p.sm[0], 32); /* ideal 3.2, 6.4, 6.4 groups: the last group goes to S, since */
    assert_int_equal(p.sm[1], 48); /* the two Ms can only grow together */
    assert_int_equal(p.sm[2], 48);
    assert_int_equal(p.sm[0] % 8, 0);
    assert_float_equal(p.demand_share[0], 0.2, 1e-9);
    /* a tiny demand still gets the minimum partition */
    double skewed[2] = {1.0, 1000.0};
    req = (green_request){2, NULL, NULL, skewed};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), 0);
    assert_int_equal(p.sm[0], 8);
    assert_int_equal(p.sm[1], 120);
    /* unknown demand: equal shares */
    double unknown[2] = {1.0, 0.0};
    req = (green_request){2, NULL, NULL, unknown};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), 0);
    assert_string_equal(p.basis, "equal shares");
    assert_int_equal(p.sm[0], 64);
    /* seven equal jobs on sixteen groups: two groups each, two left unused rather than unequal */
    req = (green_request){7, NULL, NULL, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), 0);
    for (int i = 0; i < 7; i++) assert_int_equal(p.sm[i], 16);
}

static void test_bad_shares_are_refused(void **state) {
    green_plan p;
    char err[512];
    double over[3] = {60, 50, 10};
    green_request req = {3, NULL, over, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), -1);
    assert_non_null(strstr(err, "120%, more than 100%"));
    double tiny[2] = {3, 50}; /* 3% of 128 SMs is less than a group */
    req = (green_request){2, NULL, tiny, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), -1);
    assert_non_null(strstr(err, "minimum partition of 8 SMs"));
    int few[2] = {4, 64};
    req = (green_request){2, few, NULL, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), -1);
    assert_non_null(strstr(err, "job 0's 4 SMs are fewer than the minimum partition"));
    int many[2] = {96, 64};
    req = (green_request){2, many, NULL, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), -1);
    assert_non_null(strstr(err, "take 160 SMs"));
    req = (green_request){17, NULL, NULL, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), -1);
    assert_non_null(strstr(err, "17 jobs but the GPU's 132 SMs make only 16 partitions"));
}

static void test_parse_lists(void **state) {
    int sm[4];
    double share[4];
    char err[512];
    assert_int_equal(green_parse_sms("64", 3, sm, err, sizeof err), 0);
    assert_int_equal(sm[2], 64); /* one value: every job */
    assert_int_equal(green_parse_sms("64,32,32", 3, sm, err, sizeof err), 0);
    assert_int_equal(sm[1], 32);
    assert_int_equal(green_parse_sms("64,32", 3, sm, err, sizeof err), -1);
    assert_non_null(strstr(err, "2 entries for 3 job(s)"));
    assert_int_equal(green_parse_sms("64,x", 2, sm, err, sizeof err), -1);
    assert_string_equal(err, "--green-sm: entry 2 of '64,x': expected a whole number from 1 to 100000, got 'x'");
    assert_int_equal(green_parse_sms("6.5", 1, sm, err, sizeof err), -1);
    assert_non_null(strstr(err, "(not a whole number)"));
    assert_int_equal(green_parse_sms("64,,64", 3, sm, err, sizeof err), -1);
    assert_non_null(strstr(err, "entry 2 is empty"));
    assert_int_equal(green_parse_sms("0x40", 1, sm, err, sizeof err), -1);
    assert_non_null(strstr(err, "hexadecimal"));
    assert_int_equal(green_parse_shares("50%,25%,25%", 3, share, err, sizeof err), 0);
    assert_float_equal(share[0], 50, 1e-9);
    assert_int_equal(green_parse_shares("0,100", 2, share, err, sizeof err), -1);
    assert_int_equal(green_parse_shares("50,50,1", 2, share, err, sizeof err), -1);
    assert_int_equal(green_parse_shares("50%%,50", 2, share, err, sizeof err), -1);
    assert_int_equal(green_parse_shares("%", 1, share, err, sizeof err), -1);
}

static void test_probe_and_print(void **state) {
    green_gpu g;
    char err[512];
    assert_int_equal(green_parse_probe("{\"device\":0,\"device_sms\":132,\"unit\":8,\"groups\":16}", &g, err, sizeof err), 0);
    assert_int_equal(g.device_sms, 132);
    assert_int_equal(g.unit, 8);
    assert_int_equal(g.groups, 16);
    assert_int_equal(green_parse_probe("{\"device_sms\":132,\"unit\":8,\"groups\":20}", &g, err, sizeof err), -1);
    assert_int_equal(green_parse_probe("no GPU", &g, err, sizeof err), -1);
    /* counts beyond an int's range: refused, not multiplied past it */
    assert_int_equal(green_parse_probe("{\"device_sms\":132,\"unit\":1e12,\"groups\":1e12}", &g, err, sizeof err), -1);
    green_plan p;
    green_request req = {2, NULL, NULL, NULL};
    assert_int_equal(green_plan_make(&p, &H100, &req, err, sizeof err), 0);
    char text[2048] = "";
    FILE *out = fmemopen(text, sizeof text, "w");
    const char *labels[] = {"S", "M"};
    green_plan_print(&p, labels, out);
    fclose(out);
    assert_non_null(strstr(text, "16 groups of 8 SMs"));
    assert_non_null(strstr(text, "128 of 132 SMs in partitions; 4 unused"));
}

static void test_host_argv(void **state) {
    job_record jobs[2];
    memset(jobs, 0, sizeof jobs);
    char *a0[] = {"/x/train", "--model", "resnet26", "--json", NULL};
    char *a1[] = {"/x/train", "--model", "resnet50", NULL};
    jobs[0].argv = a0;
    jobs[1].argv = a1;
    char host[256];
    unsetenv("SUITE_JOB_HOST");
    host_group_program("/x/train", host, sizeof host);
    assert_string_equal(host, "/x/job_host");
    int sms[2] = {64, 64};
    char **v = host_group_argv(host, jobs, 2, sms);
    const char *want[] = {"/x/job_host", "--green", "64,64", "--job", "--model", "resnet26", "--json",
                          "--job", "--model", "resnet50", NULL};
    for (int i = 0; want[i]; i++) assert_string_equal(v[i], want[i]);
    assert_null(v[10]);
    job_free_strv(v);
    v = host_group_argv(host, jobs, 1, NULL);
    assert_string_equal(v[1], "--job");
    job_free_strv(v);
    setenv("SUITE_JOB_HOST", "/y/fake", 1);
    host_group_program("/x/train", host, sizeof host);
    assert_string_equal(host, "/y/fake");
    unsetenv("SUITE_JOB_HOST");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sm_counts_round_to_groups),
        cmocka_unit_test(test_shares),
        cmocka_unit_test(test_demand_fills_the_gpu),
        cmocka_unit_test(test_bad_shares_are_refused),
        cmocka_unit_test(test_parse_lists),
        cmocka_unit_test(test_probe_and_print),
        cmocka_unit_test(test_host_argv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
