/* run_suite --gpus with a data-parallel job beside each card's small jobs (M[gpus=2]+4*S), end to
 * end with fake_train and a stated GPU memory (no NVML): the dry run shows the job's own run and
 * its MPS choice; a run starts every job under ONE start barrier across the cards (their go times
 * agree), gives the data-parallel job CUDA_VISIBLE_DEVICES=0,1 and NCCL_NVLS_ENABLE=0 and counts it
 * once in the summary; under the window measurement every job of every run is measured over ONE
 * window (the same T0 and T1), opened when the slowest run has warmed up, and a run that ends
 * during its warm-up holds no other run's window back; a serial run of the mix is its reference,
 * under either measurement (the whole run's STP from the window rates); its failure hangs
 * nothing; the modes without one group of job processes are refused. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "tests/support/testutil.h"

#if !defined(RUN_SUITE_PATH) || !defined(FAKE_TRAIN_PATH)
#error "RUN_SUITE_PATH and FAKE_TRAIN_PATH must be defined (CMake passes them)"
#endif

#define MIX "M[gpus=2]+4*S"
/* the small jobs quick, the data-parallel job (resnet50) 300 ms later ready */
#define FAKE "*:setup_ms=5,epoch_ms=20;resnet50:setup_ms=300"

static char dir[512], out[65536], err[65536];

static int run(const char *const *args) {
    char *argv[40] = {RUN_SUITE_PATH};
    int n = 1;
    for (; *args && n < 36; args++) argv[n++] = (char *)*args;
    argv[n++] = "--train", argv[n++] = FAKE_TRAIN_PATH;
    argv[n] = NULL;
    return test_run(argv, out, sizeof out, err, sizeof err);
}

static int setup(void **state) {
    (void)state;
    test_tmpdir(dir, sizeof dir);
    char nomps[600];
    snprintf(nomps, sizeof nomps, "%s/no-mps", dir);
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", nomps, 1);
    setenv("SUITE_GPU_MEMORY", "3G", 1);
    setenv("FAKE_TRAIN", FAKE, 1);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    test_rmtree(dir);
    return 0;
}

static void test_dry_run(void **state) {
    (void)state;
    const char *text[] = {"--gpus", "0,1", "--mode", "mps", "--mix", MIX, "--completion", "--dry-run", NULL};
    assert_int_equal(run(text), 0);
    assert_non_null(strstr(out, "data-parallel job 0:M[gpus=2]: its own run, --mode naive, "
                                "CUDA_VISIBLE_DEVICES=0,1 NCCL_NVLS_ENABLE=0"));
    assert_non_null(strstr(out, "outside MPS (--ddp-under none)"));
    const char *json[] = {"--gpus", "0,1", "--mode", "mps", "--mix", MIX, "--completion", "--ddp-under", "mps",
                          "--dry-run", "--json", NULL};
    assert_int_equal(run(json), 0);
    cJSON *plan = cJSON_Parse(out);
    assert_non_null(plan);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(plan, "ddp_under")->valuestring, "mps");
    const cJSON *ddp = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(plan, "data_parallel"), 0);
    assert_non_null(ddp);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(ddp, "cuda_visible_devices")->valuestring, "0,1");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(ddp, "mode")->valuestring, "mps");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ddp, "gpus")), 2);
    /* each card's own run holds its two small jobs only */
    const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(plan, "gpus");
    for (int g = 0; g < 2; g++)
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(gpus, g), "mix")->valuestring,
                            "resnet26:cifar10@128+resnet26:cifar10@128");
    cJSON_Delete(plan);
}

