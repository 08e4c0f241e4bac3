/* ImageNet 2012 from its JPEG folders (layouts in dataset.h). open() only lists files: the class
 * folders sorted by wnid, the images in each sorted by name, kept as one pool of paths relative to
 * root (about 40 bytes per image, 50 MB for the training set). Reading is imagenet_read.c's:
 * read() loads, decodes and transforms each requested image on the calling thread
 * (image_transform.c), so the loader's worker threads are the decoding threads; nothing is shared
 * between calls but read-only lists and atomics (the epoch and the counts of bad images and of
 * images the encoded source decoded on the host).
 *
 * Augmentation is reproducible: sample i of epoch e draws its crop and flip from a generator keyed
 * on (seed, e, i), whichever thread reads it and in whatever order. An image that fails to load or
 * decode is an error naming the file, or with skip_bad the next index that decodes takes its place
 * (and its label), and the miss is counted. */
#include "data/dataset.h"
#include "data/imagenet_files.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *expected_layout =
    "train/<wnid>/*.JPEG, and val/<wnid>/*.JPEG or val/*.JPEG with LOC_val_solution.csv or a "
    "\"filename label\" file (val.txt, val_labels.txt) in the root or in val/";

/* --- growable lists ------------------------------------------------------------------------ */

typedef struct name_list {
    char **items;
    size_t count, capacity;
} name_list;

static int names_add(name_list *l, const char *name) {
    if (l->count == l->capacity) {
        size_t grown = l->capacity ? 2 * l->capacity : 64;
        char **larger = realloc(l->items, grown * sizeof *larger);
        if (!larger) return -1;
        l->items = larger;
        l->capacity = grown;
    }
    if (!(l->items[l->count] = strdup(name))) return -1;
    l->count++;
    return 0;
}

static void names_free(name_list *l) {
    for (size_t i = 0; i < l->count; i++) free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_sort(name_list *l) {
    if (l->count) qsort(l->items, l->count, sizeof *l->items, compare_names);
}

/* Position of name in a sorted list, or -1. */
static int64_t names_find(const name_list *l, const char *name) {
    size_t lo = 0, hi = l->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(l->items[mid], name);
        if (c == 0) return (int64_t)mid;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

typedef struct sample_list {
    char *pool;
    size_t pool_used, pool_capacity;
    int64_t *offsets;
    int32_t *labels;
    int64_t count, capacity;
} sample_list;

static int samples_add(sample_list *s, const char *folder, const char *file, int32_t label) {
    size_t length = strlen(folder) + 1 + strlen(file) + 1;
    if (s->pool_used + length > s->pool_capacity) {
        size_t grown = s->pool_capacity ? 2 * s->pool_capacity : (size_t)1 << 16;
        while (grown < s->pool_used + length) grown *= 2;
        char *larger = realloc(s->pool, grown);
        if (!larger) return -1;
        s->pool = larger;
        s->pool_capacity = grown;
    }
    if (s->count == s->capacity) {
        int64_t grown = s->capacity ? 2 * s->capacity : 1024;
        int64_t *offsets = realloc(s->offsets, (size_t)grown * sizeof *offsets);
        if (offsets) s->offsets = offsets;
        int32_t *labels = realloc(s->labels, (size_t)grown * sizeof *labels);
        if (labels) s->labels = labels;
        if (!offsets || !labels) return -1;
        s->capacity = grown;
    }
    snprintf(s->pool + s->pool_used, length, "%s/%s", folder, file);
    s->offsets[s->count] = (int64_t)s->pool_used;
    s->labels[s->count] = label;
    s->count++;
    s->pool_used += length;
    return 0;
}

static void samples_free(sample_list *s) {
    free(s->pool);
    free(s->offsets);
    free(s->labels);
    memset(s, 0, sizeof *s);
}

/* --- folders ------------------------------------------------------------------------------- */

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_image_name(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name) return 0;
    return strcasecmp(dot, ".jpeg") == 0 || strcasecmp(dot, ".jpg") == 0 ||
           strcasecmp(dot, ".png") == 0;
}

/* The sorted folders (want_folders) or image files of a folder; hidden entries are skipped. */
static int list_folder(const char *path, int want_folders, name_list *out, char *err,
                       size_t err_size) {
    DIR *dir = opendir(path);
    if (!dir) {
        snprintf(err, err_size, "ImageNet: cannot list %s: %s", path, strerror(errno));
        return -1;
    }
    char full[IN_PATH_BYTES];
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        if (entry->d_name[0] == '.') continue;
        int folder;
        if (entry->d_type == DT_DIR) folder = 1;
        else if (entry->d_type == DT_REG) folder = 0;
        else { /* DT_UNKNOWN on some file systems, or a link: ask */
            snprintf(full, sizeof full, "%s/%s", path, entry->d_name);
            folder = is_dir(full);
        }
        if (want_folders ? !folder : (folder || !is_image_name(entry->d_name))) continue;
        /* an image's name on a FIFO, a device or a dangling link: bad input now, not a read that
           waits (or fails) in training */
        struct stat st;
        if (!want_folders && entry->d_type != DT_REG) { /* a stat, not an open: 1.28M of them through links */
            snprintf(full, sizeof full, "%s/%s", path, entry->d_name);
            if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) {
                snprintf(err, err_size, "ImageNet: %s went away while listed", full);
                dataset_file_status(full, err, err_size);
                closedir(dir);
                return -1;
            }
        }
        if (names_add(out, entry->d_name) != 0) {
            closedir(dir);
            snprintf(err, err_size, "ImageNet: out of memory listing %s", path);
            return -1;
        }
    }
    closedir(dir);
    names_sort(out);
    return 0;
}

