/* ImageNet 64x64, npz version: each .npz is a zip (read with libzip, members stored or deflated)
 * holding data.npy (uint8 [N, 12288], the red, green and blue 64x64 planes of each image) and
 * labels.npy ([N] of any integer type numpy writes, 1..1000). Other members (the training files'
 * `mean`) are ignored.
 *
 * Memory: every file's pixels are decoded once at open into one buffer, as they are on disk
 * (12288 bytes per image: 15.7 GB for the 1,281,167 training images, 614 MB for the 50,000
 * validation images), labels as 2 bytes each. Deflated members cannot be read at random, and
 * shuffled batches touch every file, so reading lazily per file would re-inflate whole files for
 * each batch; decoding once is the design, and dataset_open_imagenet64_files opens a subset of
 * the training files when memory is short. Open does two passes: the headers and labels of every
 * file first (so the pixel buffer is allocated once, at its final size), then the pixels straight
 * into it. read() interleaves the planes to NHWC and normalises with a per-channel table.
 *
 * Nothing in a file is trusted: the .npy header is parsed with bounds on every token, declared
 * sizes must agree with the zip member's size (and a deflated member cannot claim more than
 * deflate's 1032:1 ratio, so a hostile archive cannot make us allocate what it does not hold), and
 * libzip verifies each member's CRC when it is read to its end. */
#include "data/dataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zip.h>

#define I64_PLANE (IMAGENET64_SIDE * IMAGENET64_SIDE)
#define I64_IMAGE_BYTES (3 * I64_PLANE)
#define I64_MAX_FILES 64
#define NPY_MAX_HEADER_BYTES ((uint32_t)1 << 20)
#define DEFLATE_MAX_RATIO 1032 /* deflate cannot expand its input more than this */

typedef struct imagenet64 {
    uint8_t *pixels;            /* [count, 12288] as in the files */
    int16_t *labels;            /* [count], 0..999 */
    float normalised[3][256];   /* channel, level -> (level / 255 - mean) / std */
} imagenet64;

/* --- .npy header ----------------------------------------------------------------------------- */

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int take(cursor *c, char ch) {
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return 1;
    }
    return 0;
}

/* A quoted Python string without escapes, into out (NUL-terminated, at most out_size - 1). */
static int take_string(cursor *c, char *out, size_t out_size) {
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
    char quote = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != quote) {
        if (*c->p == '\\' || n + 1 >= out_size) return 0;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return 0;
    c->p++;
    out[n] = '\0';
    return 1;
}

static int take_word(cursor *c, const char *word) {
    skip_space(c);
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    c->p += n;
    return 1;
}

static int take_dim(cursor *c, int64_t *value) {
    skip_space(c);
    int64_t v = 0;
    int digits = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (v > ((int64_t)1 << 56)) return 0; /* beyond any array */
        v = v * 10 + (*c->p++ - '0');
        digits++;
    }
    if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 wrote long integers so */
    *value = v;
    return digits > 0;
}

static int parse_descr(npy_header *h, const char *descr) {
    const char *p = descr;
    h->big_endian = 0;
    if (*p == '<' || *p == '|' || *p == '=') p++;
    else if (*p == '>') {
        h->big_endian = 1;
        p++;
    }
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))) return 0;
    h->kind = *p++;
    int bytes = 0;
    if (*p < '1' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9' && bytes < 1000) bytes = bytes * 10 + (*p++ - '0');
    if (*p != '\0' || bytes > 64) return 0;
    h->item_bytes = bytes;
    return 1;
}

