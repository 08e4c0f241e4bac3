/* run_suite's one option table and its parser (see run_args.h). */
#define _GNU_SOURCE
#include "runner/suite/run/run_args.h"

#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/precision.h"
#include "results/repeats.h"
#include "results/results.h"
#include "runner/suite/modes/mode.h"

_Static_assert(offsetof(run_args, req) == 0, "the rows' offsets are the request's");

#define PRECISION_CHOICE_(kind, name) {name, kind + 1},
static const cli_choice PRECISIONS[] = {PRECISION_TABLE(PRECISION_CHOICE_){0}};
#undef PRECISION_CHOICE_
#define DDP_UNDER_CHOICE_(kind, name) {name, kind},
static const cli_choice DDP_UNDER[] = {DDP_UNDER_TABLE(DDP_UNDER_CHOICE_){0}};
#undef DDP_UNDER_CHOICE_

#define T run_args
/* The run's rows (the row format is in runner/cli.h), once for every program form: these, each
 * mode's own (its file's rows, in the order of the table of modes), then RUN_CONTROL. Checks that
 * need the mix or the mode follow in request_check.c and the modes. */
static const cli_option RUN_OPTIONS[] = {
    {"--mode", "MODE", "collocation mode", CLI_STR(T, req.mode_name), .values = suite_mode_names},
    {"--skip", "MODE,...", "with --mode all: leave these modes out (e.g. streams,green)", CLI_STR(T, req.skip_modes)},
    {"--mix", "MIX", "jobs, e.g. S+M+M, 7*S, resnet50:imagenet64@128 (--list shows presets)",
     CLI_STR(T, req.mix_text)},
    {"--list", NULL, "the presets and modes (--json: as JSON)", CLI_FLAG(T, list, 1)},
    {"--epochs", "E", "epochs per job (default 2: the first warms up, the second is timed)",
     CLI_INT(T, req.epochs, 1, 100000), CLI_MARK(T, given.epochs)},
    {"--steps-per-epoch", "T", "steps per epoch (default: whole epochs)", CLI_INT(T, req.steps_per_epoch, 1, 1e12),
     CLI_MARK(T, given.steps)},
    {"--quick", NULL, "a smoke test: a 10-step warm-up and a 2 s window (--completion: 2 epochs of 10 steps)",
     CLI_FLAG(T, req.quick, 1)},
    {"--window", "SECONDS", "the measurement window's length: every job measured over one common window after "
     "every job's warm-up (default 10; --quick 2)", CLI_REAL(T, req.window_s, 0.1, 86400), CLI_MARK(T, given.window)},
    {"--warmup-steps", "N", "the window measurement's warm-up: each job's first N steps, or its first epoch "
     "where that is shorter; then whole epochs until the last window closes", CLI_INT(T, req.warmup_steps, 1, 1e12),
     CLI_MARK(T, given.warmup), .fallback = "50"},
    {"--windows", "K", "K consecutive windows of that length in one launch (median [min-max] over them)",
     CLI_INT(T, req.windows, 1, 64), .fallback = "1"},
    {"--kernels", NULL, "after the measured windows, every job's kernels traced (CUPTI) over one window of their "
     "own, attributed by class against the same jobs alone: kernels.csv, interference.csv", CLI_FLAG(T, req.kernels, 1)},
    {"--kernels-window", "SECONDS", "with --kernels: the traced window's length (default: the measured window's)",
     CLI_REAL(T, req.kernels_window_s, 0.1, 86400), CLI_MARK(T, given.kernels_window)},
    {"--completion", NULL, "the completion measurement instead: each job's second epoch timed, every job run "
     "to completion (makespan, turnaround, energy to complete)", CLI_FLAG(T, req.completion, 1)},
    {"--data-root", "DIR", "data sets' folder, passed to train", CLI_STR(T, req.data_root)},
    {"--precision", NULL, "every job's numerics where the mix gives no precision= (train --precision)",
     CLI_CHOICE(T, req.precision, PRECISIONS)},
    {"--results", "DIR", "where run folders go", CLI_STR(T, req.results_dir), .fallback = RESULTS_DEFAULT_DIR},
    {"--baseline", "DIR", "an earlier serial run of the same mix: speed-up and slow-downs against it",
     CLI_STR(T, req.baseline_dir)},
    {"--gpu", "N", "GPU index, as NVML and nvidia-smi count", CLI_INT(T, req.gpu, 0, 1023), CLI_MARK(T, have_gpu),
     .fallback = "0"},
    {"--sample-ms", "MS", "GPU sampling period", CLI_INT(T, req.sample_ms, 10, 60000), CLI_MARK(T, given.sample_ms),
     .fallback = "100"},
    {"--no-monitor", NULL, "no GPU sampling (to measure the sampler's cost)", CLI_FLAG(T, req.no_monitor, 1)},
    {"--repeat", "N", "launch the run N times (1..100), each into <run>/repeat-<r>/, then the spread across them "
     "(repeats.json); --mode all rotates the modes' order", CLI_INT(T, req.repeat, 1, REPEATS_MAX),
     CLI_MARK(T, have_repeat), .fallback = "1"},
    {0}};
