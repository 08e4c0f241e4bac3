/* The window measurement (runner/train/step_window.h, runner/suite/jobs/job_window.c, results'
 * window metrics): the job's arithmetic on step completion times, and run_suite end to end with
 * tests/support/fake_train (which speaks the protocol through the same step_window code): a heterogeneous
 * mix whose small job's planned steps end long before the others' warm-up still overlaps fully in
 * one common window; --windows 3 gives three windows and spreads; --completion keeps today's files;
 * a job failing mid-window is flagged and does not hang the run; the dry run shows the window. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "runner/train/step_window.h"
#include "tests/support/testutil.h"

static double num(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

static int is_event(const cJSON *e, const char *name) {
    const cJSON *event = cJSON_GetObjectItem(e, "event");
    return cJSON_IsString(event) && !strcmp(event->valuestring, name);
}

/* --- the job's arithmetic ------------------------------------------------------------------ */

static void test_steps_inside_the_window(void **state) {
    (void)state;
    step_windows w;
    step_windows_init(&w, 4);
    for (int k = 1; k <= 10; k++) assert_int_equal(step_windows_add(&w, 100.0 + k, 1000.0), 0);
    /* a window line that arrives late still sees the steps completed since its T0 */
    assert_int_equal(step_windows_command(&w, "window 102.5 106.5"), 0);
    assert_int_equal(step_windows_command(&w, "window 1 x"), -1);
    cJSON *e = step_windows_next_event(&w, 0);
    assert_non_null(e); /* steps up to 110 are known: the window is final; its steps' times first */
    assert_true(is_event(e, "steps"));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(e, "ms")), 4);
    cJSON_Delete(e);
    e = step_windows_next_event(&w, 0);
    assert_true(is_event(e, "window"));
    assert_true(num(e, "steps") == 4);          /* 103, 104, 105, 106 */
    assert_true(num(e, "samples") == 16);
    expect_lt(fabs(num(e, "samples_per_s") - 4.0), 1e-9);
    assert_true(num(e, "step_ms_median") == 1000);
    expect_lt(fabs(num(e, "train_start") - 100.0), 1e-9);
    assert_true(num(e, "train_end") == 110);
    cJSON_Delete(e);
    assert_null(step_windows_next_event(&w, 0));
    assert_int_equal(step_windows_command(&w, "window 110 120"), 0);
    assert_null(step_windows_next_event(&w, 0)); /* not final until a step after 120, or stop */
    assert_int_equal(step_windows_command(&w, "stop"), 1);
    assert_true(w.stopped);
    e = step_windows_next_event(&w, 1);
    cJSON_Delete(e); /* its one step's time */
    e = step_windows_next_event(&w, 1);
    assert_non_null(e);
    assert_true(num(e, "steps") == 1); /* the step that ended at 110 */
    cJSON_Delete(e);
    step_windows_free(&w);
}

/* A window's every step time leaves the job before its window event, in completion order, to the
 * microsecond, in short "steps" events (a fast job's window holds thousands). */
