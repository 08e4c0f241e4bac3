/* The whole MIG flow (runner/suite/gpu/mig.h) against the stand-in libnvidia-ml
 * (tests/nvml_standin/nvml_standin.c), loaded through the suite's own dlopen path: discover,
 * plan, create, hand out MIG UUIDs, destroy. The stand-in keeps its instances in its own memory
 * and the test reads them back, to prove that everything created is destroyed - also after a
 * creation refused midway - and that nothing else is touched. Also: MIG mode off or
 * unsupported, the library absent, the GPU's table checked against the shipped one. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/gpu/mig.h"
#include "runner/suite/gpu/nvml.h"
#include "tests/support/testutil.h"

#ifndef NVML_STANDIN_PATH
#error "NVML_STANDIN_PATH (the stand-in library) comes from CMakeLists.txt"
#endif

#define GiB(x) ((unsigned long long)((x) * 1073741824.0))

/* What the stand-in reports about itself (resolved from the same loaded copy). */
static int (*live_gpu_instances)(int foreign);
static int (*live_compute_instances)(void);
static void (*inject_failure)(const char *kind);
static unsigned int (*replace_instance)(unsigned int id, unsigned int start);

static mig_session session;  /* holds tables and plans: kept off the test stack */
static nvml *current;        /* closed by the teardown, also when an assertion ends a test early */
static char err[8192];

static void expect_in(const char *text, const char *word) {
    if (!strstr(text, word)) fail_msg("\"%s\" lacks \"%s\"", text, word);
}

static void set_or_clear(const char *name, const char *value) {
    if (value) setenv(name, value, 1);
    else unsetenv(name);
}

/* Configures the stand-in (it reads the environment at nvmlInit_v2) and opens it. */
static nvml *open_standin(const char *gpu, const char *mig, const char *fail, const char *existing,
                          const char *skew) {
    set_or_clear("SUITE_NVML_STANDIN_GPU", gpu);
    set_or_clear("SUITE_NVML_STANDIN_MIG", mig);
    set_or_clear("SUITE_NVML_STANDIN_FAIL", fail);
    set_or_clear("SUITE_NVML_STANDIN_EXISTING", existing);
    set_or_clear("SUITE_NVML_STANDIN_SKEW", skew);
    char why[512];
    nvml *nv = nvml_open(NVML_STANDIN_PATH, why, sizeof why);
    if (!nv) fail_msg("cannot open the stand-in: %s", why);
    nv->quiet = 1;  /* failures are asserted on through last_error and the returned messages */
    return current = nv;
}

static void close_standin(nvml *nv) {
    nvml_close(nv);
    current = NULL;
}

static int teardown(void **state) {
    if (current) {
        if (session.nv == current) mig_destroy_created(&session, err, sizeof err);
        close_standin(current);
    }
    return 0;
}

static void open_session(nvml *nv) {
    if (mig_open(&session, nv, 0, err, sizeof err) != 0) fail_msg("mig_open: %s", err);
}

static void assign_ok(const mig_job *jobs, int n, const char *layout) {
    if (mig_assign(&session, jobs, n, layout, 1, err, sizeof err) != 0) fail_msg("mig_assign: %s", err);
}

static void destroy_ok(void) {
    if (mig_destroy_created(&session, err, sizeof err) != 0) fail_msg("mig_destroy_created: %s", err);
}

static void test_library_absent(void **state) {
    char why[512];
    assert_null(nvml_open("/nonexistent/libnvidia-ml.so.1", why, sizeof why));
    expect_in(why, "NVML is not available: cannot load /nonexistent/libnvidia-ml.so.1");
    expect_in(why, "SUITE_NVML_LIBRARY");
    setenv("SUITE_NVML_LIBRARY", "/nonexistent/from-env.so", 1);
    assert_null(nvml_open(NULL, why, sizeof why));
    expect_in(why, "/nonexistent/from-env.so");
    assert_null(nvml_open("libc.so.6", why, sizeof why));  /* loads, but is not NVML */
    expect_in(why, "lacks the NVML function nvmlInit_v2");
    unsetenv("SUITE_NVML_LIBRARY");
    nvml_close(NULL);
}

