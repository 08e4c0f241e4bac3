/* The attribution of a traced window (see kernel_attribution.h). */
#define _GNU_SOURCE
#include "results/kernel_attribution.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "results/fields.h"
#include "results/results.h"

const char *kattr_part_name(int part) {
    if (part == KATTR_WAITING_OTHERS) return "waiting_others";
    if (part == KATTR_WAITING_IDLE) return "waiting_idle";
    return kernel_class_name(part);
}

/* --- the keys: layer, pass, class ----------------------------------------------------------- */

static int key_order(const char *layer, const char *pass, int cls, const kattr_key *k) {
    int c = strcmp(layer, k->layer);
    if (!c) c = strcmp(pass, k->pass);
    return c ? c : (cls > k->cls) - (cls < k->cls);
}

static int key_compare(const void *a, const void *b) {
    const kattr_key *x = a;
    return key_order(x->layer, x->pass, x->cls, b);
}

static int key_find(const kattr_key *keys, int count, const char *layer, const char *pass, int cls) {
    int lo = 0, hi = count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2, c = key_order(layer, pass, cls, &keys[mid]);
        if (!c) return mid;
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return -1;
}

/* The keys of a window: every row's, and every (scope, class) its intervals name, sorted and unique,
 * with the rows' kernel time, FLOPs and bytes summed in (a scope's figure is per launch, on its first
 * row: times that row's launches). NULL when out of memory (*count 0). */
static kattr_key *window_keys(const ktrace *t, int *count) {
    int cap = t->row_count + 64, n = 0;
    kattr_key *keys = malloc((size_t)cap * sizeof *keys);
    unsigned char *seen = calloc((size_t)(t->scope_max + 1) * KCLASS_COUNT + 1, 1);
    if (!keys || !seen) goto fail;
    for (int r = 0; r < t->row_count; r++) seen[(size_t)t->rows[r].scope * KCLASS_COUNT + t->rows[r].cls] = 1;
    for (int r = 0; r < t->row_count; r++) {
        const ktrace_row *row = &t->rows[r];
        kattr_key k = {.cls = row->cls, .kernel_ns = row->total_ns, .launches = row->count,
                       .flops = row->flops * row->count, .bytes = row->bytes * row->count};
        snprintf(k.layer, sizeof k.layer, "%s", row->layer);
        snprintf(k.pass, sizeof k.pass, "%s", row->pass);
        keys[n++] = k;
    }
    for (long i = 0; i < t->interval_count; i++) {
        const ktrace_interval *v = &t->intervals[i];
        unsigned char *mark = &seen[(size_t)v->scope * KCLASS_COUNT + v->cls];
        if (*mark) continue;
        *mark = 1;
        if (n == cap) {
            kattr_key *grown = realloc(keys, (size_t)(cap *= 2) * sizeof *grown);
            if (!grown) goto fail;
            keys = grown;
        }
        const ktrace_row *row = ktrace_scope_row(t, v->scope);
        kattr_key k = {.cls = v->cls};
        snprintf(k.layer, sizeof k.layer, "%s", row->layer);
        snprintf(k.pass, sizeof k.pass, "%s", row->pass);
        keys[n++] = k;
    }
    qsort(keys, (size_t)n, sizeof *keys, key_compare);
    int unique = 0;
    for (int k = 0; k < n; k++) {
        if (unique && !key_compare(&keys[k], &keys[unique - 1])) {
            keys[unique - 1].kernel_ns += keys[k].kernel_ns;
            keys[unique - 1].launches += keys[k].launches;
            keys[unique - 1].flops += keys[k].flops;
            keys[unique - 1].bytes += keys[k].bytes;
        } else {
            keys[unique++] = keys[k];
        }
    }
    free(seen);
    *count = unique;
    return keys;
fail:
    free(keys);
    free(seen);
    *count = 0;
    return NULL;
}

/* --- the sweep over a window ---------------------------------------------------------------- */

/* A kernel's start or end on self's time line: owner >= 0 one of self's intervals, -1 another job's
 * kernel of class cls. */
typedef struct edge {
    int64_t t;
    int delta;                   /* +1 start, -1 end */
    int cls;
    long owner;
} edge;

static int edge_order(const void *a, const void *b) {
    const edge *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return (x->delta > y->delta) - (x->delta < y->delta); /* ends first: an instant's kernels are its own */
}