int npy_parse_header(npy_header *h, const uint8_t *bytes, size_t size, const char *name, char *err,
                     size_t err_size) {
    memset(h, 0, sizeof *h);
    static const uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    if (size < 10 || memcmp(bytes, magic, 6) != 0) {
        snprintf(err, err_size, "%s: not a .npy array (no \\x93NUMPY magic at its start)", name);
        return -1;
    }
    int major = bytes[6];
    size_t length_bytes = major == 1 ? 2 : 4;
    if (major < 1 || major > 3) {
        snprintf(err, err_size, "%s: .npy format version %d.%d, expected 1.0, 2.0 or 3.0", name,
                 major, bytes[7]);
        return -1;
    }
    if (size < 8 + length_bytes) {
        snprintf(err, err_size, "%s: .npy header cut short", name);
        return -1;
    }
    uint32_t header_length = (uint32_t)bytes[8] | (uint32_t)bytes[9] << 8;
    if (length_bytes == 4) header_length |= (uint32_t)bytes[10] << 16 | (uint32_t)bytes[11] << 24;
    size_t start = 8 + length_bytes;
    if (header_length > size - start) {
        snprintf(err, err_size, "%s: .npy header of %u bytes is cut short (%zu bytes present)",
                 name, header_length, size - start);
        return -1;
    }
    cursor c = {(const char *)bytes + start, (const char *)bytes + start + header_length};
    int have_descr = 0, have_order = 0, have_shape = 0;
    char key[32], descr[32];
    if (!take(&c, '{')) goto malformed;
    while (!take(&c, '}')) {
        if (!take_string(&c, key, sizeof key) || !take(&c, ':')) goto malformed;
        if (strcmp(key, "descr") == 0) {
            if (!take_string(&c, descr, sizeof descr)) {
                snprintf(err, err_size, "%s: .npy descr is not a simple type string (structured "
                         "arrays are not supported)", name);
                return -1;
            }
            if (!parse_descr(h, descr)) {
                snprintf(err, err_size, "%s: .npy descr '%s' is not a type numpy writes", name,
                         descr);
                return -1;
            }
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (take_word(&c, "True")) h->fortran_order = 1;
            else if (take_word(&c, "False")) h->fortran_order = 0;
            else goto malformed;
            have_order = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (!take(&c, '(')) goto malformed;
            h->ndim = 0;
            while (!take(&c, ')')) {
                if (h->ndim == NPY_MAX_DIMS) {
                    snprintf(err, err_size, "%s: .npy shape has more than %d dimensions", name,
                             NPY_MAX_DIMS);
                    return -1;
                }
                if (!take_dim(&c, &h->shape[h->ndim])) goto malformed;
                h->ndim++;
                if (!take(&c, ',')) {
                    if (!take(&c, ')')) goto malformed;
                    break;
                }
            }
            have_shape = 1;
        } else {
            snprintf(err, err_size, "%s: unexpected key '%s' in the .npy header", name, key);
            return -1;
        }
        if (!take(&c, ',')) {
            if (!take(&c, '}')) goto malformed;
            break;
        }
    }
    if (!have_descr || !have_order || !have_shape) {
        snprintf(err, err_size, "%s: .npy header lacks '%s'", name,
                 !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
        return -1;
    }
    h->data_offset = start + header_length;
    return 0;
malformed:
    snprintf(err, err_size, "%s: malformed .npy header near byte %zu (expected a dict like "
             "{'descr': '|u1', 'fortran_order': False, 'shape': (N, 12288), })", name,
             start + (size_t)(c.p - (const char *)bytes - start));
    return -1;
}

/* --- zip members ----------------------------------------------------------------------------- */

typedef struct npz_source {
    const char *name;        /* for messages: the path, or the caller's name for memory */
    const uint8_t *bytes;    /* NULL: read the file at name */
    size_t size;
} npz_source;

static zip_t *npz_open(const npz_source *src, char *err, size_t err_size) {
    zip_error_t error;
    zip_error_init(&error);
    zip_t *archive = NULL;
    if (src->bytes) {
        zip_source_t *source = zip_source_buffer_create(src->bytes, src->size, 0, &error);
        if (source && !(archive = zip_open_from_source(source, ZIP_RDONLY, &error)))
            zip_source_free(source);
    } else {
        int code = 0;
        if (dataset_file_status(src->name, err, err_size) != DATASET_FILE_REGULAR) { /* libzip would wait on a FIFO */
            zip_error_fini(&error);
            if (dataset_file_status(src->name, NULL, 0) == DATASET_FILE_ABSENT)
                snprintf(err, err_size, "%s: not found (expected an .npz file)", src->name);
            return NULL;
        }
        if (!(archive = zip_open(src->name, ZIP_RDONLY, &code)))
            zip_error_init_with_code(&error, code);
    }
    if (!archive)
        snprintf(err, err_size, "%s: not a readable .npz (zip) archive: %s", src->name,
                 zip_error_strerror(&error));
    zip_error_fini(&error);
    return archive;
}

/* Reads exactly size bytes of an open member; messages name the archive, member and offset. */
static int member_read(zip_file_t *file, void *out, uint64_t size, uint64_t at, const char *name,
                       const char *member, char *err, size_t err_size) {
    uint64_t done = 0;
    while (done < size) {
        zip_int64_t got = zip_fread(file, (uint8_t *)out + done, size - done);
        if (got < 0) {
            snprintf(err, err_size, "%s: %s: corrupt at byte %llu: %s", name, member,
                     (unsigned long long)(at + done), zip_file_strerror(file));
            return -1;
        }
        if (got == 0) {
            snprintf(err, err_size, "%s: %s is truncated: it ends after %llu bytes, expected %llu",
                     name, member, (unsigned long long)(at + done),
                     (unsigned long long)(at + size));
            return -1;
        }
        done += (uint64_t)got;
    }
    return 0;
}

typedef struct npy_member {
    zip_file_t *file;
    npy_header header;
    uint64_t data_bytes;     /* what follows the header in the member */
    char member[32];
} npy_member;

/* Opens key.npy (or key) of the archive and parses its .npy header. */
static int member_open(npy_member *m, zip_t *archive, const char *key, const char *name,
                       char *err, size_t err_size) {
    memset(m, 0, sizeof *m);
    snprintf(m->member, sizeof m->member, "%s.npy", key);
    zip_int64_t index = zip_name_locate(archive, m->member, 0);
    if (index < 0 && (index = zip_name_locate(archive, key, 0)) >= 0)
        snprintf(m->member, sizeof m->member, "%s", key);
    if (index < 0) {
        snprintf(err, err_size, "%s: no %s.npy in the archive (expected members data.npy and "
                 "labels.npy)", name, key);
        return -1;
    }
    zip_stat_t st;
    if (zip_stat_index(archive, (zip_uint64_t)index, 0, &st) != 0 ||
        (st.valid & (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD)) !=
            (ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD)) {
        snprintf(err, err_size, "%s: cannot read the directory entry of %s: %s", name, m->member,
                 zip_strerror(archive));
        return -1;
    }
    if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE) {
        snprintf(err, err_size, "%s: %s uses zip compression method %d; expected stored (0) or "
                 "deflated (8), as numpy writes", name, m->member, (int)st.comp_method);
        return -1;
    }
    if (st.comp_method == ZIP_CM_STORE ? st.size != st.comp_size
                                       : st.size / DEFLATE_MAX_RATIO > st.comp_size) {
        snprintf(err, err_size, "%s: %s claims %llu bytes from %llu compressed: corrupt archive",
                 name, m->member, (unsigned long long)st.size, (unsigned long long)st.comp_size);
        return -1;
    }
    if (!(m->file = zip_fopen_index(archive, (zip_uint64_t)index, 0))) {
        snprintf(err, err_size, "%s: cannot open %s: %s", name, m->member, zip_strerror(archive));
        return -1;
    }
    char label[160];
    snprintf(label, sizeof label, "%s: %s", name, m->member);
    uint8_t prefix[12];
    if (st.size < 10) {
        snprintf(err, err_size, "%s: %llu bytes, too short for a .npy array", label,
                 (unsigned long long)st.size);
        goto fail;
    }
    if (member_read(m->file, prefix, 10, 0, name, m->member, err, err_size) != 0) goto fail;
    size_t start = prefix[6] == 1 ? 10 : 12;
    if (start == 12 && member_read(m->file, prefix + 10, 2, 10, name, m->member, err,
                                   err_size) != 0)
        goto fail;
    uint32_t header_length = (uint32_t)prefix[8] | (uint32_t)prefix[9] << 8;
    if (start == 12) header_length |= (uint32_t)prefix[10] << 16 | (uint32_t)prefix[11] << 24;
    if (header_length > NPY_MAX_HEADER_BYTES || start + header_length > st.size) {
        snprintf(err, err_size, "%s: .npy header length %u does not fit the member's %llu bytes",
                 label, header_length, (unsigned long long)st.size);
        goto fail;
    }
    uint8_t *header = malloc(start + header_length);
    if (!header) {
        snprintf(err, err_size, "%s: out of memory", label);
        goto fail;
    }
    memcpy(header, prefix, start);
    int status = member_read(m->file, header + start, header_length, start, name, m->member, err,
                             err_size);
    if (status == 0)
        status = npy_parse_header(&m->header, header, start + header_length, label, err, err_size);
    free(header);
    if (status != 0) goto fail;
    m->data_bytes = st.size - m->header.data_offset;
    return 0;
fail:
    zip_fclose(m->file);
    m->file = NULL;
    return -1;
}