static void test_environment_names_the_library(void **state) {
    setenv("SUITE_NVML_LIBRARY", NVML_STANDIN_PATH, 1);
    char why[512];
    nvml *nv = current = nvml_open(NULL, why, sizeof why);
    unsetenv("SUITE_NVML_LIBRARY");
    if (!nv) fail_msg("%s", why);
    nv->quiet = 1;
    assert_string_equal(nv->path, NVML_STANDIN_PATH);
    assert_non_null(nv->nvmlDeviceGetMigDeviceHandleByIndex);
    assert_null(nv->nvmlGpmMetricsGet);  /* the stand-in has no GPM: such entries stay NULL */
    nvmlGpmMetricsGet_t metrics = {.version = NVML_GPM_METRICS_GET_VERSION};
    assert_int_equal(NVML_CALL(nv, nvmlGpmMetricsGet, (&metrics)), NVML_ERROR_FUNCTION_NOT_FOUND);
    expect_in(nv->last_error, "NVML error 13 (Function Not Found in this driver) in nvmlGpmMetricsGet(&metrics)");
    expect_in(nv->last_error, "test_mig_flow.c:");
    unsigned int count = 0;
    assert_int_equal(NVML_CALL(nv, nvmlDeviceGetCount_v2, (&count)), NVML_SUCCESS);
    assert_int_equal(count, 1);
    nvmlDevice_t device;
    assert_int_equal(NVML_CALL(nv, nvmlDeviceGetHandleByIndex_v2, (3, &device)), NVML_ERROR_INVALID_ARGUMENT);
    expect_in(nv->last_error, "(Invalid Argument) in nvmlDeviceGetHandleByIndex_v2(3, &device)");
    close_standin(nv);
}

static void test_seven_small_jobs_created_and_destroyed(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", NULL, NULL, NULL);
    open_session(nv);
    assert_true(session.table_from_nvml);
    assert_string_equal(session.gpu.name, "NVIDIA A100-SXM4-40GB");
    assert_int_equal(session.gpu.total_sms, 108);  /* from the shipped table: NVML has no call for it */
    if (session.table_differences) fail_msg("shipped A100-40GB table differs from NVML's:\n%s", session.table_report);
    assert_int_equal(session.device_count, 0);
    mig_job jobs[7];
    for (int i = 0; i < 7; i++) jobs[i] = (mig_job){"S", GiB(1.5), 0};
    assign_ok(jobs, 7, NULL);
    assert_int_equal(live_gpu_instances(0), 7);
    assert_int_equal(live_compute_instances(), 7);
    for (int i = 0; i < 7; i++) {
        const char *uuid = mig_job_uuid(&session, i);
        assert_non_null(uuid);
        assert_memory_equal(uuid, "MIG-", 4);
        for (int k = 0; k < i; k++) assert_string_not_equal(uuid, mig_job_uuid(&session, k));
        assert_int_equal(mig_job_device(&session, i)->memory_bytes, 4864ULL << 20);
        assert_int_equal(mig_job_device(&session, i)->sm_count, 14);
        assert_string_equal(session.gpu.profiles[session.plan.instances[i].profile].name, "1g.5gb");
        assert_int_equal(session.plan.instances[i].existing, -1);
    }
    assert_null(mig_job_uuid(&session, 7));
    destroy_ok();
    assert_int_equal(live_gpu_instances(0), 0);
    assert_int_equal(live_compute_instances(), 0);
    destroy_ok();  /* idempotent */
    close_standin(nv);
}

static void test_without_create_the_plan_is_shown(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", NULL, NULL, NULL);
    open_session(nv);
    mig_job jobs[2] = {{"S", GiB(1), 0}, {"L", GiB(12), 0}};
    assert_int_equal(mig_assign(&session, jobs, 2, NULL, 0, err, sizeof err), -1);
    expect_in(err, "2 of 2 jobs have no idle MIG instance");
    expect_in(err, "MIG plan for NVIDIA A100-SXM4-40GB");
    expect_in(err, "sudo nvidia-smi mig -i 0 -cgi 9,19 -C");
    assert_int_equal(live_gpu_instances(0), 0);
    close_standin(nv);
}

