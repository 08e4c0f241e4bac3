/* A job's event protocol (see jobs.h): train's JSON lines turned into the job's record, and
 * what the record says once the job has ended. */
#define _GNU_SOURCE
#include "runner/suite/jobs/job_events.h"
#include "runner/suite/jobs/watchdog.h"
#include "base/clock.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

/* --- events -------------------------------------------------------------------------------- */

static double json_number(const cJSON *object, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

static void json_string(const cJSON *object, const char *key, char *out, size_t size) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    if (cJSON_IsString(item) && item->valuestring) snprintf(out, size, "%s", item->valuestring);
}

/* A count, index, step or pid: a number in [0, INT_MAX], its whole part; anything else (absent,
 * negative, beyond what an int holds) reads as NaN, the way a missing one does, so no conversion of
 * what a job wrote can overflow. */
static double json_index(const cJSON *object, const char *key) {
    double v = json_number(object, key);
    return v >= 0 && v <= INT_MAX ? floor(v) : NAN;
}

static int json_flag(const cJSON *object, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);
    if (cJSON_IsBool(item)) return cJSON_IsTrue(item);
    if (cJSON_IsNumber(item)) return item->valuedouble != 0;
    return -1;
}

/* A "steps" event's times (runner/train/step_window.h) appended to the record; a malformed one
 * adds nothing, a time that is not a finite duration a float holds is skipped. */
static void take_steps(job_record *job, const cJSON *root) {
    double window = json_index(root, "window"), epoch = json_index(root, "epoch"), first = json_index(root, "first");
    const cJSON *ms = cJSON_GetObjectItemCaseSensitive(root, "ms");
    if (isnan(window) == isnan(epoch) || !(first >= 0) || !cJSON_IsArray(ms)) return;
    long step = (long)first;
    for (const cJSON *item = ms->child; item && step < INT_MAX; item = item->next) {
        step++;
        /* kept as a float: a time beyond float's range would become an infinity */
        if (!cJSON_IsNumber(item) || !(item->valuedouble >= 0 && item->valuedouble <= FLT_MAX)) continue;
        if (job->step_count == job->step_cap) {
            long cap = job->step_cap ? job->step_cap * 2 : 4096;
            job_step *grown = cap <= JOB_MAX_STEP_TIMES ? realloc(job->steps, (size_t)cap * sizeof *grown) : NULL;
            if (!grown) {
                job->steps_lost++;
                continue;
            }
            job->steps = grown, job->step_cap = cap;
        }
        job->steps[job->step_count++] = (job_step){isnan(window) ? -1 : (int)window, isnan(epoch) ? -1 : (int)epoch,
                                                   (int)step, (float)item->valuedouble};
    }
}

/* A "kernels" event (run_suite --kernels): where the job's traced files are, or why there are none.
 * One without files and without an error is recorded as that. */
static void take_kernels(job_record *job, const cJSON *root) {
    job_kernels *k = &job->kernels;
    memset(k, 0, sizeof *k);
    k->reported = 1;
    json_string(root, "file", k->file, sizeof k->file);
    json_string(root, "intervals", k->intervals, sizeof k->intervals);
    json_string(root, "error", k->error, sizeof k->error);
    if (!k->error[0] && (!k->file[0] || !k->intervals[0]))
        snprintf(k->error, sizeof k->error, "kernels event without \"file\" and \"intervals\"");
    static const struct { const char *key; size_t offset; } fields[] = {
        {"kernels", offsetof(job_kernels, kernels)}, {"dropped", offsetof(job_kernels, dropped)},
        {"steps", offsetof(job_kernels, steps)}, {"t0", offsetof(job_kernels, t0)},
        {"t1", offsetof(job_kernels, t1)}, {"step_ms", offsetof(job_kernels, step_ms)}};
    for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
        *(double *)((char *)k + fields[f].offset) = json_number(root, fields[f].key);
}

void job_kernels_describe(const job_record *job, char *out, size_t size) {
    const job_kernels *k = &job->kernels;
    if (k->error[0]) snprintf(out, size, "not traced: %s", k->error);
    else snprintf(out, size, "traced %.0f kernels over %.0f steps (%.0f dropped) into %s", k->kernels, k->steps,
                  k->dropped, k->file);
}

