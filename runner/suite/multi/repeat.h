/* Repeats of a run (--repeat N): the planned run launched N times, each into <run>/repeat-<r>/ (a
 * complete run folder as one launch writes it), then the summary across them (results/repeats.h):
 * repeats.json, repeats.csv and the table of "median [min-max]" with the ranking lines.
 *
 * The order of the modes (--mode all) rotates from one repeat to the next. Whatever runs first
 * meets a cooler GPU and a machine that has not yet drifted (clocks, page cache, other tenants), so
 * a fixed order would hand the same mode that advantage in every repeat and the repeats would agree
 * on a bias. The sequential modes (serial) run first in every repeat: each repeat's collocated
 * modes are measured against the serial run of that repeat, and a mode run before its baseline
 * would have none. The collocated modes rotate: repeat r starts with the r-th of them (cyclically),
 * so with N at least their number each one runs first once, and each takes every place once. */
#ifndef SUITE_REPEAT_H
#define SUITE_REPEAT_H

#include "runner/suite/run/suite.h"

/* Whether the options ask for repeats (--repeat above 1). */
int suite_repeat_requested(const run_request *o);
/* Repeat r's (0-based) order of the modes, as places in the list whose flags are given: the
 * MODE_SEQUENTIAL ones first as listed, then the others rotated by r. */
void suite_repeat_order(const unsigned *flags, int count, int r, int *order);
/* The repeats as the run's pass (suite_run): the dry run lists every repeat's runs in order. */
extern const suite_pass suite_repeat_pass;

#endif
