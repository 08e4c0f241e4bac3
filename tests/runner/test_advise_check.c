/* run_suite advise --check and --fit (issue 51): the comparison's arithmetic on a hand-made case
 * (errors, Spearman with tied ranks, the regret and its tie inside the repeats' spread), --check end
 * to end on fake jobs (fake_train's share_speed and crowd_slow give the modes contrast; check.json's
 * errors are the predicted against the measured it holds), --fit recovering known constants from
 * fake runs whose measured progress the test wrote from those constants, and the refusals (exit 2). */
#include <dirent.h>
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

#include "runner/suite/multi/advise.h"
#include "runner/suite/multi/advise_check.h"
#include "tests/support/suite_fixture.h"
#include "tests/support/testutil.h"

static spread three(double a, double b, double c) {
    double v[] = {a, b, c};
    return spread_of(v, 3);
}

static void test_compare_by_hand(void **state) {
    (void)state;
    advise_candidate c[3] = {{.label = "A"}, {.label = "B"}, {.label = "C"}};
    advise_prediction p[3] = {{.c = &c[0], .stp = 1.5, .antt = 1.4, .progress = {0.8, 0.7}},
                              {.c = &c[1], .stp = 1.2, .antt = 1.7, .progress = {0.6, 0.6}},
                              {.c = &c[2], .stp = 1.0, .antt = 2.0, .progress = {0.5, 0.5}}};
    advise_check_row r[3] = {
        {.pred = &p[0], .measured = 1, .progress = {0.6, 0.65}, .stp = three(1.2, 1.25, 1.3), .antt = three(1.6, 1.7, 1.8)},
        {.pred = &p[1], .measured = 1, .progress = {0.6, 0.6}, .stp = three(1.28, 1.3, 1.4), .antt = three(1.7, 1.7, 1.7)},
        {.pred = &p[2], .measured = 1, .progress = {0.5, 0.5}, .stp = three(0.9, 0.95, 1.0), .antt = three(2, 2, 2)}};
    advise_check_summary s;
    advise_check_compare(r, 3, 2, ADVISE_STP, &s);
    expect_lt(fabs(r[0].stp_error - 0.2), 1e-12);                 /* (1.5 - 1.25) / 1.25 */
    expect_lt(fabs(r[0].antt_error - (1.4 - 1.7) / 1.7), 1e-12);
    expect_lt(fabs(r[0].progress_error[0] - 0.2 / 0.6), 1e-12);
    expect_lt(fabs(s.spearman - 0.5), 1e-12);  /* predicted ranks 3,2,1 against measured 2,3,1 */
    assert_int_equal(s.best, 1);
    expect_lt(fabs(s.regret - 0.05 / 1.3), 1e-12);
    assert_int_equal(s.tie, 1);                 /* A's [1.2-1.3] overlaps B's [1.28-1.4] */
    expect_lt(fabs(s.median_abs_progress_error), 1e-12); /* four of six are exact */
    r[1].stp = three(1.35, 1.4, 1.45);
    advise_check_compare(r, 3, 2, ADVISE_STP, &s);
    assert_int_equal(s.tie, 0);
    expect_lt(fabs(s.regret - 0.15 / 1.4), 1e-12);
    /* ANTT: lower is better; A measured best, so no regret */
    advise_check_compare(r, 3, 2, ADVISE_ANTT, &s);
    assert_int_equal(s.best, 0);
    expect_lt(fabs(s.regret), 1e-12);
    expect_lt(fabs(s.spearman - 1.5 / sqrt(3)), 1e-12); /* ranks 3,2,1 against 2.5,2.5,1 */
    /* energy, whatever the objective: the choice is the row predicted lowest (C), the best the lowest
     * measured (B); regret (E_choice - E_best) / E_best, apart: no tie */
    p[0].energy_per_sample = 0.30, p[1].energy_per_sample = 0.25, p[2].energy_per_sample = 0.20;
    r[0].energy = three(0.28, 0.30, 0.32), r[1].energy = three(0.19, 0.20, 0.21), r[2].energy = three(0.24, 0.25, 0.26);
    advise_check_compare(r, 3, 2, ADVISE_STP, &s);
    expect_lt(fabs(r[2].energy_error - (0.20 - 0.25) / 0.25), 1e-12);
    expect_lt(fabs(s.median_abs_energy_error - 0.20), 1e-12); /* |0|, |+25%|, |-20%| */
    assert_int_equal(s.energy_recommended, 2);
    assert_int_equal(s.energy_best, 1);
    expect_lt(fabs(s.energy_regret - 0.05 / 0.20), 1e-12);
    assert_int_equal(s.energy_tie, 0);
    expect_lt(fabs(s.energy_spearman - 0.5), 1e-12); /* predicted -E ranks 1,2,3 against measured 1,3,2 */
    /* the same as the check's objective: the first row is its choice there */
    r[1].energy = three(0.22, 0.245, 0.25); /* now overlaps C's [0.24-0.26]: a tie */
    advise_check_compare(r, 3, 2, ADVISE_ENERGY, &s);
    assert_int_equal(s.energy_tie, 1);
    assert_int_equal(s.best, 1);
    expect_lt(fabs(s.regret - (0.30 - 0.245) / 0.245), 1e-12); /* row 0 (A) is this call's recommendation */
    /* the recommendation not measured: no regret */
    r[0].measured = 0;
    advise_check_compare(r, 3, 2, ADVISE_STP, &s);
    assert_int_equal(s.recommended_measured, 0);
    assert_true(isnan(s.regret));
    assert_int_equal(s.measured, 2);
    /* tied ranks share their mean: Pearson's on ranks 1,2.5,2.5,4 against 1..4 */
    double x[] = {1, 2, 2, 3}, y[] = {1, 2, 3, 4}, one[] = {1, 1, 1, 1};
    expect_lt(fabs(advise_spearman(x, y, 4) - 4.5 / sqrt(22.5)), 1e-12);
    assert_true(isnan(advise_spearman(one, y, 4)));
    assert_true(isnan(advise_spearman(x, y, 1)));
}

