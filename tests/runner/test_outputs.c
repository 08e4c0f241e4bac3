/* Every output the programs write (issue 46, items 1, 2, 4 and 13): a write that fails (a file-size
 * limit, a full disk through SUITE_WRITE_FAULT) is exit 1 with its own reason and the other files
 * still written; run.json's "running" whose process is gone reads as failed; every named output
 * (run_suite report -o, run_suite --results, train --save) is refused with exit 2 before any work
 * when it is a device, a FIFO, a folder, an input, a link loop or in a folder that cannot be
 * written, and the device, FIFO or input is left as it was; train --load of a FIFO does not wait;
 * run_suite report stopped by SIGTERM or SIGINT exits 128+N without a traceback. No privileges
 * needed: the full disk is RLIMIT_FSIZE in a child or the write-fault knob, the FIFOs are made in a
 * temporary folder, the device is /dev/null (never written), the unwritable folder is /proc's. A
 * job's log that cannot be written is said and counted too, and the run goes on. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/output_path.h"
#include "results/results.h"
#include "tests/support/testutil.h"

#define FIXTURE_RUN SUITE_SOURCE_DIR "/tests/fixtures/report/20261124T152934Z-study-small/S-x1-naive/20261124T152936Z-naive-1xS"

static char out[1 << 16], err[1 << 16];

/* The one run folder under results (its path into dir). */
static void only_run(const char *results, char *dir, size_t size) {
    DIR *d = opendir(results);
    assert_non_null(d);
    dir[0] = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') snprintf(dir, size, "%s/%s", results, e->d_name);
    closedir(d);
    assert_true(dir[0] != 0);
}

