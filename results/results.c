/* Results files and tables of a run (see results.h). */
#define _GNU_SOURCE
#include "results/results.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *status_names[] = {"ok", "failed", "diverged"};

/* --- folders and atomic files -------------------------------------------------------------- */

int results_make_dirs(const char *path, char *err, size_t err_size) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        snprintf(err, err_size, "path too long: %s", path);
        return -1;
    }
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p) continue;
        char saved = *p;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
            snprintf(err, err_size, "cannot create %s: %s", buf, strerror(errno));
            return -1;
        }
        *p = saved;
        if (!saved) break;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "%s is not a folder", path);
        return -1;
    }
    return 0;
}

int results_make_run_dir(const char *base, const char *mode, const char *mix_text, char *dir,
                         size_t dir_size, char *run_id, size_t run_id_size, char *err,
                         size_t err_size) {
    if (results_make_dirs(base, err, err_size) != 0) return -1;
    char stamp[32], mix_safe[64], id[160];
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
    char compact[256];
    size_t n = 0;
    for (const char *p = mix_text; *p && n + 1 < sizeof compact; p++)
        if (*p != ' ' && *p != '\t') compact[n++] = *p == '*' ? 'x' : *p;
    compact[n] = 0;
    job_safe_name(mix_safe, sizeof mix_safe, compact);
    for (int attempt = 1; attempt < 1000; attempt++) {
        if (attempt == 1) snprintf(id, sizeof id, "%s-%s-%s", stamp, mode, mix_safe);
        else snprintf(id, sizeof id, "%s-%s-%s-%d", stamp, mode, mix_safe, attempt);
        if (snprintf(dir, dir_size, "%s/%s", base, id) >= (int)dir_size) {
            snprintf(err, err_size, "results path too long under %s", base);
            return -1;
        }
        if (mkdir(dir, 0755) == 0) {
            snprintf(run_id, run_id_size, "%s", id);
            return 0;
        }
        if (errno != EEXIST) {
            snprintf(err, err_size, "cannot create %s: %s", dir, strerror(errno));
            return -1;
        }
    }
    snprintf(err, err_size, "cannot find a free run folder name under %s", base);
    return -1;
}

int results_write_atomic(const char *path, const char *data, size_t size, char *err, size_t err_size) {
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, err_size, "cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    int ok = done == size && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0) ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, err_size, "cannot write %s: %s", path, strerror(ok ? errno : saved));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int results_write_json(const char *dir, const char *name, const cJSON *json, char *err, size_t err_size) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = cJSON_Print(json);
    if (!text) {
        snprintf(err, err_size, "out of memory printing %s", name);
        return -1;
    }
    size_t len = strlen(text);
    char *with_newline = realloc(text, len + 2);
    if (with_newline) {
        text = with_newline;
        text[len++] = '\n';
        text[len] = 0;
    }
    int rc = results_write_atomic(path, text, len, err, err_size);
    free(text);
    return rc;
}

/* In-memory text for the files written whole (CSV). */
typedef struct text_buffer { char *data; size_t size; FILE *f; } text_buffer;

static FILE *text_open(text_buffer *t) {
    memset(t, 0, sizeof *t);
    t->f = open_memstream(&t->data, &t->size);
    return t->f;
}

static int text_commit(text_buffer *t, const char *dir, const char *name, char *err, size_t err_size) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = -1;
    if (fclose(t->f) == 0) rc = results_write_atomic(path, t->data, t->size, err, err_size);
    else snprintf(err, err_size, "out of memory writing %s", name);
    free(t->data);
    return rc;
}

/* --- summary ------------------------------------------------------------------------------- */

int results_timed_epoch(const job_run *job) {
    for (int i = 0; i < job->epoch_count; i++)
        if (job->epochs[i].epoch == 2) return i;
    /* Only a one-epoch job is timed on its only epoch; a job that stopped after its warm-up
     * epoch has no timed epoch (warm-up time is not comparable). */
    return job->epoch_count > 0 && job->epochs_planned <= 1 ? job->epoch_count - 1 : -1;
}

