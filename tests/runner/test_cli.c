/* runner/cli.c on a table of every kind: values stored in fields of each width, defaults, marks,
 * "--opt=value", and one message shape per kind of bad input; --help lists every row and wins
 * wherever it stands; the words no row names (cli_parse_unknown) keep their words and order; rows
 * named (cli_named); a help laid out by hand is printed as it is and must name every row; tables
 * joined from parts; values to JSON and back through their rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "runner/cli.h"
#include "tests/support/testutil.h"

typedef struct args {
    int flag, off, count, count_given, color;
    long big;
    int64_t wide;
    float rate;
    double seconds;
    char name[8];
    const char *path;
} args;

static const cli_choice COLORS[] = {{"red", 7}, {"green", 8}, {"blue", 9}, {0}};

static const cli_option OPTIONS[] = {
    {"--flag", NULL, "a switch", CLI_FLAG(args, flag, 1)},
    {"--no-off", NULL, "clears off", CLI_FLAG(args, off, 0)},
    {"--count", "N", "a small count", CLI_INT(args, count, 1, 10), .fallback = "3", CLI_MARK(args, count_given)},
    {"--big", "N", "a long", CLI_INT(args, big, 0, 1LL << 40)},
    {"--wide", "N", "an int64_t", CLI_INT(args, wide, -5, 1LL << 50)},
    {"--rate", "X", "a float", CLI_REAL(args, rate, 0, 1), .fallback = "0.5"},
    {"--seconds", "S", "a double", CLI_REAL(args, seconds, 0, 1e6)},
    {"--name", "TEXT", "copied", CLI_TEXT(args, name)},
    {"--path", "PATH", "pointed at", CLI_STR(args, path)},
    {"--color", NULL, "a choice", CLI_CHOICE(args, color, COLORS), .fallback = "green"},
    {0}};

static const cli_program PROGRAM = {.name = "prog", .synopsis = "usage: prog [options]",
                                    .epilogue = "the end\n", .options = OPTIONS};

static char err[512];

static int parse(args *a, const char *const *argv) {
    int argc = 0;
    while (argv[argc]) argc++;
    memset(a, 0, sizeof *a);
    a->off = 1;
    err[0] = 0;
    return cli_parse(&PROGRAM, a, argc, (char **)argv, err, sizeof err);
}
#define PARSE(a, ...) parse(a, (const char *const[]){"prog", __VA_ARGS__, NULL})

static void test_defaults(void **state) {
    args a;
    assert_int_equal(parse(&a, (const char *const[]){"prog", NULL}), 0);
    assert_int_equal(a.count, 3);
    assert_int_equal(a.count_given, 0); /* a default is not "given" */
    expect_eq(a.rate, 0.5f);
    assert_int_equal(a.color, 8);
    assert_int_equal(a.off, 1);
    assert_null(a.path);
}

static void test_values(void **state) {
    args a;
    assert_int_equal(PARSE(&a, "--flag", "--no-off", "--count", "10", "--big", "1099511627776", "--wide=-5",
                           "--rate", "1e-1", "--seconds=86400.5", "--name", "abcdefg", "--path", "/x y",
                           "--color", "blue"), 0);
    assert_int_equal(a.flag, 1);
    assert_int_equal(a.off, 0);
    assert_int_equal(a.count, 10);
    assert_int_equal(a.count_given, 1);
    expect_eq(a.big, 1099511627776L);
    expect_eq(a.wide, -5);
    expect_eq(a.rate, 0.1f);
    expect_eq(a.seconds, 86400.5);
    assert_string_equal(a.name, "abcdefg");
    assert_string_equal(a.path, "/x y");
    assert_int_equal(a.color, 9);
    assert_int_equal(PARSE(&a, "--count", "2", "--count", "4"), -1); /* refused, not overwritten */
    assert_non_null(strstr(err, "--count given twice"));
    assert_int_equal(PARSE(&a, "--count", "2", "--count=2"), -1);
    assert_non_null(strstr(err, "--count given twice"));
}

static void expect_error(const char *message, const char *const *argv) {
    args a;
    int rc = parse(&a, argv);
    if (rc != -1 || strcmp(err, message) != 0)
        fail_msg("%s %s: rc %d, '%s' (expected '%s')", argv[1], argv[2] ? argv[2] : "", rc, err, message);
}
#define EXPECT_ERROR(message, ...) expect_error(message, (const char *const[]){"prog", __VA_ARGS__, NULL})

