/* The MIG layout sweep (--mig-layouts all | "L1;L2;..."): the same mix under each distinct valid
 * layout of the GPU, emulated (--mode mig-emulate) or on real instances (--mode mig with
 * --mig-create), each layout's run in a folder of its own (with its isolation pass), after one
 * serial run that every layout is measured against; then layouts.csv/.json and a table of
 * layouts x STP, ANTT, fairness and interference ratios: which partition suits which mix. */
#ifndef SUITE_SWEEP_H
#define SUITE_SWEEP_H

#include <stdio.h>

#include "runner/suite/run/suite.h"

/* Whether the options ask for the sweep (--mig-layouts). */
int suite_sweep_requested(const run_request *o);
/* The sweep as the run's pass in place of its mode (suite_run): its check before anything runs
 * (the mode, the layouts against the GPU's table and the jobs' memory; with out, the layouts as
 * the dry run lists them; EXIT_USAGE for a sweep that cannot be made), and its run into the run
 * folder. */
extern const suite_pass suite_sweep_pass;

#endif
