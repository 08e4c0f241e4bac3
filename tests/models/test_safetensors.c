/* safetensors reader and writer: round trips of every dtype (0-d scalars and empty tensors
 * included), files written byte for byte as the Python library writes them, one case per
 * validation rule with the message checked, every truncation of a valid file, and the writer's
 * refusals and atomic rename. CPU only. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "models/core/safetensors.h"
#include "tests/support/testutil.h"

/* The 8-byte little-endian length, the header text, then `data_len` bytes of data (0, 1, 2, ...). */
static uint8_t *make_file(const char *header, size_t data_len, size_t *size) {
    size_t n = strlen(header);
    *size = 8 + n + data_len;
    uint8_t *b = malloc(*size);
    assert_non_null(b);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(b + 8, header, n);
    for (size_t i = 0; i < data_len; i++) b[8 + n + i] = (uint8_t)i;
    return b;
}

static void expect_parse_error(const char *header, size_t data_len, const char *needle, const char *needle2) {
    size_t size;
    uint8_t *b = make_file(header, data_len, &size);
    st_file f;
    char err[512] = "";
    int rc = st_parse(&f, b, size, err, sizeof err);
    if (rc != -1 || !strstr(err, needle) || (needle2 && !strstr(err, needle2)))
        fail_msg("header %s: rc %d, message '%s', expected '%s'%s%s", header, rc, err, needle,
                 needle2 ? " and " : "", needle2 ? needle2 : "");
    assert_null(f.tensors); /* a failed parse leaves nothing to close */
    assert_null(f.bytes);
    free(b);
}

static void expect_parse_ok(const char *header, size_t data_len, int count) {
    size_t size;
    uint8_t *b = make_file(header, data_len, &size);
    st_file f;
    char err[512] = "";
    if (st_parse(&f, b, size, err, sizeof err) != 0) fail_msg("header %s: %s", header, err);
    assert_int_equal(f.count, count);
    st_close(&f);
    free(b);
}

