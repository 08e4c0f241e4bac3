/* Results: atomic writing, run folder names, the timed epoch, makespan / speed-up / slow-down /
 * energy arithmetic, jobs.csv and summary.json that parse back (cJSON, CSV with quoted fields),
 * the --baseline check, and the comparison files of --mode all. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "results/results.h"
#include "tests/support/testutil.h"

static char *read_text(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *text = calloc(1, 1 << 20);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    text[n] = 0;
    fclose(f);
    return text;
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

static void test_atomic_write(void **state) {
    char dir[256], path[512], err[256];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/a.json", dir);
    assert_int_equal(results_write_atomic(path, "first", 5, err, sizeof err), 0);
    assert_int_equal(results_write_atomic(path, "second", 6, err, sizeof err), 0);
    char *text = read_text(path);
    assert_string_equal(text, "second");
    free(text);
    assert_int_equal(count_entries(dir), 1); /* no temporary left behind */
    snprintf(path, sizeof path, "%s/missing/a.json", dir);
    assert_int_equal(results_write_atomic(path, "x", 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot write"));
    test_rmtree(dir);
}

static void test_run_dir_names(void **state) {
    char base[256], nested[512], d1[1024], d2[1024], id1[256], id2[256], err[256];
    test_tmpdir(base, sizeof base);
    snprintf(nested, sizeof nested, "%s/results/deeper", base);
    assert_int_equal(results_make_run_dir(nested, "naive", " 7 * S + M[epochs=3]", d1, sizeof d1, id1,
                                          sizeof id1, err, sizeof err), 0);
    assert_int_equal(results_make_run_dir(nested, "naive", " 7 * S + M[epochs=3]", d2, sizeof d2, id2,
                                          sizeof id2, err, sizeof err), 0);
    assert_string_not_equal(id1, id2);
    assert_non_null(strstr(id1, "-naive-7xS+M_epochs_3_"));
    assert_int_equal(strlen(id1) > 17 && id1[8] == 'T' && id1[15] == 'Z', 1); /* 20250101T120000Z */
    for (const char *p = id1; *p; p++) assert_non_null(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+._-", *p));
    struct stat st;
    assert_int_equal(stat(d2, &st), 0);
    test_rmtree(base);
}

/* Two jobs with a warm-up and a timed epoch; the second job starts at go + offset. */
static job_record *fake_jobs(double go, double timed0, double timed1, double offset) {
    job_record *jobs = calloc(2, sizeof *jobs);
    for (int i = 0; i < 2; i++) {
        job_record *j = &jobs[i];
        snprintf(j->spec.label, sizeof j->spec.label, i ? "M,\"x\"" : "S");
        snprintf(j->spec.model, sizeof j->spec.model, i ? "resnet50" : "resnet26");
        snprintf(j->spec.data, sizeof j->spec.data, i ? "imagenet64" : "cifar10");
        j->spec.image_size = i ? 64 : 32;
        j->spec.classes = i ? 1000 : 10;
        j->spec.batch = 128;
        snprintf(j->canonical, sizeof j->canonical, "%s:%s@128", j->spec.model, j->spec.data);
        j->epochs_planned = 2;
        j->mps = 1;
        j->mig = -1;
        j->t_go = go + i * offset;
        double timed = i ? timed1 : timed0;
        j->epochs[0] = (job_epoch){.epoch = 1, .warmup = 1, .samples = 1000, .seconds = 5,
                                   .samples_per_s = 200, .peak_bytes = 1e9, .t_start = j->t_go,
                                   .t_end = j->t_go + 5, .loss = 2, .accuracy = NAN};
        j->epochs[1] = (job_epoch){.epoch = 2, .samples = 1000, .seconds = timed,
                                   .samples_per_s = 1000 / timed, .peak_bytes = 2e9,
                                   .t_start = j->t_go + 5, .t_end = j->t_go + 5 + timed, .loss = 1,
                                   .cpu_cores = i ? 2.25 : NAN, .host_decoded = i ? 3 : NAN};
        j->epoch_count = 2;
        j->t_done = j->t_go + 5 + timed;
        j->t_exit = j->t_done + 0.1;
        j->saw_done = 1;
        j->status = JOB_OK;
    }
    return jobs;
}

static void test_summary_arithmetic(void **state) {
    /* serial: job 1 starts when job 0 is done; each alone: timed 10 s and 20 s */
    job_record *serial = fake_jobs(100, 10, 20, 15);
    run_summary s;
    results_summarize(serial, 2, "serial", 1, 0, NULL, &s);
    assert_int_equal(s.timed_epoch[0], 2);
    expect_lt(fabs(s.makespan_s - (15 + 25)), 1e-9);
    expect_lt(fabs(s.total_samples - 4000), 1e-9);
    expect_lt(fabs(s.peak_bytes[1] - 2e9), 1);
    assert_string_equal(s.status, "complete");
    assert_true(isnan(s.speedup));
    s.energy_j = 800;
    serial_baseline b;
    results_baseline_from(&s, "this run", &b);
    /* naive: both at once, slower: timed 15 s and 30 s */
    job_record *naive = fake_jobs(200, 15, 30, 0);
    run_summary n;
    results_summarize(naive, 2, "naive", 0, 0, &b, &n);
    expect_lt(fabs(n.makespan_s - 35), 1e-9);
    expect_lt(fabs(n.speedup - 40.0 / 35.0), 1e-9);
    expect_lt(fabs(n.slowdown[0] - 1.5), 1e-9); expect_lt(fabs(n.slowdown[1] - 1.5), 1e-9);
    assert_true(isnan(n.energy_vs_serial)); /* energy unknown so far */
    n.energy_j = 600;
    results_compare(&n, &b);
    expect_lt(fabs(n.energy_vs_serial - 0.75), 1e-9);
    /* a failed job: partial; a job that stopped after warm-up has no timed epoch */
    naive[1].status = JOB_FAILED;
    naive[1].epoch_count = 1;
    results_summarize(naive, 2, "naive", 0, 0, &b, &n);
    assert_string_equal(n.status, "partial");
    assert_int_equal(n.timed_epoch[1], 0);
    assert_true(isnan(n.slowdown[1]));
    results_summarize(naive, 2, "naive", 0, 1, &b, &n);
    assert_string_equal(n.status, "interrupted");
    /* a one-epoch job is timed on that epoch */
    naive[1].epochs_planned = 1;
    assert_int_equal(results_timed_epoch(&naive[1]), 0);
    free(serial);
    free(naive);
}

/* Splits one CSV line (RFC 4180) into fields; returns the count. */
static int csv_split(const char *line, char fields[][256], int max) {
    int n = 0;
    const char *p = line;
    while (n < max) {
        size_t len = 0;
        if (*p == '"') {
            for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
                if (*p == '"') p++;
                if (len < 255) fields[n][len++] = *p;
            }
            if (*p == '"') p++;
        } else {
            for (; *p && *p != ',' && *p != '\n'; p++)
                if (len < 255) fields[n][len++] = *p;
        }
        fields[n++][len] = 0;
        if (*p != ',') break;
        p++;
    }
    return n;
}

static void test_files_parse(void **state) {
    char dir[256], path[512], err[256];
    test_tmpdir(dir, sizeof dir);
    job_record *jobs = fake_jobs(100, 10, 20, 15);
    jobs[1].status = JOB_FAILED;
    snprintf(jobs[1].reason, sizeof jobs[1].reason, "exit 1: out of memory, \"cudaMalloc\"");
    run_summary s;
    results_summarize(jobs, 2, "serial", 1, 0, NULL, &s);
    assert_int_equal(results_write_jobs_csv(dir, jobs, 2, &s, err, sizeof err), 0);
    assert_int_equal(results_write_summary(dir, "S+M", jobs, 2, &s, NULL, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/jobs.csv", dir);
    char *csv = read_text(path);
    assert_non_null(csv);
    static char header[64][256], row[64][256];
    char *line2 = strchr(csv, '\n') + 1, *line3 = strchr(line2, '\n') + 1;
    int columns = csv_split(csv, header, 64);
    assert_int_equal(csv_split(line3, row, 64), columns);
    int status = -1, reason = -1, label = -1, epoch2 = -1, cores = -1, host = -1;
    for (int i = 0; i < columns; i++) {
        if (!strcmp(header[i], "timed_cpu_cores")) cores = i;
        if (!strcmp(header[i], "timed_host_decoded")) host = i;
        if (!strcmp(header[i], "status")) status = i;
        if (!strcmp(header[i], "reason")) reason = i;
        if (!strcmp(header[i], "label")) label = i;
        if (!strcmp(header[i], "epoch2_s")) epoch2 = i;
    }
    expect_ge(status, 0); expect_ge(reason, 0); expect_ge(label, 0); expect_ge(epoch2, 0);
    assert_string_equal(row[status], "failed");
    assert_string_equal(row[reason], "exit 1: out of memory, \"cudaMalloc\"");
    assert_string_equal(row[label], "M,\"x\"");
    expect_lt(fabs(atof(row[epoch2]) - 20), 1e-6);
    expect_ge(cores, 0); expect_ge(host, 0);
    expect_lt(fabs(atof(row[cores]) - 2.25), 1e-9); expect_eq(atof(row[host]), 3);
    static char first[64][256]; /* job 0 did not report them: empty cells */
    assert_int_equal(csv_split(line2, first, 64), columns);
    assert_string_equal(first[cores], "");
    assert_string_equal(first[host], "");
    free(csv);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    char *text = read_text(path);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_string_equal(cJSON_GetObjectItem(root, "status")->valuestring, "partial");
    expect_lt(fabs(cJSON_GetObjectItem(root, "makespan_s")->valuedouble - 40), 1e-9);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(root, "energy_j")));
    cJSON *list = cJSON_GetObjectItem(root, "jobs");
    assert_int_equal(cJSON_GetArraySize(list), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "job")->valuestring,
                        "resnet26:cifar10@128");
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "timed_cpu_cores")));
    assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 1), "timed_cpu_cores")->valuedouble == 2.25);
    assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 1), "timed_host_decoded")->valuedouble == 3);
    cJSON_Delete(root);
    free(text);
    free(jobs);
    test_rmtree(dir);
}

