#include "base/line_reader.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

int line_reader_next(line_reader *r, int timeout_ms, char *line, size_t size) {
    for (;;) {
        char *nl = memchr(r->buf, '\n', r->len);
        if (nl) {
            size_t n = (size_t)(nl - r->buf), keep = n < size ? n : size - 1;
            memcpy(line, r->buf, keep);
            line[keep] = 0;
            r->len -= n + 1;
            memmove(r->buf, nl + 1, r->len);
            return 1;
        }
        if (r->eof) return -1;
        if (r->len == sizeof r->buf) r->len = 0; /* an over-long line: not a command */
        struct pollfd p = {r->fd, POLLIN, 0};
        int ready = poll(&p, 1, timeout_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return 0;
        ssize_t got = read(r->fd, r->buf + r->len, sizeof r->buf - r->len);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (got <= 0) r->eof = 1;
        else r->len += (size_t)got;
    }
}
