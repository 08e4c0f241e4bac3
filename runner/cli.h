/* Command lines from one table per program: each row declares an option once (name, argument,
 * help, how its value is checked and where it is stored) and the same table drives the parser and
 * `--help`, so the two cannot drift apart.
 *
 * A row, in a program's `static const cli_option OPTIONS[]` ending with {0}:
 *
 *   {"--batch", "N", "samples per step", CLI_INT(train_options, batch, 1, 65536), .fallback = "128"},
 *    name       arg  help (one line;      kind, destination field and check      optional parts
 *                   wrapped by --help)
 *
 * Kinds (T is the struct cli_parse fills, f a field of it):
 *   CLI_FLAG(T, f, v)         no value; sets the int f to v (1, or 0 for a --no-... switch)
 *   CLI_INT(T, f, lo, hi)     whole number in [lo, hi] into an int, long or int64_t/uint64_t field
 *   CLI_REAL(T, f, lo, hi)    finite number in [lo, hi] into a float or double field
 *   CLI_TEXT(T, f)            copied into the char array f (1 to sizeof f - 1 characters)
 *   CLI_STR(T, f)             the const char *f points at the argument itself (argv outlives it)
 *   CLI_CHOICE(T, f, list)    one of a cli_choice list {{"sgd", OPTIMIZER_SGD}, ..., {0}}: its value
 *                             into the int/enum f; --help shows the names as the argument
 * Optional parts: .fallback = "text" (the default, parsed like a given value before argv, shown in
 * --help), CLI_MARK(T, g) (sets the int g to 1 when the option is given on the command line),
 * .values = f (f() names the accepted values at run time, e.g. a table's names; --help appends
 * "one of <f()>"; checking them stays with the caller, which owns the table), .hidden = 1 (parsed,
 * never shown by --help: an option between the suite's own processes).
 *
 * The tables write `#define T <struct>` before the rows and `#undef T` after them.
 *
 * Bad values fail with one message shape per kind, naming the option and what it expects:
 * "--batch: expected a whole number from 1 to 65536, got '0' (less than 1)". Numbers follow the
 * rule every grammar of the suite follows (base/number.h: decimal only, no '+', no blanks, a value
 * out of range said to be). An empty value is bad for every kind, and an option given twice is
 * refused ("--batch given twice"), not overwritten, a flag as much as an option with a value (no
 * program has an option that gathers a list by repeating). --help and -h are built in and win
 * wherever they stand on the line: the help is printed and nothing else is read.
 * A new train or run_suite option also needs its line in that program's option table in
 * README.md: tests/runner/test_cli_help.c compares the two. */
#ifndef SUITE_CLI_H
#define SUITE_CLI_H

#include <stddef.h>
#include <stdio.h>

typedef enum { CLI_KIND_FLAG = 1, CLI_KIND_INT, CLI_KIND_REAL, CLI_KIND_TEXT, CLI_KIND_STR, CLI_KIND_CHOICE } cli_kind;

typedef struct cli_choice {
    const char *name;
    int value;
} cli_choice;

typedef struct cli_option {
    const char *name; /* "--batch" */
    const char *arg;  /* the value's name in --help ("N", "DIR"); NULL for flags and choices */
    const char *help;
    cli_kind kind;
    size_t offset, size;      /* the destination field in the struct cli_parse fills */
    double lo, hi;            /* CLI_INT, CLI_REAL: the accepted range; CLI_FLAG: lo is the value set */
    const cli_choice *choices;
    const char *fallback;
    const char *(*values)(void);
    int marks;                /* with CLI_MARK: */
    size_t mark;              /* offset of the int set to 1 when given */
    int hidden;               /* not in --help */
} cli_option;

#define CLI_FIELD_(T, f) .offset = offsetof(T, f), .size = sizeof(((T *)0)->f)
#define CLI_FLAG(T, f, v) .kind = CLI_KIND_FLAG, CLI_FIELD_(T, f), .lo = (v)
#define CLI_INT(T, f, l, h) .kind = CLI_KIND_INT, CLI_FIELD_(T, f), .lo = (l), .hi = (h)
#define CLI_REAL(T, f, l, h) .kind = CLI_KIND_REAL, CLI_FIELD_(T, f), .lo = (l), .hi = (h)
#define CLI_TEXT(T, f) .kind = CLI_KIND_TEXT, CLI_FIELD_(T, f)
#define CLI_STR(T, f) .kind = CLI_KIND_STR, CLI_FIELD_(T, f)
#define CLI_CHOICE(T, f, list) .kind = CLI_KIND_CHOICE, CLI_FIELD_(T, f), .choices = (list)
#define CLI_MARK(T, g) .marks = 1, .mark = offsetof(T, g)
/* .fallback = CLI_TEXT_OF(MACRO): a default kept in a numeric macro, as text */
#define CLI_TEXT_OF_(x) #x
#define CLI_TEXT_OF(x) CLI_TEXT_OF_(x)