static void test_window_step_times(void **state) {
    (void)state;
    step_windows w;
    step_windows_init(&w, 1);
    assert_int_equal(step_windows_command(&w, "window 0 2000"), 0);
    for (int k = 1; k <= 1200; k++) assert_int_equal(step_windows_add(&w, (double)k, 1.0 + k / 3.0), 0);
    assert_int_equal(step_windows_add(&w, 2001, 1.0), 0); /* past T1: final */
    int events = 0, seen = 0;
    cJSON *e;
    while ((e = step_windows_next_event(&w, 0)) && is_event(e, "steps")) {
        assert_true(num(e, "window") == 0 && num(e, "first") == seen);
        assert_null(cJSON_GetObjectItem(e, "epoch"));
        cJSON *ms = cJSON_GetObjectItem(e, "ms");
        expect_le(cJSON_GetArraySize(ms), STEP_EVENT_STEPS);
        for (cJSON *m = ms->child; m; m = m->next) {
            seen++;
            expect_lt(fabs(m->valuedouble - round((1.0 + seen / 3.0) * 1000) / 1000), 1e-4);
        }
        char *text = cJSON_PrintUnformatted(e);
        assert_null(strstr(text, "33333")); /* 3 decimals, not float noise */
        free(text);
        cJSON_Delete(e);
        events++;
    }
    assert_int_equal(events, 3); /* 512 + 512 + 176 */
    assert_int_equal(seen, 1200);
    assert_non_null(e);
    assert_true(num(e, "steps") == 1200 && num(e, "step_ms_count") == 1200);
    cJSON_Delete(e);
    assert_null(step_windows_next_event(&w, 1));
    step_windows_free(&w);
    /* an epoch's (the completion measurement): the same events, "epoch" for "window" */
    float times[3] = {1.0f, 2.5f, 3.25f};
    size_t first = 0;
    e = step_times_event("epoch", 2, times, 3, &first);
    assert_true(num(e, "epoch") == 2); assert_true(num(e, "first") == 0); expect_eq(first, 3);
    assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "ms"), 2)->valuedouble == 3.25);
    cJSON_Delete(e);
    assert_null(step_times_event("epoch", 2, times, 3, &first));
}

static void test_history_is_bounded_but_keeps_open_windows(void **state) {
    (void)state;
    step_windows w;
    step_windows_init(&w, 1);
    assert_int_equal(step_windows_command(&w, "window 0 100000"), 0);
    for (int k = 1; k <= 50000; k++) assert_int_equal(step_windows_add(&w, (double)k, 1.0), 0);
    cJSON *e;
    while ((e = step_windows_next_event(&w, 1)) && is_event(e, "steps")) cJSON_Delete(e);
    assert_true(num(e, "steps") == 50000); /* nothing of an open window was forgotten */
    cJSON_Delete(e);
    step_windows_free(&w);
    step_windows_init(&w, 1);
    for (int k = 1; k <= 50000; k++) assert_int_equal(step_windows_add(&w, (double)k, 1.0), 0);
    expect_lt(w.count, 50000); /* no window: only the last STEP_WINDOW_HISTORY_S seconds */
    step_windows_free(&w);
}

/* --- run_suite end to end ----------------------------------------------------------------- */

typedef struct fixture {
    char dir[256], results[512];
} fixture;

