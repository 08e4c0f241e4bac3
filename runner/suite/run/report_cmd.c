/* The report subcommand (see report_cmd.h). */
#define _GNU_SOURCE
#include "runner/suite/run/report_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/knobs.h"
#include "base/output_path.h"
#include "runner/cli.h"
#include "runner/suite/jobs/jobs.h"
#include "runner/suite/jobs/spawn.h"

#ifndef SUITE_SOURCE_DIR
#error "SUITE_SOURCE_DIR (the source tree, for results/report.py) is set by CMakeLists.txt"
#endif

extern char **environ;

/* Starts python (a name looked up in PATH, or a path) with argv[1..]; 0 with *pid, or an errno. */
static int start_python(const char *python, char **argv, int out_fd, int err_fd, pid_t *pid) {
    char path[PATH_MAX];
    if (jobs_find_program(python, path, sizeof path) != 0) return errno;
    argv[0] = path;
    int rc = spawn_child(pid, argv, environ, -1, out_fd, err_fd, SIGKILL);
    argv[0] = (char *)python;
    return rc;
}

/* 0 when `python -c "import matplotlib"` succeeds. */
static int has_matplotlib(const char *python) {
    char *argv[] = {(char *)python, "-c", "import matplotlib", NULL};
    int quiet = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (quiet < 0) return -1;
    pid_t pid;
    int rc = start_python(python, argv, quiet, quiet, &pid);
    close(quiet);
    if (rc != 0) return -1;
    int st = jobs_wait_child(pid);
    return st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* SUITE_PYTHON, else the first of the PATH's python3 and Debian's /usr/bin/python3 (where
 * python3-matplotlib installs) that has matplotlib: a virtual environment or pyenv on the PATH
 * may lack it while the system's has it, or the other way round. */
static const char *report_python(void) {
    const char *given = knob_text(KNOB_PYTHON);
    if (given && *given) return given;
    static const char *const candidates[] = {"python3", "/usr/bin/python3"};
    for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++)
        if (has_matplotlib(candidates[k]) == 0) return candidates[k];
    return "python3"; /* its own error names what is missing */
}

int report_run(char *const *args, int count) {
    const char *script = knob_text(KNOB_REPORT_SCRIPT);
    if (!script || !*script) script = SUITE_SOURCE_DIR "/results/report.py";
    if (access(script, R_OK) != 0) {
        fprintf(stderr, "run_suite report: cannot read the report generator %s: %s (set %s to its path)\n",
                script, strerror(errno), knob_name(KNOB_REPORT_SCRIPT));
        return 2;
    }
    char **argv = calloc((size_t)count + 3, sizeof *argv);
    if (!argv) return 1;
    const char *python = report_python();
    if (jobs_stop_signal()) { /* stopped while the interpreters were asked: nothing to start */
        free(argv);
        return 128 + jobs_stop_signal();
    }
    argv[0] = (char *)python;
    argv[1] = (char *)script;
    for (int i = 0; i < count; i++) argv[i + 2] = args[i];
    pid_t pid;
    int rc = start_python(python, argv, -1, -1, &pid);
    free(argv);
    if (rc != 0) {
        fprintf(stderr, "run_suite report: cannot start %s: %s (install python3 and "
                "python3-matplotlib, or set %s)\n", python, strerror(rc), knob_name(KNOB_PYTHON));
        return 1;
    }
    int st = jobs_wait_child(pid); /* a stop signal is passed on; a kill -9 of ours takes it along */
    /* stopped: 128+N as every program of the suite, whatever the script made of the signal */
    if (jobs_stop_signal()) return 128 + jobs_stop_signal();
    if (st >= 0 && WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

typedef struct report_args {
    const char *output, *reference;
} report_args;

#define T report_args
static const cli_option OPTIONS[] = {
    {"-o", "FILE", "the page (default RUN_DIR/report.html for one folder, else report.html in the current "
     "folder); each figure's data beside it as FILE's name without .html, then .FIGURE.csv", CLI_STR(T, output)},
    {"--reference", "FILE", "the paper's findings set beside ours (default results/study_reference.json)",
     CLI_STR(T, reference)},
    {0}};
#undef T

static const cli_program PROGRAM = {
    .name = "run_suite report",
    .synopsis = "usage: run_suite report RUN_DIR [RUN_DIR...] [-o report.html]\n"
                "  one self-contained HTML page (figures embedded) from run, --mode all or --study folders",
    .epilogue = "exit status: 0 written, 1 the page could not be written, 2 bad input (a folder without runs,\n"
                "a malformed file, an output that may not be written), 128+N stopped by signal N\n",
    .options = OPTIONS,
};

int report_main(int argc, char **argv) {
    enum { MAX_ARGS = 256 };
    const char *rest[MAX_ARGS];
    report_args a = {0};
    char err[PATH_MAX + 512];
    int parsed = cli_parse_unknown(&PROGRAM, &a, argc, argv, rest, MAX_ARGS, err, sizeof err);
    if (parsed == 1) return 0;
    int dirs = 0;
    for (int i = 0; parsed == 0 && rest[i]; i++) {
        if (rest[i][0] == '-' && rest[i][1]) {
            snprintf(err, sizeof err, "unknown option '%s' (run_suite report --help lists them)", rest[i]);
            parsed = -1;
        }
        dirs++;
    }
    if (parsed == 0 && dirs == 0) {
        cli_usage(&PROGRAM, stderr);
        return 2;
    }
    for (int i = 0; parsed == 0 && i < dirs; i++) { /* before the page's place, which may be inside one */
        struct stat st;
        if (stat(rest[i], &st) != 0 || !S_ISDIR(st.st_mode))
            snprintf(err, sizeof err, "%s: not a folder (expected a run folder of run_suite)", rest[i]), parsed = -1;
    }
    /* the page: a regular file or a new name in a folder it can write, never a run file it reads
       (base/output_path.h); found before anything is rendered */
    char page[PATH_MAX + 32];
    if (parsed == 0) {
        if (a.output) snprintf(page, sizeof page, "%s", a.output);
        else if (dirs == 1) snprintf(page, sizeof page, "%s/report.html", rest[0]);
        else snprintf(page, sizeof page, "report.html");
        const output_path_rule rule = {"-o", OUTPUT_PATH_FILE, rest, ".html"};
        if (output_path_check(&rule, page, err, sizeof err) != 0) parsed = -1;
    }
    if (parsed != 0) {
        fprintf(stderr, "run_suite report: %s\n", err);
        return 2;
    }
    char *args[MAX_ARGS + 4];
    int n = 0;
    for (int i = 0; i < dirs; i++) args[n++] = (char *)rest[i];
    args[n++] = "-o", args[n++] = page;
    if (a.reference) args[n++] = "--reference", args[n++] = (char *)a.reference;
    return report_run(args, n);
}
