#include "runner/cli.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/number.h"
#include "base/quote.h"

enum { HELP_COLUMN = 26, HELP_WIDTH = 100 };

/* The names of a choice list, joined by sep and, before the last one, by last. */
static void join_choices(const cli_choice *c, const char *sep, const char *last, char *buf, size_t size) {
    size_t n = 0, used = 0;
    while (c[n].name) n++;
    buf[0] = 0;
    for (size_t i = 0; i < n && used < size; i++)
        used += snprintf(buf + used, size - used, "%s%s", i == 0 ? "" : i + 1 == n ? last : sep, c[i].name);
}

/* "a whole number from 1 to 65536": what a row accepts, for its errors. */
static void expects(const cli_option *r, char *buf, size_t size) {
    switch (r->kind) {
    case CLI_KIND_INT: number_expects(NUMBER_WHOLE, r->lo, r->hi, buf, size); break;
    case CLI_KIND_REAL: number_expects(NUMBER_REAL, r->lo, r->hi, buf, size); break;
    case CLI_KIND_TEXT: snprintf(buf, size, "a value of 1 to %zu characters", r->size - 1); break;
    case CLI_KIND_CHOICE: join_choices(r->choices, ", ", " or ", buf, size); break;
    default: snprintf(buf, size, "a value (not empty)"); break;
    }
}

static int bad_value(const cli_option *r, const char *text, char *err, size_t err_size) {
    char what[512], shown[QUOTE_SHOWN * 4 + 48];
    expects(r, what, sizeof what);
    snprintf(err, err_size, "%s: expected %s, got %s", r->name, what, quote_text(shown, sizeof shown, '\'', text, strlen(text)));
    return -1;
}

static void store_int(void *field, size_t size, long long v) {
    if (size == sizeof(int32_t)) *(int32_t *)field = (int32_t)v;
    else *(int64_t *)field = (int64_t)v;
}

/* Checks `text` against the row and stores it in the row's field of dst. */
static int take_value(const cli_option *r, const char *text, void *dst, char *err, size_t err_size) {
    void *field = (char *)dst + r->offset;
    switch (r->kind) { /* numbers by the one rule of every grammar (base/number.h) */
    case CLI_KIND_INT: {
        long long v;
        if (number_whole(r->name, text, r->lo, r->hi, &v, err, err_size) != 0) return -1;
        store_int(field, r->size, v);
        return 0;
    }
    case CLI_KIND_REAL: {
        double v;
        if (number_real(r->name, text, r->lo, r->hi, &v, err, err_size) != 0) return -1;
        if (r->size == sizeof(float)) *(float *)field = (float)v;
        else *(double *)field = v;
        return 0;
    }
    case CLI_KIND_TEXT:
        if (!*text || strlen(text) >= r->size) return bad_value(r, text, err, err_size);
        memcpy(field, text, strlen(text) + 1);
        return 0;
    case CLI_KIND_STR:
        if (!*text) return bad_value(r, text, err, err_size);
        *(const char **)field = text;
        return 0;
    case CLI_KIND_CHOICE:
        for (const cli_choice *c = r->choices; c->name; c++)
            if (!strcmp(c->name, text)) {
                store_int(field, r->size, c->value);
                return 0;
            }
        return bad_value(r, text, err, err_size);
    default:
        store_int(field, r->size, (long long)r->lo);
        return 0;
    }
}

static const cli_option *find(const cli_program *p, const char *name, size_t len) {
    for (const cli_option *r = p->options; r->name; r++)
        if (strlen(r->name) == len && !strncmp(r->name, name, len)) return r;
    return NULL;
}

