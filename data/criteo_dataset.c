/* Criteo rows as a loader source (declared in data/loader.h): three fields per sample, dense
 * float [13], categorical indices int32 [26] and the click as a float, which is exactly the
 * recommender's input block (models/dlrm.h), so a loader batch goes to the GPU in one copy.
 * The source covers a range of the reader's rows, so one reader serves both the training rows
 * and the held-out ones. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/loader.h"

#define CRITEO_READ_CHUNK 256 /* rows shifted into the reader's numbering at a time */

typedef struct criteo_range {
    const criteo *reader;
    int64_t first_row;
} criteo_range;

static int criteo_source_read(const loader_source *s, void *const out[LOADER_MAX_FIELDS],
                              const int64_t *indices, int n, char *err, size_t err_size) {
    const criteo_range *range = s->impl;
    float *dense = out[0], *labels = out[2];
    int32_t *sparse = out[1];
    int64_t rows[CRITEO_READ_CHUNK];
    for (int done = 0; done < n;) {
        int chunk = n - done < CRITEO_READ_CHUNK ? n - done : CRITEO_READ_CHUNK;
        for (int k = 0; k < chunk; k++) {
            int64_t i = indices[done + k];
            if (i < 0 || i >= s->count) {
                snprintf(err, err_size, "%s: sample %lld out of range [0, %lld)", s->name, (long long)i,
                         (long long)s->count);
                return -1;
            }
            rows[k] = range->first_row + i;
        }
        if (criteo_read(range->reader, dense + (size_t)done * CRITEO_DENSE, sparse + (size_t)done * CRITEO_SPARSE,
                        labels + done, rows, chunk, err, err_size) != 0)
            return -1;
        done += chunk;
    }
    return 0;
}

static void criteo_source_close(loader_source *s) {
    free(s->impl);
    s->impl = NULL;
}

int loader_source_criteo(loader_source *s, const criteo *r, int64_t first_row, int64_t rows,
                         char *err, size_t err_size) {
    memset(s, 0, sizeof *s);
    int64_t available = r ? criteo_rows(r) : 0;
    if (!r || first_row < 0 || rows < 1 || first_row > available - rows) {
        snprintf(err, err_size, "Criteo: rows [%lld, %lld) are not within the %lld rows of the reader",
                 (long long)first_row, (long long)(first_row + rows), (long long)available);
        return -1;
    }
    criteo_range *range = malloc(sizeof *range);
    if (!range) {
        snprintf(err, err_size, "Criteo: out of memory");
        return -1;
    }
    range->reader = r;
    range->first_row = first_row;
    snprintf(s->name, sizeof s->name, "criteo[%lld..%lld)", (long long)first_row, (long long)(first_row + rows));
    s->count = rows;
    s->fields = 3;
    s->field_bytes[0] = CRITEO_DENSE * sizeof(float);
    s->field_bytes[1] = CRITEO_SPARSE * sizeof(int32_t);
    s->field_bytes[2] = sizeof(float);
    s->read = criteo_source_read;
    s->close = criteo_source_close;
    s->impl = range;
    return 0;
}