static int exists(const char *dir, const char *name) {
    char path[1200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

static int leftovers(const char *dir) { /* temporary files of a failed write: never left behind */
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

/* --- item 1: a failed write says why, is exit 1, and takes nothing else with it ------------------ */

/* Under a file-size limit a write stops part-way: the message is the write's own (EFBIG, with how
 * much was written), not an errno left from an earlier call; the old file stays whole and no
 * temporary file is left. In a child, where the limit and SIGXFSZ ignored stay. */
static void test_short_write_reason(void **state) {
    (void)state;
    char dir[512], path[600];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    test_write_text(path, "old\n");
    int report[2];
    assert_int_equal(pipe(report), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(report[0]);
        struct rlimit limit = {4096, 4096};
        signal(SIGXFSZ, SIG_IGN);
        if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(10);
        static char data[10000], e[1024];
        memset(data, 'x', sizeof data);
        errno = EEXIST; /* what an earlier call left: must not be quoted */
        int rc = results_write_atomic(path, data, sizeof data, e, sizeof e);
        ssize_t w = write(report[1], e, strlen(e));
        (void)w;
        _exit(rc == -1 && results_write_failures() == 1 ? 0 : 11);
    }
    close(report[1]);
    char message[1024] = "";
    ssize_t n = read(report[0], message, sizeof message - 1);
    message[n > 0 ? n : 0] = 0;
    close(report[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("child: status %d, message '%s'", st, message);
    assert_non_null(strstr(message, "summary.json: write: File too large (4096 of 10000 bytes written)"));
    assert_null(strstr(message, "File exists"));
    char e[256];
    char *text = test_read_text(path, e, sizeof e);
    assert_string_equal(text, "old\n");
    free(text);
    assert_int_equal(leftovers(dir), 0);
    test_rmtree(dir);
}

static int run_suite_with(const char *fault, const char *results, const char *nvml, const char *extra) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "SUITE_NVML_LIBRARY=%s SUITE_WRITE_FAULT='%s' FAKE_TRAIN='*:setup_ms=5,epoch_ms=40' "
             "%s %s --mix S+S --quick --window 0.3 --train %s --results %s > %s.out 2> %s.err", nvml, fault,
             RUN_SUITE_PATH, *extra ? extra : "--mode naive", FAKE_TRAIN_PATH, results, results, results);
    int st = system(cmd);
    char path[700], e[256];
    snprintf(path, sizeof path, "%s.err", results);
    char *text = test_read_text(path, e, sizeof e);
    snprintf(err, sizeof err, "%s", text ? text : "");
    free(text);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A full disk at the end of a run: each file that cannot be written is named with the reason, the
 * others are written all the same, and the run exits 1 though every job was fine. */
static void test_full_disk_is_exit_1(void **state) {
    (void)state;
    char dir[512], results[600], run[1200];
    test_tmpdir(dir, sizeof dir);
    snprintf(results, sizeof results, "%s/runs", dir);
    assert_int_equal(run_suite_with("jobs.csv,summary.json", results, "/nonexistent", ""), 1);
    assert_non_null(strstr(err, "jobs.csv: write: No space left on device"));
    assert_non_null(strstr(err, "summary.json: write: No space left on device"));
    assert_non_null(strstr(err, "2 results file(s) could not be written"));
    only_run(results, run, sizeof run);
    assert_false(exists(run, "jobs.csv"));
    assert_false(exists(run, "summary.json"));
    assert_true(exists(run, "steps.csv")); /* what could be written was */
    assert_true(exists(run, "run.json"));
    assert_int_equal(leftovers(run), 0);
    /* the GPU timeline, written as it grows: its failure counts too, what it holds is kept */
    snprintf(results, sizeof results, "%s/timeline", dir);
    assert_int_equal(run_suite_with("timeline.csv", results, NVML_STANDIN_PATH, ""), 1);
    assert_non_null(strstr(err, "the GPU timeline: cannot write"));
    assert_non_null(strstr(err, "timeline.csv: write: No space left on device"));
    only_run(results, run, sizeof run);
    assert_true(exists(run, "timeline.csv.partial"));
    assert_true(exists(run, "summary.json"));
    /* a job's log, written as the job runs (as one process, and through the in-process host): said,
       counted, the job's events still read and its results written */
    const char *modes[] = {"--mode naive", "--mode streams"};
    for (int k = 0; k < 2; k++) {
        snprintf(results, sizeof results, "%s/log%d", dir, k);
        char extra[700];
        snprintf(extra, sizeof extra, "%s", modes[k]);
        setenv("SUITE_JOB_HOST", FAKE_JOB_HOST_PATH, 1);
        assert_int_equal(run_suite_with("job-1-S.log", results, "/nonexistent", extra), 1);
        unsetenv("SUITE_JOB_HOST");
        assert_non_null(strstr(err, "job-1-S.log: No space left on device; the rest of it is lost"));
        only_run(results, run, sizeof run);
        assert_true(exists(run, "summary.json"));
    }
    /* and nothing failed: exit 0 */
    snprintf(results, sizeof results, "%s/fine", dir);
    assert_int_equal(run_suite_with("", results, "/nonexistent", ""), 0);
    test_rmtree(dir);
}

/* run.json says "running" until the end is written, which a full disk or kill -9 prevents: with
 * its process gone the record reads as failed, for run_suite (--baseline) as for the report. */
static void test_running_without_process_is_failed(void **state) {
    (void)state;
    char dir[512], run[600], status[512], e[2048];
    test_tmpdir(dir, sizeof dir);
    snprintf(run, sizeof run, "%s/run", dir);
    mkdir(run, 0755);
    pid_t pid = fork();
    if (pid == 0) { /* a run_suite that wrote "running" and died */
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "status", "running");
        cJSON_AddItemToObject(root, "process", results_process_json());
        _exit(results_write_json(run, "run.json", root, e, sizeof e) == 0 ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    results_run_status(run, status, sizeof status);
    assert_non_null(strstr(status, "failed: its run_suite (process"));
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--mode", "naive", "--mix", "S",
                             "--baseline", run, "--train", FAKE_TRAIN_PATH, "--results", dir, NULL);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "no summary.json there (the run's status: failed"));
    /* this process's own record: still running */
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "status", "running");
    cJSON_AddItemToObject(root, "process", results_process_json());
    assert_int_equal(results_write_json(run, "run.json", root, e, sizeof e), 0);
    cJSON_Delete(root);
    assert_non_null(strstr(results_run_status(run, status, sizeof status), "running (run_suite"));
    snprintf(e, sizeof e, "%s/run.json", run); /* a record without its process */
    test_write_text(e, "{\"status\": \"running\"}\n");
    assert_non_null(strstr(results_run_status(run, status, sizeof status), "names no process"));
    /* a process no machine could have (an edited file): unknown, the same words */
    test_write_text(e, "{\"status\": \"running\", \"process\": "
                       "{\"pid\": 1e300, \"boot_id\": \"x\", \"start_ticks\": 1e300}}\n");
    assert_non_null(strstr(results_run_status(run, status, sizeof status), "names no process"));
    test_rmtree(dir);
}

/* --- items 2, 4 and 13: named outputs ----------------------------------------------------------- */

typedef struct refusal {
    const char *words[16];  /* NULL-terminated; "$D" is the test's folder, "$R" a copy of a run */
    const char *message;    /* in stderr */
} refusal;

static void expand(const char *word, const char *dir, const char *run, char *buf, size_t size) {
    if (!strncmp(word, "$D", 2)) snprintf(buf, size, "%s%s", dir, word + 2);
    else if (!strncmp(word, "$R", 2)) snprintf(buf, size, "%s%s", run, word + 2);
    else snprintf(buf, size, "%s", word);
}

static void expect_refusals(const char *program, const refusal *cases, int count, const char *dir, const char *run) {
    for (int c = 0; c < count; c++) {
        char words[16][1200];
        char *argv[20] = {(char *)test_binary(program)};
        int n = 1;
        for (int w = 0; cases[c].words[w]; w++, n++) {
            expand(cases[c].words[w], dir, run, words[w], sizeof words[w]);
            argv[n] = words[w];
        }
        argv[n] = NULL;
        int rc = test_run(argv, out, sizeof out, err, sizeof err);
        if (rc != 2 || !strstr(err, cases[c].message) || strstr(err, "Traceback") || strstr(err, "GPU"))
            fail_msg("%s case %d (%s %s): exit %d, expected 2 with '%s'; stderr: %.600s", program, c, words[0],
                     n > 2 ? words[1] : "", rc, cases[c].message, err);
    }
}

static void make_fixture(char *dir, size_t size, char *run, size_t run_size) {
    test_tmpdir(dir, size);
    snprintf(run, run_size, "%s/run", dir);
    char *const cp[] = {"/bin/cp", "-r", FIXTURE_RUN, run, NULL};
    char ignored[256];
    assert_int_equal(test_run(cp, out, sizeof out, ignored, sizeof ignored), 0);
    char path[1200];
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    snprintf(path, sizeof path, "%s/folder", dir);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/loop", dir);
    assert_int_equal(symlink(path, path), 0);
    snprintf(path, sizeof path, "%s/file", dir);
    test_write_text(path, "a file\n");
}

static void test_report_output_refused(void **state) {
    (void)state;
    char dir[512], run[600], path[1200], before[1 << 12], e[256];
    make_fixture(dir, sizeof dir, run, sizeof run);
    snprintf(path, sizeof path, "%s/summary.json", run);
    char *summary = test_read_text(path, e, sizeof e);
    const refusal cases[] = {
        {{"report", "$R", "-o", "/dev/null", NULL}, "-o /dev/null: is a character device"},
        {{"report", "$R", "-o", "$D/fifo", NULL}, "fifo: is a FIFO"},
        {{"report", "$R", "-o", "$R/summary.json", NULL}, "summary.json: is a file inside"},
        {{"report", "$R", "-o", "$R/jobs.csv", NULL}, "jobs.csv: is a file inside"},
        {{"report", "$R", "-o", "$D/folder", NULL}, "folder: is a folder"},
        {{"report", "$R", "-o", "$D/loop", NULL}, "loop: is a symbolic link loop"},
        {{"report", "$R", "-o", "/proc/self/page.html", NULL}, "its folder /proc/self cannot be written"},
        {{"report", "$R", "-o", "$D/missing/page.html", NULL}, "missing does not exist"},
        {{"report", "$R", "-o", "", NULL}, "-o: expected a value (not empty)"},
        {{"report", "$R", "-o", "$D/a.html", "-o", "$D/b.html", NULL}, "-o given twice"},
        {{"report", "$R", "--bogus", NULL}, "unknown option '--bogus'"},
        {{"report", "$D/file", NULL}, "file: not a folder"},
    };
    expect_refusals("run_suite", cases, (int)(sizeof cases / sizeof cases[0]), dir, run);
    struct stat st;
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode)); /* left as it was */
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    snprintf(path, sizeof path, "%s/summary.json", run);
    char *after = test_read_text(path, e, sizeof e);
    assert_string_equal(after, summary);
    free(after);
    free(summary);
    snprintf(path, sizeof path, "%s/folder", dir);
    DIR *d = opendir(path); /* nothing rendered anywhere */
    int entries = 0;
    for (struct dirent *de; d && (de = readdir(d));) entries += de->d_name[0] != '.';
    if (d) closedir(d);
    assert_int_equal(entries, 0);
    (void)before;
    test_rmtree(dir);
}

