/* run_suite's command line: ONE table of option rows for every program form, parsed once into the
 * run request (runner/suite/request/run_request.h), every default decided here: the rows'
 * fallbacks, and the defaults that follow from other options in run_request_settle. Each mode
 * declares its own rows in its file (mode.h), and so does each program form (run_form below) for
 * the options only it has; the rows of the run itself are declared here, once, and a form names
 * those it takes. The parser picks the form the command line names (--study, --gpus, --slurm; none:
 * one run), parses that form's rows and hands it what it parsed (run_args), with its --help.
 *
 * A run_suite that another run_suite starts (a study's cell, a card's run under --gpus, a Slurm
 * task) is given `--request FILE` (or `-`: stdin) instead: the whole request its parent wrote,
 * read and checked as request_file.h says, run as one run or, when it names cards, over them. */
#ifndef SUITE_RUN_ARGS_H
#define SUITE_RUN_ARGS_H

#include <limits.h>

#include "runner/cli.h"
#include "runner/suite/request/run_request.h"

typedef struct run_args run_args;

/* A program form of run_suite beside one run (--study, --gpus, --slurm): declared in its own file. */
typedef struct run_form {
    const char *option;           /* the option that names it ("--study"), a row of the table */
    cli_program help;             /* its --help (name, synopsis, epilogue; or help_text) and its
                                     messages' name; .options is set by the parser */
    const cli_option *rows;       /* its own rows (ending with {0}), into a struct of `size` bytes */
    size_t size;
    const char *const *takes;     /* the run's rows it takes, by name (NULL-terminated); NULL: all of
                                     them (as run_suite --help lists them) */
    const char *const *adds;      /* rows of the table that only forms take (FORM_ROWS in run_args.c)
                                     it takes too, and its --help lists beside its own */
    int strays;                   /* an option outside its rows is refused as "this option does not go
                                     with <option>" and its help (else: an unknown option) */
    int quick_sample_ms;          /* its --quick's sampling period, where no --sample-ms (0: the run's) */
    int (*main)(run_args *args);  /* runs it; returns run_suite's exit status */
} run_form;

struct run_args {
    run_request req;              /* what the rows fill of the request (first: the rows' offsets are
                                     the request's too) */
    const run_form *form;         /* the form the command line names, or a handed-down request's
                                     (--gpus when it names cards); NULL: one run */
    void *form_options;           /* the form's own rows' struct */
    run_request_given given;      /* which of the options other defaults follow from were given */
    int have_repeat, have_gpu;
    int list;                     /* --list */
    int slurm;                    /* --slurm (names the form) */
    const char *study;            /* --study SET (names the form) */
    int advise;                   /* run_suite advise (names the form; advise.h) */
    const char *request_path;     /* --request FILE: a request handed down */
    char self[PATH_MAX];          /* this program (/proc/self/exe), which the forms start again; "" unknown */
    char train[PATH_MAX];         /* the train program resolved (req.train_path points here) */
    cli_table table;              /* the parse's rows and storage (this struct is its first part) */
};

/* Parses argv: the form it names (forms: in the order they are looked for), that form's rows, then
 * run_request_settle. -1 to go on (*out: args->form runs, NULL: one run; or args->request_path
 * names a request handed down, for request_file_read), else the exit status with its message
 * printed (0 after --help, 2 for bad input, 1 when out of memory). Free *out with run_args_free
 * whatever it returns. */
int run_args_parse(run_args **out, const run_form *const *forms, int argc, char **argv);
void run_args_free(run_args *args);

/* 1 when the command line gave one of the window measurement's own options (--window, --windows
 * above one, --warmup-steps): what a run to completion refuses. */
int run_args_window_given(const run_args *args);

/* The rows of the run itself (the request's), for request_file.c, which reads each setting back
 * through the row that declares it: its kind and range. Their offsets are the request's. */
const cli_option *run_args_request_rows(void);

/* "run_suite: <message>" and "(run_suite --help lists the options)" on stderr; returns 2. */
int run_args_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
