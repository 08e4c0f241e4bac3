#include "base/knob_value.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/number.h"
#include "base/quote.h"

static number_kind number_of(knob_kind kind) {
    return kind == KNOB_KIND_WHOLE ? NUMBER_WHOLE : kind == KNOB_KIND_REAL ? NUMBER_REAL : NUMBER_SIZE;
}

/* "legacy|engine" -> "legacy or engine"; "0|1|force" -> "0, 1 or force" */
static void join_choices(const char *list, char *out, size_t size) {
    size_t used = 0, n = strlen(list);
    out[0] = 0;
    for (size_t i = 0; i < n && used + 5 < size; i++) {
        if (list[i] != '|') {
            out[used++] = list[i];
            continue;
        }
        const char *sep = strchr(list + i + 1, '|') ? ", " : " or ";
        used += (size_t)snprintf(out + used, size - used, "%s", sep);
    }
    out[used < size ? used : size - 1] = 0;
}

void knob_value_expects(const knob *k, char *out, size_t size) {
    switch (k->kind) {
    case KNOB_KIND_FLAG: snprintf(out, size, "0 or 1"); break;
    case KNOB_KIND_CHOICE: join_choices(k->choices, out, size); break;
    case KNOB_KIND_WHOLE:
    case KNOB_KIND_REAL:
    case KNOB_KIND_SIZE: number_expects(number_of(k->kind), k->lo, k->hi, out, size); break;
    case KNOB_KIND_PATH: snprintf(out, size, "a path (one line of at most %d characters)", PATH_MAX - 1); break;
    default: snprintf(out, size, "one line of text"); break;
    }
}

static int one_line(const char *text) {
    for (const char *p = text; *p; p++)
        if ((unsigned char)*p < 0x20 && *p != '\t') return 0;
    return 1;
}

static int is_choice(const char *list, const char *text) {
    size_t n = strlen(text);
    for (const char *p = list; p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, text, n)) return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

int knob_value_check(knob_id id, const char *text, char *err, size_t err_size) {
    const knob *k = knob_info(id);
    if (!k) return snprintf(err, err_size, "no knob %d", (int)id), -1;
    int ok;
    switch (k->kind) {
    case KNOB_KIND_FLAG: ok = !strcmp(text, "0") || !strcmp(text, "1"); break;
    case KNOB_KIND_CHOICE: ok = is_choice(k->choices, text); break;
    case KNOB_KIND_WHOLE:
    case KNOB_KIND_REAL:
    case KNOB_KIND_SIZE:
        return number_parse(number_of(k->kind), k->lo, k->hi, k->name, text, strlen(text), NULL, NULL, err, err_size);
    case KNOB_KIND_PATH: ok = one_line(text) && strlen(text) < PATH_MAX; break;
    default: ok = one_line(text); break;
    }
    if (ok) return 0;
    char what[256], shown[QUOTE_SHOWN * 4 + 48];
    knob_value_expects(k, what, sizeof what);
    snprintf(err, err_size, "%s: expected %s, got %s", k->name, what, quote_text(shown, sizeof shown, '\'', text, strlen(text)));
    return -1;
}

int knob_value_check_all(char *err, size_t err_size) {
    for (int id = 0; id < KNOB_COUNT; id++) {
        const char *text = knob_text((knob_id)id);
        if (text && *text && knob_value_check((knob_id)id, text, err, err_size) != 0) return -1;
    }
    return 0;
}

static int read_number(knob_id id, number_kind kind, long long *whole, double *real, char *err, size_t err_size) {
    const knob *k = knob_info(id);
    const char *text = knob_text(id);
    if (!text || !*text) return 0;
    if (number_of(k->kind) != kind || k->kind == KNOB_KIND_FLAG || k->kind > KNOB_KIND_SIZE)
        return snprintf(err, err_size, "%s is not read as that kind of number", k->name), -1;
    return number_parse(kind, k->lo, k->hi, k->name, text, strlen(text), whole, real, err, err_size) == 0 ? 1 : -1;
}

int knob_value_whole(knob_id id, long long *out, char *err, size_t err_size) {
    return read_number(id, NUMBER_WHOLE, out, NULL, err, err_size);
}

int knob_value_real(knob_id id, double *out, char *err, size_t err_size) {
    return read_number(id, NUMBER_REAL, NULL, out, err, err_size);
}

int knob_value_size(knob_id id, long long *out, char *err, size_t err_size) {
    return read_number(id, NUMBER_SIZE, out, NULL, err, err_size);
}
