#define _GNU_SOURCE
#include "models/layers/conv_choices.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "kernels/check.h"
#include "kernels/knobs.h"

const char *const CONV_CHOICES_DIRECTIONS[3] = {"fwd", "bwd_data", "bwd_filter"};

const char *conv_choices_path(void) {
    const char *path = knob_text(KNOB_CONV_CHOICES);
    return path && *path && strcmp(path, "none") != 0 ? path : NULL;
}

int conv_choices_open(conv_choices *f, const char *path, int exclusive, char *err, size_t err_size) {
    f->fd = -1;
    snprintf(f->path, sizeof f->path, "%s", path);
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, err_size, "%s %s: cannot open it: %s (expected a file in a folder that exists, or none)",
                 knob_name(KNOB_CONV_CHOICES), path, strerror(errno));
        return -1;
    }
    int rc;
    while ((rc = flock(fd, exclusive ? LOCK_EX : LOCK_SH)) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
        snprintf(err, err_size, "%s %s: cannot lock it: %s", knob_name(KNOB_CONV_CHOICES), path, strerror(errno));
        close(fd);
        return -1;
    }
    f->fd = fd;
    return 0;
}

/* The whole file, NUL-terminated (malloc'd), or NULL with err. */
static char *read_all(const conv_choices *f, char *err, size_t err_size) {
    struct stat st;
    if (fstat(f->fd, &st) != 0) {
        snprintf(err, err_size, "%s: cannot read it: %s", f->path, strerror(errno));
        return NULL;
    }
    size_t size = (size_t)st.st_size, got = 0;
    char *text = malloc(size + 1);
    if (!text) {
        snprintf(err, err_size, "%s: out of host memory for its %zu bytes", f->path, size);
        return NULL;
    }
    while (got < size) {
        ssize_t n = pread(f->fd, text + got, size - got, (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            snprintf(err, err_size, "%s: cannot read it: %s", f->path, n < 0 ? strerror(errno) : "it shrank");
            free(text);
            return NULL;
        }
        got += (size_t)n;
    }
    text[size] = '\0';
    return text;
}

int conv_choices_get(conv_choices *f, const char *key, char *value, size_t value_size, char *err,
                     size_t err_size) {
    char *text = read_all(f, err, err_size);
    if (!text) return -1;
    size_t key_len = strlen(key);
    int found = 0;
    for (char *line = text; *line && !found;) {
        char *end = strchr(line, '\n');
        if (!end) break; /* a line still being written: not a choice yet */
        *end = '\0';
        if (strncmp(line, key, key_len) == 0 && line[key_len] == '\t') {
            const char *v = line + key_len + 1;
            if (strlen(v) >= value_size) {
                snprintf(err, err_size, "%s: the value under \"%s\" is longer than %zu bytes", f->path, key,
                         value_size - 1);
                free(text);
                return -1;
            }
            snprintf(value, value_size, "%s", v);
            found = 1;
        }
        line = end + 1;
    }
    free(text);
    return found;
}

int conv_choices_put(conv_choices *f, const char *key, const char *value, char *err, size_t err_size) {
    if (strpbrk(key, "\t\n") || strpbrk(value, "\t\n")) {
        snprintf(err, err_size, "%s: a key or value with a tab or newline: \"%s\"", f->path, key);
        return -1;
    }
    size_t n = strlen(key) + strlen(value) + 3;
    char *line = malloc(n);
    if (!line) {
        snprintf(err, err_size, "%s: out of host memory", f->path);
        return -1;
    }
    int len = snprintf(line, n, "%s\t%s\n", key, value);
    ssize_t wrote;
    while ((wrote = write(f->fd, line, (size_t)len)) < 0 && errno == EINTR) {
    }
    free(line);
    if (wrote != len) {
        snprintf(err, err_size, "%s: cannot append to it: %s", f->path, wrote < 0 ? strerror(errno) : "short write");
        return -1;
    }
    return 0;
}

void conv_choices_close(conv_choices *f) {
    if (f->fd < 0) return;
    flock(f->fd, LOCK_UN);
    close(f->fd);
    f->fd = -1;
}

void conv_choices_device_key(char *out, size_t size, int device, int sm_target, size_t workspace_limit,
                             int allow_tf32) {
    struct cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
    for (char *p = prop.name; *p; p++)
        if (*p == ' ' || *p == '\t') *p = '_';
    /* written=1: chosen among candidates that write all of their output (models/layers/written.h);
     * a choice made before that check is not taken */
    snprintf(out, size, "gpu=%s/%dsm told=%d cudnn=%zu ws=%zu tf32=%d written=1", prop.name, prop.multiProcessorCount,
             sm_target, cudnnGetVersion(), workspace_limit, allow_tf32);
}

/* The value kept for key (1), none (0); a file that cannot be read stops the job (exit 2). A shared
 * lock is released on return; the exclusive one is kept (for the search that may follow). */
static int look_up(conv_choices *f, const char *what, const char *path, int exclusive, const char *key,
                   char *value, size_t value_size) {
    char err[1024];
    int kept = conv_choices_open(f, path, exclusive, err, sizeof err) == 0
                   ? conv_choices_get(f, key, value, value_size, err, sizeof err) : -1;
    if (kept < 0) {
        fprintf(stderr, "%s set-up: %s\n", what, err);
        exit(2);
    }
    if (!exclusive) conv_choices_close(f);
    return kept;
}

static int restored(const char *what, const char *path, const char *key, const char *value,
                    const conv_choices_layer *layer) {
    char err[1024];
    if (layer->restore(layer->user, value, err, sizeof err) == 0) {
        if (knob_flag(KNOB_CONV_LOG)) fprintf(stderr, "%s %s: kept choice %s\n", what, key, value);
        return 1;
    }
    fprintf(stderr, "%s set-up: warning: the choice kept in %s for %s does not apply (%s): searching again\n", what,
            path, key, err);
    return 0;
}

void conv_choices_choose(const char *what, const char *key, const conv_choices_layer *layer) {
    const char *path = conv_choices_path();
    if (!path) {
        layer->search(layer->user);
        return;
    }
    char value[1024], err[1024];
    conv_choices f = {.fd = -1};
    int kept = look_up(&f, what, path, 0, key, value, sizeof value);
    if (kept == 1 && restored(what, path, key, value, layer)) return;
    if (kept == 0) { /* another job may be searching it now: wait for it, and look again */
        kept = look_up(&f, what, path, 1, key, value, sizeof value);
        if (kept == 1) {
            conv_choices_close(&f);
            if (restored(what, path, key, value, layer)) return;
        }
    }
    if (f.fd < 0 && conv_choices_open(&f, path, 1, err, sizeof err) != 0) {
        fprintf(stderr, "%s set-up: %s\n", what, err);
        exit(2);
    }
    layer->search(layer->user);
    layer->describe(layer->user, value, sizeof value);
    if (kept == 0 && conv_choices_put(&f, key, value, err, sizeof err) != 0) {
        fprintf(stderr, "%s set-up: %s\n", what, err);
        exit(2);
    }
    conv_choices_close(&f);
}
