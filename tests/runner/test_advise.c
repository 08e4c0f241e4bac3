/* run_suite advise (issue 51): the model's arithmetic on hand-made probes, the law a partition's
 * rate is read off (two points, three, the clamps), ranking and the reason, the fit, the candidates
 * and probes a mix needs under --probes two and all with their cache key, the cache's refusal, and
 * the form end to end with fake jobs whose speed follows their MPS share (fake_train's share_speed):
 * two probes a job, run once, a second advice on known jobs runs none, --json, refusals with exit 2;
 * and the law against every size probed on a job whose time is in inverse proportion to its SMs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "runner/suite/multi/advise_plan.h"
#include "tests/support/suite_fixture.h"
#include "tests/support/testutil.h"

/* How many times needle occurs in text. */
static int count_of(const char *text, const char *needle) {
    int n = 0;
    for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle)) n++;
    return n;
}

static advise_probe probe(const char *job, double rate, double sm, double dram, int part_sms, double part_rate) {
    advise_probe p = {.rate = rate, .busy = NAN, .sm_active = sm, .dram_active = dram, .power_w = 300, .peak_bytes = 1e9};
    snprintf(p.job, sizeof p.job, "%s", job);
    p.sms[p.points] = 132, p.part_rate[p.points] = rate, p.part_power[p.points++] = 300;
    if (part_sms) p.sms[p.points] = part_sms, p.part_rate[p.points] = part_rate, p.part_power[p.points++] = 200;
    return p;
}

static void test_model_arithmetic(void **state) {
    (void)state;
    advise_probe s = probe("S", 1000, 0.4, 0.2, 66, 800), m = probe("M", 500, 0.9, 0.5, 66, 300);
    advise_mix mx = {.count = 2, .probe = {&s, &m}, .label = {"S", "M"}, .total_sms = 132, .memory_bytes = 80e9};
    advise_constants k = {.switch_cost = 0.1, .packing = 1, .victim = 0.5, .bandwidth = 0.2, .streams_cost = 0.05,
                          .corun = 0.1, .green_cost = 0.1};
    advise_candidate naive = {.mode = "naive", .label = "naive", .kind = ADVISE_NAIVE};
    advise_prediction p;
    advise_predict(&mx, &naive, &k, ADVISE_STP, &p);
    expect_lt(fabs(p.progress[0] - 0.9 / 2), 1e-9); /* (1 - switch) / n */
    expect_lt(fabs(p.stp - 2 * 0.9 / 2), 1e-9);
    /* time slices are held while a job has kernels queued: its busy share alone does not change them */
    s.busy = 0.3, m.busy = 0.5;
    advise_predict(&mx, &naive, &k, ADVISE_STP, &p);
    expect_lt(fabs(p.progress[1] - 0.9 / 2), 1e-9);
    /* side by side: the others' SM activity over the job's own to the victim exponent, and their DRAM */
    advise_candidate mps = {.mode = "mps", .label = "mps", .kind = ADVISE_SHARED};
    advise_predict(&mx, &mps, &k, ADVISE_STP, &p);
    expect_lt(fabs(p.progress[0] - 1 / (1 + 0.9 / sqrt(0.4)) / (1 + 0.2 * 0.5)), 1e-9);
    expect_lt(fabs(p.progress[1] - 1 / (1 + 0.4 / sqrt(0.9)) / (1 + 0.2 * 0.2)), 1e-9);
    expect_lt(p.progress[0], p.progress[1]); /* the job that fills fewer SMs alone loses more */
    advise_candidate streams = {.mode = "streams", .label = "streams", .kind = ADVISE_STREAMS};
    double shared0 = p.progress[0];
    advise_predict(&mx, &streams, &k, ADVISE_STP, &p);
    expect_lt(fabs(p.progress[0] - shared0 * 0.95), 1e-9);
    /* a partition: its speed alone there, less what the co-runner does at its own speed there */
    advise_candidate half = {.mode = "mps", .label = "mps 50%", .option = "--mps-sm", .value = "50",
                             .kind = ADVISE_PARTITION, .sms = {66, 66}};
    advise_predict(&mx, &half, &k, ADVISE_ANTT, &p);
    expect_lt(fabs(p.progress[0] - 0.8 / (1 + 0.1 * 0.6)), 1e-9);
    expect_lt(fabs(p.progress[1] - 0.6 / (1 + 0.1 * 0.8)), 1e-9);
    expect_lt(fabs(p.antt - (1 / p.progress[0] + 1 / p.progress[1]) / 2), 1e-9);
    expect_lt(fabs(p.fairness - p.progress[1] / p.progress[0]), 1e-9);
    /* energy: each job's power at its predicted samples/s (200 W at the 66-SM probe's rate, 300 W at
     * the whole GPU's, linear between), over the samples/s together */
    double rs = 1000 * p.progress[0], rm = 500 * p.progress[1];
    double ps = 200 + (rs - 800) * 100 / 200, pm = 200 + (rm - 300) * 100 / 200;
    expect_lt(fabs(p.energy_per_sample - (ps + pm) / (rs + rm)), 1e-12);
    expect_lt(fabs(p.score + p.antt), 1e-12); /* ANTT: lower is better */
    assert_int_equal(p.fits, 1);
    advise_candidate green = half;
    snprintf(green.mode, sizeof green.mode, "green");
    double part0 = p.progress[0];
    advise_predict(&mx, &green, &k, ADVISE_STP, &p);
    expect_lt(fabs(p.progress[0] - part0 * 0.9), 1e-9); /* green pays its cost beyond an MPS share */
    /* off the law through (66, 800) and (132, 1000): 1/rate = 0.00075 + 0.033/s */
    expect_lt(fabs(advise_rate_at(&s, 33) - 1 / (0.00075 + 0.033 / 33)), 1e-9);
    expect_lt(fabs(advise_rate_at(&s, 99) - 1 / (0.00075 + 0.033 / 99)), 1e-9);
    assert_int_equal(p.law[0], 0); /* 66 SMs were probed */
    /* memory: a MIG instance too small, the GPU too small */
    advise_candidate small = half;
    small.memory_bytes[0] = 0.5e9;
    advise_predict(&mx, &small, &k, ADVISE_STP, &p);
    assert_int_equal(p.fits, 0);
}

