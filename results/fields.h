/* A measured value as a field of the run's files: a CSV cell, a JSON member. Unknown numbers (NaN)
 * stay visibly unknown: an empty cell, a null. */
#ifndef SUITE_RESULTS_FIELDS_H
#define SUITE_RESULTS_FIELDS_H

#include <stdio.h>

#include <cjson/cJSON.h>

/* RFC 4180 field: quoted when it holds a comma, quote or line break. */
void results_csv_field(FILE *f, const char *text);
/* A number with that many decimals; nothing for NaN (an empty field). */
void results_csv_number(FILE *f, double v, int decimals);
/* key: v, or null for NaN and infinities. */
void results_json_number(cJSON *o, const char *key, double v);

#endif