/* After the array's bytes: nothing may follow, and reading to the end lets libzip check the CRC. */
static int member_finish(npy_member *m, const char *name, char *err, size_t err_size) {
    uint8_t extra;
    zip_int64_t got = zip_fread(m->file, &extra, 1);
    int status = 0;
    if (got != 0) {
        snprintf(err, err_size, "%s: %s: %s", name, m->member,
                 got < 0 ? zip_file_strerror(m->file) : "trailing bytes after the array");
        status = -1;
    }
    zip_fclose(m->file);
    m->file = NULL;
    return status;
}

/* --- the data set ---------------------------------------------------------------------------- */

static int64_t read_integer(const uint8_t *p, const npy_header *h) {
    uint64_t v = 0;
    for (int b = 0; b < h->item_bytes; b++)
        v |= (uint64_t)p[h->big_endian ? h->item_bytes - 1 - b : b] << (8 * b);
    if (h->kind == 'i' && h->item_bytes < 8 && (v >> (8 * h->item_bytes - 1)) & 1)
        v |= ~(uint64_t)0 << (8 * h->item_bytes); /* sign extension */
    return (int64_t)v;
}

/* Checks data.npy's header; *count = N. */
static int check_data(const npy_member *m, const char *name, int64_t *count, char *err,
                      size_t err_size) {
    const npy_header *h = &m->header;
    if (h->kind != 'u' || h->item_bytes != 1 || h->fortran_order || h->ndim != 2 ||
        h->shape[1] != I64_IMAGE_BYTES) {
        char shape[96] = "";
        for (int i = 0, n = 0; i < h->ndim && n < (int)sizeof shape - 24; i++)
            n += snprintf(shape + n, sizeof shape - n, "%s%lld", i ? ", " : "",
                          (long long)h->shape[i]);
        snprintf(err, err_size, "%s: %s is %c%d (%s), fortran_order %s, expected uint8 (N, %d) in "
                 "C order: R, G, B planes of 64x64", name, m->member, h->kind, h->item_bytes,
                 shape, h->fortran_order ? "True" : "False", I64_IMAGE_BYTES);
        return -1;
    }
    if (h->shape[0] <= 0) {
        snprintf(err, err_size, "%s: %s holds no images", name, m->member);
        return -1;
    }
    if ((uint64_t)h->shape[0] * I64_IMAGE_BYTES != m->data_bytes) {
        snprintf(err, err_size, "%s: %s declares %lld images (%llu bytes) but holds %llu bytes of "
                 "data", name, m->member, (long long)h->shape[0],
                 (unsigned long long)h->shape[0] * I64_IMAGE_BYTES,
                 (unsigned long long)m->data_bytes);
        return -1;
    }
    *count = h->shape[0];
    return 0;
}

