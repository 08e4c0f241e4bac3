/* Criteo reader: TSV lines written here (empty and negative fields, CRLF, a last line without its
 * newline) must parse to exactly log(1 + max(x, 0)) and hex % table_size; the folder layouts
 * (train.txt; day_0, day_1, ...) and max_rows must index the right lines; malformed lines must be
 * refused with the file, line and column; reads from several threads must agree; the synthetic
 * generator must be deterministic by seed and carry its planted logistic signal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/criteo.h"
#include "tests/support/testutil.h"

static int64_t tables[CRITEO_SPARSE];

static void set_tables(void) {
    for (int j = 0; j < CRITEO_SPARSE; j++) tables[j] = 1000 + 37 * j;
}

/* Line r of a fixture: label r % 2, I_j = r * 10 + j (I3 empty, I5 negative), C_j a hex value
 * derived from (r, j) (C4 empty, C7 upper case). */
static void make_line(char *line, size_t size, int r) {
    int n = snprintf(line, size, "%d", r % 2);
    for (int j = 1; j <= CRITEO_DENSE; j++) {
        if (j == 3) n += snprintf(line + n, size - n, "\t");
        else if (j == 5) n += snprintf(line + n, size - n, "\t-%d", r + 1);
        else n += snprintf(line + n, size - n, "\t%d", r * 10 + j);
    }
    for (int j = 1; j <= CRITEO_SPARSE; j++) {
        uint32_t v = (uint32_t)(r + 1) * 2654435761u ^ (uint32_t)j * 40503u;
        if (j == 4) n += snprintf(line + n, size - n, "\t");
        else n += snprintf(line + n, size - n, j == 7 ? "\t%08X" : "\t%08x", v);
    }
}

static void expect_row(const float *dense, const int32_t *sparse, float label, int r) {
    expect_eq(label, (float)(r % 2));
    for (int j = 1; j <= CRITEO_DENSE; j++) {
        double x = j == 3 || j == 5 ? 0.0 : r * 10.0 + j;
        if (fabs(dense[j - 1] - log1p(x)) > 1e-6)
            fail_msg("row %d I%d: %.7f, want %.7f", r, j, dense[j - 1], log1p(x));
    }
    for (int j = 1; j <= CRITEO_SPARSE; j++) {
        uint32_t v = j == 4 ? 0 : (uint32_t)(r + 1) * 2654435761u ^ (uint32_t)j * 40503u;
        assert_int_equal(sparse[j - 1], (int32_t)(v % (uint32_t)tables[j - 1]));
    }
}

/* Rows first..first+count-1; the last line without its newline when cut_last, CRLF when crlf. */
static void write_rows(const char *path, int first, int count, int crlf, int cut_last) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    char line[1024];
    for (int r = first; r < first + count; r++) {
        make_line(line, sizeof line, r);
        fputs(line, f);
        if (r + 1 < first + count || !cut_last) fputs(crlf ? "\r\n" : "\n", f);
    }
    fclose(f);
}

static void check_rows(const criteo *c, const int64_t *indices, int n, const int *row_of) {
    float *dense = malloc((size_t)n * CRITEO_DENSE * sizeof(float));
    int32_t *sparse = malloc((size_t)n * CRITEO_SPARSE * sizeof(int32_t));
    float *labels = malloc((size_t)n * sizeof(float));
    char err[512] = "";
    if (criteo_read(c, dense, sparse, labels, indices, n, err, sizeof err) != 0)
        fail_msg("%s", err);
    for (int k = 0; k < n; k++)
        expect_row(dense + k * CRITEO_DENSE, sparse + k * CRITEO_SPARSE, labels[k],
                   row_of[indices[k]]);
    free(dense);
    free(sparse);
    free(labels);
}