const char *job_handle_line(job_record *job, const char *line, double now) {
    cJSON *root = cJSON_Parse(line);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return NULL;
    }
    const cJSON *event = cJSON_GetObjectItemCaseSensitive(root, "event");
    const char *phase = NULL;
    if (job->proc->phase == JOB_TRAINING) jobs_note_event(job, clock_monotonic());
    const char *name = cJSON_IsString(event) ? event->valuestring : "";
    double t = json_number(root, "t");
    if (strcmp(name, "setup") == 0) {
        job->have_setup = 1;
        json_string(root, "device", job->device, sizeof job->device);
        job->params = json_number(root, "params");
        job->footprint_bytes = json_number(root, "footprint_bytes");
        job->mps = json_flag(root, "mps");
        job->mig = json_flag(root, "mig");
        double pid = json_index(root, "pid");
        job->child_pid = isnan(pid) ? 0 : (long)pid;
    } else if (strcmp(name, "ready") == 0) {
        if (job->proc->phase == JOB_STARTED) {
            job->proc->phase = JOB_READY;
            job->t_ready = isnan(t) ? now : t;
            phase = "ready";
        }
    } else if (strcmp(name, "epoch") == 0) {
        if (job->epoch_count >= JOB_MAX_EPOCHS) {
            job->epochs_dropped++;
        } else {
            job_epoch *e = &job->epochs[job->epoch_count++];
            double k = json_index(root, "epoch");
            e->epoch = isnan(k) ? job->epoch_count : (int)k;
            e->warmup = json_flag(root, "warmup") == 1;
            static const struct { const char *key; size_t offset; } fields[] = {
                {"samples", offsetof(job_epoch, samples)}, {"seconds", offsetof(job_epoch, seconds)},
                {"samples_per_s", offsetof(job_epoch, samples_per_s)}, {"loss", offsetof(job_epoch, loss)},
                {"accuracy", offsetof(job_epoch, accuracy)}, {"peak_bytes", offsetof(job_epoch, peak_bytes)},
                {"t_start", offsetof(job_epoch, t_start)}, {"t_end", offsetof(job_epoch, t_end)},
                {"step_ms_median", offsetof(job_epoch, step_ms_median)},
                {"step_ms_p90", offsetof(job_epoch, step_ms_p90)},
                {"cpu_cores", offsetof(job_epoch, cpu_cores)},
                {"host_decoded", offsetof(job_epoch, host_decoded)}};
            for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
                *(double *)((char *)e + fields[f].offset) = json_number(root, fields[f].key);
            const cJSON *loss = cJSON_GetObjectItemCaseSensitive(root, "loss");
            e->diverged = json_flag(root, "diverged") == 1 || cJSON_IsNull(loss);
            phase = "epoch";
        }
    } else if (strcmp(name, "window") == 0) {
        double k = json_index(root, "window");
        if (job->window_count < JOB_MAX_WINDOWS && !isnan(k)) {
            job_window *w = &job->windows[job->window_count++];
            w->window = (int)k;
            static const struct { const char *key; size_t offset; } fields[] = {
                {"t0", offsetof(job_window, t0)}, {"t1", offsetof(job_window, t1)},
                {"steps", offsetof(job_window, steps)}, {"samples", offsetof(job_window, samples)},
                {"samples_per_s", offsetof(job_window, samples_per_s)},
                {"step_ms_median", offsetof(job_window, step_ms_median)},
                {"step_ms_p10", offsetof(job_window, step_ms_p10)}, {"step_ms_p90", offsetof(job_window, step_ms_p90)},
                {"step_ms_p99", offsetof(job_window, step_ms_p99)},
                {"step_ms_count", offsetof(job_window, step_ms_count)},
                {"train_start", offsetof(job_window, train_start)}, {"train_end", offsetof(job_window, train_end)}};
            for (size_t f = 0; f < sizeof fields / sizeof fields[0]; f++)
                *(double *)((char *)w + fields[f].offset) = json_number(root, fields[f].key);
            phase = "window";
        }
    } else if (strcmp(name, "kernels") == 0) {
        take_kernels(job, root);
        phase = "kernels";
    } else if (strcmp(name, "steps") == 0) {
        take_steps(job, root);
    } else if (strcmp(name, "progress") == 0 || strcmp(name, "block") == 0) {
        /* "step" counts within the epoch ("steps" of them): the record names the run's step */
        double step = json_index(root, "step"), steps = json_index(root, "steps"), epoch = json_index(root, "epoch");
        if (step > 0) /* each at most INT_MAX: the product fits a long */
            job->last_step = (long)step + (steps >= 0 && epoch > 1 ? ((long)epoch - 1) * (long)steps : 0);
    } else if (strcmp(name, "fault") == 0) {
        json_string(root, "kind", job->fault_kind, sizeof job->fault_kind);
        if (!job->fault_kind[0]) snprintf(job->fault_kind, sizeof job->fault_kind, "unnamed");
        double step = json_index(root, "step");
        job->fault_step = isnan(step) ? 0 : (long)step;
        if (job->fault_step > 0) job->last_step = job->fault_step;
        job->t_fault = isnan(t) ? now : t;
    } else if (strcmp(name, "done") == 0) {
        job->saw_done = 1;
        job->t_done = isnan(t) ? now : t;
    } else if (strcmp(name, "error") == 0) {
        json_string(root, "message", job->error_message, sizeof job->error_message);
        if (!job->error_message[0]) snprintf(job->error_message, sizeof job->error_message, "error event without a message");
    }
    cJSON_Delete(root);
    return phase;
}

