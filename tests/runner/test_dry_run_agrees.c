/* The dry run is the run's checks without the GPU (issue 46): for every refused case below, one of
 * each item of the issue and of each kind of check (the options, the mix, the knobs, the data, the
 * outputs, the plans, the fit, a limit, a daemon, the baseline, the GPUs NVML counts), in every form
 * (a run, --gpus, --study, --slurm), run_suite --dry-run and run_suite without it give the same exit
 * status (2) and the same first error line, and the run writes nothing: no results folder, and the
 * path given as --results stands as it was. tests/support/fake_train is the train program; the NVML
 * stand-in (tests/nvml_standin: one A100 with MIG on) is the GPU where a case names it, no NVML
 * elsewhere; the MPS control program is fake_train under its name, never a real daemon's. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/support/testutil.h"

#define STANDIN "SUITE_NVML_LIBRARY=" NVML_STANDIN_PATH

typedef struct refused_case {
    const char *item;       /* what it shows (the issue's item or the check) */
    const char *env[4];     /* NAME=VALUE for both runs */
    const char *args[24];   /* run_suite's words; @R results, @F a file, @E an empty folder, @L a link loop,
                               @B a naive run's folder, @D a missing folder */
} refused_case;

static const refused_case CASES[] = {
    /* the options, the mix and the knobs (grammar: refused before any form runs) */
    {"a number by the rule", {NULL}, {"--mode", "naive", "--mix", "S", "--window", "0x10", NULL}},
    {"a list entry empty", {NULL}, {"--mode", "all", "--mix", "S", "--skip", "naive,,green", NULL}},
    {"an override given twice", {NULL}, {"--mode", "naive", "--mix", "S[epochs=2,epochs=3]", NULL}},
    {"a knob", {"SUITE_GPU_MEMORY=-5G", NULL}, {"--mode", "naive", "--mix", "S", NULL}},
    {"item 10: --completion of one epoch", {NULL}, {"--mode", "naive", "--mix", "S", "--completion", "--epochs", "1", NULL}},
    {"item 14: options that do not apply", {NULL}, {"--mode", "naive", "--mix", "S", "--sample-ms", "50", "--no-monitor", NULL}},
    /* outputs and inputs */
    {"item 8: --results a file", {NULL}, {"--mode", "naive", "--mix", "S", "--results", "@F", NULL}},
    {"item 14: --results a link loop", {NULL}, {"--mode", "naive", "--mix", "S", "--results", "@L", NULL}},
    {"a --data-root that is missing", {NULL}, {"--mode", "naive", "--mix", "S", "--data-root", "@D", NULL}},
    {"item 8: --baseline an empty folder", {NULL}, {"--mode", "naive", "--mix", "S", "--baseline", "@E", NULL}},
    {"item 8: --baseline a naive run", {NULL}, {"--mode", "naive", "--mix", "S", "--baseline", "@B", NULL}},
    /* plans, fit, limits, daemons, GPUs */
    {"item 5: 8 jobs, at most 7 instances", {STANDIN, NULL},
     {"--mode", "mig-emulate", "--via", "green", "--mix", "8*S", NULL}},
    {"item 5: the same without the GPU's table", {NULL}, {"--mode", "mig-emulate", "--via", "green", "--mix", "8*S", NULL}},
    {"item 5: the same under real MIG", {STANDIN, NULL}, {"--mode", "mig", "--mix", "8*S", NULL}},
    {"a sweep of real MIG without --mig-create", {STANDIN, NULL},
     {"--mode", "mig", "--mix", "S+S", "--mig-layouts", "all", NULL}},
    {"a mix that does not fit", {"SUITE_GPU_MEMORY=1G", NULL}, {"--mode", "naive", "--mix", "S+S", NULL}},
    {"item 10: a limit below the footprint", {NULL}, {"--mode", "mps", "--mix", "S", "--mps-mem", "1M", "--force", NULL}},
    {"item 8: --mps-pipe with no daemon", {NULL}, {"--mode", "mps", "--mix", "S", "--mps-pipe", "@E", NULL}},
    {"item 7: --gpu NVML does not count", {STANDIN, NULL}, {"--mode", "naive", "--mix", "S", "--gpu", "5", NULL}},
    {"item 7: a data-parallel job wider than the run", {STANDIN, NULL}, {"--mode", "naive", "--mix", "S[gpus=2]", NULL}},
    /* --gpus */
    {"item 7: --gpus NVML does not count", {STANDIN, NULL}, {"--gpus", "0,1", "--mode", "naive", "--mix", "S+S", NULL}},
    {"item 5: --gpus, 8 jobs on one card's MIG", {STANDIN, NULL},
     {"--gpus", "0", "--mode", "mig-emulate", "--via", "green", "--mix", "8*S", NULL}},
    {"item 9: --gpus with --results a file", {NULL}, {"--gpus", "0", "--mode", "naive", "--mix", "S", "--results", "@F", NULL}},
    {"--gpus, a card's limit below its footprint", {NULL}, {"--gpus", "0", "--mode", "mps", "--mix", "S", "--mps-mem", "1M", NULL}},
    /* --study */
    {"item 9: --study with --results a file", {NULL}, {"--study", "small", "--results", "@F", NULL}},
    {"item 7: --study on a GPU NVML does not count", {STANDIN, NULL}, {"--study", "small", "--gpus", "0,1", NULL}},
    /* --slurm (its run submits: the checks come first) */
    {"item 9: --slurm with --results a file", {NULL}, {"--slurm", "--mode", "naive", "--mix", "S", "--results", "@F", NULL}},
    {"item 12: --slurm --time -5", {NULL}, {"--slurm", "--mode", "naive", "--mix", "S", "--time", "-5", NULL}},
    {"item 12: --mixes with an empty entry", {NULL}, {"--slurm", "--mode", "naive", "--mixes", "S;;M", NULL}},
    {"item 8: --slurm --baseline a folder no task can use", {NULL},
     {"--slurm", "--mode", "naive", "--mix", "S", "--baseline", "@E", NULL}},
    {"item 5: --slurm, 8 jobs on MIG", {NULL}, {"--slurm", "--mode", "mig-emulate", "--via", "green", "--mix", "8*S", NULL}},
};