/* Every kernel's edges on self's time line [0, W], others' shifted by their t0, clipped to it. NULL
 * when out of memory. */
static edge *window_edges(const ktrace *self, const ktrace *const *others, int other_count, long *count) {
    long n = self->interval_count;
    for (int o = 0; o < other_count; o++) n += others[o]->interval_count;
    edge *e = malloc((size_t)(2 * n + 1) * sizeof *e);
    if (!e) return NULL;
    int64_t window = self->t1_ns - self->t0_ns;
    long k = 0;
    for (int o = -1; o < other_count; o++) {
        const ktrace *t = o < 0 ? self : others[o];
        int64_t shift = t->t0_ns - self->t0_ns;
        for (long i = 0; i < t->interval_count; i++) {
            int64_t a = t->intervals[i].start + shift, b = t->intervals[i].end + shift;
            a = a < 0 ? 0 : a;
            b = b > window ? window : b;
            if (b <= a) continue;
            e[k++] = (edge){a, +1, t->intervals[i].cls, o < 0 ? i : -1};
            e[k++] = (edge){b, -1, t->intervals[i].cls, o < 0 ? i : -1};
        }
    }
    qsort(e, (size_t)k, sizeof *e, edge_order);
    *count = k;
    return e;
}

int kattr_split_job(const ktrace *self, const ktrace *const *others, int other_count, kattr_split *out) {
    memset(out, 0, sizeof *out);
    out->window_ns = (double)(self->t1_ns - self->t0_ns);
    out->steps = self->steps;
    out->peak_flops = self->peak_flops;
    out->peak_bytes_s = self->peak_bytes_s;
    long count = 0;
    edge *e = window_edges(self, others, other_count, &count);
    double *since = malloc((size_t)(self->interval_count + 1) * sizeof *since); /* F at each interval's start */
    out->keys = window_keys(self, &out->key_count);
    int *key_of = malloc(((size_t)(self->scope_max + 1) * KCLASS_COUNT + 1) * sizeof *key_of);
    if (!e || !since || !out->keys || !key_of) {
        free(e), free(since), free(key_of);
        kattr_split_free(out);
        return -1;
    }
    for (size_t s = 0; s < (size_t)(self->scope_max + 1) * KCLASS_COUNT; s++) key_of[s] = -1;
    /* F(t): the integral of 1/n over the instants where n > 0 of self's kernels run; a kernel's share
     * of the window is F(end) - F(start). */
    double share = 0;
    int64_t prev = 0;
    long mine = 0, theirs = 0;
    for (long k = 0; k <= count; k++) {
        int64_t t = k < count ? e[k].t : self->t1_ns - self->t0_ns;
        double dt = (double)(t - prev);
        if (dt > 0 && mine > 0) share += dt / (double)mine;
        else if (dt > 0) out->part_ns[theirs > 0 ? KATTR_WAITING_OTHERS : KATTR_WAITING_IDLE] += dt;
        prev = t;
        if (k == count) break;
        if (e[k].owner < 0) {
            theirs += e[k].delta;
            continue;
        }
        mine += e[k].delta;
        if (e[k].delta > 0) {
            since[e[k].owner] = share;
            continue;
        }
        const ktrace_interval *v = &self->intervals[e[k].owner];
        double ns = share - since[e[k].owner];
        out->part_ns[v->cls] += ns;
        int *key = &key_of[(size_t)v->scope * KCLASS_COUNT + v->cls];
        if (*key < 0) {
            const ktrace_row *row = ktrace_scope_row(self, v->scope);
            *key = key_find(out->keys, out->key_count, row->layer, row->pass, v->cls);
        }
        if (*key >= 0) out->keys[*key].ns += ns;
    }
    for (int k = 0; k < out->key_count; k++) {
        const kattr_key *key = &out->keys[k];
        out->kernel_ns[key->cls] += key->kernel_ns;
        out->flops[key->cls] += key->flops;
        out->bytes[key->cls] += key->bytes;
    }
    free(e), free(since), free(key_of);
    return 0;
}

void kattr_split_free(kattr_split *s) {
    free(s->keys);
    s->keys = NULL;
    s->key_count = 0;
}

