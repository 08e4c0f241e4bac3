/* run_suite: runs a mix of training jobs on one GPU under a collocation mode and writes what it
 * measured under runs/<run-id>/. This file is the command line only: every option is checked
 * here, before any GPU, daemon or process is touched (bad input: a message naming what is valid,
 * exit 2); the run itself is runner/suite/run/suite.c, each mode a runner/suite/modes/mode_<name>.c,
 * which declares and checks its own options (runner/suite/modes/mode.h). */
#define _GNU_SOURCE
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/precision.h"
#include "results/results.h"
#include "runner/cli.h"
#include "results/repeats.h"
#include "runner/suite/multi/gpus.h"
#include "runner/suite/multi/repeat.h"
#include "runner/suite/multi/sweep.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/run/suite.h"
#include "runner/suite/run/report_cmd.h"
#include "runner/suite/multi/slurm.h"
#include "runner/suite/multi/study.h"

/* What the command line fills besides the modes' options: the run's options and the values
 * checked once the mix is known. */
typedef struct run_args {
    run_request o;
    const char *train;
    int list, have_epochs, have_steps, have_repeat, have_window, have_warmup;
    const char *gpus; int slurm; /* only for --help: both are run before this table (gpus.c, slurm.c) */
} run_args;

#define PRECISION_CHOICE_(kind, name) {name, kind + 1},
static const cli_choice PRECISIONS[] = {PRECISION_TABLE(PRECISION_CHOICE_){0}};
#undef PRECISION_CHOICE_

#define T run_args
/* One row per option (the row format is in runner/cli.h): these, each mode's own (its file's
 * rows, in the order of the table of modes), then RUN_CONTROL. Checks that need the mix or the
 * mode (--mps-sm per job, which options go with which mode) follow in check and the modes. */
static const cli_option RUN_OPTIONS[] = {
    {"--mode", "MODE", "collocation mode", CLI_STR(T, o.mode_name), .values = suite_mode_names},
    {"--skip", "MODE,...", "with --mode all: leave these modes out (e.g. streams,green)", CLI_STR(T, o.skip_modes)},
    {"--mix", "MIX", "jobs, e.g. S+M+M, 7*S, resnet50:imagenet64@128 (--list shows presets)", CLI_STR(T, o.mix_text)},
    {"--list", NULL, "the presets and modes (--json: as JSON)", CLI_FLAG(T, list, 1)},
    {"--epochs", "E", "epochs per job (default 2: the first warms up, the second is timed)",
     CLI_INT(T, o.epochs, 1, 100000), CLI_MARK(T, have_epochs)},
    {"--steps-per-epoch", "T", "steps per epoch (default: whole epochs)", CLI_INT(T, o.steps_per_epoch, 1, 1e12),
     CLI_MARK(T, have_steps)},
    {"--quick", NULL, "a smoke test: a 10-step warm-up and a 2 s window (--completion: 2 epochs of 10 steps)",
     CLI_FLAG(T, o.quick, 1)},
    {"--window", "SECONDS", "the measurement window's length: every job measured over one common window after "
     "every job's warm-up (default 10; --quick 2)", CLI_REAL(T, o.window_s, 0.1, 86400), CLI_MARK(T, have_window)},
    {"--warmup-steps", "N", "the window measurement's warm-up: each job's first N steps, or its first epoch "
     "where that is shorter; then whole epochs until the last window closes", CLI_INT(T, o.warmup_steps, 1, 1e12),
     CLI_MARK(T, have_warmup), .fallback = "50"},
    {"--windows", "K", "K consecutive windows of that length in one launch (median [min-max] over them)",
     CLI_INT(T, o.windows, 1, 64), .fallback = "1"},
    {"--completion", NULL, "the completion measurement instead: each job's second epoch timed, every job run "
     "to completion (makespan, turnaround, energy to complete)", CLI_FLAG(T, o.completion, 1)},
    {"--data-root", "DIR", "data sets' folder, passed to train", CLI_STR(T, o.data_root)},
    {"--precision", NULL, "every job's numerics where the mix gives no precision= (train --precision)",
     CLI_CHOICE(T, o.precision, PRECISIONS)},
    {"--results", "DIR", "where run folders go", CLI_STR(T, o.results_dir), .fallback = RESULTS_DEFAULT_DIR},
    {"--baseline", "DIR", "an earlier serial run of the same mix: speed-up and slow-downs against it",
     CLI_STR(T, o.baseline_dir)},
    {"--gpu", "N", "GPU index, as NVML and nvidia-smi count", CLI_INT(T, o.gpu, 0, 1023), .fallback = "0"},
    {"--sample-ms", "MS", "GPU sampling period", CLI_INT(T, o.sample_ms, 10, 60000), .fallback = "100"},
    {"--no-monitor", NULL, "no GPU sampling (to measure the sampler's cost)", CLI_FLAG(T, o.no_monitor, 1)},
    {"--repeat", "N", "launch the run N times (1..100), each into <run>/repeat-<r>/, then the spread across them "
     "(repeats.json); --mode all rotates the modes' order", CLI_INT(T, o.repeat, 1, REPEATS_MAX),
     CLI_MARK(T, have_repeat), .fallback = "1"},
    {0}};
