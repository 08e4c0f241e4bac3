/* Every job's data is named, and data that was asked for is never quietly replaced (issue 46,
 * item 6). A --data-root that was given but cannot be used (missing, a file, a FIFO, a link loop, a
 * link to nothing) is exit 2 for train and run_suite, in the dry run too and with --data-if-present;
 * a data file that is there but not a readable regular file (a folder, a FIFO, a link to
 * /dev/zero) is exit 2 at once, never a read that waits; a set absent under a usable root is
 * synthetic data and said so. The dry run, run.json and the report name each job's data: real
 * files and where, or synthetic and why. FIFOs are made in a temporary folder; /dev/zero is only
 * linked to, never written. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "data/data_check.h"
#include "tests/support/testutil.h"

static char out[1 << 17], err[1 << 16];

static void path_of(char *out_path, size_t size, const char *dir, const char *name) {
    snprintf(out_path, size, "%s/%s", dir, name);
}

/* A CIFAR-10 folder of six one-record files. */
static void make_cifar(const char *root) {
    uint8_t record[3073] = {3};
    char path[1024];
    mkdir(root, 0755);
    for (int f = 1; f <= 6; f++) {
        if (f <= 5) snprintf(path, sizeof path, "%s/data_batch_%d.bin", root, f);
        else snprintf(path, sizeof path, "%s/test_batch.bin", root);
        test_write_file(path, record, sizeof record);
    }
}

/* The roots no job can use, made in dir: their names and the words the refusal holds. */
typedef struct bad_root {
    char path[600];
    const char *says;
} bad_root;

static int make_bad_roots(const char *dir, bad_root *roots) {
    int n = 0;
    path_of(roots[n].path, sizeof roots[n].path, dir, "missing"), roots[n++].says = "does not exist";
    path_of(roots[n].path, sizeof roots[n].path, dir, "a-file"), roots[n++].says = "is a file";
    test_write_file(roots[n - 1].path, "x", 1);
    path_of(roots[n].path, sizeof roots[n].path, dir, "a-fifo"), roots[n++].says = "is a FIFO";
    assert_int_equal(mkfifo(roots[n - 1].path, 0600), 0);
    path_of(roots[n].path, sizeof roots[n].path, dir, "loop"), roots[n++].says = "is a symbolic link loop";
    assert_int_equal(symlink(roots[n - 1].path, roots[n - 1].path), 0);
    path_of(roots[n].path, sizeof roots[n].path, dir, "dangling"), roots[n++].says = "is a symbolic link to nothing";
    assert_int_equal(symlink("/nonexistent-target", roots[n - 1].path), 0);
    return n;
}

static void test_root_given_but_unusable(void **state) {
    (void)state;
    char dir[512], results[600];
    test_tmpdir(dir, sizeof dir);
    path_of(results, sizeof results, dir, "runs");
    bad_root roots[8];
    int n = make_bad_roots(dir, roots);
    for (int i = 0; i < n; i++) {
        char want[800];
        snprintf(want, sizeof want, "--data-root %s: %s", roots[i].path, roots[i].says);
        for (int form = 0; form < 2; form++) { /* with --data-if-present, as run_suite runs it, and without */
            int rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--data",
                                     "cifar10", "--data-root", roots[i].path, form ? "--data-if-present" : "--json",
                                     "--dry-run", NULL);
            if (rc != 2 || !strstr(err, want)) fail_msg("train, root %s: exit %d, stderr %s", roots[i].path, rc, err);
        }
        int rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--data", "cifar10",
                                 "--data-root", roots[i].path, "--data-if-present", "--epochs", "1", NULL);
        assert_int_equal(rc, 2);
        assert_null(strstr(err, "GPU"));
        for (int dry_run = 0; dry_run < 2; dry_run++) {
            rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--mode", "naive", "--mix", "S+XL",
                                 "--data-root", roots[i].path, "--train", FAKE_TRAIN_PATH, "--results", results,
                                 dry_run ? "--dry-run" : "--quick", NULL);
            if (rc != 2 || !strstr(err, want))
                fail_msg("run_suite%s, root %s: exit %d, stderr %s", dry_run ? " --dry-run" : "", roots[i].path, rc, err);
        }
        struct stat st;
        assert_int_not_equal(stat(results, &st), 0); /* no run folder */
    }
    /* a click-log job takes its TSV file as the root; an image job does not */
    char tsv[600];
    path_of(tsv, sizeof tsv, dir, "a-file");
    char e[512];
    assert_int_equal(data_root_check("criteo-kaggle", tsv, e, sizeof e), 0);
    assert_int_equal(data_root_check("cifar10", tsv, e, sizeof e), -1);
    assert_non_null(strstr(e, "is a file; expected the data sets' folder"));
    test_rmtree(dir);
}