static int setup(void **state) {
    fixture *f = calloc(1, sizeof *f);
    test_tmpdir(f->dir, sizeof f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state) {
    fixture *f = *state;
    test_rmtree(f->dir);
    free(f);
    return 0;
}

/* run_suite with args in its own results folder f->results/<name>; exit status. */
static int run_suite(fixture *f, const char *name, const char *fake, const char *args) {
    snprintf(f->results, sizeof f->results, "%s/%s", f->dir, name);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "SUITE_NVML_LIBRARY=/nonexistent SUITE_JOB_HOST=%s FAKE_TRAIN='%s' %s %s --train %s "
             "--results %s > %s/%s.out 2> %s/%s.err", FAKE_JOB_HOST_PATH, fake, RUN_SUITE_PATH, args, FAKE_TRAIN_PATH,
             f->results, f->dir, name, f->dir, name);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The path of a file of the (one) run folder in f->results. */
static void run_file(fixture *f, const char *name, char *path, size_t size) {
    DIR *d = opendir(f->results);
    assert_non_null(d);
    struct dirent *e;
    path[0] = 0;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') snprintf(path, size, "%s/%s/%s", f->results, e->d_name, name);
    closedir(d);
}

/* The rows of steps.csv for job i in that window and epoch (their cells' text, "" for empty),
 * checked numbered 1, 2, ... with a time each. */
static int steps_rows(fixture *f, int job, const char *window, const char *epoch) {
    char path[1024], line[256];
    run_file(f, "steps.csv", path, sizeof path);
    FILE *file = fopen(path, "r");
    assert_non_null(file);
    assert_non_null(fgets(line, sizeof line, file));
    assert_string_equal(line, "job,label,window,epoch,step,ms\n");
    int n = 0;
    while (fgets(line, sizeof line, file)) {
        char *p = line, *cell[6];
        for (int k = 0; k < 6; k++) cell[k] = strsep(&p, ",");
        assert_non_null(cell[5]);
        if (atoi(cell[0]) != job || strcmp(cell[2], window) || strcmp(cell[3], epoch)) continue;
        assert_int_equal(atoi(cell[4]), ++n);
        expect_gt(atof(cell[5]), 0);
    }
    fclose(file);
    return n;
}

static cJSON *summary(fixture *f) {
    char path[1024];
    run_file(f, "summary.json", path, sizeof path);
    static char text[1 << 18];
    FILE *file = fopen(path, "r");
    assert_non_null(file);
    text[fread(text, 1, sizeof text - 1, file)] = 0;
    fclose(file);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    return root;
}

/* S's two planned epochs (20 steps, 0.1 s) end long before M's warm-up (1.5 s) does: the window
 * opens after M's warm-up all the same, with S still training. */
#define HETEROGENEOUS "resnet26:epoch_ms=50;resnet50:epoch_ms=1500"

static void test_heterogeneous_mix_overlaps(void **state) {
    fixture *f = *state;
    assert_int_equal(run_suite(f, "hetero", HETEROGENEOUS, "--mode naive --mix S+M+M --quick --window 1"), 0);
    cJSON *root = summary(f);
    assert_string_equal(cJSON_GetObjectItem(root, "measurement")->valuestring, "window");
    assert_true(num(root, "window_length_s") == 1);
    cJSON *jobs = cJSON_GetObjectItem(root, "jobs");
    double t0 = NAN, t1 = NAN;
    for (int i = 0; i < 3; i++) {
        cJSON *j = cJSON_GetArrayItem(jobs, i);
        /* every job, S too, finished steps inside the window: it trained on through it (how much of
         * the window its steps cover is the machine's pace, not asserted) */
        expect_gt(num(j, "window_samples_per_s"), 0);
        expect_gt(num(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "windows"), 0), "steps"), 0);
        cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "windows"), 0);
        if (i == 0) t0 = num(w, "t0"), t1 = num(w, "t1");
        assert_true(num(w, "t0") == t0 && num(w, "t1") == t1); /* one common window */
        expect_lt(fabs(t1 - t0 - 1.0), 1e-6);
    }
    cJSON_Delete(root);
}

static void test_three_windows_give_spreads(void **state) {
    fixture *f = *state;
    assert_int_equal(run_suite(f, "three", "*:epoch_ms=50", "--mode streams --mix S+S --quick --window 0.5 --windows 3"), 0);
    cJSON *root = summary(f);
    assert_true(num(root, "windows") == 3);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(root, "window_metrics")), 3);
    assert_true(cJSON_IsObject(cJSON_GetObjectItem(root, "stp_spread")));
    cJSON *jobs = cJSON_GetObjectItem(root, "jobs");
    for (int i = 0; i < 2; i++) {
        cJSON *windows = cJSON_GetObjectItem(cJSON_GetArrayItem(jobs, i), "windows");
        assert_int_equal(cJSON_GetArraySize(windows), 3);
        for (int w = 0; w < 3; w++) { /* steps.csv: each window's steps, through job_host too */
            char name[8];
            snprintf(name, sizeof name, "%d", w);
            double steps = num(cJSON_GetArrayItem(windows, w), "steps");
            expect_gt(steps, 0);
            assert_int_equal(steps_rows(f, i, name, ""), (int)steps);
        }
    }
    cJSON_Delete(root);
}