static void test_power(void **state) {
    (void)state;
    /* points (samples/s, W): (400, 150), (800, 200), (1000, 300) */
    advise_probe p = {.rate = 1000, .points = 3, .sms = {132, 33, 66}, .part_rate = {1000, 400, 800},
                      .part_power = {300, 150, 200}};
    expect_lt(fabs(advise_power_at(&p, 600) - 175), 1e-9);  /* between two */
    expect_lt(fabs(advise_power_at(&p, 900) - 250), 1e-9);
    expect_lt(fabs(advise_power_at(&p, 800) - 200), 1e-9);  /* at one */
    expect_lt(fabs(advise_power_at(&p, 200) - 125), 1e-9);  /* below: the line through the two lowest */
    expect_lt(fabs(advise_power_at(&p, 1200) - 300), 1e-9); /* above: the highest's */
    expect_lt(fabs(advise_power_at(&p, 0)), 100.0 + 1e-9);  /* the line at 0, not below 0 */
    p.part_power[1] = NAN;                                   /* a point without power is passed over */
    expect_lt(fabs(advise_power_at(&p, 700) - 150), 1e-9);  /* the line through (800, 200), (1000, 300) */
    expect_lt(fabs(advise_power_at(&p, 300)), 1e-12);       /* ... not below 0 */
    p.points = 1;
    expect_lt(fabs(advise_power_at(&p, 10) - 300), 1e-9);   /* one point: its power */
    p.part_power[0] = NAN;
    assert_true(isnan(advise_power_at(&p, 10)));
}

