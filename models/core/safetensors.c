/* safetensors reader and writer (the checkpoint format of timm / PyTorch, so weights move both
 * ways). The reader treats the file as hostile: every length, offset, dtype and shape is checked
 * before it is used, the byte count of each tensor is computed with overflow checks, and the
 * first problem is reported by name. The writer builds the header by hand rather than with
 * cJSON_Print, because cJSON prints large integers in exponent form ("1e+15"), which the Python
 * library rejects; it then writes to "<path>.tmp.<pid>", fsyncs and renames, so a reader never
 * sees a partial checkpoint under the final name. */
#define _POSIX_C_SOURCE 200809L
#include "models/core/safetensors.h"
#include "base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define ST_MAX_HEADER (100u * 1000u * 1000u) /* the Python library's own limit */
#define ST_MAX_INT 9007199254740992.0        /* 2^53: JSON numbers are doubles in cJSON */
#define ST_MAX_INT_EXACT (INT64_C(1) << 53)
#define ST_ERR_LEN 1024

static const char *const dtype_names[] = {"F64", "F32", "F16", "BF16", "I64",
                                          "I32", "I16", "I8",  "U8",   "BOOL"};
static const size_t dtype_sizes[] = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1};
#define ST_DTYPE_COUNT ((int)(sizeof dtype_sizes / sizeof dtype_sizes[0]))

size_t st_dtype_size(st_dtype dtype) {
    return (int)dtype >= 0 && (int)dtype < ST_DTYPE_COUNT ? dtype_sizes[dtype] : 0;
}

const char *st_dtype_name(st_dtype dtype) {
    return (int)dtype >= 0 && (int)dtype < ST_DTYPE_COUNT ? dtype_names[dtype] : "invalid";
}

/* Strict UTF-8 (no overlong forms, no surrogates, nothing past U+10FFFF), as Rust's from_utf8
 * checks it in the Python library. Returns the offset of the first bad byte, or len. */