static void test_kaggle_file(void **state) {
    set_tables();
    char dir[512], path[700], err[512];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/train.txt", dir);
    write_rows(path, 0, 7, 1, 1);
    int row_of[7] = {0, 1, 2, 3, 4, 5, 6};
    int64_t order[] = {6, 0, 3, 5, 1, 2, 4};
    criteo *c;
    for (int as_folder = 0; as_folder < 2; as_folder++) {
        if (criteo_open(&c, as_folder ? dir : path, tables, 0, err, sizeof err) != 0)
            fail_msg("%s", err);
        assert_int_equal(criteo_rows(c), 7);
        check_rows(c, order, 7, row_of);
        criteo_close(c);
    }
    if (criteo_open(&c, path, tables, 3, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(criteo_rows(c), 3);
    int64_t last[] = {2, 0};
    check_rows(c, last, 2, row_of);
    int64_t outside[] = {3};
    float dense[CRITEO_DENSE], label;
    int32_t sparse[CRITEO_SPARSE];
    assert_int_equal(criteo_read(c, dense, sparse, &label, outside, 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "row 3 out of range [0, 3)"));
    criteo_close(c);
    test_rmtree(dir);
}

/* day_0, day_1 (empty), day_2, day_3; day_5 is not read (day_4 is missing). */
static void test_terabyte_days(void **state) {
    set_tables();
    char dir[512], path[700], err[512];
    test_tmpdir(dir, sizeof dir);
    int counts[4] = {3, 0, 4, 2}, first = 0;
    for (int day = 0; day < 4; day++) {
        snprintf(path, sizeof path, "%s/day_%d", dir, day);
        write_rows(path, first, counts[day], 0, day == 3);
        first += counts[day];
    }
    snprintf(path, sizeof path, "%s/day_5", dir);
    write_rows(path, 100, 5, 0, 0);
    criteo *c;
    if (criteo_open(&c, dir, tables, 0, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(criteo_rows(c), 9);
    int row_of[9] = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    int64_t order[] = {8, 3, 2, 0, 7, 6, 1, 5, 4};
    check_rows(c, order, 9, row_of);
    criteo_close(c);
    if (criteo_open(&c, dir, tables, 5, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(criteo_rows(c), 5); /* day_0 and two lines of day_2 */
    int64_t some[] = {4, 3, 0};
    check_rows(c, some, 3, row_of);
    criteo_close(c);

    /* a bad field in day_2, line 3: the message names the file, line and column */
    snprintf(path, sizeof path, "%s/day_2", dir);
    FILE *f = fopen(path, "wb");
    char line[1024];
    for (int r = 3; r < 7; r++) {
        make_line(line, sizeof line, r);
        if (r == 5) line[strlen(line) - 3] = 'g';
        fprintf(f, "%s\n", line);
    }
    fclose(f);
    if (criteo_open(&c, dir, tables, 0, err, sizeof err) != 0) fail_msg("%s", err);
    int64_t bad[] = {0, 5};
    float dense[2 * CRITEO_DENSE], labels[2];
    int32_t sparse[2 * CRITEO_SPARSE];
    assert_int_equal(criteo_read(c, dense, sparse, labels, bad, 2, err, sizeof err), -1);
    if (!strstr(err, "day_2: line 3: C26 (column 40)") || !strstr(err, "not a hexadecimal"))
        fail_msg("unexpected message: %s", err);
    criteo_close(c);
    test_rmtree(dir);
}

static void expect_parse_error(const char *line, const char *part) {
    float dense[CRITEO_DENSE], label;
    int32_t sparse[CRITEO_SPARSE];
    char why[256] = "";
    assert_int_equal(criteo_parse_line(dense, sparse, &label, line, strlen(line), tables, why,
                                       sizeof why), -1);
    if (!strstr(why, part)) fail_msg("\"%s\": message \"%s\" lacks \"%s\"", line, why, part);
}

static void test_parse_line(void **state) {
    set_tables();
    char line[1024];
    float dense[CRITEO_DENSE], label;
    int32_t sparse[CRITEO_SPARSE];
    char why[256];
    /* an all-empty line except the label: zeros everywhere */
    snprintf(line, sizeof line, "1");
    for (int f = 1; f < CRITEO_FIELDS; f++) strcat(line, "\t");
    assert_int_equal(criteo_parse_line(dense, sparse, &label, line, strlen(line), tables, why,
                                       sizeof why), 0);
    expect_eq(label, 1.0f);
    for (int j = 0; j < CRITEO_DENSE; j++) expect_eq(dense[j], 0.0f);
    for (int j = 0; j < CRITEO_SPARSE; j++) assert_int_equal(sparse[j], 0);
    /* values: hex ffffffff % 1000, a one-digit hex, large counts */
    snprintf(line, sizeof line, "0\t999999\t0\t-7");
    for (int j = 4; j <= CRITEO_DENSE; j++) strcat(line, "\t1");
    strcat(line, "\tffffffff\ta");
    for (int j = 3; j <= CRITEO_SPARSE; j++) strcat(line, "\t68fd1e64");
    strcat(line, "\n");
    assert_int_equal(criteo_parse_line(dense, sparse, &label, line, strlen(line), tables, why,
                                       sizeof why), 0);
    expect_lt(fabs(dense[0] - log1p(999999.0)), 1e-5);
    expect_eq(dense[1], 0.0f); expect_eq(dense[2], 0.0f);
    expect_lt(fabs(dense[3] - log(2.0)), 1e-7);
    assert_int_equal(sparse[0], (int32_t)(0xffffffffu % 1000u));
    assert_int_equal(sparse[1], 10);
    assert_int_equal(sparse[2], (int32_t)(0x68fd1e64u % (uint32_t)tables[2]));

    make_line(line, sizeof line, 3);
    line[0] = '2';
    expect_parse_error(line, "label '2' is not 0 or 1");
    make_line(line, sizeof line, 3);
    strcat(line, "\textra");
    expect_parse_error(line, "41 tab-separated fields, expected 40");
    make_line(line, sizeof line, 3);
    *strrchr(line, '\t') = '\0';
    expect_parse_error(line, "39 tab-separated fields, expected 40");
    expect_parse_error("", "1 tab-separated fields, expected 40");
    expect_parse_error("1\t2\t3", "3 tab-separated fields");
    make_line(line, sizeof line, 3);
    memcpy(strchr(line, '\t') + 1, "1x", 2);
    expect_parse_error(line, "I1 (column 2) '1x' is not an integer");
    make_line(line, sizeof line, 3);
    memcpy(strchr(line, '\t') + 1, "-\t", 2);
    expect_parse_error(line, "I1 (column 2) '-' is not an integer");
    snprintf(line, sizeof line, "0\t1234567890123456789");
    for (int f = 2; f < CRITEO_FIELDS; f++) strcat(line, "\t");
    expect_parse_error(line, "at most 18 digits");
    snprintf(line, sizeof line, "0");
    for (int f = 1; f < CRITEO_FIELDS; f++) strcat(line, f == 14 ? "\t123456789" : "\t");
    expect_parse_error(line, "C1 (column 15) '123456789' is not a hexadecimal");
    snprintf(line, sizeof line, "0");
    for (int f = 1; f < CRITEO_FIELDS; f++) strcat(line, f == 20 ? "\t\x01z" : "\t");
    expect_parse_error(line, "C7 (column 21) '?z'");
}

static void expect_open_error(const char *path, int64_t max_rows, const char *part1,
                              const char *part2) {
    criteo *c = (criteo *)1;
    char err[1024] = "";
    assert_int_equal(criteo_open(&c, path, tables, max_rows, err, sizeof err), -1);
    assert_null(c);
    if (!strstr(err, part1) || !strstr(err, part2))
        fail_msg("message \"%s\" should contain \"%s\" and \"%s\"", err, part1, part2);
}

static void test_open_errors(void **state) {
    set_tables();
    char dir[512], path[700];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/absent", dir);
    expect_open_error(path, 0, "absent not found", "train.txt");
    expect_open_error(dir, 0, "holds neither train.txt nor day_0", "Terabyte");
    snprintf(path, sizeof path, "%s/day_0.gz", dir);
    write_rows(path, 0, 1, 0, 0);
    expect_open_error(dir, 0, "day_0.gz is there: gunzip it", "day_0");
    snprintf(path, sizeof path, "%s/train.txt", dir);
    FILE *f = fopen(path, "wb");
    fclose(f);
    expect_open_error(path, 0, "train.txt holds no lines", "TSV");
    char line[1024];
    make_line(line, sizeof line, 0);
    f = fopen(path, "wb");
    fprintf(f, "%s\n\n%s\n", line, line);
    fclose(f);
    expect_open_error(path, 0, "train.txt: line 2 is empty", "");
    f = fopen(path, "wb");
    fprintf(f, "%s\n%s\n", line, line);
    for (int i = 0; i < 5000; i++) fputc('1', f);
    fclose(f);
    expect_open_error(path, 0, "train.txt: line 3 is longer than 4096 bytes", "");
    /* a file of another format: its first line is refused at open, with the file and line */
    f = fopen(path, "wb");
    fprintf(f, "label,I1,I2\n%s\n", line);
    fclose(f);
    expect_open_error(path, 0, "train.txt: line 1:", "tab-separated fields, expected 40");
    assert_int_equal(criteo_files_present(path), 1);
    assert_int_equal(criteo_files_present(dir), 1);
    snprintf(path, sizeof path, "%s/absent", dir);
    assert_int_equal(criteo_files_present(path), 0);
    snprintf(path, sizeof path, "%s/train.txt", dir);
    tables[5] = 0;
    expect_open_error(path, 0, "table size of C6 is 0", "1..");
    tables[5] = (int64_t)1 << 31;
    expect_open_error(path, 0, "table size of C6 is 2147483648", "1..2147483647");
    test_rmtree(dir);
}

typedef struct reader_job {
    const criteo *c;
    uint64_t seed;
    int failures;
} reader_job;

/* Random rows read in batches must equal the same rows read one at a time before. */
static void *read_random(void *arg) {
    reader_job *job = arg;
    enum { batch = 16 };
    int64_t indices[batch];
    float dense[batch * CRITEO_DENSE], labels[batch];
    int32_t sparse[batch * CRITEO_SPARSE];
    char err[512];
    int64_t rows = criteo_rows(job->c);
    for (int round = 0; round < 200; round++) {
        for (int k = 0; k < batch; k++) indices[k] = (int64_t)(test_rand_u64(&job->seed) % rows);
        if (criteo_read(job->c, dense, sparse, labels, indices, batch, err, sizeof err) != 0) {
            job->failures++;
            continue;
        }
        for (int k = 0; k < batch; k++) {
            float d1[CRITEO_DENSE], l1;
            int32_t s1[CRITEO_SPARSE];
            if (criteo_read(job->c, d1, s1, &l1, &indices[k], 1, err, sizeof err) != 0 ||
                memcmp(d1, dense + k * CRITEO_DENSE, sizeof d1) != 0 ||
                memcmp(s1, sparse + k * CRITEO_SPARSE, sizeof s1) != 0 || l1 != labels[k])
                job->failures++;
        }
    }
    return NULL;
}

static void test_threads(void **state) {
    set_tables();
    char dir[512], path[700], err[512];
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/train.txt", dir);
    write_rows(path, 0, 500, 0, 0);
    criteo *c;
    if (criteo_open(&c, path, tables, 0, err, sizeof err) != 0) fail_msg("%s", err);
    pthread_t threads[4];
    reader_job jobs[4];
    for (int t = 0; t < 4; t++) {
        jobs[t] = (reader_job){c, 1000 + (uint64_t)t, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, read_random, &jobs[t]), 0);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(threads[t], NULL);
        assert_int_equal(jobs[t].failures, 0);
    }
    int row_of[500];
    for (int r = 0; r < 500; r++) row_of[r] = r;
    int64_t spot[] = {499, 250, 0};
    check_rows(c, spot, 3, row_of);
    criteo_close(c);
    test_rmtree(dir);
}

static void test_synthetic(void **state) {
    criteo_synthetic_spec spec = {.rows = 20000, .seed = 42};
    for (int j = 0; j < CRITEO_SPARSE; j++) spec.table_sizes[j] = j == 5 ? 1 : 10 + 1000 * j;
    criteo *a, *b, *other;
    char err[512];
    assert_int_equal(criteo_open_synthetic(&a, &spec, err, sizeof err), 0);
    assert_int_equal(criteo_open_synthetic(&b, &spec, err, sizeof err), 0);
    spec.seed = 43;
    assert_int_equal(criteo_open_synthetic(&other, &spec, err, sizeof err), 0);
    assert_int_equal(criteo_rows(a), 20000);
    int n = 20000;
    float *dense = malloc((size_t)n * CRITEO_DENSE * sizeof(float));
    int32_t *sparse = malloc((size_t)n * CRITEO_SPARSE * sizeof(int32_t));
    float *labels = malloc((size_t)n * sizeof(float));
    int64_t *indices = malloc((size_t)n * sizeof(int64_t));
    for (int i = 0; i < n; i++) indices[i] = n - 1 - i;
    assert_int_equal(criteo_read(a, dense, sparse, labels, indices, n, err, sizeof err), 0);

    /* any row, in any order, from another reader of the same seed: the same */
    int64_t some[] = {17, 19999, 0};
    float d[3 * CRITEO_DENSE], l[3];
    int32_t s[3 * CRITEO_SPARSE];
    assert_int_equal(criteo_read(b, d, s, l, some, 3, err, sizeof err), 0);
    for (int k = 0; k < 3; k++) {
        size_t at = (size_t)(n - 1 - some[k]);
        assert_memory_equal(d + k * CRITEO_DENSE, dense + at * CRITEO_DENSE, sizeof(float) * 13);
        assert_memory_equal(s + k * CRITEO_SPARSE, sparse + at * CRITEO_SPARSE, 4 * 26);
        expect_eq(l[k], labels[at]);
    }
    assert_int_equal(criteo_read(other, d, s, l, some, 3, err, sizeof err), 0);
    assert_memory_not_equal(d, dense + (size_t)(n - 1 - 17) * CRITEO_DENSE, sizeof(float) * 13);

    /* ranges, and the planted signal: calibrated in bins of the true logit, and informative */
    double bin_labels[4] = {0}, bin_expected[4] = {0};
    int bin_count[4] = {0};
    double loss_model = 0.0, positives = 0.0;
    for (int i = 0; i < n; i++) {
        const float *di = dense + (size_t)i * CRITEO_DENSE;
        const int32_t *si = sparse + (size_t)i * CRITEO_SPARSE;
        for (int j = 0; j < CRITEO_DENSE; j++) { expect_ge(di[j], 0.0f); expect_le(di[j], 6.0f); }
        for (int j = 0; j < CRITEO_SPARSE; j++)
            { expect_ge(si[j], 0); expect_lt(si[j], spec.table_sizes[j]); }
        assert_true(labels[i] == 0.0f || labels[i] == 1.0f);
        double p = 1.0 / (1.0 + exp(-criteo_synthetic_logit(di, si)));
        int bin = p < 0.25 ? 0 : p < 0.5 ? 1 : p < 0.75 ? 2 : 3;
        bin_labels[bin] += labels[i];
        bin_expected[bin] += p;
        bin_count[bin]++;
        loss_model -= labels[i] ? log(p) : log(1.0 - p);
        positives += labels[i];
    }
    for (int bin = 0; bin < 4; bin++) {
        expect_gt(bin_count[bin], 500);
        double got = bin_labels[bin] / bin_count[bin], want = bin_expected[bin] / bin_count[bin];
        if (fabs(got - want) > 0.03)
            fail_msg("bin %d: click rate %.3f, the logit predicts %.3f", bin, got, want);
    }
    double rate = positives / n;
    double loss_base = -n * (rate * log(rate) + (1 - rate) * log(1 - rate));
    expect_lt(loss_model, 0.85 * loss_base);

    criteo_close(other);
    criteo_synthetic_spec bad = spec;
    bad.rows = 0;
    assert_int_equal(criteo_open_synthetic(&other, &bad, err, sizeof err), -1);
    assert_non_null(strstr(err, "0 rows"));
    criteo_close(a);
    criteo_close(b);
    free(dense);
    free(sparse);
    free(labels);
    free(indices);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kaggle_file),
        cmocka_unit_test(test_terabyte_days),
        cmocka_unit_test(test_parse_line),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_synthetic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