double results_job_end(const job_run *job) {
    if (!isnan(job->t_done)) return job->t_done;
    if (job->epoch_count > 0 && !isnan(job->epochs[job->epoch_count - 1].t_end))
        return job->epochs[job->epoch_count - 1].t_end;
    return job->t_exit;
}

void results_compare(run_summary *s, const serial_baseline *b) {
    s->speedup = s->energy_vs_serial = NAN;
    for (int i = 0; i < s->job_count; i++) s->solo_s[i] = s->slowdown[i] = NAN;
    if (!b || !b->known) return;
    if (!isnan(b->makespan_s) && s->makespan_s > 0) s->speedup = b->makespan_s / s->makespan_s;
    if (!isnan(b->energy_j) && !isnan(s->energy_j) && b->energy_j > 0)
        s->energy_vs_serial = s->energy_j / b->energy_j;
    for (int i = 0; i < s->job_count && i < b->job_count; i++) {
        s->solo_s[i] = b->solo_timed_s[i];
        if (s->solo_s[i] > 0 && !isnan(s->timed_s[i])) s->slowdown[i] = s->timed_s[i] / s->solo_s[i];
    }
}

void results_summarize(const job_run *jobs, int count, const char *mode, int serial, int stopped,
                       const serial_baseline *baseline, run_summary *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->mode, sizeof s->mode, "%s", mode);
    s->job_count = count;
    s->first_go = s->last_end = NAN;
    s->energy_j = s->peak_gpu_memory = NAN;
    s->monitor_mean_ms = s->monitor_busy_fraction = NAN;
    double serial_sum = 0;
    for (int i = 0; i < count; i++) {
        const job_run *j = &jobs[i];
        s->ok += j->status == JOB_OK;
        s->failed += j->status == JOB_FAILED;
        s->diverged += j->status == JOB_DIVERGED;
        int k = results_timed_epoch(j);
        s->timed_epoch[i] = k >= 0 ? j->epochs[k].epoch : 0;
        s->timed_s[i] = k >= 0 ? j->epochs[k].seconds : NAN;
        s->timed_rate[i] = k >= 0 ? j->epochs[k].samples_per_s : NAN;
        if (!isnan(s->timed_rate[i])) s->timed_samples_per_s_sum += s->timed_rate[i];
        s->peak_bytes[i] = NAN;
        for (int e = 0; e < j->epoch_count; e++) {
            if (!isnan(j->epochs[e].samples)) s->total_samples += j->epochs[e].samples;
            double p = j->epochs[e].peak_bytes;
            if (!isnan(p) && (isnan(s->peak_bytes[i]) || p > s->peak_bytes[i])) s->peak_bytes[i] = p;
        }
        double end = results_job_end(j);
        s->window_start[i] = j->t_go;
        s->window_end[i] = end;
        if (isnan(j->t_go) || isnan(end)) continue;
        serial_sum += end - j->t_go;
        if (isnan(s->first_go) || j->t_go < s->first_go) s->first_go = j->t_go;
        if (isnan(s->last_end) || end > s->last_end) s->last_end = end;
    }
    s->makespan_s = serial ? serial_sum : s->last_end - s->first_go;
    if (isnan(s->first_go)) s->makespan_s = NAN;
    s->aggregate_samples_per_s = s->makespan_s > 0 ? s->total_samples / s->makespan_s : NAN;
    s->status = stopped ? "interrupted" : (s->ok == count ? "complete" : "partial");
    results_compare(s, baseline);
}

void results_baseline_from(const run_summary *serial, const char *source, serial_baseline *b) {
    memset(b, 0, sizeof *b);
    b->known = 1;
    snprintf(b->source, sizeof b->source, "%s", source);
    b->makespan_s = serial->makespan_s;
    b->energy_j = serial->energy_j;
    b->job_count = serial->job_count;
    for (int i = 0; i < serial->job_count; i++) b->solo_timed_s[i] = serial->timed_s[i];
}

static void add_number(cJSON *o, const char *key, double v) {
    if (isnan(v) || isinf(v)) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, v);
}

