/* Where a program may put an output it is told to write (`run_suite report -o`, `run_suite
 * --results`, `train --save`): one rule for every such option, applied before anything is
 * rendered, trained or run, so that a bad path is bad input (exit 2) rather than lost work or an
 * overwritten input.
 *
 * An output goes to a regular file (written to a temporary file beside it and renamed over it) or
 * to a folder the program creates or already owns; never onto a device, a FIFO, a socket or a
 * symbolic link that leads nowhere or in a circle, never onto one of the program's inputs (a file
 * it reads, or an existing file inside a folder it reads), and never into a folder it cannot write
 * (a file is created there and removed to find out: permissions, a read-only mount, /proc) or over
 * a file marked immutable or append-only. Host only, in base/: run_suite and train apply it alike. */
#ifndef SUITE_BASE_OUTPUT_PATH_H
#define SUITE_BASE_OUTPUT_PATH_H

#include <stddef.h>

typedef enum { OUTPUT_PATH_FILE, OUTPUT_PATH_FOLDER } output_path_kind;

typedef struct output_path_rule {
    const char *option;              /* how the message names it: "-o", "--save", "--results" */
    output_path_kind kind;
    const char *const *inputs;       /* what the program reads (files or folders), NULL-terminated; may be NULL */
    /* the ending of the files this program writes (".html"): such a file inside an input folder may be
       replaced, being an output of an earlier call; NULL: none may */
    const char *own_suffix;
} output_path_rule;

/* 0 when path may take the output; -1 with "<option> <path>: <what is wrong>; expected ..." in err
 * (the caller exits 2). */
int output_path_check(const output_path_rule *rule, const char *path, char *err, size_t err_size);

#endif