static const cli_option RUN_CONTROL[] = {
    {"--ready-timeout", "S", "longest wait for every job's ready, in seconds",
     CLI_REAL(T, req.ready_timeout_s, 1, 86400), .fallback = "600"},
    {"--grace", "S", "seconds from SIGTERM to SIGKILL when stopping jobs", CLI_REAL(T, req.grace_s, 0, 3600),
     .fallback = "10"},
    {"--stall-timeout", "S", "stop a training job that reports no event for S seconds (0: 8 times the longest "
     "wait between its events so far, at least 30 s; 600 s before its first)",
     CLI_REAL(T, req.stall_timeout_s, 0, 86400), .fallback = "0"},
    {"--force", NULL, "run a mix whose footprints exceed the GPU's memory", CLI_FLAG(T, req.force, 1)},
    {"--dry-run", NULL, "show jobs, footprints and the plan; run nothing", CLI_FLAG(T, req.dry_run, 1)},
    {"--json", NULL, "with --dry-run or --list: as JSON", CLI_FLAG(T, req.json, 1)},
    {"--train", "PATH", "the train program (default: next to run_suite)", CLI_STR(T, req.train_path)},
    {"--gpus", "LIST", "the mix over several GPUs (0,1,2,3): placed by memory and compute, each GPU under the mode",
     CLI_STR(T, req.gpus_text)},
    {"--slurm", NULL, "a Slurm job array of mixes or a study, one node per task (run_suite --slurm --help)",
     CLI_FLAG(T, slurm, 1)},
    {0}};
/* Rows that only program forms take (run_form.adds), and the one between run_suite's own processes. */
static const cli_option FORM_ROWS[] = {
    {"--study", "SET", "the collocation study's runs of a set, one per cell (run_suite --study --help)",
     CLI_STR(T, study)},
    {"--ddp-under", NULL, "a data-parallel job's own run beside cards whose jobs are MPS clients (--mode mps, or its "
     "pass of --mode all): outside MPS (none, the default) or as the client of an MPS daemon over its cards (mps: "
     "NCCL does not promise it; it worked on two H200s)", CLI_CHOICE(T, req.ddp_under, DDP_UNDER), .fallback = "none"},
    {"--advise", NULL, "run_suite advise: which mode and partition for a mix (run_suite advise --help)",
     CLI_FLAG(T, advise, 1), .hidden = 1},
    {"--request", "FILE", "a run request another run_suite wrote (request.json; -: stdin)", CLI_STR(T, request_path),
     .hidden = 1},
    {0}};
#undef T

static const cli_program RUN_HELP = {
    .name = "run_suite",
    .synopsis = "usage: run_suite --mode MODE --mix MIX [options]\n       run_suite --list\n"
                "       run_suite --study small|medium|large|mixed|all [--quick] (run_suite --study --help)\n"
                "       run_suite report RUN_DIR [RUN_DIR...] [-o report.html]\n",
    .epilogue = "exit status: 0 all jobs ok, 1 run-time failure, 2 bad usage or refused mix, 3 some jobs\n"
                "failed (results written), 128+N stopped by signal N (results written)\n",
};

int run_args_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "run_suite: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(run_suite --help lists the options)\n");
    va_end(ap);
    return 2;
}

/* The run's own rows, in one table whose offsets are the request's (request_file.c reads each
 * setting back through its row). */
const cli_option *run_args_request_rows(void) {
    static cli_option rows[sizeof RUN_OPTIONS / sizeof RUN_OPTIONS[0] + sizeof RUN_CONTROL / sizeof RUN_CONTROL[0] +
                           sizeof FORM_ROWS / sizeof FORM_ROWS[0]];
    if (!rows[0].name) {
        size_t n = 0;
        const cli_option *const parts[] = {RUN_OPTIONS, RUN_CONTROL, FORM_ROWS};
        for (size_t p = 0; p < 3; p++)
            for (const cli_option *r = parts[p]; r->name; r++) rows[n++] = *r;
    }
    return rows;
}

/* The train program: --train PATH, else the one built next to this program, self (into out; whether
 * it can be run is request_check's to say). */
