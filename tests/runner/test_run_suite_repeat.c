/* run_suite --repeat N as a program (RUN_SUITE_PATH) with tests/support/fake_train as its train: the dry
 * run lists every repeat's modes in order (serial first, the collocated modes rotated), --mode all
 * and one mode write a complete run folder per repeat and repeats.json/.csv across them with
 * "median [min-max]" and the ranking lines, and bad values or forms are refused (exit 2, naming
 * --repeat, nothing written). NVML is kept out so the runs are the same everywhere. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "tests/support/suite_fixture.h"
#include "tests/support/testutil.h"

typedef suite_fixture fixture;

static cJSON *load_json(const char *dir, const char *name) {
    char path[1200], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = test_read_text(path, err, sizeof err);
    if (!text) fprintf(stderr, "%s\n", err);
    assert_non_null(text);
    cJSON *json = cJSON_Parse(text);
    free(text);
    assert_non_null(json);
    return json;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItem(o, key);
    return cJSON_IsString(item) ? item->valuestring : "";
}

static cJSON *mode_entry(cJSON *repeats, const char *mode) {
    cJSON *modes = cJSON_GetObjectItem(repeats, "modes");
    for (int i = 0; i < cJSON_GetArraySize(modes); i++)
        if (!strcmp(str(cJSON_GetArrayItem(modes, i), "mode"), mode)) return cJSON_GetArrayItem(modes, i);
    return NULL;
}

/* Every case names --repeat and exits 2 before anything is written. */
static void test_refused(void **state) {
    fixture *f = *state;
    struct { const char *args[12]; const char *message; } cases[] = {
        {{"--mode", "naive", "--mix", "S", "--repeat", "0", NULL}, "--repeat: expected a whole number from 1 to 100"},
        {{"--mode", "naive", "--mix", "S", "--repeat", "101", NULL}, "--repeat: expected a whole number from 1 to 100"},
        {{"--mode", "naive", "--mix", "S", "--repeat", "-1", NULL}, "--repeat: expected a whole number"},
        {{"--mode", "naive", "--mix", "S", "--repeat", "three", NULL}, "--repeat: expected a whole number"},
        {{"--mode", "naive", "--mix", "S", "--repeat=", NULL}, "--repeat: expected a whole number"},
        {{"--mode", "naive", "--mix", "S", "--repeat", NULL}, "--repeat: expected"},
        {{"--list", "--repeat", "2", NULL}, "--repeat does not go with --list"},
        {{"--study", "small", "--repeat", "0", NULL}, "--repeat: expected a whole number from 1 to 100"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", "S+S", "--repeat", "2", NULL}, "--repeat does not go with --gpus"},
        {{"--mode", "mig-emulate", "--mix", "S+S", "--mig-layouts", "all", "--repeat", "2", NULL},
         "--repeat goes with a run of the mix, not the layout sweep"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = suite_fixture_run(f, NULL, cases[i].args);
        if (rc != 2 || !strstr(f->err, cases[i].message))
            fprintf(stderr, "case %zu: exit %d, stderr: %s\n", i, rc, f->err);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(f->err, cases[i].message));
    }
    struct stat st;
    assert_int_equal(stat(f->results, &st), -1);
}

static void test_dry_run_lists_repeats(void **state) {
    fixture *f = *state;
    const char *text[] = {"--mode", "all", "--mix", "S+S", "--skip", "streams,green", "--repeat", "3", "--dry-run", NULL};
    assert_int_equal(suite_fixture_run(f, NULL, text), 0);
    assert_non_null(strstr(f->out, "repeats (--repeat 3)"));
    assert_non_null(strstr(f->out, "  repeat-1: serial, naive, mps, mig\n"
                                   "  repeat-2: serial, mps, mig, naive\n"
                                   "  repeat-3: serial, mig, naive, mps\n"));
    /* the = form is every option's: the same as "--repeat 3" */
    const char *json[] = {"--mode", "naive", "--mix", "S", "--repeat=3", "--dry-run", "--json", NULL};
    assert_int_equal(suite_fixture_run(f, NULL, json), 0);
    cJSON *root = cJSON_Parse(f->out);
    assert_non_null(root);
    cJSON *repeats = cJSON_GetObjectItem(root, "repeats");
    assert_int_equal(cJSON_GetArraySize(repeats), 3);
    cJSON *last = cJSON_GetArrayItem(repeats, 2);
    assert_string_equal(str(last, "folder"), "repeat-3");
    assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(last, "modes"), 0)->valuestring, "naive");
    cJSON_Delete(root);
    const char *once[] = {"--mode", "naive", "--mix", "S", "--dry-run", NULL}; /* no --repeat: no listing */
    assert_int_equal(suite_fixture_run(f, NULL, once), 0);
    assert_null(strstr(f->out, "repeat-1"));
    struct stat st;
    assert_int_equal(stat(f->results, &st), -1);
}

