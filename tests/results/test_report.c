/* `run_suite report` over the committed fixture (tests/fixtures/report: a --study small of
 * tests/support/fake_train under the NVML stand-in, with 7-way refused for memory, and a --mode all S+M
 * run; the timelines' sensor columns were filled in by hand, see its README): every figure is
 * drawn, the page holds no external reference, and bad input is refused naming the file (exit 2).
 * Needs python3 with matplotlib, as the README's set-up installs it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/spread.h"
#include "tests/support/testutil.h"

#define FIXTURE SUITE_SOURCE_DIR "/tests/fixtures/report"
#define STUDY FIXTURE "/20261124T152934Z-study-small"
#define ALONE SUITE_SOURCE_DIR "/tests/fixtures/report_alone"

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = 0;
    fclose(f);
    return text;
}

static int count(const char *text, const char *what) {
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p += strlen(what)) n++;
    return n;
}

static void test_fixture_page(void **state) {
    char dir[512], page[600], out[4096], err[8192];
    test_tmpdir(dir, sizeof dir);
    snprintf(page, sizeof page, "%s/report.html", dir);
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", FIXTURE, "-o", page, NULL);
    if (rc != 0) fprintf(stderr, "stdout: %s\nstderr: %s\n", out, err);
    assert_int_equal(rc, 0);
    char *html = read_all(page);
    /* the study's workload and the mixed run: figures 2-4, throughput, timelines, energy */
    assert_non_null(strstr(html, "id=fig-modes-w0"));
    assert_non_null(strstr(html, "id=fig-modes-w"));
    assert_non_null(strstr(html, "id=fig-throughput-w0"));
    assert_non_null(strstr(html, "id=fig-timeline-1"));
    /* one per cell (a repeated cell's first repeat), over 16 cells the study's top degree only, and
     * only where a sensor read something (the stand-in's zeros are no timeline): 3 study cells +
     * 4 modes of S+M + S+M+M's naive and mps (made-up power) */
    assert_non_null(strstr(html, "id=fig-timeline-9"));
    /* mig-emulate/alone-in-partition/job-0-S is the interference ratio's reference, not a run */
    assert_null(strstr(html, "id=fig-timeline-10"));
    assert_non_null(strstr(html, "id=fig-energy"));
    /* every figure is an embedded SVG with its data as an embedded CSV download, also written
     * beside the page; and each one the page lists is there */
    int images = count(html, "<img ");
    assert_int_equal(images, count(html, "src='data:image/svg+xml;base64,"));
    assert_int_equal(images, count(html, "href='data:text/csv;base64,"));
    assert_int_equal(count(html, "data:image/png"), 0);
    char csv[700];
    snprintf(csv, sizeof csv, "%s/report.fig-modes-w0.csv", dir);
    char *data = read_all(csv);
    assert_int_equal(strncmp(data, "panel,series,x,x_label,value,bottom,min,max\n", 44), 0);
    free(data);
    expect_ge(images, 15);
    const char *list = strstr(html, "<!-- figures:");
    assert_non_null(list);
    int listed = 0;
    for (const char *p = list; *p && strncmp(p, "-->", 3); p++) listed += !strncmp(p, " fig-", 5);
    assert_int_equal(listed, images);
    /* self-contained: nothing fetched from anywhere */
    assert_null(strstr(html, "http://"));
    assert_null(strstr(html, "https://"));
    assert_null(strstr(html, "<link"));
    assert_null(strstr(html, "<script"));
    assert_null(strstr(html, "url("));
    assert_int_equal(count(html, " src="), images);
    /* the refused cells, the comparison, the paper's findings and the provenance */
    expect_ge(count(html, "does not fit"), 3);
    assert_non_null(strstr(html, "the mix needs 84.00 GiB"));
    assert_non_null(strstr(html, "The study's findings next to ours"));
    assert_non_null(strstr(html, "A100-SXM4-40GB"));
    assert_non_null(strstr(html, "NVIDIA H100 80GB HBM3"));
    /* Table 2 speaks of the recommender mix: not on a page without a recommender run */
    assert_null(strstr(html, "Table 2 as the paper prints it"));
    /* each finding's verdict, our min-max over the repeats against the paper's range */
    assert_non_null(strstr(html, "<th class=l>verdict</th>"));
    assert_non_null(strstr(html, "ResNet-50 x2 mps: 1.00 [1.00-1.00] (n=3)"));
    expect_ge(count(html, "<span class=ok>holds</span>"), 3);
    assert_non_null(strstr(html, "<span class=note>not measured</span>"));
    assert_non_null(strstr(html, "<span class=note>inconclusive</span>"));
    assert_non_null(strstr(html, "Provenance"));
    /* the study's cells have no serial run of their own: STP and the rest against the one alone */
    assert_non_null(strstr(html, "against this workload's run alone"));
    expect_ge(count(html, "<sup>\xe2\x80\xa0</sup>"), 6 * 3);
    /* the metrics defined once, as results/metrics.h does */
    const char *gloss = strstr(html, "<dl class=gloss>");
    assert_non_null(gloss);
    const char *terms[] = {"<dt>STP</dt>", "<dt>ANTT</dt>", "<dt>fairness</dt>", "<dt>slowdown</dt>",
                           "<dt>interference</dt>", "<dt>energy per sample</dt>"};
    for (size_t i = 0; i < sizeof terms / sizeof *terms; i++) assert_int_equal(count(html, terms[i]), 1);
    assert_non_null(strstr(html, "mig-emulate"));
    free(html);
    test_rmtree(dir);
}