static void find_train(const char *given, const char *self, char *out, size_t size) {
    char copy[PATH_MAX];
    if (given && !realpath(given, out)) snprintf(out, size, "%s", given);
    if (given) return;
    snprintf(copy, sizeof copy, "%s", self);
    snprintf(out, size, "%s/train", self[0] ? dirname(copy) : ".");
}

static int listed(const char *const *names, const char *name) {
    for (; names && *names; names++)
        if (!strcmp(*names, name)) return 1;
    return 0;
}

/* Where each part's rows are in the joined table: [first[k], first[k + 1]). */
typedef struct layout {
    int parts, run_control, form_rows, first_form;
    size_t first[CLI_TABLE_PARTS + 1];
} layout;

/* The rows of the joined table a form parses (help 0), or those its --help lists (help 1): the
 * option that names it, its own, what it adds; the form NULL: the run's rows. Into out. */
static void form_rows(const run_args *a, const layout *l, const run_form *form, int form_part, int help,
                      cli_option *out) {
    const cli_option *all = a->table.rows;
    size_t n = 0, runs = l->first[l->form_rows], forms = l->first[l->form_rows + 1];
    for (size_t i = 0; form && i < forms; i++)
        if (!strcmp(all[i].name, form->option)) out[n++] = all[i];
    for (size_t i = form_part >= 0 ? l->first[form_part] : 0; form_part >= 0 && i < l->first[form_part + 1]; i++)
        out[n++] = all[i];
    for (size_t i = runs; form && i < forms; i++)
        if (listed(form->adds, all[i].name)) out[n++] = all[i];
    for (size_t i = 0; !help && i < runs; i++) /* the run's rows it takes */
        if (!form || (strcmp(all[i].name, form->option) && (!form->takes || listed(form->takes, all[i].name))))
            out[n++] = all[i];
    out[n] = (cli_option){0};
}

/* The one table: the run's rows, each mode's, RUN_CONTROL, FORM_ROWS, each form's own. */
static int join(run_args **out, const run_form *const *forms, layout *l, char *err, size_t err_size) {
    cli_part parts[CLI_TABLE_PARTS];
    int place[SUITE_MODES_MAX], n = 0;
    parts[n++] = (cli_part){RUN_OPTIONS, sizeof(run_args), 0};
    int modes = suite_mode_option_parts(parts + n, place, SUITE_MODES_MAX, err, err_size);
    if (modes < 0) return -1;
    n += modes;
    l->run_control = n;
    parts[n++] = (cli_part){RUN_CONTROL, 0, 0};
    l->form_rows = n;
    parts[n++] = (cli_part){FORM_ROWS, 0, 0};
    l->first_form = n;
    for (int k = 0; forms && forms[k]; k++) {
        if (n == CLI_TABLE_PARTS) {
            snprintf(err, err_size, "too many program forms");
            return -1;
        }
        parts[n++] = forms[k]->size ? (cli_part){forms[k]->rows, forms[k]->size, 0} : (cli_part){forms[k]->rows, 0, 0};
    }
    l->parts = n;
    cli_table t;
    if (cli_table_join(&t, parts, n, err, err_size) != 0) return -1;
    run_args *a = t.storage;
    a->table = t;
    for (int i = 0; i < modes; i++) a->req.mode_options[place[i]] = (char *)t.storage + t.offset[1 + i];
    size_t row = 0;
    for (int k = 0; k < n; k++) {
        l->first[k] = row;
        for (const cli_option *r = parts[k].rows; r && r->name; r++) row++;
    }
    l->first[n] = row;
    *out = a;
    return 0;
}

int run_args_window_given(const run_args *args) {
    return args->given.window || args->req.windows > 1 || args->given.warmup;
}

/* --request FILE: the whole request another run_suite wrote, and no other option. */
static int request_only(run_args *a, int argc, char **argv) {
    static const cli_option alone[] = {{"--request", "FILE", "a run request another run_suite wrote",
                                        CLI_STR(run_args, request_path)}, {0}};
    const cli_program p = {.name = "run_suite", .options = alone};
    char err[2048];
    if (cli_parse(&p, a, argc, argv, err, sizeof err) == 0) return -1;
    fprintf(stderr, "run_suite: %s: a request comes whole, with no other option\n", err);
    return 2;
}

/* The completion measurement times each job's second epoch (its first warms up): a job of one epoch
 * would time its warm-up. 1 with the message when the command line asks that (a mix it cannot parse
 * is request_check's to refuse, in its words). */
