/* The option tables of docs/options.md agree with the programs: every option `train --help` and
 * `run_suite --help` print appears in the first column of that program's `| option | meaning |`
 * table in docs/options.md, and every option named there is one the program accepts. An option
 * added to a program's table (runner/cli.h) without a line in docs/options.md fails here, and so
 * does a line there for an option that is gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/support/testutil.h"

#define MAX_NAMES 256

typedef struct names {
    char name[MAX_NAMES][48];
    int count;
} names;

static void add_name(names *n, const char *start, size_t len) {
    if (len >= sizeof n->name[0]) fail_msg("option name too long: %.*s", (int)len, start);
    for (int i = 0; i < n->count; i++)
        if (strlen(n->name[i]) == len && !strncmp(n->name[i], start, len)) return;
    expect_lt(n->count, MAX_NAMES);
    memcpy(n->name[n->count], start, len);
    n->name[n->count++][len] = 0;
}

static int has_name(const names *n, const char *name) {
    for (int i = 0; i < n->count; i++)
        if (!strcmp(n->name[i], name)) return 1;
    return 0;
}

static int name_char(char c) { return c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* Every "--word" in text[0..len) that starts a word ("x--y" and "---z" are none). */
static void scan_options(names *n, const char *text, size_t len) {
    for (size_t i = 0; i + 2 < len; i++) {
        if (text[i] != '-' || text[i + 1] != '-' || (i > 0 && name_char(text[i - 1])) || text[i + 2] == '-' ||
            !name_char(text[i + 2]))
            continue;
        size_t j = i + 2;
        while (j < len && name_char(text[j])) j++;
        add_name(n, text + i, j - i);
        i = j;
    }
}

/* The options of `program --help`: the first word of each line that starts with "  --". */
static void help_options(const char *program, names *n) {
    static char out[1 << 16], err[1 << 12];
    int rc = test_run_binary(program, out, sizeof out, err, sizeof err, "--help", NULL);
    if (rc != 0) fail_msg("%s --help: exit %d, stderr '%s'", program, rc, err);
    memset(n, 0, sizeof *n);
    for (const char *line = out; *line;) {
        size_t len = strcspn(line, "\n");
        if (!strncmp(line, "  --", 4)) add_name(n, line + 2, strcspn(line + 2, " \n"));
        line += len + (line[len] == '\n');
    }
    expect_gt(n->count, 5);
}

/* The end of the table cell that starts at `cell` (a '|' not escaped as "\|"), or NULL. */
static const char *cell_end(const char *cell, const char *line_end) {
    for (const char *c = cell; c < line_end; c++)
        if (*c == '|' && c[-1] != '\\') return c;
    return NULL;
}

/* The options in the first column of the "| option | meaning |" tables of the docs/options.md section
 * whose heading starts with "## <program>:". */
static void doc_options(const char *doc, const char *program, names *n) {
    char heading[64];
    snprintf(heading, sizeof heading, "\n## %s:", program);
    const char *section = strstr(doc, heading);
    if (!section) fail_msg("docs/options.md has no section '## %s:'", program);
    section += strlen(heading);
    const char *end = strstr(section, "\n## ");
    if (!end) end = section + strlen(section);
    memset(n, 0, sizeof *n);
    int in_table = 0;
    for (const char *line = section; line < end;) {
        const char *line_end = strchr(line, '\n');
        if (!line_end || line_end > end) line_end = end;
        if (*line != '|') in_table = 0;
        else if (!strncmp(line, "| option |", 10)) in_table = 1;
        else if (in_table && strncmp(line, "| ---", 5) != 0) {
            const char *first_end = cell_end(line + 1, line_end);
            if (first_end) scan_options(n, line + 1, (size_t)(first_end - line - 1));
        }
        line = line_end + (*line_end == '\n');
    }
    if (n->count == 0) fail_msg("docs/options.md's '## %s:' section has no '| option | meaning |' table", program);
}

static void expect_agreement(const char *program) {
    char path[1024];
    snprintf(path, sizeof path, "%s/docs/options.md", SUITE_SOURCE_DIR);
    char err[512];
    char *doc = test_read_text(path, err, sizeof err);
    if (!doc) fail_msg("%s", err);
    static names help, table;
    help_options(program, &help);
    doc_options(doc, program, &table);
    free(doc);
    int missing = 0;
    for (int i = 0; i < help.count; i++)
        if (!has_name(&table, help.name[i])) {
            fprintf(stderr, "%s --help has %s, which docs/options.md's %s option table lacks\n", program, help.name[i],
                    program);
            missing++;
        }
    for (int i = 0; i < table.count; i++)
        if (!has_name(&help, table.name[i])) {
            fprintf(stderr, "docs/options.md's %s option table has %s, which %s --help lacks\n", program, table.name[i],
                    program);
            missing++;
        }
    assert_int_equal(missing, 0);
}