static size_t utf8_valid_prefix(const uint8_t *s, size_t len) {
    size_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        size_t extra;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xC2 && c <= 0xDF) {
            extra = 1, cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            extra = 2, cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            extra = 3, cp = c & 0x07;
        } else {
            return i;
        }
        if (len - i <= extra) return i;
        for (size_t k = 1; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((extra == 2 && cp < 0x800) || (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += extra + 1;
    }
    return len;
}

/* A JSON number that must be a whole number in [0, 2^53]. */
static int json_uint(const cJSON *item, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return -1;
    double d = item->valuedouble;
    if (!(d >= 0.0 && d <= ST_MAX_INT)) return -1; /* also rejects NaN */
    uint64_t v = (uint64_t)d;
    if ((double)v != d) return -1;
    *out = v;
    return 0;
}

static void format_shape(char *buf, size_t size, const st_tensor *t) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRId64, d ? ", " : "", t->shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

static int parse_dtype(const char *s, st_dtype *out) {
    for (int i = 0; i < ST_DTYPE_COUNT; i++)
        if (strcmp(s, dtype_names[i]) == 0) {
            *out = (st_dtype)i;
            return 0;
        }
    return -1;
}

/* Fills t from one header entry; `name` is already checked for length. */
static int parse_entry(st_tensor *t, const cJSON *entry, size_t data_size, char *err, size_t n) {
    const char *name = t->name;
    if (!cJSON_IsObject(entry)) return error_set(err, n, "tensor '%s': entry is not a JSON object", name);
    const cJSON *dtype = NULL, *shape = NULL, *offsets = NULL, *field;
    cJSON_ArrayForEach(field, entry) {
        const cJSON **slot = NULL;
        if (strcmp(field->string, "dtype") == 0) slot = &dtype;
        else if (strcmp(field->string, "shape") == 0) slot = &shape;
        else if (strcmp(field->string, "data_offsets") == 0) slot = &offsets;
        if (!slot) continue; /* unknown fields are ignored, as the Python library does */
        if (*slot) return error_set(err, n, "tensor '%s': field \"%s\" appears twice", name, field->string);
        *slot = field;
    }
    if (!dtype) return error_set(err, n, "tensor '%s': missing \"dtype\"", name);
    if (!shape) return error_set(err, n, "tensor '%s': missing \"shape\"", name);
    if (!offsets) return error_set(err, n, "tensor '%s': missing \"data_offsets\"", name);

    if (!cJSON_IsString(dtype)) return error_set(err, n, "tensor '%s': \"dtype\" is not a string", name);
    if (parse_dtype(dtype->valuestring, &t->dtype) != 0)
        return error_set(err, n,
                    "tensor '%s': unsupported dtype '%.32s' (expected F64, F32, F16, BF16, I64, I32, "
                    "I16, I8, U8 or BOOL)",
                    name, dtype->valuestring);

    if (!cJSON_IsArray(shape)) return error_set(err, n, "tensor '%s': \"shape\" is not an array", name);
    int ndim = cJSON_GetArraySize(shape);
    if (ndim > ST_MAX_DIMS)
        return error_set(err, n, "tensor '%s': shape has %d dims, at most %d are supported", name, ndim,
                    ST_MAX_DIMS);
    t->ndim = ndim;
    int has_zero = 0;
    const cJSON *dim;
    int d = 0;
    cJSON_ArrayForEach(dim, shape) {
        uint64_t v;
        if (json_uint(dim, &v) != 0) {
            if (cJSON_IsNumber(dim))
                return error_set(err, n, "tensor '%s': shape[%d] is %.17g, expected an integer in [0, 2^53]",
                            name, d, dim->valuedouble);
            return error_set(err, n, "tensor '%s': shape[%d] is not a number", name, d);
        }
        t->shape[d++] = (int64_t)v;
        has_zero |= v == 0;
    }

    if (!cJSON_IsArray(offsets) || cJSON_GetArraySize(offsets) != 2)
        return error_set(err, n, "tensor '%s': \"data_offsets\" is not an array [begin, end]", name);
    uint64_t begin, end;
    if (json_uint(offsets->child, &begin) != 0 || json_uint(offsets->child->next, &end) != 0)
        return error_set(err, n, "tensor '%s': \"data_offsets\" must hold integers in [0, 2^53]", name);
    if (begin > end)
        return error_set(err, n, "tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] have begin > end",
                    name, begin, end);
    if (end > data_size)
        return error_set(err, n,
                    "tensor '%s': data_offsets end %" PRIu64 " is beyond the data section (%zu bytes)",
                    name, end, data_size);

    char shape_text[ST_MAX_DIMS * 24 + 4];
    format_shape(shape_text, sizeof shape_text, t);
    uint64_t bytes = has_zero ? 0 : st_dtype_size(t->dtype);
    for (int k = 0; k < ndim && bytes; k++)
        if (__builtin_mul_overflow(bytes, (uint64_t)t->shape[k], &bytes))
            return error_set(err, n, "tensor '%s': shape %s of %s overflows a 64-bit byte count", name,
                        shape_text, dtype_names[t->dtype]);
    if (end - begin != bytes)
        return error_set(err, n,
                    "tensor '%s': data_offsets span %" PRIu64 " bytes but shape %s of %s needs %" PRIu64,
                    name, end - begin, shape_text, dtype_names[t->dtype], bytes);
    t->offset = (size_t)begin;
    t->nbytes = (size_t)bytes;
    return 0;
}

static int parse_metadata(const cJSON *meta, char *err, size_t n) {
    if (!cJSON_IsObject(meta)) return error_set(err, n, "\"__metadata__\" is not a JSON object");
    const cJSON *item;
    cJSON_ArrayForEach(item, meta) {
        if (!cJSON_IsString(item))
            return error_set(err, n, "\"__metadata__\" value of '%.64s' is not a string", item->string);
    }
    return 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp((*(const st_tensor *const *)a)->name, (*(const st_tensor *const *)b)->name);
}

/* cJSON keeps every duplicate key of an object; sorting finds them in n log n, so a hostile header
 * with millions of entries cannot make this quadratic. */
static int check_duplicates(const st_file *f, char *err, size_t n) {
    if (f->count < 2) return 0;
    const st_tensor **order = malloc((size_t)f->count * sizeof *order);
    if (!order) return error_set(err, n, "out of memory checking %d tensor names", f->count);
    for (int i = 0; i < f->count; i++) order[i] = &f->tensors[i];
    qsort(order, (size_t)f->count, sizeof *order, compare_names);
    int status = 0;
    for (int i = 1; i < f->count && status == 0; i++)
        if (strcmp(order[i - 1]->name, order[i]->name) == 0)
            status = error_set(err, n, "duplicate tensor name '%s'", order[i]->name);
    free(order);
    return status;
}

static int compare_offsets(const void *a, const void *b) {
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return (x->nbytes > y->nbytes) - (x->nbytes < y->nbytes);
}

/* As the format requires (and the Python library checks): the tensors, in order of their offsets,
 * lie end to end from byte 0 and cover the data section exactly: no overlap, no gap, nothing after. */
static int check_layout(const st_file *f, char *err, size_t n) {
    const st_tensor **order = malloc((size_t)(f->count ? f->count : 1) * sizeof *order);
    if (!order) return error_set(err, n, "out of memory checking %d tensors' offsets", f->count);
    for (int i = 0; i < f->count; i++) order[i] = &f->tensors[i];
    qsort(order, (size_t)f->count, sizeof *order, compare_offsets);
    size_t at = 0;
    int status = 0;
    for (int i = 0; i < f->count && status == 0; i++) {
        const st_tensor *t = order[i];
        if (t->offset < at)
            status = error_set(err, n, "tensor '%s': data_offsets [%zu, %zu] overlap tensor '%s' (which ends at %zu)",
                          t->name, t->offset, t->offset + t->nbytes, order[i - 1]->name, at);
        else if (t->offset > at)
            status = error_set(err, n, "tensor '%s': data_offsets begin at %zu, leaving bytes %zu..%zu of the data "
                          "section to no tensor", t->name, t->offset, at, t->offset);
        at = t->offset + t->nbytes;
    }
    if (status == 0 && at != f->data_size)
        status = error_set(err, n, "the tensors cover %zu bytes but the data section holds %zu", at, f->data_size);
    free(order);
    return status;
}

/* Parses a header already checked for length. The JSON is copied with a terminating NUL, so cJSON
 * (not built with sanitizers) never reads past what the file gave. */
static int parse_header(st_file *f, const uint8_t *text, size_t len, char *err, size_t n) {
    size_t bad = utf8_valid_prefix(text, len);
    if (bad != len) return error_set(err, n, "header is not valid UTF-8 (byte %zu of the JSON)", bad);
    const uint8_t *nul = memchr(text, 0, len);
    if (nul) return error_set(err, n, "header holds a NUL byte (byte %zu of the JSON)", (size_t)(nul - text));
    char *json = malloc(len + 1);
    if (!json) return error_set(err, n, "out of memory for a %zu-byte header", len);
    memcpy(json, text, len);
    json[len] = '\0';
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len + 1, &end, 0);
    int status = 0;
    if (!root) {
        size_t at = end && end >= json ? (size_t)(end - json) : 0;
        status = error_set(err, n, "header is not valid JSON (error near byte %zu of the JSON)", at);
        goto done;
    }
    for (const char *p = end; p < json + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            status = error_set(err, n, "header has trailing bytes after the JSON (byte %zu)", (size_t)(p - json));
            goto done;
        }
    if (!cJSON_IsObject(root)) {
        status = error_set(err, n, "header is not a JSON object");
        goto done;
    }

    int entries = 0, have_metadata = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, "__metadata__") != 0) {
            entries++;
            continue;
        }
        if (have_metadata++) {
            status = error_set(err, n, "\"__metadata__\" appears twice");
            goto done;
        }
        if ((status = parse_metadata(item, err, n)) != 0) goto done;
    }
    f->tensors = calloc(entries ? (size_t)entries : 1, sizeof *f->tensors);
    if (!f->tensors) {
        status = error_set(err, n, "out of memory for %d tensors", entries);
        goto done;
    }
    cJSON_ArrayForEach(item, root) {
        if (strcmp(item->string, "__metadata__") == 0) continue;
        size_t name_len = strlen(item->string);
        if (name_len >= ST_MAX_NAME) {
            status = error_set(err, n, "tensor '%.40s...': name is %zu bytes, at most %d are supported",
                          item->string, name_len, ST_MAX_NAME - 1);
            goto done;
        }
        st_tensor *t = &f->tensors[f->count];
        memcpy(t->name, item->string, name_len + 1);
        if ((status = parse_entry(t, item, f->data_size, err, n)) != 0) goto done;
        f->count++;
    }
    status = check_duplicates(f, err, n);
    if (status == 0) status = check_layout(f, err, n);