static double get_number(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

static void job_canonical(const job_run *j, char *out, size_t size) {
    mix_job_format(&j->spec, out, size);
}

int results_load_baseline(const char *dir, const job_run *jobs, int count, serial_baseline *b,
                          char *err, size_t err_size) {
    memset(b, 0, sizeof *b);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, err_size, "--baseline %s: cannot read %s: %s", dir, path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    char buf[8192];
    size_t n;
    while (mem && (n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, mem);
    fclose(f);
    if (mem) fclose(mem);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(root, "mode");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    int rc = -1;
    if (!cJSON_IsObject(root) || !cJSON_IsArray(list)) {
        snprintf(err, err_size, "--baseline %s: %s is not a run_suite summary", dir, path);
    } else if (!cJSON_IsString(mode) || strcmp(mode->valuestring, "serial") != 0) {
        snprintf(err, err_size, "--baseline %s: that run's mode is %s; a serial run is needed",
                 dir, cJSON_IsString(mode) ? mode->valuestring : "unknown");
    } else if (cJSON_GetArraySize(list) != count) {
        snprintf(err, err_size, "--baseline %s: that run had %d jobs, this mix has %d", dir,
                 cJSON_GetArraySize(list), count);
    } else {
        rc = 0;
        for (int i = 0; i < count && rc == 0; i++) {
            const cJSON *item = cJSON_GetArrayItem(list, i);
            const cJSON *job = cJSON_GetObjectItemCaseSensitive(item, "job");
            char mine[256];
            job_canonical(&jobs[i], mine, sizeof mine);
            if (!cJSON_IsString(job) || strcmp(job->valuestring, mine) != 0 ||
                get_number(item, "epochs") != jobs[i].epochs_planned ||
                get_number(item, "steps_per_epoch") != (double)jobs[i].steps_per_epoch) {
                snprintf(err, err_size, "--baseline %s: job %d there is %s (epochs %g, steps %g), here "
                         "%s (epochs %d, steps %ld): not the same mix", dir, i,
                         cJSON_IsString(job) ? job->valuestring : "?", get_number(item, "epochs"),
                         get_number(item, "steps_per_epoch"), mine, jobs[i].epochs_planned,
                         jobs[i].steps_per_epoch);
                rc = -1;
            }
            b->solo_timed_s[i] = get_number(item, "timed_seconds");
        }
    }
    if (rc == 0) {
        b->known = 1;
        snprintf(b->source, sizeof b->source, "%s", dir);
        b->makespan_s = get_number(root, "makespan_s");
        b->energy_j = get_number(root, "energy_j");
        b->job_count = count;
    }
    cJSON_Delete(root);
    return rc;
}

/* --- files --------------------------------------------------------------------------------- */

void results_csv_field(FILE *f, const char *text) {
    if (!strpbrk(text, ",\"\r\n")) {
        fputs(text, f);
        return;
    }
    fputc('"', f);
    for (const char *p = text; *p; p++) {
        if (*p == '"') fputc('"', f);
        fputc(*p, f);
    }
    fputc('"', f);
}

static void csv_number(FILE *f, double v, int decimals) {
    if (!isnan(v)) fprintf(f, "%.*f", decimals, v);
}

int results_write_jobs_csv(const char *dir, const job_run *jobs, int count, const run_summary *s,
                           char *err, size_t err_size) {
    text_buffer t;
    FILE *f = text_open(&t);
    if (!f) {
        snprintf(err, err_size, "out of memory writing jobs.csv");
        return -1;
    }
    int max_epochs = 0;
    for (int i = 0; i < count; i++)
        for (int e = 0; e < jobs[i].epoch_count; e++)
            if (jobs[i].epochs[e].epoch > max_epochs) max_epochs = jobs[i].epochs[e].epoch;
    fprintf(f, "index,label,model,data,batch,image_size,epochs_planned,steps_per_epoch");
    for (int e = 1; e <= max_epochs; e++) fprintf(f, ",epoch%d_s", e);
    fprintf(f, ",timed_epoch,timed_s,timed_samples_per_s,timed_step_ms_median,timed_step_ms_p90,"
               "peak_bytes,footprint_bytes,final_loss,status,reason,timed_t_start,timed_t_end,"
               "go_t,end_t,mps,mig,device,solo_timed_s,slowdown\n");
    for (int i = 0; i < count; i++) {
        const job_run *j = &jobs[i];
        fprintf(f, "%d,", i);
        results_csv_field(f, j->spec.label);
        fprintf(f, ",%s,%s,%d,%d,%d,%ld", j->spec.model, j->spec.data, j->spec.batch,
                j->spec.image_size, j->epochs_planned, j->steps_per_epoch);
        for (int e = 1; e <= max_epochs; e++) {
            fputc(',', f);
            for (int k = 0; k < j->epoch_count; k++)
                if (j->epochs[k].epoch == e) csv_number(f, j->epochs[k].seconds, 6);
        }
        int k = results_timed_epoch(j);
        const job_epoch *te = k >= 0 ? &j->epochs[k] : NULL;
        fprintf(f, ",%d,", te ? te->epoch : 0);
        csv_number(f, te ? te->seconds : NAN, 6);
        fputc(',', f);
        csv_number(f, te ? te->samples_per_s : NAN, 3);
        fputc(',', f);
        csv_number(f, te ? te->step_ms_median : NAN, 3);
        fputc(',', f);
        csv_number(f, te ? te->step_ms_p90 : NAN, 3);
        fputc(',', f);
        csv_number(f, s->peak_bytes[i], 0);
        fputc(',', f);
        csv_number(f, j->footprint_bytes, 0);
        fputc(',', f);
        csv_number(f, j->epoch_count ? j->epochs[j->epoch_count - 1].loss : NAN, 6);
        fprintf(f, ",%s,", status_names[j->status]);
        results_csv_field(f, j->reason);
        fputc(',', f);
        csv_number(f, te ? te->t_start : NAN, 6);
        fputc(',', f);
        csv_number(f, te ? te->t_end : NAN, 6);
        fputc(',', f);
        csv_number(f, j->t_go, 6);
        fputc(',', f);
        csv_number(f, results_job_end(j), 6);
        fprintf(f, ",%s,%s,", j->mps < 0 ? "" : j->mps ? "1" : "0", j->mig < 0 ? "" : j->mig ? "1" : "0");
        results_csv_field(f, j->device);
        fputc(',', f);
        csv_number(f, s->solo_s[i], 6);
        fputc(',', f);
        csv_number(f, s->slowdown[i], 4);
        fputc('\n', f);
    }
    return text_commit(&t, dir, "jobs.csv", err, err_size);
}

int results_write_summary(const char *dir, const char *mix_text, const job_run *jobs, int count,
                          const run_summary *s, const serial_baseline *b, char *err, size_t err_size) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "mode", s->mode);
    cJSON_AddStringToObject(root, "mix", mix_text);
    cJSON_AddStringToObject(root, "status", s->status);
    cJSON_AddNumberToObject(root, "jobs_ok", s->ok);
    cJSON_AddNumberToObject(root, "jobs_failed", s->failed);
    cJSON_AddNumberToObject(root, "jobs_diverged", s->diverged);
    add_number(root, "makespan_s", s->makespan_s);
    cJSON_AddStringToObject(root, "makespan_definition",
                            strcmp(s->mode, "serial") == 0
                                ? "sum over jobs of go-to-end (each job alone; setup excluded)"
                                : "first go to last end (setup and warm-up before go excluded)");
    add_number(root, "total_samples", s->total_samples);
    add_number(root, "aggregate_samples_per_s", s->aggregate_samples_per_s);
    add_number(root, "timed_samples_per_s_sum", s->timed_samples_per_s_sum);
    add_number(root, "energy_j", s->energy_j);
    add_number(root, "peak_gpu_memory_bytes", s->peak_gpu_memory);
    if (b && b->known) {
        cJSON *serial = cJSON_AddObjectToObject(root, "serial_baseline");
        cJSON_AddStringToObject(serial, "source", b->source);
        add_number(serial, "makespan_s", b->makespan_s);
        add_number(serial, "energy_j", b->energy_j);
    } else {
        cJSON_AddNullToObject(root, "serial_baseline");
    }
    add_number(root, "speedup_vs_serial", s->speedup);
    add_number(root, "energy_vs_serial", s->energy_vs_serial);
    cJSON *list = cJSON_AddArrayToObject(root, "jobs");
    for (int i = 0; i < count; i++) {
        const job_run *j = &jobs[i];
        cJSON *o = cJSON_CreateObject();
        char canonical[256];
        job_canonical(j, canonical, sizeof canonical);
        cJSON_AddNumberToObject(o, "index", i);
        cJSON_AddStringToObject(o, "label", j->spec.label);
        cJSON_AddStringToObject(o, "job", canonical);
        cJSON_AddNumberToObject(o, "epochs", j->epochs_planned);
        cJSON_AddNumberToObject(o, "steps_per_epoch", (double)j->steps_per_epoch);
        cJSON_AddStringToObject(o, "status", status_names[j->status]);
        cJSON_AddStringToObject(o, "reason", j->reason);
        cJSON_AddNumberToObject(o, "timed_epoch", s->timed_epoch[i]);
        add_number(o, "timed_seconds", s->timed_s[i]);
        add_number(o, "timed_samples_per_s", s->timed_rate[i]);
        add_number(o, "peak_bytes", s->peak_bytes[i]);
        add_number(o, "solo_timed_seconds", s->solo_s[i]);
        add_number(o, "slowdown", s->slowdown[i]);
        add_number(o, "go_t", s->window_start[i]);
        add_number(o, "end_t", s->window_end[i]);
        if (j->mps >= 0) cJSON_AddBoolToObject(o, "mps", j->mps);
        else cJSON_AddNullToObject(o, "mps");
        if (j->mig >= 0) cJSON_AddBoolToObject(o, "mig", j->mig);
        else cJSON_AddNullToObject(o, "mig");
        cJSON_AddItemToArray(list, o);
    }
    cJSON *mon = cJSON_AddObjectToObject(root, "monitor");
    cJSON_AddBoolToObject(mon, "enabled", s->monitor_on);
    cJSON_AddNumberToObject(mon, "ticks", (double)s->monitor_ticks);
    add_number(mon, "mean_tick_cpu_ms", s->monitor_mean_ms);
    add_number(mon, "cpu_fraction", s->monitor_busy_fraction);
    int rc = results_write_json(dir, "summary.json", root, err, err_size);
    cJSON_Delete(root);
    return rc;
}