static void environment(const char *dir) {
    suite_fixture_standin_h100(dir);
    setenv("FAKE_TRAIN", "resnet26:epoch_ms=200,steps=10,setup_ms=5,share_speed=50,crowd_slow=100;"
                         "resnet50:epoch_ms=200,steps=10,setup_ms=5,share_speed=0,crowd_slow=50", 1);
}

/* The folder under results whose name ends with suffix. */
static void folder_ending(const char *results, const char *suffix, char *out, size_t size) {
    DIR *d = opendir(results);
    assert_non_null(d);
    out[0] = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t n = strlen(e->d_name), k = strlen(suffix);
        if (n >= k && !strcmp(e->d_name + n - k, suffix)) snprintf(out, size, "%s/%s", results, e->d_name);
    }
    closedir(d);
    assert_true(out[0] != 0);
}

static cJSON *read_json(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char text[1 << 20];
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    return cJSON_Parse(text);
}

static void write_json(const char *dir, const char *name, const cJSON *root) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    test_write_json(path, root);
}

static double number(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* A prediction's family (its mode, with a share or split or without) added to list once; the new count. */
static int family_add(char (*list)[48], int n, const cJSON *prediction) {
    char f[48];
    snprintf(f, sizeof f, "%s%s", cJSON_GetObjectItemCaseSensitive(prediction, "mode")->valuestring,
             cJSON_IsString(cJSON_GetObjectItemCaseSensitive(prediction, "option")) ? " with a share" : "");
    for (int i = 0; i < n; i++)
        if (!strcmp(list[i], f)) return n;
    if (n < 64) snprintf(list[n++], sizeof list[0], "%s", f);
    return n;
}

/* The entry of list with the prediction's label; NULL none. */
static const cJSON *entry_labelled(const cJSON *list, const cJSON *prediction) {
    const char *label = cJSON_GetObjectItemCaseSensitive(prediction, "label")->valuestring;
    for (const cJSON *m = list->child; m; m = m->next)
        if (!strcmp(cJSON_GetObjectItemCaseSensitive(m, "label")->valuestring, label)) return m;
    return NULL;
}

static void test_check_end_to_end(void **state) {
    (void)state;
    char dir[512], results[600], out[65536], err[65536], advice[1024];
    test_tmpdir(dir, sizeof dir);
    snprintf(results, sizeof results, "%s/results", dir);
    environment(dir);
    /* the stand-in draws a constant power: the probes' power and each check run's window energy */
    setenv("SUITE_NVML_STANDIN_POWER_W", "250", 1);
    char record[700];
    snprintf(record, sizeof record, "%s/record", dir); /* each fake job's arguments and environment */
    mkdir(record, 0700);
    setenv("FAKE_TRAIN_RECORD", record, 1);
    unsetenv("SUITE_CONV_CHOICES");
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--window", "0.3",
                             "--warmup-steps", "2", "--check", "--check-top", "3", "--objective", "energy", "--train",
                             FAKE_TRAIN_PATH, "--results", results, NULL);
    unsetenv("SUITE_NVML_STANDIN_POWER_W");
    unsetenv("FAKE_TRAIN_RECORD");
    if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "check: predicted against measured"));
    assert_non_null(strstr(out, "Spearman on energy"));
    assert_non_null(strstr(out, "energy per trained sample (J): predicted / measured"));
    assert_non_null(strstr(out, "regret: "));
    folder_ending(results, "-advise-S+M", advice, sizeof advice);
    /* every probe and every check run's job ran the convolution choices kept in the advice's folder */
    char cmd[3000], counts[800];
    snprintf(counts, sizeof counts, "%s/counts.txt", dir);
    snprintf(cmd, sizeof cmd, "ls %s/*.txt | wc -l > %s; grep -h '^env SUITE_CONV_CHOICES=' %s/*.txt | sort -u > %s.env",
             record, counts, record, counts);
    assert_int_equal(system(cmd), 0);
    char *text = test_read_text(counts, err, sizeof err);
    assert_non_null(text);
    expect_gt(atoi(text), 6); /* the probes' and the check's jobs */
    free(text);
    snprintf(cmd, sizeof cmd, "%s.env", counts);
    text = test_read_text(cmd, err, sizeof err);
    assert_non_null(text);
    char want[1200];
    snprintf(want, sizeof want, "env SUITE_CONV_CHOICES=%s/conv-choices.tsv\n", advice);
    assert_string_equal(text, want);
    free(text);
    cJSON *root = read_json(advice, "check.json");
    assert_non_null(root);
    const cJSON *modes = cJSON_GetObjectItemCaseSensitive(root, "modes");
    /* --check-top 3: the three best-ranked, and each family's best (its mode, with a share or split or
     * without) that is not among them: every family is measured, the top three whatever their family */
    cJSON *ranking = read_json(advice, "advice.json");
    assert_non_null(ranking);
    char families[64][48], measured_families[64][48];
    int nf = 0, nm = 0, rank = 0;
    for (const cJSON *p = cJSON_GetObjectItemCaseSensitive(ranking, "predictions")->child; p; p = p->next, rank++) {
        nf = family_add(families, nf, p);
        if (rank < 3) assert_non_null(entry_labelled(modes, p)); /* among the measured */
    }
    for (const cJSON *p = cJSON_GetObjectItemCaseSensitive(ranking, "predictions")->child; p; p = p->next)
        if (entry_labelled(modes, p)) nm = family_add(measured_families, nm, p);
    cJSON_Delete(ranking);
    assert_int_equal(nm, nf);
    int checked = cJSON_GetArraySize(modes);
    expect_ge(checked, 3);
    expect_le(checked, 3 + nf);
    for (const cJSON *m = modes->child; m; m = m->next) {
        assert_true(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "measured")));
        double pred = number(m, "predicted_stp"), meas = number(cJSON_GetObjectItemCaseSensitive(m, "stp"), "median");
        expect_lt(fabs(number(m, "stp_error") - (pred - meas) / meas), 1e-9);
        /* energy per sample: the probes' power over the predicted samples/s, against the window's */
        pred = number(m, "predicted_energy_per_sample_j");
        meas = number(cJSON_GetObjectItemCaseSensitive(m, "energy_per_sample_j"), "median");
        expect_gt(pred, 0);
        expect_gt(meas, 0);
        expect_lt(fabs(number(m, "energy_error") - (pred - meas) / meas), 1e-9);
        expect_lt(fabs(number(m, "measured_objective") + meas), 1e-12); /* lower is better: negated */
        const cJSON *job = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "jobs"), 0);
        expect_lt(fabs(number(job, "error") - (number(job, "predicted") - number(job, "measured")) /
                                                   number(job, "measured")), 1e-9);
    }
    /* the probe setting, and per candidate the sizes read off the law as advice.json has them */
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(root, "probes")->valuestring, "two");
    cJSON *advised = read_json(advice, "advice.json");
    assert_non_null(advised);
    for (const cJSON *m = modes->child; m; m = m->next) {
        const char *label = cJSON_GetObjectItemCaseSensitive(m, "label")->valuestring;
        const cJSON *pred = NULL, *law = cJSON_GetObjectItemCaseSensitive(m, "read_off_law");
        for (const cJSON *p = cJSON_GetObjectItemCaseSensitive(advised, "predictions")->child; p && !pred; p = p->next)
            if (!strcmp(cJSON_GetObjectItemCaseSensitive(p, "label")->valuestring, label)) pred = p;
        assert_non_null(pred);
        int read = 0, listed = 0;
        for (const cJSON *j = cJSON_GetObjectItemCaseSensitive(pred, "jobs")->child; j; j = j->next) {
            if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "read_off_law"))) continue;
            read++;
            for (const cJSON *e = law ? law->child : NULL; e; e = e->next)
                listed += !strcmp(cJSON_GetObjectItemCaseSensitive(e, "job")->valuestring,
                                  cJSON_GetObjectItemCaseSensitive(j, "label")->valuestring) &&
                          number(e, "sms") == number(j, "sms");
        }
        assert_int_equal(listed, read);
        assert_int_equal(law ? cJSON_GetArraySize(law) : 0, read);
    }
    cJSON_Delete(advised);
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(root, "summary");
    assert_int_equal((int)number(sum, "measured"), checked);
    assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(sum, "best_measured")));
    assert_true(isfinite(number(sum, "regret")));
    assert_true(isfinite(number(sum, "median_abs_energy_error")));
    /* the check's objective is energy: its energy block agrees with the summary's own */
    const cJSON *energy = cJSON_GetObjectItemCaseSensitive(sum, "energy");
    expect_eq(number(energy, "regret"), number(sum, "regret"));
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(energy, "best_measured")->valuestring,
                        cJSON_GetObjectItemCaseSensitive(sum, "best_measured")->valuestring);
    cJSON_Delete(root);
    char path[1200];
    snprintf(path, sizeof path, "%s/check.csv", advice);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    /* refusals */
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M",
                                     "--check-top", "2", "--train", FAKE_TRAIN_PATH, NULL), 2);
    assert_non_null(strstr(err, "--check-top goes with --check"));
}

