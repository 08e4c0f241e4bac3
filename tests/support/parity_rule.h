/* The rule the committed parity references are made with (tests/parity/make_reference.py computes
 * the same, bit for bit): every weight, running statistic, image and label drawn from splitmix64
 * over the tensor's name and the element's index, so the references need not carry the models'
 * weights; and the count sketch the references store for each large tensor, with which the suite's
 * relative error against the float64 reference is estimated (see the script's docstring). */
#ifndef SUITE_PARITY_RULE_H
#define SUITE_PARITY_RULE_H

#include <stddef.h>
#include <stdint.h>

#include "models/core/safetensors.h"

#define PARITY_SKETCH_BUCKETS 16

uint64_t parity_fnv1a(const char *text);
/* Element k of the stream named `name`, uniform in [-1, 1). */
double parity_uniform(uint64_t name_hash, uint64_t k);
/* A tensor's values by its PyTorch name and shape, in PyTorch's layout (n = the shape's product). */
void parity_values(const char *name, int ndim, const int64_t *shape, float *out);
/* The images (NHWC, n values) and labels (each below classes). */
void parity_input(float *out, size_t n);
void parity_labels(int32_t *out, int n, int classes);
void parity_sketch(const char *key, const float *values, size_t n, double out[PARITY_SKETCH_BUCKETS]);

/* A reference's table.* tensors: one row per key, keys in byte order. */
typedef struct parity_table {
    int rows;
    char **keys;                        /* sorted (owned) */
    const float *sketch, *norm, *torch_err;
} parity_table;

/* 0, or -1 with why in err: the file has no table, or its rows are not exactly these keys (its
 * digest names the keys the script had). */
int parity_table_open(parity_table *t, const st_file *ref, char **keys, int count, char *err, size_t err_size);
void parity_table_free(parity_table *t);
int parity_table_find(const parity_table *t, const char *key); /* the row, or -1 */
/* The estimate of ||ours - reference|| / ||reference|| from the sketches (an all-zero reference:
 * the estimate of ||ours||; a NaN or infinity in ours: +inf). */
double parity_table_error(const parity_table *t, int row, const float *ours, size_t n);

#endif