int kattr_matrix_add(const ktrace *self, const ktrace *const *others, int other_count, const ktrace *alone,
                     kattr_matrix *m) {
    int alone_count = 0;
    kattr_key *alone_keys = window_keys(alone, &alone_count);
    long count = 0;
    edge *e = window_edges(self, others, other_count, &count);
    double *speed = malloc((size_t)(self->interval_count + 1) * sizeof *speed); /* 1 / its slowdown; NaN unmatched */
    size_t cells = (size_t)(self->scope_max + 1) * KCLASS_COUNT;
    double *mean_of = malloc((cells + 1) * sizeof *mean_of); /* mean duration alone by scope and class; -1 unknown */
    if (!alone_keys || !e || !speed || !mean_of) {
        free(alone_keys), free(e), free(speed), free(mean_of);
        return -1;
    }
    for (size_t c = 0; c < cells; c++) mean_of[c] = -1;
    for (long i = 0; i < self->interval_count; i++) {
        const ktrace_interval *v = &self->intervals[i];
        double *mean = &mean_of[(size_t)v->scope * KCLASS_COUNT + v->cls];
        if (*mean < 0) {
            const ktrace_row *row = ktrace_scope_row(self, v->scope);
            int k = key_find(alone_keys, alone_count, row->layer, row->pass, v->cls);
            *mean = k >= 0 && alone_keys[k].launches > 0 ? alone_keys[k].kernel_ns / alone_keys[k].launches : 0;
        }
        double duration = (double)(v->end - v->start);
        speed[i] = *mean > 0 && duration > 0 ? *mean / duration : NAN;
    }
    int running[KCLASS_COUNT] = {0}, beside[KCLASS_COUNT] = {0}, besides = 0;
    double speed_sum[KCLASS_COUNT] = {0};
    int64_t prev = 0;
    for (long k = 0; k < count; k++) {
        double dt = (double)(e[k].t - prev);
        prev = e[k].t;
        for (int a = 0; dt > 0 && a < KCLASS_COUNT; a++) {
            if (!running[a]) continue;
            for (int b = 0; b <= KCLASS_COUNT; b++) {
                if (b < KCLASS_COUNT ? !beside[b] : besides > 0) continue;
                m->shared_ns[a][b] += dt * running[a];
                m->alone_ns[a][b] += dt * speed_sum[a];
            }
        }
        const edge *x = &e[k];
        if (x->owner < 0) {
            beside[x->cls] += x->delta;
            besides += x->delta;
        } else if (isnan(speed[x->owner])) {
            if (x->delta < 0) m->unmatched_ns += (double)(self->intervals[x->owner].end - self->intervals[x->owner].start);
        } else {
            running[x->cls] += x->delta;
            speed_sum[x->cls] += x->delta * speed[x->owner];
            if (!running[x->cls]) speed_sum[x->cls] = 0; /* no drift left over from the sums */
        }
    }
    free(alone_keys), free(e), free(speed), free(mean_of);
    return 0;
}

/* --- the files ------------------------------------------------------------------------------ */

#define KERNELS_HEADER                                                                                      \
    "mode,job,label,level,class,layer,pass,alone_ms,shared_ms,delta_ms,share_of_slowdown,alone_gflop,"   \
    "alone_mbytes,intensity,ridge,bound,alone_dram_fraction,alone_flop_fraction,alone_source,measurement\n"
#define INTERFERENCE_HEADER "mode,job,label,class,beside,slowdown,overlap_ms,measurement\n"

/* What a class's (or a layer's) kernels did alone: per step, and against the job's peaks. Its side of
 * the roofline is where its intensity (the shapes' FLOPs over the bytes they must move) falls against
 * the ridge; it is bound there only when it reaches half of that roof, else "neither": kernels far
 * below both roofs wait on something else (latency, occupancy, launches), and calling them
 * memory-bound would send a reader to the wrong resource. */
#define KATTR_ROOF_SHARE 0.5
typedef struct alone_work {
    double gflop, mbytes, intensity, ridge, dram_fraction, flop_fraction;
    const char *bound;
} alone_work;