typedef struct cli_program {
    const char *name;          /* in messages: "unknown option '--x' (train --help lists them)" */
    const char *synopsis;      /* --help's first lines, "usage: ..." */
    const char *epilogue;      /* after the options (exit status, notes); may be NULL */
    const cli_option *options; /* ends with a row whose name is NULL */
    const char *help_text;     /* NULL, or the whole --help laid out by hand (run_suite --study's, which
                                  scripts read as it is); cli_parse refuses a table with a row it does
                                  not name, so the two cannot drift apart either */
} cli_program;

/* Fills `dst` (the struct the rows point into; the caller sets what no fallback covers first).
 * 0 on success; -1 with a message in err (the caller exits 2); 1 when --help was asked (usage
 * already printed to stdout). Values come as "--opt value" or "--opt=value"; an argument that
 * starts with "--" is never taken as a value ("--epochs --quick": --epochs misses its value). */
int cli_parse(const cli_program *p, void *dst, int argc, char **argv, char *err, size_t err_size);

/* cli_parse with the words no row names collected in rest instead of refused (an unknown "--opt"
 * with the word after it unless that starts with "--"; any other unknown word alone), in argv order
 * and as written, NULL-terminated, at most rest_max - 1 of them (more is an error): a program form
 * that names what does not go with it (run_suite --study), or one that takes words of its own (the
 * report's folders). */
int cli_parse_unknown(const cli_program *p, void *dst, int argc, char *const argv[], const char **rest,
                      int rest_max, char *err, size_t err_size);

/* Each row's fallback into dst, as cli_parse does first: the defaults of rows a program form does
 * not parse but whose fields it holds. 0, or -1 with a message (a fallback the row refuses). */
int cli_fallbacks(const cli_option *rows, void *dst, char *err, size_t err_size);

/* One value checked and stored as cli_parse does it for `row` (its kind, its range, the same rule
 * and message shape), for a value that comes from elsewhere than a command line: an environment variable's,
 * with the row named after the variable ("RANK: expected a whole number from 0 to 3, got '4'").
 * 0, or -1 with the message. */
int cli_parse_value(const cli_option *row, const char *text, void *dst, char *err, size_t err_size);

/* 1 when argv holds the option `name` ("--nesterov") as a word of its own or as "name=value". */
int cli_given(int argc, char *const argv[], const char *name);
/* 1 when argv names p's row `name` ("--study", or "--study=SET"), its words read as cli_parse reads
 * them: a row's value is never taken for an option. */
int cli_named(const cli_program *p, int argc, char *const argv[], const char *name);
/* 1 when argv holds --help or -h as a word of its own (cli_parse would print the help). */
int cli_help_asked(const cli_program *p, int argc, char *const argv[]);

/* cli_parse for a program's main with nothing to clean up: returns only on success; after --help
 * it exits 0, on bad input it prints "<name>: <message>" to stderr and exits 2. */
void cli_parse_or_exit(const cli_program *p, void *dst, int argc, char **argv);

/* The synopsis, one line per option (wrapped to 100 columns) and the epilogue; or the help_text. */
void cli_usage(const cli_program *p, FILE *f);

/* One table from rows declared in several places: each part's rows store into a struct of its own
 * (size bytes), or with size 0 into the struct of an earlier part (into: its index); the joined
 * rows, in part order, store into one zeroed block where part k's struct starts at offset[k]. */
#define CLI_TABLE_PARTS 32
typedef struct cli_part {
    const cli_option *rows;       /* ending with {0} */
    size_t size;
    int into;
} cli_part;
typedef struct cli_table {
    cli_option *rows;             /* ending with {0} */
    void *storage;
    size_t offset[CLI_TABLE_PARTS];
} cli_table;
/* 0, or -1 with a message (out of memory, too many parts, a part stored into a later one). */
int cli_table_join(cli_table *t, const cli_part *parts, int count, char *err, size_t err_size);
void cli_table_free(cli_table *t);
/* The row of the table named `name`, or NULL. */
const cli_option *cli_row(const cli_option *rows, const char *name);

/* A row's value as JSON, for a file that carries what the rows hold (a request between processes):
 * a flag true or false, a number, a choice's name, text as a string. Where the field is all zero
 * bytes (not set): with_zero, the kind's zero (false, 0, null, the choice of value 0); else NULL. */
struct cJSON;
struct cJSON *cli_value_json(const cli_option *r, const void *values, int with_zero);
/* Back into values: a JSON value of the row's kind, checked as the command line's would be (range,
 * choice; a flag is true or false). Text is stored through keep(ctx, text), which returns a copy
 * that lives as long as values (NULL: out of memory). 0, or -1 with "<name>: expected ..." in err. */
int cli_value_from_json(const cli_option *r, void *values, const struct cJSON *item,
                        const char *(*keep)(void *ctx, const char *text), void *ctx, char *err, size_t err_size);
/* Every row of rows that is set, as one object keyed by the rows' names; and back: the fallbacks
 * first, then each key through its row (a key no row names is an error). */
struct cJSON *cli_values_json(const cli_option *rows, const void *values);
int cli_values_from_json(const cli_option *rows, void *values, const struct cJSON *object,
                         const char *(*keep)(void *ctx, const char *text), void *ctx, char *err, size_t err_size);

#endif
