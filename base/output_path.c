/* The rule for a program's named outputs (see output_path.h). */
#define _GNU_SOURCE
#include "base/output_path.h"
#include "base/file_kind.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

static int refuse(const output_path_rule *r, const char *path, char *err, size_t err_size, const char *fmt, ...) {
    int n = snprintf(err, err_size, "%s %s: ", r->option, path);
    if (n < 0 || (size_t)n >= err_size) return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err + n, err_size - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

/* What stands at path, following links: 0 with *st; 1 when nothing does; -1 with the reason a link
 * gives (a loop, or a link to nothing) in why. */
static int look(const char *path, struct stat *st, const char **why) {
    if (stat(path, st) == 0) return 0;
    struct stat link;
    if (errno == ELOOP) *why = "is a symbolic link loop";
    else if (errno == ENOENT && lstat(path, &link) == 0) *why = "is a symbolic link to nothing";
    else if (errno == ENOENT || errno == ENOTDIR) return 1; /* ENOTDIR: a file on the way, said by the caller */
    else *why = strerror(errno);
    return -1;
}

/* The path's folder ("." for a bare name) into folder, and where its last part starts. */
static const char *split(const char *path, char *folder, size_t size) {
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(folder, size, ".");
        return path;
    }
    snprintf(folder, size, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return slash + 1;
}

/* A file is created in folder and removed: whether the output can be made there at all (a folder
 * without write permission, a read-only mount, /proc and /sys refuse). 0, or an errno. A name taken
 * (another thread of this process probing the same folder: job_host's jobs check their outputs at
 * once) is no answer: the next name is tried. */
static int probe(const char *folder) {
    char path[PATH_MAX + 64];
    for (int attempt = 0; attempt < 64; attempt++) {
        if (snprintf(path, sizeof path, "%s/.output-probe.%ld.%d", folder, (long)getpid(), attempt) >= (int)sizeof path)
            return ENAMETOOLONG;
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return errno;
        close(fd);
        unlink(path);
        return 0;
    }
    return EEXIST;
}

/* The input an existing file at path is (*inside 0), or lies inside (a folder input, *inside 1): its
 * name, else NULL. */
static const char *input_of(const output_path_rule *r, const char *path, const struct stat *st, int *inside) {
    char real[PATH_MAX], in_real[PATH_MAX];
    int resolved = realpath(path, real) != NULL;
    for (const char *const *in = r->inputs; in && *in; in++) {
        struct stat is;
        if (!**in || stat(*in, &is) != 0) continue;
        *inside = 0;
        if (is.st_dev == st->st_dev && is.st_ino == st->st_ino) return *in;
        if (!S_ISDIR(is.st_mode) || !resolved || !realpath(*in, in_real)) continue;
        size_t n = strlen(in_real);
        *inside = 1;
        if (!strncmp(real, in_real, n) && (real[n] == '/' || (n == 1 && in_real[0] == '/'))) return *in;
    }
    return NULL;
}

/* Whether the file may be replaced: not immutable, not append-only (chattr +i, +a), which a rename
 * over it would fail on after all the work. */
static int replaceable(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return 1; /* unreadable: its folder's rule (the probe) decides */
    int flags = 0;
    int fixed = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & (FS_IMMUTABLE_FL | FS_APPEND_FL));
    close(fd);
    return !fixed;
}

