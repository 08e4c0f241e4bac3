/* run_suite advise (issue 51): the model's arithmetic on hand-made probes, ranking and the reason,
 * the fit, the candidates and probes a mix needs with their cache key, the cache's refusal, and the
 * form end to end with fake jobs whose speed follows their MPS share (fake_train's share_speed):
 * the probes run once, a second advice on known jobs runs none, --json, refusals with exit 2. */
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

static advise_probe probe(const char *job, double rate, double sm, double dram, int part_sms, double part_rate) {
    advise_probe p = {.rate = rate, .sm_active = sm, .dram_active = dram, .power_w = 300, .peak_bytes = 1e9};
    snprintf(p.job, sizeof p.job, "%s", job);
    p.sms[p.points] = 132, p.part_rate[p.points++] = rate;
    if (part_sms) p.sms[p.points] = part_sms, p.part_rate[p.points++] = part_rate;
    return p;
}

static void test_model_arithmetic(void **state) {
    (void)state;
    advise_probe s = probe("S", 1000, 0.4, 0.2, 66, 800), m = probe("M", 500, 0.9, 0.5, 66, 300);
    advise_mix mx = {.count = 2, .probe = {&s, &m}, .label = {"S", "M"}, .total_sms = 132, .memory_bytes = 80e9};
    advise_constants k = {.switch_cost = 0.1, .packing = 1, .bandwidth = 0.2, .streams_cost = 0.05};
    advise_candidate naive = {.mode = "naive", .label = "naive", .kind = ADVISE_NAIVE};
    advise_prediction p;
    advise_predict(&mx, &naive, &k, ADVISE_STP, &p);
    expect_lt(fabs(p.progress[0] - 0.9 / 1.3), 1e-9); /* (1 - switch) / activity together */
    expect_lt(fabs(p.stp - 2 * 0.9 / 1.3), 1e-9);
    advise_candidate mps = {.mode = "mps", .label = "mps", .kind = ADVISE_SHARED};
    advise_predict(&mx, &mps, &k, ADVISE_STP, &p);
    expect_lt(fabs(p.progress[0] - 1 / 1.3 / (1 + 0.2 * 0.5)), 1e-9); /* M's DRAM slows S */
    expect_lt(fabs(p.progress[1] - 1 / 1.3 / (1 + 0.2 * 0.2)), 1e-9);
    advise_candidate half = {.mode = "mps", .label = "mps 50%", .kind = ADVISE_PARTITION, .sms = {66, 66}};
    advise_predict(&mx, &half, &k, ADVISE_ANTT, &p);
    expect_lt(fabs(p.progress[0] - 0.8 / 1.1), 1e-9);
    expect_lt(fabs(p.progress[1] - 0.6 / 1.04), 1e-9);
    expect_lt(fabs(p.antt - (1.1 / 0.8 + 1.04 / 0.6) / 2), 1e-9);
    expect_lt(fabs(p.fairness - (0.6 / 1.04) / (0.8 / 1.1)), 1e-9);
    expect_lt(fabs(p.energy_per_sample - 300 / (1000 * 0.8 / 1.1 + 500 * 0.6 / 1.04)), 1e-9);
    expect_lt(fabs(p.score + p.antt), 1e-12); /* ANTT: lower is better */
    assert_int_equal(p.fits, 1);
    /* between points: linear, 0 at 0 SMs */
    expect_lt(fabs(advise_rate_at(&s, 33) - 400), 1e-9);
    expect_lt(fabs(advise_rate_at(&s, 99) - 900), 1e-9);
    /* memory: a MIG instance too small, the GPU too small */
    advise_candidate small = half;
    small.memory_bytes[0] = 0.5e9;
    advise_predict(&mx, &small, &k, ADVISE_STP, &p);
    assert_int_equal(p.fits, 0);
}

static void test_rank_and_reason(void **state) {
    (void)state;
    advise_probe s = probe("S", 1000, 0.3, 0.1, 66, 900);
    advise_mix mx = {.count = 2, .probe = {&s, &s}, .label = {"S", "S"}, .total_sms = 132, .memory_bytes = 80e9};
    advise_constants k;
    advise_constants_default(&k);
    advise_candidate c[] = {{.mode = "naive", .label = "naive", .kind = ADVISE_NAIVE},
                            {.mode = "mps", .label = "mps", .kind = ADVISE_SHARED},
                            {.mode = "mps", .label = "mps 50%", .kind = ADVISE_PARTITION, .sms = {66, 66}}};
    advise_prediction r[3];
    assert_int_equal(advise_rank(&mx, c, 3, &k, ADVISE_STP, r), 3);
    assert_string_equal(r[0].c->label, "mps"); /* 60% busy together: MPS loses little */
    assert_string_equal(r[2].c->label, "mps 50%"); /* half the SMs cost S a tenth */
    char why[2048];
    advise_explain(&mx, r, 3, ADVISE_STP, why, sizeof why);
    assert_non_null(strstr(why, "mps: predicted STP"));
    assert_non_null(strstr(why, "S keeps 30% of the SMs busy and 10% of DRAM's bandwidth (60% together)"));
    assert_null(strstr(why, "S keeps 30% of the SMs busy and 10% of DRAM's bandwidth, S")); /* said once */
    /* a candidate that does not fit goes last whatever its score */
    mx.memory_bytes = 1.5e9;
    assert_int_equal(advise_rank(&mx, c, 3, &k, ADVISE_STP, r), 3);
    assert_int_equal(r[0].fits, 0);
}

