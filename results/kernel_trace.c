/* A job's traced files (see kernel_trace.h). */
#define _GNU_SOURCE
#include "results/kernel_trace.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "results/fields.h"


static const char *const HEADER_KEYS[] = {"job", "model", "precision", "batch", "device_name", "device_sms",
                                          "sm_count", "clock", "t0", "t1", "steps", "step_ms", "kernels",
                                          "dropped", "peak_flops", "peak_bytes_s"};
#define HEADER_KEY_COUNT (sizeof HEADER_KEYS / sizeof HEADER_KEYS[0])
#define ROW_HEADER "scope,layer,pass,class,kernel,count,total_ns,min_ns,max_ns,flops,bytes"
#define INTERVAL_HEADER "start_ns,end_ns,scope,class,stream"

static int fail(char *err, size_t err_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t err_size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
    return -1;
}

/* --- the fields of a line ------------------------------------------------------------------- */

/* Splits one CSV line (RFC 4180 quoting, no line breaks inside a field) into at most max fields,
 * in place. The count of fields, or -1 for a quote left open or text after a closing quote. */
static int split_csv(char *line, char **fields, int max) {
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max) return max + 1;
        if (*p == '"') {
            char *out = ++p;
            fields[n++] = out;
            for (;;) {
                if (!*p) return -1;
                if (*p == '"' && p[1] == '"') *out++ = '"', p += 2;
                else if (*p == '"') break;
                else *out++ = *p++;
            }
            p++;
            *out = 0;
            if (*p && *p != ',') return -1;
        } else {
            fields[n++] = p;
            p += strcspn(p, ",");
        }
        if (!*p) return n;
        *p++ = 0;
    }
}

/* A finite number >= 0 spelled wholly by text. */
static int number(const char *text, double *out) {
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(v) || v < 0) return -1;
    *out = v;
    return 0;
}