/* Reads labels.npy of one archive into labels[first ...], checking type, shape and range. */
static int read_labels(zip_t *archive, const char *name, int64_t count, int16_t *labels,
                       char *err, size_t err_size) {
    npy_member m;
    if (member_open(&m, archive, "labels", name, err, err_size) != 0) return -1;
    const npy_header *h = &m.header;
    int status = -1;
    uint8_t *raw = NULL;
    int integer = (h->kind == 'i' || h->kind == 'u') &&
                  (h->item_bytes == 1 || h->item_bytes == 2 || h->item_bytes == 4 ||
                   h->item_bytes == 8);
    if (!integer || h->ndim != 1) {
        snprintf(err, err_size, "%s: %s is %c%d with %d dimensions, expected a 1-dimensional "
                 "integer array (int8..int64 or uint8..uint64)", name, m.member, h->kind,
                 h->item_bytes, h->ndim);
        goto done;
    }
    if (h->shape[0] != count || (uint64_t)count * h->item_bytes != m.data_bytes) {
        snprintf(err, err_size, "%s: %s holds %lld labels (%llu bytes of data) for %lld images; "
                 "they must match", name, m.member, (long long)h->shape[0],
                 (unsigned long long)m.data_bytes, (long long)count);
        goto done;
    }
    size_t bytes = (size_t)count * h->item_bytes;
    if (!(raw = malloc(bytes))) {
        snprintf(err, err_size, "%s: out of memory for %lld labels", name, (long long)count);
        goto done;
    }
    if (member_read(m.file, raw, bytes, h->data_offset, name, m.member, err, err_size) != 0)
        goto done;
    for (int64_t i = 0; i < count; i++) {
        int64_t v = read_integer(raw + (size_t)i * h->item_bytes, h);
        if (h->kind == 'u' && h->item_bytes == 8 && v < 0) v = 0; /* above 2^63: out of range */
        if (v < 1 || v > IMAGENET64_CLASSES) {
            snprintf(err, err_size, "%s: %s: record %lld has label %lld, expected 1..%d", name,
                     m.member, (long long)i, (long long)v, IMAGENET64_CLASSES);
            goto done;
        }
        labels[i] = (int16_t)(v - 1);
    }
    status = member_finish(&m, name, err, err_size);
done:
    if (m.file) zip_fclose(m.file);
    free(raw);
    return status;
}