done:
    cJSON_Delete(root);
    free(json);
    return status;
}

/* The 8-byte header length of a file of `size` bytes that starts with `prefix` (at least 8 bytes
 * when size allows). */
static int header_length(const uint8_t *prefix, size_t size, uint64_t *header_len, char *err, size_t n) {
    *header_len = 0;
    for (int i = 7; i >= 0 && size >= 8; i--) *header_len = *header_len << 8 | prefix[i];
    if (size < 8) return error_set(err, n, "file is %zu bytes, shorter than the 8-byte header length", size);
    if (*header_len > ST_MAX_HEADER)
        return error_set(err, n, "header length %" PRIu64 " exceeds the %u-byte limit", *header_len, ST_MAX_HEADER);
    if (*header_len > size - 8)
        return error_set(err, n, "header length %" PRIu64 " is beyond the end of the file (%zu bytes after "
                    "the length)", *header_len, size - 8);
    return 0;
}

/* Takes ownership of `bytes` (freed on failure). */
static int parse_owned(st_file *f, uint8_t *bytes, size_t size, char *err, size_t n) {
    memset(f, 0, sizeof *f);
    uint64_t header_len = 0;
    if (header_length(bytes, size, &header_len, err, n) != 0) {
        free(bytes);
        return -1;
    }
    f->bytes = bytes;
    f->size = size;
    f->data = bytes + 8 + header_len;
    f->data_size = size - 8 - (size_t)header_len;
    if (parse_header(f, bytes + 8, (size_t)header_len, err, n) != 0) {
        st_close(f);
        return -1;
    }
    return 0;
}