static void test_law(void **state) {
    (void)state;
    /* two points: 1/rate = a + b/s through (33, 250) and (132, 1000) is a = 0, b = 0.132 (in proportion) */
    advise_law law = advise_law_through(33, 250, 132, 1000);
    expect_lt(fabs(law.a), 1e-15);
    expect_lt(fabs(law.b - 0.132), 1e-12);
    expect_lt(fabs(advise_law_rate(law, 66) - 500), 1e-9);
    /* a fixed part: (40, 500) and (120, 1000): b = (0.002 - 0.001) / (1/40 - 1/120) = 0.06, a = 0.0005 */
    law = advise_law_through(120, 1000, 40, 500); /* either order */
    expect_lt(fabs(law.a - 0.0005), 1e-15);
    expect_lt(fabs(law.b - 0.06), 1e-12);
    expect_lt(fabs(advise_law_rate(law, 60) - 1 / (0.0005 + 0.001)), 1e-9);
    expect_lt(fabs(advise_law_rate(law, 40) - 500), 1e-9);
    expect_lt(fabs(advise_law_rate(law, 120) - 1000), 1e-9);
    /* clamps: faster than its SMs (a < 0) is in proportion through the larger point ... */
    law = advise_law_through(33, 200, 132, 1000);
    expect_eq(law.a, 0);
    expect_lt(fabs(law.b - 0.132), 1e-12);
    expect_lt(fabs(advise_law_rate(law, 33) - 250), 1e-9);
    /* ... faster on fewer SMs (b < 0) its rate at the larger point, whatever s */
    law = advise_law_through(33, 1100, 132, 1000);
    expect_eq(law.b, 0);
    expect_lt(fabs(advise_law_rate(law, 33) - 1000), 1e-9);
    expect_lt(fabs(advise_law_rate(law, 132) - 1000), 1e-9);
    assert_true(isnan(advise_law_through(33, 0, 132, 1000).a)); /* not a point */
    assert_true(isnan(advise_law_through(66, 500, 66, 1000).b));
    /* three points: between two, the law through those neighbours; outside, the nearest pair's */
    advise_probe p = {.rate = 1000, .points = 3, .sms = {132, 33, 66}, .part_rate = {1000, 300, 600}};
    advise_law low = advise_law_through(33, 300, 66, 600), high = advise_law_through(66, 600, 132, 1000);
    expect_lt(fabs(advise_rate_at(&p, 40) - advise_law_rate(low, 40)), 1e-9);
    expect_lt(fabs(advise_rate_at(&p, 100) - advise_law_rate(high, 100)), 1e-9);
    expect_lt(fabs(advise_rate_at(&p, 16) - advise_law_rate(low, 16)), 1e-9);
    /* (33, 300) and (66, 600) are in proportion (a = 0); (66, 600) and (132, 1000) have a fixed part */
    expect_lt(fabs(advise_rate_at(&p, 40) - 300 * 40 / 33.0), 1e-9);
    expect_lt(fabs(advise_rate_at(&p, 100) - 1 / (1 / 1000.0 - (1 / 600.0 - 1 / 1000.0) / (1 / 66.0 - 1 / 132.0) / 132 +
                                                  (1 / 600.0 - 1 / 1000.0) / (1 / 66.0 - 1 / 132.0) / 100)), 1e-9);
    expect_lt(fabs(advise_rate_at(&p, 66) - 600), 1e-12); /* probed: as measured */
    assert_int_equal(advise_rate_probed(&p, 66), 1);
    assert_int_equal(advise_rate_probed(&p, 40), 0);
    /* one point: in proportion below it, its rate above; none: unknown */
    advise_probe one = {.rate = 1000, .points = 1, .sms = {132}, .part_rate = {1000}};
    expect_lt(fabs(advise_rate_at(&one, 66) - 500), 1e-9);
    one.sms[0] = 66;
    expect_lt(fabs(advise_rate_at(&one, 100) - 1000), 1e-9);
    one.points = 0;
    assert_true(isnan(advise_rate_at(&one, 66)));
    /* a prediction says which jobs' sizes it read off the law */
    advise_mix mx = {.count = 2, .probe = {&p, &p}, .label = {"S", "S"}, .total_sms = 132, .memory_bytes = 80e9};
    advise_constants k = {.packing = 1}; /* no co-runner cost: the partitions' own speed */
    advise_candidate c = {.mode = "green", .label = "green 40+66", .kind = ADVISE_PARTITION, .sms = {40, 66}};
    advise_prediction pred;
    advise_predict(&mx, &c, &k, ADVISE_STP, &pred);
    assert_int_equal(pred.law[0], 1);
    assert_int_equal(pred.law[1], 0);
    expect_lt(fabs(pred.progress[0] - 300 * 40 / 33.0 / 1000), 1e-12);
    expect_lt(fabs(pred.progress[1] - 0.6), 1e-12);
}

