/* Results files and tables of a run (see results.h). */
#define _GNU_SOURCE
#include "results/results.h"
#include "results/kernel_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/output_path.h"
#include "kernels/knobs.h"
#include "results/faults.h"

static const char *status_names[] = {"ok", "failed", "diverged"};

const char *results_status_name(job_status status) { return status_names[status]; }

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
    if (stat(path, &st) != 0) { /* the true reason: a link loop, a link to nothing, no permission */
        snprintf(err, err_size, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "%s is not a folder", path);
        return -1;
    }
    return 0;
}

int results_make_run_dir(const char *base, const char *mode, const char *mix_text, char *dir,
                         size_t dir_size, char *run_id, size_t run_id_size, char *err,
                         size_t err_size) {
    /* the rule of every output (base/output_path.h), whichever form of run_suite asks */
    const output_path_rule rule = {"--results", OUTPUT_PATH_FOLDER, NULL, NULL};
    if (output_path_check(&rule, base, err, err_size) != 0 || results_make_dirs(base, err, err_size) != 0) return -1;
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

/* Every failed write of this process, counted for run_suite's exit status (results_write_failures);
 * an atomic, as a study's cells write from threads of their own. */
static _Atomic int write_failures;

void results_note_write_failure(void) { write_failures++; }

int results_write_failures(void) { return write_failures; }

/* SUITE_WRITE_FAULT: the files (by name) this process writes as on a full disk, for the tests. */
static int write_fault(const char *path) {
    const char *names = knob_text(KNOB_WRITE_FAULT);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t n = strlen(base);
    for (const char *p = names; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        size_t len = strcspn(p, ",");
        if ((len == 1 && *p == '*') || (len == n && !strncmp(p, base, n))) return 1;
    }
    return 0;
}

/* write(2) until done; under a write fault, half the bytes and then ENOSPC, as a disk that fills. */
static const char *write_whole(int fd, const char *data, size_t size, int fault, size_t *done, int *e) {
    *done = 0;
    while (*done < size) {
        size_t want = size - *done;
        if (fault && *done >= size / 2) {
            *e = ENOSPC;
            return "write";
        }
        if (fault && want > size / 2 - *done) want = size / 2 - *done;
        ssize_t w = write(fd, data + *done, want);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            *e = errno;
            return "write";
        }
        if (w == 0) return "short write"; /* no error and no byte: nothing to quote from errno */
        *done += (size_t)w;
    }
    return NULL;
}

int results_write_atomic(const char *path, const char *data, size_t size, char *err, size_t err_size) {
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(err, err_size, "cannot write %s: cannot create %s: %s", path, tmp, strerror(errno));
        results_note_write_failure();
        return -1;
    }
    /* each step's own reason: errno is read only where the call that failed set it */
    size_t done = 0;
    int e = 0;
    const char *step = write_whole(fd, data, size, write_fault(path), &done, &e);
    if (!step && fsync(fd) != 0) e = errno, step = "fsync";
    if (close(fd) != 0 && !step) e = errno, step = "close";
    if (!step && rename(tmp, path) != 0) e = errno, step = "rename";
    if (!step) return 0;
    if (e) snprintf(err, err_size, "cannot write %s: %s: %s (%zu of %zu bytes written)", path, step, strerror(e),
                    done, size);
    else snprintf(err, err_size, "cannot write %s: %s (%zu of %zu bytes written)", path, step, done, size);
    unlink(tmp);
    results_note_write_failure();
    return -1;
}

int results_open_log(const char *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "error: cannot write %s: %s\n", path, strerror(errno));
        results_note_write_failure();
    }
    return fd;
}

void results_append(int *fd, const char *path, const void *data, size_t n) {
    const char *at = data;
    while (*fd >= 0 && n > 0) {
        ssize_t w = write_fault(path) ? (errno = ENOSPC, -1) : write(*fd, at, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            fprintf(stderr, "error: cannot write %s: %s; the rest of it is lost (the job's events are still read)\n",
                    path, w < 0 ? strerror(errno) : "short write");
            results_note_write_failure();
            close(*fd);
            *fd = -1;
            return;
        }
        at += w;
        n -= (size_t)w;
    }
}