static void test_existing_instances_are_used_and_left_alone(void **state) {
    /* someone else's idle 3g.20gb on 4..7 and a busy 1g.5gb on slice 0 */
    nvml *nv = open_standin("A100-40GB", "on", NULL, "9@4,19@0:busy", NULL);
    open_session(nv);
    assert_int_equal(session.device_count, 2);
    assert_int_equal(session.occupied, 0xF1);
    mig_job jobs[2] = {{"L", GiB(12), 0}, {"S", GiB(1.5), 0}};
    assign_ok(jobs, 2, NULL);
    const mig_device *large = mig_job_device(&session, 0), *small = mig_job_device(&session, 1);
    assert_false(large->created);
    assert_int_equal(large->placement.start, 4);
    assert_int_equal(session.plan.instances[0].existing, session.job_device[0]);
    assert_true(small->created);  /* the busy 1g.5gb is not taken: a new one beside it */
    assert_int_equal(small->placement.start, 1);
    assert_int_equal(live_gpu_instances(0), 1);
    assert_int_equal(live_gpu_instances(1), 2);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    mig_plan_print(&session.plan, out);
    fclose(out);
    expect_in(text, "3g.20gb");
    expect_in(text, "existing");
    expect_in(text, "new");
    expect_in(text, "   #   1   .   .   0   0   0   0");  /* the busy one is outside the plan */
    free(text);
    destroy_ok();
    assert_int_equal(live_gpu_instances(0), 0);
    assert_int_equal(live_gpu_instances(1), 2);
    assert_int_equal(live_compute_instances(), 2);
    close_standin(nv);
}

static void test_gpu_instance_without_compute_instance_holds_its_slices(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", NULL, "5@0:noci", NULL);
    open_session(nv);
    assert_int_equal(session.device_count, 0);  /* no MIG device to run on ... */
    assert_int_equal(session.occupied, 0x0F);   /* ... but its slices are taken */
    assert_int_equal(session.compute_used, 4);
    mig_job jobs[2] = {{"S", GiB(1), 0}, {"S", GiB(1), 0}};
    assign_ok(jobs, 2, NULL);
    expect_ge(mig_job_device(&session, 0)->placement.start, 4);
    expect_ge(mig_job_device(&session, 1)->placement.start, 4);
    destroy_ok();
    assert_int_equal(live_gpu_instances(1), 1);
    assert_int_equal(live_gpu_instances(0), 0);
    close_standin(nv);
}

static void test_creation_refused_midway(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", "gpu-instance:3", "14@4:busy", NULL);
    open_session(nv);
    mig_job jobs[4] = {{"S", GiB(1), 0}, {"S", GiB(1), 0}, {"S", GiB(1), 0}, {"S", GiB(1), 0}};
    assert_int_equal(mig_assign(&session, jobs, 4, NULL, 1, err, sizeof err), -1);
    expect_in(err, "creating MIG instance 3 of 4 (1g.5gb");
    expect_in(err, "NVML error 23 (Insufficient Resources) in nvmlDeviceCreateGpuInstanceWithPlacement");
    expect_in(err, "everything created before it was destroyed");
    assert_int_equal(live_gpu_instances(0), 0);
    assert_int_equal(live_gpu_instances(1), 1);  /* the other user's 2g.10gb */
    assert_int_equal(live_compute_instances(), 1);
    assert_null(mig_job_uuid(&session, 0));
    destroy_ok();  /* the orchestrator's cleanup after the failure: nothing left to do */
    assert_int_equal(live_gpu_instances(1), 1);
    close_standin(nv);
}

static void test_compute_instance_refused_midway(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", "compute-instance:2", NULL, NULL);
    open_session(nv);
    mig_job jobs[3] = {{"S", GiB(1), 0}, {"M", GiB(4), 0}, {"S", GiB(1), 0}};
    assert_int_equal(mig_assign(&session, jobs, 3, NULL, 1, err, sizeof err), -1);
    expect_in(err, "creating MIG instance 2 of 3");
    expect_in(err, "nvmlGpuInstanceCreateComputeInstance");
    assert_int_equal(live_gpu_instances(0), 0);  /* also the GPU instance left without one */
    assert_int_equal(live_compute_instances(), 0);
    close_standin(nv);
}