/* Every image of folder/<class>/ for each class folder, labelled by its position in classes. */
static int add_class_folders(sample_list *s, const char *root, const char *split,
                             const name_list *folders, const name_list *classes, char *err,
                             size_t err_size) {
    char path[IN_PATH_BYTES], relative[IN_PATH_BYTES];
    for (size_t f = 0; f < folders->count; f++) {
        int64_t label = names_find(classes, folders->items[f]);
        if (label < 0) {
            snprintf(err, err_size,
                     "ImageNet: %s/%s/%s is not one of the %zu classes of %s/train/ (each "
                     "validation folder must be a training class)",
                     root, split, folders->items[f], classes->count, root);
            return -1;
        }
        snprintf(relative, sizeof relative, "%s/%s", split, folders->items[f]);
        snprintf(path, sizeof path, "%s/%s", root, relative);
        name_list files = {0};
        if (list_folder(path, 0, &files, err, err_size) != 0) return -1;
        for (size_t i = 0; i < files.count; i++)
            if (samples_add(s, relative, files.items[i], (int32_t)label) != 0) {
                names_free(&files);
                snprintf(err, err_size, "ImageNet: out of memory listing %s", path);
                return -1;
            }
        names_free(&files);
    }
    return 0;
}

/* --- validation label files ---------------------------------------------------------------- */

typedef struct label_entry {
    char *stem;      /* file name without extension */
    char *label;     /* a wnid or a class index */
    int line;
} label_entry;

static int compare_entries(const void *a, const void *b) {
    return strcmp(((const label_entry *)a)->stem, ((const label_entry *)b)->stem);
}

static void strip_extension(char *name) {
    char *dot = strrchr(name, '.');
    if (dot && dot != name) *dot = '\0';
}