typedef struct fixture {
    char dir[256], results[400], file[400], empty[400], loop[400], missing[400], naive[800], bin[400], mps[400];
} fixture;

static char out[1 << 17], err[1 << 17];

/* run_suite with args (placeholders filled), --train and --results added where absent. */
static int run(const fixture *f, const char *const *args, int dry) {
    char *argv[64];
    int n = 0, train = 0, results = 0;
    argv[n++] = (char *)RUN_SUITE_PATH;
    for (int i = 0; args[i]; i++) {
        const char *a = args[i];
        if (!strcmp(a, "@R")) a = f->results;
        else if (!strcmp(a, "@F")) a = f->file;
        else if (!strcmp(a, "@E")) a = f->empty;
        else if (!strcmp(a, "@L")) a = f->loop;
        else if (!strcmp(a, "@D")) a = f->missing;
        else if (!strcmp(a, "@B")) a = f->naive;
        train |= !strcmp(a, "--train"), results |= !strcmp(a, "--results");
        argv[n++] = (char *)a;
    }
    if (!train) argv[n++] = "--train", argv[n++] = (char *)FAKE_TRAIN_PATH;
    if (!results) argv[n++] = "--results", argv[n++] = (char *)f->results;
    if (dry) argv[n++] = "--dry-run";
    argv[n] = NULL;
    return test_run(argv, out, sizeof out, err, sizeof err);
}

/* The first line of stderr that is an error (warnings and notes aside: the dry run and the run may
 * say different things of what they did not check). */
static void first_error(const char *text, char *line, size_t size) {
    line[0] = 0;
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        if (strncmp(p, "warning:", 8) && strncmp(p, "note:", 5) && len) {
            snprintf(line, size, "%.*s", (int)len, p);
            return;
        }
        p += len + (p[len] == '\n');
    }
}