static void test_round_trip(void **state) {
    char dir[256], path[320], err[512] = "";
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);

    float w32[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f};
    double w64[4] = {1.0 / 3.0, -1e300, 2.0, 0.5};
    uint16_t w16[3] = {0x3C00, 0xC000, 0x7BFF}; /* F16 1, -2, 65504 */
    uint16_t wbf[4] = {0x3F80, 0xBF80, 0x4049, 0x0000};
    int64_t batches = 12345678901234LL;
    int8_t w8[5] = {-128, -1, 0, 1, 127};
    uint8_t wu8[1] = {255};
    uint8_t wbool[3] = {1, 0, 1};
    int64_t s23[] = {2, 3}, s4[] = {4}, s3[] = {3}, s22[] = {2, 2}, s0[] = {0}, s203[] = {2, 0, 3},
            s5[] = {5}, s111[] = {1, 1, 1};

    st_writer *w = st_writer_open(path);
    assert_non_null(w);
    st_writer_metadata(w, "format", "pt");
    assert_int_equal(st_writer_add(w, "layer1.0.conv1.weight", ST_F32, 2, s23, w32), 0);
    assert_int_equal(st_writer_add(w, "f64", ST_F64, 1, s4, w64), 0);
    assert_int_equal(st_writer_add(w, "f16", ST_F16, 1, s3, w16), 0);
    assert_int_equal(st_writer_add(w, "bf16", ST_BF16, 2, s22, wbf), 0);
    assert_int_equal(st_writer_add(w, "bn1.num_batches_tracked", ST_I64, 0, NULL, &batches), 0);
    assert_int_equal(st_writer_add(w, "empty_i32", ST_I32, 1, s0, NULL), 0);
    assert_int_equal(st_writer_add(w, "empty_i16", ST_I16, 3, s203, NULL), 0);
    assert_int_equal(st_writer_add(w, "i8", ST_I8, 1, s5, w8), 0);
    assert_int_equal(st_writer_add(w, "u8 \"quoted\" \\ name\n", ST_U8, 3, s111, wu8), 0);
    assert_int_equal(st_writer_add(w, "mask", ST_BOOL, 1, s3, wbool), 0);
    if (st_writer_close(w, err, sizeof err) != 0) fail_msg("%s", err);

    st_file f;
    if (st_open(&f, path, err, sizeof err) != 0) fail_msg("%s", err);
    struct {
        const char *name;
        st_dtype dtype;
        int ndim;
        const int64_t *shape;
        const void *data;
        size_t nbytes;
    } want[] = {
        {"layer1.0.conv1.weight", ST_F32, 2, s23, w32, sizeof w32},
        {"f64", ST_F64, 1, s4, w64, sizeof w64},
        {"f16", ST_F16, 1, s3, w16, sizeof w16},
        {"bf16", ST_BF16, 2, s22, wbf, sizeof wbf},
        {"bn1.num_batches_tracked", ST_I64, 0, NULL, &batches, sizeof batches},
        {"empty_i32", ST_I32, 1, s0, NULL, 0},
        {"empty_i16", ST_I16, 3, s203, NULL, 0},
        {"i8", ST_I8, 1, s5, w8, sizeof w8},
        {"u8 \"quoted\" \\ name\n", ST_U8, 3, s111, wu8, sizeof wu8},
        {"mask", ST_BOOL, 1, s3, wbool, sizeof wbool},
    };
    int n = (int)(sizeof want / sizeof want[0]);
    assert_int_equal(f.count, n);
    size_t offset = 0;
    for (int i = 0; i < n; i++) {
        const st_tensor *t = &f.tensors[i]; /* insertion order is file order */
        assert_string_equal(t->name, want[i].name);
        assert_ptr_equal(st_find(&f, want[i].name), t);
        assert_int_equal(t->dtype, want[i].dtype);
        assert_int_equal(t->ndim, want[i].ndim);
        for (int d = 0; d < t->ndim; d++) assert_int_equal(t->shape[d], want[i].shape[d]);
        assert_int_equal(t->nbytes, want[i].nbytes);
        assert_int_equal(t->offset, offset); /* contiguous */
        offset += t->nbytes;
        assert_non_null(st_data(&f, t));
        if (want[i].nbytes) assert_memory_equal(st_data(&f, t), want[i].data, want[i].nbytes);
    }
    assert_int_equal(f.data_size, offset);

    /* The layout Python writes: header length a multiple of 8, padded with spaces, metadata first. */
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = header_len << 8 | f.bytes[i];
    assert_int_equal(header_len % 8, 0);
    assert_int_equal(8 + header_len + offset, f.size);
    const char *header = (const char *)f.bytes + 8;
    assert_memory_equal(header, "{\"__metadata__\":{\"format\":\"pt\"},", 32);
    size_t last = header_len;
    while (last > 0 && header[last - 1] == ' ') last--;
    assert_int_equal(header[last - 1], '}');
    expect_lt(header_len - last, 8);
    assert_non_null(strstr(header, "\"bn1.num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],"));
    st_close(&f);
    assert_null(f.bytes);
    st_close(&f); /* closing twice is harmless */
    test_rmtree(dir);
}