static int whole(const char *text, long long lo, long long hi, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (!*text || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Unix seconds with up to 9 decimals, to the ns (a double would round them to a quarter of a us). */
static int unix_ns(const char *text, int64_t *out) {
    const char *dot = strchr(text, '.');
    size_t whole_len = dot ? (size_t)(dot - text) : strlen(text);
    char secs[24];
    long long s;
    if (whole_len == 0 || whole_len >= sizeof secs) return -1;
    memcpy(secs, text, whole_len);
    secs[whole_len] = 0;
    if (whole(secs, 0, 9000000000LL, &s) != 0) return -1;
    int64_t ns = 0, scale = 100000000;
    for (const char *p = dot ? dot + 1 : ""; *p; p++, scale /= 10) {
        if (*p < '0' || *p > '9' || scale == 0) return -1;
        ns += (*p - '0') * scale;
    }
    if (dot && !dot[1]) return -1;
    *out = (int64_t)s * 1000000000LL + ns;
    return 0;
}

/* --- the kernels file ----------------------------------------------------------------------- */

static int header_line(ktrace *t, const char *key, const char *value, int *seen) {
    size_t k = 0;
    while (k < HEADER_KEY_COUNT && strcmp(HEADER_KEYS[k], key)) k++;
    if (k == HEADER_KEY_COUNT) return 0; /* a key this reader does not use */
    seen[k] = 1;
    long long n;
    double v;
    switch (k) {
    case 0: snprintf(t->job, sizeof t->job, "%s", value); return 0;
    case 1: snprintf(t->model, sizeof t->model, "%s", value); return 0;
    case 2: snprintf(t->precision, sizeof t->precision, "%s", value); return 0;
    case 4: snprintf(t->device_name, sizeof t->device_name, "%s", value); return 0;
    case 7:
        snprintf(t->clock, sizeof t->clock, "%s", value);
        return strcmp(value, "realtime") ? -1 : 0;
    case 3: case 5: case 6:
        if (whole(value, 0, INT_MAX, &n) != 0) return -1;
        *(k == 3 ? &t->batch : k == 5 ? &t->device_sms : &t->sm_count) = (int)n;
        return 0;
    case 8: return unix_ns(value, &t->t0_ns);
    case 9: return unix_ns(value, &t->t1_ns);
    default:
        if (number(value, &v) != 0) return -1;
        double *field[] = {&t->steps, &t->step_ms, &t->kernels, &t->dropped, &t->peak_flops, &t->peak_bytes_s};
        *field[k - 10] = v;
        return 0;
    }
}

static int read_row(ktrace *t, char *line, const char *path, long lineno, char *err, size_t err_size) {
    char *f[12];
    int n = split_csv(line, f, 11);
    if (n != 11) return fail(err, err_size, "%s:%ld: expected the 11 fields of " ROW_HEADER ", got %d", path, lineno, n);
    ktrace_row r;
    memset(&r, 0, sizeof r);
    long long scope;
    if (whole(f[0], 0, INT_MAX, &scope) != 0) return fail(err, err_size, "%s:%ld: scope: expected an id, got '%.40s'", path, lineno, f[0]);
    r.scope = (int)scope;
    if (!*f[1]) return fail(err, err_size, "%s:%ld: layer: empty", path, lineno);
    snprintf(r.layer, sizeof r.layer, "%s", f[1]);
    if (kernel_pass_parse(f[2]) < 0)
        return fail(err, err_size, "%s:%ld: pass: expected forward, dgrad, wgrad, backward, update or -, got '%.40s'",
                    path, lineno, f[2]);
    snprintf(r.pass, sizeof r.pass, "%s", f[2]);
    if ((r.cls = kernel_class_parse(f[3])) < 0)
        return fail(err, err_size, "%s:%ld: class: '%.40s' is none of the classes (conv_fwd, ..., other)", path, lineno, f[3]);
    snprintf(r.kernel, sizeof r.kernel, "%s", f[4]);
    double *nums[] = {&r.count, &r.total_ns, &r.min_ns, &r.max_ns, &r.flops, &r.bytes};
    static const char *const names[] = {"count", "total_ns", "min_ns", "max_ns", "flops", "bytes"};
    for (int k = 0; k < 6; k++)
        if (number(f[5 + k], nums[k]) != 0)
            return fail(err, err_size, "%s:%ld: %s: expected a number >= 0, got '%.40s'", path, lineno, names[k], f[5 + k]);
    for (int k = 0; k < t->row_count; k++)
        if (t->rows[k].scope == r.scope && (strcmp(t->rows[k].layer, r.layer) || strcmp(t->rows[k].pass, r.pass)))
            return fail(err, err_size, "%s:%ld: scope %d is %s %s here and %s %s on an earlier row", path, lineno,
                        r.scope, r.layer, r.pass, t->rows[k].layer, t->rows[k].pass);
    if (t->row_count % 256 == 0) {
        ktrace_row *grown = realloc(t->rows, (size_t)(t->row_count + 256) * sizeof *grown);
        if (!grown) return fail(err, err_size, "%s: out of memory", path);
        t->rows = grown;
    }
    t->rows[t->row_count++] = r;
    return 0;
}

/* One line without its line break; 0 at the end of the file, -1 when out of memory. */
static ssize_t next_line(FILE *f, char **line, size_t *cap) {
    ssize_t n = getline(line, cap, f);
    if (n < 0) return feof(f) ? 0 : -1;
    while (n > 0 && ((*line)[n - 1] == '\n' || (*line)[n - 1] == '\r')) (*line)[--n] = 0;
    return n + 1; /* an empty line still counts as one */
}

static int read_kernels(ktrace *t, const char *path, char *err, size_t err_size) {
    FILE *f = fopen(path, "r");
    if (!f) return fail(err, err_size, "%s: cannot read: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int seen[HEADER_KEY_COUNT] = {0}, rc = 0, in_rows = 0;
    while (rc == 0 && next_line(f, &line, &cap) > 0) {
        lineno++;
        if (!in_rows && line[0] == '#') {
            char *kv = line + 1 + strspn(line + 1, " "), *eq = strchr(kv, '=');
            if (!eq) rc = fail(err, err_size, "%s:%ld: expected '# key=value'", path, lineno);
            else if ((*eq = 0, header_line(t, kv, eq + 1, seen)) != 0)
                rc = fail(err, err_size, "%s:%ld: %s: '%.60s' is not a value of it", path, lineno, kv, eq + 1);
        } else if (!in_rows) {
            for (size_t k = 0; k < HEADER_KEY_COUNT && rc == 0; k++)
                if (!seen[k]) rc = fail(err, err_size, "%s: the header line '# %s=...' is missing", path, HEADER_KEYS[k]);
            if (rc == 0 && strcmp(line, ROW_HEADER))
                rc = fail(err, err_size, "%s:%ld: expected the header " ROW_HEADER, path, lineno);
            in_rows = 1;
        } else if (line[0]) {
            rc = read_row(t, line, path, lineno, err, err_size);
        }
    }
    if (rc == 0 && !in_rows) rc = fail(err, err_size, "%s: no header " ROW_HEADER, path);
    if (rc == 0 && t->t1_ns <= t->t0_ns) rc = fail(err, err_size, "%s: t1 is not after t0", path);
    if (rc == 0 && !(t->steps > 0)) rc = fail(err, err_size, "%s: steps=0: no step completed in the traced window", path);
    free(line);
    fclose(f);
    return rc;
}

/* --- the intervals file --------------------------------------------------------------------- */

static int by_start(const void *a, const void *b) {
    const ktrace_interval *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int read_intervals(ktrace *t, const char *path, char *err, size_t err_size) {
    FILE *f = fopen(path, "r");
    if (!f) return fail(err, err_size, "%s: cannot read: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0, room = 0;
    int rc = 0, sorted = 1;
    int64_t window = t->t1_ns - t->t0_ns;
    while (rc == 0 && next_line(f, &line, &cap) > 0) {
        lineno++;
        if (lineno == 1) {
            if (strcmp(line, INTERVAL_HEADER)) rc = fail(err, err_size, "%s:1: expected the header " INTERVAL_HEADER, path);
            continue;
        }
        if (!line[0]) continue;
        char *fl[6];
        long long start = 0, end = 0, scope = 0, stream = 0;
        if (split_csv(line, fl, 5) != 5) {
            rc = fail(err, err_size, "%s:%ld: expected the 5 fields of " INTERVAL_HEADER, path, lineno);
            break;
        }
        long long cls = kernel_class_parse(fl[3]);
        if (cls < 0 && whole(fl[3], 0, KCLASS_COUNT - 1, &cls) != 0) cls = -1;
        if (whole(fl[0], 0, window * 4 + 1000000000LL, &start) != 0 || whole(fl[1], start, INT64_MAX, &end) != 0)
            rc = fail(err, err_size, "%s:%ld: start_ns, end_ns: expected 0 <= start <= end (ns since t0), got %s, %s",
                      path, lineno, fl[0], fl[1]);
        else if (whole(fl[2], 0, INT_MAX, &scope) != 0 || !ktrace_scope_row(t, (int)scope))
            rc = fail(err, err_size, "%s:%ld: scope: '%.40s' is no scope of the kernels file", path, lineno, fl[2]);
        else if (cls < 0)
            rc = fail(err, err_size, "%s:%ld: class: '%.40s' is none of the classes", path, lineno, fl[3]);
        else if (whole(fl[4], LLONG_MIN, LLONG_MAX, &stream) != 0)
            rc = fail(err, err_size, "%s:%ld: stream: expected a whole number, got '%.40s'", path, lineno, fl[4]);
        if (rc) break;
        if (t->interval_count == room) {
            room = room ? room * 2 : 4096;
            ktrace_interval *grown = realloc(t->intervals, (size_t)room * sizeof *grown);
            if (!grown) {
                rc = fail(err, err_size, "%s: out of memory at line %ld", path, lineno);
                break;
            }
            t->intervals = grown;
        }
        if (t->interval_count && start < t->intervals[t->interval_count - 1].start) sorted = 0;
        t->intervals[t->interval_count++] = (ktrace_interval){start, end, (int)scope, (int)cls, (int)stream};
    }
    if (rc == 0 && lineno == 0) rc = fail(err, err_size, "%s: empty: expected the header " INTERVAL_HEADER, path);
    if (rc == 0 && !sorted) qsort(t->intervals, (size_t)t->interval_count, sizeof *t->intervals, by_start);
    free(line);
    fclose(f);
    return rc;
}

int ktrace_intervals_path(const char *kernels_path, char *out, size_t size) {
    static const char suffix[] = ".kernels.csv";
    size_t n = strlen(kernels_path), s = sizeof suffix - 1;
    if (n <= s || strcmp(kernels_path + n - s, suffix)) return -1;
    int w = snprintf(out, size, "%.*s.intervals.csv", (int)(n - s), kernels_path);
    return w < 0 || (size_t)w >= size ? -1 : 0;
}

const ktrace_row *ktrace_scope_row(const ktrace *t, int scope) {
    if (!t->scope_row || scope < 0 || scope > t->scope_max || t->scope_row[scope] < 0) return NULL;
    return &t->rows[t->scope_row[scope]];
}

/* Scope ids are small integers (the tracer numbers its scopes): a table of them. */
#define KTRACE_SCOPE_MAX 10000000
static int index_scopes(ktrace *t, const char *path, char *err, size_t err_size) {
    t->scope_max = -1;
    for (int k = 0; k < t->row_count; k++)
        if (t->rows[k].scope > t->scope_max) t->scope_max = t->rows[k].scope;
    if (t->scope_max > KTRACE_SCOPE_MAX)
        return fail(err, err_size, "%s: scope id %d: ids are small integers (at most %d)", path, t->scope_max,
                    KTRACE_SCOPE_MAX);
    t->scope_row = malloc((size_t)(t->scope_max + 2) * sizeof *t->scope_row);
    if (!t->scope_row) return fail(err, err_size, "%s: out of memory", path);
    for (int s = 0; s <= t->scope_max; s++) t->scope_row[s] = -1;
    for (int k = t->row_count - 1; k >= 0; k--) t->scope_row[t->rows[k].scope] = k;
    return 0;
}

int ktrace_read(ktrace *t, const char *kernels_path, char *err, size_t err_size) {
    memset(t, 0, sizeof *t);
    char intervals[PATH_MAX + 32];
    if (ktrace_intervals_path(kernels_path, intervals, sizeof intervals) != 0)
        return fail(err, err_size, "%s: a traced file's name ends in .kernels.csv", kernels_path);
    int rc = read_kernels(t, kernels_path, err, err_size);
    if (rc == 0) rc = index_scopes(t, kernels_path, err, err_size);
    if (rc == 0) rc = read_intervals(t, intervals, err, err_size);
    if (rc != 0) ktrace_free(t);
    return rc;
}

void ktrace_free(ktrace *t) {
    free(t->rows);
    free(t->scope_row);
    free(t->intervals);
    memset(t, 0, sizeof *t);
}

/* --- the event in the run's files ----------------------------------------------------------- */

int ktrace_any_reported(const job_record *jobs, int count) {
    for (int i = 0; i < count; i++)
        if (jobs[i].kernels.reported) return 1;
    return 0;
}

void ktrace_csv_header(FILE *f) {
    fprintf(f, ",kernels_file,kernels_error,traced_kernels,traced_dropped,traced_steps,traced_step_ms,traced_t0,"
               "traced_t1");
}

void ktrace_csv_row(FILE *f, const job_record *job) {
    const job_kernels *k = &job->kernels;
    fputc(',', f);
    results_csv_field(f, k->reported ? k->file : "");
    fputc(',', f);
    results_csv_field(f, k->reported ? k->error : "");
    const double v[] = {k->kernels, k->dropped, k->steps, k->step_ms, k->t0, k->t1};
    const int decimals[] = {0, 0, 0, 3, 6, 6};
    for (int n = 0; n < 6; n++) {
        fputc(',', f);
        results_csv_number(f, k->reported ? v[n] : NAN, decimals[n]);
    }
}

cJSON *ktrace_event_json(const job_record *job) {
    const job_kernels *k = &job->kernels;
    if (!k->reported) return NULL;
    cJSON *o = cJSON_CreateObject();
    if (k->error[0]) {
        cJSON_AddStringToObject(o, "error", k->error);
        return o;
    }
    cJSON_AddStringToObject(o, "file", k->file);
    cJSON_AddStringToObject(o, "intervals", k->intervals);
    results_json_number(o, "kernels", k->kernels);
    results_json_number(o, "dropped", k->dropped);
    results_json_number(o, "steps", k->steps);
    results_json_number(o, "step_ms", k->step_ms);
    results_json_number(o, "t0", k->t0);
    results_json_number(o, "t1", k->t1);
    return o;
}