static void test_baseline(void **state) {
    char dir[256], err[512];
    test_tmpdir(dir, sizeof dir);
    job_record *jobs = fake_jobs(100, 10, 20, 15);
    run_summary s;
    results_summarize(jobs, 2, "serial", 1, 0, NULL, &s);
    s.energy_j = 123;
    assert_int_equal(results_write_summary(dir, "S+M", jobs, 2, &s, NULL, err, sizeof err), 0);
    serial_baseline b;
    assert_int_equal(results_load_baseline(dir, "serial", jobs, 2, &b, err, sizeof err), 0);
    assert_true(b.known); expect_lt(fabs(b.makespan_s - 40), 1e-9); expect_lt(fabs(b.energy_j - 123), 1e-9);
    expect_lt(fabs(b.solo_timed_s[1] - 20), 1e-9);
    snprintf(jobs[1].canonical, sizeof jobs[1].canonical, "resnet50:imagenet64@64"); /* another mix */
    assert_int_equal(results_load_baseline(dir, "serial", jobs, 2, &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "not the same mix"));
    snprintf(jobs[1].canonical, sizeof jobs[1].canonical, "resnet50:imagenet64@128");
    jobs[1].epochs_planned = 3;
    assert_int_equal(results_load_baseline(dir, "serial", jobs, 2, &b, err, sizeof err), -1);
    jobs[1].epochs_planned = 2;
    assert_int_equal(results_load_baseline(dir, "serial", jobs, 1, &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "had 2 jobs"));
    snprintf(s.mode, sizeof s.mode, "naive");
    assert_int_equal(results_write_summary(dir, "S+M", jobs, 2, &s, NULL, err, sizeof err), 0);
    assert_int_equal(results_load_baseline(dir, "serial", jobs, 2, &b, err, sizeof err), -1);
    assert_non_null(strstr(err, "a serial run is needed"));
    assert_int_equal(results_load_baseline("/nonexistent", "serial", jobs, 2, &b, err, sizeof err), -1);
    free(jobs);
    test_rmtree(dir);
}

