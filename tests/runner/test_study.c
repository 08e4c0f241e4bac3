/* run_suite --study: the matrix of each set (pure), its options, and a whole --study small run of
 * tests/support/fake_train under the NVML stand-in (an 80 GB H100 with MIG off), where the 7-way cells do
 * not fit, so they are recorded and not run, and the report is written at the study's top. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runner/suite/multi/study.h"
#include "tests/support/testutil.h"

static void test_cells(void **state) {
    study_cell cells[128];
    /* small: serial and mps alone (--quick: serial), then naive, mps and mig-emulate at 2, 3 and 7 */
    int n = study_cells("small", 0, NULL, 0, cells, 128);
    assert_int_equal(n, 2 + 3 * 3);
    assert_string_equal(cells[1].mode, "mps");
    assert_string_equal(cells[1].mix, "1*S");
    n = study_cells("small", 1, NULL, 0, cells, 128);
    assert_int_equal(n, 1 + 3 * 3);
    assert_string_equal(cells[0].mode, "serial");
    assert_string_equal(cells[0].mix, "1*S");
    assert_string_equal(cells[1].mode, "naive");
    assert_string_equal(cells[1].mix, "2*S");
    assert_string_equal(cells[n - 1].mix, "7*S");
    assert_string_equal(cells[n - 1].mode, "mig-emulate");
    assert_int_equal(cells[n - 1].degree, 7);
    assert_int_equal(cells[1].steps, 80);
    assert_int_equal(study_cells("small", 0, NULL, 0, cells, 128), 11);
    assert_int_equal(cells[1].steps, 0); /* not quick: the run's own (or --steps-per-epoch) */
    /* real MIG where it is on: one more per degree */
    assert_int_equal(study_cells("small", 1, NULL, 1, NULL, 0), 2 + 4 * 3);
    assert_int_equal(study_cells("small", 0, NULL, 1, NULL, 0), 3 + 4 * 3);
    /* medium and large: two workloads each; the explicit job keeps its count */
    assert_int_equal(study_cells("large", 1, NULL, 0, cells, 128), 20);
    assert_string_equal(cells[10].workload, "CaiT-XXS24");
    assert_string_equal(cells[10].mix, "1*cait_xxs24:imagenet@128");
    /* mixed: S+M+M+M and the recommender with ResNet-152, all modes in one run each */
    assert_int_equal(study_cells("mixed", 1, NULL, 0, cells, 128), 2);
    assert_string_equal(cells[0].mode, "all");
    assert_int_equal(cells[0].degree, 4);
    assert_string_equal(cells[1].workload, "XL+L");
    assert_int_equal(cells[0].share_memory, 0);
    assert_int_equal(cells[1].share_memory, 1);  /* Table 2's "MIG (shared)" */
    assert_int_equal(study_cells("all", 1, NULL, 0, NULL, 0), 5 * 10 + 2);
    assert_int_equal(study_cells("all", 0, NULL, 0, NULL, 0), 5 * 11 + 2);
    const int degrees[] = {1, 2, 0};
    assert_int_equal(study_cells("medium", 1, degrees, 0, NULL, 0), 2 * (1 + 3 * 1));
    /* a short buffer is filled as far as it goes; the count says how many there are */
    assert_int_equal(study_cells("all", 1, NULL, 0, cells, 3), 52);
}

static void test_bad_options(void **state) {
    char out[4096], err[4096];
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study", "huge", NULL), 2);
    assert_non_null(strstr(err, "small, medium, large, mixed, all"));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study", NULL), 2);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study", "small",
                                     "--mix", "S", NULL), 2);
    assert_non_null(strstr(err, "--mix"));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study", "small",
                                     "--degrees", "1,0", NULL), 2);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study", "small",
                                     "--steps-per-epoch", "x", NULL), 2);
    assert_non_null(strstr(err, "--steps-per-epoch: expected a whole number from 1 to 1000000000000, got 'x'"));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study=small",
                                     "--sample-ms=5", NULL), 2);
    assert_non_null(strstr(err, "--sample-ms: expected a whole number from 10 to 60000, got '5'"));
    /* --help wins wherever it stands, over bad values too */
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study", "small", "--gpu",
                                     "x", "--mix", "S", "--help", NULL), 0);
    assert_non_null(strstr(out, "usage: run_suite --study SET"));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--help", "--study", NULL), 0);
    assert_non_null(strstr(out, "usage: run_suite --study SET"));
}