/* " at step 50 (injected fault sigkill)", " in epoch 2": where the job was when it ended. */
static void where_it_was(const job_record *job, char *out, size_t size) {
    int n = 0;
    if (job->last_step > 0) n = snprintf(out, size, " at step %ld", job->last_step);
    else if (job->proc->phase >= JOB_TRAINING || job->epoch_count > 0)
        n = snprintf(out, size, " in epoch %d", job->epoch_count + 1);
    else out[0] = 0;
    if (job->fault_kind[0] && !strstr(job->error_message, "injected fault") && n >= 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, " (injected fault %s)", job->fault_kind);
}

void job_settle(job_record *job) {
    int diverged_epoch = 0;
    for (int i = 0; i < job->epoch_count && !diverged_epoch; i++)
        if (job->epochs[i].diverged) diverged_epoch = job->epochs[i].epoch;
    char tail[600] = "", where[96];
    where_it_was(job, where, sizeof where);
    if (job->error_message[0]) snprintf(tail, sizeof tail, "%s: %s", where, job->error_message);
    else if (job->proc->err_last[0])
        snprintf(tail, sizeof tail, "%s; last stderr line: %s", where, job->proc->err_last);
    else snprintf(tail, sizeof tail, "%s", where);
    if (job->reason[0]) { /* the runner ended it: not started, not ready, stopped, stalled */
        job->status = JOB_FAILED;
        size_t n = strlen(job->reason);
        if (job->error_message[0] || job->stalled) snprintf(job->reason + n, sizeof job->reason - n, "%s", tail);
        return;
    }
    int st = job->proc->wait_status;
    if (WIFSIGNALED(st)) {
        job->status = diverged_epoch ? JOB_DIVERGED : JOB_FAILED;
        snprintf(job->reason, sizeof job->reason, "killed by signal %d (%s)%s", WTERMSIG(st),
                 strsignal(WTERMSIG(st)), tail);
    } else if (diverged_epoch) {
        job->status = JOB_DIVERGED;
        snprintf(job->reason, sizeof job->reason, "loss became NaN in epoch %d (exit %d)%s",
                 diverged_epoch, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                 job->fault_kind[0] ? tail : "");
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        job->status = JOB_FAILED;
        snprintf(job->reason, sizeof job->reason, "exit %d%s", WEXITSTATUS(st), tail);
    } else if (!job->saw_done) {
        job->status = JOB_FAILED;
        snprintf(job->reason, sizeof job->reason, "exited 0 without its done event%s", tail);
    } else {
        job->status = JOB_OK;
        job->reason[0] = 0;
    }
}

/* --- train --dry-run's answer ----------------------------------------------------------------- */

int job_parse_footprint(const char *text, job_footprint *fp, char *err, size_t err_size) {
    memset(fp, 0, sizeof *fp);
    const char *start = strchr(text, '{');
    cJSON *root = start ? cJSON_Parse(start) : NULL;
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "footprint");
    if (!cJSON_IsObject(f) || isnan(json_number(f, "total"))) {
        snprintf(err, err_size, "expected a JSON object with \"footprint\":{...,\"total\":N}, got: %.200s",
                 text);
        cJSON_Delete(root);
        return -1;
    }
    fp->params = json_number(root, "params");
    fp->flops_per_step = json_number(root, "flops_per_step");
    fp->samples_per_epoch = json_number(root, "samples_per_epoch");
    static const struct { const char *key; size_t offset; } parts[] = {
        {"parameters", offsetof(job_footprint, parameters)}, {"gradients", offsetof(job_footprint, gradients)},
        {"optimizer", offsetof(job_footprint, optimizer)}, {"buffers", offsetof(job_footprint, buffers)},
        {"activations", offsetof(job_footprint, activations)}, {"workspace", offsetof(job_footprint, workspace)},
        {"total", offsetof(job_footprint, total)}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        *(double *)((char *)fp + parts[i].offset) = json_number(f, parts[i].key);
    cJSON_Delete(root);
    return 0;
}

double job_demand(const job_footprint *fp, const job_spec *spec, const run_request *r) {
    int epochs = run_request_job_epochs(r, spec);
    long steps_per_epoch = run_request_job_steps(r, spec);
    double steps = steps_per_epoch > 0 ? (double)steps_per_epoch
                   : spec->batch > 0 ? floor(fp->samples_per_epoch / spec->batch) : NAN;
    return fp->flops_per_step * steps * (epochs > 0 ? epochs : 1);
}