static void test_save_refused_before_gpu(void **state) {
    (void)state;
    char dir[512], run[600], path[1200], e[512];
    make_fixture(dir, sizeof dir, run, sizeof run);
    snprintf(path, sizeof path, "%s/in.safetensors", dir);
    test_write_text(path, "not a checkpoint");
    const refusal cases[] = {
        {{"--model", "resnet26", "--save", "/dev/null", NULL}, "--save /dev/null: is a character device"},
        {{"--model", "resnet26", "--save", "$D/fifo", NULL}, "fifo: is a FIFO"},
        {{"--model", "resnet26", "--save", "$D/folder", NULL}, "folder: is a folder"},
        {{"--model", "resnet26", "--save", "$D/loop", NULL}, "loop: is a symbolic link loop"},
        {{"--model", "resnet26", "--save", "/proc/self/w.safetensors", NULL}, "/proc/self cannot be written"},
        {{"--model", "resnet26", "--save", "/proc/self/comm", NULL}, "/proc/self cannot be written"},
        {{"--model", "resnet26", "--save", "$D/file", "--data", "cifar10", "--data-root", "$D", NULL},
         "is a file inside"},
        {{"--model", "resnet26", "--save", "$D/fifo", "--dry-run", NULL}, "fifo: is a FIFO"}, /* the dry run too */
    };
    expect_refusals("train", cases, (int)(sizeof cases / sizeof cases[0]), dir, run);
    /* a file marked immutable: refused before the work, where the file system and privileges let the
       test mark one (chattr +i needs CAP_LINUX_IMMUTABLE and a file system that keeps the flag) */
    snprintf(path, sizeof path, "%s/fixed.safetensors", dir);
    test_write_text(path, "weights");
    int fd = open(path, O_RDONLY), flags = 0, marked = 0;
    if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
        flags |= FS_IMMUTABLE_FL;
        marked = ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    if (marked) {
        const refusal immutable[] = {{{"--model", "resnet26", "--save", path, NULL}, "is immutable"}};
        expect_refusals("train", immutable, 1, dir, run);
        flags &= ~FS_IMMUTABLE_FL;
        assert_int_equal(ioctl(fd, FS_IOC_SETFLAGS, &flags), 0);
    } else {
        printf("immutable --save: not marked here (%s): that subcase skipped\n", strerror(errno));
    }
    if (fd >= 0) close(fd);
    /* --load of a FIFO is refused at once rather than waiting for a writer */
    snprintf(path, sizeof path, "%s/fifo", dir);
    char *const load[] = {"/usr/bin/timeout", "10", (char *)test_binary("train"), "--model", "resnet26", "--load",
                          path, "--epochs", "1", NULL};
    assert_int_equal(test_run(load, out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "--load"));
    assert_non_null(strstr(err, "not a regular file"));
    /* the checkpoint it loads, under its own name or through a link */
    snprintf(path, sizeof path, "%s/in.safetensors", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fwrite("\x02\0\0\0\0\0\0\0{}", 1, 10, f); /* a valid, empty safetensors file */
    fclose(f);
    snprintf(e, sizeof e, "%s/link.safetensors", dir);
    assert_int_equal(symlink(path, e), 0);
    const refusal input[] = {
        {{"--model", "resnet26", "--load", "$D/in.safetensors", "--save", "$D/in.safetensors", NULL},
         "in.safetensors: is a file it reads"},
        {{"--model", "resnet26", "--load", "$D/in.safetensors", "--save", "$D/link.safetensors", NULL},
         "link.safetensors: is a file it reads"},
    };
    expect_refusals("train", input, 2, dir, run);
    test_rmtree(dir);
}

static void test_results_folder_refused(void **state) {
    (void)state;
    char dir[512], run[600];
    make_fixture(dir, sizeof dir, run, sizeof run);
    const char *fake = FAKE_TRAIN_PATH;
    const refusal cases[] = {
        {{"--mode", "naive", "--mix", "S", "--dry-run", "--train", fake, "--results", "/dev/null", NULL},
         "--results /dev/null: is a character device"},
        {{"--mode", "naive", "--mix", "S", "--dry-run", "--train", fake, "--results", "$D/fifo", NULL}, "is a FIFO"},
        {{"--mode", "naive", "--mix", "S", "--dry-run", "--train", fake, "--results", "$D/file", NULL}, "is a file"},
        {{"--mode", "naive", "--mix", "S", "--dry-run", "--train", fake, "--results", "$D/loop", NULL},
         "is a symbolic link loop"},
        {{"--mode", "naive", "--mix", "S", "--train", fake, "--results", "/proc/self/runs", NULL},
         "cannot be made in /proc/self"},
        {{"--mode", "naive", "--mix", "S", "--dry-run", "--train", fake, "--results", "$D/file/runs", NULL},
         "is a file, not a folder"},
        {{"--mode", "naive", "--mix", "S", "--train", fake, "--quick", "--quick", "--results", "$D/runs", NULL},
         "--quick given twice"},
    };
    expect_refusals("run_suite", cases, (int)(sizeof cases / sizeof cases[0]), dir, run);
    struct stat st;
    char path[700];
    snprintf(path, sizeof path, "%s/runs", dir);
    assert_int_not_equal(stat(path, &st), 0);
    test_rmtree(dir);
}

/* --- item 13: run_suite report stopped --------------------------------------------------------- */

/* The report's reading made slow (a minute, after it marks `started`), so that the stop comes while
 * report.py runs its own code. */
static void slow_report_script(const char *dir, char *path, size_t size) {
    snprintf(path, size, "%s/slow_report.py", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "import runpy, sys, time\n"
               "sys.path.insert(0, '%s/results')\n"
               "import report_data\n"
               "def slow(paths):\n"
               "    open('%s/started', 'w').close()\n"
               "    time.sleep(60)\n"
               "report_data.load = slow\n"
               "runpy.run_path('%s/results/report.py', run_name='__main__')\n", SUITE_SOURCE_DIR, dir, SUITE_SOURCE_DIR);
    fclose(f);
}

static void test_report_stopped(void **state) {
    (void)state;
    char dir[512], run[600], script[700], err_path[700];
    make_fixture(dir, sizeof dir, run, sizeof run);
    slow_report_script(dir, script, sizeof script);
    setenv("SUITE_REPORT_SCRIPT", script, 1);
    snprintf(err_path, sizeof err_path, "%s/report.err", dir);
    const int signals[] = {SIGTERM, SIGINT, SIGINT};
    for (int k = 0; k < 3; k++) {
        int group = k == 2; /* Ctrl-C: the terminal signals the whole process group */
        pid_t pid = fork();
        if (pid == 0) {
            setpgid(0, 0);
            int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644), null = open("/dev/null", O_WRONLY);
            dup2(e, 2);
            dup2(null, 1);
            char page[700];
            snprintf(page, sizeof page, "%s/page.html", dir);
            execl(RUN_SUITE_PATH, RUN_SUITE_PATH, "report", run, "-o", page, NULL);
            _exit(127);
        }
        setpgid(pid, pid); /* as the child does: whichever runs first */
        char started[700];
        struct stat mark;
        snprintf(started, sizeof started, "%s/started", dir);
        for (int i = 0; i < 600 && stat(started, &mark) != 0; i++) usleep(50000); /* report.py reading */
        assert_int_equal(stat(started, &mark), 0);
        unlink(started);
        kill(group ? -pid : pid, signals[k]);
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        char e[256];
        char *text = test_read_text(err_path, e, sizeof e);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 128 + signals[k] || (text && strstr(text, "Traceback")))
            fail_msg("signal %d%s: status %d (exit %d), stderr: %s", signals[k], group ? " to the group" : "", st,
                     WIFEXITED(st) ? WEXITSTATUS(st) : -1, text ? text : "");
        free(text);
    }
    unsetenv("SUITE_REPORT_SCRIPT");
    test_rmtree(dir);
}

