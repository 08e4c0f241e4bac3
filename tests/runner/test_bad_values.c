/* Every option of both programs against bad values: empty, below its range (negative, zero),
 * above it (huge), not a number, not one of its choices, given twice (a flag too), and each in the
 * "--opt=value" form. Each must be exit 2 with the option named, and nothing written (no run
 * folder, no file). The other grammars by the same rules (base/number.h, base/list.h): every
 * numeric override of the mix, every list option (an empty entry anywhere, an entry that breaks
 * the number rule), and every environment knob of the table (kernels/knobs.h) set to a value its
 * kind refuses, in each program (run_suite, train, job_host): exit 2 naming it, nothing written.
 *
 * The options come from the programs' own tables, through what the table generates: every name
 * in each form's --help (train; run_suite with each mode's rows; its --study, --gpus and --slurm
 * forms), and each row's kind and range from the parser's message for the option given without a
 * value ("--batch: expected a whole number from 1 to 65536; missing its value"). A new row is
 * covered without touching this file. Flags take no value: only given twice. The forms: train,
 * run_suite (each mode's rows), its --study, --gpus and --slurm forms, and run_suite report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels/knobs.h"
#include "tests/support/testutil.h"

#define MAX_ARGS 40

typedef struct form {
    const char *program;             /* train or run_suite */
    const char *help[4];             /* the words that print this form's --help */
    const char *before[8];           /* the form's own words (its trigger) */
    const char *after[12];           /* what makes the rest of a command line valid */
    int prose;                       /* its --help is laid out by hand and names other forms' options too:
                                        a name its parser gives no message of the row shape for is not its row */
} form;

static char out[1 << 17], err[1 << 16], dir[512];

static int run(const form *f, const char *const *words) {
    char *argv[MAX_ARGS];
    int n = 0;
    argv[n++] = (char *)test_binary(f->program);
    for (int i = 0; f->before[i]; i++) argv[n++] = (char *)f->before[i];
    for (int i = 0; words[i]; i++) argv[n++] = (char *)words[i];
    for (int i = 0; f->after[i]; i++) argv[n++] = (char *)f->after[i];
    argv[n] = NULL;
    return test_run(argv, out, sizeof out, err, sizeof err);
}

static int folder_empty(const char *path) {
    DIR *d = opendir(path);
    if (!d) return 1;
    struct dirent *e;
    int entries = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) entries++;
    closedir(d);
    return entries == 0;
}

/* The probes of kind_of may be valid command lines (a --slurm dry run writes its script): what
 * they wrote is removed before the refusals are checked. */
static void empty_folder(const char *path) {
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    char entry[1024];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(entry, sizeof entry, "%s/%s", path, e->d_name);
            test_rmtree(entry);
        }
    closedir(d);
}

static void expect_refused(const form *f, const char *option, const char *const *words) {
    int rc = run(f, words);
    char line[512] = "";
    for (int i = 0, n = 0; words[i] && n < (int)sizeof line - 80; i++)
        n += snprintf(line + n, sizeof line - n, " '%.60s'", words[i]);
    if (rc != 2 || !strstr(err, option))
        fail_msg("%s%s:%s: exit %d, expected 2 naming %s; stderr: %.400s", f->program, f->before[0] ? " (form)" : "",
                 line, rc, option, err);
    if (!folder_empty(dir)) fail_msg("%s:%s: wrote into %s", f->program, line, dir);
}

typedef enum { KIND_FLAG, KIND_INT, KIND_REAL, KIND_TEXT, KIND_STR, KIND_CHOICE } kind;