/* The table of the section that starts at `heading`: the first <table> after it. */
static char *section_table(const char *html, const char *heading) {
    const char *h = strstr(html, heading);
    assert_non_null(h);
    const char *t = strstr(h, "<table>"), *end = t ? strstr(t, "</table>") : NULL;
    assert_non_null(end);
    return strndup(t, (size_t)(end - t));
}

/* A heterogeneous mix measured over the common window (S+M+M, fake train): no table sums the
 * jobs' unlike samples/s, every job is named by its label with its window samples/s, the lowest overlap below;
 * and a --repeat 3 run (2*M): one row per cell with n = 3, "median [min-max]" and the ranking by
 * base/spread.h's rule. */
static void test_mixed_window_and_repeats(void **state) {
    char dir[512], page[600], out[4096], err[8192];
    test_tmpdir(dir, sizeof dir);
    snprintf(page, sizeof page, "%s/report.html", dir);
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report",
                             FIXTURE "/20261125T201949Z-all-S+M+M", FIXTURE "/20261125T202500Z-all-2xM", "-o", page, NULL);
    if (rc != 0) fprintf(stderr, "stdout: %s\nstderr: %s\n", out, err);
    assert_int_equal(rc, 0);
    char *html = read_all(page);
    char *table = section_table(html, "mix S+M+M</h3>");
    assert_null(strstr(table, "samples/s sum"));
    assert_non_null(strstr(table, "samples/s per job, window"));
    assert_non_null(strstr(table, "S: 4,224"));
    assert_non_null(strstr(table, "M#1: 2,048"));
    assert_non_null(strstr(table, "M#2: 2,048"));
    assert_non_null(strstr(table, "lowest overlap 1.00")); /* per job only where flagged */
    assert_null(strstr(table, "8,320")); /* 4,224 + 2 x 2,048: a sum of unlike samples */
    /* energy over the common window only (the fixture's made-up 250 W naive, 300 W mps; 1 s window) */
    assert_non_null(strstr(table, "energy J, over the common window<"));
    assert_non_null(strstr(table, "<td>250</td>"));
    assert_non_null(strstr(table, "<td>300</td>"));
    free(table);
    assert_non_null(strstr(html, "their samples/s are shown per job and never summed"));
    table = section_table(html, "ResNet-50 \xc2\xb7 imagenet64");
    assert_int_equal(count(table, "<td>3</td><td class=l>complete</td>"), 3); /* serial, naive, mps: n = 3 each */
    assert_non_null(strstr(table, "M#0: 3,072 [3,072-3,072]"));
    assert_non_null(strstr(table, "2.00 [2.00-2.00]"));
    free(table);
    assert_non_null(strstr(html, "2 jobs, STP: mps ~ naive &gt; serial"));
    free(html);
    test_rmtree(dir);
}