/* The study's "MIG (shared)": the recommender and ResNet-152 on compute instances of one 7g.40gb. */
static void test_shared_gpu_instance_created_and_destroyed(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", NULL, NULL, NULL);
    open_session(nv);
    assert_int_equal(session.gpu.ci_sms[3], 42);  /* the shipped compute-instance table, beside NVML's */
    mig_job jobs[2] = {{"XL", GiB(26), 0}, {"L", GiB(8), 0}};
    assign_ok(jobs, 2, "7g.40gb:3c+4c");
    assert_int_equal(live_gpu_instances(0), 1);
    assert_int_equal(live_compute_instances(), 2);
    const mig_device *a = mig_job_device(&session, 0), *b = mig_job_device(&session, 1);
    assert_int_equal(a->gpu_instance_id, b->gpu_instance_id);
    assert_int_not_equal(a->compute_instance_id, b->compute_instance_id);
    assert_string_not_equal(a->uuid, b->uuid);  /* each job bound to its compute instance's MIG device */
    assert_int_equal(a->sm_count, 42);
    assert_int_equal(b->sm_count, 56);
    assert_int_equal(a->ci_slices, 3);
    assert_true(session.plan.instances[0].shared && session.plan.instances[1].shared);
    assert_int_equal(session.plan.instances[1].ci_slices, 4);
    destroy_ok();  /* both compute instances, then the GPU instance */
    assert_int_equal(live_gpu_instances(0), 0);
    assert_int_equal(live_compute_instances(), 0);
    /* beside an instance of its own: 3g.20gb's slices for S, 4g.20gb shared by two */
    mig_job three[3] = {{"S", GiB(1), 0}, {"M", GiB(4), 0}, {"M", GiB(4), 0}};
    assign_ok(three, 3, "3g.20gb,4g.20gb:2c+2c");
    assert_int_equal(live_gpu_instances(0), 2);
    assert_int_equal(live_compute_instances(), 3);
    assert_int_equal(mig_job_device(&session, 2)->sm_count, 28);
    destroy_ok();
    assert_int_equal(live_gpu_instances(0), 0);
    close_standin(nv);
}

static void test_shared_compute_instance_refused_midway(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", "compute-instance:2", NULL, NULL);
    open_session(nv);
    mig_job jobs[2] = {{"XL", GiB(26), 0}, {"L", GiB(8), 0}};
    assert_int_equal(mig_assign(&session, jobs, 2, "7g.40gb:3c+4c", 1, err, sizeof err), -1);
    expect_in(err, "creating MIG instance 1 of 1 (7g.40gb");
    expect_in(err, "and the jobs sharing it");
    expect_in(err, "nvmlGpuInstanceCreateComputeInstance");
    expect_in(err, "everything created before it was destroyed");
    assert_int_equal(live_gpu_instances(0), 0);  /* the first compute instance, then its GPU instance */
    assert_int_equal(live_compute_instances(), 0);
    assert_null(mig_job_uuid(&session, 0));
    /* a busy compute instance keeps its GPU instance until the retry */
    inject_failure("");
    assign_ok(jobs, 2, "7g.40gb:3c+4c");
    inject_failure("destroy-busy");
    assert_int_equal(mig_destroy_created(&session, err, sizeof err), -1);
    assert_int_equal(live_gpu_instances(0), 1);
    inject_failure("");
    destroy_ok();
    assert_int_equal(live_gpu_instances(0), 0);
    assert_int_equal(live_compute_instances(), 0);
    close_standin(nv);
}

static void test_no_permission(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", "permission", NULL, NULL);
    open_session(nv);
    mig_job jobs[1] = {{"S", GiB(1), 0}};
    assert_int_equal(mig_assign(&session, jobs, 1, NULL, 1, err, sizeof err), -1);
    expect_in(err, "Insufficient Permissions");
    expect_in(err, "needs root");
    assert_int_equal(live_gpu_instances(0), 0);
    close_standin(nv);
}