static int i64_read(const dataset *d, float *images, int32_t *labels, const int64_t *indices,
                    int n, char *err, size_t err_size) {
    const imagenet64 *t = d->impl;
    for (int k = 0; k < n; k++) {
        int64_t index = indices[k];
        if (dataset_check_index(d, index, err, err_size)) return -1;
        dataset_planes_to_nhwc(images + (size_t)k * I64_IMAGE_BYTES, t->pixels + (size_t)index * I64_IMAGE_BYTES,
                               I64_PLANE, (const float(*)[256])t->normalised);
        labels[k] = t->labels[index];
    }
    return 0;
}

static void i64_close(dataset *d) {
    imagenet64 *t = d->impl;
    if (!t) return;
    free(t->pixels);
    free(t->labels);
    free(t);
    d->impl = NULL;
}

/* One archive's data.npy header and shape (*count = N) and its labels, appended to *labels after
 * `first` of them (grown to hold them). */
static int check_archive(zip_t *archive, const char *name, int64_t *count, int16_t **labels, int64_t first,
                         char *err, size_t err_size) {
    npy_member m;
    if (member_open(&m, archive, "data", name, err, err_size) != 0) return -1;
    int checked = check_data(&m, name, count, err, err_size);
    zip_fclose(m.file);
    if (checked != 0) return -1;
    int16_t *larger = realloc(*labels, (size_t)(first + *count) * sizeof *larger);
    if (!larger) {
        snprintf(err, err_size, "%s: out of memory for %lld labels", name, (long long)(first + *count));
        return -1;
    }
    *labels = larger;
    return read_labels(archive, name, *count, *labels + first, err, err_size);
}