/* --- tables -------------------------------------------------------------------------------- */

void results_format_bytes(char *out, size_t size, double bytes) {
    if (isnan(bytes)) snprintf(out, size, "-");
    else if (bytes >= 1073741824.0) snprintf(out, size, "%.2f GiB", bytes / 1073741824.0);
    else snprintf(out, size, "%.0f MiB", bytes / 1048576.0);
}

static void format_number(char *out, size_t size, double v, const char *fmt) {
    if (isnan(v)) snprintf(out, size, "-");
    else snprintf(out, size, fmt, v);
}

void results_print_table(FILE *out, const job_run *jobs, int count, const run_summary *s) {
    fprintf(out, "\n%-4s %-24s %-16s %-11s %6s %6s %10s %12s %11s %9s  %s\n", "job", "label", "model",
            "data", "batch", "epoch", "seconds", "samples/s", "peak mem", "slowdown", "status");
    for (int i = 0; i < count; i++) {
        const job_run *j = &jobs[i];
        char secs[32], rate[32], mem[32], slow[32];
        format_number(secs, sizeof secs, s->timed_s[i], "%.3f");
        format_number(rate, sizeof rate, s->timed_rate[i], "%.1f");
        results_format_bytes(mem, sizeof mem, s->peak_bytes[i]);
        format_number(slow, sizeof slow, s->slowdown[i], "%.2fx");
        fprintf(out, "%-4d %-24.24s %-16s %-11s %6d %6d %10s %12s %11s %9s  %s%s%s\n", i,
                j->spec.label, j->spec.model, j->spec.data, j->spec.batch, s->timed_epoch[i], secs,
                rate, mem, slow, status_names[j->status], j->reason[0] ? ": " : "", j->reason);
    }
    char span[32], agg[32], speed[32], energy[32], ratio[32];
    format_number(span, sizeof span, s->makespan_s, "%.3f s");
    format_number(agg, sizeof agg, s->aggregate_samples_per_s, "%.1f");
    format_number(speed, sizeof speed, s->speedup, "%.2fx");
    format_number(energy, sizeof energy, s->energy_j, "%.1f J");
    format_number(ratio, sizeof ratio, s->energy_vs_serial, "%.2fx");
    fprintf(out, "%-4s %s: %d ok, %d failed, %d diverged (%s); makespan %s, %s samples/s in "
            "total, speed-up vs serial %s, energy %s (%s of serial)\n\n",
            "all", s->mode, s->ok, s->failed, s->diverged, s->status, span, agg, speed, energy, ratio);
}