static void set_env(const char *const *env, int on) {
    for (int i = 0; env[i]; i++) {
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(env[i], "="), env[i]);
        if (on) setenv(name, strchr(env[i], '=') + 1, 1);
        else unsetenv(name);
    }
    if (!on) setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
}

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    test_tmpdir(f->dir, sizeof f->dir);
    snprintf(f->results, sizeof f->results, "%s/results", f->dir);
    snprintf(f->file, sizeof f->file, "%s/a-file", f->dir);
    snprintf(f->empty, sizeof f->empty, "%s/empty", f->dir);
    snprintf(f->loop, sizeof f->loop, "%s/loop", f->dir);
    snprintf(f->missing, sizeof f->missing, "%s/missing", f->dir);
    snprintf(f->mps, sizeof f->mps, "%s/default-mps", f->dir);
    FILE *file = fopen(f->file, "w");
    fputs("not a folder\n", file);
    fclose(file);
    mkdir(f->empty, 0755), mkdir(f->mps, 0700);
    assert_int_equal(symlink(f->loop, f->loop), 0);
    test_fake_mps_on_path(f->dir, FAKE_TRAIN_PATH, f->bin, sizeof f->bin);
    setenv("CUDA_MPS_PIPE_DIRECTORY", f->mps, 1);
    setenv("SUITE_JOB_HOST", FAKE_JOB_HOST_PATH, 1);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    /* a naive run to name as a --baseline (a serial run is what it takes) */
    char naive_results[600];
    snprintf(naive_results, sizeof naive_results, "%s/naive-runs", f->dir);
    char *argv[] = {(char *)RUN_SUITE_PATH, "--mode", "naive", "--mix", "S", "--completion", "--epochs", "2",
                    "--steps-per-epoch", "2", "--train", (char *)FAKE_TRAIN_PATH, "--results", naive_results, NULL};
    assert_int_equal(test_run(argv, out, sizeof out, err, sizeof err), 0);
    DIR *d = opendir(naive_results);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') snprintf(f->naive, sizeof f->naive, "%s/%s", naive_results, e->d_name);
    closedir(d);
    assert_true(f->naive[0] != 0);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    test_rmtree(f->dir);
    free(f);
    return 0;
}

static void test_dry_run_refuses_what_the_run_refuses(void **state) {
    fixture *f = *state;
    char dry_line[1024], real_line[1024];
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const refused_case *c = &CASES[i];
        set_env(c->env, 1);
        int dry = run(f, c->args, 1);
        first_error(err, dry_line, sizeof dry_line);
        char dry_err[2048];
        snprintf(dry_err, sizeof dry_err, "%s", err);
        int real = run(f, c->args, 0);
        first_error(err, real_line, sizeof real_line);
        set_env(c->env, 0);
        if (dry != 2 || real != 2 || strcmp(dry_line, real_line) || !dry_line[0])
            fail_msg("%s: the dry run exits %d with '%s', the run %d with '%s'\n(dry run's stderr: %.600s)\n(run's stderr: "
                     "%.600s)", c->item, dry, dry_line, real, real_line, dry_err, err);
        /* the run wrote nothing: no results folder, and what --results named stands as it was */
        struct stat st;
        if (stat(f->results, &st) == 0) fail_msg("%s: the refused run made %s", c->item, f->results);
        assert_int_equal(stat(f->file, &st), 0);
        assert_true(S_ISREG(st.st_mode) && st.st_size == (off_t)strlen("not a folder\n"));
        assert_int_equal(lstat(f->loop, &st), 0);
        assert_true(S_ISLNK(st.st_mode));
        DIR *d = opendir(f->empty);
        int entries = 0;
        for (struct dirent *e; d && (e = readdir(d));) entries += e->d_name[0] != '.';
        if (d) closedir(d);
        if (entries) fail_msg("%s: the refused run wrote into %s", c->item, f->empty);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_dry_run_refuses_what_the_run_refuses, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