/* The row's kind from the parser's message for the option without a value. */
static kind kind_of(const form *f, const char *option, double *lo, double *hi, int *chars, char *choice,
                    size_t choice_size) {
    char eq[128];
    snprintf(eq, sizeof eq, "%s=x", option);
    const char *flag_words[] = {eq, NULL};
    run(f, flag_words);
    if (strstr(err, "takes no value")) return KIND_FLAG;
    const char *words[] = {option, NULL};
    run(f, words);
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s: expected ", option);
    const char *m = strstr(err, prefix);
    if (!m && f->prose) return KIND_FLAG;
    if (!m) fail_msg("%s %s: no message of the parser's shape: %.300s", f->program, option, err);
    m += strlen(prefix);
    if (sscanf(m, "a whole number from %lf to %lf", lo, hi) == 2) return KIND_INT;
    if (sscanf(m, "a number from %lf to %lf", lo, hi) == 2) return KIND_REAL;
    if (sscanf(m, "a value of 1 to %d characters", chars) == 1) return KIND_TEXT;
    if (!strncmp(m, "a value (not empty)", 19)) return KIND_STR;
    size_t n = strcspn(m, ", ;");
    snprintf(choice, choice_size, "%.*s", (int)n, m);
    return KIND_CHOICE;
}

static void check_option(const form *f, const char *option) {
    double lo = 0, hi = 0;
    int chars = 0;
    char choice[64] = "", below[64], above[64], eq_bad[128], eq_empty[128], valid[64];
    kind k = kind_of(f, option, &lo, &hi, &chars, choice, sizeof choice);
    int true_flag = k == KIND_FLAG && strstr(err, "takes no value") != NULL; /* not a prose form's other name */
    empty_folder(dir);
    if (true_flag) { /* a flag given twice is a slip too, refused as a value given twice is */
        const char *twice[] = {option, option, NULL};
        expect_refused(f, option, twice);
    }
    if (k == KIND_FLAG) return;
    char *long_text = NULL;
    const char *bad[8] = {""};
    int n = 1;
    snprintf(eq_empty, sizeof eq_empty, "%s=", option);
    switch (k) {
    case KIND_INT:
    case KIND_REAL:
        snprintf(below, sizeof below, "%.17g", lo - 1);      /* negative, or zero where 1 is the least */
        snprintf(above, sizeof above, "%.17g", hi * 2 + 1);
        bad[n++] = below, bad[n++] = above, bad[n++] = k == KIND_INT ? "99999999999999999999999" : "1e400";
        bad[n++] = "abc";
        snprintf(valid, sizeof valid, "%.17g", lo);
        break;
    case KIND_TEXT:
        long_text = malloc((size_t)chars + 2);
        memset(long_text, 'x', (size_t)chars + 1);
        long_text[chars + 1] = 0;
        bad[n++] = long_text;
        snprintf(valid, sizeof valid, "x");
        break;
    case KIND_CHOICE:
        bad[n++] = "no-such-choice";
        snprintf(valid, sizeof valid, "%s", choice);
        break;
    default: snprintf(valid, sizeof valid, "x"); break;
    }
    for (int i = 0; i < n; i++) {
        const char *words[] = {option, bad[i], NULL};
        expect_refused(f, option, words);
    }
    snprintf(eq_bad, sizeof eq_bad, "%s=%s", option, bad[n - 1] == long_text ? "" : bad[n - 1]);
    const char *eq_words[] = {eq_bad, NULL}, *eq_empty_words[] = {eq_empty, NULL};
    expect_refused(f, option, eq_words);
    expect_refused(f, option, eq_empty_words);
    const char *twice[] = {option, valid, option, valid, NULL};
    expect_refused(f, option, twice);
    free(long_text);
}

/* Every "--name" of a form's --help, in order, once each. */
static int options_of(const form *f, char names[][64], int max) {
    char *argv[MAX_ARGS];
    int n = 0, count = 0;
    argv[n++] = (char *)test_binary(f->program);
    for (int i = 0; f->help[i]; i++) argv[n++] = (char *)f->help[i];
    argv[n] = NULL;
    assert_int_equal(test_run(argv, out, sizeof out, err, sizeof err), 0);
    for (const char *p = strstr(out, "--"); p && count < max; p = strstr(p + 2, "--")) {
        if (p > out && (p[-1] == '-' || (p[-1] >= 'a' && p[-1] <= 'z'))) continue;
        size_t len = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz0123456789-");
        if (len <= 2 || len >= 64) continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)len, p);
        if (!strcmp(name, "--help")) continue;
        int seen = 0;
        for (int i = 0; i < count && !seen; i++) seen = !strcmp(names[i], name);
        if (!seen) snprintf(names[count++], 64, "%s", name);
    }
    return count;
}