static void test_rank_and_reason(void **state) {
    (void)state;
    advise_probe s = probe("S", 1000, 0.3, 0.1, 66, 900);
    s.busy = 0.9;
    advise_mix mx = {.count = 2, .probe = {&s, &s}, .label = {"S", "S"}, .total_sms = 132, .memory_bytes = 80e9};
    advise_constants k;
    advise_constants_default(&k);
    advise_candidate c[] = {{.mode = "naive", .label = "naive", .kind = ADVISE_NAIVE},
                            {.mode = "mps", .label = "mps", .kind = ADVISE_SHARED},
                            {.mode = "mps", .label = "mps 50%", .kind = ADVISE_PARTITION, .sms = {66, 66}}};
    advise_prediction r[3];
    assert_int_equal(advise_rank(&mx, c, 3, &k, ADVISE_STP, r), 3);
    /* half the SMs cost S a tenth, the other S's work there a little more */
    assert_string_equal(r[0].c->label, "mps 50%");
    /* S fills 30% of the SMs alone: beside the other's kernels its own wait */
    assert_string_equal(r[1].c->label, "mps");
    assert_string_equal(r[2].c->label, "naive"); /* time slices halve each */
    char why[2048];
    advise_explain(&mx, r, 3, ADVISE_STP, why, sizeof why);
    assert_non_null(strstr(why, "mps 50%: predicted STP"));
    assert_non_null(strstr(why, "S runs kernels 90% of the time and keeps 30% of the SMs busy and 10% of DRAM's "
                                "bandwidth (60% of the SMs together)"));
    assert_null(strstr(why, "of DRAM's bandwidth, S")); /* said once */
    /* a candidate that does not fit goes last whatever its score */
    mx.memory_bytes = 1.5e9;
    assert_int_equal(advise_rank(&mx, c, 3, &k, ADVISE_STP, r), 3);
    assert_int_equal(r[0].fits, 0);
}

static void test_fit(void **state) {
    (void)state;
    advise_probe s = probe("S", 1000, 0.4, 0.2, 66, 700), m = probe("M", 500, 0.9, 0.5, 66, 300);
    advise_constants truth = {.switch_cost = 0.2, .packing = 0.8, .victim = 0.7, .bandwidth = 0.4,
                              .streams_cost = 0.1, .corun = 0.3, .green_cost = 0.15}, k;
    advise_constants_default(&k);
    /* every kind of candidate over three mixes, so that each constant moves some job's progress */
    const advise_probe *mixes[3][3] = {{&s, &s, &s}, {&s, &m, NULL}, {&m, &m, &s}};
    advise_candidate kinds[] = {{.mode = "naive", .kind = ADVISE_NAIVE}, {.mode = "mps", .kind = ADVISE_SHARED},
                                {.mode = "streams", .kind = ADVISE_STREAMS},
                                {.mode = "mps", .option = "--mps-sm", .kind = ADVISE_PARTITION, .sms = {66, 66, 66}},
                                {.mode = "green", .option = "--green-sm", .kind = ADVISE_PARTITION, .sms = {66, 66, 66}}};
    advise_measured runs[15];
    int n = 0;
    for (int x = 0; x < 3; x++)
        for (int c = 0; c < 5; c++, n++) {
            runs[n].mix = (advise_mix){.count = mixes[x][2] ? 3 : 2, .probe = {mixes[x][0], mixes[x][1], mixes[x][2]},
                                       .total_sms = 132, .memory_bytes = 80e9};
            runs[n].cand = kinds[c];
            advise_prediction p;
            advise_predict(&runs[n].mix, &kinds[c], &truth, ADVISE_STP, &p);
            memcpy(runs[n].progress, p.progress, sizeof p.progress);
        }
    double before, after;
    assert_int_equal(advise_fit(runs, n, &k, &before, &after), 0);
    expect_lt(after, before);
    expect_lt(after, 1e-3);
    for (int i = 0; i < ADVISE_CONSTANT_COUNT; i++) /* each found again */
        expect_lt(fabs(*advise_constant_at(&k, i) - *advise_constant_at(&truth, i)), 0.01);
}

