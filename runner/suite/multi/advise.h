/* `run_suite advise --mix MIX [--objective stp|antt|fairness|energy] [--gpu N] [--json] [--probes two|all]
 * [--dry-run]`: which mode and partition for a mix, predicted from short solo probes of its distinct
 * jobs (advise_plan.h: which probes, two a job by default, their cache; advise_model.h: the
 * prediction, a partition's rate read off a law through the probes), ranked by the
 * objective, one recommended with the reason in words. Each probe is an ordinary run of the job
 * alone (serial on the whole GPU, an MPS share for a partition), handed its request whole as a
 * study's cell is, into <results>/<time>-advise-<mix>/probe-<k>/; measured probes go to the cache in
 * the results folder, so a new mix of known jobs runs nothing. --dry-run lists the probes, which
 * are cached, and the partition sizes read off the law.
 * predicted against measured per mode. The model's constants are read from
 * <results>/advise-constants.json where one is (advise_model.h's advise_fit fits them), else the
 * defaults; advice.json in the advisor's folder holds the ranking and the reason. */
#ifndef SUITE_ADVISE_H
#define SUITE_ADVISE_H

#include "runner/suite/run/run_args.h"

#define ADVISE_CONSTANTS_FILE "advise-constants.json"
#define ADVISE_ADVICE_FILE "advice.json"   /* in the advisor's folder: the ranking, its probes and revision */

extern const run_form advise_form;

/* run_suite's `advise` word: argv[1] becomes the form's option, so the parse finds the form. */
void advise_word(int argc, char **argv);

#endif