static void check_form(const form *f, const char *const *skip) {
    static char names[256][64];
    int count = options_of(f, names, 256);
    expect_gt(count, 3);
    for (int i = 0; i < count; i++) {
        int skipped = 0;
        for (int s = 0; skip && skip[s] && !skipped; s++) skipped = !strcmp(skip[s], names[i]);
        if (!skipped) check_option(f, names[i]);
    }
}

static int setup(void **state) {
    test_tmpdir(dir, sizeof dir);
    return chdir(dir); /* train's relative paths land here too: "nothing written" covers them */
}

static int teardown(void **state) {
    test_rmtree(dir);
    return 0;
}

static void test_train(void **state) {
    form f = {"train", {"--help"}, {NULL}, {"--model", "resnet26", "--dry-run", NULL}, 0};
    check_form(&f, NULL);
}

static void test_run_suite(void **state) {
    /* every mode's rows are in the table, whichever --mode is given */
    form f = {"run_suite", {"--help"}, {NULL},
              {"--mode", "serial", "--mix", "S", "--dry-run", "--results", dir, "--train", FAKE_TRAIN_PATH,
               NULL}, 0};
    /* the other forms' triggers: their own tests below */
    const char *skip[] = {"--gpus", "--slurm", "--study", NULL};
    check_form(&f, skip);
}

static void test_run_suite_forms(void **state) {
    const char *fake = FAKE_TRAIN_PATH;
    form study = {"run_suite", {"--study", "small", "--help"}, {"--study", "small", NULL},
                  {"--dry-run", "--results", dir, "--train", fake, NULL}, 1};
    const char *study_skip[] = {"--study", NULL};
    check_form(&study, study_skip);
    form gpus = {"run_suite", {"--gpus", "0", "--help"}, {"--gpus", "0", NULL},
                 {"--mode", "serial", "--mix", "S", "--dry-run", "--results", dir, "--train", fake, NULL}, 1};
    const char *gpus_skip[] = {"--gpus", NULL};
    check_form(&gpus, gpus_skip);
    form slurm = {"run_suite", {"--slurm", "--help"}, {"--slurm", NULL},
                  {"--mode", "serial", "--mix", "S", "--dry-run", "--results", dir, "--train", fake, NULL}, 1};
    const char *slurm_skip[] = {"--slurm", "--mix", "--mixes", "--study", NULL};
    check_form(&slurm, slurm_skip);
}

/* run_suite report's own table (its options besides -o, which test_outputs covers with the paths);
 * the run folder given does not exist, so a value the parser took could not render anything */
static void test_report_form(void **state) {
    form report = {"run_suite", {"report", "--help"}, {"report", "/nonexistent-run", NULL}, {NULL}, 0};
    char names[8][64];
    options_of(&report, names, 8); /* its --help: the rows' lines are these */
    assert_non_null(strstr(out, "\n  -o FILE "));
    assert_non_null(strstr(out, "\n  --reference FILE "));
    check_option(&report, "--reference");
    check_option(&report, "-o");
}

/* A number that breaks the rule in each way it can, for a whole number from lo to hi. */
static int bad_numbers(double lo, double hi, char below[64], char above[64], const char *bad[16]) {
    snprintf(below, 64, "%.17g", lo - 1);
    snprintf(above, 64, "%.17g", hi + 1);
    const char *list[] = {"", below, above, "99999999999999999999999", "abc", "+1", "0x10", "01", "2.5", "1e3", "nan",
                          NULL};
    int n = 0;
    for (; list[n]; n++) bad[n] = list[n];
    bad[n] = NULL;
    return n;
}

