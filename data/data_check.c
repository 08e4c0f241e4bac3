/* The check of a data set's files before training (data/data_check.h): presence by each reader's
 * own file names, then the reader's open (or its header pass, for the sets too large to decode
 * twice), and nothing kept. */
#include "data/data_check.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

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