/* "--study=SET" is --study SET, as every option's "=" form is. */
static void test_equals_form(void **state) {
    char out[16384], err[65536];
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study=small", "--quick", "--dry-run",
                             "--epochs=3", "--train=" FAKE_TRAIN_PATH, NULL);
    if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "10 runs (small, quick)"));
}

/* A temporary folder (dir), its results folder, a fake MPS control program on PATH and the NVML
 * stand-in as an H100 without MIG: where a study runs with the fake train. */
static void study_place(char *dir, size_t dir_size, char *results, size_t results_size) {
    char mps_dir[600], bin[600];
    test_tmpdir(dir, dir_size);
    snprintf(results, results_size, "%s/results", dir);
    snprintf(mps_dir, sizeof mps_dir, "%s/mps", dir);
    mkdir(mps_dir, 0700);
    test_fake_mps_on_path(dir, FAKE_TRAIN_PATH, bin, sizeof bin);
    setenv("SUITE_NVML_LIBRARY", NVML_STANDIN_PATH, 1);
    setenv("SUITE_NVML_STANDIN_GPU", "H100-80GB", 1);
    setenv("SUITE_NVML_STANDIN_MIG", "off", 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", mps_dir, 1);
}

static void test_small_study(void **state) {
    char dir[512], results[600], out[16384], err[65536];
    study_place(dir, sizeof dir, results, sizeof results);
    setenv("FAKE_TRAIN", "*:epoch_ms=60,footprint=12884901888", 1); /* 7 x 12 GiB > 80 GB */

    /* --dry-run: the matrix with run_suite's fit check, nothing written */
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study", "small", "--quick",
                             "--dry-run", "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
    assert_int_equal(rc, 0);
    assert_int_equal((int)(strstr(out, "10 runs") != NULL), 1);
    assert_non_null(strstr(out, "does not fit"));
    struct stat st;
    assert_int_not_equal(stat(results, &st), 0);

    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study", "small", "--quick",
                         "--degrees", "1,7", "--train", FAKE_TRAIN_PATH, "--results", results, NULL);
    if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
    assert_int_equal(rc, 0);
    char *const find[] = {"/usr/bin/find", results, "-name", "study.json", NULL};
    char found[1024], ferr[64];
    assert_int_equal(test_run(find, found, sizeof found, ferr, sizeof ferr), 0);
    found[strcspn(found, "\n")] = 0;
    FILE *f = fopen(found, "r");
    assert_non_null(f);
    static char text[65536];
    text[fread(text, 1, sizeof text - 1, f)] = 0;
    fclose(f);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_string_equal(cJSON_GetObjectItem(root, "status")->valuestring, "complete");
    /* built from a git checkout: its revision (git found on PATH, else the build's) */
    if (stat(SUITE_SOURCE_DIR "/.git", &st) == 0)
        assert_int_equal(strspn(cJSON_GetObjectItem(root, "suite_revision")->valuestring, "0123456789abcdef"), 40);
    const cJSON *cells = cJSON_GetObjectItem(root, "cells");
    assert_int_equal(cJSON_GetArraySize(cells), 1 + 3); /* serial alone; three modes at 7 */
    int ran = 0, refused = 0;
    for (int i = 0; i < cJSON_GetArraySize(cells); i++) {
        const cJSON *c = cJSON_GetArrayItem(cells, i);
        const char *status = cJSON_GetObjectItem(c, "status")->valuestring;
        if (!strcmp(status, "complete")) {
            ran++;
            char run[1200];
            snprintf(run, sizeof run, "%.*s/%s/summary.json", (int)(strrchr(found, '/') - found), found,
                     cJSON_GetObjectItem(c, "folder")->valuestring);
            assert_int_equal(stat(run, &st), 0);
            assert_string_equal(cJSON_GetObjectItem(c, "job")->valuestring, "resnet26:cifar10@128");
        } else {
            assert_string_equal(status, "does not fit");
            assert_int_equal(cJSON_GetObjectItem(c, "degree")->valueint, 7);
            assert_non_null(strstr(cJSON_GetObjectItem(c, "reason")->valuestring, "84.00 GiB"));
            refused++;
        }
    }
    assert_int_equal(ran, 1);
    assert_int_equal(refused, 3);
    cJSON_Delete(root);
    char page[1200];
    snprintf(page, sizeof page, "%.*s/report.html", (int)(strrchr(found, '/') - found), found);
    assert_int_equal(stat(page, &st), 0);
    assert_non_null(strstr(err, "[study] report:"));
    test_rmtree(dir);
}

