/* What stands at a path, in words, for the messages that refuse it: "a folder", "a FIFO", "a
 * character device"... One wording for every reader and writer of the suite's files. */
#ifndef SUITE_BASE_FILE_KIND_H
#define SUITE_BASE_FILE_KIND_H

#include <sys/types.h>

/* st_mode's file type: "a regular file", "a folder", "a character device", "a block device",
 * "a FIFO", "a socket", "a symbolic link", or "not a regular file". */
const char *file_kind_name(mode_t mode);

#endif