int st_parse(st_file *f, const uint8_t *bytes, size_t size, char *err, size_t err_size) {
    memset(f, 0, sizeof *f);
    if (!bytes && size) return error_set(err, err_size, "no bytes given for a %zu-byte file", size);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy) return error_set(err, err_size, "out of memory copying a %zu-byte file", size);
    if (size) memcpy(copy, bytes, size);
    return parse_owned(f, copy, size, err, err_size);
}

int st_open(st_file *f, const char *path, char *err, size_t err_size) {
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp) return error_set(err, err_size, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) != 0) {
        int e = errno;
        fclose(fp);
        return error_set(err, err_size, "%s: cannot stat: %s", path, strerror(e));
    }
    if (S_ISDIR(st.st_mode)) {
        fclose(fp);
        return error_set(err, err_size, "%s: cannot read: %s", path, strerror(EISDIR));
    }
    /* Read to end of file rather than trusting st_size: pipes report 0 and a file may change. */
    size_t cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536, size = 0;
    uint8_t *bytes = malloc(cap);
    while (bytes) {
        size += fread(bytes + size, 1, cap - size, fp);
        if (size < cap) break;
        uint8_t *grown = cap <= SIZE_MAX / 2 ? realloc(bytes, cap * 2) : NULL;
        if (!grown) {
            free(bytes);
            bytes = NULL;
            break;
        }
        bytes = grown;
        cap *= 2;
    }
    if (!bytes) {
        fclose(fp);
        return error_set(err, err_size, "%s: out of memory reading the file", path);
    }
    if (ferror(fp)) {
        int e = errno;
        free(bytes);
        fclose(fp);
        return error_set(err, err_size, "%s: read error: %s", path, strerror(e));
    }
    fclose(fp);
    char why[ST_ERR_LEN];
    if (parse_owned(f, bytes, size, why, sizeof why) != 0)
        return error_set(err, err_size, "%s: %s", path, why);
    return 0;
}

int st_check_file(const char *path, char *err, size_t err_size) {
    /* without blocking: a FIFO opened for reading waits for a writer that may never come; fstat
       then refuses it (and a device) before anything is read */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return error_set(err, err_size, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    uint8_t prefix[8] = {0};
    char why[ST_ERR_LEN];
    int status = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        status = error_set(err, err_size, "%s: not a regular file", path);
        goto done;
    }
    size_t size = (size_t)st.st_size;
    uint64_t header_len;
    if (pread(fd, prefix, 8, 0) != (ssize_t)(size < 8 ? size : 8) ||
        header_length(prefix, size, &header_len, why, sizeof why) != 0) {
        status = error_set(err, err_size, "%s: %s", path, size >= 8 ? why : "shorter than the 8-byte header length");
        goto done;
    }
    uint8_t *text = malloc(header_len ? (size_t)header_len : 1);
    if (!text) {
        status = error_set(err, err_size, "%s: out of memory for a %" PRIu64 "-byte header", path, header_len);
        goto done;
    }
    st_file f = {0};
    f.data_size = size - 8 - (size_t)header_len;
    if (pread(fd, text, (size_t)header_len, 8) != (ssize_t)header_len)
        status = error_set(err, err_size, "%s: cannot read its %" PRIu64 "-byte header", path, header_len);
    else if (parse_header(&f, text, (size_t)header_len, why, sizeof why) != 0)
        status = error_set(err, err_size, "%s: %s", path, why);
    free(f.tensors);
    free(text);
done:
    close(fd);
    return status;
}