/* A row whose field the kind cannot store into is a mistake in the table, not in the input. */
static int row_fits(const cli_option *r) {
    switch (r->kind) {
    case CLI_KIND_FLAG:
    case CLI_KIND_INT:
    case CLI_KIND_CHOICE: return r->size == sizeof(int32_t) || r->size == sizeof(int64_t);
    case CLI_KIND_REAL: return r->size == sizeof(float) || r->size == sizeof(double);
    case CLI_KIND_STR: return r->size == sizeof(const char *);
    case CLI_KIND_TEXT: return r->size > 1;
    default: return 0;
    }
}

/* 1 when `text` names the option `name` as a word ("--gpu" is not named by "--gpus"). */
static int mentions(const char *text, const char *name) {
    size_t n = strlen(name);
    for (const char *at = strstr(text, name); at; at = strstr(at + 1, name)) {
        char after = at[n];
        int part_of_word = (after >= 'a' && after <= 'z') || (after >= '0' && after <= '9') || after == '-';
        if (!part_of_word && (at == text || at[-1] != '-')) return 1;
    }
    return 0;
}

/* Whether argv[i] takes the next word as its value: a row that is no flag (a "--name", or a short
 * "-o" row), or a "--name" no row names, given without "=", when a next word is there that does
 * not start with "--". */
static int value_follows(const cli_option *r, int argc, char *const argv[], int i) {
    const char *a = argv[i];
    int long_form = strncmp(a, "--", 2) == 0;
    if ((!r && !long_form) || (long_form && strchr(a, '=')) || (r && r->kind == CLI_KIND_FLAG)) return 0;
    return i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0;
}

static const cli_option *row_of(const cli_program *p, const char *a) {
    const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
    return find(p, a, eq ? (size_t)(eq - a) : strlen(a));
}

/* --help or -h as a word of its own, wherever it stands (values skipped). */
int cli_help_asked(const cli_program *p, int argc, char *const argv[]) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
        i += value_follows(row_of(p, argv[i]), argc, argv, i);
    }
    return 0;
}

static int parse_words(const cli_program *p, void *dst, int argc, char *const argv[], const char **rest,
                       int rest_max, unsigned char *given, char *err, size_t err_size);

/* cli_parse and cli_parse_unknown: with rest NULL, a word no row names is an error. */
static int parse(const cli_program *p, void *dst, int argc, char *const argv[], const char **rest, int rest_max,
                 char *err, size_t err_size) {
    for (const cli_option *r = p->options; r->name; r++) {
        if (!row_fits(r)) {
            snprintf(err, err_size, "%s's option table: %s cannot be stored in a field of %zu bytes", p->name,
                     r->name, r->size);
            return -1;
        }
        if (p->help_text && !r->hidden && !mentions(p->help_text, r->name)) {
            snprintf(err, err_size, "%s's option table: %s is missing from its help text", p->name, r->name);
            return -1;
        }
    }
    if (cli_fallbacks(p->options, dst, err, err_size) != 0) return -1;
    if (cli_help_asked(p, argc, argv)) {
        cli_usage(p, stdout);
        return 1;
    }
    int rows = 0;
    for (const cli_option *r = p->options; r->name; r++) rows++;
    unsigned char *given = calloc((size_t)rows + 1, 1); /* a value given twice is refused, not overwritten */
    if (!given) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    int status = parse_words(p, dst, argc, argv, rest, rest_max, given, err, err_size);
    free(given);
    return status;
}