static double mean_slowdown(const run_summary *s) {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < s->job_count; i++)
        if (!isnan(s->slowdown[i])) sum += s->slowdown[i], n++;
    return n ? sum / n : NAN;
}

void results_print_comparison(FILE *out, const run_summary *runs, int count) {
    fprintf(out, "\n%-12s %-12s %11s %14s %9s %12s %9s %14s\n", "mode", "status", "makespan s",
            "samples/s", "speed-up", "energy J", "energy/x", "mean slowdown");
    for (int r = 0; r < count; r++) {
        const run_summary *s = &runs[r];
        char span[32], agg[32], speed[32], energy[32], ratio[32], slow[32];
        format_number(span, sizeof span, s->makespan_s, "%.3f");
        format_number(agg, sizeof agg, s->aggregate_samples_per_s, "%.1f");
        format_number(speed, sizeof speed, s->speedup, "%.2fx");
        format_number(energy, sizeof energy, s->energy_j, "%.1f");
        format_number(ratio, sizeof ratio, s->energy_vs_serial, "%.2fx");
        format_number(slow, sizeof slow, mean_slowdown(s), "%.2fx");
        fprintf(out, "%-12s %-12s %11s %14s %9s %12s %9s %14s\n", s->mode, s->status, span, agg,
                speed, energy, ratio, slow);
    }
    fputc('\n', out);
}