static void test_candidates_and_probes(void **state) {
    (void)state;
    mix m;
    char err[512];
    assert_int_equal(mix_parse(&m, "S+M+M", err, sizeof err), 0);
    advise_candidate c[ADVISE_MAX_CANDIDATES];
    const mig_gpu *h100 = mig_known_gpu("H100-80GB");
    assert_non_null(h100);
    green_gpu green;
    green_estimate_gpu(h100, &green);
    int n = advise_candidates(&m, h100->total_sms, &green, h100, NULL, c, ADVISE_MAX_CANDIDATES);
    int modes[5] = {0};
    const char *names[] = {"naive", "mps", "streams", "mig-emulate", "green"};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 5; k++) modes[k] += !strcmp(c[i].mode, names[k]);
    for (int k = 0; k < 5; k++) assert_true(modes[k] >= 1);
    assert_int_equal(modes[1], 2); /* with and without shares */
    for (int i = 0; i < n; i++)
        if (!strcmp(c[i].mode, "green"))
            for (int j = 0; j < 3; j++) assert_int_equal(c[i].sms[j] % green.unit, 0);
    /* --probes all: every size a candidate gives a distinct job */
    advise_probe_need need[128], two[128];
    int p = advise_probes_needed(&m, c, n, h100->total_sms, ADVISE_PROBES_ALL, "H100", "abc", 2, 10, need, 128);
    assert_true(p > 4);
    assert_int_equal(need[0].sms, 0); /* the two distinct jobs alone first */
    assert_int_equal(need[1].sms, 0);
    assert_int_equal(need[1].job, 1);
    assert_string_equal(need[0].key, "resnet26:cifar10@128|H100|abc|0|2/10");
    int sizes[2][ADVISE_MAX_POINTS], count[2], least[2] = {1000, 1000};
    for (int j = 0; j < 2; j++) {
        count[j] = advise_sizes_of(&m, c, n, h100->total_sms, j, sizes[j], ADVISE_MAX_POINTS);
        for (int k = 0; k < count[j]; k++) least[j] = sizes[j][k] < least[j] ? sizes[j][k] : least[j];
    }
    assert_int_equal(advise_sizes_of(&m, c, n, h100->total_sms, 2, sizes[0], ADVISE_MAX_POINTS), 0); /* M is job 1 */
    assert_int_equal(p, 2 + count[0] + count[1]);
    for (int i = 2; i < p; i++) {
        assert_true(need[i].sms > 0 && need[i].sms < 132);
        assert_true(need[i].job == 0 || need[i].job == 1); /* the second M is the first's */
        assert_true(need[i].percent > 0 && need[i].percent < 100);
    }
    /* --probes two: the whole GPU and the smallest size, a job; the same keys as all's */
    int q = advise_probes_needed(&m, c, n, h100->total_sms, ADVISE_PROBES_TWO, "H100", "abc", 2, 10, two, 128);
    assert_int_equal(q, 4);
    for (int i = 0; i < 2; i++) assert_string_equal(two[i].key, need[i].key);
    assert_int_equal(two[2].job, 0);
    assert_int_equal(two[2].sms, least[0]);
    assert_int_equal(two[3].job, 1);
    assert_int_equal(two[3].sms, least[1]);
    for (int i = 2; i < 4; i++) {
        int same = 0;
        for (int k = 0; k < p; k++) same |= !strcmp(need[k].key, two[i].key);
        assert_true(same);
    }
    /* a job no candidate partitions: one probe */
    mix one;
    assert_int_equal(mix_parse(&one, "S", err, sizeof err), 0);
    int single = advise_candidates(&one, 132, &green, NULL, NULL, c, ADVISE_MAX_CANDIDATES);
    assert_int_equal(advise_probes_needed(&one, c, single, 132, ADVISE_PROBES_TWO, "H100", "abc", 2, 10, two, 128), 1);
    /* no MIG table: no layouts, no green split from them */
    int plain = advise_candidates(&m, 132, &green, NULL, NULL, c, ADVISE_MAX_CANDIDATES);
    assert_true(plain < n);
}

/* The green splits proposed on a 2-job mix over the split its GPU yields, with and without the MIG
 * layouts; each as labels, and whether one takes more SMs than the split's groups hold. */
static int green_labels(const mix *m, const green_gpu *green, const mig_gpu *mig, char *labels, size_t size) {
    advise_candidate c[ADVISE_MAX_CANDIDATES];
    int n = advise_candidates(m, green->device_sms, green, mig, NULL, c, ADVISE_MAX_CANDIDATES), over = 0;
    size_t at = 0;
    labels[0] = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(c[i].mode, "green")) continue;
        at += (size_t)snprintf(labels + at, at < size ? size - at : 0, "%s;", c[i].label);
        over |= c[i].sms[0] + c[i].sms[1] > green->groups * green->unit;
    }
    return over;
}

/* A green split is proposed only where the green mode accepts it on the split the GPU yields: an H200
 * whose groups hold 120 of its 132 SMs has no 64,64, one whose groups hold 128 has. */