static void test_refusals(void **state) {
    (void)state;
    struct { const char *args[12]; const char *message; } bad[] = {
        {{"--gpus", "0,1", "--mode", "streams", "--mix", MIX, "--completion", NULL}, "naive, mps or serial"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--completion", "--ddp-under", "mig", NULL},
         "--ddp-under: expected none or mps, got 'mig'"},
        {{"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--completion", "--ddp-under", "mps", NULL},
         "--ddp-under mps goes with the modes whose jobs are MPS clients"},
        {{"--gpus", "0,1", "--mode", "green", "--mix", MIX, "--completion", NULL}, "SM partition of that card"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(run(bad[i].args), 2);
        if (!strstr(err, bad[i].message)) fail_msg("case %zu: '%s' not in: %s", i, bad[i].message, err);
    }
}

/* folder/summary.json, parsed. */
static cJSON *summary_in(const char *folder) {
    char path[1400], msg[256];
    snprintf(path, sizeof path, "%s/summary.json", folder);
    cJSON *s = test_read_json(path, msg, sizeof msg);
    if (!s) fail_msg("%s", msg);
    return s;
}

/* The one run folder under results, its summary.json parsed. */
static cJSON *summary_of(const char *results, char *run_dir, size_t size) {
    DIR *d = opendir(results);
    assert_non_null(d);
    struct dirent *e;
    run_dir[0] = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') snprintf(run_dir, size, "%s/%s", results, e->d_name);
    closedir(d);
    return summary_in(run_dir);
}

/* Run r's own summary.json (r: its place in the --gpus summary's "gpus"; key: "run_folder", or
 * "reference" for its reference's), parsed. */
static cJSON *run_summary(const cJSON *summary, int r, const char *key) {
    const cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(summary, "gpus"), r);
    return summary_in(cJSON_GetObjectItemCaseSensitive(run, key)->valuestring);
}

static double number_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Every job's go time, from each run's own summary.json; how many, and their spread. */
static int go_times(const cJSON *summary, double *spread) {
    double lo = INFINITY, hi = -INFINITY;
    int n = 0;
    for (int r = 0; r < cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(summary, "gpus")); r++) {
        cJSON *one = run_summary(summary, r, "run_folder"), *job;
        cJSON_ArrayForEach(job, cJSON_GetObjectItemCaseSensitive(one, "jobs")) {
            double go = number_of(job, "go_t");
            if (isnan(go)) continue;
            lo = fmin(lo, go), hi = fmax(hi, go), n++;
        }
        cJSON_Delete(one);
    }
    *spread = hi - lo;
    return n;
}

/* The windows the jobs of every run reported (each job's first, from its run's summary.json). */
typedef struct windows_seen {
    int jobs;                    /* jobs that reported one */
    double t0, t1;               /* the first job's */
    double spread;               /* the largest difference of any job's T0 or T1 from those */
    double first_go;             /* the earliest go of those jobs */
} windows_seen;

static windows_seen windows_of(const cJSON *summary) {
    windows_seen w = {0, NAN, NAN, 0, INFINITY};
    for (int r = 0; r < cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(summary, "gpus")); r++) {
        cJSON *one = run_summary(summary, r, "run_folder"), *job;
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(one, "measurement")->valuestring, "window");
        cJSON_ArrayForEach(job, cJSON_GetObjectItemCaseSensitive(one, "jobs")) {
            const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(job, "windows"), 0);
            double t0 = number_of(first, "t0"), t1 = number_of(first, "t1");
            if (isnan(t0) || isnan(t1)) continue;
            if (!w.jobs++) w.t0 = t0, w.t1 = t1;
            w.spread = fmax(w.spread, fmax(fabs(t0 - w.t0), fabs(t1 - w.t1)));
            w.first_go = fmin(w.first_go, number_of(job, "go_t"));
        }
        cJSON_Delete(one);
    }
    return w;
}

