/* libFuzzer target: the Criteo TSV line parser (what criteo_read applies to each line). Input: one
 * byte choosing the table sizes, then the line. Either the line is refused with a reason, or the
 * label is 0 or 1, every dense value is finite and in [0, log(1 + 10^18)], and every index lies in
 * its table; sanitizers catch any read past the line. Seeds: tests/fuzz/criteo/. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/criteo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int64_t tables[CRITEO_SPARSE];
    for (int j = 0; j < CRITEO_SPARSE; j++) /* from 1 (every index 0) to the int32 maximum */
        tables[j] = data[0] == 255 ? CRITEO_MAX_TABLE
                                   : 1 + ((int64_t)data[0] * 7919 + (int64_t)j * 104729) % 100003;
    /* a copy exactly as long as the line, so any read past it is caught */
    size_t length = size - 1;
    char *line = malloc(length ? length : 1);
    if (!line) return 0;
    memcpy(line, data + 1, length);
    float dense[CRITEO_DENSE], label = -1.0f;
    int32_t sparse[CRITEO_SPARSE];
    char why[256] = "";
    if (criteo_parse_line(dense, sparse, &label, line, length, tables, why, sizeof why) != 0) {
        free(line);
        if (why[0] == '\0') abort(); /* a refusal always says why */
        return 0;
    }
    free(line);
    if (label != 0.0f && label != 1.0f) abort();
    for (int j = 0; j < CRITEO_DENSE; j++)
        if (!(dense[j] >= 0.0f && dense[j] <= 41.5f)) abort();
    for (int j = 0; j < CRITEO_SPARSE; j++)
        if (sparse[j] < 0 || sparse[j] >= tables[j]) abort();
    return 0;
}