int results_commit_stream(FILE *f, const char *partial, const char *path, char *err, size_t err_size) {
    int e = 0;
    const char *step = NULL;
    if (fflush(f) != 0) e = errno, step = "write";
    else if (ferror(f)) step = "write";
    else if (write_fault(path)) e = ENOSPC, step = "write";
    else if (fsync(fileno(f)) != 0) e = errno, step = "fsync";
    if (fclose(f) != 0 && !step) e = errno, step = "close";
    if (!step && rename(partial, path) != 0) e = errno, step = "rename";
    if (!step) return 0;
    if (e) snprintf(err, err_size, "cannot write %s: %s: %s (what was written is in %s)", path, step, strerror(e),
                    partial);
    else snprintf(err, err_size, "cannot write %s: %s failed (what was written is in %s)", path, step, partial);
    results_note_write_failure();
    return -1;
}

int results_write_json(const char *dir, const char *name, const cJSON *json, char *err, size_t err_size) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    char *text = cJSON_Print(json);
    if (!text) {
        snprintf(err, err_size, "out of memory printing %s", name);
        results_note_write_failure();
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

FILE *results_text_open(results_text *t) {
    memset(t, 0, sizeof *t);
    t->f = open_memstream(&t->data, &t->size);
    if (!t->f) results_note_write_failure(); /* the file that was to be written is not */
    return t->f;
}

int results_text_commit(results_text *t, const char *dir, const char *name, char *err, size_t err_size) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int rc = -1;
    if (fclose(t->f) == 0) rc = results_write_atomic(path, t->data, t->size, err, err_size);
    else snprintf(err, err_size, "out of memory writing %s", name), results_note_write_failure();
    free(t->data);
    return rc;
}

/* --- summary ------------------------------------------------------------------------------- */

int results_timed_epoch(const job_record *job) {
    for (int i = 0; i < job->epoch_count; i++)
        if (job->epochs[i].epoch == 2) return i;
    /* Only a one-epoch job is timed on its only epoch; a job that stopped after its warm-up
     * epoch has no timed epoch (warm-up time is not comparable). */
    return job->epoch_count > 0 && job->epochs_planned <= 1 ? job->epoch_count - 1 : -1;
}

void results_compare(run_summary *s, const serial_baseline *b) {
    int known = b && b->known;
    metrics_input in;
    metrics_input_init(&in);
    in.count = s->job_count;
    in.sequential = s->sequential;
    in.same_workload = s->same_workload;
    in.makespan_s = s->makespan_s;
    in.energy_j = s->energy_j;
    in.window = s->window_length_s > 0;
    if (known) in.serial_makespan_s = b->makespan_s, in.serial_energy_j = b->energy_j;
    for (int i = 0; i < s->job_count; i++) {
        metrics_job_input *j = &in.jobs[i];
        int solo = known && i < b->job_count;
        j->rate = in.window ? s->window_rate[i] : s->timed_rate[i];
        j->samples = s->samples[i];
        j->turnaround_s = s->turnaround_s[i];
        j->partition_rate = s->partition_rate[i];
        j->solo_rate = solo ? b->solo_rate[i] : NAN;
        j->alone_s = solo ? b->solo_window_s[i] : NAN;
    }
    metrics_compute(&in, &s->metrics);
    if (in.window) results_window_compare(s, &in);
    s->speedup = s->metrics.speedup;
    s->energy_vs_serial = s->metrics.energy_vs_serial;
    for (int i = 0; i < s->job_count; i++) {
        s->solo_s[i] = known && i < b->job_count ? b->solo_timed_s[i] : NAN;
        s->slowdown[i] = s->metrics.jobs[i].slowdown;
        /* a baseline without rates (older summaries): the timed epochs' seconds */
        if (isnan(s->slowdown[i]) && s->solo_s[i] > 0 && !isnan(s->timed_s[i]) && !s->sequential && !in.window)
            s->slowdown[i] = s->timed_s[i] / s->solo_s[i];
    }
}

