/* The MIG layout sweep (--mig-layouts all | "L1;L2;..."): the same mix under each distinct valid
 * layout of the GPU, emulated (--mode mig-emulate) or on real instances (--mode mig with
 * --mig-create), each layout's run in a folder of its own (with its isolation pass), after one
 * serial run that every layout is measured against; then layouts.csv/.json and a table of
 * layouts x STP, ANTT, fairness and interference ratios: which partition suits which mix. */
#ifndef SUITE_SWEEP_H
#define SUITE_SWEEP_H

#include <stdio.h>

#include "runner/suite/run/suite.h"

/* Checks the sweep before anything runs (the mode, the layouts against the GPU's table and the
 * jobs' memory) and, with out, lists the layouts as the dry run shows them. -1 to go on, else
 * the exit status (EXIT_USAGE for a sweep that cannot be made). */
int suite_sweep_check(suite_ctx *c, FILE *out);
/* Runs the sweep into the run folder; returns the run's exit status. */
int suite_sweep(suite_ctx *c);

#endif