static void test_errors(void **state) {
    EXPECT_ERROR("--count: expected a whole number from 1 to 10, got '0' (less than 1)", "--count", "0");
    EXPECT_ERROR("--count: expected a whole number from 1 to 10, got '2.5' (not a whole number)", "--count", "2.5");
    EXPECT_ERROR("--count: expected a whole number from 1 to 10, got ''", "--count=");
    EXPECT_ERROR("--count: expected a whole number from 1 to 10; missing its value", "--count");
    EXPECT_ERROR("--count: expected a whole number from 1 to 10; missing its value", "--count", "--flag");
    EXPECT_ERROR("--big: expected a whole number from 0 to 1099511627776, got '99999999999999999999' (more than "
                 "1099511627776)", "--big",
                 "99999999999999999999");
    EXPECT_ERROR("--rate: expected a number from 0 to 1, got 'nan' (not a finite number)", "--rate", "nan");
    EXPECT_ERROR("--rate: expected a number from 0 to 1, got '1.5' (more than 1)", "--rate", "1.5");
    /* the number rule of every grammar (base/number.h): decimal only, no sign '+', no blanks */
    EXPECT_ERROR("--seconds: expected a number from 0 to 1e+06, got '0x10' (hexadecimal is not read: decimal only)",
                 "--seconds", "0x10");
    EXPECT_ERROR("--count: expected a whole number from 1 to 10, got ' 3' (blanks are not read)", "--count", " 3");
    EXPECT_ERROR("--count: expected a whole number from 1 to 10, got '+3' (no sign '+')", "--count", "+3");
    EXPECT_ERROR("--count: expected a whole number from 1 to 10, got '03' (a leading zero: decimal digits from the "
                 "first nonzero one)", "--count", "03");
    EXPECT_ERROR("--name: expected a value of 1 to 7 characters, got 'a\\x1b[31mbcdefgh'", "--name", "a\x1b[31mbcdefgh");
    EXPECT_ERROR("--name: expected a value of 1 to 7 characters, got 'abcdefgh'", "--name", "abcdefgh");
    EXPECT_ERROR("--color: expected red, green or blue, got 'pink'", "--color", "pink");
    EXPECT_ERROR("unknown option '--colour' (prog --help lists them)", "--colour", "red");
    EXPECT_ERROR("unknown option 'stray' (prog --help lists them)", "stray");
    EXPECT_ERROR("--flag takes no value (got '--flag=1')", "--flag=1");
}

typedef struct narrow {
    short s;
} narrow;

/* A row whose field cannot hold what its kind stores is refused before any argument is read. */
static void test_table_mistake(void **state) {
    static const cli_option bad[] = {{"--s", "N", "too narrow", CLI_INT(narrow, s, 0, 9)}, {0}};
    static const cli_program p = {.name = "bad", .synopsis = "usage: bad", .options = bad};
    narrow n;
    char *argv[] = {"bad", NULL};
    assert_int_equal(cli_parse(&p, &n, 1, argv, err, sizeof err), -1);
    assert_non_null(strstr(err, "--s cannot be stored in a field of 2 bytes"));
}

/* --help is read before anything else: a bad value or an unknown word earlier on the line does not
 * hide it; a value that reads "-h" is a value. */
static void test_help_anywhere(void **state) {
    args a;
    FILE *saved = stdout;
    stdout = fopen("/dev/null", "w");
    int bad_first = PARSE(&a, "--count", "0", "--colour", "--help");
    int short_form = PARSE(&a, "stray", "-h");
    int as_value = PARSE(&a, "--name", "-h");
    fclose(stdout);
    stdout = saved;
    assert_int_equal(bad_first, 1);
    assert_int_equal(short_form, 1);
    assert_int_equal(as_value, 0);
    assert_string_equal(a.name, "-h");
}

/* A table for a program that names what does not go with it: the words no row names are collected,
 * an unknown option with its value (the next word, unless it starts with "--"). */
static const cli_option KNOWN[] = {
    {"--count", "N", "read", CLI_INT(args, count, 1, 10)},
    {"--flag", NULL, "read", CLI_FLAG(args, flag, 1)},
    {"--path", "PATH", "read", CLI_STR(args, path)},
    {0}};
static const cli_program NAMER = {.name = "pick", .synopsis = "usage: pick", .options = KNOWN};