static void test_one_barrier_over_the_cards(void **state) {
    (void)state;
    char results[600], records[600], run_dir[1200];
    snprintf(results, sizeof results, "%s/results", dir);
    snprintf(records, sizeof records, "%s/records", dir);
    assert_int_equal(mkdir(records, 0700), 0);
    setenv("FAKE_TRAIN_RECORD", records, 1);
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--quick", "--completion", "--results",
                          results, NULL};
    int rc = run(args);
    unsetenv("FAKE_TRAIN_RECORD");
    if (rc != 0) fail_msg("run_suite --gpus failed:\n%s\n%s", out, err);
    cJSON *s = summary_of(results, run_dir, sizeof run_dir);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(s, "gpus");
    assert_int_equal(cJSON_GetArraySize(runs), 3);
    const cJSON *ddp = cJSON_GetArrayItem(runs, 2);
    assert_int_equal(cJSON_GetObjectItemCaseSensitive(ddp, "data_parallel_job")->valueint, 0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(ddp, "status")->valuestring, "complete");
    /* the data-parallel job took 300 ms longer to be ready: the small jobs waited for it */
    double spread;
    assert_int_equal(go_times(s, &spread), 5);
    if (!(spread < 0.25)) fail_msg("go times spread over %.3f s", spread);
    /* counted once in the whole run: one resnet50 job among the samples */
    const cJSON *by, *w;
    int resnet50 = 0;
    by = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "total"), "samples_by_workload");
    cJSON_ArrayForEach(w, by)
        if (strstr(cJSON_GetObjectItemCaseSensitive(w, "workload")->valuestring, "resnet50"))
            resnet50 += cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(w, "jobs"));
    assert_int_equal(resnet50, 1);
    cJSON_Delete(s);
    /* the data-parallel job's environment */
    DIR *d = opendir(records);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1400], msg[256];
        snprintf(path, sizeof path, "%s/%s", records, e->d_name);
        char *text = test_read_text(path, msg, sizeof msg);
        assert_non_null(text);
        if (strstr(text, "argv --gpus\nargv 2\n") && !strstr(text, "argv --dry-run")) {
            assert_non_null(strstr(text, "env CUDA_VISIBLE_DEVICES=0,1\n"));
            assert_non_null(strstr(text, "env NCCL_NVLS_ENABLE=0\n"));
            found++;
        }
        free(text);
    }
    closedir(d);
    assert_int_equal(found, 1);
}

/* A run (args, then --results DIR/name) whose data-parallel job fails (FAKE_TRAIN fake): exit 3,
 * both cards' runs complete, the data-parallel job's not; its --gpus summary. */
static cJSON *run_failing_ddp(const char *name, const char *fake, const char *const *args) {
    char results[600], run_dir[1200];
    const char *all[24];
    int n = 0;
    snprintf(results, sizeof results, "%s/%s", dir, name);
    for (; *args && n < 20; args++) all[n++] = *args;
    all[n++] = "--results", all[n++] = results, all[n] = NULL;
    setenv("FAKE_TRAIN", fake, 1);
    int rc = run(all);
    setenv("FAKE_TRAIN", FAKE, 1);
    if (rc != 3) fail_msg("exit %d, not 3:\n%s\n%s", rc, out, err);
    cJSON *s = summary_of(results, run_dir, sizeof run_dir);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(s, "gpus");
    for (int g = 0; g < 2; g++)
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(runs, g), "status")->valuestring,
                            "complete");
    assert_string_not_equal(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(runs, 2), "status")->valuestring,
                            "complete");
    return s;
}

/* Under the window measurement the cards' small jobs warm up in 20 ms, the data-parallel job in
 * 600 ms: every run waits for it, and every job reports the same window. */
static void test_one_window_over_the_cards(void **state) {
    (void)state;
    char results[600], run_dir[1200];
    snprintf(results, sizeof results, "%s/window", dir);
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=20;resnet50:setup_ms=300,epoch_ms=600", 1);
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--quick", "--window", "1",
                          "--results", results, NULL};
    int rc = run(args);
    setenv("FAKE_TRAIN", FAKE, 1);
    if (rc != 0) fail_msg("run_suite --gpus failed:\n%s\n%s", out, err);
    cJSON *s = summary_of(results, run_dir, sizeof run_dir);
    windows_seen w = windows_of(s);
    assert_int_equal(w.jobs, 5);
    if (!(w.spread < 1e-6)) fail_msg("the runs' windows differ by %.6f s", w.spread);
    if (!(fabs(w.t1 - w.t0 - 1.0) < 1e-6)) fail_msg("a window of %.6f s, not 1", w.t1 - w.t0);
    if (!(w.t0 - w.first_go > 0.5)) fail_msg("the window opened %.3f s after go, before the data-parallel job's "
                                              "600 ms warm-up", w.t0 - w.first_go);
    cJSON_Delete(s);
}