/* Every numeric override of the mix: each bad number, and the key given twice. */
static void test_mix_overrides(void **state) {
    static const struct { const char *job, *key; double lo, hi; } keys[] = {
        {"S", "epochs", 1, 100000},      {"S", "steps", 1, 1000000000},
        {"XL", "rows", 1, 2147483647},   {"resnet26:synthetic@8", "classes", 2, 100000},
        {"S", "gpus", 1, 64},            {"L", "decode_slots", 1, 8},
    };
    form f = {"run_suite", {NULL}, {"--mode", "serial", NULL},
              {"--dry-run", "--results", dir, "--train", FAKE_TRAIN_PATH, NULL}, 0};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char below[64], above[64], mix[256], ok[256];
        const char *bad[16];
        int n = bad_numbers(keys[k].lo, keys[k].hi, below, above, bad);
        for (int i = 0; i < n; i++) {
            snprintf(mix, sizeof mix, "%s[%s=%s]", keys[k].job, keys[k].key, bad[i]);
            const char *words[] = {"--mix", mix, NULL};
            expect_refused(&f, keys[k].key, words);
        }
        snprintf(ok, sizeof ok, "%s[%s=%.17g,%s=%.17g]", keys[k].job, keys[k].key, keys[k].lo, keys[k].key, keys[k].lo);
        const char *twice[] = {"--mix", ok, NULL};
        expect_refused(&f, "given twice", twice);
    }
    const char *counts[] = {"0*S", "65*S", "02*S", "0x2*S", "99999999999999999999*S", NULL};
    for (int i = 0; counts[i]; i++) {
        const char *words[] = {"--mix", counts[i], NULL};
        expect_refused(&f, "count before '*'", words);
    }
    const char *fault[] = {"--mix", "S[fault=nan@0x10]", NULL};
    expect_refused(&f, "the step after '@'", fault);
}

/* Every list option: empty entries anywhere, and entries that break the number rule. */
static void test_lists(void **state) {
    const char *fake = FAKE_TRAIN_PATH;
    static const struct {
        const char *option;
        form f;
        const char *bad[12];
    } lists[] = {
        {"--gpus", {"run_suite", {NULL}, {NULL}, {"--mode", "serial", "--mix", "S+S", "--dry-run", "--results", "D",
                                                    "--train", FAKE_TRAIN_PATH, NULL}, 0},
         {"", ",", "0,,1", "0,", ",0", "0,x", "0,+1", "0,0x1", "0,01", "0,1024", "0,99999999999999999999", NULL}},
        {"--degrees", {"run_suite", {NULL}, {"--study", "small", NULL}, {"--dry-run", "--results", "D", "--train",
                                                                         FAKE_TRAIN_PATH, NULL}, 0},
         {"", "2,,3", "2,", ",2", "2,x", "+2", "0x2", "0", "65", "02", NULL}},
        {"--mps-sm", {"run_suite", {NULL}, {"--mode", "mps", "--mix", "S+S", NULL}, {"--dry-run", "--results", "D",
                                                                                      "--train", FAKE_TRAIN_PATH, NULL}, 0},
         {"", "50,,50", "50,", ",50", "50,x", "+50", "0x32", "0", "101", "050", "50,50,50", NULL}},
        {"--mps-mem", {"run_suite", {NULL}, {"--mode", "mps", "--mix", "S+S", NULL}, {"--dry-run", "--results", "D",
                                                                                       "--train", FAKE_TRAIN_PATH, NULL}, 0},
         {"", "4G,,4G", "4G,", "4X", "+4G", "0x4G", "0", "-5G", "99999999T", "1.0000001M", "04G", NULL}},
        {"--green-sm", {"run_suite", {NULL}, {"--mode", "green", "--mix", "S+S", "--mig-gpu", "H100-80GB", NULL},
                        {"--dry-run", "--results", "D", "--train", FAKE_TRAIN_PATH, NULL}, 0},
         {"", "64,,64", "64,", ",64", "64,x", "+64", "0x40", "0", "6.5", "064", NULL}},
        {"--green-share", {"run_suite", {NULL}, {"--mode", "green", "--mix", "S+S", "--mig-gpu", "H100-80GB", NULL},
                           {"--dry-run", "--results", "D", "--train", FAKE_TRAIN_PATH, NULL}, 0},
         {"", "50,,50", "50%,", ",50", "50%%", "+50", "0x32", "0", "101", "nan", NULL}},
        {"--mixes", {"run_suite", {NULL}, {"--slurm", "--mode", "serial", NULL}, {"--dry-run", "--results", "D",
                                                                                   "--train", FAKE_TRAIN_PATH, NULL}, 0},
         {"", "S;;M", "S;", ";S", "S; ;M", NULL}},
        {"--skip", {"run_suite", {NULL}, {"--mode", "all", "--mix", "S", NULL}, {"--dry-run", "--results", "D",
                                                                                  "--train", FAKE_TRAIN_PATH, NULL}, 0},
         {"", "streams,,green", "streams,", ",green", "naive,naive", "bogus", NULL}},
    };
    (void)fake;
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        form f = lists[l].f;
        for (int i = 0; f.after[i]; i++)
            if (!strcmp(f.after[i], "D")) f.after[i] = dir;
        for (int i = 0; lists[l].bad[i]; i++) {
            const char *words[] = {lists[l].option, lists[l].bad[i], NULL};
            expect_refused(&f, lists[l].option, words);
        }
    }
}