static int open_sources(dataset *d, const npz_source *sources, int files, char *err,
                        size_t err_size) {
    memset(d, 0, sizeof *d);
    if (files <= 0 || files > I64_MAX_FILES) {
        snprintf(err, err_size, "ImageNet 64x64: %d files given, expected 1..%d", files,
                 I64_MAX_FILES);
        return -1;
    }
    zip_t *archives[I64_MAX_FILES] = {0};
    int64_t counts[I64_MAX_FILES] = {0}, total = 0;
    imagenet64 *t = calloc(1, sizeof *t);
    int status = -1;
    if (!t) {
        snprintf(err, err_size, "ImageNet 64x64: out of memory");
        return -1;
    }
    /* pass 1: every archive's image count and labels */
    for (int f = 0; f < files; f++) {
        if (!(archives[f] = npz_open(&sources[f], err, err_size)) ||
            check_archive(archives[f], sources[f].name, &counts[f], &t->labels, total, err, err_size) != 0)
            goto done;
        total += counts[f];
    }
    /* pass 2: the pixels, straight into their place */
    if (!(t->pixels = malloc((size_t)total * I64_IMAGE_BYTES))) {
        snprintf(err, err_size, "ImageNet 64x64: out of memory holding %lld images (%llu bytes)",
                 (long long)total, (unsigned long long)total * I64_IMAGE_BYTES);
        goto done;
    }
    int64_t first = 0;
    for (int f = 0; f < files; f++) {
        const char *name = sources[f].name;
        npy_member m;
        int64_t count;
        if (member_open(&m, archives[f], "data", name, err, err_size) != 0) goto done;
        int ok = check_data(&m, name, &count, err, err_size) == 0 && count == counts[f] &&
                 member_read(m.file, t->pixels + (size_t)first * I64_IMAGE_BYTES,
                             (uint64_t)count * I64_IMAGE_BYTES, m.header.data_offset, name,
                             m.member, err, err_size) == 0 &&
                 member_finish(&m, name, err, err_size) == 0;
        if (m.file) zip_fclose(m.file);
        if (!ok) goto done;
        first += count;
    }
    dataset_rgb_lut(t->normalised, dataset_imagenet_mean, dataset_imagenet_std);
    snprintf(d->name, sizeof d->name, "imagenet64");
    d->count = total;
    d->height = d->width = IMAGENET64_SIDE;
    d->channels = 3;
    d->classes = IMAGENET64_CLASSES;
    d->read = i64_read;
    d->close = i64_close;
    d->impl = t;
    t = NULL;
    status = 0;
done:
    for (int f = 0; f < files; f++)
        if (archives[f]) zip_discard(archives[f]);
    if (t) {
        free(t->pixels);
        free(t->labels);
        free(t);
    }
    return status;
}

int dataset_open_imagenet64_memory(dataset *d, const uint8_t *bytes, size_t size,
                                   const char *name, char *err, size_t err_size) {
    npz_source source = {name, bytes ? bytes : (const uint8_t *)"", size};
    return open_sources(d, &source, 1, err, err_size);
}

int dataset_open_imagenet64_files(dataset *d, const char *const *paths, int files, char *err,
                                  size_t err_size) {
    npz_source sources[I64_MAX_FILES];
    for (int f = 0; f < files && f < I64_MAX_FILES; f++) {
        dataset_file there = dataset_file_status(paths[f], err, err_size);
        if (there != DATASET_FILE_REGULAR) {
            memset(d, 0, sizeof *d);
            if (there == DATASET_FILE_ABSENT)
                snprintf(err, err_size, "ImageNet 64x64: %s not found (expected an .npz file)", paths[f]);
            return -1;
        }
        sources[f] = (npz_source){paths[f], NULL, 0};
    }
    return open_sources(d, sources, files, err, err_size);
}

static const char *expected_files =
    "train_data_batch_1.npz .. train_data_batch_10.npz and val_data.npz (the npz version of "
    "downsampled ImageNet 64x64), directly or under Imagenet64_train_npz/ and Imagenet64_val_npz/";