void results_summarize(const job_record *jobs, int count, const char *mode, int serial, int stopped,
                       const serial_baseline *baseline, run_summary *s) {
    double partition_rate[MIX_MAX_JOBS];  /* the isolation pass's, measured before this */
    int partition_from[MIX_MAX_JOBS];
    char partition_source[sizeof s->partition_source];
    memcpy(partition_rate, s->partition_rate, sizeof partition_rate);
    memcpy(partition_from, s->partition_from, sizeof partition_from);
    memcpy(partition_source, s->partition_source, sizeof partition_source);
    double window_length_s = s->window_length_s;  /* the measurement, set by the caller */
    int window_count = s->window_count;
    memset(s, 0, sizeof *s);
    s->window_length_s = window_length_s > 0 ? window_length_s : 0;
    s->window_count = s->window_length_s > 0 ? window_count : 0;
    for (int i = 0; i < MIX_MAX_JOBS; i++) {
        s->partition_rate[i] = partition_rate[i] > 0 && i < count ? partition_rate[i] : NAN;
        s->partition_from[i] = isnan(s->partition_rate[i]) ? -1 : partition_from[i];
    }
    memcpy(s->partition_source, partition_source, sizeof partition_source);
    snprintf(s->mode, sizeof s->mode, "%s", mode);
    s->job_count = count;
    s->first_go = s->last_end = NAN;
    s->energy_j = s->peak_gpu_memory = NAN;
    for (int w = 0; w < JOB_MAX_WINDOWS; w++) s->window_energy_j[w] = s->window_samples[w] = NAN;
    s->window_energy_total_j = s->window_samples_total = s->window_energy_per_sample_j = NAN;
    s->monitor_mean_ms = s->monitor_busy_fraction = NAN;
    s->sequential = serial;
    job_spec specs[MIX_MAX_JOBS];
    for (int i = 0; i < count && i < MIX_MAX_JOBS; i++) specs[i] = jobs[i].spec;
    s->same_workload = metrics_same_workload(specs, count < MIX_MAX_JOBS ? count : MIX_MAX_JOBS);
    double serial_sum = 0;
    for (int i = 0; i < count; i++) {
        const job_record *j = &jobs[i];
        s->turnaround_s[i] = NAN;
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
            if (!isnan(j->epochs[e].samples)) s->samples[i] += j->epochs[e].samples;
            if (!isnan(j->epochs[e].samples)) s->total_samples += j->epochs[e].samples;
            double p = j->epochs[e].peak_bytes;
            if (!isnan(p) && (isnan(s->peak_bytes[i]) || p > s->peak_bytes[i])) s->peak_bytes[i] = p;
        }
        double end = job_end_time(j);
        s->go_t[i] = j->t_go;
        s->end_t[i] = end;
        if (isnan(j->t_go) || isnan(end)) continue;
        serial_sum += end - j->t_go;
        if (serial) s->turnaround_s[i] = serial_sum;  /* its wait for the jobs before it, then its own */
        if (isnan(s->first_go) || j->t_go < s->first_go) s->first_go = j->t_go;
        if (isnan(s->last_end) || end > s->last_end) s->last_end = end;
    }
    for (int i = 0; !serial && i < count; i++) s->turnaround_s[i] = s->end_t[i] - s->first_go;
    s->makespan_s = serial ? serial_sum : s->last_end - s->first_go;
    if (isnan(s->first_go)) s->makespan_s = NAN;
    s->aggregate_samples_per_s = s->makespan_s > 0 ? s->total_samples / s->makespan_s : NAN;
    if (!s->same_workload)  /* samples of unlike jobs do not add up */
        s->aggregate_samples_per_s = s->timed_samples_per_s_sum = NAN;
    s->status = stopped ? "interrupted" : (s->ok == count ? "complete" : "partial");
    if (s->window_length_s > 0) results_window_summarize(jobs, count, s);
    results_compare(s, baseline);
}