static alone_work work_of(double flops, double bytes, double kernel_ns, double steps, double peak_flops,
                          double peak_bytes_s) {
    alone_work w = {NAN, NAN, NAN, NAN, NAN, NAN, ""};
    if (!(steps > 0)) return w;
    w.gflop = flops / steps / 1e9;
    w.mbytes = bytes / steps / 1e6;
    if (!(flops > 0 || bytes > 0)) return w; /* the shapes say nothing of it */
    if (bytes > 0) w.intensity = flops / bytes;
    if (peak_flops > 0 && peak_bytes_s > 0) w.ridge = peak_flops / peak_bytes_s;
    double seconds = kernel_ns * 1e-9;
    if (seconds > 0 && peak_bytes_s > 0) w.dram_fraction = bytes / seconds / peak_bytes_s;
    if (seconds > 0 && peak_flops > 0) w.flop_fraction = flops / seconds / peak_flops;
    int compute = !isnan(w.intensity) && !isnan(w.ridge) ? w.intensity >= w.ridge : bytes == 0 && flops > 0 ? 1 : -1;
    if (compute >= 0) {
        double roof = compute ? w.flop_fraction : w.dram_fraction;
        w.bound = isnan(roof) ? (compute ? "compute" : "memory") : roof >= KATTR_ROOF_SHARE ? (compute ? "compute" : "memory")
                                                                                            : "neither";
    }
    return w;
}

typedef struct job_rows {
    FILE *f;
    const char *mode, *label, *source;
    int job;
    double step_delta;           /* the step's shared minus alone, ms */
} job_rows;

static void kernels_row(const job_rows *r, const char *level, const char *cls, const char *layer, const char *pass,
                        double alone_ms, double shared_ms, const alone_work *w) {
    FILE *f = r->f;
    fprintf(f, "%s,%d,", r->mode, r->job);
    results_csv_field(f, r->label);
    fprintf(f, ",%s,%s,", level, cls);
    results_csv_field(f, layer);
    fprintf(f, ",%s", pass);
    double delta = shared_ms - alone_ms;
    double share = !strcmp(level, "step") ? (isnan(delta) ? NAN : 1.0)
                   : r->step_delta != 0 && !isnan(r->step_delta) ? delta / r->step_delta : NAN;
    const double v[] = {alone_ms, shared_ms, delta, share, w->gflop, w->mbytes, w->intensity, w->ridge};
    const int decimals[] = {4, 4, 4, 4, 4, 3, 3, 3};
    for (int k = 0; k < 8; k++) {
        fputc(',', f);
        results_csv_number(f, v[k], decimals[k]);
    }
    fprintf(f, ",%s,", w->bound);
    results_csv_number(f, w->dram_fraction, 4);
    fputc(',', f);
    results_csv_number(f, w->flop_fraction, 4);
    fprintf(f, ",%s,traced\n", r->source);
}

static double per_step_ms(double ns, const kattr_split *s) { return s && s->steps > 0 ? ns / s->steps / 1e6 : NAN; }

/* One job's rows of kernels.csv: its step, each part, each layer (alone: NULL when none). */
static void job_kernels_rows(job_rows *r, const kattr_split *sh, const kattr_split *al) {
    static const alone_work none = {NAN, NAN, NAN, NAN, NAN, NAN, ""};
    double alone_step = per_step_ms(al ? al->window_ns : NAN, al), shared_step = per_step_ms(sh->window_ns, sh);
    r->step_delta = shared_step - alone_step;
    kernels_row(r, "step", "step", "", "", alone_step, shared_step, &none);
    for (int p = 0; p < KATTR_PARTS; p++) {
        if (sh->part_ns[p] <= 0 && (!al || al->part_ns[p] <= 0)) continue;
        alone_work w = al && p < KCLASS_COUNT ? work_of(al->flops[p], al->bytes[p], al->kernel_ns[p], al->steps,
                                                          al->peak_flops, al->peak_bytes_s) : none;
        kernels_row(r, "class", kattr_part_name(p), "", "", al ? per_step_ms(al->part_ns[p], al) : NAN,
                    per_step_ms(sh->part_ns[p], sh), &w);
    }
    int i = 0, k = 0, alone_count = al ? al->key_count : 0;
    while (i < sh->key_count || k < alone_count) { /* both sorted: their union in order */
        const kattr_key *a = k < alone_count ? &al->keys[k] : NULL, *s = i < sh->key_count ? &sh->keys[i] : NULL;
        int c = !a ? -1 : !s ? 1 : key_compare(s, a);
        const kattr_key *key = c <= 0 ? s : a;
        alone_work w = c >= 0 ? work_of(a->flops, a->bytes, a->kernel_ns, al->steps, al->peak_flops, al->peak_bytes_s)
                              : none;
        kernels_row(r, "layer", kernel_class_name(key->cls), key->layer, key->pass,
                    c >= 0 ? per_step_ms(a->ns, al) : al ? 0 : NAN, c <= 0 ? per_step_ms(s->ns, sh) : 0, &w);
        i += c <= 0;
        k += c >= 0;
    }
}