/* Bytes exactly as safetensors 0.8 (safetensors.numpy.save) writes them. */
static void test_reads_python_files(void **state) {
    /* save({"a": np.array([1, 2], dtype=np.float32)}) */
    static const uint8_t simple[] = "8\0\0\0\0\0\0\0"
                                    "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}  "
                                    "\0\0\x80?\0\0\0@";
    st_file f;
    char err[512] = "";
    if (st_parse(&f, simple, sizeof simple - 1, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(sizeof simple - 1, 72);
    assert_int_equal(f.count, 1);
    const st_tensor *a = st_find(&f, "a");
    assert_non_null(a);
    assert_int_equal(a->dtype, ST_F32);
    assert_int_equal(a->ndim, 1);
    assert_int_equal(a->shape[0], 2);
    float v[2];
    memcpy(v, st_data(&f, a), sizeof v);
    expect_eq(v[0], 1.0f); expect_eq(v[1], 2.0f);
    st_close(&f);

    /* save({"bias": [0.5, -1] f32, "num_batches_tracked": 7 i64 (0-d), "w": zeros((2, 0)) f16},
     *      metadata={"format": "pt"}): the library orders by alignment then name. */
    static const uint8_t bn[] =
        "\xd8\0\0\0\0\0\0\0"
        "{\"__metadata__\":{\"format\":\"pt\"},\"num_batches_tracked\":{\"dtype\":\"I64\",\"shape\":[],"
        "\"data_offsets\":[0,8]},\"bias\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
        "\"w\":{\"dtype\":\"F16\",\"shape\":[2,0],\"data_offsets\":[16,16]}}"
        "\x07\0\0\0\0\0\0\0"
        "\0\0\0?\0\0\x80\xbf";
    assert_int_equal(sizeof bn - 1, 240);
    if (st_parse(&f, bn, sizeof bn - 1, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(f.count, 3);
    assert_string_equal(f.tensors[0].name, "num_batches_tracked");
    const st_tensor *nbt = st_find(&f, "num_batches_tracked"), *bias = st_find(&f, "bias"), *wt = st_find(&f, "w");
    assert_true(nbt && bias && wt);
    assert_int_equal(nbt->dtype, ST_I64);
    assert_int_equal(nbt->ndim, 0);
    int64_t count;
    memcpy(&count, st_data(&f, nbt), sizeof count);
    assert_int_equal(count, 7);
    float b[2];
    memcpy(b, st_data(&f, bias), sizeof b);
    expect_eq(b[0], 0.5f); expect_eq(b[1], -1.0f);
    assert_int_equal(wt->ndim, 2);
    assert_int_equal(wt->shape[1], 0);
    assert_int_equal(wt->nbytes, 0);
    assert_non_null(st_data(&f, wt));
    st_close(&f);
}

static void test_rejects_overlap_gaps_and_trailing_data(void **state) {
    /* As the format (and the Python library) requires: the tensors lie end to end from byte 0 and
     * cover the data section exactly. Shared storage, a gap or bytes after the last are refused. */
    expect_parse_error("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
                       "data_offsets [0, 8] overlap tensor", NULL);
    expect_parse_error("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", 6,
                       "tensor 'b': data_offsets [2, 6] overlap tensor 'a' (which ends at 4)", NULL);
    expect_parse_error("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                       "\"c\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[4,5]}}", 5,
                       "tensor 'c': data_offsets begin at 4, leaving bytes 1..4", NULL);
    expect_parse_error("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 9,
                       "the tensors cover 1 bytes but the data section holds 9", NULL);
    expect_parse_error("{}", 3, "the tensors cover 0 bytes but the data section holds 3", NULL);
    /* In any order in the header, extra fields and spacing: fine. */
    expect_parse_ok("{\"c\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[8,9],\"extra\":1},"
                    "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                    "\"z\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[9,9]}}   \n ", 9, 3);
    expect_parse_ok("{}", 0, 0);
    expect_parse_ok("{\"__metadata__\":{\"format\":\"pt\",\"epoch\":\"3\"}}      ", 0, 0);
    expect_parse_ok("{\"s\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}", 8, 1);
    expect_parse_ok("{\"s\":{\"dtype\":\"BOOL\",\"shape\":[1.0,2e0],\"data_offsets\":[0,2]}}", 2, 1);
}

static void test_rejects_bad_headers(void **state) {
    uint8_t short_file[7] = {0};
    st_file f;
    char err[512] = "";
    for (size_t n = 0; n < sizeof short_file; n++) {
        assert_int_equal(st_parse(&f, short_file, n, err, sizeof err), -1);
        assert_non_null(strstr(err, "shorter than the 8-byte header length"));
    }
    uint8_t long_header[16] = {200, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
    assert_int_equal(st_parse(&f, long_header, sizeof long_header, err, sizeof err), -1);
    assert_non_null(strstr(err, "header length 200 is beyond the end of the file"));
    uint8_t huge[16] = {0x01, 0xe1, 0xf5, 0x05, 0, 0, 0, 0}; /* 100,000,001 */
    assert_int_equal(st_parse(&f, huge, sizeof huge, err, sizeof err), -1);
    assert_non_null(strstr(err, "exceeds the 100000000-byte limit"));
    uint8_t max_len[16] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(st_parse(&f, max_len, sizeof max_len, err, sizeof err), -1);
    assert_non_null(strstr(err, "exceeds"));
    assert_int_equal(st_parse(&f, NULL, 10, err, sizeof err), -1);
    assert_int_equal(st_parse(&f, NULL, 0, NULL, 0), -1); /* no room for a message is fine too */

    expect_parse_error("", 0, "not valid JSON", NULL);
    expect_parse_error("{\"a\":", 0, "not valid JSON", NULL);
    expect_parse_error("[1,2]", 0, "not a JSON object", NULL);
    expect_parse_error("\"text\"", 0, "not a JSON object", NULL);
    expect_parse_error("{} x", 0, "trailing bytes", NULL);
    expect_parse_error("{}{}", 0, "trailing bytes", NULL);
    expect_parse_error("{\"\xff\":1}", 0, "not valid UTF-8", NULL);
    expect_parse_error("{\"\xc0\x80\":1}", 0, "not valid UTF-8", NULL); /* overlong NUL */
    expect_parse_error("{\"\xed\xa0\x80\":1}", 0, "not valid UTF-8", NULL); /* surrogate */
    size_t size;
    uint8_t *b = make_file("{\"a\":1}", 0, &size);
    b[10] = '\0';
    assert_int_equal(st_parse(&f, b, size, err, sizeof err), -1);
    assert_non_null(strstr(err, "NUL byte"));
    free(b);
    expect_parse_error("{\"__metadata__\":[]}", 0, "\"__metadata__\" is not a JSON object", NULL);
    expect_parse_error("{\"__metadata__\":{\"epoch\":3}}", 0, "value of 'epoch' is not a string", NULL);
    expect_parse_error("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "\"__metadata__\" appears twice", NULL);
}

#define T(body) "{\"w\":{" body "}}"
static void test_rejects_bad_entries(void **state) {
    expect_parse_error("{\"w\":[1]}", 0, "tensor 'w': entry is not a JSON object", NULL);
    expect_parse_error("{\"w\":null}", 0, "tensor 'w': entry is not a JSON object", NULL);
    expect_parse_error(T("\"shape\":[2],\"data_offsets\":[0,8]"), 8, "tensor 'w': missing \"dtype\"", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"data_offsets\":[0,8]"), 8, "tensor 'w': missing \"shape\"", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2]"), 8, "tensor 'w': missing \"data_offsets\"", NULL);
    expect_parse_error(T("\"dtype\":4,\"shape\":[2],\"data_offsets\":[0,8]"), 8, "\"dtype\" is not a string", "'w'");
    expect_parse_error(T("\"dtype\":\"F99\",\"shape\":[2],\"data_offsets\":[0,8]"), 8,
                       "tensor 'w': unsupported dtype 'F99'", NULL);
    expect_parse_error(T("\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]"), 8, "unsupported dtype 'f32'", NULL);
    expect_parse_error(T("\"dtype\":\"U16\",\"shape\":[2],\"data_offsets\":[0,4]"), 8, "unsupported dtype 'U16'", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]"), 8,
                       "field \"dtype\" appears twice", "'w'");
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":2,\"data_offsets\":[0,8]"), 8, "\"shape\" is not an array", "'w'");
    expect_parse_error(T("\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]"), 8,
                       "tensor 'w': shape has 9 dims, at most 8", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2,-1],\"data_offsets\":[0,8]"), 8, "shape[1] is -1", "'w'");
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]"), 8, "shape[0] is 2.5", "'w'");
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[1e16],\"data_offsets\":[0,8]"), 8, "shape[0] is 10000000000000000", "'w'");
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[1e999],\"data_offsets\":[0,8]"), 8, "shape[0] is inf", "'w'");
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[\"2\"],\"data_offsets\":[0,8]"), 8,
                       "tensor 'w': shape[0] is not a number", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":{\"a\":0,\"b\":8}"), 8,
                       "\"data_offsets\" is not an array [begin, end]", "'w'");
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,8]"), 8, "is not an array [begin, end]", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0]"), 8, "is not an array [begin, end]", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8.5]"), 8,
                       "tensor 'w': \"data_offsets\" must hold integers", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]"), 8, "must hold integers", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]"), 8,
                       "tensor 'w': data_offsets [8, 0] have begin > end", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]"), 7,
                       "tensor 'w': data_offsets end 8 is beyond the data section (7 bytes)", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,8]"), 8,
                       "tensor 'w': data_offsets span 8 bytes but shape [2, 3] of F32 needs 24", NULL);
    expect_parse_error(T("\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,0]"), 8, "span 0 bytes but shape [] of F32 needs 4", NULL);
    expect_parse_error(T("\"dtype\":\"F64\",\"shape\":[4294967296,4294967296,4294967296],\"data_offsets\":[0,8]"), 8,
                       "tensor 'w': shape [4294967296, 4294967296, 4294967296] of F64 overflows", NULL);
    expect_parse_error(T("\"dtype\":\"I64\",\"shape\":[9007199254740992,4096],\"data_offsets\":[0,8]"), 8, "overflows", NULL);
    /* A zero dim makes the tensor empty whatever the others are: no overflow, 0 bytes needed. */
    expect_parse_ok(T("\"dtype\":\"F64\",\"shape\":[9007199254740992,9007199254740992,0],\"data_offsets\":[0,0]"), 0, 1);

    char name[ST_MAX_NAME + 2];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    char header[1024];
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", name);
    expect_parse_error(header, 1, "name is 257 bytes, at most 255", "'nnnn");
    name[ST_MAX_NAME - 1] = '\0'; /* 255 bytes: the longest allowed */
    snprintf(header, sizeof header, "{\"%s\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}", name);
    expect_parse_ok(header, 1, 1);

    expect_parse_error("{\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},"
                       "\"b\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},"
                       "\"a\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}",
                       1, "duplicate tensor name 'a'", NULL);
    /* The first bad entry is reported, by name, even after good ones. */
    expect_parse_error("{\"ok\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},"
                       "\"bad\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,1]}}",
                       1, "tensor 'bad': data_offsets span 1 bytes", NULL);
}

