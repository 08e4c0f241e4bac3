#include "runner/train/kernel_files.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/demangle.h"

void kernel_files_paths(const char *prefix, char *kernels, char *intervals, size_t size) {
    snprintf(kernels, size, "%s.kernels.csv", prefix);
    snprintf(intervals, size, "%s.intervals.csv", prefix);
}

/* The end of a demangled name's scope part: the '(' of its argument list at template depth 0. */
static size_t name_end(const char *name) {
    int depth = 0;
    for (size_t i = 0; name[i]; i++) {
        if (name[i] == '<') depth++;
        else if (name[i] == '>' && depth > 0) depth--;
        else if (name[i] == '(' && depth == 0 && i > 0) return i;
    }
    return strlen(name);
}

void kernel_name_short(const char *symbol, char *out, size_t size) {
    char plain[4096];
    kernel_name_demangle(symbol, plain, sizeof plain);
    const char *from = strncmp(plain, "void ", 5) == 0 ? plain + 5 : plain;
    size_t n = plain[0] == '[' ? strlen(from) : name_end(from); /* "[memcpy HtoD]" stays whole */
    if (n > KERNEL_NAME_MAX) snprintf(out, size, "%.*s...", KERNEL_NAME_MAX - 3, from);
    else snprintf(out, size, "%.*s", (int)n, from);
}

void kernel_csv_field(const char *text, char *out, size_t size) {
    if (!size) return;
    if (!strpbrk(text, ",\"\r\n")) {
        snprintf(out, size, "%s", text);
        return;
    }
    size_t o = 0;
    if (o + 1 < size) out[o++] = '"';
    for (const char *p = text; *p && o + 2 < size; p++) {
        if (*p == '"') out[o++] = '"';
        out[o++] = *p;
    }
    if (o + 1 < size) out[o++] = '"';
    out[o] = 0;
}

/* dense tensor FLOP per clock per SM: bf16, tf32; strict fp32 on the CUDA cores */
typedef struct arch_rate {
    int major, minor;
    double bf16, tf32, fp32;
} arch_rate;

static const arch_rate ARCH_RATES[] = {
    {8, 0, 2048, 1024, 128},   /* A100 */
    {9, 0, 4096, 2048, 256},   /* H100, H200 */
    {10, 0, 8192, 4096, 256},  /* B200 */
};

double kernel_peak_flops(int major, int minor, precision_kind precision, int sms, double clock_khz) {
    for (size_t i = 0; i < sizeof ARCH_RATES / sizeof ARCH_RATES[0]; i++) {
        const arch_rate *a = &ARCH_RATES[i];
        if (a->major != major || a->minor != minor) continue;
        double per_clock = precision == PRECISION_BF16 ? a->bf16 : precision == PRECISION_FP32 ? a->fp32 : a->tf32;
        return per_clock * sms * clock_khz * 1e3;
    }
    return 0;
}

double kernel_peak_bytes(double memory_clock_khz, int bus_bits) {
    return memory_clock_khz > 0 && bus_bits > 0 ? 2.0 * memory_clock_khz * 1e3 * bus_bits / 8.0 : 0;
}

/* A file written whole: to path.tmp.<pid>, flushed and synced, renamed. */
typedef struct file_out {
    char path[1100], partial[1200];
    FILE *f;
} file_out;

static int out_open(file_out *o, const char *path, char *err, size_t err_size) {
    snprintf(o->path, sizeof o->path, "%s", path);
    snprintf(o->partial, sizeof o->partial, "%s.tmp.%ld", path, (long)getpid());
    o->f = fopen(o->partial, "w");
    if (!o->f) snprintf(err, err_size, "%s: %s", o->partial, strerror(errno));
    return o->f ? 0 : -1;
}

