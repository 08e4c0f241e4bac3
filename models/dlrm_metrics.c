/* ROC AUC on the host, by sorting: with the n scores ranked 1..n ascending (tied scores all get
 * the average of their ranks), AUC = (sum of the positives' ranks - P (P + 1) / 2) / (P N), the
 * Mann-Whitney statistic. It equals the area under the ROC curve with ties drawn as diagonal
 * segments, which is what sklearn.metrics.roc_auc_score (the reference's metric) computes.
 * NaN scores rank below every number, so a diverged model gets a defined (poor) AUC. */
#include <math.h>
#include <stdlib.h>

#include "models/dlrm.h"

typedef struct scored {
    float score;
    int positive;
} scored;

static int compare_scored(const void *a, const void *b) {
    float x = ((const scored *)a)->score, y = ((const scored *)b)->score;
    int nx = isnan(x), ny = isnan(y);
    if (nx || ny) return ny - nx; /* NaN first */
    return (x > y) - (x < y);
}

static int same_score(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

double dlrm_roc_auc(const float *scores, const float *labels, size_t n) {
    scored *s = malloc((n ? n : 1) * sizeof *s);
    if (!s) return NAN;
    double positives = 0;
    for (size_t i = 0; i < n; i++) {
        s[i].score = scores[i];
        s[i].positive = labels[i] > 0.5f;
        positives += s[i].positive;
    }
    double negatives = (double)n - positives;
    if (positives == 0 || negatives == 0) {
        free(s);
        return NAN;
    }
    qsort(s, n, sizeof *s, compare_scored);
    double rank_sum = 0; /* of the positives, ranks from 1 */
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double group_positives = 0;
        while (j < n && same_score(s[j].score, s[i].score)) group_positives += s[j++].positive;
        double average_rank = ((double)i + 1 + (double)j) / 2; /* of ranks i+1 .. j */
        rank_sum += group_positives * average_rank;
        i = j;
    }
    free(s);
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
}