const st_tensor *st_find(const st_file *f, const char *name) {
    if (!f || !name) return NULL;
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return &f->tensors[i];
    return NULL;
}

const void *st_data(const st_file *f, const st_tensor *t) {
    if (!f || !t || !f->data || t->offset > f->data_size || t->nbytes > f->data_size - t->offset)
        return NULL;
    return f->data + t->offset;
}

void st_close(st_file *f) {
    if (!f) return;
    free(f->tensors);
    free(f->bytes);
    memset(f, 0, sizeof *f);
}

/* --- writer ---------------------------------------------------------------------------------- */

typedef struct st_entry {
    char name[ST_MAX_NAME];
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t nbytes;
    uint8_t *data;
} st_entry;

typedef struct st_meta {
    char *key, *value;
} st_meta;

struct st_writer {
    char *path;
    st_entry *entries;
    int count, cap;
    st_meta *meta;
    int meta_count, meta_cap;
    int failed; /* the first error is kept in `error` and reported by st_writer_close */
    char error[ST_ERR_LEN];
};

st_writer *st_writer_open(const char *path) {
    st_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->path = strdup(path ? path : "");
    if (!w->path) {
        free(w);
        return NULL;
    }
    if (!*w->path) {
        w->failed = 1;
        snprintf(w->error, sizeof w->error, "no output path given for the safetensors file");
    }
    return w;
}

/* Keeps the first error for st_writer_close; returns -1 for the caller to pass on. */
static int writer_fail(st_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int writer_fail(st_writer *w, const char *fmt, ...) {
    if (w->failed) return -1;
    w->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->error, sizeof w->error, fmt, ap);
    va_end(ap);
    return -1;
}

static int valid_text(const char *s) { return utf8_valid_prefix((const uint8_t *)s, strlen(s)) == strlen(s); }

void st_writer_metadata(st_writer *w, const char *key, const char *value) {
    if (!w) return;
    if (!key || !value || !valid_text(key) || !valid_text(value)) {
        writer_fail(w, "%s: metadata key and value must be UTF-8 strings", w->path);
        return;
    }
    for (int i = 0; i < w->meta_count; i++)
        if (strcmp(w->meta[i].key, key) == 0) { /* a later value replaces the earlier, like a dict */
            char *v = strdup(value);
            if (!v) writer_fail(w, "%s: out of memory for metadata '%.64s'", w->path, key);
            else free(w->meta[i].value), w->meta[i].value = v;
            return;
        }
    if (w->meta_count == w->meta_cap) {
        int cap = w->meta_cap ? 2 * w->meta_cap : 4;
        st_meta *grown = realloc(w->meta, (size_t)cap * sizeof *grown);
        if (!grown) {
            writer_fail(w, "%s: out of memory for metadata '%.64s'", w->path, key);
            return;
        }
        w->meta = grown, w->meta_cap = cap;
    }
    st_meta m = {strdup(key), strdup(value)};
    if (!m.key || !m.value) {
        free(m.key), free(m.value);
        writer_fail(w, "%s: out of memory for metadata '%.64s'", w->path, key);
        return;
    }
    w->meta[w->meta_count++] = m;
}