/* The data-parallel job fails in its warm-up (step 5 of 10, 300 ms after go), long after the
 * cards' jobs have warmed up: its run ends, and the cards' runs, which waited for it, open their
 * one window after its end. */
static void test_early_end_holds_no_window_back(void **state) {
    (void)state;
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", "M[gpus=2,fault=oom@5]+4*S", "--quick",
                          "--window", "1", NULL};
    cJSON *s = run_failing_ddp("early-end", "*:setup_ms=5,epoch_ms=20;resnet50:epoch_ms=600", args);
    windows_seen w = windows_of(s);
    assert_int_equal(w.jobs, 4);
    if (!(w.spread < 1e-6)) fail_msg("the cards' windows differ by %.6f s", w.spread);
    cJSON *ddp = run_summary(s, 2, "run_folder");
    const cJSON *failed = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ddp, "jobs"), 0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(failed, "status")->valuestring, "failed");
    double ended = number_of(failed, "end_t");
    if (!(w.t0 > ended)) fail_msg("the window opened at %.3f, before the data-parallel job ended (%.3f)", w.t0, ended);
    cJSON_Delete(ddp);
    cJSON_Delete(s);
}

/* A serial run of the mix (the data-parallel job alone first, then each card's jobs) is every
 * job's reference: STP per card and for the whole run, the data-parallel job's own. The
 * measurement is the option flag (with value, or NULL): the window measurement's whole-run STP is
 * the sum of every job's window rate over its window rate alone. */
static void serial_reference(const char *name, const char *flag, const char *value) {
    char base[600], results[600], base_run[1200], run_dir[1200];
    snprintf(base, sizeof base, "%s/base-%s", dir, name);
    snprintf(results, sizeof results, "%s/against-%s", dir, name);
    int window = strcmp(flag, "--completion") != 0;
    const char *serial[] = {"--gpus", "0,1", "--mode", "serial", "--mix", MIX, "--quick", "--results", base,
                            flag, value, NULL};
    if (run(serial) != 0) fail_msg("serial run failed:\n%s\n%s", out, err);
    cJSON *s = summary_of(base, base_run, sizeof base_run);
    cJSON_Delete(s);
    const char *against[] = {"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--quick", "--baseline", base_run,
                             "--results", results, flag, value, NULL};
    if (run(against) != 0) fail_msg("run against the baseline failed:\n%s\n%s", out, err);
    s = summary_of(results, run_dir, sizeof run_dir);
    const cJSON *one;
    cJSON_ArrayForEach(one, cJSON_GetObjectItemCaseSensitive(s, "gpus"))
        assert_true(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(one, "stp")));
    double stp = number_of(cJSON_GetObjectItemCaseSensitive(s, "total"), "stp");
    assert_true(isfinite(stp));
    assert_true(isfinite(number_of(cJSON_GetObjectItemCaseSensitive(s, "total"), "antt")));
    if (window) {
        double sum = 0;
        for (int r = 0; r < 3; r++) {
            cJSON *alone = run_summary(s, r, "reference"), *here = run_summary(s, r, "run_folder");
            for (int k = 0; k < cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(here, "jobs")); k++)
                sum += number_of(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(here, "jobs"), k),
                                 "window_samples_per_s") /
                       number_of(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(alone, "jobs"), k),
                                 "window_samples_per_s");
            cJSON_Delete(alone);
            cJSON_Delete(here);
        }
        if (!(fabs(sum - stp) < 1e-9 * stp)) fail_msg("whole-run STP %.6f, the jobs' window rates give %.6f", stp, sum);
    }
    cJSON_Delete(s);
}

static void test_serial_reference(void **state) {
    (void)state;
    serial_reference("completion", "--completion", NULL);
}

static void test_serial_reference_window(void **state) {
    (void)state;
    serial_reference("window", "--window", "1");
}

