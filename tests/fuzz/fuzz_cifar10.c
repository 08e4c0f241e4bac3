/* libFuzzer target: the CIFAR-10 record parser (the same checks the file reader applies to each
 * batch file). Input: the bytes of one batch file. Either they are refused with a message or
 * every probed record reads back with a label in range and values within the normalised range;
 * sanitizers catch any read past the input. Seeds: tests/fuzz/cifar10/. */
#include <stdio.h>
#include <stdlib.h>

#include "data/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    dataset d;
    char err[512] = "";
    if (dataset_open_cifar10_memory(&d, data, size, "input", err, sizeof err) != 0) {
        if (err[0] == '\0') abort(); /* a refusal always says why */
        return 0;
    }
    if (d.count != (int64_t)(size / CIFAR10_RECORD_BYTES)) abort();
    float image[32 * 32 * 3];
    int32_t label;
    int64_t probes[] = {0, d.count - 1, d.count / 2, d.count, -1};
    for (int p = 0; p < 5; p++) {
        int status = d.read(&d, image, &label, &probes[p], 1, err, sizeof err);
        int inside = probes[p] >= 0 && probes[p] < d.count;
        if (status != (inside ? 0 : -1)) abort();
        if (!inside) continue;
        if (label < 0 || label >= d.classes) abort();
        for (int i = 0; i < 32 * 32 * 3; i++)
            if (!(image[i] >= -2.0f && image[i] <= 2.2f)) abort(); /* (0..1 - mean) / std */
    }
    dataset_close(&d);
    return 0;
}
