/* Whether a data set's files are there and well formed, checked before anything trains, by the
 * readers themselves: `run_suite` runs it once over every data set of a run before any job starts,
 * and `train --data-if-present` falls back to synthetic data only where a set is absent, never
 * where it is present but malformed. What is read:
 *   fashion-mnist, cifar10   every record (the files are small);
 *   imagenet64               each .npz's directory, data.npy's header and shape, every label;
 *   imagenet                 the folder listings and the validation label file (an image that
 *                            fails to decode stays a training-time error, or is skipped under
 *                            --skip-bad);
 *   criteo-*                 the first line, as criteo_open parses it. */
#ifndef SUITE_DATA_CHECK_H
#define SUITE_DATA_CHECK_H

#include <stddef.h>

typedef enum {
    DATA_CHECK_MALFORMED = -1, /* present but not whole or not well formed (err: the file, the record) */
    DATA_CHECK_OK = 0,         /* present and well formed, or a set without files (synthetic) */
    DATA_CHECK_ABSENT = 1,     /* none of its files under root (err says where they were looked for) */
} data_check_status;

/* data: a data set's name as train's --data takes it; root: its --data-root ("" or NULL: the
 * set's default, which only fashion-mnist has; the other sets are then absent). A set is present
 * when any of its files' names is there in any form; each must then be a readable regular file. */
int data_present(const char *data, const char *root);
data_check_status data_check(const char *data, const char *root, char *err, size_t err_size);

/* A --data-root that was given must be usable, whatever the sets under it: a folder that can be
 * read (for the click logs also a readable regular file, the TSV itself), not missing, not a link
 * to nothing or in a loop. 0, or -1 with "--data-root ROOT: what it is; expected ..." (exit 2):
 * never a reason for synthetic data, which --data-if-present gives only for a set absent under a
 * usable root. */
int data_root_check(const char *data, const char *root, char *err, size_t err_size);

/* Which data a job of that set trains on, by presence alone (no file read): real files (what: the
 * folder or file) or synthetic data (what: why: the set has no files, no --data-root was given,
 * or absent under it with --data-if-present), as train decides it. The names every job's data goes
 * by in the dry run, train's setup line and event, run.json and the report. Returns 1 for real. */
int data_describe(const char *data, const char *root, int if_present, char *what, size_t size);

#endif