static void test_green_split_of_gpu(void **state) {
    (void)state;
    mix m;
    char err[512], labels[1024];
    assert_int_equal(mix_parse(&m, "S+S", err, sizeof err), 0);
    const mig_gpu *h200 = mig_known_gpu("H200-141GB");
    assert_non_null(h200);
    green_gpu fifteen = {132, 8, 15}, sixteen = {132, 8, 16}, unknown = {132, 8, 0};
    const mig_gpu *tables[] = {NULL, h200};
    for (int t = 0; t < 2; t++) {
        assert_int_equal(green_labels(&m, &fifteen, tables[t], labels, sizeof labels), 0);
        assert_null(strstr(labels, "green 64,64;"));
        assert_non_null(strstr(labels, "green 56,56;")); /* the equal split of 15 groups: 7 each */
        assert_int_equal(green_labels(&m, &sixteen, tables[t], labels, sizeof labels), 0);
        assert_non_null(strstr(labels, "green 64,64;"));
        green_labels(&m, &unknown, tables[t], labels, sizeof labels);
        assert_string_equal(labels, "");
    }
    /* every split the green mode's plan takes as it is */
    advise_candidate c[ADVISE_MAX_CANDIDATES];
    int n = advise_candidates(&m, 132, &fifteen, h200, NULL, c, ADVISE_MAX_CANDIDATES), greens = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(c[i].mode, "green")) continue;
        int sms[2];
        green_plan p;
        green_request req = {2, sms, NULL, NULL};
        assert_int_equal(green_parse_sms(c[i].value, 2, sms, err, sizeof err), 0);
        assert_int_equal(green_plan_make(&p, &fifteen, &req, err, sizeof err), 0);
        for (int j = 0; j < 2; j++) assert_int_equal(p.sm[j], c[i].sms[j]);
        greens++;
    }
    assert_true(greens >= 1);
    /* the estimate of a table: all its SMs in groups of its architecture's unit */
    green_gpu est;
    green_estimate_gpu(h200, &est);
    assert_int_equal(est.unit, 8);
    assert_int_equal(est.groups, 16);
    green_estimate_gpu(mig_known_gpu("A100-40GB"), &est);
    assert_int_equal(est.unit, 4);
    assert_int_equal(est.groups, est.device_sms / 4);
}

static void test_cache(void **state) {
    (void)state;
    char dir[512], err[1024], path[700];
    test_tmpdir(dir, sizeof dir);
    advise_cache *c;
    assert_int_equal(advise_cache_open(&c, dir, err, sizeof err), 0);
    double v[ADVISE_PROBE_VALUES] = {100, 0.5, NAN, 250, 1e9, 0.9}, got[ADVISE_PROBE_VALUES];
    assert_int_equal(advise_cache_get(c, "k", got), 0);
    advise_cache_put(c, "k", v);
    assert_int_equal(advise_cache_save(c, err, sizeof err), 0);
    advise_cache_close(c);
    assert_int_equal(advise_cache_open(&c, dir, err, sizeof err), 0);
    assert_int_equal(advise_cache_get(c, "k", got), 1);
    expect_lt(fabs(got[0] - 100), 1e-9);
    assert_true(isnan(got[2]));
    expect_lt(fabs(got[5] - 0.9), 1e-9);
    advise_cache_close(c);
    /* two advisors on one folder: each save keeps the other's entries, and reads them in */
    advise_cache *other;
    assert_int_equal(advise_cache_open(&c, dir, err, sizeof err), 0);
    assert_int_equal(advise_cache_open(&other, dir, err, sizeof err), 0);
    advise_cache_put(c, "first", v);
    assert_int_equal(advise_cache_save(c, err, sizeof err), 0);
    advise_cache_put(other, "second", v);
    assert_int_equal(advise_cache_get(other, "first", got), 0);
    assert_int_equal(advise_cache_save(other, err, sizeof err), 0);
    assert_int_equal(advise_cache_get(other, "first", got), 1);
    advise_cache_close(other);
    advise_cache_close(c);
    assert_int_equal(advise_cache_open(&c, dir, err, sizeof err), 0);
    int kept = advise_cache_get(c, "first", got) + advise_cache_get(c, "second", got) + advise_cache_get(c, "k", got);
    assert_int_equal(kept, 3);
    advise_cache_close(c);
    /* an entry written before the busy share was measured reads it as unknown */
    snprintf(path, sizeof path, "%s/%s", dir, ADVISE_CACHE_FILE);
    FILE *f = fopen(path, "w");
    fputs("{\"version\":1,\"probes\":{\"k\":{\"samples_per_s\":100,\"sm_active\":0.5}}}", f);
    fclose(f);
    assert_int_equal(advise_cache_open(&c, dir, err, sizeof err), 0);
    assert_int_equal(advise_cache_get(c, "k", got), 1);
    assert_true(isnan(got[5]));
    advise_cache_close(c);
    f = fopen(path, "w");
    fputs("{\"version\":1,\"probes\":{\"k\":{\"samples_per_s\":-1}}}", f);
    fclose(f);
    assert_int_equal(advise_cache_open(&c, dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "samples_per_s"));
}