int results_write_comparison(const char *dir, const run_summary *runs, int count, char *err,
                             size_t err_size) {
    text_buffer t;
    FILE *f = text_open(&t);
    if (!f) {
        snprintf(err, err_size, "out of memory writing comparison.csv");
        return -1;
    }
    cJSON *root = cJSON_CreateArray();
    fprintf(f, "mode,status,jobs_ok,makespan_s,aggregate_samples_per_s,speedup_vs_serial,energy_j,"
               "energy_vs_serial,mean_slowdown\n");
    for (int r = 0; r < count; r++) {
        const run_summary *s = &runs[r];
        fprintf(f, "%s,%s,%d,", s->mode, s->status, s->ok);
        const double values[] = {s->makespan_s, s->aggregate_samples_per_s, s->speedup, s->energy_j,
                                 s->energy_vs_serial, mean_slowdown(s)};
        const char *keys[] = {"makespan_s", "aggregate_samples_per_s", "speedup_vs_serial",
                              "energy_j", "energy_vs_serial", "mean_slowdown"};
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "mode", s->mode);
        cJSON_AddStringToObject(o, "status", s->status);
        cJSON_AddNumberToObject(o, "jobs_ok", s->ok);
        for (int k = 0; k < 6; k++) {
            csv_number(f, values[k], 6);
            fputc(k < 5 ? ',' : '\n', f);
            add_number(o, keys[k], values[k]);
        }
        cJSON_AddItemToArray(root, o);
    }
    int rc = text_commit(&t, dir, "comparison.csv", err, err_size);
    if (rc == 0) rc = results_write_json(dir, "comparison.json", root, err, err_size);
    cJSON_Delete(root);
    return rc;
}
