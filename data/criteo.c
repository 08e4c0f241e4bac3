/* Criteo TSV reader and synthetic generator (the format and the hashing are in criteo.h).
 *
 * Open reads each file once in large chunks and records the byte offset where every line starts
 * (one uint64 per line; lines are found with memchr, so indexing runs at disk speed). A read
 * locates the row's file by binary search over the files' first rows, preads exactly its line
 * into a stack buffer and parses it: no file position, lock or buffer is shared between threads.
 * Line numbers in messages are 1-based within their file. */
#include "data/criteo.h"
#include "base/rng.h"
#include "data/dataset.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CRITEO_MAX_FILES 24
#define CRITEO_PATH_BYTES 4096
#define CRITEO_CHUNK_BYTES ((size_t)8 << 20)

struct criteo {
    int64_t rows;
    int64_t table_sizes[CRITEO_SPARSE];
    uint64_t seed;              /* synthetic only */
    int synthetic;
    int files;
    int fds[CRITEO_MAX_FILES];
    char *paths[CRITEO_MAX_FILES];
    int64_t first_row[CRITEO_MAX_FILES + 1]; /* row where each file starts; [files] = rows */
    uint64_t file_end[CRITEO_MAX_FILES];     /* end of the last indexed line of each file */
    uint64_t *starts;           /* [rows] offset of each line within its file */
};

/* --- parsing ------------------------------------------------------------------------------ */