static void test_train_help_matches_docs(void **state) { expect_agreement("train"); }
static void test_run_suite_help_matches_docs(void **state) { expect_agreement("run_suite"); }

/* The scanner itself: names in an option table's cell, escaped bars, and words that are not options. */
static void test_scanner(void **state) {
    static names n;
    memset(&n, 0, sizeof n);
    const char *cell = " `--lr 0.1 --momentum 0.9`, `--optimizer sgd\\|adamw`, --wd-all, x--y, ---z ";
    scan_options(&n, cell, strlen(cell));
    assert_int_equal(n.count, 4);
    assert_true(has_name(&n, "--lr") && has_name(&n, "--momentum") && has_name(&n, "--optimizer") &&
                has_name(&n, "--wd-all"));
    const char *line = "| `--schedule a\\|b` | meaning |";
    const char *e = cell_end(line + 1, line + strlen(line));
    assert_non_null(e);
    assert_int_equal(e - line, (long)strlen("| `--schedule a\\|b` "));
}

/* README.md stays a front door: at most 150 lines, none wider than a 100-column terminal (the
 * set-up commands included), and every docs/ page it links to is there. The reference lives in
 * docs/, where the tests above keep it in step with the programs. */
/* README's excerpt of a committed run's output: the code block after "(`FILE`, lines cut at N
 * columns):" holds only lines of FILE, each its first N characters (trailing blanks aside), so that
 * what README shows is what the named file holds. Returns how many lines are not in the file. */
static int excerpt_not_in_file(const char *readme) {
    const char *intro = strstr(readme, "(`lab/results/");
    if (!intro) return 0; /* no excerpt */
    char file[512], path[1024], err[512];
    int columns = 0, used = 0;
    if (sscanf(intro, "(`%511[^`]`, lines cut at %d columns):%n", file, &columns, &used) != 2 || !used)
        fail_msg("README.md: an excerpt's introduction is not \"(`FILE`, lines cut at N columns):\"");
    const char *block = strstr(intro + used, "```\n");
    assert_non_null(block);
    block += 4;
    const char *end = strstr(block, "```");
    assert_non_null(end);
    snprintf(path, sizeof path, "%s/%s", SUITE_SOURCE_DIR, file);
    char *text = test_read_text(path, err, sizeof err);
    if (!text) fail_msg("README.md's excerpt names %s: %s", file, err);
    int missing = 0;
    for (const char *line = block; line < end;) {
        size_t len = strcspn(line, "\n");
        while (len && line[len - 1] == ' ') len--;
        int found = 0;
        for (const char *src = text; *src && !found;) {
            size_t src_len = strcspn(src, "\n"), cut = src_len < (size_t)columns ? src_len : (size_t)columns;
            while (cut && src[cut - 1] == ' ') cut--;
            found = cut == len && !strncmp(src, line, len);
            src += src_len + (src[src_len] == '\n');
        }
        if (!found) {
            fprintf(stderr, "README.md's excerpt line \"%.*s\" is not in %s (cut at %d columns)\n", (int)len, line,
                    file, columns);
            missing++;
        }
        line += strcspn(line, "\n") + 1;
    }
    free(text);
    return missing;
}

static void test_readme_front_door(void **state) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/README.md", SUITE_SOURCE_DIR);
    char *readme = test_read_text(path, err, sizeof err);
    if (!readme) fail_msg("%s", err);
    int lines = 0, wide = 0;
    for (const char *line = readme; *line;) {
        size_t len = strcspn(line, "\n");
        lines++;
        if (len > 100) {
            fprintf(stderr, "README.md:%d is %zu characters wide (at most 100)\n", lines, len);
            wide++;
        }
        line += len + (line[len] == '\n');
    }
    if (lines > 150) fprintf(stderr, "README.md has %d lines (at most 150: the reference goes to docs/)\n", lines);
    int missing = 0;
    for (const char *link = strstr(readme, "](docs/"); link; link = strstr(link + 1, "](docs/")) {
        size_t len = strcspn(link + 2, ")#");
        snprintf(path, sizeof path, "%s/%.*s", SUITE_SOURCE_DIR, (int)len, link + 2);
        FILE *f = fopen(path, "r");
        if (!f) {
            fprintf(stderr, "README.md links to %.*s, which is not there\n", (int)len, link + 2);
            missing++;
        } else {
            fclose(f);
        }
    }
    int stale = excerpt_not_in_file(readme);
    free(readme);
    assert_int_equal(wide, 0);
    assert_true(lines <= 150);
    assert_int_equal(missing, 0);
    assert_int_equal(stale, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scanner),
        cmocka_unit_test(test_train_help_matches_docs),
        cmocka_unit_test(test_run_suite_help_matches_docs),
        cmocka_unit_test(test_readme_front_door),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