/* The files of a split (train: 10, val: 1), directly in root or in the folder their archive is
 * named after, each a regular file. */
static int find_files(const char *root, int train, char paths[IMAGENET64_TRAIN_FILES][4096], int *files,
                      char *err, size_t err_size) {
    struct stat st;
    if (!root || !*root || stat(root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "ImageNet 64x64: folder %s %s; expected it to hold %s",
                 root && *root ? root : "(none given)",
                 root && *root && stat(root, &st) == 0 ? "is not a folder" : "not found",
                 expected_files);
        return -1;
    }
    if (strlen(root) > 3900) {
        snprintf(err, err_size, "ImageNet 64x64: folder path too long (%zu characters)",
                 strlen(root));
        return -1;
    }
    *files = train ? IMAGENET64_TRAIN_FILES : 1;
    char folder[4000];
    snprintf(folder, sizeof folder, "%s", root);
    snprintf(paths[0], 4096, "%s/%s", root, train ? "train_data_batch_1.npz" : "val_data.npz");
    if (dataset_file_status(paths[0], NULL, 0) == DATASET_FILE_ABSENT)
        snprintf(folder, sizeof folder, "%s/%s", root,
                 train ? "Imagenet64_train_npz" : "Imagenet64_val_npz");
    for (int f = 0; f < *files; f++) {
        if (train) snprintf(paths[f], 4096, "%s/train_data_batch_%d.npz", folder, f + 1);
        else snprintf(paths[f], 4096, "%s/val_data.npz", folder);
        dataset_file there = dataset_file_status(paths[f], err, err_size); /* libzip would wait on a FIFO */
        if (there == DATASET_FILE_ABSENT)
            snprintf(err, err_size, "ImageNet 64x64: %s not found; the folder should hold %s",
                     paths[f], expected_files);
        if (there != DATASET_FILE_REGULAR) return -1;
    }
    return 0;
}

int dataset_open_imagenet64(dataset *d, const char *root, int train, char *err, size_t err_size) {
    memset(d, 0, sizeof *d);
    char paths[IMAGENET64_TRAIN_FILES][4096];
    const char *pointers[IMAGENET64_TRAIN_FILES];
    int files;
    if (find_files(root, train, paths, &files, err, err_size) != 0) return -1;
    for (int f = 0; f < files; f++) pointers[f] = paths[f];
    return dataset_open_imagenet64_files(d, pointers, files, err, err_size);
}

int dataset_imagenet64_present(const char *root) {
    static const char *const names[] = {"train_data_batch_1.npz", "val_data.npz", "Imagenet64_train_npz",
                                        "Imagenet64_val_npz"};
    if (!root || !*root || strlen(root) > 3900) return 0;
    char path[4096];
    for (size_t n = 0; n < sizeof names / sizeof *names; n++) { /* there in any form: present */
        snprintf(path, sizeof path, "%s/%s", root, names[n]);
        if (dataset_file_status(path, NULL, 0) != DATASET_FILE_ABSENT) return 1;
    }
    for (int f = 2; f <= IMAGENET64_TRAIN_FILES; f++) {
        snprintf(path, sizeof path, "%s/train_data_batch_%d.npz", root, f);
        if (dataset_file_status(path, NULL, 0) != DATASET_FILE_ABSENT) return 1;
    }
    return 0;
}

int dataset_check_imagenet64(const char *root, char *err, size_t err_size) {
    for (int train = 1; train >= 0; train--) {
        char paths[IMAGENET64_TRAIN_FILES][4096];
        int files;
        if (find_files(root, train, paths, &files, err, err_size) != 0) return -1;
        for (int f = 0; f < files; f++) {
            npz_source source = {paths[f], NULL, 0};
            int16_t *labels = NULL;
            int64_t count;
            zip_t *archive = npz_open(&source, err, err_size);
            int status = archive ? check_archive(archive, paths[f], &count, &labels, 0, err, err_size) : -1;
            if (archive) zip_discard(archive);
            free(labels);
            if (status != 0) return -1;
        }
    }
    return 0;
}
