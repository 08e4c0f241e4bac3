/* The table of where train's options apply (see train_rules.h). */
#include "runner/train/train_rules.h"

#include <stdio.h>
#include <string.h>

const cli_choice TRAIN_SCHEDULES[] = {{"constant", LR_CONSTANT}, {"step", LR_STEP}, {"cosine", LR_COSINE},
                                      {"one-cycle", LR_ONE_CYCLE}, {0}};
const cli_choice TRAIN_OPTIMIZERS[] = {{"sgd", OPTIMIZER_SGD}, {"adamw", OPTIMIZER_ADAMW}, {0}};

#define ANY_INPUT -1
#define BIT(x) (1u << (x))

/* One row per option that applies only somewhere. A job passes a row when its model has the input
 * (or any), every part named in `parts`, and its optimizer and schedule are among those named (0:
 * any). `model_why` says why the option means nothing for the models it leaves out. */
typedef struct train_rule {
    const char *option;
    int input;            /* a model_input, or ANY_INPUT */
    unsigned parts;       /* MODEL_* bits of models/catalog.h the model must have */
    unsigned optimizers;  /* BIT(optimizer_kind) of those it applies to; 0: all */
    unsigned schedules;   /* BIT(lr_kind) of those it applies to; 0: all */
    const char *model_why;
} train_rule;

#define RECOMMENDER "the recommender (dlrm) "
static const train_rule RULES[] = {
    {"--optimizer", MODEL_INPUT_IMAGES, 0, 0, 0, RECOMMENDER "trains with the reference's plain SGD"},
    {"--momentum", MODEL_INPUT_IMAGES, 0, BIT(OPTIMIZER_SGD), 0, RECOMMENDER "trains with plain SGD: no momentum, as "
     "the reference's"},
    {"--nesterov", MODEL_INPUT_IMAGES, 0, BIT(OPTIMIZER_SGD), 0, RECOMMENDER "trains with plain SGD: no momentum, as "
     "the reference's"},
    {"--weight-decay", MODEL_INPUT_IMAGES, 0, 0, 0, RECOMMENDER "trains with SGD with no weight decay, as the "
     "reference's"},
    {"--wd-all", MODEL_INPUT_IMAGES, 0, 0, 0, RECOMMENDER "trains with SGD with no weight decay, as the reference's"},
    {"--schedule", MODEL_INPUT_IMAGES, 0, 0, 0, RECOMMENDER "follows the reference's learning-rate policy (set --lr "
     "and --warmup-pct, --lr-warmup-steps, --lr-decay-start, --lr-decay-steps)"},
    {"--warmup-pct", ANY_INPUT, 0, 0, BIT(LR_COSINE) | BIT(LR_ONE_CYCLE), NULL},
    {"--step-epochs", MODEL_INPUT_IMAGES, 0, 0, BIT(LR_STEP), RECOMMENDER "follows the reference's learning-rate "
     "policy"},
    {"--gamma", MODEL_INPUT_IMAGES, 0, 0, BIT(LR_STEP), RECOMMENDER "follows the reference's learning-rate policy"},
    {"--min-lr", MODEL_INPUT_IMAGES, 0, 0, BIT(LR_COSINE), RECOMMENDER "follows the reference's learning-rate "
     "policy"},
    {"--label-smoothing", MODEL_INPUT_IMAGES, 0, 0, 0, "the recommender's (dlrm's) loss is binary cross-entropy"},
    {"--image-size", MODEL_INPUT_IMAGES, 0, 0, 0, "click logs have no images or classes"},
    {"--classes", MODEL_INPUT_IMAGES, 0, 0, 0, "click logs have no images or classes"},
    {"--skip-bad", MODEL_INPUT_IMAGES, 0, 0, 0, "it skips undecodable images; Criteo lines are checked as they are "
     "read"},
    {"--patch-size", ANY_INPUT, MODEL_HAS_PATCHES, 0, 0, "it sets a vision transformer's patches"},
    {"--drop-path", ANY_INPUT, MODEL_HAS_DROP_PATH, 0, 0, "it sets stochastic depth, built only where the catalog says"},
    {"--max-rows", ANY_INPUT, MODEL_HAS_EMBEDDINGS, 0, 0, "it caps a recommender's embedding tables"},
    {"--block-steps", ANY_INPUT, MODEL_TIMED_BLOCKS, 0, 0, "it sizes the recommender's timed blocks of steps"},
    {"--lr-warmup-steps", MODEL_INPUT_CLICK_LOGS, 0, 0, 0, "it is the recommender's learning-rate policy"},
    {"--lr-decay-start", MODEL_INPUT_CLICK_LOGS, 0, 0, 0, "it is the recommender's learning-rate policy"},
    {"--lr-decay-steps", MODEL_INPUT_CLICK_LOGS, 0, 0, 0, "it is the recommender's learning-rate policy"},
};
#define RULE_COUNT ((int)(sizeof RULES / sizeof RULES[0]))