static void matrix_rows(FILE *f, const char *mode, const char *job, const char *label, const kattr_matrix *m) {
    for (int a = 0; a < KCLASS_COUNT; a++)
        for (int b = 0; b <= KCLASS_COUNT; b++) {
            if (!(m->shared_ns[a][b] > 0) || !(m->alone_ns[a][b] > 0)) continue;
            fprintf(f, "%s,%s,", mode, job);
            results_csv_field(f, label);
            fprintf(f, ",%s,%s,", kernel_class_name(a), b == KATTR_BESIDE_NONE ? "none" : kernel_class_name(b));
            results_csv_number(f, m->shared_ns[a][b] / m->alone_ns[a][b], 4);
            fputc(',', f);
            results_csv_number(f, m->shared_ns[a][b] / 1e6, 4);
            fprintf(f, ",traced\n");
        }
}

int kattr_file_of_run(const char *run_dir, int index, char *out, size_t size) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/summary.json", run_dir);
    cJSON *root = results_read_json(path);
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jobs, index), "kernels");
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(k, "file");
    int rc = -1;
    struct stat st;
    if (cJSON_IsString(file) && file->valuestring[0]) {
        if (stat(file->valuestring, &st) == 0) {
            snprintf(out, size, "%s", file->valuestring);
            rc = 0;
        } else { /* the run folder moved: the same name in its kernels folder */
            const char *base = strrchr(file->valuestring, '/');
            snprintf(out, size, "%s/kernels/%s", run_dir, base ? base + 1 : file->valuestring);
            rc = stat(out, &st) == 0 ? 0 : -1;
        }
    }
    cJSON_Delete(root);
    return rc;
}

static int has(const char *path) { return path && *path; }

/* The other jobs' windows beside job j: each traced file once, never j's own (a job measured once
 * for several of the same spec stands for them all, at one time). */
static int others_of(const kattr_job *jobs, const ktrace *traces, const int *ok, int count, int j,
                     const ktrace **out) {
    int n = 0;
    for (int k = 0; k < count; k++) {
        int dup = !ok[k] || !strcmp(jobs[k].shared, jobs[j].shared);
        for (int e = 0; e < k && !dup; e++) dup = ok[e] && !strcmp(jobs[e].shared, jobs[k].shared);
        if (!dup) out[n++] = &traces[k];
    }
    return n;
}

