#include "results/fields.h"

#include <math.h>
#include <string.h>

void results_csv_field(FILE *f, const char *text) {
    if (!strpbrk(text, ",\"\r\n")) {
        fputs(text, f);
        return;
    }
    fputc('"', f);
    for (const char *p = text; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

void results_csv_number(FILE *f, double v, int decimals) {
    if (!isnan(v)) fprintf(f, "%.*f", decimals, v);
}

void results_json_number(cJSON *o, const char *key, double v) {
    if (isnan(v) || isinf(v)) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, v);
}
