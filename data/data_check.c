/* The check of a data set's files before training (data/data_check.h): presence by each reader's
 * own file names, then the reader's open (or its header pass, for the sets too large to decode
 * twice), and nothing kept. */
#include "data/data_check.h"
#include "base/file_kind.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "data/criteo.h"
#include "data/dataset.h"

static int is_criteo(const char *data) { return !strncmp(data, "criteo-", 7); }

int data_present(const char *data, const char *root) {
    if (!strcmp(data, "fashion-mnist")) return dataset_fashion_mnist_present(root);
    if (!root || !*root) return 0;
    if (!strcmp(data, "cifar10")) return dataset_cifar10_present(root);
    if (!strcmp(data, "imagenet64")) return dataset_imagenet64_present(root);
    if (!strcmp(data, "imagenet")) return dataset_imagenet_present(root);
    if (is_criteo(data)) return criteo_files_present(root);
    return 0;
}

/* Both splits opened and closed: the readers check every record, or the listings. */
static int open_both(const char *data, const char *root, char *err, size_t err_size) {
    for (int train = 1; train >= 0; train--) {
        dataset d;
        int rc;
        if (!strcmp(data, "fashion-mnist")) {
            rc = dataset_open_fashion_mnist(&d, root, train, err, err_size);
        } else if (!strcmp(data, "cifar10")) {
            rc = dataset_open_cifar10(&d, root, train, err, err_size);
        } else {
            imagenet_options o = {root, train, 0, 0, 0, NULL};
            rc = dataset_open_imagenet(&d, &o, err, err_size);
        }
        if (rc != 0) return -1;
        dataset_close(&d);
    }
    return 0;
}

data_check_status data_check(const char *data, const char *root, char *err, size_t err_size) {
    if (!data || !strcmp(data, "synthetic")) return DATA_CHECK_OK;
    int defaulted = !strcmp(data, "fashion-mnist") && (!root || !*root);
    if (!data_present(data, root)) {
        snprintf(err, err_size, "--data %s: none of its files in %s", data,
                 defaulted ? FASHION_MNIST_DEFAULT_ROOT : root && *root ? root : "(no --data-root given)");
        return DATA_CHECK_ABSENT;
    }
    int rc;
    if (!strcmp(data, "imagenet64")) {
        rc = dataset_check_imagenet64(root, err, err_size);
    } else if (is_criteo(data)) {
        int64_t tables[CRITEO_SPARSE];
        for (int t = 0; t < CRITEO_SPARSE; t++) tables[t] = CRITEO_MAX_TABLE;
        criteo *r = NULL;
        rc = criteo_open(&r, root, tables, 1, err, err_size);
        if (r) criteo_close(r);
    } else {
        rc = open_both(data, root, err, err_size);
    }
    return rc == 0 ? DATA_CHECK_OK : DATA_CHECK_MALFORMED;
}

int data_root_check(const char *data, const char *root, char *err, size_t err_size) {
    if (!root || !*root) return 0;
    struct stat st, link;
    if (stat(root, &st) != 0) {
        int e = errno;
        snprintf(err, err_size, "--data-root %s: %s; expected the data sets' folder", root,
                 e == ELOOP ? "is a symbolic link loop"
                 : e == ENOENT && lstat(root, &link) == 0 ? "is a symbolic link to nothing"
                 : e == ENOENT ? "does not exist" : strerror(e));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(root); /* what the readers will do: no permission bits guessed */
        if (!d) {
            snprintf(err, err_size, "--data-root %s: cannot be read: %s", root, strerror(errno));
            return -1;
        }
        closedir(d);
        return 0;
    }
    if (is_criteo(data) && S_ISREG(st.st_mode)) { /* the click logs' TSV itself */
        char why[1024];
        if (dataset_file_status(root, why, sizeof why) == DATASET_FILE_REGULAR) return 0;
        snprintf(err, err_size, "--data-root %s", why);
        return -1;
    }
    snprintf(err, err_size, "--data-root %s: is %s; expected the data sets' folder%s", root,
             S_ISREG(st.st_mode) ? "a file" : file_kind_name(st.st_mode), is_criteo(data) ? " or a Criteo TSV file" : "");
    return -1;
}

int data_describe(const char *data, const char *root, int if_present, char *what, size_t size) {
    int given = root && *root;
    if (!data || !strcmp(data, "synthetic")) {
        snprintf(what, size, "synthetic data (the set has no files)");
        return 0;
    }
    if (!strcmp(data, "fashion-mnist") && !given) {
        snprintf(what, size, "real files in %s (the installed copy)", FASHION_MNIST_DEFAULT_ROOT);
        return 1;
    }
    if (!given) {
        snprintf(what, size, "synthetic %s-shaped data: no --data-root given", data);
        return 0;
    }
    if (data_present(data, root) || !if_present) { /* absent without --data-if-present: train refuses it */
        snprintf(what, size, "real files in %s", root);
        return 1;
    }
    snprintf(what, size, "synthetic %s-shaped data: none of its files in %s (--data-if-present)", data, root);
    return 0;
}
