#include "runner/cli.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
static int help_asked(const cli_program *p, int argc, char *const argv[]) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return 1;
        i += value_follows(row_of(p, argv[i]), argc, argv, i);
    }
    return 0;
}

static int parse_words(const cli_program *p, void *dst, int argc, char *const argv[], const char **rest,
                       int rest_max, unsigned char *given, char *err, size_t err_size);

/* cli_parse and cli_parse_forward: with rest NULL, a word no row names is an error. */
static int parse(const cli_program *p, void *dst, int argc, char *const argv[], const char **rest, int rest_max,
                 char *err, size_t err_size) {
    for (const cli_option *r = p->options; r->name; r++) {
        if (!row_fits(r)) {
            snprintf(err, err_size, "%s's option table: %s cannot be stored in a field of %zu bytes", p->name,
                     r->name, r->size);
            return -1;
        }
        if (p->help_text && !mentions(p->help_text, r->name)) {
            snprintf(err, err_size, "%s's option table: %s is missing from its help text", p->name, r->name);
            return -1;
        }
        if (r->fallback && take_value(r, r->fallback, dst, err, err_size) != 0) return -1;
    }
    if (help_asked(p, argc, argv)) {
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
        if (rest && (!r || r->forward)) {
            int words = 1 + value_follows(r, argc, argv, i);
            if (passed + words >= rest_max) {
                snprintf(err, err_size, "more than %d arguments to pass on", rest_max - 1);
                return -1;
            }
            for (int k = 0; k < words; k++) rest[passed++] = argv[i + k];
            rest[passed] = NULL;
            if (!r) {
                i += words - 1;
                continue;
            }
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

int cli_parse(const cli_program *p, void *dst, int argc, char **argv, char *err, size_t err_size) {
    return parse(p, dst, argc, argv, NULL, 0, err, err_size);
}

int cli_parse_forward(const cli_program *p, void *dst, int argc, char *const argv[], const char **rest,
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
