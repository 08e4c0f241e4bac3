#include "data/dataset.h"

#include <string.h>

void dataset_close(dataset *d) {
    if (d->close) d->close(d);
    memset(d, 0, sizeof *d);
}

size_t dataset_image_floats(const dataset *d) {
    return (size_t)d->height * d->width * d->channels;
}