static void test_fit(void **state) {
    (void)state;
    advise_probe s = probe("S", 1000, 0.6, 0.5, 66, 700);
    advise_constants truth = {.switch_cost = 0.2, .packing = 0.8, .bandwidth = 0.4, .streams_cost = 0.1}, k;
    advise_constants_default(&k);
    advise_measured runs[3];
    advise_candidate kinds[] = {{.mode = "naive", .kind = ADVISE_NAIVE}, {.mode = "mps", .kind = ADVISE_SHARED},
                                {.mode = "streams", .kind = ADVISE_STREAMS}};
    for (int i = 0; i < 3; i++) {
        runs[i].mix = (advise_mix){.count = 3, .probe = {&s, &s, &s}, .total_sms = 132, .memory_bytes = 80e9};
        runs[i].cand = kinds[i];
        advise_prediction p;
        advise_predict(&runs[i].mix, &kinds[i], &truth, ADVISE_STP, &p);
        memcpy(runs[i].progress, p.progress, sizeof p.progress);
    }
    double before, after;
    assert_int_equal(advise_fit(runs, 3, &k, &before, &after), 0);
    expect_lt(after, before);
    expect_lt(after, 1e-3);
    expect_lt(fabs(k.switch_cost - 0.2), 0.01);
}

static void test_candidates_and_probes(void **state) {
    (void)state;
    mix m;
    char err[512];
    assert_int_equal(mix_parse(&m, "S+M+M", err, sizeof err), 0);
    advise_candidate c[ADVISE_MAX_CANDIDATES];
    const mig_gpu *h100 = mig_known_gpu("H100-80GB");
    assert_non_null(h100);
    int n = advise_candidates(&m, h100->total_sms, h100, NULL, c, ADVISE_MAX_CANDIDATES);
    int modes[5] = {0};
    const char *names[] = {"naive", "mps", "streams", "mig-emulate", "green"};
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 5; k++) modes[k] += !strcmp(c[i].mode, names[k]);
    for (int k = 0; k < 5; k++) assert_true(modes[k] >= 1);
    assert_int_equal(modes[1], 2); /* with and without shares */
    for (int i = 0; i < n; i++)
        if (!strcmp(c[i].mode, "green"))
            for (int j = 0; j < 3; j++) assert_int_equal(c[i].sms[j] % ADVISE_GREEN_UNIT, 0);
    advise_probe_need need[64];
    int p = advise_probes_needed(&m, c, n, h100->total_sms, "H100", "abc", 2, 10, need, 64);
    assert_true(p > 2);
    assert_int_equal(need[0].sms, 0); /* the two distinct jobs alone first */
    assert_int_equal(need[1].sms, 0);
    assert_int_equal(need[1].job, 1);
    assert_string_equal(need[0].key, "resnet26:cifar10@128|H100|abc|0|2/10");
    for (int i = 2; i < p; i++) {
        assert_true(need[i].sms > 0 && need[i].sms < 132);
        assert_true(need[i].job == 0 || need[i].job == 1); /* the second M is the first's */
        assert_true(need[i].percent > 0 && need[i].percent < 100);
    }
    /* no MIG table: no layouts, no green split from them */
    int plain = advise_candidates(&m, 132, NULL, NULL, c, ADVISE_MAX_CANDIDATES);
    assert_true(plain < n);
}

static void test_cache(void **state) {
    (void)state;
    char dir[512], err[1024], path[700];
    test_tmpdir(dir, sizeof dir);
    advise_cache *c;
    assert_int_equal(advise_cache_open(&c, dir, err, sizeof err), 0);
    double v[5] = {100, 0.5, NAN, 250, 1e9}, got[5];
    assert_int_equal(advise_cache_get(c, "k", got), 0);
    advise_cache_put(c, "k", v);
    assert_int_equal(advise_cache_save(c, err, sizeof err), 0);
    advise_cache_close(c);
    assert_int_equal(advise_cache_open(&c, dir, err, sizeof err), 0);
    assert_int_equal(advise_cache_get(c, "k", got), 1);
    expect_lt(fabs(got[0] - 100), 1e-9);
    assert_true(isnan(got[2]));
    advise_cache_close(c);
    snprintf(path, sizeof path, "%s/%s", dir, ADVISE_CACHE_FILE);
    FILE *f = fopen(path, "w");
    fputs("{\"version\":1,\"probes\":{\"k\":{\"samples_per_s\":-1}}}", f);
    fclose(f);
    assert_int_equal(advise_cache_open(&c, dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "samples_per_s"));
}

/* The form with fake jobs: S's speed follows its share in full, M's not at all. */
static void test_end_to_end(void **state) {
    (void)state;
    char dir[512], results[600], out[65536], err[65536];
    test_tmpdir(dir, sizeof dir);
    snprintf(results, sizeof results, "%s/results", dir);
    suite_fixture_standin_h100(dir);
    setenv("FAKE_TRAIN", "resnet26:epoch_ms=200,steps=10,setup_ms=5,share_speed=100;"
                         "resnet50:epoch_ms=200,steps=10,setup_ms=5,share_speed=0", 1);
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--dry-run",
                             "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "probe resnet26:cifar10@128"));
    assert_non_null(strstr(out, "whole GPU          to run"));
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--window", "0.4",
                         "--warmup-steps", "3", "--json", "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
    assert_int_equal(rc, 0);
    cJSON *root = cJSON_Parse(out);
    assert_non_null(root);
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_arithmetic), cmocka_unit_test(test_rank_and_reason), cmocka_unit_test(test_fit),
        cmocka_unit_test(test_candidates_and_probes), cmocka_unit_test(test_cache), cmocka_unit_test(test_end_to_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
