/* The run of run_suite around its collocation modes (mode.h). A run resolves the jobs of a mix,
 * asks `train --dry-run` for each footprint, lets every mode it runs plan, refuses a mix that
 * cannot fit (unless --force), then executes its mode, or with --mode all every mode of the table
 * marked MODE_IN_ALL into sub-folders and one comparison; or, given one, a pass of its own over
 * the planned run in their place (the layout sweep, runner/suite/multi/sweep.h). Whatever ends a
 * run (done, a failed job, Ctrl-C, SIGTERM), each mode's stop undoes its start and the results
 * are written. What the modes see of it is runner/suite/modes/mode_run.h. */
#ifndef SUITE_SUITE_H
#define SUITE_SUITE_H

#include <stdio.h>

#include "runner/suite/modes/mode_run.h"

/* A pass over the planned run in place of its mode's execution (the caller's, from above). */
typedef struct suite_pass {
    /* after the plans, before anything runs: -1 to go on, else the exit status; out, json: the
     * dry run's listing of the pass, as text or into the dry run's JSON object (NULL: none) */
    int (*check)(suite_ctx *c, FILE *out, cJSON *json);
    /* in the run folder; returns the run's exit status */
    int (*run)(suite_ctx *c);
} suite_pass;

/* Runs everything (pass: NULL, or the pass that runs instead of the mode); returns the process
 * exit status (see mode_run.h). */
int suite_run(const run_request *options, const suite_pass *pass);

/* The exit status of one mode's run (see mode_run.h); stopped: a stop signal ended it. */
int suite_exit_for(const run_summary *s, int stopped);
/* Where every job this invocation starts keeps its convolution choices (SUITE_CONV_CHOICES, which
 * the jobs inherit): dir/conv-choices.tsv, unless the environment already names a file (or none),
 * as a study's or a --gpus run's own run_suite finds it. Then a choice is searched once, before
 * any job trains, and the modes, repeats and cells all run the same algorithms. */
void suite_keep_choices_in(const char *dir);

/* --mode all's run into dir: every mode the run planned, in the order of their places in c->modes
 * (order NULL: as planned), each into dir/<mode>, then the comparison across them and dir/run.json.
 * A sequential mode (serial) provides the baseline of the modes after it. Returns the exit status. */
int suite_run_modes(suite_ctx *c, const char *dir, const int *order);

/* Runs mode (one this run planned) on `count` jobs of the mix (job_of: their places; NULL: all of
 * them, in order) into dir, fills summary: the seam for passes over a subset of the jobs (each
 * job alone in its partition) or over the planned run (suite_execute_fn, mode_run.h). */
int suite_execute(suite_ctx *c, const suite_mode *mode, const int *job_of, int count, const char *dir,
                  const serial_baseline *base, run_summary *summary);

#endif