static int out_commit(file_out *o, char *err, size_t err_size) {
    int failed = ferror(o->f) || fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
    int saved = errno;
    if (fclose(o->f) != 0 && !failed) failed = 1, saved = errno;
    o->f = NULL;
    if (!failed && rename(o->partial, o->path) == 0) return 0;
    if (!failed) saved = errno;
    snprintf(err, err_size, "%s: %s", o->path, saved ? strerror(saved) : "a write failed");
    unlink(o->partial);
    return -1;
}

static void write_header(FILE *f, const kernel_file_header *h, const kernel_tally *t) {
    fprintf(f, "# job=%s\n# model=%s\n# precision=%s\n# batch=%d\n", h->job, h->model, precision_name(h->precision),
            h->batch);
    fprintf(f, "# device_name=%s\n# device_sms=%d\n# sm_count=%d\n# clock=realtime\n", h->device_name, h->device_sms,
            h->sm_count);
    fprintf(f, "# t0=%.9f\n# t1=%.9f\n# steps=%ld\n# step_ms=%.6f\n", kernel_tally_t0(t), kernel_tally_t1(t), h->steps,
            h->step_ms);
    fprintf(f, "# kernels=%" PRIu64 "\n# dropped=%" PRIu64 "\n# peak_flops=%.6g\n# peak_bytes_s=%.6g\n",
            kernel_tally_kernels(t), kernel_tally_dropped(t), h->peak_flops, h->peak_bytes_s);
}

static void write_rows(FILE *f, kernel_tally *t, const kernel_scopes *s) {
    fprintf(f, "scope,layer,pass,class,kernel,count,total_ns,min_ns,max_ns,flops,bytes\n");
    const kernel_tally_row *rows;
    size_t n = kernel_tally_rows(t, &rows);
    int last_scope = -1;
    for (size_t i = 0; i < n; i++) {
        const kernel_tally_row *r = &rows[i];
        kernel_scope_info info = kernel_scopes_info(s, r->scope);
        char name[KERNEL_NAME_MAX + 8], kernel[2 * KERNEL_NAME_MAX + 8], layer[2 * KERNEL_LAYER_MAX + 8];
        kernel_name_short(kernel_tally_name(t, r->name), name, sizeof name);
        kernel_csv_field(name, kernel, sizeof kernel);
        kernel_csv_field(info.layer, layer, sizeof layer);
        /* a scope's FLOPs and bytes per launch on its first row only: summed per scope, they count once */
        int first = r->scope != last_scope;
        last_scope = r->scope;
        fprintf(f, "%d,%s,%s,%s,%s,%" PRIu64 ",%" PRId64 ",%" PRId64 ",%" PRId64 ",%.6g,%.6g\n", r->scope, layer,
                kernel_pass_name(info.pass), kernel_class_name(r->cls), kernel, r->count, r->total_ns, r->min_ns,
                r->max_ns, first ? info.flops : 0, first ? info.bytes : 0);
    }
}

static void write_intervals(FILE *f, kernel_tally *t) {
    fprintf(f, "start_ns,end_ns,scope,class,stream\n");
    const kernel_interval *iv;
    size_t n = kernel_tally_intervals(t, &iv);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%" PRId64 ",%" PRId64 ",%d,%s,%u\n", iv[i].start_ns, iv[i].end_ns, (int)iv[i].scope,
                kernel_class_name((kernel_class)iv[i].cls), (unsigned)iv[i].stream);
}

int kernel_files_write(const char *prefix, const kernel_file_header *h, kernel_tally *tally, const kernel_scopes *s,
                       char *err, size_t err_size) {
    char kernels[1100], intervals[1100];
    kernel_files_paths(prefix, kernels, intervals, sizeof kernels);
    file_out o;
    if (out_open(&o, intervals, err, err_size) != 0) return -1;
    write_intervals(o.f, tally);
    if (out_commit(&o, err, err_size) != 0) return -1;
    if (out_open(&o, kernels, err, err_size) != 0) return -1;
    write_header(o.f, h, tally);
    write_rows(o.f, tally, s);
    return out_commit(&o, err, err_size);
}
