/* Job processes and their protocol, run against tests/support/fake_train (FAKE_TRAIN_PATH): argv and
 * environment construction (also the MPS daemon's and clients'), event parsing, the start
 * barrier, naive vs serial timing, crashes, error events, NaN losses, jobs that never become
 * ready, and stopping with SIGTERM -> SIGKILL. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner/suite/jobs/jobs.h"
#include "base/clock.h"
#include "runner/suite/gpu/mps.h"
#include "tests/support/testutil.h"

#ifndef FAKE_TRAIN_PATH
#error "FAKE_TRAIN_PATH must name the fake_train program (CMake passes it)"
#endif

static job_spec make_spec(const char *label, const char *model, int batch) {
    job_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.label, sizeof s.label, "%s", label);
    snprintf(s.model, sizeof s.model, "%s", model);
    snprintf(s.data, sizeof s.data, "cifar10");
    s.image_size = 32;
    s.classes = 10;
    s.batch = batch;
    return s;
}

/* Jobs resnet26, resnet50, resnet152 (so FAKE_TRAIN can address each), logs in dir. */
static job_record *prepare_jobs(int count, const char *dir, int epochs) {
    static const char *models[] = {"resnet26", "resnet50", "resnet152"};
    job_record *jobs = calloc((size_t)count, sizeof *jobs);
    assert_non_null(jobs);
    for (int i = 0; i < count; i++) {
        job_spec spec = make_spec(models[i], models[i], 32);
        char err[256];
        const run_request run = {.train_path = FAKE_TRAIN_PATH, .epochs = epochs};
        assert_int_equal(job_prepare(&jobs[i], i, &spec, &run, NULL, dir, err, sizeof err), 0);
    }
    return jobs;
}

static void free_jobs(job_record *jobs, int count) {
    for (int i = 0; i < count; i++) job_release(&jobs[i]);
    free(jobs);
}

static jobs_settings quiet_settings(double ready_timeout) {
    jobs_settings s = {.ready_timeout_s = ready_timeout, .grace_s = 1.0};
    return s;
}

static void test_argv(void **state) {
    job_spec spec = make_spec("S", "resnet26", 128);
    run_request run = {.train_path = "/x/train", .epochs = 3, .steps_per_epoch = 50, .data_root = "/data"};
    char **argv = job_build_argv(&run, &spec, JOB_ARGV_RUN, NULL);
    const char *want[] = {"/x/train", "--model", "resnet26", "--data", "cifar10", "--batch", "128",
                          "--image-size", "32", "--classes", "10", "--epochs", "3",
                          "--steps-per-epoch", "50", "--json", "--wait-go", "--data-root", "/data",
                          "--data-if-present", NULL};
    for (int i = 0; want[i]; i++) assert_string_equal(argv[i], want[i]);
    assert_null(argv[20]);
    job_free_strv(argv);
    /* dry run: no epochs, steps or wait-go (the data root is checked too); criteo has no image size */
    spec.image_size = 0;
    argv = job_build_argv(&run, &spec, JOB_ARGV_DRY_RUN, NULL);
    const char *dry[] = {"/x/train", "--model", "resnet26", "--data", "cifar10", "--batch", "128",
                         "--classes", "10", "--dry-run", "--json", "--data-root", "/data",
                         "--data-if-present", NULL};
    for (int i = 0; dry[i]; i++) assert_string_equal(argv[i], dry[i]);
    assert_null(argv[14]);
    job_free_strv(argv);
    /* under the window measurement: a warm-up shorter than the epoch is passed on, one as long is not */
    run = (run_request){.train_path = "/x/train", .epochs = 2, .steps_per_epoch = 50, .window_s = 10, .warmup_steps = 20};
    argv = job_build_argv(&run, &spec, JOB_ARGV_RUN, NULL);
    int n = 0;
    while (argv[n]) n++;
    assert_string_equal(argv[n - 3], "--window-protocol");
    assert_string_equal(argv[n - 2], "--warmup-steps");
    assert_string_equal(argv[n - 1], "20");
    job_free_strv(argv);
    run.warmup_steps = 50;
    argv = job_build_argv(&run, &spec, JOB_ARGV_RUN, NULL);
    for (n = 0; argv[n]; n++) assert_string_not_equal(argv[n], "--warmup-steps");
    job_free_strv(argv);
    /* decode=: in the run and in the footprint query (the decoder's buffers are the job's) */
    spec.decode = DECODE_GPU, spec.decode_given = 1;
    for (int form = 0; form < 2; form++) {
        run = (run_request){.train_path = "/x/train", .epochs = 2, .steps_per_epoch = 50, .data_root = "/data"};
        argv = job_build_argv(&run, &spec, form, NULL);
        int at = -1;
        for (n = 0; argv[n]; n++)
            if (!strcmp(argv[n], "--decode")) at = n;
        expect_gt(at, 0);
        assert_string_equal(argv[at + 1], "gpu");
        job_free_strv(argv);
    }
}

