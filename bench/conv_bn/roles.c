/* ResNet-50's convolutions with their roles (roles.h), read from the model the suite builds. */
#include "bench/conv_bn/roles.h"

#include <string.h>

#include "base/error.h"
#include "models/model_build.h"
#include "models/resnet.h"

static const char *const ROLE_NAMES[] = {"stem", "c1", "c2", "c3", "ds"};

const char *conv_role_name(conv_role role) { return (unsigned)role <= ROLE_DOWNSAMPLE ? ROLE_NAMES[role] : "?"; }

int conv_role_has_prologue(conv_role role) { return role == ROLE_CONV2 || role == ROLE_CONV3; }

static void add_entry(conv_entry *e, int *n, conv_shape s, conv_role role, int keep) {
    if (!keep) return;
    for (int i = 0; i < *n; i++)
        if (e[i].role == role && !memcmp(&e[i].shape, &s, sizeof s)) {
            e[i].count++;
            return;
        }
    if (*n < CONV_ENTRIES_MAX) e[(*n)++] = (conv_entry){s, role, 1};
}

/* resnet_conv_shapes' order: the stem, then each block's conv1, conv2, conv3 and its downsample if
 * it has one. A downsample reads the block's input (conv1's in_c) and writes conv3's channels; the
 * next block's conv1 writes the narrower width. */
int conv_entries(conv_entry *e, int batch, int image_size, int prologue_only, char *err, size_t err_size) {
    model_config config = {.name = "resnet50", .batch = batch, .image_size = image_size, .in_channels = 3,
                           .classes = 1000, .precision = PRECISION_BF16};
    arena plan;
    arena_plan(&plan);
    model *m = model_build(&config, &plan, err, err_size);
    if (!m) return -1;
    conv_shape shapes[CONV_ENTRIES_MAX];
    int total = resnet_conv_shapes(m, shapes, CONV_ENTRIES_MAX), n = 0, all = !prologue_only;
    model_free(m);
    arena_free(&plan);
    if (total > CONV_ENTRIES_MAX)
        return error_set(err, err_size, "resnet50 has %d convolutions, more than %d", total, CONV_ENTRIES_MAX);
    add_entry(e, &n, shapes[0], ROLE_STEM, all);
    for (int i = 1; i < total;) {
        if (i + 2 >= total) return error_set(err, err_size, "resnet50's convolution %d does not start a bottleneck", i);
        conv_shape c1 = shapes[i], c3 = shapes[i + 2];
        add_entry(e, &n, c1, ROLE_CONV1, all);
        add_entry(e, &n, shapes[i + 1], ROLE_CONV2, 1);
        add_entry(e, &n, c3, ROLE_CONV3, 1);
        i += 3;
        if (i < total && shapes[i].kernel == 1 && shapes[i].in_c == c1.in_c && shapes[i].out_c == c3.out_c)
            add_entry(e, &n, shapes[i++], ROLE_DOWNSAMPLE, all);
    }
    return n;
}