static void test_comparison_and_tables(void **state) {
    char dir[256], path[512], err[256];
    test_tmpdir(dir, sizeof dir);
    job_record *jobs = fake_jobs(100, 10, 20, 15);
    run_summary runs[2];
    results_summarize(jobs, 2, "serial", 1, 0, NULL, &runs[0]);
    serial_baseline b;
    results_baseline_from(&runs[0], "this run", &b);
    results_compare(&runs[0], &b);
    results_summarize(jobs, 2, "mps", 0, 0, &b, &runs[1]);
    assert_int_equal(results_write_comparison(dir, runs, 2, err, sizeof err), 0);
    snprintf(path, sizeof path, "%s/comparison.json", dir);
    char *text = read_text(path);
    cJSON *root = cJSON_Parse(text);
    assert_int_equal(cJSON_GetArraySize(root), 2);
    assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(root, 1), "mode")->valuestring, "mps");
    assert_true(cJSON_GetObjectItem(cJSON_GetArrayItem(root, 0), "speedup_vs_serial")->valuedouble == 1.0);
    cJSON_Delete(root);
    free(text);
    char *table = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&table, &size);
    results_print_table(f, jobs, 2, &runs[1]);
    results_print_comparison(f, runs, 2);
    fclose(f);
    assert_non_null(strstr(table, "resnet26"));
    assert_non_null(strstr(table, "mps"));
    assert_non_null(strstr(table, "speed-up"));
    free(table);
    char bytes[32];
    results_format_bytes(bytes, sizeof bytes, 1.5 * 1073741824.0);
    assert_string_equal(bytes, "1.50 GiB");
    results_format_bytes(bytes, sizeof bytes, NAN);
    assert_string_equal(bytes, "-");
    free(jobs);
    test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_atomic_write),
        cmocka_unit_test(test_run_dir_names),
        cmocka_unit_test(test_summary_arithmetic),
        cmocka_unit_test(test_files_parse),
        cmocka_unit_test(test_baseline),
        cmocka_unit_test(test_comparison_and_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