/* A fresh folder on the stand-in's H100, fake jobs behaving as fake says; the results folder in it. */
static void fake_results(char *results, size_t size, const char *fake) {
    char dir[512];
    test_tmpdir(dir, sizeof dir);
    snprintf(results, size, "%s/results", dir);
    suite_fixture_standin_h100(dir);
    setenv("FAKE_TRAIN", fake, 1);
}

/* The form with fake jobs: S's speed follows its share in full, M's not at all. */
static void test_end_to_end(void **state) {
    (void)state;
    char results[600], out[65536], err[65536];
    fake_results(results, sizeof results, "resnet26:epoch_ms=200,steps=10,setup_ms=5,share_speed=100;"
                                          "resnet50:epoch_ms=200,steps=10,setup_ms=5,share_speed=0");
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--dry-run",
                             "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "probe resnet26:cifar10@128"));
    assert_non_null(strstr(out, "whole GPU          to run"));
    /* two probes a job: the whole GPU and its smallest partition; the sizes between named */
    assert_non_null(strstr(out, "4 probe(s) (--probes two)"));
    assert_non_null(strstr(out, "law   S on "));
    assert_int_equal(count_of(out, "probe "), 4);
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--dry-run",
                         "--probes", "all", "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    assert_int_equal(rc, 0);
    assert_true(count_of(out, "probe ") > 4);
    assert_non_null(strstr(out, "(--probes all)"));
    assert_non_null(strstr(out, "; 0 partition size(s) read off the law"));
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--window", "0.4",
                         "--warmup-steps", "3", "--json", "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
    assert_int_equal(rc, 0);
    /* the runs made: four */
    assert_int_equal(count_of(err, "[advise] probe "), 4);
    assert_non_null(strstr(err, "] 4 probe(s) run, 0 cached"));
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "probes_setting")->valuestring, "two");
    assert_true(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "read_off_law")) == 2);
    const cJSON *preds = cJSON_GetObjectItemCaseSensitive(root, "predictions");
    assert_true(cJSON_GetArraySize(preds) >= 5);
    /* mps 50%: S at about half its speed (share_speed 100), M at its own */
    for (const cJSON *p = preds->child; p; p = p->next)
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(p, "label")->valuestring, "mps 50%")) {
            const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(p, "jobs");
            double s = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jobs, 0), "progress")->valuedouble;
            double m = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jobs, 1), "progress")->valuedouble;
            expect_lt(fabs(s - 0.5), 0.15);
            expect_lt(fabs(m - 1), 0.15);
        }
    assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "why")));
    cJSON_Delete(root);
    /* the same jobs by another objective: every probe cached, nothing run (another order of them may
     * need a partition size more: the planners assign by the mix's order) */
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--objective",
                         "antt", "--window", "0.4",
                         "--warmup-steps", "3", "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    assert_int_equal(rc, 0);
    if (!strstr(err, "] 0 probe(s) run")) fprintf(stderr, "%s\n", err);
    assert_non_null(strstr(err, "] 0 probe(s) run"));
    assert_non_null(strstr(out, "recommended: "));
    /* refusals */
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S",
                                     "--objective", "speed", "--train", FAKE_TRAIN_PATH, NULL), 2);
    assert_non_null(strstr(err, "--objective: expected stp, antt, fairness or energy"));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S",
                                     "--probes", "three", "--dry-run", "--train", FAKE_TRAIN_PATH, NULL), 2);
    assert_non_null(strstr(err, "--probes: expected two or all, got 'three'"));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "Q",
                                     "--train", FAKE_TRAIN_PATH, NULL), 2);
    assert_non_null(strstr(err, "unknown job \"Q\""));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--train",
                                     FAKE_TRAIN_PATH, NULL), 2);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S",
                                     "--mode", "mps", NULL), 2);
    char path[700];
    snprintf(path, sizeof path, "%s/%s", results, ADVISE_CACHE_FILE);
    FILE *f = fopen(path, "w");
    fputs("not json", f);
    fclose(f);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S",
                                     "--dry-run", "--train", FAKE_TRAIN_PATH, "--results", results, NULL), 2);
    assert_non_null(strstr(err, "not JSON"));
}

