#include "base/spread.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int compare_floats(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

void spread_sort_floats(float *v, size_t n) {
    if (n) qsort(v, n, sizeof *v, compare_floats);
}

double spread_median_floats(float *v, size_t n) {
    if (n == 0) return NAN;
    spread_sort_floats(v, n);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

spread spread_of(const double *values, int count) {
    spread s = {0, NAN, NAN, NAN};
    double *finite = count > 0 ? malloc((size_t)count * sizeof *finite) : NULL;
    if (!finite) return s;
    for (int i = 0; i < count; i++)
        if (isfinite(values[i])) finite[s.n++] = values[i];
    if (s.n > 0) {
        qsort(finite, (size_t)s.n, sizeof *finite, compare_doubles);
        s.min = finite[0];
        s.max = finite[s.n - 1];
        s.median = s.n % 2 ? finite[s.n / 2] : (finite[s.n / 2 - 1] + finite[s.n / 2]) / 2;
    }
    free(finite);
    return s;
}

int spread_format(char *out, size_t size, spread s, const char *fmt) {
    char median[64], lo[64], hi[64];
    if (s.n == 0) return snprintf(out, size, "-");
    snprintf(median, sizeof median, fmt, s.median);
    if (s.n == 1) return snprintf(out, size, "%s", median);
    snprintf(lo, sizeof lo, fmt, s.min);
    snprintf(hi, sizeof hi, fmt, s.max);
    return snprintf(out, size, "%s [%s-%s]", median, lo, hi);
}

int spread_rank(spread a, spread b) {
    if (a.n < SPREAD_MIN_RANKED || b.n < SPREAD_MIN_RANKED) return 0;
    if (a.min > b.max) return 1;
    if (a.max < b.min) return -1;
    return 0;
}

const char *spread_rank_sign(int rank) { return rank > 0 ? ">" : rank < 0 ? "<" : "~"; }

static void add_number(cJSON *o, const char *key, double v) {
    if (isfinite(v)) cJSON_AddNumberToObject(o, key, v);
    else cJSON_AddNullToObject(o, key);
}

cJSON *spread_json(spread s) {
    cJSON *o = cJSON_CreateObject();
    add_number(o, "median", s.median);
    add_number(o, "min", s.min);
    add_number(o, "max", s.max);
    cJSON_AddNumberToObject(o, "n", s.n);
    return o;
}