static void test_unknown(void **state) {
    char *argv[] = {"pick", "--other", "x", "--count=4", "--path", "/p", "--switch", "--flag", "--set=y",
                    "--more", "5", "word", "--last", NULL};
    const char *rest[16];
    args a;
    memset(&a, 0, sizeof a);
    assert_int_equal(cli_parse_unknown(&NAMER, &a, 13, argv, rest, 16, err, sizeof err), 0);
    const char *expected[] = {"--other", "x", "--switch", "--set=y", "--more", "5", "word", "--last", NULL};
    for (int i = 0; expected[i]; i++) assert_string_equal(rest[i], expected[i]);
    assert_null(rest[8]);
    assert_int_equal(a.count, 4);
    assert_int_equal(a.flag, 1);
    assert_string_equal(a.path, "/p");
    /* a bad value of a row is still refused */
    char *bad[] = {"pick", "--other", "--count=0", NULL};
    assert_int_equal(cli_parse_unknown(&NAMER, &a, 3, bad, rest, 16, err, sizeof err), -1);
    assert_string_equal(err, "--count: expected a whole number from 1 to 10, got '0' (less than 1)");
    /* no room for every word: refused, not cut */
    assert_int_equal(cli_parse_unknown(&NAMER, &a, 13, argv, rest, 8, err, sizeof err), -1);
    assert_string_equal(err, "more than 7 words no option names");
    /* cli_parse collects nothing: an unknown option is an error there */
    assert_int_equal(cli_parse(&NAMER, &a, 13, argv, err, sizeof err), -1);
    assert_string_equal(err, "unknown option '--other' (pick --help lists them)");
}

/* cli_named reads the words as the parser does: "--opt=value" names it, a row's value never does,
 * and a name is whole ("--gp" is not "--gpus"). */
static void test_named(void **state) {
    static const cli_option rows[] = {{"--gpus", "LIST", "", CLI_STR(args, path)}, {"--gpu", "N", "", CLI_INT(args, count, 0, 9)},
                                      {"--study", "SET", "", CLI_STR(args, path)}, {0}};
    static const cli_program p = {.name = "named", .options = rows};
    char *argv[] = {"prog", "--gpus=0,1", "--study", "small", "--gpu", "3", "-h", NULL};
    assert_true(cli_named(&p, 7, argv, "--gpus"));
    assert_true(cli_named(&p, 7, argv, "--study"));
    assert_true(cli_named(&p, 7, argv, "--gpu"));
    assert_false(cli_named(&p, 7, argv, "--gp"));
    assert_false(cli_named(&p, 7, argv, "--slurm"));
    assert_true(cli_help_asked(&p, 7, argv));
    char *as_value[] = {"prog", "--unknown", "word", "--gpu", "3", NULL};
    assert_false(cli_named(&p, 5, as_value, "--study"));
    assert_false(cli_help_asked(&p, 5, as_value));
}

/* A help laid out by hand is printed as it is; a row it does not name is a mistake in the table. */
static void test_help_text(void **state) {
    static const cli_option rows[] = {{"--set", "SET", NULL, CLI_STR(args, path)},
                                      {"--flag", NULL, NULL, CLI_FLAG(args, flag, 1)}, {0}};
    static const cli_program named = {.name = "hand", .options = rows,
                                      .help_text = "usage: hand --set SET [--flag]\n"};
    static const cli_program missing = {.name = "hand", .options = rows,
                                        .help_text = "usage: hand --set SET [--flags]\n"};
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    cli_usage(&named, f);
    fclose(f);
    assert_string_equal(text, "usage: hand --set SET [--flag]\n");
    free(text);
    args a;
    char *argv[] = {"hand", "--set=x", NULL};
    assert_int_equal(cli_parse(&named, &a, 2, argv, err, sizeof err), 0);
    assert_string_equal(a.path, "x");
    assert_int_equal(cli_parse(&missing, &a, 2, argv, err, sizeof err), -1);
    assert_string_equal(err, "hand's option table: --flag is missing from its help text");
}

/* Parts joined into one table: each part's rows store into its own struct in one block, a part of
 * size 0 into an earlier one's; a hidden row parses but --help leaves it out. */
typedef struct part_b {
    int level;
    const char *where;
} part_b;

static void test_join(void **state) {
    static const cli_option a_rows[] = {{"--count", "N", "a's", CLI_INT(args, count, 1, 10), .fallback = "3"}, {0}};
    static const cli_option b_rows[] = {{"--level", "N", "b's", CLI_INT(part_b, level, 0, 9)},
                                        {"--where", "DIR", "b's, unseen", CLI_STR(part_b, where), .hidden = 1}, {0}};
    static const cli_option more_a[] = {{"--flag", NULL, "a's too", CLI_FLAG(args, flag, 1)}, {0}};
    const cli_part parts[] = {{a_rows, sizeof(args), 0}, {b_rows, sizeof(part_b), 0}, {more_a, 0, 0}};
    cli_table t;
    assert_int_equal(cli_table_join(&t, parts, 3, err, sizeof err), 0);
    assert_int_equal(t.offset[2], t.offset[0]);
    cli_program p = {.name = "joined", .synopsis = "usage: joined", .options = t.rows};
    char *argv[] = {"joined", "--level", "4", "--flag", "--where", "/w", NULL};
    assert_int_equal(cli_parse(&p, t.storage, 6, argv, err, sizeof err), 0);
    const args *a = t.storage;
    const part_b *b = (const part_b *)((const char *)t.storage + t.offset[1]);
    assert_int_equal(a->count, 3);
    assert_int_equal(a->flag, 1);
    assert_int_equal(b->level, 4);
    assert_string_equal(b->where, "/w");
    assert_non_null(cli_row(t.rows, "--where"));
    assert_null(cli_row(t.rows, "--nowhere"));
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    cli_usage(&p, f);
    fclose(f);
    assert_non_null(strstr(text, "--level"));
    assert_null(strstr(text, "--where"));
    free(text);
    cli_table_free(&t);
    const cli_part later[] = {{a_rows, 0, 1}, {b_rows, sizeof(part_b), 0}};
    assert_int_equal(cli_table_join(&t, later, 2, err, sizeof err), -1);
}

