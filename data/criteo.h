/* Criteo click logs for the DLRM-style recommender: a sample is not an image but 13 dense
 * features, 26 categorical ones and a click label, so Criteo has its own small interface beside
 * dataset.h, with the same habits: random access by index from any thread, deterministic
 * synthetic data through the same layout, and messages that name the file and line.
 *
 * Files: the Kaggle Display Advertising Challenge train.txt, or the Terabyte day_0 .. day_23
 * (uncompressed: gunzip them first, since reading by offset needs plain files). Each line is
 * label \t I1..I13 \t C1..C26: the label 0 or 1, integer features (empty -> 0, negative -> 0,
 * then log(1 + x)), categorical features of up to 8 hexadecimal digits (empty -> 0).
 *
 * Hashing the categories (as facebookresearch/dlrm's data_utils.py with --max-ind-range): the
 * hexadecimal string is read as an unsigned 32-bit integer, int(x, 16), and taken modulo the
 * feature's table size. dlrm then renumbers the values it has seen into 0..count-1 through a
 * dictionary built over the whole data set; that renumbering is a one-to-one relabelling of the
 * same values (the same collisions, the same table use), needs a full pass over every file
 * first, and is left out here: an index is hex % table_size. */
#ifndef SUITE_CRITEO_H
#define SUITE_CRITEO_H

#include <stddef.h>
#include <stdint.h>

#define CRITEO_DENSE 13
#define CRITEO_SPARSE 26
#define CRITEO_FIELDS (1 + CRITEO_DENSE + CRITEO_SPARSE)
#define CRITEO_MAX_LINE 4096          /* bytes, newline included; real lines are under 600 */
#define CRITEO_MAX_TABLE INT32_MAX    /* indices are int32 */

typedef struct criteo criteo;

/* path: a TSV file, or a folder holding train.txt (Kaggle) or day_0, day_1, ... (Terabyte; the
 * consecutive ones present, in order). table_sizes: rows of each of the 26 embedding tables, 1 ..
 * CRITEO_MAX_TABLE. max_rows > 0 stops indexing after that many lines (0: all).
 *
 * Open reads every file once to index where each line starts: 8 bytes per line (360 MB for
 * Kaggle's 45M lines; 35 GB for all of Terabyte's 4.4 billion, so cap it with max_rows or pass a
 * few days). Lines are parsed when read, and the first line of each file at open already (a file
 * of another format fails here, naming the file and line); open refuses empty and over-long lines. */
int criteo_open(criteo **out, const char *path, const int64_t table_sizes[CRITEO_SPARSE],
                int64_t max_rows, char *err, size_t err_size);
/* 1 when path names Criteo files criteo_open would read (a file, or a folder with train.txt or
 * day_0), whether or not they are well formed: "absent" data may be replaced by synthetic data,
 * malformed data is an error. */
int criteo_files_present(const char *path);

/* Synthetic Criteo-like rows with a planted signal, deterministic by (seed, row):
 *   dense[j]  = log(1 + count), count = floor(exp(6u) - 1) for u uniform, or 0 (missing, 10%)
 *   sparse[j] = floor(table_size[j] * u^4) (skewed towards small indices, as real categories)
 *   label     = 1 with probability sigmoid(criteo_synthetic_logit(dense, sparse)).
 * A model that learns the logit reaches the Bayes log-loss; one that learns nothing stays at the
 * base rate, so training progress is measurable. */
typedef struct criteo_synthetic_spec {
    int64_t rows;
    int64_t table_sizes[CRITEO_SPARSE];
    uint64_t seed;
} criteo_synthetic_spec;
int criteo_open_synthetic(criteo **out, const criteo_synthetic_spec *spec, char *err,
                          size_t err_size);
/* -0.5 + 0.8 (dense[0] - 2.5) - 0.6 (dense[1] - 2.5) + 0.4 (dense[2] - 2.5)
 *      + 1.0 s(sparse[0]) - 0.7 s(sparse[1]) + 0.5 s(sparse[2]),   s(v) = v odd ? 1 : -1 */
double criteo_synthetic_logit(const float dense[CRITEO_DENSE],
                              const int32_t sparse[CRITEO_SPARSE]);

int64_t criteo_rows(const criteo *r);
const int64_t *criteo_table_sizes(const criteo *r);

/* Rows indices[0..n) into dense [n, 13], sparse [n, 26] and labels [n] (0 or 1). Safe to call
 * from several threads at once on distinct outputs (pread, no shared state). Returns 0, or -1
 * with the file, line and field in err. */
int criteo_read(const criteo *r, float *dense, int32_t *sparse, float *labels,
                const int64_t *indices, int n, char *err, size_t err_size);
void criteo_close(criteo *r);

/* One TSV line (length bytes, a trailing "\n" or "\r\n" allowed), as criteo_read parses it;
 * -1 with the field and the reason in why. Used by the reader and tests/fuzz/fuzz_criteo.c. */
int criteo_parse_line(float dense[CRITEO_DENSE], int32_t sparse[CRITEO_SPARSE], float *label,
                      const char *line, size_t length, const int64_t table_sizes[CRITEO_SPARSE],
                      char *why, size_t why_size);

#endif