/* A file of a set that is there in any form makes the set present; then it must be a readable
 * regular file: train and run_suite refuse it before any work, and nothing waits on a FIFO. */
static void test_present_but_not_a_regular_file(void **state) {
    (void)state;
    char dir[512];
    test_tmpdir(dir, sizeof dir);
    struct {
        const char *folder, *data, *model, *name; /* name: made under folder as kind */
        char kind;                                 /* 'd' a folder, 'p' a FIFO, 'z' a link to /dev/zero */
    } cases[] = {
        {"c-dir", "cifar10", "resnet26", "data_batch_1.bin", 'd'},
        {"c-fifo", "cifar10", "resnet26", "data_batch_1.bin", 'p'},
        {"c-zero", "cifar10", "resnet26", "data_batch_1.bin", 'z'},
        {"f-fifo", "fashion-mnist", "resnet26", "train-images-idx3-ubyte.gz", 'p'},
        {"i64-fifo", "imagenet64", "resnet50", "train_data_batch_1.npz", 'p'},
        {"criteo-fifo", "criteo-kaggle", "dlrm", "train.txt", 'p'},
        {"in-fifo", "imagenet", "resnet50", "train/n01/x.JPEG", 'p'},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char root[700], path[1000], results[700];
        path_of(root, sizeof root, dir, cases[k].folder);
        snprintf(results, sizeof results, "%s-runs", root);
        make_cifar(root); /* a whole CIFAR-10 beside it: the case's file is the one that is wrong */
        if (!strcmp(cases[k].data, "imagenet")) {
            snprintf(path, sizeof path, "%s/train", root), mkdir(path, 0755);
            snprintf(path, sizeof path, "%s/train/n01", root), mkdir(path, 0755);
        }
        snprintf(path, sizeof path, "%s/%s", root, cases[k].name);
        unlink(path);
        if (cases[k].kind == 'd') assert_int_equal(mkdir(path, 0755), 0);
        if (cases[k].kind == 'p') assert_int_equal(mkfifo(path, 0600), 0);
        if (cases[k].kind == 'z') assert_int_equal(symlink("/dev/zero", path), 0);
        const char *kind = cases[k].kind == 'd' ? "is a folder" : cases[k].kind == 'p' ? "is a FIFO"
                                                                                         : "is a character device";
        char *const train[] = {"/usr/bin/timeout", "20", (char *)test_binary("train"), "--model", (char *)cases[k].model,
                               "--data", (char *)cases[k].data, "--data-root", root, "--data-if-present", "--epochs",
                               "1", NULL};
        int rc = test_run(train, out, sizeof out, err, sizeof err);
        if (rc != 2 || !strstr(err, path) || !strstr(err, kind))
            fail_msg("train, %s: exit %d (124: it waited), expected 2 naming %s as %s; stderr %s", cases[k].folder, rc,
                     path, kind, err);
        char mix[96];
        snprintf(mix, sizeof mix, "%s:%s@64", cases[k].model, cases[k].data);
        char *const suite[] = {"/usr/bin/timeout", "20", (char *)test_binary("run_suite"), "--mode", "naive", "--mix",
                               mix, "--data-root", root, "--train", FAKE_TRAIN_PATH, "--results", results, "--dry-run",
                               NULL};
        rc = test_run(suite, out, sizeof out, err, sizeof err);
        if (rc != 2 || !strstr(err, kind))
            fail_msg("run_suite --dry-run, %s: exit %d, expected 2 naming it %s; stderr %s", cases[k].folder, rc, kind,
                     err);
    }
    test_rmtree(dir);
}

