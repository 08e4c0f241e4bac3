/* The GPU monitor fed by a scripted source (no NVML): timeline.csv rows with every column,
 * empty cells for unknown values, per-job memory, the phase markers; the energy window and peak
 * memory queries; the sampler's cost; and NVML's absence reported, not crashed on. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runner/suite/gpu/monitor.h"
#include "tests/support/testutil.h"

typedef struct scripted {
    int reads, closed;
    int last_pid0;
} scripted;

/* Unit 0 is a GPU that spends 100 J per read; unit 1 an instance that only knows its memory. */
static int scripted_read(void *self, int unit, const int *pids, int job_count, monitor_sample *s) {
    scripted *src = self;
    if (unit == 1) {
        s->mem_used = 5e8;
        return 0;
    }
    src->reads++;
    src->last_pid0 = pids[0];
    s->util_gpu = 50;
    s->util_mem = 20;
    s->sm_active = 42.5;
    s->mem_used = 1e9 + src->reads;
    s->mem_total = 8e10;
    s->power_w = 300;
    s->energy_j = 100.0 * src->reads;
    s->pcie_rx = 1e6;
    s->sm_clock_mhz = 1980;
    for (int j = 0; j < job_count; j++) s->job_mem[j] = pids[j] ? 2e8 * (j + 1) : NAN;
    return 0;
}

static void scripted_close(void *self) { ((scripted *)self)->closed = 1; }

static monitor_source make_source(scripted *state) {
    monitor_source src;
    memset(&src, 0, sizeof src);
    src.self = state;
    src.unit_count = 2;
    snprintf(src.unit_names[0], sizeof src.unit_names[0], "gpu0");
    snprintf(src.unit_names[1], sizeof src.unit_names[1], "gpu0-gi7");
    src.read = scripted_read;
    src.close = scripted_close;
    return src;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int csv_columns(const char *line) {
    int n = 1;
    for (const char *p = line; *p && *p != '\n'; p++) n += *p == ',';
    return n;
}

static void test_timeline(void **state) {
    char dir[256], path[512], partial[600], err[256];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/timeline.csv", dir);
    snprintf(partial, sizeof partial, "%s.partial", path);
    scripted script = {0};
    monitor_source src = make_source(&script);
    monitor *m = calloc(1, sizeof *m);
    assert_int_equal(monitor_start(m, &src, path, 2, 20, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(stat(partial, &st), 0); /* written while running */
    monitor_job_phase(m, 0, 1234, "spawn", 0);
    monitor_job_phase(m, 0, 1234, "ready", 0);
    monitor_mark(m, 1, "start", 0);
    sleep_ms(120);
    assert_int_equal(script.last_pid0, 1234);
    monitor_job_phase(m, 0, 1234, "epoch", 2);
    monitor_job_phase(m, 0, 1234, "end", 2);
    sleep_ms(50);
    assert_int_equal(script.last_pid0, 0); /* forgotten at its end */
    monitor_stop(m);
    assert_true(script.closed);
    assert_int_equal(stat(partial, &st), -1);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096], all[1 << 16] = "";
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, "t,unit,util_gpu_pct"));
    assert_non_null(strstr(line, "sm_active_pct"));
    assert_non_null(strstr(line, "job1_mem_bytes,markers"));
    int columns = csv_columns(line), rows = 0, gpu_rows = 0, with_job_mem = 0;
    while (fgets(line, sizeof line, f)) {
        assert_int_equal(csv_columns(line), columns);
        rows++;
        if (strncmp(strchr(line, ',') + 1, "gpu0,", 5) == 0) gpu_rows++;
        if (strstr(line, ",200000000,")) with_job_mem++;
        if (strlen(all) + strlen(line) < sizeof all) strcat(all, line);
    }
    fclose(f);
    /* how many ticks land in the test's ~120 ms at 20 ms depends on the scheduler: the rows' content
     * is what is checked, from at least two ticks */
    expect_ge(gpu_rows, 2);
    assert_int_equal(rows, 2 * gpu_rows);     /* one row per unit and tick */
    expect_ge(with_job_mem, 1);
    assert_non_null(strstr(all, "job0:ready"));
    assert_non_null(strstr(all, "job1:start"));
    assert_non_null(strstr(all, "job0:epoch2"));
    assert_non_null(strstr(all, "job0:end"));
    assert_non_null(strstr(all, ",gpu0-gi7,,,,,,500000000,")); /* unknown values: empty cells */
    assert_non_null(strstr(all, ",42.50,"));
    long ticks;
    double mean_ms, fraction;
    monitor_cost(m, &ticks, &mean_ms, &fraction);
    assert_int_equal(ticks, gpu_rows);
    /* the sampler's busy share of the wall time: a share, whatever the machine's load */
    expect_ge(mean_ms, 0); expect_ge(fraction, 0); expect_le(fraction, 1.0);
    /* energy: 100 J per tick; the whole run spans ticks-1 intervals */
    double joules;
    assert_int_equal(monitor_energy_between(m, m->points[0].t, m->points[m->point_count - 1].t, &joules), 0);
    expect_lt(fabs(joules - 100.0 * (m->point_count - 1)), 1e-6);
    expect_ge(monitor_peak_memory(m, 0, 1e12), 1e9 + m->point_count - 1);
    monitor_free(m);
    free(m);
    test_rmtree(dir);
}