static int has_entry(char **env, const char *entry) {
    for (; env && *env; env++)
        if (strcmp(*env, entry) == 0) return 1;
    return 0;
}

static int has_name(char **env, const char *name) {
    size_t n = strlen(name);
    for (; env && *env; env++)
        if (strncmp(*env, name, n) == 0 && (*env)[n] == '=') return 1;
    return 0;
}

static void test_env(void **state) {
    char *base[] = {"PATH=/bin", "CUDA_VISIBLE_DEVICES=3", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=10", NULL};
    job_env env = {0};
    assert_int_equal(job_env_set(&env, "CUDA_VISIBLE_DEVICES", "GPU-%s", "abc"), 0);
    assert_int_equal(job_env_set(&env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", NULL), 0);
    assert_int_equal(job_env_set(&env, "NEW", "%d", 7), 0);
    char **out = job_build_env(base, &env);
    assert_true(has_entry(out, "PATH=/bin"));
    assert_true(has_entry(out, "CUDA_VISIBLE_DEVICES=GPU-abc"));
    assert_false(has_entry(out, "CUDA_VISIBLE_DEVICES=3"));
    assert_false(has_name(out, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
    assert_true(has_entry(out, "NEW=7"));
    job_free_strv(out);
    /* a list of sixteen full-length UUIDs is carried whole; a value that cannot be is never cut:
     * the environment is refused, naming it */
    job_env list = {0};
    char uuids[16 * 41] = "";
    for (int g = 0; g < 16; g++)
        snprintf(uuids + strlen(uuids), sizeof uuids - strlen(uuids), "%sGPU-5a1e0000-0000-4000-8000-%012x",
                 g ? "," : "", g);
    assert_int_equal(job_env_set(&list, "CUDA_VISIBLE_DEVICES", "%s", uuids), 0);
    out = job_build_env(base, &list);
    char whole[16 * 41 + 32];
    snprintf(whole, sizeof whole, "CUDA_VISIBLE_DEVICES=%s", uuids);
    assert_true(has_entry(out, whole));
    job_free_strv(out);
    static char huge[JOB_ENV_ENTRY + 1];
    memset(huge, 'x', JOB_ENV_ENTRY);
    assert_int_equal(job_env_set(&list, "SUITE_JOB_DEVICES", "%s", huge), -1);
    assert_non_null(strstr(list.refused, "SUITE_JOB_DEVICES: a value of"));
    assert_null(job_build_env(base, &list));
    job_env many = {0};
    for (int k = 0; k < JOB_ENV_MAX; k++) assert_int_equal(job_env_set(&many, "A", "%d", k), 0);
    assert_int_equal(job_env_set(&many, "B", "1"), -1);
    assert_non_null(strstr(many.refused, "B: more than"));
    assert_null(job_build_env(base, &many));
    char name[64];
    job_safe_name(name, sizeof name, "resnet50:imagenet64@128/96");
    assert_string_equal(name, "resnet50_imagenet64_128_96");
    job_safe_name(name, sizeof name, "../x");
    assert_string_equal(name, "_._x");
}

static void test_mps_commands(void **state) {
    mps_daemon d;
    memset(&d, 0, sizeof d);
    snprintf(d.pipe_dir, sizeof d.pipe_dir, "/r/mps-pipe");
    snprintf(d.log_dir, sizeof d.log_dir, "/r/mps-log");
    snprintf(d.visible, sizeof d.visible, "GPU-1234");
    const char *argv[3];
    mps_control_argv(&d, 1, argv);
    assert_string_equal(argv[0], "nvidia-cuda-mps-control");
    assert_string_equal(argv[1], "-d");
    assert_null(argv[2]);
    mps_control_argv(&d, 0, argv); /* "quit" goes to its stdin */
    assert_null(argv[1]);
    job_env env = {0};
    assert_int_equal(mps_daemon_env(&d, &env), 0);
    char **e = job_build_env(NULL, &env);
    assert_true(has_entry(e, "CUDA_MPS_PIPE_DIRECTORY=/r/mps-pipe"));
    assert_true(has_entry(e, "CUDA_MPS_LOG_DIRECTORY=/r/mps-log"));
    assert_true(has_entry(e, "CUDA_VISIBLE_DEVICES=GPU-1234"));
    job_free_strv(e);
    memset(&env, 0, sizeof env);
    assert_int_equal(mps_client_env(&d, 25, 4LL << 30, 8, &env), 0);
    char *base[] = {"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=1G", NULL};
    e = job_build_env(base, &env);
    assert_true(has_entry(e, "CUDA_MPS_PIPE_DIRECTORY=/r/mps-pipe"));
    assert_true(has_entry(e, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"));
    assert_true(has_entry(e, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=4G"));
    assert_true(has_entry(e, "CUDA_VISIBLE_DEVICES=GPU-1234"));
    assert_true(has_entry(e, "CUDA_DEVICE_MAX_CONNECTIONS=8")); /* a GPU-decoding client's share */
    job_free_strv(e);
    /* no share, no limit, an index: inherited values removed, the server's numbering used; the
     * work queues left at the MPS default */
    snprintf(d.visible, sizeof d.visible, "1");
    memset(&env, 0, sizeof env);
    mps_client_env(&d, 0, 0, 0, &env);
    char *inherited[] = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=5", "CUDA_VISIBLE_DEVICES=1", NULL};
    e = job_build_env(inherited, &env);
    assert_false(has_name(e, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
    assert_false(has_name(e, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"));
    assert_false(has_name(e, "CUDA_VISIBLE_DEVICES"));
    assert_false(has_name(e, "CUDA_DEVICE_MAX_CONNECTIONS"));
    job_free_strv(e);
    /* which jobs ask for more queues: ImageNet's JPEGs that may decode on the GPU */
    job_spec jpeg = {.data = "imagenet"}, host = {.data = "imagenet", .decode = DECODE_CPU, .decode_given = 1};
    job_spec shaped = {.data = "imagenet64"};
    assert_true(job_spec_may_decode_on_gpu(&jpeg));
    assert_false(job_spec_may_decode_on_gpu(&host));
    assert_false(job_spec_may_decode_on_gpu(&shaped));
    char limit[32];
    mps_format_mem_limit(limit, sizeof limit, 1536LL << 20);
    assert_string_equal(limit, "0=1536M");
}

static void test_mps_lists(void **state) {
    int sm[3];
    long long mem[3];
    char err[256];
    assert_int_equal(mps_parse_sm_list("25,25,50", 3, sm, err, sizeof err), 0);
    assert_int_equal(sm[2], 50);
    assert_int_equal(mps_parse_sm_list("40", 3, sm, err, sizeof err), 0);
    assert_int_equal(sm[1], 40);
    assert_int_equal(mps_parse_sm_list("25,25", 3, sm, err, sizeof err), -1);
    assert_non_null(strstr(err, "2 entries for 3 job(s); give one for all or one per job"));
    assert_int_equal(mps_parse_sm_list("0,50,101", 3, sm, err, sizeof err), -1);
    assert_int_equal(mps_parse_mem_list("4G,512M,1.5GiB", 3, mem, err, sizeof err), 0);
    expect_eq(mem[0], 4LL << 30); expect_eq(mem[1], 512LL << 20); expect_eq(mem[2], 1536LL << 20);
    assert_int_equal(mps_parse_mem_list("4X", 3, mem, err, sizeof err), -1);
    assert_int_equal(mps_parse_mem_list("99999999T", 3, mem, err, sizeof err), -1);
    assert_string_equal(err, "--mps-mem: entry 1 of '99999999T': expected a size from 1M to 1024T, got '99999999T' "
                        "(more than 1024T)");
    assert_int_equal(mps_parse_mem_list("4G,-1G,1G", 3, mem, err, sizeof err), -1);
    assert_non_null(strstr(err, "entry 2 of '4G,-1G,1G'"));
    assert_int_equal(mps_parse_sm_list("25,,50", 3, sm, err, sizeof err), -1);
    assert_non_null(strstr(err, "entry 2 is empty"));
    assert_int_equal(mps_parse_sm_list("+25,25,50", 3, sm, err, sizeof err), -1);
    assert_non_null(strstr(err, "(no sign '+')"));
}

static void test_events(void **state) {
    job_record *job = calloc(1, sizeof *job);
    job_spec spec = make_spec("S", "resnet26", 8);
    char err[128];
    const run_request run = {.train_path = "/bin/true", .epochs = 2};
    assert_int_equal(job_prepare(job, 0, &spec, &run, NULL, "/tmp", err, sizeof err), 0);
    job->proc->phase = JOB_STARTED;
    assert_null(job_handle_line(job, "{\"event\":\"setup\",\"model\":\"resnet26\",\"params\":17,"
                                     "\"footprint_bytes\":1000,\"device\":\"H100\",\"mps\":1,\"mig\":0,\"pid\":42}", 1.0));
    expect_eq(job->mps, 1); expect_eq(job->mig, 0); expect_eq(job->child_pid, 42); expect_eq(job->footprint_bytes, 1000);
    assert_string_equal(job->device, "H100");
    assert_string_equal(job_handle_line(job, "{\"event\":\"ready\",\"t\":5.5}", 1.0), "ready");
    expect_eq(job->t_ready, 5.5); expect_eq(job->proc->phase, JOB_READY);
    assert_string_equal(job_handle_line(job, "{\"event\":\"epoch\",\"epoch\":1,\"warmup\":true,\"samples\":64,"
        "\"seconds\":2,\"samples_per_s\":32,\"loss\":2.3,\"accuracy\":null,\"peak_bytes\":99,"
        "\"t_start\":6,\"t_end\":8,\"step_ms_median\":3,\"step_ms_p90\":4,\"cpu_cores\":1.5,"
        "\"host_decoded\":2}", 1.0), "epoch");
    assert_true(job->epochs[0].warmup && isnan(job->epochs[0].accuracy) && !job->epochs[0].diverged);
    expect_eq(job->epochs[0].cpu_cores, 1.5); expect_eq(job->epochs[0].host_decoded, 2);
    assert_string_equal(job_handle_line(job, "{\"event\":\"epoch\",\"epoch\":2,\"warmup\":false,"
        "\"loss\":null,\"diverged\":true}", 1.0), "epoch");
    assert_true(job->epochs[1].diverged && isnan(job->epochs[1].loss));
    assert_true(isnan(job->epochs[1].cpu_cores) && isnan(job->epochs[1].host_decoded)); /* not reported */
    /* step times: appended in order, numbered from the event's first; a malformed event adds none */
    assert_null(job_handle_line(job, "{\"event\":\"steps\",\"window\":1,\"first\":512,\"ms\":[3.5,4.25]}", 1.0));
    assert_null(job_handle_line(job, "{\"event\":\"steps\",\"epoch\":2,\"first\":0,\"ms\":[-1,\"x\",7.125]}", 1.0));
    assert_null(job_handle_line(job, "{\"event\":\"steps\",\"window\":1,\"epoch\":2,\"first\":0,\"ms\":[1]}", 1.0));
    assert_null(job_handle_line(job, "{\"event\":\"steps\",\"window\":1,\"ms\":[1]}", 1.0));
    /* an index beyond what an int holds, or negative, reads as missing: the event is malformed */
    assert_null(job_handle_line(job, "{\"event\":\"steps\",\"window\":1,\"first\":1e20,\"ms\":[1]}", 1.0));
    assert_null(job_handle_line(job, "{\"event\":\"steps\",\"window\":-3,\"first\":0,\"ms\":[1]}", 1.0));
    assert_int_equal(job->step_count, 3);
    expect_eq(job->steps[0].window, 1); expect_eq(job->steps[0].epoch, -1); expect_eq(job->steps[0].step, 513); expect_eq(job->steps[0].ms, 3.5f);
    expect_eq(job->steps[1].step, 514); expect_eq(job->steps[1].ms, 4.25f);
    expect_eq(job->steps[2].window, -1); expect_eq(job->steps[2].epoch, 2); expect_eq(job->steps[2].step, 3); expect_eq(job->steps[2].ms, 7.125f);
    assert_null(job_handle_line(job, "not json at all", 1.0));
    assert_null(job_handle_line(job, "[1,2]", 1.0));
    assert_null(job_handle_line(job, "{\"event\":\"error\",\"message\":\"out of memory\"}", 1.0));
    assert_string_equal(job->error_message, "out of memory");
    assert_null(job_handle_line(job, "{\"event\":\"done\",\"t\":9}", 1.0));
    assert_true(job->saw_done); expect_eq(job->t_done, 9);
    /* progress: the run's step from the epoch's; a step or epoch out of range changes nothing */
    assert_null(job_handle_line(job, "{\"event\":\"progress\",\"step\":7,\"steps\":100,\"epoch\":3}", 1.0));
    expect_eq(job->last_step, 207);
    assert_null(job_handle_line(job, "{\"event\":\"progress\",\"step\":1e30,\"steps\":100,\"epoch\":3}", 1.0));
    assert_null(job_handle_line(job, "{\"event\":\"progress\",\"step\":8,\"steps\":1e300,\"epoch\":1e300}", 1.0));
    expect_eq(job->last_step, 8);
    assert_int_equal(job->epoch_count, 2);
    job->proc->wait_status = 1 << 8; /* exit 1 */
    job_settle(job);
    assert_int_equal(job->status, JOB_DIVERGED);
    assert_non_null(strstr(job->reason, "NaN in epoch 2"));
    job_release(job);
    free(job);
}

static void test_settle(void **state) {
    job_record *job = calloc(1, sizeof *job);
    job_process *proc = calloc(1, sizeof *proc);
    job->proc = proc;
    job->proc->wait_status = SIGSEGV; /* WIFSIGNALED */
    snprintf(job->proc->err_last, sizeof job->proc->err_last, "cuda error");
    job_settle(job);
    assert_int_equal(job->status, JOB_FAILED);
    assert_non_null(strstr(job->reason, "signal 11"));
    assert_non_null(strstr(job->reason, "cuda error"));
    memset(job, 0, sizeof *job);
    memset(proc, 0, sizeof *proc);
    job->proc = proc;
    job_settle(job);
    assert_int_equal(job->status, JOB_FAILED);
    assert_non_null(strstr(job->reason, "without its done event"));
    memset(job, 0, sizeof *job);
    job->proc = proc;
    job->saw_done = 1;
    job_settle(job);
    assert_int_equal(job->status, JOB_OK);
    assert_string_equal(job->reason, "");
    free(proc);
    free(job);
}

static void test_naive_barrier_and_overlap(void **state) {
    char dir[256];
    test_tmpdir(dir, sizeof dir);
    /* Different set-up times: the barrier must still release all of them together. */
    setenv("FAKE_TRAIN", "*:epoch_ms=300;resnet50:setup_ms=400;resnet152:setup_ms=200", 1);
    job_record *jobs = prepare_jobs(3, dir, 2);
    jobs_settings s = quiet_settings(30);
    assert_int_equal(jobs_run_group(jobs, 3, &s), GROUP_COMPLETE);
    double latest_start = 0, earliest_end = INFINITY;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(jobs[i].status, JOB_OK);
        assert_int_equal(jobs[i].epoch_count, 2);
        expect_eq(jobs[i].t_go, jobs[0].t_go);
        expect_le(jobs[i].t_ready, jobs[i].t_go);
        expect_ge(jobs[i].epochs[0].t_start, jobs[0].t_go - 0.01);
        const job_epoch *timed = &jobs[i].epochs[1];
        if (timed->t_start > latest_start) latest_start = timed->t_start;
        if (timed->t_end < earliest_end) earliest_end = timed->t_end;
    }
    expect_lt(latest_start, earliest_end); /* the timed epochs overlap */
    /* the log holds both streams */
    FILE *f = fopen(jobs[1].log_path, "r");
    assert_non_null(f);
    char text[8192] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    assert_non_null(strstr(text, "\"event\":\"setup\""));
    assert_non_null(strstr(text, "fake_train: building resnet50"));
    free_jobs(jobs, 3);
    unsetenv("FAKE_TRAIN");
    test_rmtree(dir);
}

static void test_serial_one_after_another(void **state) {
    char dir[256];
    test_tmpdir(dir, sizeof dir);
    setenv("FAKE_TRAIN", "*:epoch_ms=60", 1);
    job_record *jobs = prepare_jobs(3, dir, 2);
    jobs_settings s = quiet_settings(30);
    for (int i = 0; i < 3; i++) assert_int_equal(jobs_run_group(&jobs[i], 1, &s), GROUP_COMPLETE);
    for (int i = 1; i < 3; i++) {
        expect_ge(jobs[i].epochs[0].t_start, jobs[i - 1].t_done);
        expect_gt(jobs[i].t_go, jobs[i - 1].t_go);
    }
    free_jobs(jobs, 3);
    unsetenv("FAKE_TRAIN");
    test_rmtree(dir);
}

static void test_failures_leave_others_running(void **state) {
    char dir[256];
    test_tmpdir(dir, sizeof dir);
    setenv("FAKE_TRAIN", "*:epoch_ms=100;resnet26:crash=6/2;resnet152:fail=1", 1);
    job_record *jobs = prepare_jobs(3, dir, 3);
    jobs_settings s = quiet_settings(30);
    assert_int_equal(jobs_run_group(jobs, 3, &s), GROUP_PARTIAL);
    assert_int_equal(jobs[0].status, JOB_FAILED);
    assert_non_null(strstr(jobs[0].reason, "killed by signal 6"));
    assert_int_equal(jobs[0].epoch_count, 1);
    assert_int_equal(jobs[1].status, JOB_OK);
    assert_int_equal(jobs[1].epoch_count, 3);
    assert_int_equal(jobs[2].status, JOB_FAILED);
    assert_non_null(strstr(jobs[2].reason, "exit 1 in epoch 1: out of memory"));
    free_jobs(jobs, 3);
    unsetenv("FAKE_TRAIN");
    test_rmtree(dir);
}

static void test_nan_is_diverged(void **state) {
    char dir[256];
    test_tmpdir(dir, sizeof dir);
    setenv("FAKE_TRAIN", "resnet26:nan=2", 1);
    job_record *jobs = prepare_jobs(2, dir, 3);
    jobs_settings s = quiet_settings(30);
    assert_int_equal(jobs_run_group(jobs, 2, &s), GROUP_PARTIAL);
    assert_int_equal(jobs[0].status, JOB_DIVERGED);
    assert_int_equal(jobs[1].status, JOB_OK);
    free_jobs(jobs, 2);
    unsetenv("FAKE_TRAIN");
    test_rmtree(dir);
}

static void test_not_ready_and_early_death(void **state) {
    char dir[256];
    test_tmpdir(dir, sizeof dir);
    /* resnet26 never gets ready (timeout 1 s), resnet152 dies in set-up: resnet50 still trains */
    setenv("FAKE_TRAIN", "resnet26:never_ready;resnet152:fail=0", 1);
    job_record *jobs = prepare_jobs(3, dir, 2);
    jobs_settings s = quiet_settings(1.0);
    double t0 = clock_monotonic();
    assert_int_equal(jobs_run_group(jobs, 3, &s), GROUP_PARTIAL);
    expect_lt(clock_monotonic() - t0, 10);
    assert_int_equal(jobs[0].status, JOB_FAILED);
    assert_non_null(strstr(jobs[0].reason, "not ready within 1 s"));
    assert_int_equal(jobs[1].status, JOB_OK);
    assert_int_equal(jobs[2].status, JOB_FAILED);
    assert_non_null(strstr(jobs[2].reason, "out of memory"));
    free_jobs(jobs, 3);
    /* A job that dies before ready does not hold the others until the timeout. */
    setenv("FAKE_TRAIN", "resnet26:fail=0", 1);
    jobs = prepare_jobs(2, dir, 2);
    s = quiet_settings(20.0);
    t0 = clock_monotonic();
    assert_int_equal(jobs_run_group(jobs, 2, &s), GROUP_PARTIAL);
    expect_lt(clock_monotonic() - t0, 5);
    assert_int_equal(jobs[1].status, JOB_OK);
    free_jobs(jobs, 2);
    unsetenv("FAKE_TRAIN");
    test_rmtree(dir);
}

static void test_unstartable_program(void **state) {
    char dir[256], err[128];
    test_tmpdir(dir, sizeof dir);
    job_record *job = calloc(1, sizeof *job);
    job_spec spec = make_spec("S", "resnet26", 8);
    const run_request run = {.train_path = "/nonexistent/train", .epochs = 2};
    assert_int_equal(job_prepare(job, 0, &spec, &run, NULL, dir, err, sizeof err), 0);
    jobs_settings s = quiet_settings(5);
    assert_int_equal(jobs_run_group(job, 1, &s), GROUP_PARTIAL);
    assert_int_equal(job->status, JOB_FAILED);
    assert_non_null(strstr(job->reason, "cannot start /nonexistent/train"));
    job_release(job);
    free(job);
    test_rmtree(dir);
}

static void stop_on_start(void *user, const job_record *job, const char *phase, double t) {
    if (strcmp(phase, "start") == 0) jobs_request_stop(SIGTERM);
}

/* In a child process: the stop flag is process-wide and stays set once raised. */
static void test_stop_escalates_to_kill(void **state) {
    char dir[256];
    test_tmpdir(dir, sizeof dir);
    pid_t pid = fork();
    expect_ge(pid, 0);
    if (pid == 0) {
        setenv("FAKE_TRAIN", "*:epoch_ms=20000;resnet50:ignore_term", 1);
        job_record *jobs = prepare_jobs(2, dir, 2);
        jobs_settings s = {.ready_timeout_s = 30, .grace_s = 0.5, .observer = {NULL, stop_on_start}};
        double t0 = clock_monotonic();
        int rc = jobs_run_group(jobs, 2, &s);
        int ok = rc == GROUP_STOPPED && clock_monotonic() - t0 < 10 && jobs[0].status == JOB_FAILED &&
                 strstr(jobs[0].reason, "stopped by run_suite") && WIFSIGNALED(jobs[1].proc->wait_status) &&
                 WTERMSIG(jobs[1].proc->wait_status) == SIGKILL && jobs_stop_signal() == SIGTERM;
        for (int i = 0; i < 2; i++) ok = ok && kill(jobs[i].proc->pid, 0) != 0; /* reaped: gone */
        _exit(ok ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    test_rmtree(dir);
}

static void test_footprint_and_capture(void **state) {
    job_spec spec = make_spec("S", "resnet26", 8);
    job_footprint fp;
    char err[512];
    setenv("FAKE_TRAIN", "resnet26:footprint=123456789", 1);
    run_request run = {.train_path = FAKE_TRAIN_PATH};
    assert_int_equal(job_query_footprint(&run, &spec, &fp, err, sizeof err), 0);
    expect_eq(fp.total, 123456789.0);
    unsetenv("FAKE_TRAIN");
    assert_int_equal(job_parse_footprint("{\"model\":\"x\"}", &fp, err, sizeof err), -1);
    assert_non_null(strstr(err, "footprint"));
    run.train_path = "/nonexistent/train";
    assert_int_equal(job_query_footprint(&run, &spec, &fp, err, sizeof err), -1);
    char out[64];
    char *sleeper[] = {"/bin/sleep", "5", NULL};
    double t0 = clock_monotonic();
    assert_int_equal(jobs_run_capture(sleeper, NULL, NULL, out, sizeof out, 0.3), -2);
    expect_lt(clock_monotonic() - t0, 3);
    char *cat[] = {"/bin/cat", NULL};
    int st = jobs_run_capture(cat, NULL, "quit\n", out, sizeof out, 5);
    assert_true(WIFEXITED(st)); expect_eq(WEXITSTATUS(st), 0);
    assert_string_equal(out, "quit\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argv),
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_mps_commands),
        cmocka_unit_test(test_mps_lists),
        cmocka_unit_test(test_events),
        cmocka_unit_test(test_settle),
        cmocka_unit_test(test_naive_barrier_and_overlap),
        cmocka_unit_test(test_serial_one_after_another),
        cmocka_unit_test(test_failures_leave_others_running),
        cmocka_unit_test(test_nan_is_diverged),
        cmocka_unit_test(test_not_ready_and_early_death),
        cmocka_unit_test(test_unstartable_program),
        cmocka_unit_test(test_stop_escalates_to_kill),
        cmocka_unit_test(test_footprint_and_capture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
