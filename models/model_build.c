#include "models/model_build.h"

#include <pthread.h>
#include <stdio.h>

#include "models/cait.h"
#include "models/catalog.h"
#include "models/efficientnet.h"
#include "models/resnet.h"

typedef model *(*family_builder)(const model_config *config, arena *a, char *err, size_t err_size);

/* The builder of each image family; a new family adds one. */
static const family_builder BUILDERS[] = {
    [MODEL_FAMILY_RESNET] = resnet_build,
    [MODEL_FAMILY_CAIT] = cait_build,
    [MODEL_FAMILY_EFFICIENTNET] = efficientnet_build,
};
#define BUILDER_COUNT (sizeof BUILDERS / sizeof *BUILDERS)

static family_builder builder_of(const model_spec *spec) {
    return spec && (size_t)spec->family < BUILDER_COUNT ? BUILDERS[spec->family] : NULL;
}

/* Built once, whichever job thread asks first. */
static char model_name_list[256], bf16_model_list[256];
static pthread_once_t model_name_lists_once = PTHREAD_ONCE_INIT;

static void build_model_name_lists(void) {
    catalog_filter images = {MODEL_INPUT_IMAGES, -1, 0, 1}, bf16 = images;
    bf16.precision = PRECISION_BF16;
    catalog_list(model_name_list, sizeof model_name_list, images, ", ");
    catalog_list(bf16_model_list, sizeof bf16_model_list, bf16, ", ");
}

const char *model_names(void) {
    pthread_once(&model_name_lists_once, build_model_name_lists);
    return model_name_list;
}

int model_known(const char *name) { return builder_of(catalog_find(name)) != NULL; }

model *model_build(const model_config *config, arena *a, char *err, size_t err_size) {
    const model_spec *spec = catalog_find(config->name);
    family_builder build = builder_of(spec);
    if (!build) {
        snprintf(err, err_size, "unknown model '%s': expected one of %s", config->name, model_names());
        return NULL;
    }
    if (config->precision == PRECISION_BF16 && !catalog_runs(spec, PRECISION_BF16)) {
        pthread_once(&model_name_lists_once, build_model_name_lists);
        snprintf(err, err_size, "%s does not run in bf16 yet: --precision bf16 is for %s", config->name,
                 bf16_model_list);
        return NULL;
    }
    if ((unsigned)config->precision > PRECISION_BF16) {
        snprintf(err, err_size, "precision %d: expected tf32, fp32 or bf16", (int)config->precision);
        return NULL;
    }
    int half = config->precision == PRECISION_BF16;
    if (a->planning) a->half_weights = half;
    if (!a->planning && a->half_weights != half) {
        snprintf(err, err_size, "%s: the arena was planned for %s weights, the model is %s", config->name,
                 a->half_weights ? "bf16" : "float32", precision_name(config->precision));
        return NULL;
    }
    return build(config, a, err, err_size);
}
