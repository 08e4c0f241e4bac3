/* Lines from a file descriptor without blocking the caller longer than it allows: a job reads the
 * runner's commands on stdin between steps, the runner reads the go relay's lines, the job host
 * its commands, all through this one reader. */
#ifndef SUITE_BASE_LINE_READER_H
#define SUITE_BASE_LINE_READER_H

#include <stddef.h>

typedef struct line_reader {
    int fd;
    char buf[512];
    size_t len;
    int eof;
} line_reader;

/* Waits up to timeout_ms (0: never; -1: until a line or the end). 1 with a line (its '\n'
 * removed, cut to size) in line, 0 when none is complete yet, -1 at end of input. A line longer
 * than the buffer is dropped: it is not one of the protocol's. */
int line_reader_next(line_reader *r, int timeout_ms, char *line, size_t size);

#endif