/* Every proper prefix of a valid file is an error with a message, never a crash or a success. */
static void test_truncated_at_every_length(void **state) {
    size_t size;
    uint8_t *full = make_file("{\"__metadata__\":{\"format\":\"pt\"},"
                              "\"x\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                              "\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[16,24]},"
                              "\"e\":{\"dtype\":\"F16\",\"shape\":[0],\"data_offsets\":[24,24]}}   ",
                              24, &size);
    st_file f;
    char err[512];
    assert_int_equal(st_parse(&f, full, size, err, sizeof err), 0);
    assert_int_equal(f.count, 3);
    st_close(&f);
    for (size_t n = 0; n < size; n++) {
        uint8_t *prefix = malloc(n ? n : 1); /* exact-size copy so a sanitizer sees any overread */
        assert_non_null(prefix);
        memcpy(prefix, full, n);
        err[0] = '\0';
        if (st_parse(&f, prefix, n, err, sizeof err) != -1) fail_msg("prefix of %zu bytes parsed", n);
        expect_gt(strlen(err), 10);
        free(prefix);
    }
    free(full);
}

static void test_find(void **state) {
    size_t size;
    uint8_t *b = make_file("{\"conv.weight\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, &size);
    st_file f;
    char err[512];
    assert_int_equal(st_parse(&f, b, size, err, sizeof err), 0);
    assert_non_null(st_find(&f, "conv.weight"));
    assert_null(st_find(&f, "conv.weigh"));
    assert_null(st_find(&f, "conv.weight.x"));
    assert_null(st_find(&f, "Conv.weight"));
    assert_null(st_find(&f, ""));
    assert_null(st_find(&f, "__metadata__"));
    assert_null(st_find(&f, NULL));
    assert_null(st_find(NULL, "conv.weight"));
    assert_null(st_data(&f, NULL));
    st_close(&f);
    free(b);
    assert_string_equal(st_dtype_name(ST_BF16), "BF16");
    assert_int_equal(st_dtype_size(ST_BF16), 2);
    assert_int_equal(st_dtype_size(ST_I64), 8);
    assert_int_equal(st_dtype_size((st_dtype)99), 0);
}

static void test_open_errors(void **state) {
    char dir[256], path[320], err[512] = "";
    test_tmpdir(dir, sizeof dir);
    st_file f;
    assert_int_equal(st_open(&f, dir, err, sizeof err), -1);
    assert_non_null(strstr(err, dir));
    assert_non_null(strstr(err, "Is a directory"));
    snprintf(path, sizeof path, "%s/missing.safetensors", dir);
    assert_int_equal(st_open(&f, path, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "No such file or directory"));
    /* A malformed file names the path and the problem. */
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    fputs("abc", fp);
    fclose(fp);
    assert_int_equal(st_open(&f, path, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "shorter than the 8-byte header length"));
    test_rmtree(dir);
}

static int count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void test_writer_refusals(void **state) {
    char dir[256], path[320], err[512] = "";
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    float x[4] = {0};
    int64_t s4[] = {4}, neg[] = {2, -1}, huge[] = {INT64_MAX / 2, 4};
    char long_name[ST_MAX_NAME + 1];
    memset(long_name, 'x', ST_MAX_NAME);
    long_name[ST_MAX_NAME] = '\0';
    struct {
        const char *name;
        st_dtype dtype;
        int ndim;
        const int64_t *shape;
        const void *data;
        const char *needle;
    } cases[] = {
        {"w", ST_F32, 1, s4, x, "duplicate tensor name 'w'"}, /* after a first "w" */
        {"v", ST_F32, 2, neg, x, "tensor 'v': shape[1] is -1"},
        {"v", ST_F32, 2, huge, x, "tensor 'v': shape[0] is"},
        {"v", ST_F32, 9, s4, x, "tensor 'v': ndim 9"},
        {"v", ST_F32, -1, s4, x, "tensor 'v': ndim -1"},
        {"v", ST_F32, 1, NULL, x, "tensor 'v': ndim 1, expected 0..8 with a shape"},
        {"v", ST_F32, 1, s4, NULL, "tensor 'v': no data for 16 bytes"},
        {"v", (st_dtype)42, 1, s4, x, "tensor 'v': invalid dtype 42"},
        {"__metadata__", ST_F32, 1, s4, x, "not \"__metadata__\""},
        {"\xff", ST_F32, 1, s4, x, "name must be UTF-8"},
        {long_name, ST_F32, 1, s4, x, "name is 256 bytes, at most 255"},
        {NULL, ST_F32, 1, s4, x, "tensor with no name"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        st_writer *w = st_writer_open(path);
        assert_non_null(w);
        if (i == 0) assert_int_equal(st_writer_add(w, "w", ST_F32, 1, s4, x), 0);
        assert_int_equal(st_writer_add(w, cases[i].name, cases[i].dtype, cases[i].ndim, cases[i].shape, cases[i].data), -1);
        /* Later adds do not hide the first error, and nothing is written. */
        st_writer_add(w, "later", ST_F32, 1, s4, x);
        err[0] = '\0';
        assert_int_equal(st_writer_close(w, err, sizeof err), -1);
        if (!strstr(err, cases[i].needle) || !strstr(err, path)) fail_msg("case %zu: '%s'", i, err);
        assert_int_equal(count_entries(dir), 0);
    }
    assert_int_equal(st_writer_close(NULL, err, sizeof err), -1);
    assert_int_equal(st_writer_add(NULL, "w", ST_F32, 1, s4, x), -1);
    st_writer_metadata(NULL, "format", "pt");
    test_rmtree(dir);
}

static void test_writer_unwritable_path(void **state) {
    char dir[256], path[400], err[512] = "";
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/no/such/dir/out.safetensors", dir);
    uint8_t v = 1;
    st_writer *w = st_writer_open(path);
    assert_int_equal(st_writer_add(w, "v", ST_U8, 0, NULL, &v), 0);
    assert_int_equal(st_writer_close(w, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot create"));
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "No such file or directory"));
    w = st_writer_open("");
    assert_int_equal(st_writer_close(w, err, sizeof err), -1);
    assert_non_null(strstr(err, "no output path"));
    test_rmtree(dir);
}

static void write_one(const char *path, float value) {
    char err[512];
    int64_t s1[] = {1};
    st_writer *w = st_writer_open(path);
    assert_int_equal(st_writer_add(w, "v", ST_F32, 1, s1, &value), 0);
    if (st_writer_close(w, err, sizeof err) != 0) fail_msg("%s", err);
}

static float read_one(const char *path) {
    st_file f;
    char err[512];
    if (st_open(&f, path, err, sizeof err) != 0) fail_msg("%s", err);
    float v;
    memcpy(&v, st_data(&f, st_find(&f, "v")), sizeof v);
    st_close(&f);
    return v;
}

/* A failed write leaves the previous file as it was and no temporary file behind. */
static void test_writer_atomic(void **state) {
    char dir[256], path[320], err[512] = "";
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    write_one(path, 1.0f);
    write_one(path, 2.0f); /* replacing an existing file works */
    expect_eq(read_one(path), 2.0f);
    assert_int_equal(count_entries(dir), 1);

    /* The write fails part way (file size limit: EFBIG, as a full disk gives ENOSPC). */
    static float big[1 << 14];
    int64_t s[] = {1 << 14};
    struct rlimit old;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    struct rlimit small = {4096, old.rlim_max};
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    st_writer *w = st_writer_open(path);
    assert_int_equal(st_writer_add(w, "v", ST_F32, 1, s, big), 0);
    int rc = st_writer_close(w, err, sizeof err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, old_handler);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "writing"));
    assert_non_null(strstr(err, "File too large"));
    expect_eq(read_one(path), 2.0f);
    assert_int_equal(count_entries(dir), 1);

    /* The rename fails (the final name is a non-empty directory). */
    char blocked[400], inside[460];
    snprintf(blocked, sizeof blocked, "%s/blocked", dir);
    assert_int_equal(mkdir(blocked, 0755), 0);
    snprintf(inside, sizeof inside, "%s/keep", blocked);
    write_one(inside, 3.0f);
    w = st_writer_open(blocked);
    float v = 4.0f;
    assert_int_equal(st_writer_add(w, "v", ST_F32, 0, NULL, &v), 0);
    assert_int_equal(st_writer_close(w, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot rename"));
    assert_int_equal(count_entries(dir), 2); /* ckpt.safetensors and blocked/, no .tmp */
    assert_int_equal(count_entries(blocked), 1);
    expect_eq(read_one(inside), 3.0f);

    /* A refused add leaves the existing file untouched. */
    w = st_writer_open(path);
    int64_t s1[] = {1};
    assert_int_equal(st_writer_add(w, "v", ST_F32, 1, s1, &v), 0);
    assert_int_equal(st_writer_add(w, "v", ST_F32, 1, s1, &v), -1);
    assert_int_equal(st_writer_close(w, err, sizeof err), -1);
    expect_eq(read_one(path), 2.0f);
    assert_int_equal(count_entries(dir), 2);
    test_rmtree(dir);
}

static void test_writer_metadata_and_empty(void **state) {
    char dir[256], path[320], err[512] = "";
    test_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/empty.safetensors", dir);
    st_writer *w = st_writer_open(path);
    st_writer_metadata(w, "format", "np");
    st_writer_metadata(w, "note", "a \"quoted\"\tvalue\\ with \xc3\xa9");
    st_writer_metadata(w, "format", "pt"); /* replaces the first value */
    if (st_writer_close(w, err, sizeof err) != 0) fail_msg("%s", err);
    st_file f;
    if (st_open(&f, path, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(f.count, 0);
    assert_int_equal(f.data_size, 0);
    const char *expect = "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"a \\\"quoted\\\"\\u0009value\\\\ with \xc3\xa9\"}}";
    assert_memory_equal(f.bytes + 8, expect, strlen(expect));
    assert_int_equal((f.size - 8) % 8, 0);
    st_close(&f);

    w = st_writer_open(path); /* no tensors, no metadata: "{}" padded */
    if (st_writer_close(w, err, sizeof err) != 0) fail_msg("%s", err);
    if (st_open(&f, path, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(f.size, 16);
    assert_memory_equal(f.bytes + 8, "{}      ", 8);
    st_close(&f);

    w = st_writer_open(path);
    st_writer_metadata(w, "bad", "\xff");
    assert_int_equal(st_writer_close(w, err, sizeof err), -1);
    assert_non_null(strstr(err, "metadata"));
    test_rmtree(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_reads_python_files),
        cmocka_unit_test(test_rejects_overlap_gaps_and_trailing_data),
        cmocka_unit_test(test_rejects_bad_headers),
        cmocka_unit_test(test_rejects_bad_entries),
        cmocka_unit_test(test_truncated_at_every_length),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_writer_refusals),
        cmocka_unit_test(test_writer_unwritable_path),
        cmocka_unit_test(test_writer_atomic),
        cmocka_unit_test(test_writer_metadata_and_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