static const char *choice_name(const cli_choice *list, int value) {
    for (const cli_choice *c = list; c->name; c++)
        if (c->value == value) return c->name;
    return "?";
}

/* The names of the choices whose bits are set, joined by " or ". */
static const char *choice_names(const cli_choice *list, unsigned bits, char *out, size_t size) {
    size_t used = 0;
    out[0] = 0;
    for (const cli_choice *c = list; c->name && used < size; c++)
        if (bits & BIT(c->value)) used += (size_t)snprintf(out + used, size - used, "%s%s", used ? " or " : "", c->name);
    return out;
}

/* The catalog's models a row keeps, for its message. */
static const char *models_of(const train_rule *r, char *out, size_t size) {
    catalog_filter f = CATALOG_ALL;
    f.input = r->input;
    f.options = r->parts;
    return catalog_list(out, size, f, ", ");
}

lr_kind train_rule_default_schedule(optimizer_kind optimizer) {
    return optimizer == OPTIMIZER_ADAMW ? LR_COSINE : LR_ONE_CYCLE;
}

train_rule_job train_rule_recipe(const model_spec *model, const char *model_name) {
    optimizer_kind optimizer = model ? model->optimizer : OPTIMIZER_SGD;
    return (train_rule_job){model, model_name, optimizer, train_rule_default_schedule(optimizer)};
}

int train_rule_check(const char *option, const train_rule_job *job, char *err, size_t err_size) {
    for (int k = 0; k < RULE_COUNT; k++) {
        const train_rule *r = &RULES[k];
        if (strcmp(r->option, option) != 0) continue;
        const model_spec *m = job->model;
        char names[256];
        if (m && ((r->input != ANY_INPUT && (int)m->input != r->input) || (m->options & r->parts) != r->parts)) {
            snprintf(err, err_size, "%s does not apply to %s: %s (it applies to %s)", option, job->model_name,
                     r->model_why, models_of(r, names, sizeof names));
            return -1;
        }
        if (r->optimizers && !(r->optimizers & BIT(job->optimizer))) {
            snprintf(err, err_size, "%s applies to --optimizer %s, and this job trains with %s", option,
                     choice_names(TRAIN_OPTIMIZERS, r->optimizers, names, sizeof names),
                     choice_name(TRAIN_OPTIMIZERS, job->optimizer));
            return -1;
        }
        if (r->schedules && !(r->schedules & BIT(job->schedule))) {
            snprintf(err, err_size, "%s applies to --schedule %s, and this job's schedule is %s", option,
                     choice_names(TRAIN_SCHEDULES, r->schedules, names, sizeof names),
                     choice_name(TRAIN_SCHEDULES, job->schedule));
            return -1;
        }
        return 0;
    }
    return 0;
}

int train_rule_check_given(int argc, char *const argv[], const train_rule_job *job, char *err, size_t err_size) {
    for (int k = 0; k < RULE_COUNT; k++)
        if (cli_given(argc, argv, RULES[k].option) && train_rule_check(RULES[k].option, job, err, err_size) != 0)
            return -1;
    return 0;
}

int train_rule_precision(const model_spec *model, const char *model_name, precision_kind p, char *err,
                         size_t err_size) {
    if (!model || catalog_runs(model, p)) return 0;
    char names[256];
    catalog_filter f = CATALOG_ALL;
    f.precision = (int)p;
    snprintf(err, err_size, "--precision %s does not apply to %s, which does not run in %s (%s do)", precision_name(p),
             model_name, precision_name(p), catalog_list(names, sizeof names, f, ", "));
    return -1;
}