/* A prediction's job progress under the candidate labelled label in advise --json's output. */
static double progress_of(const char *json, const char *label, int job) {
    cJSON *root = cJSON_Parse(json);
    double v = NAN;
    for (const cJSON *p = root ? cJSON_GetObjectItemCaseSensitive(root, "predictions")->child : NULL; p; p = p->next)
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(p, "label")->valuestring, label))
            v = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(p, "jobs"), job),
                                                 "progress")->valuedouble;
    cJSON_Delete(root);
    return v;
}

/* Puts every cached partition probe of the job whose spec starts with spec on a law through its
 * whole-GPU probe (total_sms SMs): a quarter of its step that does not shrink with SMs, the rest in
 * proportion to them, well inside the law's clamps. The sleeping fakes' measured rates scatter with
 * the machine's load, so the comparison below is made on cached values that follow the law exactly,
 * not on two measurements. Returns how many sizes it rewrote. */
static int cache_onto_law(const char *results, const char *spec, int total_sms) {
    char path[700], err[256];
    snprintf(path, sizeof path, "%s/" ADVISE_CACHE_FILE, results);
    cJSON *root = test_read_json(path, err, sizeof err);
    if (!root) fail_msg("%s", err);
    cJSON *probes = cJSON_GetObjectItemCaseSensitive(root, "probes");
    double whole = NAN;
    int rewritten = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (cJSON *e = probes->child; e; e = e->next) {
            if (strncmp(e->string, spec, strlen(spec)) != 0) continue;
            const char *sms_field = e->string;
            for (int bars = 0; bars < 3; bars++) sms_field = strchr(sms_field, '|') + 1; /* spec|gpu|revision|SMs| */
            int sms = atoi(sms_field);
            cJSON *rate = cJSON_GetObjectItemCaseSensitive(e, "samples_per_s");
            if (pass == 0 && sms == 0) whole = rate->valuedouble;
            if (pass == 1 && sms != 0) {
                double step = 1 / whole; /* 1/rate = a + b/s with a = step/4, b = 3/4 step x total_sms */
                cJSON_SetNumberValue(rate, 1 / (0.25 * step + 0.75 * step * total_sms / sms));
                rewritten++;
            }
        }
        assert_true(isfinite(whole));
    }
    test_write_json(path, root);
    cJSON_Delete(root);
    return rewritten;
}

/* The law read off two probes predicts what every size probed predicts where the sizes lie on it:
 * the whole pipeline (plan, cache, model) with both settings over one cache. */
static void test_law_against_all_probes(void **state) {
    (void)state;
    char results[600], out[65536], err[65536];
    fake_results(results, sizeof results, "resnet26:epoch_ms=120,steps=20,setup_ms=5,share_speed=100;"
                                          "resnet50:epoch_ms=40,steps=20,setup_ms=5,share_speed=0");
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--probes", "all",
                             "--window", "0.5", "--warmup-steps", "3", "--json", "--train", FAKE_TRAIN_PATH,
                             "--results", results, NULL);
    if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
    assert_int_equal(rc, 0);
    cJSON *root = cJSON_Parse(out);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "read_off_law")), 0);
    cJSON_Delete(root);
    /* both jobs: a partition's co-runner counts at its own speed there, read off the law too */
    assert_true(cache_onto_law(results, "resnet26:", 132) > 0);
    assert_true(cache_onto_law(results, "resnet50:", 132) > 0);
    const char *settings[2] = {"all", "two"};
    double progress[2];
    for (int k = 0; k < 2; k++) {
        rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--probes",
                             settings[k], "--window", "0.5", "--warmup-steps", "3", "--json", "--train",
                             FAKE_TRAIN_PATH, "--results", results, NULL);
        assert_int_equal(rc, 0);
        assert_non_null(strstr(err, "] 0 probe(s) run, ")); /* every probe of either setting cached */
        progress[k] = progress_of(out, "mps 50%", 0);
    }
    fprintf(stderr, "S's progress under mps 50%%: %.6f every size probed, %.6f off the law\n", progress[0],
            progress[1]);
    expect_near(progress[1], progress[0], 1e-9 * progress[0]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_arithmetic),
        cmocka_unit_test(test_power), cmocka_unit_test(test_rank_and_reason), cmocka_unit_test(test_fit),
        cmocka_unit_test(test_candidates_and_probes), cmocka_unit_test(test_green_split_of_gpu), cmocka_unit_test(test_cache), cmocka_unit_test(test_end_to_end),
        cmocka_unit_test(test_law), cmocka_unit_test(test_law_against_all_probes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