void results_baseline_from(const run_summary *serial, const char *source, serial_baseline *b) {
    memset(b, 0, sizeof *b);
    b->known = 1;
    snprintf(b->source, sizeof b->source, "%s", source);
    b->makespan_s = serial->makespan_s;
    b->energy_j = serial->energy_j;
    b->job_count = serial->job_count;
    for (int i = 0; i < serial->job_count; i++) {
        b->solo_timed_s[i] = serial->timed_s[i];
        b->solo_rate[i] = serial->window_length_s > 0 ? serial->window_rate[i] : serial->timed_rate[i];
        b->solo_window_s[i] = serial->end_t[i] - serial->go_t[i];
    }
}

static double get_number(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

int results_load_baseline(const char *dir, const char *baseline_mode, const job_record *jobs, int count,
                          serial_baseline *b, char *err, size_t err_size) {
    memset(b, 0, sizeof *b);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    errno = 0;
    cJSON *root = results_read_json(path);
    if (!root && errno) {
        char status[256];
        if (errno == ENOENT) /* a run that never wrote its summary: say what became of it */
            snprintf(err, err_size, "--baseline %s: no summary.json there (the run's status: %s)", dir,
                     results_run_status(dir, status, sizeof status));
        else snprintf(err, err_size, "--baseline %s: cannot read %s: %s", dir, path, strerror(errno));
        return -1;
    }
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(root, "mode");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    const cJSON *measurement = cJSON_GetObjectItemCaseSensitive(root, "measurement");
    int window = cJSON_IsString(measurement) && strcmp(measurement->valuestring, "window") == 0;
    int rc = -1;
    if (!cJSON_IsObject(root) || !cJSON_IsArray(list)) {
        snprintf(err, err_size, "--baseline %s: %s is not a run_suite summary", dir, path);
    } else if (!cJSON_IsString(mode) || strcmp(mode->valuestring, baseline_mode) != 0) {
        snprintf(err, err_size, "--baseline %s: that run's mode is %s; a %s run is needed",
                 dir, cJSON_IsString(mode) ? mode->valuestring : "unknown", baseline_mode);
    } else if (cJSON_GetArraySize(list) != count) {
        snprintf(err, err_size, "--baseline %s: that run had %d jobs, this mix has %d", dir,
                 cJSON_GetArraySize(list), count);
    } else {
        rc = 0;
        for (int i = 0; i < count && rc == 0; i++) {
            const cJSON *item = cJSON_GetArrayItem(list, i);
            const cJSON *job = cJSON_GetObjectItemCaseSensitive(item, "job");
            const char *mine = jobs[i].canonical;
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
            b->solo_rate[i] = get_number(item, window ? "window_samples_per_s" : "timed_samples_per_s");
            b->solo_window_s[i] = get_number(item, "end_t") - get_number(item, "go_t");
        }
    }
    if (rc == 0) {
        b->known = 1;
        snprintf(b->source, sizeof b->source, "%s", dir);
        snprintf(b->dir, sizeof b->dir, "%s", dir);
        b->makespan_s = get_number(root, "makespan_s");
        b->energy_j = get_number(root, "energy_j");
        b->job_count = count;
    }
    cJSON_Delete(root);
    return rc;
}

/* --- files --------------------------------------------------------------------------------- */

int results_write_jobs_csv(const char *dir, const job_record *jobs, int count, const run_summary *s,
                           char *err, size_t err_size) {
    results_text t;
    FILE *f = results_text_open(&t);
    if (!f) {
        snprintf(err, err_size, "out of memory writing jobs.csv");
        return -1;
    }
    int max_epochs = 0, planned = 1;
    for (int i = 0; i < count; i++) {
        if (jobs[i].epochs_planned > planned) planned = jobs[i].epochs_planned;
        for (int e = 0; e < jobs[i].epoch_count; e++)
            if (jobs[i].epochs[e].epoch > max_epochs) max_epochs = jobs[i].epochs[e].epoch;
    }
    /* the window measurement trains past the plan until the last window closes: those epochs are
     * not measurements (the window columns are), and would add a column each */
    if (s->window_length_s > 0 && max_epochs > planned) max_epochs = planned;
    fprintf(f, "index,label,model,data,batch,image_size,epochs_planned,steps_per_epoch");
    for (int e = 1; e <= max_epochs; e++) fprintf(f, ",epoch%d_s", e);
    fprintf(f, ",timed_epoch,timed_s,timed_samples_per_s,timed_step_ms_median,timed_step_ms_p90,"
               "peak_bytes,footprint_bytes,final_loss,status,reason,timed_t_start,timed_t_end,"
               "go_t,end_t,mps,mig,device,solo_timed_s,slowdown,normalized_throughput,"
               "energy_per_sample_j,solo_in_partition_samples_per_s,interference_ratio,timed_cpu_cores,"
               "timed_host_decoded");
    if (s->window_length_s > 0) results_window_csv_header(f);
    int traced = ktrace_any_reported(jobs, count);
    if (traced) ktrace_csv_header(f);
    fputc('\n', f);
    for (int i = 0; i < count; i++) {
        const job_record *j = &jobs[i];
        fprintf(f, "%d,", i);
        results_csv_field(f, j->spec.label);
        fprintf(f, ",%s,%s,%d,%d,%d,%ld", j->spec.model, j->spec.data, j->spec.batch,
                j->spec.image_size, j->epochs_planned, j->steps_per_epoch);
        for (int e = 1; e <= max_epochs; e++) {
            fputc(',', f);
            for (int k = 0; k < j->epoch_count; k++)
                if (j->epochs[k].epoch == e) results_csv_number(f, j->epochs[k].seconds, 6);
        }
        int k = results_timed_epoch(j);
        const job_epoch *te = k >= 0 ? &j->epochs[k] : NULL;
        fprintf(f, ",%d,", te ? te->epoch : 0);
        results_csv_number(f, te ? te->seconds : NAN, 6);
        fputc(',', f);
        results_csv_number(f, te ? te->samples_per_s : NAN, 3);
        fputc(',', f);
        results_csv_number(f, te ? te->step_ms_median : NAN, 3);
        fputc(',', f);
        results_csv_number(f, te ? te->step_ms_p90 : NAN, 3);
        fputc(',', f);
        results_csv_number(f, s->peak_bytes[i], 0);
        fputc(',', f);
        results_csv_number(f, j->footprint_bytes, 0);
        fputc(',', f);
        results_csv_number(f, j->epoch_count ? j->epochs[j->epoch_count - 1].loss : NAN, 6);
        fprintf(f, ",%s,", status_names[j->status]);
        results_csv_field(f, j->reason);
        fputc(',', f);
        results_csv_number(f, te ? te->t_start : NAN, 6);
        fputc(',', f);
        results_csv_number(f, te ? te->t_end : NAN, 6);
        fputc(',', f);
        results_csv_number(f, j->t_go, 6);
        fputc(',', f);
        results_csv_number(f, job_end_time(j), 6);
        fprintf(f, ",%s,%s,", j->mps < 0 ? "" : j->mps ? "1" : "0", j->mig < 0 ? "" : j->mig ? "1" : "0");
        results_csv_field(f, j->device);
        fputc(',', f);
        results_csv_number(f, s->solo_s[i], 6);
        fputc(',', f);
        results_csv_number(f, s->slowdown[i], 4);
        const job_metrics *m = &s->metrics.jobs[i];
        const double more[] = {m->normalized, m->energy_per_sample, s->partition_rate[i], m->interference,
                               te ? te->cpu_cores : NAN, te ? te->host_decoded : NAN};
        const int decimals[] = {4, 6, 3, 4, 2, 0};
        for (int k = 0; k < 6; k++) {
            fputc(',', f);
            results_csv_number(f, more[k], decimals[k]);
        }
        if (s->window_length_s > 0) results_window_csv_row(f, j, s, i);
        if (traced) ktrace_csv_row(f, j);
        fputc('\n', f);
    }
    return results_text_commit(&t, dir, "jobs.csv", err, err_size);
}

int results_write_summary(const char *dir, const char *mix_text, const job_record *jobs, int count,
                          const run_summary *s, const serial_baseline *b, char *err, size_t err_size) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "mode", s->mode);
    cJSON_AddStringToObject(root, "mix", mix_text);
    cJSON_AddStringToObject(root, "status", s->status);
    if (s->window_length_s > 0) cJSON_AddStringToObject(root, "measurement", "window");
    cJSON_AddNumberToObject(root, "jobs_ok", s->ok);
    cJSON_AddNumberToObject(root, "jobs_failed", s->failed);
    cJSON_AddNumberToObject(root, "jobs_diverged", s->diverged);
    results_json_number(root, "makespan_s", s->makespan_s);
    cJSON_AddStringToObject(root, "makespan_definition",
                            s->sequential
                                ? "sum over jobs of go-to-end (each job alone; setup excluded)"
                                : "first go to last end (setup and warm-up before go excluded)");
    results_json_number(root, "total_samples", s->total_samples);
    cJSON_AddBoolToObject(root, "same_workload", s->same_workload);
    if (s->same_workload) {  /* a sum of unlike jobs' samples/s means nothing: left out */
        results_json_number(root, "aggregate_samples_per_s", s->aggregate_samples_per_s);
        results_json_number(root, "timed_samples_per_s_sum", s->timed_samples_per_s_sum);
    }
    results_json_number(root, "energy_j", s->energy_j);
    results_json_number(root, "peak_gpu_memory_bytes", s->peak_gpu_memory);
    if (b && b->known) {
        cJSON *serial = cJSON_AddObjectToObject(root, "serial_baseline");
        cJSON_AddStringToObject(serial, "source", b->source);
        results_json_number(serial, "makespan_s", b->makespan_s);
        results_json_number(serial, "energy_j", b->energy_j);
    } else {
        cJSON_AddNullToObject(root, "serial_baseline");
    }
    results_json_number(root, "speedup_vs_serial", s->speedup);
    results_json_number(root, "energy_vs_serial", s->energy_vs_serial);
    const run_metrics *m = &s->metrics;
    results_json_number(root, "stp", m->stp);
    results_json_number(root, "antt", m->antt);
    results_json_number(root, "fairness", m->fairness);
    results_json_number(root, "interference_ratio_min", m->interference_min);
    results_json_number(root, "interference_ratio_mean", m->interference_mean);
    if (s->partition_source[0]) cJSON_AddStringToObject(root, "solo_in_partition_runs", s->partition_source);
    if (s->window_length_s > 0) results_window_json_run(root, s);
    cJSON *defs = cJSON_AddObjectToObject(root, "metric_definitions");
    int window = s->window_length_s > 0;
    cJSON_AddStringToObject(defs, "normalized_throughput", window
        ? "window samples/s here / the same job's alone over a window of the same length (serial baseline); with "
          "several windows, the median" : "timed-epoch samples/s here / the same job's alone (serial baseline)");
    cJSON_AddStringToObject(defs, "stp", s->sequential ? "1: one job at a time" : "sum of normalized throughputs");
    cJSON_AddStringToObject(defs, "antt", window
        ? "mean over jobs of 1 / normalized throughput (the mean slowdown over the window); with several windows, "
          "the median of the windows'" : "mean of (first go to the job's end) / the job's go-to-end alone");
    if (window) {
        cJSON_AddStringToObject(defs, "window", "one common window [T0, T1] of fixed length for every job, T0 when the "
                                "last job finished its warm-up epoch, all jobs training throughout; a job's window "
                                "samples/s = samples of its steps completed inside [T0, T1] / (T1 - T0)");
        cJSON_AddStringToObject(defs, "overlap", "share of the window during which every other job was training; "
                                "below min_overlap the job is flagged (overlap_flag)");
        cJSON_AddStringToObject(defs, "window_energy_per_sample_j", "the GPU's energy over the common windows (NVML's "
                                "energy counter as the monitor sampled it, at T0 and T1; one job after another: over "
                                "each job's own window, summed) / the samples every job's steps completed inside them; "
                                "null with window_energy_note saying why where no energy was read");
    }
    cJSON_AddStringToObject(defs, "fairness", "min / max normalized throughput");
    cJSON_AddStringToObject(defs, "energy_per_sample_j", "run energy split by solo-equivalent seconds of each job's samples");
    cJSON_AddStringToObject(defs, "interference_ratio", "samples/s here / the same job's alone in a partition of its own size");
    cJSON_AddStringToObject(defs, "timed_cpu_cores", "the job's process: CPU seconds per second over its timed epoch "
                            "(its loader's threads, decoding, the step's host work)");
    cJSON *list = cJSON_AddArrayToObject(root, "jobs");
    for (int i = 0; i < count; i++) {
        const job_record *j = &jobs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "index", i);
        cJSON_AddStringToObject(o, "label", j->spec.label);
        cJSON_AddStringToObject(o, "job", j->canonical);
        cJSON_AddNumberToObject(o, "epochs", j->epochs_planned);
        cJSON_AddNumberToObject(o, "steps_per_epoch", (double)j->steps_per_epoch);
        cJSON_AddStringToObject(o, "status", status_names[j->status]);
        cJSON_AddStringToObject(o, "reason", j->reason);
        cJSON_AddNumberToObject(o, "timed_epoch", s->timed_epoch[i]);
        results_json_number(o, "timed_seconds", s->timed_s[i]);
        results_json_number(o, "timed_samples_per_s", s->timed_rate[i]);
        results_json_number(o, "peak_bytes", s->peak_bytes[i]);
        results_json_number(o, "solo_timed_seconds", s->solo_s[i]);
        results_json_number(o, "slowdown", s->slowdown[i]);
        results_json_number(o, "normalized_throughput", m->jobs[i].normalized);
        results_json_number(o, "normalized_turnaround", m->jobs[i].turnaround);
        results_json_number(o, "energy_per_sample_j", m->jobs[i].energy_per_sample);
        results_json_number(o, "solo_in_partition_samples_per_s", s->partition_rate[i]);
        if (s->partition_from[i] >= 0) cJSON_AddNumberToObject(o, "solo_in_partition_from_job", s->partition_from[i]);
        results_json_number(o, "interference_ratio", m->jobs[i].interference);
        int timed = results_timed_epoch(j);
        results_json_number(o, "timed_cpu_cores", timed >= 0 ? j->epochs[timed].cpu_cores : NAN);
        results_json_number(o, "timed_host_decoded", timed >= 0 ? j->epochs[timed].host_decoded : NAN);
        cJSON *traced = ktrace_event_json(j);
        if (traced) cJSON_AddItemToObject(o, "kernels", traced);
        results_json_number(o, "samples", s->samples[i]);
        results_json_number(o, "go_t", s->go_t[i]);
        results_json_number(o, "end_t", s->end_t[i]);
        if (j->mps >= 0) cJSON_AddBoolToObject(o, "mps", j->mps);
        else cJSON_AddNullToObject(o, "mps");
        if (j->mig >= 0) cJSON_AddBoolToObject(o, "mig", j->mig);
        else cJSON_AddNullToObject(o, "mig");
        if (s->window_length_s > 0) results_window_json_job(o, jobs, s, i);
        results_job_fault_fields(o, j);
        cJSON_AddItemToArray(list, o);
    }
    cJSON_AddItemToObject(root, "faults", results_faults_json(jobs, count));
    cJSON *mon = cJSON_AddObjectToObject(root, "monitor");
    cJSON_AddBoolToObject(mon, "enabled", s->monitor_on);
    cJSON_AddNumberToObject(mon, "ticks", (double)s->monitor_ticks);
    results_json_number(mon, "mean_tick_cpu_ms", s->monitor_mean_ms);
    results_json_number(mon, "cpu_fraction", s->monitor_busy_fraction);
    int rc = results_write_json(dir, "summary.json", root, err, err_size);
    cJSON_Delete(root);
    return rc;
}