static void test_completion_keeps_todays_files(void **state) {
    fixture *f = *state;
    assert_int_equal(run_suite(f, "completion", "*:epoch_ms=50", "--mode naive --mix S+S --quick --completion"), 0);
    cJSON *root = summary(f);
    assert_null(cJSON_GetObjectItem(root, "measurement"));
    assert_null(cJSON_GetObjectItem(root, "window_metrics"));
    cJSON *j = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "jobs"), 0);
    assert_null(cJSON_GetObjectItem(j, "windows"));
    assert_true(num(j, "timed_epoch") == 2);
    for (int i = 0; i < 2; i++) /* steps.csv: the timed epoch's steps, each */
        assert_int_equal(steps_rows(f, i, "", "2"), (int)num(j, "steps_per_epoch"));
    assert_int_equal(steps_rows(f, 0, "", "1"), 0); /* not the warm-up's */
    cJSON_Delete(root);
    assert_int_equal(run_suite(f, "completion-window", "*:epoch_ms=50", "--mode naive --mix S+S --completion --window 3"), 2);
}

/* Job 0 (batch 64) fails at its first step after the runner has given it the window (fake_train's
 * fail_in_window), so it fails inside the window whatever the pace of either job: it is flagged as
 * failed, the other job's window overlaps it only in part and is flagged, and the run ends. */
static void test_failure_mid_window_is_flagged(void **state) {
    fixture *f = *state;
    assert_int_equal(run_suite(f, "fail", "*:epoch_ms=50;resnet26@64:fail_in_window",
                               "--mode naive --mix 'resnet26:cifar10@64+S' --quick --window 2"), 3);
    cJSON *root = summary(f);
    cJSON *jobs = cJSON_GetObjectItem(root, "jobs");
    cJSON *failed = cJSON_GetArrayItem(jobs, 0);
    assert_string_equal(cJSON_GetObjectItem(failed, "status")->valuestring, "failed");
    assert_non_null(strstr(cJSON_GetObjectItem(failed, "reason")->valuestring, "inside the window"));
    cJSON *other = cJSON_GetArrayItem(jobs, 1);
    assert_string_equal(cJSON_GetObjectItem(other, "status")->valuestring, "ok");
    expect_lt(num(other, "window_overlap"), 0.95);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(other, "overlap_flag")));
    cJSON_Delete(root);
}

static char *read_file(fixture *f, const char *name, char *text, size_t size) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    FILE *file = fopen(path, "r");
    assert_non_null(file);
    text[fread(text, 1, size - 1, file)] = 0;
    fclose(file);
    return text;
}

/* Serial under the window measurement runs a repeated spec once (its rate alone is the same
 * measurement); every job's record is there all the same, none flagged "not collocated". Every job
 * gets the invocation's file of convolution choices. */
static void test_serial_measures_a_repeated_job_once(void **state) {
    fixture *f = *state;
    char record[600], cmd[1400];
    snprintf(record, sizeof record, "%s/record", f->dir);
    mkdir(record, 0755);
    setenv("FAKE_TRAIN_RECORD", record, 1);
    assert_int_equal(run_suite(f, "serial", "*:epoch_ms=50", "--mode serial --mix 3*S+M --quick --window 0.3"), 0);
    unsetenv("FAKE_TRAIN_RECORD");
    static char text[1 << 16];
    read_file(f, "serial.err", text, sizeof text);
    assert_non_null(strstr(text, "job 1 S: the same job as job 0, alone: measured once"));
    assert_non_null(strstr(text, "job 2 S: the same job as job 0, alone: measured once"));
    assert_null(strstr(text, "job 3 M: the same job"));
    /* two processes trained (S once, M once), each told where the choices are kept */
    snprintf(cmd, sizeof cmd, "grep -l -- '^argv --wait-go' %s/*.txt | wc -l > %s/count.txt; "
             "grep -h '^env SUITE_CONV_CHOICES=.*/conv-choices.tsv$' %s/*.txt | sort -u | wc -l >> %s/count.txt",
             record, f->dir, record, f->dir);
    assert_int_equal(system(cmd), 0);
    assert_string_equal(read_file(f, "count.txt", text, sizeof text), "2\n1\n");
    cJSON *root = summary(f);
    cJSON *jobs = cJSON_GetObjectItem(root, "jobs");
    assert_int_equal(cJSON_GetArraySize(jobs), 4);
    for (int i = 0; i < 4; i++) {
        cJSON *j = cJSON_GetArrayItem(jobs, i);
        assert_string_equal(cJSON_GetObjectItem(j, "status")->valuestring, "ok");
        expect_gt(num(j, "window_samples_per_s"), 0);
        /* one job at a time is what serial means: never flagged "not collocated" */
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "overlap_flag")));
    }
    read_file(f, "serial.out", text, sizeof text);
    assert_null(strstr(text, "not collocated"));
    assert_null(strstr(text, ".0*"));
    assert_true(num(cJSON_GetArrayItem(jobs, 1), "window_samples_per_s") ==
                num(cJSON_GetArrayItem(jobs, 0), "window_samples_per_s"));
    cJSON_Delete(root);
}