static void test_destroy_retries_what_is_still_busy(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", NULL, NULL, NULL);
    open_session(nv);
    mig_job jobs[2] = {{"S", GiB(1), 0}, {"S", GiB(1), 0}};
    assign_ok(jobs, 2, NULL);
    inject_failure("destroy-busy");  /* a process still runs on them */
    assert_int_equal(mig_destroy_created(&session, err, sizeof err), -1);
    expect_in(err, "2 MIG instance(s) created by this run could not be destroyed");
    expect_in(err, "In use by another client");
    expect_in(err, "nvidia-smi mig -i 0 -dci");
    assert_int_equal(live_gpu_instances(0), 2);
    inject_failure("");
    destroy_ok();
    assert_int_equal(live_gpu_instances(0), 0);
    close_standin(nv);
}

static void test_a_reused_id_is_not_destroyed(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", NULL, NULL, NULL);
    open_session(nv);
    mig_job jobs[2] = {{"S", GiB(1), 0}, {"S", GiB(1), 0}};
    assign_ok(jobs, 2, NULL);
    unsigned int ours = mig_job_device(&session, 0)->gpu_instance_id;
    /* meanwhile someone destroys it and makes their own, which gets the same id */
    assert_int_equal(replace_instance(ours, 5), ours);
    destroy_ok();
    assert_int_equal(live_gpu_instances(0), 0);
    assert_int_equal(live_gpu_instances(1), 1);
    close_standin(nv);
}

static void test_layout_with_an_existing_instance(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", NULL, "9@4", NULL);
    open_session(nv);
    mig_job jobs[2] = {{"a", GiB(2), 0}, {"b", GiB(1), 0}};
    assign_ok(jobs, 2, "3g.20gb,1g.5gb");
    assert_false(mig_job_device(&session, 0)->created);
    assert_true(mig_job_device(&session, 1)->created);
    assert_int_equal(mig_job_device(&session, 1)->placement.start, 0);
    destroy_ok();
    assert_int_equal(live_gpu_instances(1), 1);
    assert_int_equal(live_gpu_instances(0), 0);
    close_standin(nv);
}

static void test_h100_table_and_flow(void **state) {
    nvml *nv = open_standin("H100-80GB", "on", NULL, NULL, NULL);
    open_session(nv);
    if (session.table_differences) fail_msg("shipped H100-80GB table differs from NVML's:\n%s", session.table_report);
    assert_int_equal(session.gpu.total_sms, 132);
    mig_job jobs[3] = {{"S", GiB(1.5), 0}, {"M", GiB(4), 0}, {"L", GiB(12), 0}};
    assign_ok(jobs, 3, NULL);
    assert_string_equal(session.gpu.profiles[session.plan.instances[2].profile].name, "1g.20gb");
    assert_int_equal(mig_job_device(&session, 2)->sm_count, 26);
    double fraction = session.plan.instances[2].sm_fraction;
    expect_gt(fraction, 0.196); expect_lt(fraction, 0.198);  /* 26 of 132 SMs */
    assert_int_equal(live_gpu_instances(0), 3);
    destroy_ok();
    assert_int_equal(live_gpu_instances(0), 0);
    close_standin(nv);
}

static void test_table_differences_are_reported(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", NULL, NULL, "1");
    open_session(nv);
    assert_int_equal(session.table_differences, 2);  /* 1g.5gb and 1g.5gb+me */
    expect_in(session.table_report, "A100-40GB: 1g.5gb SM count: shipped 14, NVML 16");
    expect_in(session.table_report, "1g.5gb+me SM count");
    close_standin(nv);
}