/* A field for a message: at most 24 characters, anything unprintable as '?'. */
static void quote_field(char *out, size_t out_size, const char *field, size_t length) {
    size_t n = 0;
    for (size_t i = 0; i < length && n + 4 < out_size && i < 24; i++) {
        unsigned char ch = (unsigned char)field[i];
        out[n++] = ch >= 0x20 && ch < 0x7F ? (char)ch : '?';
    }
    if (length > 24 && n + 4 < out_size) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

static const char *field_name(int f, char *buffer, size_t size) {
    if (f == 0) snprintf(buffer, size, "label");
    else if (f <= CRITEO_DENSE) snprintf(buffer, size, "I%d", f);
    else snprintf(buffer, size, "C%d", f - CRITEO_DENSE);
    return buffer;
}

int criteo_parse_line(float dense[CRITEO_DENSE], int32_t sparse[CRITEO_SPARSE], float *label,
                      const char *line, size_t length, const int64_t table_sizes[CRITEO_SPARSE],
                      char *why, size_t why_size) {
    if (length && line[length - 1] == '\n') length--;
    if (length && line[length - 1] == '\r') length--;
    const char *field = line, *end = line + length;
    char name[8], shown[32];
    for (int f = 0; f < CRITEO_FIELDS; f++) {
        const char *tab = memchr(field, '\t', (size_t)(end - field));
        const char *stop = tab ? tab : end;
        size_t n = (size_t)(stop - field);
        if (!tab && f != CRITEO_FIELDS - 1) {
            snprintf(why, why_size, "%d tab-separated fields, expected %d (label, I1..I13, "
                     "C1..C26)", f + 1, CRITEO_FIELDS);
            return -1;
        }
        if (tab && f == CRITEO_FIELDS - 1) {
            int count = CRITEO_FIELDS + 1;
            for (const char *p = tab + 1; (p = memchr(p, '\t', (size_t)(end - p))); p++) count++;
            snprintf(why, why_size, "%d tab-separated fields, expected %d (label, I1..I13, "
                     "C1..C26)", count, CRITEO_FIELDS);
            return -1;
        }
        if (f == 0) {
            if (n != 1 || (field[0] != '0' && field[0] != '1')) {
                quote_field(shown, sizeof shown, field, n);
                snprintf(why, why_size, "label '%s' is not 0 or 1", shown);
                return -1;
            }
            *label = (float)(field[0] - '0');
        } else if (f <= CRITEO_DENSE) {
            int64_t value = 0;
            size_t i = 0;
            int negative = n > 0 && field[0] == '-';
            if (negative) i = 1;
            if (negative && n == 1) goto not_integer;
            if (n - i > 18) goto not_integer; /* beyond any count; also keeps int64 exact */
            for (; i < n; i++) {
                if (field[i] < '0' || field[i] > '9') goto not_integer;
                value = value * 10 + (field[i] - '0');
            }
            if (negative) value = 0; /* as dlrm: negative counts become 0 */
            dense[f - 1] = (float)log1p((double)value);
        } else {
            if (n > 8) goto not_hex;
            uint32_t value = 0; /* empty: 0 */
            for (size_t i = 0; i < n; i++) {
                char ch = field[i];
                int digit = ch >= '0' && ch <= '9'   ? ch - '0'
                            : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                            : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                                     : -1;
                if (digit < 0) goto not_hex;
                value = value << 4 | (uint32_t)digit;
            }
            int table = f - 1 - CRITEO_DENSE;
            sparse[table] = (int32_t)(value % (uint64_t)table_sizes[table]);
        }
        field = stop + 1;
        continue;
    not_integer:
        quote_field(shown, sizeof shown, field, n);
        snprintf(why, why_size, "%s (column %d) '%s' is not an integer of at most 18 digits",
                 field_name(f, name, sizeof name), f + 1, shown);
        return -1;
    not_hex:
        quote_field(shown, sizeof shown, field, n);
        snprintf(why, why_size, "%s (column %d) '%s' is not a hexadecimal value of at most 8 "
                 "digits", field_name(f, name, sizeof name), f + 1, shown);
        return -1;
    }
    return 0;
}

/* --- synthetic rows ------------------------------------------------------------------------ */

static double parity_sign(int32_t v) { return (v & 1) ? 1.0 : -1.0; }

double criteo_synthetic_logit(const float dense[CRITEO_DENSE],
                              const int32_t sparse[CRITEO_SPARSE]) {
    return -0.5 + 0.8 * (dense[0] - 2.5) - 0.6 * (dense[1] - 2.5) + 0.4 * (dense[2] - 2.5) +
           1.0 * parity_sign(sparse[0]) - 0.7 * parity_sign(sparse[1]) +
           0.5 * parity_sign(sparse[2]);
}

static void synthetic_row(const criteo *r, int64_t row, float *dense, int32_t *sparse,
                          float *label) {
    uint64_t state = r->seed ^ 0x3C6EF372FE94F82Bull;
    state = rng_next(&state) ^ (uint64_t)row * 0xD6E8FEB86659FD93ull;
    rng_next(&state);
    for (int j = 0; j < CRITEO_DENSE; j++) {
        double missing = rng_uniform_double(&state), u = rng_uniform_double(&state);
        double count = missing < 0.1 ? 0.0 : floor(expm1(6.0 * u));
        dense[j] = (float)log1p(count);
    }
    for (int j = 0; j < CRITEO_SPARSE; j++) {
        double u = rng_uniform_double(&state);
        int64_t index = (int64_t)(r->table_sizes[j] * (u * u * u * u));
        sparse[j] = (int32_t)(index < r->table_sizes[j] ? index : r->table_sizes[j] - 1);
    }
    double p = 1.0 / (1.0 + exp(-criteo_synthetic_logit(dense, sparse)));
    *label = rng_uniform_double(&state) < p ? 1.0f : 0.0f;
}

/* --- files --------------------------------------------------------------------------------- */

static int check_tables(const int64_t *table_sizes, char *err, size_t err_size) {
    if (!table_sizes) {
        snprintf(err, err_size, "Criteo: no table sizes given (26 are needed)");
        return -1;
    }
    for (int j = 0; j < CRITEO_SPARSE; j++)
        if (table_sizes[j] < 1 || table_sizes[j] > CRITEO_MAX_TABLE) {
            snprintf(err, err_size, "Criteo: table size of C%d is %lld, expected 1..%d", j + 1,
                     (long long)table_sizes[j], CRITEO_MAX_TABLE);
            return -1;
        }
    return 0;
}

static criteo *criteo_new(const int64_t *table_sizes) {
    criteo *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    memcpy(r->table_sizes, table_sizes, sizeof r->table_sizes);
    for (int f = 0; f < CRITEO_MAX_FILES; f++) r->fds[f] = -1;
    return r;
}

void criteo_close(criteo *r) {
    if (!r) return;
    for (int f = 0; f < r->files; f++) {
        if (r->fds[f] >= 0) close(r->fds[f]);
        free(r->paths[f]);
    }
    free(r->starts);
    free(r);
}

/* Records a line [start, end) of file f (newline: it ends with one); 1 when max_rows is reached,
 * -1 on error. */
static int add_line(criteo *r, int f, uint64_t start, uint64_t end, int newline, int64_t line,
                    int64_t *capacity, int64_t max_rows, char *err, size_t err_size) {
    uint64_t length = end - start;
    if (length > CRITEO_MAX_LINE || length <= (uint64_t)(newline ? 1 : 0)) {
        snprintf(err, err_size, "%s: line %lld is %s", r->paths[f], (long long)line,
                 length > CRITEO_MAX_LINE ? "longer than 4096 bytes: not Criteo TSV" : "empty");
        return -1;
    }
    if (r->rows == *capacity) {
        int64_t grown = *capacity ? 2 * *capacity : (int64_t)1 << 16;
        uint64_t *larger = realloc(r->starts, (size_t)grown * sizeof *larger);
        if (!larger) {
            snprintf(err, err_size, "%s: out of memory indexing %lld lines", r->paths[f],
                     (long long)grown);
            return -1;
        }
        r->starts = larger;
        *capacity = grown;
    }
    r->starts[r->rows++] = start;
    r->file_end[f] = end;
    return max_rows > 0 && r->rows == max_rows;
}

/* Indexes one more file: the offset of each line start, up to max_rows lines in all. */
static int index_file(criteo *r, int f, int64_t *capacity, int64_t max_rows, char *err,
                      size_t err_size) {
    char *chunk = malloc(CRITEO_CHUNK_BYTES);
    if (!chunk) {
        snprintf(err, err_size, "%s: out of memory for reading", r->paths[f]);
        return -1;
    }
    uint64_t offset = 0, line_start = 0; /* bytes scanned; where the current line began */
    int64_t line = 1;
    int status = 0;
    r->file_end[f] = 0;
    while (status == 0) {
        ssize_t got = pread(r->fds[f], chunk, CRITEO_CHUNK_BYTES, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(err, err_size, "%s: read failed at byte %llu: %s", r->paths[f],
                     (unsigned long long)offset, strerror(errno));
            status = -1;
            break;
        }
        if (got == 0) break;
        const char *p = chunk, *end = chunk + got, *newline;
        while (status == 0 && (newline = memchr(p, '\n', (size_t)(end - p)))) {
            uint64_t line_end = offset + (uint64_t)(newline - chunk) + 1;
            status = add_line(r, f, line_start, line_end, 1, line++, capacity, max_rows, err,
                              err_size);
            line_start = line_end;
            p = newline + 1;
        }
        offset += (uint64_t)got;
        if (status == 0 && offset - line_start > CRITEO_MAX_LINE) { /* a line that never ends */
            snprintf(err, err_size, "%s: line %lld is longer than 4096 bytes: not Criteo TSV",
                     r->paths[f], (long long)line);
            status = -1;
        }
    }
    if (status == 0 && offset > line_start) /* the last line, without its newline */
        status = add_line(r, f, line_start, offset, 0, line, capacity, max_rows, err, err_size);
    free(chunk);
    return status < 0 ? -1 : 0;
}

/* There in any form: the folder's file is present, and then must be a regular file (criteo_open). */
static int is_there(const char *path) { return dataset_file_status(path, NULL, 0) != DATASET_FILE_ABSENT; }

static const char *expected_layout =
    "a Criteo TSV file, or a folder holding train.txt (Kaggle) or day_0, day_1, ... "
    "(Terabyte, uncompressed)";

int criteo_open(criteo **out, const char *path, const int64_t table_sizes[CRITEO_SPARSE],
                int64_t max_rows, char *err, size_t err_size) {
    *out = NULL;
    if (check_tables(table_sizes, err, err_size) != 0) return -1;
    struct stat st;
    if (!path || !*path || stat(path, &st) != 0 || strlen(path) > CRITEO_PATH_BYTES - 64) {
        snprintf(err, err_size, "Criteo: %s not found; expected %s",
                 path && *path ? path : "(no path given)", expected_layout);
        return -1;
    }
    criteo *r = criteo_new(table_sizes);
    if (!r) {
        snprintf(err, err_size, "Criteo: out of memory");
        return -1;
    }
    char candidate[CRITEO_PATH_BYTES];
    if (S_ISDIR(st.st_mode)) {
        snprintf(candidate, sizeof candidate, "%s/train.txt", path);
        if (is_there(candidate)) {
            r->paths[r->files++] = strdup(candidate);
        } else {
            for (int day = 0; day < CRITEO_MAX_FILES; day++) {
                snprintf(candidate, sizeof candidate, "%s/day_%d", path, day);
                if (!is_there(candidate)) break;
                r->paths[r->files++] = strdup(candidate);
            }
        }
        if (r->files == 0) {
            snprintf(candidate, sizeof candidate, "%s/day_0.gz", path);
            snprintf(err, err_size, "Criteo: %s holds neither train.txt nor day_0%s; expected %s",
                     path, is_there(candidate) ? " (day_0.gz is there: gunzip it)" : "",
                     expected_layout);
            criteo_close(r);
            return -1;
        }
    } else {
        r->paths[r->files++] = strdup(path);
    }
    int64_t capacity = 0;
    for (int f = 0; f < r->files; f++) {
        if (!r->paths[f]) {
            snprintf(err, err_size, "Criteo: out of memory");
            goto fail;
        }
        r->first_row[f] = r->rows;
        if (max_rows > 0 && r->rows == max_rows) { /* capped before this file: leave it out */
            free(r->paths[f]);
            for (int g = f + 1; g < r->files; g++) free(r->paths[g]);
            r->files = f;
            break;
        }
        if (dataset_file_status(r->paths[f], err, err_size) != DATASET_FILE_REGULAR) goto fail; /* never a FIFO */
        if ((r->fds[f] = open(r->paths[f], O_RDONLY | O_CLOEXEC)) < 0) {
            snprintf(err, err_size, "%s: cannot open: %s", r->paths[f], strerror(errno));
            goto fail;
        }
        if (index_file(r, f, &capacity, max_rows, err, err_size) != 0) goto fail;
    }
    r->first_row[r->files] = r->rows;
    if (r->rows == 0) {
        snprintf(err, err_size, "Criteo: %s holds no lines; expected %s", r->paths[0],
                 expected_layout);
        goto fail;
    }
    /* Each file's first line is parsed now, so a file of another format is refused here, naming
     * it and the line, before any GPU work, not by a loader thread in the middle of an epoch. */
    for (int f = 0; f < r->files; f++) {
        float dense[CRITEO_DENSE], label;
        int32_t sparse[CRITEO_SPARSE];
        int64_t row = r->first_row[f];
        if (row < r->first_row[f + 1] && criteo_read(r, dense, sparse, &label, &row, 1, err, err_size) != 0)
            goto fail;
    }
    *out = r;
    return 0;
fail:
    criteo_close(r);
    return -1;
}

int criteo_files_present(const char *path) {
    struct stat st;
    if (!path || !*path || stat(path, &st) != 0) return is_there(path);
    if (!S_ISDIR(st.st_mode)) return 1;
    char candidate[CRITEO_PATH_BYTES];
    snprintf(candidate, sizeof candidate, "%s/train.txt", path);
    if (is_there(candidate)) return 1;
    snprintf(candidate, sizeof candidate, "%s/day_0", path);
    return is_there(candidate);
}

int criteo_open_synthetic(criteo **out, const criteo_synthetic_spec *spec, char *err,
                          size_t err_size) {
    *out = NULL;
    if (spec->rows <= 0) {
        snprintf(err, err_size, "Criteo synthetic: %lld rows, expected at least one",
                 (long long)spec->rows);
        return -1;
    }
    if (check_tables(spec->table_sizes, err, err_size) != 0) return -1;
    criteo *r = criteo_new(spec->table_sizes);
    if (!r) {
        snprintf(err, err_size, "Criteo synthetic: out of memory");
        return -1;
    }
    r->synthetic = 1;
    r->rows = spec->rows;
    r->seed = spec->seed;
    *out = r;
    return 0;
}

int64_t criteo_rows(const criteo *r) { return r->rows; }

const int64_t *criteo_table_sizes(const criteo *r) { return r->table_sizes; }

int criteo_read(const criteo *r, float *dense, int32_t *sparse, float *labels,
                const int64_t *indices, int n, char *err, size_t err_size) {
    char line[CRITEO_MAX_LINE], why[256];
    for (int k = 0; k < n; k++) {
        int64_t row = indices[k];
        float *d = dense + (size_t)k * CRITEO_DENSE;
        int32_t *s = sparse + (size_t)k * CRITEO_SPARSE;
        if (row < 0 || row >= r->rows) {
            snprintf(err, err_size, "Criteo: row %lld out of range [0, %lld)", (long long)row,
                     (long long)r->rows);
            return -1;
        }
        if (r->synthetic) {
            synthetic_row(r, row, d, s, &labels[k]);
            continue;
        }
        int lo = 0, hi = r->files - 1; /* the last file whose first row is <= row */
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (r->first_row[mid] <= row) lo = mid;
            else hi = mid - 1;
        }
        uint64_t start = r->starts[row];
        uint64_t end = row + 1 < r->first_row[lo + 1] ? r->starts[row + 1] : r->file_end[lo];
        size_t length = (size_t)(end - start), got = 0;
        long long line_number = (long long)(row - r->first_row[lo]) + 1;
        while (got < length) {
            ssize_t part = pread(r->fds[lo], line + got, length - got, (off_t)(start + got));
            if (part < 0 && errno == EINTR) continue;
            if (part <= 0) {
                snprintf(err, err_size, "%s: line %lld: %s", r->paths[lo], line_number,
                         part < 0 ? strerror(errno) : "the file is shorter than when indexed");
                return -1;
            }
            got += (size_t)part;
        }
        if (criteo_parse_line(d, s, &labels[k], line, length, r->table_sizes, why,
                              sizeof why) != 0) {
            snprintf(err, err_size, "%s: line %lld: %s", r->paths[lo], line_number, why);
            return -1;
        }
    }
    return 0;
}