/* A value each kind of knob refuses. */
static int bad_knob_values(const knob *k, const char *bad[8]) {
    int n = 0;
    switch (k->kind) {
    case KNOB_KIND_FLAG: bad[n++] = "yes", bad[n++] = "2", bad[n++] = "00"; break;
    case KNOB_KIND_CHOICE: bad[n++] = "no-such-choice"; break;
    case KNOB_KIND_WHOLE:
    case KNOB_KIND_REAL: bad[n++] = "abc", bad[n++] = "0x10", bad[n++] = "+1", bad[n++] = "99999999999999999999999"; break;
    case KNOB_KIND_SIZE: bad[n++] = "abc", bad[n++] = "0", bad[n++] = "-5G", bad[n++] = "99999999999999999999T"; break;
    default: bad[n++] = "a\nb"; break;
    }
    return n;
}

/* Every knob of the table, set to what its kind refuses, in every program: exit 2 naming it. */
static void test_knobs(void **state) {
    form programs[] = {
        {"run_suite", {NULL}, {NULL}, {"--mode", "serial", "--mix", "S", "--dry-run", "--results", dir, "--train",
                                        FAKE_TRAIN_PATH, NULL}, 0},
        {"run_suite", {NULL}, {"--study", "small", NULL}, {"--dry-run", "--results", dir, "--train", FAKE_TRAIN_PATH,
                                                           NULL}, 0},
        {"train", {NULL}, {NULL}, {"--model", "resnet26", "--dry-run", NULL}, 0},
        {"job_host", {NULL}, {NULL}, {"--probe", NULL}, 0},
    };
    const char *none[] = {NULL};
    for (int id = 0; id < KNOB_COUNT; id++) {
        const knob *k = knob_info((knob_id)id);
        const char *bad[8];
        int n = bad_knob_values(k, bad);
        const char *before = getenv(k->name);
        char *saved = before ? strdup(before) : NULL;
        for (int i = 0; i < n; i++) {
            setenv(k->name, bad[i], 1);
            for (size_t p = 0; p < sizeof programs / sizeof programs[0]; p++) expect_refused(&programs[p], k->name, none);
        }
        if (saved) setenv(k->name, saved, 1);
        else unsetenv(k->name);
        free(saved);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train),
        cmocka_unit_test(test_report_form),
        cmocka_unit_test(test_run_suite),
        cmocka_unit_test(test_run_suite_forms),
        cmocka_unit_test(test_mix_overrides),
        cmocka_unit_test(test_lists),
        cmocka_unit_test(test_knobs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
