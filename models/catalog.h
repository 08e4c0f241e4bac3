/* The catalog of models: every model `train` can run, with what the host needs to know about it
 * before anything is built: its family, the data sets it trains on, the precisions it runs in,
 * the options that apply to it and its default recipe. Read by train's option parsing and
 * defaults, its dry run and job dispatch, and run_suite's mix parser; pure C with no CUDA, so
 * the runner links it without the models' GPU code (the builders are in models/model_build.c).
 * A model of an existing family is one row here. */
#ifndef SUITE_CATALOG_H
#define SUITE_CATALOG_H

#include <stddef.h>

#include "models/core/optimizer_kind.h"
#include "base/precision.h"

/* Which code builds it: the image families through the model interface (models/core/model.h),
 * the recommender through models/dlrm.h. */
typedef enum { MODEL_FAMILY_RESNET, MODEL_FAMILY_CAIT, MODEL_FAMILY_EFFICIENTNET, MODEL_FAMILY_DLRM } model_family;

/* What a sample is: an image with a class, or a click-log row. */
typedef enum { MODEL_INPUT_IMAGES, MODEL_INPUT_CLICK_LOGS } model_input;

/* Options that apply only to some models (bits of model_spec.options). */
enum {
    MODEL_HAS_PATCHES = 1,       /* --patch-size: a vision transformer */
    MODEL_HAS_DROP_PATH = 2,     /* --drop-path: stochastic depth is built */
    MODEL_DATA_PARALLEL = 4,     /* --gpus N, gpus= in a mix */
    MODEL_HAS_EMBEDDINGS = 8,    /* --max-rows, rows= in a mix: embedding tables to cap */
    MODEL_TIMED_BLOCKS = 16,     /* --block-steps: trained and timed in blocks of steps */
};
/* Which option applies to which of these (and to which optimizer and schedule) is one table:
 * runner/train/train_rules.c. */

typedef struct model_spec {
    const char *name;
    model_family family;
    model_input input;
    const char *const *data;     /* the data sets it trains on, NULL-terminated */
    unsigned precisions;         /* bit (1 << precision_kind) for each precision it runs in */
    unsigned options;            /* MODEL_HAS_* and MODEL_DATA_PARALLEL */
    int size_multiple;           /* the image side must be a multiple of it (0: no images) */
    /* the default recipe where the command line gives none */
    optimizer_kind optimizer;
    float lr;                    /* with the default optimizer; 0: the option's default */
    int nesterov;                /* SGD with momentum: Nesterov's */
} model_spec;

/* The row of that exact name, or NULL. */
const model_spec *catalog_find(const char *name);
/* The rows in order (i < catalog_count()), for parsers that match names their own way. */
int catalog_count(void);
const model_spec *catalog_at(int i);
/* Whether the model trains on that data set / runs in that precision. */
int catalog_takes(const model_spec *spec, const char *data);
int catalog_runs(const model_spec *spec, precision_kind p);

/* Which rows a list names: all of them, or those with an input, a precision or options. */
typedef struct catalog_filter {
    int input;                   /* -1: any, else a model_input */
    int precision;               /* -1: any, else a precision_kind the model runs in */
    unsigned options;            /* every bit set must be the model's */
    int by_family;               /* 1: family by family (the image builders' order), 0: row order */
} catalog_filter;
#define CATALOG_ALL ((catalog_filter){-1, -1, 0, 0})
/* The names of the rows the filter keeps joined by sep into out ("resnet26, resnet50"); out. */
const char *catalog_list(char *out, size_t size, catalog_filter filter, const char *sep);
/* The data sets of a model joined by sep ("criteo-kaggle or criteo-terabyte"); out. */
const char *catalog_data_list(char *out, size_t size, const model_spec *spec, const char *sep);

#endif