/* The writable-folder probe takes another name where its first is taken (two jobs of one job_host
 * process check their outputs in one folder at once): the check still answers. */
static void test_probe_name_taken(void **state) {
    (void)state;
    char folder[] = "/tmp/test_outputs_probe.XXXXXX", taken[256], target[256], why[512];
    assert_non_null(mkdtemp(folder));
    snprintf(taken, sizeof taken, "%s/.output-probe.%ld.0", folder, (long)getpid());
    int fd = open(taken, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    close(fd);
    snprintf(target, sizeof target, "%s/job0.kernels.csv", folder);
    output_path_rule rule = {.option = "--kernels", .kind = OUTPUT_PATH_FILE};
    int rc = output_path_check(&rule, target, why, sizeof why);
    if (rc) fprintf(stderr, "%s\n", why);
    assert_int_equal(rc, 0);
    assert_int_equal(access(taken, F_OK), 0); /* the other's probe is left alone */
    unlink(taken);
    rmdir(folder);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_short_write_reason),
        cmocka_unit_test(test_full_disk_is_exit_1),
        cmocka_unit_test(test_running_without_process_is_failed),
        cmocka_unit_test(test_report_output_refused),
        cmocka_unit_test(test_save_refused_before_gpu),
        cmocka_unit_test(test_results_folder_refused),
        cmocka_unit_test(test_report_stopped),
        cmocka_unit_test(test_probe_name_taken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
