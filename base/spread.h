/* The spread of a measurement over repeats: every metric the suite publishes from more than one
 * run (repeated launches, consecutive windows of one launch, several run folders of one cell) is
 * summarised here, once, as its median, minimum and maximum over the repeats, printed
 * "median [min-max]", and two such summaries are ranked only where their ranges allow it:
 * "A > B" when every repeat of A lies above every repeat of B, else "A ~ B". One run ranks
 * nothing: a difference seen once is not yet a difference. */
#ifndef SUITE_SPREAD_H
#define SUITE_SPREAD_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct spread {
    int n;                       /* finite values summarised */
    double median, min, max;     /* NaN when n is 0; the median of an even count is the mean of the middle two */
} spread;

/* The spread of values[0..count) (NaNs and infinities are left out, so n may be less than count). */
spread spread_of(const double *values, int count);
/* "1.42 [1.38-1.47]" with fmt "%.2f" for each number; "1.42" when n is 1; "-" when n is 0.
 * Returns what snprintf returns. */
int spread_format(char *out, size_t size, spread s, const char *fmt);
/* 1 when a lies wholly above b (a.min > b.max), -1 when wholly below, 0 otherwise: the ranges
 * overlap, or either side has fewer than SPREAD_MIN_RANKED values. */
#define SPREAD_MIN_RANKED 2
int spread_rank(spread a, spread b);
/* ">", "<" or "~" for spread_rank's answer. */
const char *spread_rank_sign(int rank);
/* Sorts v[0..n) ascending, in place (NaNs compare as neither less nor greater). */
void spread_sort_floats(float *v, size_t n);
/* The median of v[0..n) (sorted in place): the mean of the middle two for an even count; NaN when
 * n is 0. */
double spread_median_floats(float *v, size_t n);
/* {"median":..,"min":..,"max":..,"n":..} (null for NaN). */
cJSON *spread_json(spread s);

#endif
