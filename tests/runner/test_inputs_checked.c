/* Bad input found before any job or GPU: a present but malformed data set (also under
 * --data-if-present, which means absent only), a corrupt --load checkpoint, a --save path that
 * cannot be written, --mode all with every mode skipped, shares over 100%, a layout no GPU has,
 * empty --mig-layouts entries, decode=gpu without --data-root, and report -o naming a folder. Each is exit 2 and writes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "data/data_check.h"
#include "tests/support/testutil.h"

static char out[1 << 16], err[1 << 16];

/* A CIFAR-10 folder of six one-record files; bad_label >= 0 puts it on data_batch_2's record 0. */
static void make_cifar(const char *root, int bad_label) {
    uint8_t record[3073] = {3};
    char path[1024];
    for (int f = 1; f <= 6; f++) {
        if (f <= 5) snprintf(path, sizeof path, "%s/data_batch_%d.bin", root, f);
        else snprintf(path, sizeof path, "%s/test_batch.bin", root);
        record[0] = f == 2 && bad_label >= 0 ? (uint8_t)bad_label : 3;
        test_write_file(path, record, sizeof record);
    }
}

static void test_data_check(void **state) {
    char dir[512], e[1024];
    test_tmpdir(dir, sizeof dir);
    assert_int_equal(data_check("cifar10", dir, e, sizeof e), DATA_CHECK_ABSENT);
    assert_int_equal(data_check("imagenet64", dir, e, sizeof e), DATA_CHECK_ABSENT);
    assert_int_equal(data_check("synthetic", dir, e, sizeof e), DATA_CHECK_OK);
    make_cifar(dir, -1);
    assert_int_equal(data_check("cifar10", dir, e, sizeof e), DATA_CHECK_OK);
    make_cifar(dir, 99);
    assert_int_equal(data_check("cifar10", dir, e, sizeof e), DATA_CHECK_MALFORMED);
    assert_non_null(strstr(e, "data_batch_2.bin: record 0 has label 99"));
    char path[1024];
    snprintf(path, sizeof path, "%s/val_data.npz", dir); /* present (one file), so the rest must be there */
    test_write_file(path, "not a zip", 9);
    assert_int_equal(data_check("imagenet64", dir, e, sizeof e), DATA_CHECK_MALFORMED);
    test_rmtree(dir);
}

static void test_corrupt_data_refused_before_jobs(void **state) {
    char dir[512], data[600], results[600];
    test_tmpdir(dir, sizeof dir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(results, sizeof results, "%s/runs", dir);
    mkdir(data, 0755);
    make_cifar(data, 99);
    /* train itself: present but malformed is exit 2, never synthetic data */
    int rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--data", "cifar10",
                             "--data-root", data, "--data-if-present", "--epochs", "1", NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "data_batch_2.bin: record 0 has label 99"));
    assert_null(strstr(err, "synthetic"));
    /* run_suite: before any job starts, and no run folder */
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--mode", "serial", "--mix", "S", "--quick",
                         "--data-root", data, "--results", results, "--train", FAKE_TRAIN_PATH, NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "data_batch_2.bin: record 0 has label 99"));
    struct stat st;
    assert_int_not_equal(stat(results, &st), 0);
    test_rmtree(dir);
}

static void test_checkpoint_paths_before_gpu(void **state) {
    char dir[512], path[600], save[700];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    const char header[] = "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                          "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}";
    uint8_t file[8 + sizeof header - 1 + 6] = {(uint8_t)(sizeof header - 1)};
    memcpy(file + 8, header, sizeof header - 1);
    test_write_file(path, file, sizeof file);
    int rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--load", path,
                             "--epochs", "1", NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "--load"));
    assert_non_null(strstr(err, "overlap"));
    assert_null(strstr(err, "GPU"));
    const char *unwritable[] = {"/nonexistent/dir/x.safetensors", dir};
    for (int i = 0; i < 2; i++) {
        rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--save",
                             unwritable[i], "--epochs", "1", NULL);
        assert_int_equal(rc, 2);
        assert_non_null(strstr(err, "--save"));
        assert_null(strstr(err, "GPU"));
    }
    snprintf(save, sizeof save, "%s/ok.safetensors", dir); /* a good path goes on (to the GPU) */
    rc = test_run_binary("train", out, sizeof out, err, sizeof err, "--model", "resnet26", "--save", save,
                         "--epochs", "1", "--steps-per-epoch", "1", NULL);
    assert_int_not_equal(rc, 2);
    test_rmtree(dir);
}

static void test_run_suite_refusals(void **state) {
    char dir[512];
    test_tmpdir(dir, sizeof dir);
    const char *fake = FAKE_TRAIN_PATH;
    struct {
        const char *args[12];
        const char *message;
    } cases[] = {
        {{"--mode", "all", "--skip", "serial,naive,mps,mig,mig-emulate,streams,green", "--mix", "S", NULL},
         "leaves no mode"},
        {{"--mode", "green", "--mix", "S+S", "--green-share", "80,80", "--dry-run", NULL}, "add up to 160%"},
        {{"--mode", "mig", "--mix", "S", "--mig-layout", "garbage", "--dry-run", NULL}, "--mig-layout garbage"},
        {{"--mode", "mig-emulate", "--mix", "S", "--mig-gpu", "H100-80GB", "--mig-layouts", "1g.10gb;;7g.80gb",
          "--dry-run", NULL}, "an empty layout"},
        {{"--mode", "mig-emulate", "--mix", "S", "--mig-gpu", "H100-80GB", "--mig-layouts", "1g.10gb;", "--dry-run",
          NULL}, "an empty layout"},
        /* nothing to decode without the folder: refused, not synthetic data behind the user's back */
        {{"--mode", "mps", "--mix", "2*resnet50:imagenet@32[decode=gpu]", "--dry-run", NULL},
         "job 0 (resnet50:imagenet@32[decode=gpu]): decode=gpu decodes ImageNet's JPEG files: give --data-root"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *argv[24];
        int n = 0;
        argv[n++] = (char *)test_binary("run_suite");
        for (int k = 0; cases[i].args[k]; k++) argv[n++] = (char *)cases[i].args[k];
        argv[n++] = "--results", argv[n++] = dir, argv[n++] = "--train", argv[n++] = (char *)fake;
        argv[n] = NULL;
        int rc = test_run(argv, out, sizeof out, err, sizeof err);
        if (rc != 2 || !strstr(err, cases[i].message)) fail_msg("case %zu: exit %d: %s", i, rc, err);
    }
    /* the sweep is in the dry run's JSON */
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--mode", "mig-emulate", "--mix", "S",
                             "--mig-gpu", "H100-80GB", "--mig-layouts", "all", "--dry-run", "--json", "--train", fake,
                             NULL);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "\"layout_sweep\""));
    /* a long mix keeps its reason */
    char *mix = malloc(100001);
    for (int k = 0; k < 100000; k += 2) mix[k] = 'S', mix[k + 1] = '+';
    mix[99999] = 0;
    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--mode", "serial", "--mix", mix, NULL);
    free(mix);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "at most 64 jobs"));
    test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_check),
        cmocka_unit_test(test_corrupt_data_refused_before_jobs),
        cmocka_unit_test(test_checkpoint_paths_before_gpu),
        cmocka_unit_test(test_run_suite_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
