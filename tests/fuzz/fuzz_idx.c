/* libFuzzer target: the IDX parser behind the Fashion-MNIST reader (the same function the file
 * reader calls after decompressing). Input layout: 4 bytes little-endian k, then the images file
 * (the first k % (rest + 1) bytes of the rest) and the labels file (what follows). Whatever the
 * bytes, the parser either refuses them with a message or yields a data set whose samples read
 * back in range; sanitizers catch any read past the input. Seeds: tests/fuzz/idx/. */
#include <stdio.h>
#include <stdlib.h>

#include "data/dataset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    uint32_t k = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                 (uint32_t)data[3] << 24;
    const uint8_t *files = data + 4;
    size_t files_size = size - 4, images_size = k % (files_size + 1);
    dataset d;
    char err[512] = "";
    if (dataset_open_fashion_mnist_memory(&d, files, images_size, "images", files + images_size,
                                          files_size - images_size, "labels", err,
                                          sizeof err) != 0) {
        if (err[0] == '\0') abort(); /* a refusal always says why */
        return 0;
    }
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
            if (!(image[i] >= -0.82f && image[i] <= 2.03f)) abort(); /* (0..1 - mean) / std */
    }
    dataset_close(&d);
    return 0;
}
