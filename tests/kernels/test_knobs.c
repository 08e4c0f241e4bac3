/* The environment knobs (kernels/knobs.h): docs/knobs.md's "## Environment knobs" section holds the
 * code's table row for row (its first table the users' knobs, its second the variables the
 * suite's processes pass each other), and on a difference this test prints the rows docs/knobs.md
 * must have; each users' knob's words name the range its kind is checked against; every knob's
 * value is checked by its kind (base/knob_value.h: flags, choices, numbers and sizes by the number
 * rule, paths); no source file reads a SUITE_ variable but through the table; flags keep their
 * meaning ("0" off, "1" on, unset the fallback). */
#define _GNU_SOURCE
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/knob_value.h"
#include "base/number.h"
#include "kernels/knobs.h"
#include "tests/support/testutil.h"

#define SECTION "\n## Environment knobs\n"

static char *read_text(const char *path) {
    char err[512];
    char *text = test_read_text(path, err, sizeof err);
    if (!text) fail_msg("%s", err);
    return text;
}

/* cell with '|' escaped as Markdown wants it inside a table */
static void put_cell(char *row, size_t size, const char *cell) {
    size_t n = strlen(row);
    for (const char *c = cell; *c && n + 3 < size; c++) {
        if (*c == '|') row[n++] = '\\';
        row[n++] = *c;
    }
    row[n] = 0;
    snprintf(row + n, size - n, " |");
}

/* The line of a knob in docs/knobs.md: | `NAME` | values | fallback | meaning | readers | */
static void render_row(const knob *k, char *row, size_t size) {
    snprintf(row, size, "| `%s` |", k->name);
    const char *cells[] = {k->values, k->fallback, k->meaning, k->readers};
    for (int c = 0; c < 4; c++) {
        strncat(row, " ", size - strlen(row) - 1);
        put_cell(row, size, cells[c]);
    }
}

/* The rows of the section's table number `which` (0, 1) into rows[], header and rule left out. */
static int readme_rows(const char *section, int which, char rows[][1024], int max) {
    int table = -1, in_table = 0, n = 0;
    for (const char *line = section; *line;) {
        size_t len = strcspn(line, "\n");
        if (!strncmp(line, "## ", 3)) break;
        if (*line != '|') in_table = 0;
        else if (!in_table) in_table = 1, table++;           /* the header */
        else if (table == which && strncmp(line, "| ---", 5) && n < max)
            snprintf(rows[n++], sizeof rows[0], "%.*s", (int)len, line);
        line += len + (line[len] == '\n');
    }
    return n;
}

/* The knob table's rows of one kind against docs/knobs.md's table `which`. */
static int compare(const char *section, int which, int internal) {
    static char readme[KNOB_COUNT + 8][1024];
    char expected[KNOB_COUNT][1024];
    int n = readme_rows(section, which, readme, KNOB_COUNT + 8), count = 0, differ = 0;
    for (int id = 0; id < KNOB_COUNT; id++)
        if (knob_info(id)->internal == internal) render_row(knob_info(id), expected[count++], sizeof expected[0]);
    for (int i = 0; i < count || i < n; i++)
        if (i >= count || i >= n || strcmp(expected[i], readme[i])) differ = 1;
    if (differ) {
        fprintf(stderr, "docs/knobs.md's %s table of \"## Environment knobs\" differs from kernels/knobs.c; its rows "
                "must be:\n", which ? "second" : "first");
        for (int i = 0; i < count; i++) fprintf(stderr, "%s\n", expected[i]);
    }
    return differ;
}

static void test_readme_table_is_the_code_table(void **state) {
    char *readme = read_text(SUITE_SOURCE_DIR "/docs/knobs.md");
    const char *section = strstr(readme, SECTION);
    if (!section) fail_msg("docs/knobs.md has no section '## Environment knobs'");
    section += strlen(SECTION);
    int differ = compare(section, 0, 0) + compare(section, 1, 1);
    free(readme);
    assert_int_equal(differ, 0);
}

