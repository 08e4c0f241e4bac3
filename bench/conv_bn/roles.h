/* ResNet-50's convolutions for the batch-norm fusion probes, each with its role in the block: a
 * prologue (the previous BN's apply) fuses only into conv2 and conv3, whose input is a BN's
 * output before its ReLU; the stem, conv1 and the downsample read an activated tensor (or the
 * image). Identical convolutions of one role are one entry with a count. */
#ifndef BENCH_CONV_BN_ROLES_H
#define BENCH_CONV_BN_ROLES_H

#include <stddef.h>

#include "models/layers/conv_shape.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { CONV_ENTRIES_MAX = 128 };
typedef enum { ROLE_STEM, ROLE_CONV1, ROLE_CONV2, ROLE_CONV3, ROLE_DOWNSAMPLE } conv_role;

typedef struct conv_entry {
    conv_shape shape;
    conv_role role;
    int count; /* how often the forward has this convolution */
} conv_entry;

const char *conv_role_name(conv_role role); /* "stem", "c1", "c2", "c3", "ds" */
int conv_role_has_prologue(conv_role role);
/* ResNet-50's convolutions at this batch and input size (all, or only conv2 and conv3 when
 * prologue_only) into e[CONV_ENTRIES_MAX]: the number of entries, or -1 with a message in err. */
int conv_entries(conv_entry *e, int batch, int image_size, int prologue_only, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif
#endif