/* Three fake runs (naive, mps, streams) whose jobs' progress the test sets from known constants and
 * probes it put in the cache: --fit finds the constants again. */
static void test_fit_recovers(void **state) {
    (void)state;
    char dir[512], results[600], runs[600], out[65536], err[65536];
    test_tmpdir(dir, sizeof dir);
    snprintf(results, sizeof results, "%s/results", dir);
    snprintf(runs, sizeof runs, "%s/runs", dir);
    environment(dir);
    /* the probes' keys, then the cache with known values */
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--dry-run",
                             "--json", "--window", "0.3", "--warmup-steps", "2", "--train", FAKE_TRAIN_PATH,
                             "--results", results, NULL);
    assert_int_equal(rc, 0);
    cJSON *listing = cJSON_Parse(out), *cache = cJSON_CreateObject();
    assert_non_null(listing);
    cJSON_AddNumberToObject(cache, "version", 1);
    cJSON *entries = cJSON_AddObjectToObject(cache, "probes");
    advise_probe s = {.rate = 1000, .busy = 0.7, .sm_active = 0.6, .dram_active = 0.3, .power_w = 300, .peak_bytes = 1e9};
    advise_probe m = {.rate = 500, .busy = 0.95, .sm_active = 0.9, .dram_active = 0.5, .power_w = 300, .peak_bytes = 1e9};
    for (const cJSON *p = cJSON_GetObjectItemCaseSensitive(listing, "probes")->child; p; p = p->next) {
        const advise_probe *which = strstr(cJSON_GetObjectItemCaseSensitive(p, "job")->valuestring, "resnet26") ? &s : &m;
        cJSON *e = cJSON_AddObjectToObject(entries, cJSON_GetObjectItemCaseSensitive(p, "key")->valuestring);
        double sms = number(p, "sms");
        cJSON_AddNumberToObject(e, "samples_per_s", which->rate * (sms > 0 ? sms / 132 : 1));
        cJSON_AddNumberToObject(e, "busy", which->busy);
        cJSON_AddNumberToObject(e, "sm_active", which->sm_active);
        cJSON_AddNumberToObject(e, "dram_active", which->dram_active);
        cJSON_AddNumberToObject(e, "power_w", which->power_w);
        cJSON_AddNumberToObject(e, "peak_bytes", which->peak_bytes);
    }
    mkdir(results, 0700);
    write_json(results, "advise-cache.json", cache);
    cJSON_Delete(cache);
    cJSON_Delete(listing);
    /* the runs, their progress rewritten from the truth */
    advise_constants truth = {.switch_cost = 0.2, .packing = 0.8, .bandwidth = 0.4, .streams_cost = 0.1};
    advise_mix mx = {.count = 2, .probe = {&s, &m}, .label = {"S", "M"}, .total_sms = 132, .memory_bytes = 80e9};
    const char *modes[] = {"naive", "mps", "streams"};
    const advise_kind kinds[] = {ADVISE_NAIVE, ADVISE_SHARED, ADVISE_STREAMS};
    for (int k = 0; k < 3; k++) {
        char where[700], run[1024];
        snprintf(where, sizeof where, "%s/%s", runs, modes[k]);
        rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--mix", "S+M", "--mode", modes[k],
                             "--window", "0.3", "--warmup-steps", "2", "--train", FAKE_TRAIN_PATH, "--results", where,
                             NULL);
        if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
        assert_int_equal(rc, 0);
        folder_ending(where, "S+M", run, sizeof run);
        advise_candidate c = {.kind = kinds[k]};
        advise_prediction p;
        advise_predict(&mx, &c, &truth, ADVISE_STP, &p);
        cJSON *summary = read_json(run, "summary.json");
        assert_non_null(summary);
        int j = 0;
        for (cJSON *job = cJSON_GetObjectItemCaseSensitive(summary, "jobs")->child; job; job = job->next, j++)
            cJSON_ReplaceItemInObjectCaseSensitive(job, "normalized_throughput", cJSON_CreateNumber(p.progress[j]));
        write_json(run, "summary.json", summary);
        cJSON_Delete(summary);
    }
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--fit", runs, "--window", "0.3",
                         "--warmup-steps", "2", "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "fitted on 3 run(s)"));
    /* the energy model has no constant: said, its residuals where the runs measured energy (none here) */
    assert_non_null(strstr(out, "energy per sample: no run measured it over its window"));
    assert_non_null(strstr(out, "the model has no constant of its own"));
    cJSON *fit = read_json(results, ADVISE_CONSTANTS_FILE);
    assert_non_null(fit);
    expect_lt(fabs(number(fit, "switch_cost") - 0.2), 0.01);
    expect_lt(fabs(number(fit, "packing") - 0.8), 0.01);
    expect_lt(fabs(number(fit, "bandwidth") - 0.4), 0.02);
    expect_lt(fabs(number(fit, "streams_cost") - 0.1), 0.01);
    expect_lt(number(fit, "rms_after"), 1e-3);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(fit, "runs")), 3);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(fit, "residuals")), 6);
    assert_true(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fit, "energy_model")));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(fit, "energy_residuals")), 0);
    assert_non_null(strstr(cJSON_GetObjectItemCaseSensitive(fit, "fitted_on")->valuestring, "3 run(s)"));
    cJSON_Delete(fit);
    /* the advice now names the constants' file */
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--mix", "S+M", "--window", "0.3",
                         "--warmup-steps", "2", "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "advise-constants.json (fitted on 3 run(s)"));
    /* refusals */
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--fit", results,
                                     "--mix", "S", "--train", FAKE_TRAIN_PATH, NULL), 2);
    assert_non_null(strstr(err, "it takes neither --mix"));
    char empty[700];
    snprintf(empty, sizeof empty, "%s/empty", dir);
    mkdir(empty, 0700);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--fit", empty,
                                     "--train", FAKE_TRAIN_PATH, "--results", results, NULL), 2);
    assert_non_null(strstr(err, "holds no run"));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "advise", "--fit", "a,,b",
                                     "--train", FAKE_TRAIN_PATH, NULL), 2);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_compare_by_hand), cmocka_unit_test(test_check_end_to_end),
                                       cmocka_unit_test(test_fit_recovers)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