/* A user's edit that breaks a file: a clear message naming it, exit 2, no page. */
static void test_bad_files(void **state) {
    char dir[512], run[700], path[800], page[700], out[4096], err[8192], cmd_err[64];
    test_tmpdir(dir, sizeof dir);
    snprintf(run, sizeof run, "%s/run", dir);
    snprintf(page, sizeof page, "%s/page.html", dir);
    char *const cp[] = {"/bin/cp", "-r", STUDY "/S-x2-mps/20261124T152943Z-mps-2xS", run, NULL};
    assert_int_equal(test_run(cp, out, sizeof out, cmd_err, sizeof cmd_err), 0);

    snprintf(path, sizeof path, "%s/summary.json", run);
    FILE *f = fopen(path, "w");
    fputs("{\"mode\": \"mps\", \"jobs\": [", f);
    fclose(f);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", run, "-o", page, NULL), 2);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "not valid JSON"));
    struct stat st;
    assert_int_not_equal(stat(page, &st), 0);

    f = fopen(path, "w");
    fputs("{\"mode\": 3, \"jobs\": {}}", f);
    fclose(f);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", run, "-o", page, NULL), 2);
    assert_non_null(strstr(err, "expected run_suite's summary"));

    /* a run without jobs: refused as such, never "(0 to -1)" */
    f = fopen(path, "w");
    fputs("{\"mode\": \"mps\", \"jobs\": []}", f);
    fclose(f);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", run, "-o", page, NULL), 2);
    assert_non_null(strstr(err, "'jobs' is empty; a run has at least one job"));
    assert_null(strstr(err, "-1)"));

    snprintf(path, sizeof path, "%s/timeline.csv", run);
    f = fopen(path, "w");
    fputs("when,unit\nyesterday,gpu0\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/summary.json", run);
    char *const restore[] = {"/bin/cp", STUDY "/S-x2-mps/20261124T152943Z-mps-2xS/summary.json", path, NULL};
    assert_int_equal(test_run(restore, out, sizeof out, cmd_err, sizeof cmd_err), 0);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", run, "-o", page, NULL), 2);
    assert_non_null(strstr(err, "timeline.csv"));

    /* a power reading of 1e308 (matplotlib overflowed on it): refused with its file, row and column */
    snprintf(path, sizeof path, "%s/timeline.csv", run);
    f = fopen(path, "w");
    fputs("t,unit,power_w\n1795534193.367,gpu0,70.0\n1795534193.467,gpu0,1e308\n", f);
    fclose(f);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", run, "-o", page, NULL), 2);
    assert_non_null(strstr(err, "timeline.csv: row 3, column 'power_w': '1e308' is not a finite number"));
    f = fopen(path, "w");
    fputs("t,unit,power_w\n1795534193.367,gpu0,inf\n", f);
    fclose(f);
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", run, "-o", page, NULL), 2);
    assert_non_null(strstr(err, "timeline.csv: row 2, column 'power_w': 'inf'"));

    /* a folder without any run, and a missing one */
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", SUITE_SOURCE_DIR "/tests/fuzz/idx", NULL), 2);
    assert_non_null(strstr(err, "no run folder"));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", "/nonexistent/run", NULL), 2);
    assert_non_null(strstr(err, "/nonexistent/run"));
    assert_int_equal(test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", NULL), 2);
    assert_non_null(strstr(err, "usage: run_suite report"));
    test_rmtree(dir);
}

/* A study whose recommender cell never ran (its fit check failed) still makes a page: the cell
 * is listed with its reason, and the Table 2 comparison has nothing of ours to show. */
static void test_study_cell_not_run(void **state) {
    char dir[512], study[700], path[800], page[700], out[4096], err[8192], cmd_err[64];
    test_tmpdir(dir, sizeof dir);
    snprintf(study, sizeof study, "%s/study", dir);
    snprintf(page, sizeof page, "%s/page.html", dir);
    char *const cp[] = {"/bin/cp", "-r", STUDY, study, NULL};
    assert_int_equal(test_run(cp, out, sizeof out, cmd_err, sizeof cmd_err), 0);
    snprintf(path, sizeof path, "%s/study.json", study);
    char *text = read_all(path);
    char *cells = strstr(text, "\"cells\"");
    assert_non_null(cells);
    char *open = strchr(cells, '[');
    assert_non_null(open);
    FILE *f = fopen(path, "w");
    fwrite(text, 1, (size_t)(open + 1 - text), f);
    fputs("{\"workload\": \"XL+L\", \"mode\": \"all\", \"mix\": \"XL[steps=750]+L[steps=8]\", \"degree\": 2, "
          "\"steps_per_epoch\": 0, \"status\": \"failed\", \"reason\": \"the fit check (run_suite --dry-run) "
          "failed: see its message above\"}, ", f);
    fputs(open + 1, f);
    fclose(f);
    free(text);
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", study, "-o", page, NULL);
    if (rc != 0) fprintf(stderr, "stdout: %s\nstderr: %s\n", out, err);
    assert_int_equal(rc, 0);
    char *html = read_all(page);
    assert_non_null(strstr(html, "XL[steps=750]+L[steps=8]"));
    assert_non_null(strstr(html, "the fit check (run_suite --dry-run) failed"));
    free(html);
    test_rmtree(dir);
}

/* One mix under one mode in tf32 and in bf16 (fake_train takes --precision and ignores it; the
 * jobs' canonical names carry it): reported together they get the precision section, figure and
 * table; the tf32 run alone has nothing to pair with, so no section. The NVML stand-in where it
 * was built (a full build makes it), else none: the section does not need the timeline. */
static void test_precision_pair(void **state) {
    char dir[512], bin[600], mps[600], tf32[600], bf16[600], page[600], nvml[4096];
    char out[8192], err[16384];
    test_tmpdir(dir, sizeof dir);
    snprintf(mps, sizeof mps, "%s/mps", dir);
    snprintf(tf32, sizeof tf32, "%s/2xS-tf32", dir);
    snprintf(bf16, sizeof bf16, "%s/2xS-bf16", dir);
    snprintf(page, sizeof page, "%s/report.html", dir);
    mkdir(mps, 0700);
    char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    test_fake_mps_on_path(dir, FAKE_TRAIN_PATH, bin, sizeof bin);
    snprintf(nvml, sizeof nvml, "%s", test_binary("libnvml_standin.so"));
    struct stat st;
    setenv("SUITE_NVML_LIBRARY", stat(nvml, &st) == 0 ? nvml : "/nonexistent/libnvidia-ml.so.1", 1);
    setenv("SUITE_NVML_STANDIN_GPU", "H100-80GB", 1);
    setenv("SUITE_NVML_STANDIN_MIG", "off", 1);
    setenv("CUDA_MPS_PIPE_DIRECTORY", mps, 1); /* never a real daemon's */
    setenv("FAKE_TRAIN", "*:setup_ms=5,epoch_ms=20", 1);
    const char *results[] = {tf32, bf16};
    for (int i = 0; i < 2; i++) {
        int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "--mode", "mps", "--mix", "2*S",
                                 "--precision", i ? "bf16" : "tf32", "--steps-per-epoch", "2",
                                 "--train", FAKE_TRAIN_PATH, "--results", results[i], NULL);
        if (rc != 0) fprintf(stderr, "stdout: %s\nstderr: %s\n", out, err);
        assert_int_equal(rc, 0);
    }
    setenv("PATH", old_path, 1);
    free(old_path);
    unsetenv("FAKE_TRAIN");
    unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    unsetenv("SUITE_NVML_LIBRARY");

    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", tf32, bf16, "-o", page, NULL);
    if (rc != 0) fprintf(stderr, "stdout: %s\nstderr: %s\n", out, err);
    assert_int_equal(rc, 0);
    char *html = read_all(page);
    assert_non_null(strstr(html, "<h2 id=precision>bf16 against tf32</h2>"));
    assert_non_null(strstr(html, "<a href=#precision>"));
    const char *img = strstr(html, "<img id=fig-precision ");
    assert_non_null(img);
    assert_int_equal(strncmp(strstr(img, " src='"), " src='data:image/svg+xml;base64,", 32), 0);
    assert_non_null(strstr(strstr(html, "<!-- figures:"), " fig-precision"));
    const char *table = strstr(html, "<th>bf16 / tf32</th>");
    assert_non_null(table);
    assert_non_null(strstr(table, "<td class=l>2*S</td><td class=l>mps</td><td>2</td>"));
    free(html);

    rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", tf32, "-o", page, NULL);
    if (rc != 0) fprintf(stderr, "stdout: %s\nstderr: %s\n", out, err);
    assert_int_equal(rc, 0);
    html = read_all(page);
    assert_null(strstr(html, "fig-precision"));
    assert_null(strstr(html, "id=precision"));
    assert_null(strstr(html, "bf16 against tf32"));
    free(html);
    test_rmtree(dir);
}