int st_writer_add(st_writer *w, const char *name, st_dtype dtype, int ndim, const int64_t *shape,
                  const void *data) {
    if (!w) return -1;
    const char *path = w->path;
    if (!name) return writer_fail(w, "%s: tensor with no name", path);
    size_t name_len = strlen(name);
    if (name_len >= ST_MAX_NAME)
        return writer_fail(w, "%s: tensor '%.40s...': name is %zu bytes, at most %d are supported",
                           path, name, name_len, ST_MAX_NAME - 1);
    if (!valid_text(name) || strcmp(name, "__metadata__") == 0)
        return writer_fail(w, "%s: tensor '%s': name must be UTF-8 and not \"__metadata__\"", path, name);
    if (st_dtype_size(dtype) == 0)
        return writer_fail(w, "%s: tensor '%s': invalid dtype %d", path, name, (int)dtype);
    if (ndim < 0 || ndim > ST_MAX_DIMS || (ndim > 0 && !shape))
        return writer_fail(w, "%s: tensor '%s': ndim %d, expected 0..%d with a shape", path, name,
                           ndim, ST_MAX_DIMS);
    int has_zero = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || shape[d] > ST_MAX_INT_EXACT) /* past 2^53 no reader gets it back */
            return writer_fail(w, "%s: tensor '%s': shape[%d] is %" PRId64 ", expected an integer in [0, 2^53]",
                               path, name, d, shape[d]);
        has_zero |= shape[d] == 0;
    }
    uint64_t bytes = has_zero ? 0 : st_dtype_size(dtype);
    for (int d = 0; d < ndim && bytes; d++)
        if (__builtin_mul_overflow(bytes, (uint64_t)shape[d], &bytes) || bytes > SIZE_MAX)
            return writer_fail(w, "%s: tensor '%s': shape overflows a 64-bit byte count", path, name);
    if (bytes && !data)
        return writer_fail(w, "%s: tensor '%s': no data for %" PRIu64 " bytes", path, name, bytes);
    for (int i = 0; i < w->count; i++)
        if (strcmp(w->entries[i].name, name) == 0)
            return writer_fail(w, "%s: duplicate tensor name '%s'", path, name);
    if (w->count == w->cap) {
        int cap = w->cap ? 2 * w->cap : 16;
        st_entry *grown = realloc(w->entries, (size_t)cap * sizeof *grown);
        if (!grown) return writer_fail(w, "%s: out of memory adding tensor '%s'", path, name);
        w->entries = grown, w->cap = cap;
    }
    st_entry *e = &w->entries[w->count];
    memset(e, 0, sizeof *e);
    e->data = malloc(bytes ? (size_t)bytes : 1);
    if (!e->data)
        return writer_fail(w, "%s: out of memory copying %" PRIu64 " bytes of tensor '%s'", path, bytes, name);
    if (bytes) memcpy(e->data, data, (size_t)bytes);
    memcpy(e->name, name, name_len + 1);
    e->dtype = dtype;
    e->ndim = ndim;
    for (int d = 0; d < ndim; d++) e->shape[d] = shape[d];
    e->nbytes = (size_t)bytes;
    w->count++;
    return 0;
}

/* Growable text for the header; `oom` latches so callers check once at the end. */
typedef struct text_buf {
    char *s;
    size_t len, cap;
    int oom;
} text_buf;

static void text_put(text_buf *b, const char *s, size_t len) {
    if (b->oom) return;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + len + 1) cap *= 2;
        char *grown = realloc(b->s, cap);
        if (!grown) {
            b->oom = 1;
            return;
        }
        b->s = grown, b->cap = cap;
    }
    memcpy(b->s + b->len, s, len);
    b->len += len;
    b->s[b->len] = '\0';
}

static void text_str(text_buf *b, const char *s) { text_put(b, s, strlen(s)); }

static void text_json_string(text_buf *b, const char *s) {
    text_put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c;
            text_put(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            text_put(b, esc, 6);
        } else {
            text_put(b, (const char *)s, 1);
        }
    }
    text_put(b, "\"", 1);
}

static void text_u64(text_buf *b, uint64_t v) {
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, v);
    text_str(b, num);
}

/* The header in the Python library's layout: metadata first, then tensors, padded with spaces so
 * the data section starts on an 8-byte boundary. */
