/* run_suite as a program in a test (RUN_SUITE_PATH, FAKE_TRAIN_PATH and FAKE_JOB_HOST_PATH, which
 * CMake passes): a fresh folder per test, its results folder, MPS's pipe directory of its own (never
 * a real daemon's) with a fake control daemon on PATH, NVML kept out so that every machine runs the
 * same, run_suite started with the fake train and that results folder, and the one run folder it
 * made. Included by one test file each (static inline functions: a file takes what it uses). */
#ifndef SUITE_TESTS_SUITE_FIXTURE_H
#define SUITE_TESTS_SUITE_FIXTURE_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tests/support/testutil.h"

#ifndef RUN_SUITE_PATH
#error "RUN_SUITE_PATH, FAKE_TRAIN_PATH and FAKE_JOB_HOST_PATH must be defined (CMake passes them)"
#endif

typedef struct suite_fixture {
    char dir[256], results[512], mps_bin[512];
    char out[1 << 16], err[1 << 18];
} suite_fixture;

static inline int suite_fixture_setup(void **state) {
    suite_fixture *f = calloc(1, sizeof *f);
    if (!f) return -1;
    test_tmpdir(f->dir, sizeof f->dir);
    snprintf(f->results, sizeof f->results, "%s/results", f->dir);
    char mps_dir[600];
    snprintf(mps_dir, sizeof mps_dir, "%s/default-mps", f->dir);
    mkdir(mps_dir, 0700);
    setenv("CUDA_MPS_PIPE_DIRECTORY", mps_dir, 1);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("SUITE_JOB_HOST", FAKE_JOB_HOST_PATH, 1);
    test_fake_mps_on_path(f->dir, FAKE_TRAIN_PATH, f->mps_bin, sizeof f->mps_bin);
    *state = f;
    return 0;
}

static inline int suite_fixture_teardown(void **state) {
    suite_fixture *f = *state;
    test_rmtree(f->dir);
    free(f);
    return 0;
}

/* run_suite with args (NULL-terminated), the fake train told `fake` (FAKE_TRAIN; NULL: unset),
 * --results f->results; its exit status, its output in f->out and f->err. */
static inline int suite_fixture_run(suite_fixture *f, const char *fake, const char *const *args) {
    char *argv[64] = {(char *)RUN_SUITE_PATH};
    int n = 1;
    for (; args[n - 1] && n < 58; n++) argv[n] = (char *)args[n - 1];
    argv[n++] = "--train", argv[n++] = FAKE_TRAIN_PATH;
    argv[n++] = "--results", argv[n++] = f->results;
    argv[n] = NULL;
    if (fake) setenv("FAKE_TRAIN", fake, 1);
    else unsetenv("FAKE_TRAIN");
    return test_run(argv, f->out, sizeof f->out, f->err, sizeof f->err);
}

/* The only run folder under f->results. */
static inline void suite_fixture_run_dir(suite_fixture *f, char *out, size_t size) {
    DIR *d = opendir(f->results);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') snprintf(out, size, "%s/%s", f->results, e->d_name), n++;
    closedir(d);
    assert_int_equal(n, 1);
}

#ifdef NVML_STANDIN_PATH
/* The GPU as the NVML stand-in's H100 without MIG, and MPS's pipe directory under dir with a fake
 * control daemon on PATH (the advisor's tests: a known SM count and MIG table, no real daemon). */
static inline void suite_fixture_standin_h100(const char *dir) {
    char bin[700], mps[600];
    snprintf(mps, sizeof mps, "%s/mps", dir);
    mkdir(mps, 0700);
    test_fake_mps_on_path(dir, FAKE_TRAIN_PATH, bin, sizeof bin);
    setenv("SUITE_NVML_LIBRARY", NVML_STANDIN_PATH, 1);
    setenv("SUITE_NVML_STANDIN_GPU", "H100-80GB", 1);
    setenv("SUITE_NVML_STANDIN_MIG", "off", 1);
    setenv("SUITE_JOB_HOST", FAKE_JOB_HOST_PATH, 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", mps, 1);
}
#endif

#endif
