/* Normalized metrics (results/metrics.h) on hand-made numbers: per job normalized throughput,
 * slowdown, turnaround, energy per sample and interference; per run STP, ANTT, fairness,
 * speed-up and energy against serial; the samples/s sum only for identical workloads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "results/metrics.h"

#define near(a, b) assert_true(fabs((a) - (b)) < 1e-9)

/* Two jobs: S alone at 1000 samples/s, M alone at 250; beside each other 800 and 150. */
static void two_jobs(metrics_input *in) {
    metrics_input_init(in);
    in->count = 2;
    in->makespan_s = 10, in->energy_j = 3000;
    in->serial_makespan_s = 16, in->serial_energy_j = 4000;
    in->jobs[0] = (metrics_job_input){.rate = 800, .solo_rate = 1000, .partition_rate = NAN,
                                      .samples = 8000, .turnaround_s = 10, .alone_s = 8};
    in->jobs[1] = (metrics_job_input){.rate = 150, .solo_rate = 250, .partition_rate = NAN,
                                      .samples = 1500, .turnaround_s = 10, .alone_s = 6};
}

static void test_collocated_pair(void **state) {
    metrics_input in;
    run_metrics m;
    two_jobs(&in);
    metrics_compute(&in, &m);
    near(m.jobs[0].normalized, 0.8);
    near(m.jobs[1].normalized, 0.6);
    near(m.jobs[0].slowdown, 1.25);
    near(m.jobs[1].slowdown, 1.0 / 0.6);
    near(m.stp, 1.4);
    near(m.fairness, 0.75);
    near(m.jobs[0].turnaround, 10.0 / 8);
    near(m.jobs[1].turnaround, 10.0 / 6);
    near(m.antt, (10.0 / 8 + 10.0 / 6) / 2);
    near(m.speedup, 1.6);
    near(m.energy_vs_serial, 0.75);
    /* energy split by solo-equivalent work: 8 s of S, 6 s of M -> 8/14 and 6/14 of 3000 J */
    near(m.jobs[0].energy_per_sample, 3000.0 * 8 / 14 / 8000);
    near(m.jobs[1].energy_per_sample, 3000.0 * 6 / 14 / 1500);
    /* S and M are different workloads: no sum */
    assert_true(isnan(m.samples_per_s_sum));
    assert_true(isnan(m.interference_min));
    in.same_workload = 1;
    metrics_compute(&in, &m);
    near(m.samples_per_s_sum, 950);
}

static void test_sequential_run(void **state) {
    metrics_input in;
    run_metrics m;
    two_jobs(&in);
    in.sequential = 1;
    in.jobs[0].rate = 1000, in.jobs[1].rate = 250;
    in.jobs[0].turnaround_s = 8, in.jobs[1].turnaround_s = 14;  /* M waited for S */
    in.makespan_s = 14, in.serial_makespan_s = 14;
    metrics_compute(&in, &m);
    near(m.stp, 1.0);
    near(m.jobs[0].normalized, 1.0);
    near(m.fairness, 1.0);
    near(m.antt, (1.0 + 14.0 / 6) / 2);
    near(m.speedup, 1.0);
}

static void test_interference(void **state) {
    metrics_input in;
    run_metrics m;
    two_jobs(&in);
    in.jobs[0].partition_rate = 800;   /* as fast as alone in its partition: isolated */
    in.jobs[1].partition_rate = 200;
    metrics_compute(&in, &m);
    near(m.jobs[0].interference, 1.0);
    near(m.jobs[1].interference, 0.75);
    near(m.interference_min, 0.75);
    near(m.interference_mean, 0.875);
}

static void test_missing_inputs_stay_unknown(void **state) {
    metrics_input in;
    run_metrics m;
    two_jobs(&in);
    in.jobs[1].solo_rate = NAN;  /* no baseline for M */
    in.energy_j = NAN;
    in.serial_makespan_s = NAN;
    metrics_compute(&in, &m);
    near(m.jobs[0].normalized, 0.8);
    assert_true(isnan(m.jobs[1].normalized));
    assert_true(isnan(m.stp));       /* a sum over part of the jobs would mislead */
    assert_true(isnan(m.fairness));
    assert_true(isnan(m.speedup));
    assert_true(isnan(m.jobs[0].energy_per_sample));
    in.jobs[1].solo_rate = 250;
    in.jobs[1].rate = 0;             /* failed before its timed epoch */
    metrics_compute(&in, &m);
    assert_true(isnan(m.jobs[1].normalized));
    assert_true(isnan(m.jobs[1].slowdown));
    in.count = 0;
    metrics_compute(&in, &m);
    assert_true(isnan(m.stp) && isnan(m.antt));
}

static void test_same_workload(void **state) {
    job_spec s[3];
    memset(s, 0, sizeof s);
    for (int i = 0; i < 3; i++) {
        strcpy(s[i].model, "resnet26"), strcpy(s[i].data, "cifar10");
        s[i].image_size = 32, s[i].classes = 10, s[i].batch = 128;
    }
    strcpy(s[1].label, "S"), s[1].epochs = 3;  /* labels and epoch overrides aside */
    assert_int_equal(metrics_same_workload(s, 3), 1);
    s[2].batch = 64;
    assert_int_equal(metrics_same_workload(s, 3), 0);
    s[2].batch = 128;
    strcpy(s[2].model, "dlrm");
    assert_int_equal(metrics_same_workload(s, 3), 0);
    assert_int_equal(metrics_same_workload(s, 1), 1);
    assert_int_equal(metrics_same_workload(s, 0), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collocated_pair),
        cmocka_unit_test(test_sequential_run),
        cmocka_unit_test(test_interference),
        cmocka_unit_test(test_missing_inputs_stay_unknown),
        cmocka_unit_test(test_same_workload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
