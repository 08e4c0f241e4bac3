/* Which of train's options apply to which job, as one table (train_rules.c): each row names an
 * option and what it applies to (the models' input and the parts the catalog says they have,
 * models/catalog.h; the optimizers; the learning-rate schedules). An option given for a job it does
 * not apply to is bad input, refused naming both the option and what the job is (exit 2), never
 * silently ignored; so is a pair of options that contradict each other. The next option that
 * applies only somewhere is a row here.
 *
 * train's option handling (train_options.c) checks every option given on its command line, and the
 * mix (runner/suite/plan/mix.c) checks its per-job overrides that become train options (rows= is
 * --max-rows, classes= --classes, precision= --precision) against the job's model and its default
 * recipe, so a mix is refused before any job as train would refuse the job. Host only: compiled
 * into train's library and run_suite's. */
#ifndef SUITE_TRAIN_RULES_H
#define SUITE_TRAIN_RULES_H

#include <stddef.h>

#include "kernels/schedule.h"
#include "models/catalog.h"
#include "models/core/optimizer_kind.h"
#include "base/precision.h"
#include "runner/cli.h"

/* The names train takes and prints: --schedule's and --optimizer's choices. */
extern const cli_choice TRAIN_SCHEDULES[];
extern const cli_choice TRAIN_OPTIMIZERS[];

/* What a job is, as far as the rules ask: its model (NULL for a name the catalog lacks: the
 * builder refuses it later with the names it knows), optimizer and schedule as they will run. */
typedef struct train_rule_job {
    const model_spec *model;
    const char *model_name;
    optimizer_kind optimizer;
    lr_kind schedule;
} train_rule_job;

/* The schedule a job trains with when --schedule is not given: cosine under AdamW (timm's recipe),
 * else one-cycle. */
lr_kind train_rule_default_schedule(optimizer_kind optimizer);
/* A job of that model trained by its catalog recipe (no --optimizer or --schedule given): what the
 * mix's overrides are checked against. */
train_rule_job train_rule_recipe(const model_spec *model, const char *model_name);
/* 0 when option (train's name: "--nesterov") applies to the job, or the table has no row for it
 * (it applies everywhere); -1 with "<option> <why>: <what the job is>" in err. */
int train_rule_check(const char *option, const train_rule_job *job, char *err, size_t err_size);
/* Every option of the table that argv gives (cli_given), checked: the first refusal, or 0. */
int train_rule_check_given(int argc, char *const argv[], const train_rule_job *job, char *err, size_t err_size);
/* Whether the model runs in that precision (models/catalog.h): 0, or -1 naming those that do. */
int train_rule_precision(const model_spec *model, const char *model_name, precision_kind p, char *err,
                         size_t err_size);

#endif