static void test_all_modes_repeated(void **state) {
    fixture *f = *state;
    const char *args[] = {"--mode", "all", "--mix", "S+S", "--skip", "streams,green", "--quick", "--repeat", "3", NULL};
    assert_int_equal(suite_fixture_run(f, "*:epoch_ms=40", args), 0);
    char dir[1024], sub[1200];
    suite_fixture_run_dir(f, dir, sizeof dir);
    const char *first[] = {"naive", "mps", "mig"};
    for (int r = 1; r <= 3; r++) {
        snprintf(sub, sizeof sub, "%s/repeat-%d", dir, r);
        cJSON *cmp = load_json(sub, "comparison.json"); /* in the order they ran */
        assert_int_equal(cJSON_GetArraySize(cmp), 4);
        assert_string_equal(str(cJSON_GetArrayItem(cmp, 0), "mode"), "serial");
        assert_string_equal(str(cJSON_GetArrayItem(cmp, 1), "mode"), first[r - 1]);
        cJSON_Delete(cmp);
        snprintf(sub, sizeof sub, "%s/repeat-%d/naive", dir, r);
        cJSON *summary = load_json(sub, "summary.json"); /* each repeat a complete run folder */
        assert_string_equal(str(summary, "status"), "complete");
        assert_string_equal(str(cJSON_GetObjectItem(summary, "serial_baseline"), "source"), "serial part of this run");
        cJSON_Delete(summary);
    }
    cJSON *repeats = load_json(dir, "repeats.json");
    assert_int_equal(cJSON_GetObjectItem(repeats, "repeats")->valueint, 3);
    cJSON *naive = mode_entry(repeats, "naive");
    assert_non_null(naive);
    /* the window measurement's metrics (speed-up against serial is the completion measurement's) */
    const char *keys[] = {"stp", "antt", "fairness"};
    for (int i = 0; i < 3; i++) {
        cJSON *metric = cJSON_GetObjectItem(cJSON_GetObjectItem(naive, "metrics"), keys[i]);
        assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(metric, "values")), 3);
        assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(metric, "spread"), "n")->valueint, 3);
    }
    cJSON *job = cJSON_GetArrayItem(cJSON_GetObjectItem(naive, "jobs"), 1);
    cJSON *rate = cJSON_GetObjectItem(cJSON_GetObjectItem(job, "metrics"), "timed_samples_per_s");
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(rate, "spread"), "n")->valueint, 3);
    cJSON *mig = mode_entry(repeats, "mig"); /* skipped without NVML: no values, no rank */
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(mig, "metrics"),
                                                                                    "stp"), "spread"), "n")->valueint, 0);
    char stp[256];
    snprintf(stp, sizeof stp, "%s", str(cJSON_GetObjectItem(repeats, "rankings"), "stp"));
    assert_non_null(strstr(stp, "STP: "));
    assert_null(strstr(stp, "mig"));
    /* every mode that ran is ranked (how ranges order is test_repeats' exact test: here the jobs'
     * pace is the machine's, so no order between modes is asserted) */
    assert_non_null(strstr(stp, "naive"));
    assert_non_null(strstr(stp, "mps"));
    assert_non_null(strstr(stp, "serial"));
    cJSON_Delete(repeats);
    assert_non_null(strstr(f->out, "across 3 repeat(s), median [min-max]"));
    assert_non_null(strstr(f->out, "1.000 [1.000-1.000]")); /* serial's STP */
    assert_non_null(strstr(f->out, stp));
    char path[1200], err[256];
    snprintf(path, sizeof path, "%s/repeats.csv", dir);
    char *csv = test_read_text(path, err, sizeof err);
    assert_non_null(csv);
    assert_non_null(strstr(csv, "repeat_1,repeat_2,repeat_3,median,min,max,n\n"));
    assert_non_null(strstr(csv, "\nnaive,1,S,slowdown,"));
    free(csv);
    cJSON *run_json = load_json(dir, "run.json");
    assert_string_equal(str(run_json, "status"), "complete");
    cJSON_Delete(run_json);
}

static void test_one_mode_repeated(void **state) {
    fixture *f = *state;
    const char *args[] = {"--mode", "naive", "--mix", "S+M", "--quick", "--repeat", "2", NULL};
    assert_int_equal(suite_fixture_run(f, "*:epoch_ms=30", args), 0);
    char dir[1024], sub[1200];
    suite_fixture_run_dir(f, dir, sizeof dir);
    for (int r = 1; r <= 2; r++) {
        snprintf(sub, sizeof sub, "%s/repeat-%d", dir, r);
        cJSON *summary = load_json(sub, "summary.json");
        assert_string_equal(str(summary, "mode"), "naive");
        cJSON_Delete(summary);
        cJSON_Delete(load_json(sub, "run.json"));
    }
    cJSON *repeats = load_json(dir, "repeats.json");
    cJSON *modes = cJSON_GetObjectItem(repeats, "modes");
    assert_int_equal(cJSON_GetArraySize(modes), 1);
    cJSON *job = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(modes, 0), "jobs"), 1);
    assert_string_equal(str(job, "label"), "M");
    cJSON *rate = cJSON_GetObjectItem(cJSON_GetObjectItem(job, "metrics"), "timed_samples_per_s");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(rate, "values")), 2);
    assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(rate, "spread"), "n")->valueint, 2);
    cJSON_Delete(repeats);
    assert_non_null(strstr(f->out, "across 2 repeat(s)"));
    assert_null(strstr(f->out, "ranking")); /* one mode: nothing to rank */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_refused, suite_fixture_setup, suite_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_dry_run_lists_repeats, suite_fixture_setup, suite_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_all_modes_repeated, suite_fixture_setup, suite_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_one_mode_repeated, suite_fixture_setup, suite_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