/* The renderer itself: an escaped bar. */
static void test_render_escapes_bars(void **state) {
    knob k = {"SUITE_X", "`a` | `b`", "on", "m", "`train`", 0, KNOB_KIND_TEXT, 0, 0, NULL};
    char row[256];
    render_row(&k, row, sizeof row);
    assert_string_equal(row, "| `SUITE_X` | `a` \\| `b` | on | m | `train` |");
}

static int getenv_reads;

/* A getenv("SUITE_...") anywhere in the programs' sources but knobs.c. */
static int scan_source(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    size_t len = strlen(path);
    if (type != FTW_F || strstr(path, "/kernels/knobs.c") ||
        !((len > 2 && !strcmp(path + len - 2, ".c")) || (len > 2 && !strcmp(path + len - 2, ".h")) ||
          (len > 3 && !strcmp(path + len - 3, ".cu")) || (len > 4 && !strcmp(path + len - 4, ".cuh"))))
        return 0;
    char *text = read_text(path);
    for (const char *p = text; (p = strstr(p, "getenv(\"SUITE_")); p++) {
        const char *name = p + strlen("getenv(\"");
        fprintf(stderr, "%s reads %.*s with getenv: read it through kernels/knobs.h\n", path,
                (int)strcspn(name, "\""), name);
        getenv_reads++;
    }
    free(text);
    return 0;
}

static void test_no_getenv_outside_the_table(void **state) {
    static const char *const folders[] = {"kernels", "models", "data", "results", "runner", "bench"};
    for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", SUITE_SOURCE_DIR, folders[i]);
        assert_int_equal(nftw(path, scan_source, 16, FTW_PHYS), 0);
    }
    assert_int_equal(getenv_reads, 0);
}

/* SUITE_PDL (on unless "0") and SUITE_CONV_LOG (off unless "1") set to value. */
static void expect_flags(const char *value, int pdl, int conv_log) {
    setenv("SUITE_PDL", value, 1);
    setenv("SUITE_CONV_LOG", value, 1);
    assert_int_equal(knob_flag(KNOB_PDL), pdl);
    assert_int_equal(knob_flag(KNOB_CONV_LOG), conv_log);
    unsetenv("SUITE_PDL");
    unsetenv("SUITE_CONV_LOG");
}

static void test_flags(void **state) {
    expect_flags("0", 0, 0);
    expect_flags("1", 1, 1);
    expect_flags("", 1, 0);
    expect_flags("yes", 1, 0);
    expect_flags("00", 1, 0);
    assert_int_equal(knob_flag(KNOB_PDL), 1);
    assert_int_equal(knob_flag(KNOB_WGRAD_LANE), 1);
    assert_int_equal(knob_flag(KNOB_CONV_LOG), 0);
    assert_null(knob_text(KNOB_CONV_LOG));
    assert_null(knob_info(KNOB_COUNT));
}

/* docs/knobs.md's words for a users' knob name what its kind accepts: the range's ends, each choice. */
static void test_values_name_the_range(void **state) {
    for (int id = 0; id < KNOB_COUNT; id++) {
        const knob *k = knob_info(id);
        char lo[48], hi[48];
        if (!k->kind) fail_msg("%s has no kind", k->name);
        if (k->internal) continue;
        switch (k->kind) {
        case KNOB_KIND_FLAG:
            if (strcmp(k->values, "`0` or `1`")) fail_msg("%s: a flag's values are `0` or `1`, not %s", k->name, k->values);
            break;
        case KNOB_KIND_CHOICE:
            for (const char *c = k->choices; c && *c;) {
                size_t n = strcspn(c, "|");
                char word[64];
                snprintf(word, sizeof word, "`%.*s`", (int)n, c);
                if (!strstr(k->values, word)) fail_msg("%s: its values (%s) do not name %s", k->name, k->values, word);
                c += n + (c[n] == '|');
            }
            break;
        case KNOB_KIND_SIZE:
            number_format_size(k->lo, lo, sizeof lo);
            number_format_size(k->hi, hi, sizeof hi);
            goto ends;
        case KNOB_KIND_WHOLE:
        case KNOB_KIND_REAL:
            snprintf(lo, sizeof lo, "%g", k->lo);
            snprintf(hi, sizeof hi, "%g", k->hi);
        ends:
            if (!strstr(k->values, lo) || !strstr(k->values, hi))
                fail_msg("%s: its values (%s) do not name its range %s to %s", k->name, k->values, lo, hi);
            break;
        default: break;
        }
    }
}

