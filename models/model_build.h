/* Building an image model by name: the catalog's row (models/catalog.h) says which family, and
 * the family's builder makes it through the model interface (models/core/model.h). */
#ifndef SUITE_MODEL_BUILD_H
#define SUITE_MODEL_BUILD_H

#include <stddef.h>

#include "models/core/arena.h"
#include "models/core/model.h"

/* The image models that can be built, family by family, for messages: "resnet26, ...". */
const char *model_names(void);
int model_known(const char *name);
/* Builds the named model against `a` (planning or real). NULL with a message in err for an unknown
 * name, impossible sizes or a precision the model does not run in; no GPU work. A bf16 model
 * marks a planning arena half_weights (arena.h), so the real one keeps the bfloat16 copies. */
model *model_build(const model_config *config, arena *a, char *err, size_t err_size);

#endif