/* The data-parallel job failing before it is ready releases the cards' jobs all the same. */
static void test_failure_hangs_nothing(void **state) {
    (void)state;
    const char *args[] = {"--gpus", "0,1", "--mode", "naive", "--mix", MIX, "--quick", "--completion",
                          "--ready-timeout", "2", NULL};
    cJSON_Delete(run_failing_ddp("failing", "*:setup_ms=5,epoch_ms=20;resnet50:never_ready", args));
}

/* Eight cards of the NVML stand-in, each with its full-length UUID, and a data-parallel job over all
 * of them beside sixteen small jobs: every device list is carried whole. The data-parallel job's run
 * gets the eight UUIDs in placement order, each card's jobs their card's own, and every job trains;
 * under --mode all the modes that can hold the job run one pass each, the others named with why. */
#ifdef NVML_STANDIN_PATH
static void eight_cards(const char *records) {
    setenv("SUITE_NVML_LIBRARY", NVML_STANDIN_PATH, 1);
    setenv("SUITE_NVML_STANDIN_GPU", "H100-80GB", 1);
    setenv("SUITE_NVML_STANDIN_GPUS", "8", 1);
    setenv("SUITE_NVML_STANDIN_MIG", "off", 1);
    unsetenv("SUITE_GPU_MEMORY");
    setenv("FAKE_TRAIN_RECORD", records, 1);
}

static void back_to_two_cards(void) {
    unsetenv("FAKE_TRAIN_RECORD");
    unsetenv("SUITE_NVML_STANDIN_GPUS");
    unsetenv("SUITE_NVML_STANDIN_GPU");
    unsetenv("SUITE_NVML_STANDIN_MIG");
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("SUITE_GPU_MEMORY", "3G", 1);
}

/* Every training process fake_train recorded in records (not the footprint queries): the
 * data-parallel one (--gpus 8) must have seen all_cards, every other one exactly one of them. */
static void check_records(const char *records, const char *all_cards, int expected_small, int expected_ddp) {
    DIR *d = opendir(records);
    assert_non_null(d);
    struct dirent *e;
    int small = 0, ddp = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[1400], msg[256], value[4096];
        snprintf(path, sizeof path, "%s/%s", records, e->d_name);
        char *text = test_read_text(path, msg, sizeof msg);
        if (!text) fail_msg("%s", msg);
        if (strstr(text, "argv --dry-run")) {
            free(text);
            continue;
        }
        const char *at = strstr(text, "env CUDA_VISIBLE_DEVICES=");
        if (!at) fail_msg("%s: no CUDA_VISIBLE_DEVICES:\n%s", path, text);
        at += strlen("env CUDA_VISIBLE_DEVICES=");
        snprintf(value, sizeof value, "%.*s", (int)strcspn(at, "\n"), at);
        if (strstr(text, "argv --gpus\nargv 8\n")) {
            if (strcmp(value, all_cards) != 0)
                fail_msg("the data-parallel job saw CUDA_VISIBLE_DEVICES=%s\nexpected %s", value, all_cards);
            ddp++;
        } else {
            if (strlen(value) != 40 || !strstr(all_cards, value))
                fail_msg("a card's job saw CUDA_VISIBLE_DEVICES=%s, not one of %s", value, all_cards);
            small++;
        }
        free(text);
    }
    closedir(d);
    if (small != expected_small || ddp != expected_ddp)
        fail_msg("%d small and %d data-parallel jobs trained; expected %d and %d", small, ddp, expected_small,
                 expected_ddp);
}