/* The words of argv after the fallbacks: given[i] marks table row i as seen. */
static int parse_words(const cli_program *p, void *dst, int argc, char *const argv[], const char **rest,
                       int rest_max, unsigned char *given, char *err, size_t err_size) {
    int passed = 0;
    if (rest) rest[0] = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        const cli_option *r = row_of(p, a);
        if (!r && !rest) {
            char shown[QUOTE_SHOWN * 4 + 48];
            snprintf(err, err_size, "unknown option %s (%s --help lists them)",
                     quote_text(shown, sizeof shown, '\'', a, strlen(a)), p->name);
            return -1;
        }
        if (!r) { /* rest: the words no row names */
            int words = 1 + value_follows(r, argc, argv, i);
            if (passed + words >= rest_max) {
                snprintf(err, err_size, "more than %d words no option names", rest_max - 1);
                return -1;
            }
            for (int k = 0; k < words; k++) rest[passed++] = argv[i + k];
            rest[passed] = NULL;
            i += words - 1;
            continue;
        }
        const char *value = NULL;
        if (r->kind == CLI_KIND_FLAG) {
            if (eq) {
                snprintf(err, err_size, "%s takes no value (got '%s')", r->name, a);
                return -1;
            }
        } else if (eq) {
            value = eq + 1;
        } else if (value_follows(r, argc, argv, i)) {
            value = argv[++i];
        } else {
            char what[512];
            expects(r, what, sizeof what);
            snprintf(err, err_size, "%s: expected %s; missing its value", r->name, what);
            return -1;
        }
        if (given[r - p->options]++) { /* flags too: "--quick --quick" is a slip, said rather than guessed */
            snprintf(err, err_size, "%s given twice; give it once", r->name);
            return -1;
        }
        if (take_value(r, value, dst, err, err_size) != 0) return -1;
        if (r->marks) *(int *)((char *)dst + r->mark) = 1;
    }
    return 0;
}

int cli_fallbacks(const cli_option *rows, void *dst, char *err, size_t err_size) {
    for (const cli_option *r = rows; r && r->name; r++)
        if (r->fallback && take_value(r, r->fallback, dst, err, err_size) != 0) return -1;
    return 0;
}

int cli_parse(const cli_program *p, void *dst, int argc, char **argv, char *err, size_t err_size) {
    return parse(p, dst, argc, argv, NULL, 0, err, err_size);
}

int cli_parse_unknown(const cli_program *p, void *dst, int argc, char *const argv[], const char **rest,
                      int rest_max, char *err, size_t err_size) {
    return parse(p, dst, argc, argv, rest, rest_max, err, err_size);
}

int cli_parse_value(const cli_option *row, const char *text, void *dst, char *err, size_t err_size) {
    if (!row_fits(row)) {
        snprintf(err, err_size, "%s cannot be stored in a field of %zu bytes", row->name, row->size);
        return -1;
    }
    return take_value(row, text, dst, err, err_size);
}

int cli_given(int argc, char *const argv[], const char *name) {
    size_t n = strlen(name);
    for (int i = 1; i < argc; i++)
        if (!strncmp(argv[i], name, n) && (argv[i][n] == 0 || argv[i][n] == '=')) return 1;
    return 0;
}

int cli_named(const cli_program *p, int argc, char *const argv[], const char *name) {
    for (int i = 1; i < argc; i++) {
        const cli_option *r = row_of(p, argv[i]);
        if (r && !strcmp(r->name, name)) return 1;
        i += value_follows(r, argc, argv, i);
    }
    return 0;
}

void cli_parse_or_exit(const cli_program *p, void *dst, int argc, char **argv) {
    char err[1024];
    int rc = cli_parse(p, dst, argc, argv, err, sizeof err);
    if (rc == 1) exit(0);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", p->name, err);
        exit(2);
    }
}

