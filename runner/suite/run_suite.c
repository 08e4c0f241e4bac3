/* run_suite: runs a mix of training jobs on one GPU under a collocation mode and writes what it
 * measured under runs/<run-id>/. This file is the command line only: every option is checked
 * here, before any GPU, daemon or process is touched (bad input: a message naming what is valid,
 * exit 2); the run itself is runner/suite/run/suite.c, each mode a runner/suite/modes/mode_<name>.c,
 * which declares and checks its own options (runner/suite/modes/mode.h). */
#define _GNU_SOURCE
#include <libgen.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/knob_value.h"
#include "results/results.h"
#include "runner/cli.h"
#include "runner/suite/multi/advise.h"
#include "runner/suite/multi/gpus.h"
#include "runner/suite/multi/repeat.h"
#include "runner/suite/multi/sweep.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/run/request_check.h"
#include "runner/suite/run/request_file.h"
#include "runner/suite/run/run_args.h"
#include "runner/suite/run/suite.h"
#include "runner/suite/run/report_cmd.h"
#include "runner/suite/multi/slurm.h"
#include "runner/suite/multi/study.h"

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

/* One run of the mix (no program form named), or the presets (--list). */
static int run_one(run_args *args) {
    run_request *r = &args->req;
    if (args->list) {
        print_list(r->json);
        return EXIT_OK;
    }
    char err[2048];
    if (request_check(r, err, sizeof err) != 0) return run_args_usage("%s", err);
    if (suite_repeat_requested(r) && suite_sweep_requested(r))
        return run_args_usage("--repeat goes with a run of the mix, not the layout sweep (--mig-layouts)");
    /* Processes that daemonise under us (the MPS control daemon and its server) are re-parented to
     * run_suite rather than to init, so they are reaped here and none is left as a zombie. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    const suite_pass *pass = suite_sweep_requested(r)    ? &suite_sweep_pass
                             : suite_repeat_requested(r) ? &suite_repeat_pass
                                                         : NULL;
    int status = suite_run(r, pass);
    while (waitpid(-1, NULL, WNOHANG) > 0) continue;
    return status;
}

/* A request another run_suite handed down (--request FILE): one run, or one over the cards it names. */
static int handed_down(run_args *args, const run_form *const *forms) {
    char err[4096];
    if (request_file_read(args->request_path, &args->req, err, sizeof err) != 0) {
        fprintf(stderr, "run_suite: %s\n", err);
        return EXIT_USAGE;
    }
    for (int k = 0; args->req.gpus_text && forms[k]; k++)
        if (!strcmp(forms[k]->option, "--gpus")) args->form = forms[k];
    return -1;
}

/* A results file that could not be written (results_write_failures: a full disk, a short write, a
 * failed rename; each said with its reason as it happened) makes the run's status 1 whatever its
 * jobs did: what was measured is not all on disk. Bad usage (2) and a stop (128+N) keep theirs. */
static int with_writes(int status) {
    int failed = results_write_failures();
    if (!failed || status == EXIT_USAGE || status > 128 || status == EXIT_RUNTIME) return status;
    fprintf(stderr, "run_suite: %d results file(s) could not be written (the errors above): exit %d\n", failed,
            EXIT_RUNTIME);
    return EXIT_RUNTIME;
}

int main(int argc, char **argv) {
    /* a file-size limit (ulimit -f) makes a write fail with EFBIG, reported as any full disk is,
     * rather than killing run_suite before it has said what was lost */
    signal(SIGXFSZ, SIG_IGN);
    char knob_error[1024];
    if (knob_value_check_all(knob_error, sizeof knob_error) != 0) { /* every form's environment, first */
        fprintf(stderr, "run_suite: %s\n", knob_error);
        return EXIT_USAGE;
    }
    if (argc > 1 && strcmp(argv[1], "report") == 0) return report_main(argc - 1, argv + 1);
    /* the program forms, in the order they are looked for: Slurm sweeps a study, a study spreads over --gpus */
    static const run_form *const forms[] = {&slurm_form, &study_form, &gpus_form, &advise_form, NULL};
    advise_word(argc, argv);
    run_args *args;
    int status = run_args_parse(&args, forms, argc, argv);
    if (status < 0 && args->request_path) status = handed_down(args, forms);
    if (status < 0) status = with_writes(args->form ? args->form->main(args) : run_one(args));
    run_args_free(args);
    return status;
}