static void test_eight_cards_carried_whole(void **state) {
    (void)state;
    char results[600], records[600], all_cards[1024] = "", run_dir[1200], path[1400];
    snprintf(results, sizeof results, "%s/eight", dir);
    snprintf(records, sizeof records, "%s/eight-records", dir);
    assert_int_equal(mkdir(records, 0700), 0);
    for (int g = 0; g < 8; g++)
        snprintf(all_cards + strlen(all_cards), sizeof all_cards - strlen(all_cards),
                 "%sGPU-5a1e0000-0000-4000-8000-%012x", g ? "," : "", g);
    eight_cards(records);
    const char *args[] = {"--gpus", "0,1,2,3,4,5,6,7", "--mode", "naive", "--mix", "M[gpus=8]+16*S", "--quick",
                          "--completion", "--results", results, NULL};
    int rc = run(args);
    if (rc != 0) {
        back_to_two_cards();
        fail_msg("run_suite --gpus over eight cards: %d\n%s\n%s", rc, out, err);
    }
    check_records(records, all_cards, 16, 1);
    cJSON *s = summary_of(results, run_dir, sizeof run_dir);
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(s, "total");
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(total, "status")->valuestring, "complete");
    cJSON_Delete(s);
    snprintf(path, sizeof path, "%s/placement.json", run_dir);
    char msg[256];
    cJSON *plan = test_read_json(path, msg, sizeof msg);
    if (!plan) fail_msg("%s", msg);
    const cJSON *ddp = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(plan, "data_parallel"), 0);
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(ddp, "cuda_visible_devices")->valuestring, all_cards);
    cJSON_Delete(plan);

    /* --mode all: serial, naive and mps hold the job, one pass each; the others are named */
    char all[600], bin[700], all_records[600];
    snprintf(all, sizeof all, "%s/eight-all", dir);
    snprintf(all_records, sizeof all_records, "%s/eight-all-records", dir);
    assert_int_equal(mkdir(all_records, 0700), 0);
    setenv("FAKE_TRAIN_RECORD", all_records, 1);
    test_fake_mps_on_path(dir, FAKE_TRAIN_PATH, bin, sizeof bin);
    const char *dry[] = {"--gpus", "0,1,2,3,4,5,6,7", "--mode", "all", "--mix", "M[gpus=8]+16*S", "--quick",
                         "--completion", "--dry-run", NULL};
    rc = run(dry);
    if (rc != 0) {
        back_to_two_cards();
        fail_msg("the dry run of --mode all: %d\n%s\n%s", rc, out, err);
    }
    const char *said[] = {"left out: mig (", "left out: streams (", "left out: green (",
                          "  serial: the data-parallel job alone", "  mps: the data-parallel job beside", NULL};
    for (const char **l = said; *l; l++)
        if (!strstr(out, *l)) {
            back_to_two_cards();
            fail_msg("the dry run does not say '%s':\n%s", *l, out);
        }
    const char *modes[] = {"--gpus", "0,1,2,3,4,5,6,7", "--mode", "all", "--mix", "M[gpus=8]+16*S", "--quick",
                           "--completion", "--results", all, NULL};
    rc = run(modes);
    back_to_two_cards();
    if (rc != 0) fail_msg("run_suite --gpus --mode all with a data-parallel job: %d\n%s\n%s", rc, out, err);
    check_records(all_records, all_cards, 3 * 16, 3);
    s = summary_of(all, run_dir, sizeof run_dir);
    const cJSON *ran = cJSON_GetObjectItemCaseSensitive(s, "modes");
    assert_int_equal(cJSON_GetArraySize(ran), 3);
    const char *names[] = {"serial", "naive", "mps"};
    for (int k = 0; k < 3; k++) {
        const cJSON *one = cJSON_GetArrayItem(ran, k);
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(one, "mode")->valuestring, names[k]);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(one, "total");
        assert_string_equal(cJSON_GetObjectItemCaseSensitive(t, "status")->valuestring, "complete");
        if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(t, "stp")))
            fail_msg("%s: no STP against the serial pass:\n%s", names[k], out);
    }
    /* mig, streams and green (mig-emulate is not one of --mode all's) */
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s, "modes_left_out")), 3);
    cJSON_Delete(s);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dry_run),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_one_barrier_over_the_cards),
        cmocka_unit_test(test_one_window_over_the_cards),
        cmocka_unit_test(test_early_end_holds_no_window_back),
        cmocka_unit_test(test_serial_reference),
        cmocka_unit_test(test_serial_reference_window),
        cmocka_unit_test(test_failure_hangs_nothing),
#ifdef NVML_STANDIN_PATH
        cmocka_unit_test(test_eight_cards_carried_whole),
#endif
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