static int check_file(const output_path_rule *r, const char *path, char *err, size_t err_size) {
    char folder[PATH_MAX];
    const char *base = split(path, folder, sizeof folder);
    struct stat st;
    const char *why = NULL;
    int there = look(path, &st, &why);
    if (there < 0) return refuse(r, path, err, err_size, "%s; expected a regular file or a new name", why);
    if (there == 0 && S_ISDIR(st.st_mode))
        return refuse(r, path, err, err_size, "is a folder; expected a file name in it (e.g. %s%sNAME%s)", path,
                      path[strlen(path) - 1] == '/' ? "" : "/", r->own_suffix ? r->own_suffix : "");
    if (!*base) return refuse(r, path, err, err_size, "names a folder (it ends with '/'); expected a file name");
    if (there == 0 && !S_ISREG(st.st_mode))
        return refuse(r, path, err, err_size, "is %s; expected a regular file or a new name (an output replaces "
                      "what is there)", file_kind_name(st.st_mode));
    struct stat fs;
    const char *folder_why = NULL;
    int folder_there = look(folder, &fs, &folder_why);
    if (folder_there != 0 || !S_ISDIR(fs.st_mode))
        return refuse(r, path, err, err_size, "its folder %s %s", folder,
                      folder_there > 0 ? "does not exist" : folder_why ? folder_why : "is not a folder");
    if (there == 0) {
        int inside = 0;
        const char *input = input_of(r, path, &st, &inside);
        size_t n = strlen(path), own = r->own_suffix ? strlen(r->own_suffix) : 0;
        int own_kind = own && n > own && !strcmp(path + n - own, r->own_suffix);
        if (input && (!own_kind || !inside))
            return refuse(r, path, err, err_size, "is %s%s; expected a new name (an output never replaces an "
                          "input)", inside ? "a file inside " : "", inside ? input : "a file it reads");
        if (!replaceable(path))
            return refuse(r, path, err, err_size, "is immutable or append-only (chattr); expected a file it can "
                          "replace");
    }
    int e = probe(folder);
    if (e) return refuse(r, path, err, err_size, "its folder %s cannot be written: %s", folder, strerror(e));
    return 0;
}

static int check_folder(const output_path_rule *r, const char *path, char *err, size_t err_size) {
    struct stat st;
    const char *why = NULL;
    int there = look(path, &st, &why);
    if (there < 0) return refuse(r, path, err, err_size, "%s; expected a folder", why);
    if (there == 0 && !S_ISDIR(st.st_mode))
        return refuse(r, path, err, err_size, "is %s; expected a folder (or a new name)",
                      S_ISREG(st.st_mode) ? "a file" : file_kind_name(st.st_mode));
    if (there == 0) {
        for (const char *const *in = r->inputs; in && *in; in++) {
            struct stat is;
            if (**in && stat(*in, &is) == 0 && is.st_dev == st.st_dev && is.st_ino == st.st_ino)
                return refuse(r, path, err, err_size, "is %s, which this run reads; expected another folder", *in);
        }
        int e = probe(path);
        if (e) return refuse(r, path, err, err_size, "cannot be written: %s", strerror(e));
        return 0;
    }
    /* a new folder: made with its parents, in the nearest folder that exists, which must take it */
    char up[PATH_MAX];
    snprintf(up, sizeof up, "%s", path);
    for (;;) {
        char *slash = strrchr(up, '/');
        while (slash && slash > up && slash[1] == 0) *slash = 0, slash = strrchr(up, '/'); /* "a/b/" */
        if (!slash) snprintf(up, sizeof up, ".");
        else if (slash == up) up[1] = 0;
        else *slash = 0;
        there = look(up, &st, &why);
        if (there < 0) return refuse(r, path, err, err_size, "%s %s; expected a folder", up, why);
        if (there == 0) break;
        if (!slash) break;
    }
    if (!S_ISDIR(st.st_mode))
        return refuse(r, path, err, err_size, "%s is %s, not a folder", up,
                      S_ISREG(st.st_mode) ? "a file" : file_kind_name(st.st_mode));
    int e = probe(up);
    if (e) return refuse(r, path, err, err_size, "cannot be made in %s: %s", up, strerror(e));
    return 0;
}

int output_path_check(const output_path_rule *r, const char *path, char *err, size_t err_size) {
    if (!path || !*path)
        return refuse(r, "''", err, err_size, "is empty; expected a %s", r->kind == OUTPUT_PATH_FILE ? "file name"
                                                                                                     : "folder");
    if (strlen(path) >= PATH_MAX) return refuse(r, "(the path)", err, err_size, "is longer than %d bytes", PATH_MAX);
    return r->kind == OUTPUT_PATH_FILE ? check_file(r, path, err, err_size) : check_folder(r, path, err, err_size);
}