/* --mode all with windows ranks the modes over them, by the one rule (results/repeats.h). */
static void test_modes_ranked_over_windows(void **state) {
    fixture *f = *state;
    assert_int_equal(run_suite(f, "ranked", "*:epoch_ms=50",
                               "--mode all --skip mps,streams,green,mig-emulate --mix S+S --quick --window 0.3 --windows 3"),
                     0);
    static char text[1 << 16];
    read_file(f, "ranked.out", text, sizeof text);
    assert_non_null(strstr(text, "ranking over the windows"));
    assert_non_null(strstr(text, "  STP: "));
    DIR *d = opendir(f->results);
    struct dirent *e;
    char path[1024] = "";
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') snprintf(path, sizeof path, "%s/%s/rankings.json", f->results, e->d_name);
    closedir(d);
    FILE *file = fopen(path, "r");
    assert_non_null(file);
    text[fread(text, 1, sizeof text - 1, file)] = 0;
    fclose(file);
    cJSON *root = cJSON_Parse(text);
    assert_string_equal(cJSON_GetObjectItem(root, "over")->valuestring, "windows");
    assert_non_null(strstr(cJSON_GetObjectItem(root, "stp")->valuestring, "STP: "));
    assert_non_null(strstr(cJSON_GetObjectItem(root, "antt")->valuestring, "serial"));
    cJSON_Delete(root);
}

static void test_dry_run_shows_the_window(void **state) {
    fixture *f = *state;
    assert_int_equal(run_suite(f, "dry", "", "--mode naive --mix S+M --dry-run --window 7 --windows 2"), 0);
    char path[600], text[8192];
    snprintf(path, sizeof path, "%s/dry.out", f->dir);
    FILE *file = fopen(path, "r");
    text[fread(text, 1, sizeof text - 1, file)] = 0;
    fclose(file);
    assert_non_null(strstr(text, "2 common window(s) of 7 s"));
    assert_non_null(strstr(text, "a warm-up of 50 steps"));
    assert_non_null(strstr(text, "--warmup-steps 50")); /* whole epochs: the warm-up is shorter */
    assert_non_null(strstr(text, "--window-protocol"));
    assert_int_equal(run_suite(f, "dryjson", "", "--mode naive --mix S+M --dry-run --json --quick"), 0);
    snprintf(path, sizeof path, "%s/dryjson.out", f->dir);
    file = fopen(path, "r");
    text[fread(text, 1, sizeof text - 1, file)] = 0;
    fclose(file);
    cJSON *root = cJSON_Parse(text);
    cJSON *m = cJSON_GetObjectItem(root, "measurement");
    assert_string_equal(cJSON_GetObjectItem(m, "name")->valuestring, "window");
    assert_true(num(m, "window_s") == 2);
    cJSON_Delete(root);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steps_inside_the_window),
        cmocka_unit_test(test_history_is_bounded_but_keeps_open_windows),
        cmocka_unit_test(test_window_step_times),
        cmocka_unit_test_setup_teardown(test_heterogeneous_mix_overlaps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_three_windows_give_spreads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_completion_keeps_todays_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_mid_window_is_flagged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dry_run_shows_the_window, setup, teardown),
        cmocka_unit_test_setup_teardown(test_serial_measures_a_repeated_job_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modes_ranked_over_windows, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