static void test_energy_window(void **state) {
    monitor m;
    memset(&m, 0, sizeof m);
    m.sample_ms = 100;
    monitor_point points[] = {{10.0, 1000, 1}, {10.1, 1010, 5}, {10.2, 1030, 3}, {10.3, NAN, 9}, {10.4, 1070, 2}};
    m.points = points;
    m.point_count = 5;
    double j;
    assert_int_equal(monitor_energy_between(&m, 10.05, 10.15, &j), 0);
    expect_lt(fabs(j - 15.0), 1e-9);                  /* 1005 -> 1020 */
    assert_int_equal(monitor_energy_between(&m, 10.2, 10.4, &j), 0);
    expect_lt(fabs(j - 40.0), 1e-9);                  /* a missing reading is skipped */
    assert_int_equal(monitor_energy_between(&m, 9.98, 10.42, &j), 0); /* edges within slack */
    expect_lt(fabs(j - 70.0), 1e-9);
    assert_int_equal(monitor_energy_between(&m, 5, 10.4, &j), -1);    /* not covered */
    assert_int_equal(monitor_energy_between(&m, 10.4, 10.0, &j), -1);
    double starts[] = {10.0, NAN, 10.2}, ends[] = {10.1, NAN, 10.4};
    assert_int_equal(monitor_energy_windows(&m, starts, ends, 3, &j), 0); /* serial: job by job */
    expect_lt(fabs(j - 50.0), 1e-9);
    ends[0] = 11.0;
    assert_int_equal(monitor_energy_windows(&m, starts, ends, 3, &j), -1);
    expect_eq(monitor_peak_memory(&m, 10.05, 10.25), 5);
    assert_true(isnan(monitor_peak_memory(&m, 20, 30)));
}

static void test_csv_row(void **state) {
    monitor_sample s;
    double *v = (double *)&s;
    for (size_t i = 0; i < sizeof s / sizeof(double); i++) v[i] = NAN;
    s.power_w = 123.4567;
    s.job_mem[1] = 42;
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    monitor_csv_header(f, 2);
    monitor_csv_row(f, 1.5, "gpu3", &s, 2, "job1:start");
    fclose(f);
    assert_non_null(strstr(text, "\n1.500,gpu3,,,,,,,,123.457,,,,,,42,job1:start"));
    free(text);
}

static void test_nvml_absent(void **state) {
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    monitor_source src;
    char why[512] = "";
    assert_int_equal(monitor_nvml_source(&src, 0, NULL, 0, why, sizeof why), -1);
    assert_non_null(strstr(why, "NVML"));
    unsetenv("SUITE_NVML_LIBRARY");
    monitor m;
    memset(&m, 0, sizeof m);
    monitor_mark(&m, 0, "ready", 0); /* a monitor that never started ignores everything */
    monitor_set_pid(&m, 0, 1);
    monitor_stop(&m);
    monitor_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeline),
        cmocka_unit_test(test_energy_window),
        cmocka_unit_test(test_csv_row),
        cmocka_unit_test(test_nvml_absent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