/* Prints `text` from column `col` on, wrapping at word boundaries under HELP_WIDTH. */
static void wrapped(FILE *f, int col, const char *text) {
    int at = col;
    while (*text) {
        size_t word = strcspn(text, " ");
        if (at > col && at + 1 + (int)word > HELP_WIDTH) {
            fprintf(f, "\n%*s", col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', f);
            at++;
        }
        fprintf(f, "%.*s", (int)word, text);
        at += (int)word;
        text += word;
        while (*text == ' ') text++;
    }
    fputc('\n', f);
}

static void usage_line(FILE *f, const char *name, const char *arg, const char *help, const char *values,
                       const char *fallback) {
    char left[256], text[4096];
    int n = snprintf(left, sizeof left, "  %s%s%s", name, arg ? " " : "", arg ? arg : "");
    snprintf(text, sizeof text, "%s%s%s%s%s%s", help, values ? ": one of " : "", values ? values : "",
             fallback ? " (default " : "", fallback ? fallback : "", fallback ? ")" : "");
    if (n >= HELP_COLUMN) fprintf(f, "%s\n%*s", left, HELP_COLUMN, "");
    else fprintf(f, "%-*s", HELP_COLUMN, left);
    wrapped(f, HELP_COLUMN, text);
}

void cli_usage(const cli_program *p, FILE *f) {
    if (p->help_text) {
        fputs(p->help_text, f);
        return;
    }
    fprintf(f, "%s\n", p->synopsis);
    for (const cli_option *r = p->options; r->name; r++) {
        if (r->hidden) continue;
        char choices[512];
        const char *arg = r->arg;
        if (r->kind == CLI_KIND_CHOICE && !arg) {
            join_choices(r->choices, "|", "|", choices, sizeof choices);
            arg = choices;
        }
        usage_line(f, r->name, arg, r->help, r->values ? r->values() : NULL, r->fallback);
    }
    usage_line(f, "--help", NULL, "this text (also -h)", NULL, NULL);
    if (p->epilogue) fprintf(f, "\n%s", p->epilogue);
}

/* --- tables joined from parts ---------------------------------------------------------------- */

static size_t aligned(size_t size) {
    size_t a = _Alignof(max_align_t);
    return (size + a - 1) / a * a;
}

int cli_table_join(cli_table *t, const cli_part *parts, int count, char *err, size_t err_size) {
    memset(t, 0, sizeof *t);
    if (count > CLI_TABLE_PARTS) {
        snprintf(err, err_size, "an option table of %d parts; at most %d", count, CLI_TABLE_PARTS);
        return -1;
    }
    size_t rows = 1, size = 0;
    for (int k = 0; k < count; k++) {
        for (const cli_option *r = parts[k].rows; r && r->name; r++) rows++;
        if (parts[k].size) {
            t->offset[k] = size;
            size += aligned(parts[k].size);
        } else if (parts[k].into < 0 || parts[k].into >= k) {
            snprintf(err, err_size, "option table part %d stores into part %d, not an earlier one", k, parts[k].into);
            return -1;
        } else {
            t->offset[k] = t->offset[parts[k].into];
        }
    }
    t->rows = calloc(rows, sizeof *t->rows);
    t->storage = calloc(1, size ? size : 1);
    if (!t->rows || !t->storage) {
        cli_table_free(t);
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (int k = 0; k < count; k++)
        for (const cli_option *r = parts[k].rows; r && r->name; r++) {
            cli_option *copy = &t->rows[n++];
            *copy = *r;
            copy->offset += t->offset[k];
            if (copy->marks) copy->mark += t->offset[k];
        }
    return 0;
}

void cli_table_free(cli_table *t) {
    free(t->rows);
    free(t->storage);
    memset(t, 0, sizeof *t);
}

const cli_option *cli_row(const cli_option *rows, const char *name) {
    for (const cli_option *r = rows; r && r->name; r++)
        if (!strcmp(r->name, name)) return r;
    return NULL;
}

/* --- values as JSON -------------------------------------------------------------------------- */

static long long load_int(const void *field, size_t size) {
    return size == sizeof(int32_t) ? *(const int32_t *)field : *(const int64_t *)field;
}

cJSON *cli_value_json(const cli_option *r, const void *values, int with_zero) {
    const unsigned char *field = (const unsigned char *)values + r->offset;
    size_t b = 0;
    while (b < r->size && !field[b]) b++;
    if (b == r->size && !with_zero) return NULL;
    if (b == r->size && r->kind == CLI_KIND_STR) return cJSON_CreateNull();
    switch (r->kind) {
    case CLI_KIND_FLAG: return cJSON_CreateBool(b < r->size);
    case CLI_KIND_INT: return cJSON_CreateNumber((double)load_int(field, r->size));
    case CLI_KIND_REAL:
        return cJSON_CreateNumber(r->size == sizeof(float) ? *(const float *)field : *(const double *)field);
    case CLI_KIND_TEXT: return cJSON_CreateString((const char *)field);
    case CLI_KIND_STR: return cJSON_CreateString(*(const char *const *)field);
    case CLI_KIND_CHOICE:
        for (const cli_choice *c = r->choices; c->name; c++)
            if (c->value == load_int(field, r->size)) return cJSON_CreateString(c->name);
        return with_zero ? cJSON_CreateNull() : NULL;
    default: return NULL;
    }
}

int cli_value_from_json(const cli_option *r, void *values, const cJSON *item,
                        const char *(*keep)(void *ctx, const char *text), void *ctx, char *err, size_t err_size) {
    char text[64], what[512];
    const char *value = text;
    int typed;
    switch (r->kind) {
    case CLI_KIND_FLAG:
        if (!cJSON_IsBool(item)) break;
        store_int((char *)values + r->offset, r->size, cJSON_IsTrue(item) ? (long long)r->lo : 0);
        return 0;
    case CLI_KIND_INT:
        typed = cJSON_IsNumber(item) && item->valuedouble == floor(item->valuedouble) && fabs(item->valuedouble) < 9e15;
        if (typed) snprintf(text, sizeof text, "%lld", (long long)item->valuedouble);
        else if (cJSON_IsNumber(item)) snprintf(text, sizeof text, "%.17g", item->valuedouble);
        else break;
        return take_value(r, value, values, err, err_size);
    case CLI_KIND_REAL:
        if (!cJSON_IsNumber(item)) break;
        snprintf(text, sizeof text, "%.17g", item->valuedouble);
        return take_value(r, value, values, err, err_size);
    default:
        if (!cJSON_IsString(item)) break;
        value = r->kind == CLI_KIND_STR ? keep(ctx, item->valuestring) : item->valuestring;
        if (!value) {
            snprintf(err, err_size, "%s: out of memory", r->name);
            return -1;
        }
        return take_value(r, value, values, err, err_size);
    }
    if (r->kind == CLI_KIND_FLAG) {
        snprintf(what, sizeof what, "true or false");
    } else if (r->kind == CLI_KIND_INT || r->kind == CLI_KIND_REAL) {
        expects(r, what, sizeof what);
    } else {
        char kind[480];
        expects(r, kind, sizeof kind);
        snprintf(what, sizeof what, "a string (%s)", kind);
    }
    char *shown = cJSON_PrintUnformatted(item);
    snprintf(err, err_size, "%s: expected %s, got %s", r->name, what, shown ? shown : "nothing");
    cJSON_free(shown);
    return -1;
}

cJSON *cli_values_json(const cli_option *rows, const void *values) {
    cJSON *o = cJSON_CreateObject();
    for (const cli_option *r = rows; r && r->name; r++) {
        cJSON *v = cli_value_json(r, values, 0);
        if (v) cJSON_AddItemToObject(o, r->name, v);
    }
    return o;
}

int cli_values_from_json(const cli_option *rows, void *values, const cJSON *object,
                         const char *(*keep)(void *ctx, const char *text), void *ctx, char *err, size_t err_size) {
    if (!cJSON_IsObject(object)) {
        snprintf(err, err_size, "expected an object of options");
        return -1;
    }
    if (cli_fallbacks(rows, values, err, err_size) != 0) return -1;
    for (const cJSON *item = object->child; item; item = item->next) {
        const cli_option *r = cli_row(rows, item->string);
        if (!r) {
            snprintf(err, err_size, "%s: no such option here", item->string);
            return -1;
        }
        if (cli_value_from_json(r, values, item, keep, ctx, err, err_size) != 0) return -1;
    }
    return 0;
}
