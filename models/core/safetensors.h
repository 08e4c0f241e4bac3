/* safetensors files (the format timm and PyTorch use): an 8-byte little-endian header length, a
 * JSON header {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ...,
 * "__metadata__": {"key": "value"}}, then the raw little-endian data. The reader validates
 * everything (lengths, offsets, dtypes, shapes, overflow, duplicates) and reports the first
 * problem in `err`; a malformed or hostile file is an error, never a crash. Host memory only. */
#ifndef SUITE_SAFETENSORS_H
#define SUITE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

typedef enum { ST_F64, ST_F32, ST_F16, ST_BF16, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8, ST_BOOL } st_dtype;

#define ST_MAX_DIMS 8
#define ST_MAX_NAME 256

typedef struct st_tensor {
    char name[ST_MAX_NAME];
    st_dtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    size_t offset, nbytes; /* within the data section */
} st_tensor;

typedef struct st_file {
    int count;
    st_tensor *tensors;    /* in file order */
    uint8_t *bytes;        /* the whole file (owned) */
    size_t size;
    const uint8_t *data;   /* start of the data section inside bytes */
    size_t data_size;
} st_file;

/* 0 on success; -1 with a message naming the problem (and for st_open, the path). */
int st_parse(st_file *f, const uint8_t *bytes, size_t size, char *err, size_t err_size); /* copies bytes */
int st_open(st_file *f, const char *path, char *err, size_t err_size);
/* The header of the file at path checked whole against the file's size (lengths, JSON, dtypes,
 * shapes, offsets in order covering the data exactly) without reading the data: the check before
 * a GPU is touched. 0, or -1 with the path and the problem. */
int st_check_file(const char *path, char *err, size_t err_size);
const st_tensor *st_find(const st_file *f, const char *name);
const void *st_data(const st_file *f, const st_tensor *t);
void st_close(st_file *f);
size_t st_dtype_size(st_dtype dtype);
const char *st_dtype_name(st_dtype dtype);

/* Writer: tensors are copied in as they are added and the file is written at st_writer_close,
 * to a temporary name then renamed, so a reader never sees half a file. */
typedef struct st_writer st_writer;
st_writer *st_writer_open(const char *path);
void st_writer_metadata(st_writer *w, const char *key, const char *value);
/* Returns -1 (message in the writer's error, see st_writer_close) on a duplicate name or bad shape. */
int st_writer_add(st_writer *w, const char *name, st_dtype dtype, int ndim, const int64_t *shape,
                  const void *data);
/* Writes and frees the writer. 0 on success; -1 with the reason in err. */
int st_writer_close(st_writer *w, char *err, size_t err_size);

#endif