static const char *keep_copy(void *ctx, const char *text) {
    (void)ctx;
    static char kept[4][64];
    static int n;
    return strcpy(kept[n++ % 4], text);
}

/* Every kind of row as JSON and back, checked as the command line would be. */
static void test_json(void **state) {
    args a, back;
    assert_int_equal(PARSE(&a, "--flag", "--count", "7", "--big", "1099511627776", "--rate", "0.25", "--name", "ab",
                           "--path", "/p", "--color", "blue", "--seconds", "2.5"), 0);
    cJSON *j = cli_values_json(OPTIONS, &a);
    memset(&back, 0, sizeof back);
    back.off = 1;
    assert_int_equal(cli_values_from_json(OPTIONS, &back, j, keep_copy, NULL, err, sizeof err), 0);
    assert_int_equal(back.flag, 1);
    assert_int_equal(back.count, 7);
    assert_int_equal(back.big, 1099511627776L);
    assert_true(back.rate == 0.25f && back.seconds == 2.5);
    assert_string_equal(back.name, "ab");
    assert_string_equal(back.path, "/p");
    assert_int_equal(back.color, 9);
    assert_null(cJSON_GetObjectItemCaseSensitive(j, "--wide")); /* not set: left out */
    assert_string_equal(cJSON_GetObjectItemCaseSensitive(j, "--color")->valuestring, "blue");
    cJSON_Delete(j);
    /* the kind's zero where asked for it */
    memset(&a, 0, sizeof a);
    j = cli_value_json(cli_row(OPTIONS, "--flag"), &a, 1);
    assert_true(cJSON_IsFalse(j));
    cJSON_Delete(j);
    j = cli_value_json(cli_row(OPTIONS, "--path"), &a, 1);
    assert_true(cJSON_IsNull(j));
    cJSON_Delete(j);
    /* a value of the wrong kind, out of range, or an unknown option */
    const struct { const char *json, *message; } bad[] = {
        {"{\"--count\": 11}", "--count: expected a whole number from 1 to 10, got '11' (more than 10)"},
        {"{\"--count\": 2.5}", "--count: expected a whole number from 1 to 10, got '2.5' (not a whole number)"},
        {"{\"--count\": \"2\"}", "--count: expected a whole number from 1 to 10, got \"2\""},
        {"{\"--flag\": 1}", "--flag: expected true or false, got 1"},
        {"{\"--color\": \"pink\"}", "--color: expected red, green or blue, got 'pink'"},
        {"{\"--name\": 5}", "--name: expected a string (a value of 1 to 7 characters), got 5"},
        {"{\"--hue\": 5}", "--hue: no such option here"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *one = cJSON_Parse(bad[i].json);
        assert_int_equal(cli_values_from_json(OPTIONS, &back, one, keep_copy, NULL, err, sizeof err), -1);
        assert_string_equal(err, bad[i].message);
        cJSON_Delete(one);
    }
}

static void test_usage(void **state) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    cli_usage(&PROGRAM, f);
    fclose(f);
    assert_non_null(strstr(text, "usage: prog [options]\n"));
    assert_non_null(strstr(text, "  --count N               a small count (default 3)\n"));
    assert_non_null(strstr(text, "  --color red|green|blue  a choice (default green)\n"));
    assert_non_null(strstr(text, "  --flag                  a switch\n"));
    assert_non_null(strstr(text, "  --help                  this text (also -h)\n"));
    assert_non_null(strstr(text, "\nthe end\n"));
    for (const cli_option *r = OPTIONS; r->name; r++) {
        char line[64];
        snprintf(line, sizeof line, "\n  %s", r->name);
        assert_non_null(strstr(text, line));
    }
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),   cmocka_unit_test(test_values), cmocka_unit_test(test_errors),
        cmocka_unit_test(test_table_mistake), cmocka_unit_test(test_usage), cmocka_unit_test(test_help_anywhere),
        cmocka_unit_test(test_unknown),    cmocka_unit_test(test_named),  cmocka_unit_test(test_help_text),
        cmocka_unit_test(test_join),       cmocka_unit_test(test_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