/* Each kind's check: what it takes, what it refuses and the message naming the variable. */
static void test_values_checked(void **state) {
    struct { knob_id id; const char *text, *error; } cases[] = {
        {KNOB_PDL, "1", NULL},
        {KNOB_PDL, "yes", "SUITE_PDL: expected 0 or 1, got 'yes'"},
        {KNOB_WGRAD_LANE, "force", NULL},
        {KNOB_WGRAD_LANE, "on", "SUITE_WGRAD_LANE: expected 0, 1 or force, got 'on'"},
        {KNOB_CONV_PATH, "fast", "SUITE_CONV_PATH: expected legacy or engine, got 'fast'"},
        {KNOB_GPU_MEMORY, "80G", NULL},
        {KNOB_GPU_MEMORY, "abc", "SUITE_GPU_MEMORY: expected a size from 1M to 1024T, got 'abc'"},
        {KNOB_GPU_MEMORY, "0", "SUITE_GPU_MEMORY: expected a size from 1M to 1024T, got '0' (less than 1M)"},
        {KNOB_GPU_MEMORY, "-5G", "SUITE_GPU_MEMORY: expected a size from 1M to 1024T, got '-5G' (less than 1M)"},
        {KNOB_GPU_MEMORY, "99999999999999999999T",
         "SUITE_GPU_MEMORY: expected a size from 1M to 1024T, got '99999999999999999999T' (more than 1024T)"},
        {KNOB_CONCURRENT_JOBS, "0x10", "SUITE_CONCURRENT_JOBS: expected a whole number from 1 to 4096, got '0x10' "
                                       "(hexadecimal is not read: decimal only)"},
        {KNOB_RENDEZVOUS_TIMEOUT, "soon", "SUITE_RENDEZVOUS_TIMEOUT: expected a number from 0.1 to 86400, got 'soon'"},
        {KNOB_STATE_DIR, "/tmp/state dir", NULL},
        {KNOB_STATE_DIR, "/tmp/a\nb", "SUITE_STATE_DIR: expected a path (one line of at most 4095 characters), got "
                                      "'/tmp/a\\nb'"},
    };
    char err[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = knob_value_check(cases[i].id, cases[i].text, err, sizeof err);
        if (!cases[i].error && rc != 0) fail_msg("%s=%s refused: %s", knob_name(cases[i].id), cases[i].text, err);
        if (cases[i].error && (rc == 0 || strcmp(err, cases[i].error)))
            fail_msg("%s=%s: rc %d, '%s' (expected '%s')", knob_name(cases[i].id), cases[i].text, rc, err, cases[i].error);
    }
    /* every knob that is set, at once; empty is unset */
    setenv("SUITE_GPU_MEMORY", "", 1);
    assert_int_equal(knob_value_check_all(err, sizeof err), 0);
    setenv("SUITE_CONV_LOG", "yes", 1);
    assert_int_equal(knob_value_check_all(err, sizeof err), -1);
    assert_string_equal(err, "SUITE_CONV_LOG: expected 0 or 1, got 'yes'");
    unsetenv("SUITE_CONV_LOG");
    long long bytes = 0;
    setenv("SUITE_GPU_MEMORY", "80G", 1);
    assert_int_equal(knob_value_size(KNOB_GPU_MEMORY, &bytes, err, sizeof err), 1);
    assert_true(bytes == 80LL << 30);
    unsetenv("SUITE_GPU_MEMORY");
    assert_int_equal(knob_value_size(KNOB_GPU_MEMORY, &bytes, err, sizeof err), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_escapes_bars),
        cmocka_unit_test(test_readme_table_is_the_code_table),
        cmocka_unit_test(test_no_getenv_outside_the_table),
        cmocka_unit_test(test_flags),
        cmocka_unit_test(test_values_name_the_range),
        cmocka_unit_test(test_values_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