static int is_number(const char *s) {
    if (!*s || strlen(s) > 9) return 0;
    for (; *s; s++)
        if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

/* LOC_val_solution.csv ("ImageId,PredictionString" header; label = first word of the prediction)
 * or whitespace-separated "filename label" lines. Entries come back sorted by stem. */
static int parse_label_file(const char *path, label_entry **entries_out, size_t *count_out,
                            char *err, size_t err_size) {
    uint8_t *bytes;
    size_t size;
    if (dataset_read_file(path, IN_MAX_LABEL_FILE_BYTES, &bytes, &size, err, err_size) != 0)
        return -1;
    size_t name_length = strlen(path);
    int csv = name_length >= 4 && strcasecmp(path + name_length - 4, ".csv") == 0;
    label_entry *entries = NULL;
    size_t count = 0, capacity = 0;
    int status = -1, line_number = 0;
    char line[1024];
    for (size_t pos = 0; pos < size;) {
        size_t end = pos;
        while (end < size && bytes[end] != '\n') end++;
        size_t length = end - pos;
        line_number++;
        if (length >= sizeof line) {
            snprintf(err, err_size, "%s: line %d is %zu characters long, expected a short "
                     "\"%s\" line", path, line_number, length,
                     csv ? "ImageId,wnid ..." : "file label");
            goto done;
        }
        memcpy(line, bytes + pos, length);
        line[length] = '\0';
        pos = end + 1;
        while (length && (line[length - 1] == '\r' || line[length - 1] == ' ')) line[--length] = 0;
        if (length == 0) continue;
        char *name, *label, *rest = NULL;
        if (csv) {
            if (line_number == 1 && strncmp(line, "ImageId", 7) == 0) continue; /* the header */
            char *comma = strchr(line, ',');
            name = line;
            label = comma ? comma + 1 : NULL;
            if (comma) *comma = '\0';
            if (label) label = strtok_r(label, " \t", &rest);
        } else {
            name = strtok_r(line, " \t", &rest);
            label = name ? strtok_r(NULL, " \t", &rest) : NULL;
        }
        if (!name || !*name || !label || !*label) {
            snprintf(err, err_size, "%s: line %d is not %s", path, line_number,
                     csv ? "\"ImageId,wnid x y x y ...\"" : "\"filename label\"");
            goto done;
        }
        if (count == capacity) {
            size_t grown = capacity ? 2 * capacity : 1024;
            label_entry *larger = realloc(entries, grown * sizeof *larger);
            if (!larger) goto out_of_memory;
            entries = larger;
            capacity = grown;
        }
        label_entry *e = &entries[count];
        e->stem = strdup(name);
        e->label = strdup(label);
        e->line = line_number;
        count++;
        if (!e->stem || !e->label) goto out_of_memory;
        strip_extension(e->stem);
    }
    if (count == 0) {
        snprintf(err, err_size, "%s: no labels in it", path);
        goto done;
    }
    qsort(entries, count, sizeof *entries, compare_entries);
    *entries_out = entries;
    *count_out = count;
    entries = NULL;
    count = 0;
    status = 0;
    goto done;
out_of_memory:
    snprintf(err, err_size, "%s: out of memory reading labels", path);
done:
    for (size_t i = 0; i < count; i++) {
        free(entries[i].stem);
        free(entries[i].label);
    }
    free(entries);
    free(bytes);
    return status;
}

static void free_entries(label_entry *entries, size_t count) {
    for (size_t i = 0; i < count; i++) {
        free(entries[i].stem);
        free(entries[i].label);
    }
    free(entries);
}

static int find_label_file(const imagenet_options *o, char *path, size_t path_size, char *err,
                           size_t err_size) {
    if (o->val_labels && *o->val_labels) {
        snprintf(path, path_size, "%s", o->val_labels);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return 0;
        snprintf(err, err_size, "ImageNet: validation label file %s not found", path);
        return -1;
    }
    static const char *const candidates[] = {"LOC_val_solution.csv", "val.txt", "val_labels.txt"};
    for (int where = 0; where < 2; where++)
        for (size_t c = 0; c < sizeof candidates / sizeof *candidates; c++) {
            snprintf(path, path_size, "%s%s/%s", o->root, where ? "/val" : "", candidates[c]);
            struct stat st;
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return 0;
        }
    snprintf(err, err_size,
             "ImageNet: %s/val/ holds images directly but no label file was found "
             "(LOC_val_solution.csv, val.txt or val_labels.txt in %s or %s/val); expected %s",
             o->root, o->root, o->root, expected_layout);
    return -1;
}

/* val/<image>.JPEG labelled through a label file. classes may be empty (no train/): wnid labels
 * then define the classes (sorted), class indices stand for themselves. */
static int add_flat_validation(sample_list *s, const imagenet_options *o, name_list *classes,
                               char *err, size_t err_size) {
    char label_path[IN_PATH_BYTES], val_path[IN_PATH_BYTES];
    if (find_label_file(o, label_path, sizeof label_path, err, err_size) != 0) return -1;
    label_entry *entries = NULL;
    size_t entry_count = 0;
    if (parse_label_file(label_path, &entries, &entry_count, err, err_size) != 0) return -1;
    int status = -1;
    name_list files = {0};
    int known_classes = classes->count > 0;
    if (!known_classes) /* the wnids the file uses become the classes */
        for (size_t i = 0; i < entry_count; i++)
            if (!is_number(entries[i].label) && names_find(classes, entries[i].label) < 0) {
                if (names_add(classes, entries[i].label) != 0) goto out_of_memory;
                names_sort(classes);
            }
    snprintf(val_path, sizeof val_path, "%s/val", o->root);
    if (list_folder(val_path, 0, &files, err, err_size) != 0) goto done;
    for (size_t i = 0; i < files.count; i++) {
        char stem[IN_PATH_BYTES];
        snprintf(stem, sizeof stem, "%s", files.items[i]);
        strip_extension(stem);
        label_entry key = {.stem = stem};
        label_entry *e = bsearch(&key, entries, entry_count, sizeof *entries, compare_entries);
        if (!e) {
            snprintf(err, err_size, "ImageNet: %s/%s has no label in %s", val_path, files.items[i],
                     label_path);
            goto done;
        }
        int64_t label;
        if (is_number(e->label)) {
            label = atol(e->label);
            if (known_classes && label >= (int64_t)classes->count) {
                snprintf(err, err_size, "%s: line %d: class %s out of range, expected 0..%zu",
                         label_path, e->line, e->label, classes->count - 1);
                goto done;
            }
        } else if ((label = names_find(classes, e->label)) < 0) {
            snprintf(err, err_size, "%s: line %d: %s is not one of the %zu classes of %s/train/",
                     label_path, e->line, e->label, classes->count, o->root);
            goto done;
        }
        if (samples_add(s, "val", files.items[i], (int32_t)label) != 0) goto out_of_memory;
    }
    status = 0;
    goto done;
out_of_memory:
    snprintf(err, err_size, "ImageNet: out of memory reading %s", label_path);
done:
    names_free(&files);
    free_entries(entries, entry_count);
    return status;
}

static void in_close(dataset *d) {
    imagenet *in = d->impl;
    if (!in) return;
    free(in->root);
    free(in->names);
    free(in->name_offsets);
    free(in->labels);
    free(in);
    d->impl = NULL;
}

static void in_set_epoch(const dataset *d, int epoch) {
    if (d->impl) atomic_store(&((imagenet *)d->impl)->epoch, epoch);
}

int64_t dataset_imagenet_bad_images(const dataset *d) {
    if (!d || d->read != imagenet_read || !d->impl) return 0;
    return atomic_load(&((imagenet *)d->impl)->bad_images);
}

int dataset_open_imagenet(dataset *d, const imagenet_options *options, char *err,
                          size_t err_size) {
    memset(d, 0, sizeof *d);
    imagenet_options o = *options;
    if (o.image_size == 0) o.image_size = IMAGENET_DEFAULT_SIZE;
    if (o.image_size < 8 || o.image_size > 4096) {
        snprintf(err, err_size, "ImageNet: image size %d, expected 8..4096 (default %d)",
                 o.image_size, IMAGENET_DEFAULT_SIZE);
        return -1;
    }
    struct stat st;
    if (!o.root || !*o.root || stat(o.root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "ImageNet: folder %s %s; expected it to hold %s",
                 o.root && *o.root ? o.root : "(none given)",
                 o.root && *o.root && stat(o.root, &st) == 0 ? "is not a folder" : "not found",
                 expected_layout);
        return -1;
    }
    if (strlen(o.root) > IN_PATH_BYTES - 512) {
        snprintf(err, err_size, "ImageNet: folder path too long (%zu characters)", strlen(o.root));
        return -1;
    }
    char train_path[IN_PATH_BYTES], val_path[IN_PATH_BYTES];
    snprintf(train_path, sizeof train_path, "%s/train", o.root);
    snprintf(val_path, sizeof val_path, "%s/val", o.root);
    const char *split_path = o.train ? train_path : val_path;
    if (!is_dir(split_path)) {
        struct stat st;
        snprintf(err, err_size, "ImageNet: %s %s; expected %s", split_path,
                 lstat(split_path, &st) == 0 ? "is not a folder" : "not found", expected_layout);
        return -1;
    }

    name_list classes = {0}, folders = {0}, loose = {0};
    sample_list s = {0};
    int status = -1;
    if (is_dir(train_path) && list_folder(train_path, 1, &classes, err, err_size) != 0) goto done;
    if (o.train) {
        if (classes.count == 0) {
            snprintf(err, err_size, "ImageNet: %s holds no class folders; expected %s", train_path,
                     expected_layout);
            goto done;
        }
        if (add_class_folders(&s, o.root, "train", &classes, &classes, err, err_size) != 0)
            goto done;
    } else {
        if (list_folder(val_path, 0, &loose, err, err_size) != 0 ||
            list_folder(val_path, 1, &folders, err, err_size) != 0)
            goto done;
        if (loose.count > 0) {
            if (add_flat_validation(&s, &o, &classes, err, err_size) != 0) goto done;
        } else if (folders.count > 0) {
            if (classes.count == 0) /* no train/: the validation folders are the classes */
                for (size_t i = 0; i < folders.count; i++)
                    if (names_add(&classes, folders.items[i]) != 0) goto out_of_memory;
            if (add_class_folders(&s, o.root, "val", &folders, &classes, err, err_size) != 0)
                goto done;
        }
    }
    if (s.count == 0) {
        snprintf(err, err_size, "ImageNet: no images (.JPEG, .jpg, .png) found under %s; "
                 "expected %s", split_path, expected_layout);
        goto done;
    }
    int64_t class_count = (int64_t)classes.count;
    for (int64_t i = 0; i < s.count; i++) /* class indices without a class list */
        if (s.labels[i] >= class_count) class_count = s.labels[i] + 1;

    imagenet *in = calloc(1, sizeof *in);
    if (!in || !(in->root = strdup(o.root))) {
        free(in);
        goto out_of_memory;
    }
    int64_t count = s.count;
    in->names = s.pool;
    in->name_offsets = s.offsets;
    in->labels = s.labels;
    memset(&s, 0, sizeof s);
    in->train = o.train != 0;
    in->size = o.image_size;
    in->resize_to = o.image_size * 256 / 224; /* torchvision's 256 for 224 */
    in->skip_bad = o.skip_bad != 0;
    in->seed = o.seed;
    atomic_init(&in->epoch, 0);
    atomic_init(&in->bad_images, 0);
    atomic_init(&in->host_decoded, 0);
    snprintf(d->name, sizeof d->name, "imagenet");
    d->count = count;
    d->height = d->width = o.image_size;
    d->channels = 3;
    d->classes = (int)class_count;
    d->read = imagenet_read;
    d->set_epoch = in_set_epoch;
    d->close = in_close;
    d->impl = in;
    status = 0;
    if (!in->skip_bad) { /* the first image decoded now: a folder of non-images fails before any GPU work */
        char path[IN_PATH_BYTES], why[256];
        float *first = malloc((size_t)o.image_size * (size_t)o.image_size * 3 * sizeof *first);
        if (!first) {
            snprintf(why, sizeof why, "out of memory for one image");
            snprintf(path, sizeof path, "%s", split_path);
        }
        if (!first || imagenet_load_one(in, 0, 0, first, path, why, sizeof why) != 0) {
            snprintf(err, err_size, "ImageNet: %s: %s (the first image; --skip-bad skips undecodable images)",
                     path, why);
            in_close(d);
            memset(d, 0, sizeof *d);
            status = -1;
        }
        free(first);
    }
    goto done;
out_of_memory:
    snprintf(err, err_size, "ImageNet: out of memory listing %s", split_path);
done:
    names_free(&classes);
    names_free(&folders);
    names_free(&loose);
    samples_free(&s);
    return status;
}

int dataset_imagenet_present(const char *root) {
    if (!root || !*root || strlen(root) > IN_PATH_BYTES - 16) return 0;
    char path[IN_PATH_BYTES];
    struct stat st; /* there in any form (a file named train too): present, then checked */
    snprintf(path, sizeof path, "%s/train", root);
    if (lstat(path, &st) == 0) return 1;
    snprintf(path, sizeof path, "%s/val", root);
    return lstat(path, &st) == 0;
}