static const cli_option RUN_CONTROL[] = {
    {"--ready-timeout", "S", "longest wait for every job's ready, in seconds", CLI_REAL(T, o.ready_timeout_s, 1, 86400),
     .fallback = "600"},
    {"--grace", "S", "seconds from SIGTERM to SIGKILL when stopping jobs", CLI_REAL(T, o.grace_s, 0, 3600),
     .fallback = "10"},
    {"--stall-timeout", "S", "stop a training job that reports no event for S seconds (0: 8 times the longest "
     "wait between its events so far, at least 30 s; 600 s before its first)", CLI_REAL(T, o.stall_timeout_s, 0, 86400),
     .fallback = "0"},
    {"--force", NULL, "run a mix whose footprints exceed the GPU's memory", CLI_FLAG(T, o.force, 1)},
    {"--dry-run", NULL, "show jobs, footprints and the plan; run nothing", CLI_FLAG(T, o.dry_run, 1)},
    {"--json", NULL, "with --dry-run or --list: as JSON", CLI_FLAG(T, o.json, 1)},
    {"--train", "PATH", "the train program (default: next to run_suite)", CLI_STR(T, train)},
    {"--gpus", "LIST", "the mix over several GPUs (0,1,2,3): placed by memory and compute, each GPU under the mode",
     CLI_STR(T, gpus)},
    {"--slurm", NULL, "a Slurm job array of mixes or a study, one node per task (run_suite --slurm --help)",
     CLI_FLAG(T, slurm, 1)},
    {0}};
#undef T

static cli_program PROGRAM = { /* .options: RUN_OPTIONS, the modes' and RUN_CONTROL (main) */
    .name = "run_suite",
    .synopsis = "usage: run_suite --mode MODE --mix MIX [options]\n       run_suite --list\n"
                "       run_suite --study small|medium|large|mixed|all [--quick] (run_suite --study --help)\n"
                "       run_suite report RUN_DIR [RUN_DIR...] [-o report.html]\n",
    .epilogue = "exit status: 0 all jobs ok, 1 run-time failure, 2 bad usage or refused mix, 3 some jobs\n"
                "failed (results written), 128+N stopped by signal N (results written)\n",
};

static void print_list(int json) {
    int count;
    const mix_preset *p = mix_presets(&count);
    if (json) {
        printf("[");
        for (int i = 0; i < count; i++)
            printf("%s{\"name\":\"%s\",\"model\":\"%s\",\"data\":\"%s\",\"image_size\":%d,\"classes\":%d,"
                   "\"batch\":%d,\"max_rows\":%lld}", i ? "," : "", p[i].name, p[i].model, p[i].data,
                   p[i].image_size, p[i].classes, p[i].batch, p[i].max_rows);
        printf("]\n");
        return;
    }
    printf("%-6s %-18s %-16s %6s %8s %6s  %s\n", "preset", "model", "data", "size", "classes", "batch",
           "description");
    for (int i = 0; i < count; i++)
        printf("%-6s %-18s %-16s %6d %8d %6d  %s\n", p[i].name, p[i].model, p[i].data, p[i].image_size,
               p[i].classes, p[i].batch, p[i].description);
    printf("\nmodes: %s\nmix examples: S+M+M, 7*S, 2*S+M, resnet50:imagenet64@128, "
           "M[epochs=3,steps=100]\n", suite_mode_names());
}

static int fail(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "run_suite: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\n(run_suite --help lists the options)\n");
    return EXIT_USAGE;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The train program: --train PATH, else the one built next to this executable. */
static int find_train(const char *given, char *out, size_t size) {
    if (given) {
        if (!realpath(given, out)) snprintf(out, size, "%s", given);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) return -1;
        self[n] = 0;
        snprintf(out, size, "%s/train", dirname(self));
    }
    return access(out, X_OK) == 0 ? 0 : -1;
}

/* After the parse: the options that need the mode or the mix (--mode, --skip, --mix, each mode's
 * own), the train program. 0 to run, else the exit status. */
