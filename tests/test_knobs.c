/* The environment knobs (kernels/knobs.h): README.md's "## Environment knobs" section holds the
 * code's table row for row (its first table the users' knobs, its second the variables the
 * suite's processes pass each other), and on a difference this test prints the rows the README
 * must have; no source file reads a SUITE_ variable but through the table; flags keep their
 * meaning ("0" off, "1" on, anything else the fallback). */
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

#include "kernels/knobs.h"
#include "tests/testutil.h"

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

/* The README line of a knob: | `NAME` | values | fallback | meaning | readers | */
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

/* The knob table's rows of one kind against the README's table `which`. */
static int compare(const char *section, int which, int internal) {
    static char readme[KNOB_COUNT + 8][1024];
    char expected[KNOB_COUNT][1024];
    int n = readme_rows(section, which, readme, KNOB_COUNT + 8), count = 0, differ = 0;
    for (int id = 0; id < KNOB_COUNT; id++)
        if (knob_info(id)->internal == internal) render_row(knob_info(id), expected[count++], sizeof expected[0]);
    for (int i = 0; i < count || i < n; i++)
        if (i >= count || i >= n || strcmp(expected[i], readme[i])) differ = 1;
    if (differ) {
        fprintf(stderr, "README.md's %s table of \"## Environment knobs\" differs from kernels/knobs.c; its rows "
                "must be:\n", which ? "second" : "first");
        for (int i = 0; i < count; i++) fprintf(stderr, "%s\n", expected[i]);
    }
    return differ;
}

static void test_readme_table_is_the_code_table(void **state) {
    char *readme = read_text(SUITE_SOURCE_DIR "/README.md");
    const char *section = strstr(readme, SECTION);
    if (!section) fail_msg("README.md has no section '## Environment knobs'");
    section += strlen(SECTION);
    int differ = compare(section, 0, 0) + compare(section, 1, 1);
    free(readme);
    assert_int_equal(differ, 0);
}

/* The renderer itself: an escaped bar. */
static void test_render_escapes_bars(void **state) {
    knob k = {"SUITE_X", "`a` | `b`", "on", "m", "`train`", 0};
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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render_escapes_bars),
        cmocka_unit_test(test_readme_table_is_the_code_table),
        cmocka_unit_test(test_no_getenv_outside_the_table),
        cmocka_unit_test(test_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