/* Each collocated run against its own job alone (tests/fixtures/report_alone: fake_train, one
 * ResNet-26 job alone, in serial and collocated, in tf32 and bf16; see its README). The canonical job name
 * carries a precision only where one was given, and neither --steps-per-epoch nor the measurement:
 * the references are keyed by all of them (report_data.JobKey). tf32 2xS (1.2 s epochs) against
 * the completion-measured tf32 alone (0.8 s), not the mean with the window-measured one (0.2 s):
 * STP 2 x 0.8 / 1.2 = 1.33 (0.83 with the mean), speed-up 2 x 1.60 / 2.40 = 1.33; bf16 2xS (0.5
 * s) against bf16 alone (0.4 s): 1.60; tf32 named explicitly (1.6 s) against the default tf32
 * alone: 1.00. The bf16 / tf32 table pairs runs of the same measurement only. */
static void test_alone_reference_per_job(void **state) {
    char dir[512], page[600], out[4096], err[8192];
    test_tmpdir(dir, sizeof dir);
    snprintf(page, sizeof page, "%s/report.html", dir);
    int rc = test_run_binary("run_suite", out, sizeof out, err, sizeof err, "report", ALONE, "-o", page, NULL);
    if (rc != 0) fprintf(stderr, "stdout: %s\nstderr: %s\n", out, err);
    assert_int_equal(rc, 0);
    char *html = read_all(page);
    static const char *const dagger = "<sup>\xe2\x80\xa0</sup>";
    struct {
        const char *heading, *row, *jobs;
    } want[] = {
        {"batch 128 (small)</h3>", "<td>2.40</td><td class=l>%s</td><td>853</td><td>1.33%s</td>"
                                   "<td>1.50%s</td><td>1.00%s</td><td>1.33%s</td>",
         "<span class=nw>S#0: 426</span><br><span class=nw>S#1: 426</span>"},
        {"batch 128[precision=bf16] (small)</h3>", "<td>1.00</td><td class=l>%s</td><td>2,043</td>"
                                                   "<td>1.60%s</td><td>1.25%s</td><td>1.00%s</td><td>1.60%s</td>",
         "<span class=nw>S#0: 1,022</span><br><span class=nw>S#1: 1,021</span>"},
        {"batch 128[precision=tf32] (small)</h3>", "<td>3.20</td><td class=l>%s</td><td>639</td>"
                                                   "<td>1.00%s</td><td>2.00%s</td><td>1.00%s</td><td>1.00%s</td>",
         "<span class=nw>S#0: 320</span><br><span class=nw>S#1: 320</span>"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        char row[512];
        snprintf(row, sizeof row, want[i].row, want[i].jobs, dagger, dagger, dagger, dagger);
        char *table = section_table(html, want[i].heading);
        assert_non_null(table);
        if (!strstr(table, row)) fprintf(stderr, "%s: expected %s in\n%s\n", want[i].heading, row, table ? table : "(no such section)");
        assert_non_null(strstr(table, row));
        free(table);
    }
    /* tf32 alone (completion, 639 samples/s) against bf16 alone (1,275), not the window-measured tf32 */
    const char *pairs = strstr(html, "<th>bf16 / tf32</th>");
    assert_non_null(pairs);
    assert_non_null(strstr(pairs, "<td class=l>S</td><td class=l>serial</td><td>1</td><td>639</td><td>1,275</td><td>2.00x</td>"));
    free(html);
    test_rmtree(dir);
}

/* The report's Python spread (report_data.Spread, spread_rank) is base/spread.h's rule: on the
 * same numbers both print the same "median [min-max]" and the same ranking sign. */
static void test_spread_agrees_with_c(void **state) {
    enum { SETS = 8, MAX = 4 };
    static const double sets[SETS][MAX] = {{1, 2, 3}, {3, 1, 2, 4}, {5}, {0}, {NAN, 2, INFINITY, 1},
                                           {1.0, 1.1}, {1.05, 1.2, 1.15}, {2, 2.5}};
    static const int counts[SETS] = {3, 4, 1, 0, 4, 2, 3, 2};
    char expected[4096] = "", line[256];
    for (int a = 0; a < SETS; a++) {
        spread sa = spread_of(sets[a], counts[a]);
        spread_format(line, sizeof line, sa, "%.2f");
        strcat(expected, line);
        for (int b = 0; b < SETS; b++) {
            strcat(expected, " ");
            strcat(expected, spread_rank_sign(spread_rank(sa, spread_of(sets[b], counts[b]))));
        }
        strcat(expected, "\n");
    }
    char code[2048];
    snprintf(code, sizeof code,
             "import sys; sys.path.insert(0, '%s/results')\n"
             "from report_data import Spread, spread_rank, spread_rank_sign\n"
             "nan, inf = float('nan'), float('inf')\n"
             "sets = [[1, 2, 3], [3, 1, 2, 4], [5], [], [nan, 2, inf, 1], [1.0, 1.1], [1.05, 1.2, 1.15], [2, 2.5]]\n"
             "for a in sets:\n"
             "    print(Spread(a).format('{:.2f}') + ''.join(' ' + spread_rank_sign(spread_rank(Spread(a), Spread(b))) for b in sets))\n",
             SUITE_SOURCE_DIR);
    char *const argv[] = {"/usr/bin/env", "python3", "-c", code, NULL};
    char out[4096], err[4096];
    int rc = test_run(argv, out, sizeof out, err, sizeof err);
    if (rc != 0) fprintf(stderr, "%s\n", err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, expected);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spread_agrees_with_c),
        cmocka_unit_test(test_fixture_page),
        cmocka_unit_test(test_mixed_window_and_repeats),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_study_cell_not_run),
        cmocka_unit_test(test_precision_pair),
        cmocka_unit_test(test_alone_reference_per_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
