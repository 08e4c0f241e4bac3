/* libFuzzer target: the .npy header parser and the .npz (zip) reading behind the ImageNet 64x64
 * reader, from memory. Input layout: a mode byte, 4 bytes little-endian k, then the rest.
 *   - The rest is always given to npy_parse_header as a .npy file.
 *   - Mode bit 0 clear: the rest is the .npz archive itself (libzip's parsing of hostile archives,
 *     and CRC failures when the fuzzer mutates member data).
 *   - Mode bit 0 set: an archive is built here from the rest: data.npy = its first
 *     k % (size + 1) bytes, labels.npy = what follows (left out when bit 3 is set), each stored
 *     or deflated (bits 1 and 2). This reaches the header and array checks with valid CRCs.
 * Whatever the bytes, opening either fails with a message or gives a data set whose probed samples
 * read back with labels 0..999 and values within the normalised range; sanitizers catch any read
 * past the input. Seeds: tests/fuzz/npy/. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "data/dataset.h"

/* The archive of the two members as bytes (malloc'ed), or NULL if libzip cannot write it. */
static uint8_t *build_npz(const uint8_t *data, size_t data_size, const uint8_t *labels,
                          size_t labels_size, int mode, size_t *size) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t *target = zip_source_buffer_create(NULL, 0, 0, &error);
    zip_t *archive = target ? zip_open_from_source(target, ZIP_TRUNCATE, &error) : NULL;
    uint8_t *bytes = NULL;
    zip_error_fini(&error);
    if (!archive) {
        if (target) zip_source_free(target);
        return NULL;
    }
    zip_source_keep(target); /* it holds the result once the archive is closed */
    const char *names[2] = {"data.npy", "labels.npy"};
    const uint8_t *contents[2] = {data, labels};
    size_t sizes[2] = {data_size, labels_size};
    for (int m = 0; m < 2; m++) {
        if (m == 1 && (mode & 8)) break;
        zip_source_t *member = zip_source_buffer(archive, contents[m], sizes[m], 0);
        zip_int64_t index = member ? zip_file_add(archive, names[m], member, 0) : -1;
        if (index < 0) {
            if (member) zip_source_free(member);
            zip_discard(archive);
            zip_source_free(target);
            return NULL;
        }
        zip_set_file_compression(archive, (zip_uint64_t)index,
                                 mode & (2 << m) ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 1);
    }
    if (zip_close(archive) != 0) {
        zip_discard(archive);
        zip_source_free(target);
        return NULL;
    }
    zip_stat_t st;
    if (zip_source_open(target) == 0) {
        if (zip_source_stat(target, &st) == 0 && (st.valid & ZIP_STAT_SIZE) &&
            (bytes = malloc(st.size ? st.size : 1)) &&
            zip_source_read(target, bytes, st.size) != (zip_int64_t)st.size) {
            free(bytes);
            bytes = NULL;
        }
        *size = bytes ? st.size : 0;
        zip_source_close(target);
    }
    zip_source_free(target);
    return bytes;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 5) return 0;
    int mode = data[0];
    uint32_t k = (uint32_t)data[1] | (uint32_t)data[2] << 8 | (uint32_t)data[3] << 16 |
                 (uint32_t)data[4] << 24;
    const uint8_t *rest = data + 5;
    size_t rest_size = size - 5;
    char err[512] = "";

    npy_header h;
    if (npy_parse_header(&h, rest, rest_size, "input.npy", err, sizeof err) == 0) {
        if (h.data_offset > rest_size || h.ndim < 0 || h.ndim > NPY_MAX_DIMS) abort();
        for (int i = 0; i < h.ndim; i++)
            if (h.shape[i] < 0) abort();
    } else if (err[0] == '\0') {
        abort(); /* a refusal always says why */
    }

    uint8_t *built = NULL;
    const uint8_t *archive = rest;
    size_t archive_size = rest_size;
    if (mode & 1) {
        size_t split = k % (rest_size + 1);
        built = build_npz(rest, split, rest + split, rest_size - split, mode, &archive_size);
        if (!built) return 0;
        archive = built;
    }
    dataset d;
    err[0] = '\0';
    if (dataset_open_imagenet64_memory(&d, archive, archive_size, "input.npz", err,
                                       sizeof err) != 0) {
        free(built);
        if (err[0] == '\0') abort();
        return 0;
    }
    static float image[64 * 64 * 3];
    int32_t label;
    int64_t probes[] = {0, d.count - 1, d.count / 2, d.count, -1};
    for (int p = 0; p < 5; p++) {
        int status = d.read(&d, image, &label, &probes[p], 1, err, sizeof err);
        int inside = probes[p] >= 0 && probes[p] < d.count;
        if (status != (inside ? 0 : -1)) abort();
        if (!inside) continue;
        if (label < 0 || label >= d.classes) abort();
        for (int i = 0; i < 64 * 64 * 3; i++)
            if (!(image[i] >= -2.12f && image[i] <= 2.65f)) abort(); /* (0..1 - mean) / std */
    }
    dataset_close(&d);
    free(built);
    return 0;
}