static int check(run_args *args, const mode_option_table *table, int argc, char **argv, char *train_path,
                 size_t train_size) {
    run_request *o = &args->o;
    char err[2048];
    o->argc = argc;
    o->argv = argv;
    const char *mode = o->mode_name;
    if (!mode) return fail("--mode is required: one of %s%s", suite_mode_names(), "");
    int all = strcmp(mode, SUITE_ALL) == 0;
    o->mode = suite_mode_find(mode);
    if (!all && !o->mode) return fail("--mode %s: expected one of %s", mode, suite_mode_names());
    if (o->skip_modes && !all) return fail("--skip goes with --mode all, not %s%s", mode, "");
    if (o->skip_modes && !*o->skip_modes) return fail("--skip: expected modes, e.g. streams,green%s%s", "", "");
    for (const char *p = o->skip_modes; p && *p;) {
        size_t n = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), p);
        const suite_mode *m = suite_mode_find(name);
        if (!m || !strcmp(name, SUITE_ALL))
            return fail("--skip %s: expected modes of --mode all, one of %s", o->skip_modes, suite_mode_names());
        p += n + (p[n] == ',');
    }
    if (!o->mix_text) return fail("--mix is required, e.g. S+M+M (run_suite --list shows the presets)%s%s", "", "");
    if (run_request_set_mix(o, o->mix_text, err, sizeof err) != 0) return fail("--mix: %s%s", err, "");
    if (suite_mode_check_options(table, o, mode, err, sizeof err) != 0) return fail("%s%s", err, "");
    if (o->json && !o->dry_run) return fail("--json goes with --dry-run or --list%s%s", "", "");
    if (suite_repeat_requested(o) && suite_sweep_requested(o))
        return fail("--repeat goes with a run of the mix, not the layout sweep (--mig-layouts)%s%s", "", "");
    if (o->baseline_dir && !is_dir(o->baseline_dir)) return fail("--baseline %s: not a folder%s", o->baseline_dir, "");
    if (o->quick) { /* the window measurement's epochs after the warm-up stay whole: few epoch events */
        if (!args->have_epochs) o->epochs = 2;
        if (!args->have_steps && o->completion) o->steps_per_epoch = 10;
        if (!args->have_warmup) o->warmup_steps = 10;
    }
    if (!args->have_window) o->window_s = o->quick ? 2.0 : 10.0;
    if (o->completion && (args->have_window || o->windows > 1 || args->have_warmup))
        return fail("--completion times whole epochs: --window, --windows and --warmup-steps are the window "
                    "measurement's%s%s", "", "");
    if (o->completion) o->window_s = 0, o->windows = 1;
    if (find_train(args->train, train_path, train_size) != 0)
        return fail("cannot run the train program at %s (build it, or give --train PATH)%s", train_path, "");
    o->train_path = train_path;
    return EXIT_OK;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "report") == 0) return report_main(argc - 1, argv + 1);
    if (slurm_requested(argc, argv)) return slurm_main(argc, argv); /* before --study: it sweeps one */
    if (study_requested(argc, argv)) return study_main(argc, argv); /* before --gpus: it spreads over them */
    if (gpus_requested(argc, argv)) return gpus_main(argc, argv);
    mode_option_table table;
    char err[2048];
    if (suite_mode_option_table(&table, RUN_OPTIONS, RUN_CONTROL, sizeof(run_args), err, sizeof err) != 0) {
        fprintf(stderr, "run_suite: %s\n", err);
        return EXIT_RUNTIME;
    }
    PROGRAM.options = table.rows;
    run_args *args = table.storage;
    int parsed = cli_parse(&PROGRAM, args, argc, argv, err, sizeof err);
    int status = parsed == 1 ? EXIT_OK : EXIT_USAGE;
    if (parsed != 0) {
        if (parsed != 1) fprintf(stderr, "run_suite: %s\n", err);
    } else if (args->list && args->have_repeat) {
        status = fail("--repeat repeats a run; it does not go with --list%s%s", "", "");
    } else if (args->list) {
        print_list(args->o.json);
        status = EXIT_OK;
    } else {
        char train_path[PATH_MAX];
        status = check(args, &table, argc, argv, train_path, sizeof train_path);
        if (status == EXIT_OK) {
            /* Processes that daemonise under us (the MPS control daemon and its server) are
             * re-parented to run_suite rather than to init, so they are reaped here and none is
             * left as a zombie. */
            prctl(PR_SET_CHILD_SUBREAPER, 1);
            const suite_pass *pass = suite_sweep_requested(&args->o)    ? &suite_sweep_pass
                                     : suite_repeat_requested(&args->o) ? &suite_repeat_pass
                                                                        : NULL;
            status = suite_run(&args->o, pass);
            while (waitpid(-1, NULL, WNOHANG) > 0) continue;
        }
    }
    suite_mode_option_table_free(&table);
    return status;
}