static const cJSON *job_of(const cJSON *run, int i) { return cJSON_GetArrayItem(cJSON_GetObjectItem(run, "jobs"), i); }

static const char *text_of(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItem(o, key);
    return cJSON_IsString(item) ? item->valuestring : "";
}

/* A set absent under a usable root trains on synthetic data, and every place that shows a job
 * names its data: the dry run, run.json (real: where; synthetic: why) and the report. */
static void test_each_job_names_its_data(void **state) {
    (void)state;
    char dir[512], root[600], results[600], what[1200];
    test_tmpdir(dir, sizeof dir);
    path_of(root, sizeof root, dir, "data");
    path_of(results, sizeof results, dir, "runs");
    make_cifar(root);
    assert_int_equal(data_describe("cifar10", root, 1, what, sizeof what), 1);
    assert_non_null(strstr(what, "real files in"));
    assert_int_equal(data_describe("imagenet64", root, 1, what, sizeof what), 0);
    assert_non_null(strstr(what, "synthetic imagenet64-shaped data: none of its files in"));
    assert_int_equal(data_describe("cifar10", "", 1, what, sizeof what), 0);
    assert_non_null(strstr(what, "no --data-root given"));
    assert_int_equal(data_describe("synthetic", root, 1, what, sizeof what), 0);
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--mode", "naive", "--mix", "S+M+XL",
                             "--data-root", root, "--train", FAKE_TRAIN_PATH, "--results", results, "--dry-run", NULL);
    assert_int_equal(rc, 0);
    char want[1200];
    snprintf(want, sizeof want, "job 0 S: real files in %s", root);
    assert_non_null(strstr(out, want));
    snprintf(want, sizeof want, "job 1 M: synthetic imagenet64-shaped data: none of its files in %s", root);
    assert_non_null(strstr(out, want));
    assert_non_null(strstr(out, "job 2 XL: synthetic criteo-terabyte-shaped data"));
    setenv("SUITE_NVML_LIBRARY", "/nonexistent", 1);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=40", 1);
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--mode", "naive", "--mix", "S+M",
                         "--data-root", root, "--train", FAKE_TRAIN_PATH, "--results", results, "--quick", "--window",
                         "0.3", NULL);
    assert_int_equal(rc, 0);
    DIR *d = opendir(results);
    char run[1200] = "";
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') snprintf(run, sizeof run, "%s/%s", results, e->d_name);
    if (d) closedir(d);
    char path[1300], e[256];
    snprintf(path, sizeof path, "%s/run.json", run);
    cJSON *json = test_read_json(path, e, sizeof e);
    assert_non_null(json);
    assert_string_equal(text_of(job_of(json, 0), "data_source"), "real");
    assert_non_null(strstr(text_of(job_of(json, 0), "data_detail"), root));
    assert_string_equal(text_of(job_of(json, 1), "data_source"), "synthetic");
    assert_non_null(strstr(text_of(job_of(json, 1), "data_detail"), "none of its files in"));
    cJSON_Delete(json);
    char page[1300];
    snprintf(page, sizeof page, "%s/page.html", dir);
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", run, "-o", page, NULL);
    if (rc != 0) fail_msg("report: exit %d: %s", rc, err);
    char *html = test_read_text(page, e, sizeof e);
    assert_non_null(html);
    assert_non_null(strstr(html, "M: synthetic imagenet64-shaped data: none of its files in"));
    free(html);
    unsetenv("FAKE_TRAIN");
    unsetenv("SUITE_NVML_LIBRARY");
    test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_root_given_but_unusable),
        cmocka_unit_test(test_present_but_not_a_regular_file),
        cmocka_unit_test(test_each_job_names_its_data),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