static void test_mig_mode_off(void **state) {
    nvml *nv = open_standin("A100-40GB", "off", NULL, NULL, NULL);
    open_session(nv);
    assert_false(session.table_from_nvml);  /* NVML gave no table: the shipped one stands in */
    assert_string_equal(session.gpu.name, "A100-40GB");
    mig_job jobs[1] = {{"S", GiB(1), 0}};
    assert_int_equal(mig_assign(&session, jobs, 1, NULL, 1, err, sizeof err), -1);
    expect_in(err, "MIG mode is off on GPU 0 (NVIDIA A100-SXM4-40GB)");
    expect_in(err, "sudo nvidia-smi -i 0 -mig 1");
    expect_in(err, "never changes it");
    expect_in(err, "reset the GPU");
    assert_int_equal(live_gpu_instances(0), 0);
    static mig_plan plan;  /* planning still works from the shipped table */
    assert_int_equal(mig_plan_jobs(&plan, &session.gpu, jobs, 1, NULL, 0, 0, err, sizeof err), 0);
    close_standin(nv);

    nv = open_standin("A100-40GB", "pending", NULL, NULL, NULL);
    open_session(nv);
    assert_int_equal(mig_require_enabled(&session, err, sizeof err), -1);
    expect_in(err, "enabling is pending");
    close_standin(nv);

    nv = open_standin("A100-40GB", "unsupported", NULL, NULL, NULL);
    open_session(nv);
    assert_int_equal(mig_assign(&session, jobs, 1, NULL, 1, err, sizeof err), -1);
    expect_in(err, "does not support MIG");
    close_standin(nv);
}

static void test_too_many_jobs_for_the_gpu(void **state) {
    nvml *nv = open_standin("A100-40GB", "on", NULL, "19@0:busy", NULL);
    open_session(nv);
    mig_job jobs[7];
    for (int i = 0; i < 7; i++) jobs[i] = (mig_job){"S", GiB(1), 0};
    assert_int_equal(mig_assign(&session, jobs, 7, NULL, 1, err, sizeof err), -1);
    expect_in(err, "7 of 7 jobs found no idle MIG instance that holds them (1 exist, 1 busy)");
    expect_in(err, "at most 6 jobs");
    assert_int_equal(live_gpu_instances(0), 0);
    assert_int_equal(live_gpu_instances(1), 1);
    close_standin(nv);
}

int main(void) {
    /* A second reference to the same loaded copy: it stays loaded between nvml_open/close, so
     * its record of live instances can be read after each flow. */
    void *standin = dlopen(NVML_STANDIN_PATH, RTLD_NOW | RTLD_LOCAL);
    if (!standin) {
        fprintf(stderr, "cannot load the stand-in %s: %s\n", NVML_STANDIN_PATH, dlerror());
        return 1;
    }
    *(void **)&live_gpu_instances = dlsym(standin, "nvml_standin_live_gpu_instances");
    *(void **)&live_compute_instances = dlsym(standin, "nvml_standin_live_compute_instances");
    *(void **)&inject_failure = dlsym(standin, "nvml_standin_fail");
    *(void **)&replace_instance = dlsym(standin, "nvml_standin_replace_instance");
    if (!live_gpu_instances || !live_compute_instances || !inject_failure || !replace_instance) {
        fprintf(stderr, "the stand-in lacks its test functions\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_library_absent, teardown),
        cmocka_unit_test_teardown(test_environment_names_the_library, teardown),
        cmocka_unit_test_teardown(test_seven_small_jobs_created_and_destroyed, teardown),
        cmocka_unit_test_teardown(test_without_create_the_plan_is_shown, teardown),
        cmocka_unit_test_teardown(test_existing_instances_are_used_and_left_alone, teardown),
        cmocka_unit_test_teardown(test_gpu_instance_without_compute_instance_holds_its_slices, teardown),
        cmocka_unit_test_teardown(test_creation_refused_midway, teardown),
        cmocka_unit_test_teardown(test_compute_instance_refused_midway, teardown),
        cmocka_unit_test_teardown(test_shared_gpu_instance_created_and_destroyed, teardown),
        cmocka_unit_test_teardown(test_shared_compute_instance_refused_midway, teardown),
        cmocka_unit_test_teardown(test_no_permission, teardown),
        cmocka_unit_test_teardown(test_destroy_retries_what_is_still_busy, teardown),
        cmocka_unit_test_teardown(test_a_reused_id_is_not_destroyed, teardown),
        cmocka_unit_test_teardown(test_layout_with_an_existing_instance, teardown),
        cmocka_unit_test_teardown(test_h100_table_and_flow, teardown),
        cmocka_unit_test_teardown(test_table_differences_are_reported, teardown),
        cmocka_unit_test_teardown(test_mig_mode_off, teardown),
        cmocka_unit_test_teardown(test_too_many_jobs_for_the_gpu, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    dlclose(standin);
    return failed;
}