int kattr_write(const char *dir, const char *mode, const kattr_job *jobs, int count, int concurrent, FILE *warn, char *err,
                size_t err_size) {
    ktrace *shared = calloc((size_t)count + 1, sizeof *shared), *alone = calloc((size_t)count + 1, sizeof *alone);
    int *ok = calloc((size_t)count + 1, sizeof *ok), *alone_ok = calloc((size_t)count + 1, sizeof *alone_ok);
    const ktrace **others = calloc((size_t)count + 1, sizeof *others);
    results_text kt = {0}, it = {0};
    int rc = -1, any = 0, open_texts = 0;
    if (!shared || !alone || !ok || !alone_ok || !others) {
        snprintf(err, err_size, "out of memory reading the traced files");
        goto done;
    }
    char why[1024];
    for (int j = 0; j < count; j++) {
        if (has(jobs[j].shared) && !(ok[j] = ktrace_read(&shared[j], jobs[j].shared, why, sizeof why) == 0))
            fprintf(warn, "[%s] warning: job %d (%s) left out of kernels.csv: %s\n", mode, jobs[j].index, jobs[j].label, why);
        int same = has(jobs[j].alone) && has(jobs[j].shared) && !strcmp(jobs[j].alone, jobs[j].shared);
        if (ok[j] && has(jobs[j].alone) && !same &&
            !(alone_ok[j] = ktrace_read(&alone[j], jobs[j].alone, why, sizeof why) == 0))
            fprintf(warn, "[%s] warning: job %d (%s): nothing alone to compare with: %s\n", mode, jobs[j].index,
                    jobs[j].label, why);
        any |= ok[j];
    }
    if (!any) {
        rc = 0;
        goto done;
    }
    FILE *kf = results_text_open(&kt), *mf = results_text_open(&it);
    open_texts = 1;
    if (!kf || !mf) {
        snprintf(err, err_size, "out of memory writing kernels.csv");
        goto done;
    }
    fputs(KERNELS_HEADER, kf);
    fputs(INTERFERENCE_HEADER, mf);
    kattr_matrix all;
    memset(&all, 0, sizeof all);
    int matrices = 0;
    for (int j = 0; j < count; j++) {
        if (!ok[j]) continue;
        int same = has(jobs[j].alone) && !strcmp(jobs[j].alone, jobs[j].shared);
        const ktrace *by_itself = same ? &shared[j] : alone_ok[j] ? &alone[j] : NULL;
        int n = others_of(jobs, shared, ok, count, j, others);
        kattr_split sh, al;
        if (kattr_split_job(&shared[j], others, n, &sh) != 0 ||
            (by_itself && kattr_split_job(by_itself, NULL, 0, &al) != 0)) {
            snprintf(err, err_size, "out of memory attributing job %d", jobs[j].index);
            kattr_split_free(&sh);
            goto done;
        }
        job_rows r = {kf, mode, jobs[j].label, by_itself ? jobs[j].alone_source : "", jobs[j].index, NAN};
        job_kernels_rows(&r, &sh, by_itself ? &al : NULL);
        kattr_split_free(&sh);
        if (by_itself) kattr_split_free(&al);
        if (!by_itself || !concurrent) continue;
        kattr_matrix m;
        memset(&m, 0, sizeof m);
        if (kattr_matrix_add(&shared[j], others, n, by_itself, &m) != 0) {
            snprintf(err, err_size, "out of memory attributing job %d", jobs[j].index);
            goto done;
        }
        char index[16];
        snprintf(index, sizeof index, "%d", jobs[j].index);
        matrix_rows(mf, mode, index, jobs[j].label, &m);
        for (int a = 0; a < KCLASS_COUNT; a++)
            for (int b = 0; b <= KCLASS_COUNT; b++)
                all.shared_ns[a][b] += m.shared_ns[a][b], all.alone_ns[a][b] += m.alone_ns[a][b];
        matrices++;
    }
    if (matrices > 1) matrix_rows(mf, mode, "all", "", &all);
    open_texts = 0;
    rc = results_text_commit(&kt, dir, "kernels.csv", err, err_size);
    int rc2 = results_text_commit(&it, dir, "interference.csv", rc ? why : err, rc ? sizeof why : err_size);
    rc = rc ? rc : rc2;
done:
    for (results_text *t = &kt; open_texts && t; t = t == &kt ? &it : NULL)
        if (t->f) fclose(t->f), free(t->data);
    for (int j = 0; shared && j < count; j++) ktrace_free(&shared[j]);
    for (int j = 0; alone && j < count; j++) ktrace_free(&alone[j]);
    free(shared), free(alone), free(ok), free(alone_ok), free(others);
    return rc;
}

/* dir/name, every mode's rows under one header; nothing when no mode has the file. */
static int join_one(const char *dir, const char *name, const char *const *mode_dirs, int count, char *err,
                    size_t err_size) {
    results_text t = {0};
    FILE *out = NULL;
    for (int k = 0; k < count; k++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s/%s", mode_dirs[k], name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        if (!out && !(out = results_text_open(&t))) {
            fclose(f);
            snprintf(err, err_size, "out of memory writing %s", name);
            return -1;
        }
        char *line = NULL;
        size_t cap = 0;
        for (long n = 0; getline(&line, &cap, f) > 0; n++)
            if (n > 0 || ftell(out) == 0) fputs(line, out);
        free(line);
        fclose(f);
    }
    return out ? results_text_commit(&t, dir, name, err, err_size) : 0;
}

int kattr_join(const char *dir, const char *const *mode_dirs, int count, char *err, size_t err_size) {
    if (join_one(dir, "kernels.csv", mode_dirs, count, err, err_size) != 0) return -1;
    return join_one(dir, "interference.csv", mode_dirs, count, err, err_size);
}