/* --window and --repeat reach every run; every job of the study keeps its convolution choices in
 * one file, the study's. */
static void test_study_window_and_repeats(void **state) {
    (void)state;
    char dir[512], results[600], record[600], out[16384], err[65536], cmd[2048];
    study_place(dir, sizeof dir, results, sizeof results);
    snprintf(record, sizeof record, "%s/record", dir);
    mkdir(record, 0755);
    setenv("FAKE_TRAIN", "*:epoch_ms=60", 1);
    setenv("FAKE_TRAIN_RECORD", record, 1);
    unsetenv("SUITE_CONV_CHOICES");
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--study", "small", "--quick",
                             "--degrees", "2", "--window", "0.4", "--repeat", "2", "--train", FAKE_TRAIN_PATH,
                             "--results", results, NULL);
    unsetenv("FAKE_TRAIN_RECORD");
    if (rc != 0) fprintf(stderr, "%s\n%s\n", out, err);
    assert_int_equal(rc, 0);
    /* serial alone and naive, mps, mig-emulate at 2: each launched twice, with its spread */
    snprintf(cmd, sizeof cmd, "find %s -name repeats.json | wc -l > %s/n.txt; "
             "grep -h '^env SUITE_CONV_CHOICES=' %s/*.txt | sort -u | wc -l >> %s/n.txt; "
             "grep -h '^env SUITE_CONV_CHOICES=' %s/*.txt | grep -c 'study-small/conv-choices.tsv$' >> %s/n.txt; "
             "find %s -path '*repeat-2*' -name summary.json | head -1 | xargs grep -cE '\"window_length_s\":[[:space:]]*0.4' "
             ">> %s/n.txt", results, dir, record, dir, record, dir, results, dir);
    assert_int_equal(system(cmd), 0);
    char path[700], *text;
    snprintf(path, sizeof path, "%s/n.txt", dir);
    text = test_read_text(path, err, sizeof err);
    assert_non_null(text);
    int repeats = 0, files = 0, in_study = 0, window = 0;
    assert_int_equal(sscanf(text, "%d %d %d %d", &repeats, &files, &in_study, &window), 4);
    free(text);
    assert_int_equal(repeats, 4);
    assert_int_equal(files, 1);
    expect_gt(in_study, 0);
    assert_int_equal(window, 1);
    test_rmtree(dir);
}

/* The revision study.json records, from a tree that is no git checkout: git is not asked (its "fatal: not a
 * git repository" never shows), the build's revision stands, and without one "unknown", said so. */
static void test_revision_outside_a_checkout(void **state) {
    char dir[512], log[600], text[4096] = "", rev[64];
    test_tmpdir(dir, sizeof dir);
    snprintf(log, sizeof log, "%s/stderr", dir);
    int saved = dup(2), file = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(file, 2);
    study_revision(dir, "", rev, sizeof rev);
    char built[64];
    study_revision(dir, "0123abcd", built, sizeof built);
    fflush(stderr);
    dup2(saved, 2);
    close(saved), close(file);
    FILE *f = fopen(log, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = 0;
    if (f) fclose(f);
    assert_string_equal(rev, "unknown");
    assert_string_equal(built, "0123abcd");
    assert_non_null(strstr(text, "note: the suite's revision is unknown"));
    assert_null(strstr(text, "fatal"));
    study_revision(SUITE_SOURCE_DIR, "", rev, sizeof rev); /* the checkout itself: git's answer, or what stands */
    expect_gt(strlen(rev), 0);
    test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_study_window_and_repeats),
        cmocka_unit_test(test_cells),
        cmocka_unit_test(test_revision_outside_a_checkout),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_equals_form),
        cmocka_unit_test(test_small_study),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