static int completion_of_one_epoch(const run_request *r, char *err, size_t err_size) {
    static mix m;
    if (!r->completion || !r->mix_text || mix_parse(&m, r->mix_text, NULL, 0) != 0) return 0;
    for (int i = 0; i < m.count; i++)
        if ((m.jobs[i].epochs ? m.jobs[i].epochs : r->epochs) < 2) {
            snprintf(err, err_size, "--completion times each job's second epoch (its first warms up): %s runs one "
                     "epoch; give it 2 or more", m.jobs[i].epochs ? m.jobs[i].label : "--epochs 1");
            return 1;
        }
    return 0;
}

int run_args_parse(run_args **out, const run_form *const *forms, int argc, char **argv) {
    char err[2048];
    layout l;
    *out = NULL;
    if (join(out, forms, &l, err, sizeof err) != 0) {
        fprintf(stderr, "run_suite: %s\n", err);
        return 1;
    }
    run_args *a = *out;
    ssize_t self = readlink("/proc/self/exe", a->self, sizeof a->self - 1);
    a->self[self > 0 ? self : 0] = 0;
    const cli_program all = {.name = "run_suite", .options = a->table.rows};
    if (cli_fallbacks(all.options, a, err, sizeof err) != 0) { /* a form holds the defaults of rows it does not take */
        fprintf(stderr, "run_suite: %s\n", err);
        return 1;
    }
    if (cli_named(&all, argc, argv, "--request")) return request_only(a, argc, argv);
    int form_part = -1;
    for (int k = 0; forms && forms[k] && !a->form; k++)
        if (cli_named(&all, argc, argv, forms[k]->option)) a->form = forms[k], form_part = l.first_form + k;
    const run_form *form = a->form;
    if (form) a->form_options = (char *)a->table.storage + a->table.offset[form_part];
    cli_option *rows = calloc(l.first[l.parts] + 1, sizeof *rows);
    if (!rows) return 1;
    cli_program p = form ? form->help : RUN_HELP;
    p.options = rows;
    if (form && !form->help.help_text && cli_help_asked(&all, argc, argv)) { /* its own rows and what it adds */
        form_rows(a, &l, form, form_part, 1, rows);
        cli_usage(&p, stdout);
        free(rows);
        return 0;
    }
    form_rows(a, &l, form, form_part, 0, rows);
    const char **strays = form && form->strays ? calloc((size_t)argc + 1, sizeof *strays) : NULL;
    int rc = strays ? cli_parse_unknown(&p, a, argc, argv, strays, argc + 1, err, sizeof err)
                    : cli_parse(&p, a, argc, argv, err, sizeof err);
    free(rows);
    if (rc == 0 && strays && strays[0]) {
        snprintf(err, sizeof err, "this option does not go with %s: %s", form->option, strays[0]);
        rc = -1;
    }
    free(strays);
    if (rc == 1) return 0;
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n%s", form && form->strays ? form->help.name : "run_suite", err,
                form && form->strays && form->help.help_text ? form->help.help_text : "");
        return 2;
    }
    run_request *r = &a->req;
    /* options that apply to nothing, or contradict each other, are refused naming both (issue 46) */
    for (int i = 1; a->list && i < argc; i++) { /* --list shows the presets and modes: --json is all it takes */
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(argv[i], "="), argv[i]);
        if (!strncmp(name, "--", 2) && strcmp(name, "--list") && strcmp(name, "--json"))
            return run_args_usage("%s does not go with --list, which shows the presets and modes (with --json: as JSON)",
                                  name);
    }
    if (r->completion && run_args_window_given(a))
        return run_args_usage("--completion times whole epochs: --window, --windows and --warmup-steps are the "
                              "window measurement's");
    if (r->completion && r->kernels)
        return run_args_usage("--kernels traces a window after the measured windows: the window measurement's; "
                              "--completion has none");
    if (a->given.kernels_window && !r->kernels)
        return run_args_usage("--kernels-window sets the length of --kernels' traced window: give --kernels");
    if (r->no_monitor && a->given.sample_ms)
        return run_args_usage("--sample-ms sets the GPU sampler's period; --no-monitor turns the sampler off: give one "
                              "of them");
    run_request_settle(r, &a->given, form ? form->quick_sample_ms : 0);
    if (completion_of_one_epoch(r, err, sizeof err)) return run_args_usage("%s", err);
    find_train(r->train_path, a->self, a->train, sizeof a->train);
    r->train_path = a->train;
    r->argc = argc;
    r->argv = argv;
    return -1;
}

void run_args_free(run_args *args) {
    if (!args) return;
    run_request_free(&args->req);
    cli_table t = args->table;
    cli_table_free(&t);
}