static int build_header(const st_writer *w, text_buf *b) {
    text_put(b, "{", 1);
    int first = 1;
    if (w->meta_count) {
        text_str(b, "\"__metadata__\":{");
        for (int i = 0; i < w->meta_count; i++) {
            if (i) text_put(b, ",", 1);
            text_json_string(b, w->meta[i].key);
            text_put(b, ":", 1);
            text_json_string(b, w->meta[i].value);
        }
        text_put(b, "}", 1);
        first = 0;
    }
    uint64_t offset = 0;
    for (int i = 0; i < w->count; i++) {
        const st_entry *e = &w->entries[i];
        if (!first) text_put(b, ",", 1);
        first = 0;
        text_json_string(b, e->name);
        text_str(b, ":{\"dtype\":\"");
        text_str(b, dtype_names[e->dtype]);
        text_str(b, "\",\"shape\":[");
        for (int d = 0; d < e->ndim; d++) {
            if (d) text_put(b, ",", 1);
            text_u64(b, (uint64_t)e->shape[d]);
        }
        text_str(b, "],\"data_offsets\":[");
        text_u64(b, offset);
        text_put(b, ",", 1);
        if (e->nbytes > ST_MAX_INT_EXACT - offset) return -1; /* the reader could not read it back */
        offset += e->nbytes;
        text_u64(b, offset);
        text_str(b, "]}");
    }
    text_put(b, "}", 1);
    while (b->len % 8) text_put(b, " ", 1);
    return b->oom ? -1 : 0;
}

static int write_all(int fd, const void *buf, size_t len) {
    const uint8_t *p = buf;
    while (len) {
        ssize_t k = write(fd, p, len > (1u << 30) ? (1u << 30) : len);
        if (k < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (k == 0) {
            errno = EIO;
            return -1;
        }
        p += k, len -= (size_t)k;
    }
    return 0;
}

/* Makes the rename itself durable. Some file systems refuse fsync on a directory (EINVAL); the
 * file is complete under its final name by then, so a failure here is not reported. */
static void sync_parent_dir(const char *path) {
    char *dir = strdup(path);
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = '\0'; /* "/name": the root */
    else if (slash) *slash = '\0';
    int fd = open(slash ? dir : ".", O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

static int write_file(st_writer *w, char *err, size_t n) {
    text_buf header = {0};
    if (build_header(w, &header) != 0 || header.len > ST_MAX_HEADER) {
        free(header.s);
        return error_set(err, n, "%s: header too large (out of memory, over 100 MB, or data past 2^53 bytes)",
                    w->path);
    }
    size_t tmp_size = strlen(w->path) + 32;
    char *tmp = malloc(tmp_size);
    if (!tmp) {
        free(header.s);
        return error_set(err, n, "%s: out of memory", w->path);
    }
    snprintf(tmp, tmp_size, "%s.tmp.%ld", w->path, (long)getpid());
    int status = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        status = error_set(err, n, "%s: cannot create %s: %s", w->path, tmp, strerror(errno));
        goto done;
    }
    uint8_t len_bytes[8];
    for (int i = 0; i < 8; i++) len_bytes[i] = (uint8_t)((uint64_t)header.len >> (8 * i));
    int ok = write_all(fd, len_bytes, 8) == 0 && write_all(fd, header.s, header.len) == 0;
    for (int i = 0; ok && i < w->count; i++) ok = write_all(fd, w->entries[i].data, w->entries[i].nbytes) == 0;
    if (!ok) {
        status = error_set(err, n, "%s: writing %s: %s", w->path, tmp, strerror(errno));
        close(fd);
    } else if (fsync(fd) != 0) {
        status = error_set(err, n, "%s: fsync of %s: %s", w->path, tmp, strerror(errno));
        close(fd);
    } else if (close(fd) != 0) { /* network file systems report write errors here */
        status = error_set(err, n, "%s: closing %s: %s", w->path, tmp, strerror(errno));
    } else if (rename(tmp, w->path) != 0) {
        status = error_set(err, n, "%s: cannot rename %s into place: %s", w->path, tmp, strerror(errno));
    } else {
        sync_parent_dir(w->path);
    }
    if (status != 0) unlink(tmp);
done:
    free(tmp);
    free(header.s);
    return status;
}

int st_writer_close(st_writer *w, char *err, size_t err_size) {
    if (!w) return error_set(err, err_size, "safetensors writer could not be created (out of memory)");
    int status;
    if (w->failed) status = error_set(err, err_size, "%s", w->error);
    else status = write_file(w, err, err_size);
    for (int i = 0; i < w->count; i++) free(w->entries[i].data);
    for (int i = 0; i < w->meta_count; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->entries);
    free(w->meta);
    free(w->path);
    free(w);
    return status;
}
