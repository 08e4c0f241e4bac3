/* The parity references' rule and sketches (see parity_rule.h). */
#include "tests/support/parity_rule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOLDEN 0x9E3779B97F4A7C15ull

uint64_t parity_fnv1a(const char *text) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) h = (h ^ *p) * 0x100000001B3ull;
    return h;
}

static uint64_t stream(uint64_t name_hash, uint64_t k) {
    uint64_t z = name_hash + k * GOLDEN;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double parity_uniform(uint64_t name_hash, uint64_t k) {
    return (double)(stream(name_hash, k) >> 11) * 0x1p-53 * 2.0 - 1.0;
}

static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

void parity_values(const char *name, int ndim, const int64_t *shape, float *out) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    uint64_t h = parity_fnv1a(name);
    double scale = 0.1, offset = 0.0;
    if (ends_with(name, "running_var")) scale = 0.5, offset = 1.0;
    else if (ends_with(name, "running_mean")) scale = 0.1;
    else if (ndim >= 2) scale = sqrt(3.0 / (double)(n / shape[0]));
    else if (ends_with(name, "gamma_1") || ends_with(name, "gamma_2")) scale = 0.2, offset = 0.4;
    else if (ends_with(name, "weight")) scale = 0.5, offset = 1.0;
    for (int64_t k = 0; k < n; k++) {
        double u = parity_uniform(h, (uint64_t)k);
        out[k] = (float)(offset != 0.0 ? offset + scale * u : scale * u);
    }
}

void parity_input(float *out, size_t n) {
    uint64_t h = parity_fnv1a("input");
    for (size_t k = 0; k < n; k++) out[k] = (float)(sqrt(3.0) * parity_uniform(h, k));
}

void parity_labels(int32_t *out, int n, int classes) {
    uint64_t h = parity_fnv1a("labels");
    for (int i = 0; i < n; i++) out[i] = (int32_t)(stream(h, (uint64_t)i) % (uint64_t)classes);
}

void parity_sketch(const char *key, const float *values, size_t n, double out[PARITY_SKETCH_BUCKETS]) {
    char name[512];
    snprintf(name, sizeof name, "sketch.%s", key);
    uint64_t h = parity_fnv1a(name);
    for (int b = 0; b < PARITY_SKETCH_BUCKETS; b++) out[b] = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t bits = stream(h, k);
        out[bits % PARITY_SKETCH_BUCKETS] += (bits >> 63 ? 1.0 : -1.0) * (double)values[k];
    }
}

static int compare_keys(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int parity_table_open(parity_table *t, const st_file *ref, char **keys, int count, char *err, size_t err_size) {
    memset(t, 0, sizeof *t);
    const st_tensor *sketch = st_find(ref, "table.sketch"), *norm = st_find(ref, "table.norm"),
                    *torch_err = st_find(ref, "table.torch_err"), *digest = st_find(ref, "table.digest");
    if (!sketch || !norm || !torch_err || !digest || sketch->dtype != ST_F32 || sketch->ndim != 2 ||
        sketch->shape[1] != PARITY_SKETCH_BUCKETS || norm->dtype != ST_F32 || torch_err->dtype != ST_F32 ||
        digest->dtype != ST_I64 || norm->shape[0] != sketch->shape[0] || torch_err->shape[0] != sketch->shape[0]) {
        snprintf(err, err_size, "the reference has no table.sketch [M,%d], table.norm, table.torch_err [M] and "
                 "table.digest (i64)", PARITY_SKETCH_BUCKETS);
        return -1;
    }
    if (sketch->shape[0] != count) {
        snprintf(err, err_size, "the reference's table has %lld rows, the model %d tensors to compare",
                 (long long)sketch->shape[0], count);
        return -1;
    }
    t->keys = malloc((size_t)count * sizeof *t->keys);
    size_t joined_size = 1;
    for (int i = 0; i < count; i++) t->keys[i] = strdup(keys[i]), joined_size += strlen(keys[i]) + 1;
    t->rows = count;
    qsort(t->keys, (size_t)count, sizeof *t->keys, compare_keys);
    char *joined = calloc(1, joined_size);
    for (int i = 0; i < count; i++) {
        if (i) strcat(joined, "\n");
        strcat(joined, t->keys[i]);
    }
    int64_t want;
    memcpy(&want, st_data(ref, digest), sizeof want);
    uint64_t have = parity_fnv1a(joined);
    free(joined);
    if ((uint64_t)want != have) {
        snprintf(err, err_size, "the reference's table was made for other tensor names (digest %016llx, the model's "
                 "%016llx): remake it with tests/parity/make_reference.py", (unsigned long long)want,
                 (unsigned long long)have);
        parity_table_free(t);
        return -1;
    }
    t->sketch = st_data(ref, sketch);
    t->norm = st_data(ref, norm);
    t->torch_err = st_data(ref, torch_err);
    return 0;
}

void parity_table_free(parity_table *t) {
    for (int i = 0; i < t->rows; i++) free(t->keys[i]);
    free(t->keys);
    memset(t, 0, sizeof *t);
}

int parity_table_find(const parity_table *t, const char *key) {
    char *const *hit = t->rows ? bsearch(&key, t->keys, (size_t)t->rows, sizeof *t->keys, compare_keys) : NULL;
    return hit ? (int)(hit - t->keys) : -1;
}

double parity_table_error(const parity_table *t, int row, const float *ours, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (!isfinite(ours[k])) return INFINITY;
    double s[PARITY_SKETCH_BUCKETS], diff = 0;
    parity_sketch(t->keys[row], ours, n, s);
    for (int b = 0; b < PARITY_SKETCH_BUCKETS; b++) {
        double d = s[b] - t->sketch[(size_t)row * PARITY_SKETCH_BUCKETS + b];
        diff += d * d;
    }
    double norm = t->norm[row];
    return norm > 0 ? sqrt(diff) / norm : sqrt(diff);
}