/* --- the process behind a "running" record -------------------------------------------------- */

/* This boot's id (the kernel's random boot_id); "" where /proc does not say. */
static void boot_id(char *out, size_t size) {
    out[0] = 0;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f) return;
    if (fgets(out, (int)size, f)) out[strcspn(out, "\n")] = 0;
    fclose(f);
}

/* When process pid started, in clock ticks since boot (/proc/<pid>/stat's 22nd field); -1 when it
 * is not there. A pid the kernel gave to a later process has a later start. */
static long long process_start(long pid) {
    char path[64], text[2048];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    const char *p = strrchr(text, ')'); /* the command name may hold spaces and parentheses */
    long long start = -1;
    /* after ')': state (field 3) ... starttime (field 22) */
    if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %lld",
                    &start) != 1)
        start = -1;
    return start;
}

cJSON *results_process_json(void) {
    cJSON *o = cJSON_CreateObject();
    char boot[64];
    boot_id(boot, sizeof boot);
    cJSON_AddNumberToObject(o, "pid", (double)getpid());
    cJSON_AddStringToObject(o, "boot_id", boot);
    cJSON_AddNumberToObject(o, "start_ticks", (double)process_start((long)getpid()));
    return o;
}

int results_process_alive(const cJSON *process) {
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(process, "pid");
    const cJSON *boot = cJSON_GetObjectItemCaseSensitive(process, "boot_id");
    const cJSON *start = cJSON_GetObjectItemCaseSensitive(process, "start_ticks");
    /* a pid or start time no process could have reads as unknown: never a conversion out of range */
    if (!cJSON_IsNumber(pid) || !cJSON_IsString(boot) || !cJSON_IsNumber(start) || !boot->valuestring[0] ||
        !(pid->valuedouble >= 1 && pid->valuedouble <= INT_MAX) ||
        !(start->valuedouble >= 0 && start->valuedouble < 0x1p63))
        return -1;
    char now[64];
    boot_id(now, sizeof now);
    if (!now[0]) return -1;
    if (strcmp(now, boot->valuestring) != 0) return 0; /* the machine restarted since */
    return process_start((long)pid->valuedouble) == (long long)start->valuedouble;
}

const char *results_run_status(const char *dir, char *out, size_t size) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/run.json", dir);
    cJSON *root = results_read_json(path);
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(root, "status");
    if (!cJSON_IsString(status)) snprintf(out, size, "%s", root ? "unknown (run.json has no status)" : "no run.json");
    else if (strcmp(status->valuestring, "running") != 0) snprintf(out, size, "%s", status->valuestring);
    else {
        const cJSON *process = cJSON_GetObjectItemCaseSensitive(root, "process");
        int alive = results_process_alive(process);
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(process, "pid");
        if (alive > 0) snprintf(out, size, "running (run_suite %.0f)", pid->valuedouble);
        else if (alive == 0)
            snprintf(out, size, "failed: its run_suite (process %.0f) ended without recording an end (killed, or "
                     "its disk full)", pid->valuedouble);
        else snprintf(out, size, "running, or ended without recording an end (run.json names no process)");
    }
    cJSON_Delete(root);
    return out;
}

cJSON *results_read_json(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
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
    errno = 0; /* read: a parse failure is not a read error */
    return root;
}
