/* The window measurement's arithmetic on a job's step completion times (see step_window.h). */
#include "runner/train/step_window.h"
#include "base/spread.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void step_windows_init(step_windows *w, int batch) {
    memset(w, 0, sizeof *w);
    w->batch = batch;
    w->train_start = w->train_end = NAN;
}

void step_windows_free(step_windows *w) {
    free(w->steps);
    w->steps = NULL;
    w->first = w->count = w->cap = 0;
    cJSON_Delete(w->report);
    free(w->report_ms);
    w->report = NULL;
    w->report_ms = NULL;
}

/* Steps older than both the history span and the oldest window still to report go. */
static void forget_old(step_windows *w) {
    double keep_from = w->train_end - STEP_WINDOW_HISTORY_S;
    for (int k = 0; k < w->window_count; k++)
        if (!w->windows[k].reported && w->windows[k].t0 < keep_from) keep_from = w->windows[k].t0;
    while (w->count > 0 && w->steps[w->first].t_end < keep_from) w->first++, w->count--;
    if (w->first == 0) return; /* nothing forgotten (and no buffer yet before the first step) */
    memmove(w->steps, w->steps + w->first, w->count * sizeof *w->steps);
    w->first = 0;
}

int step_windows_add(step_windows *w, double t_end, double ms) {
    if (isnan(w->train_start)) w->train_start = t_end - ms / 1000.0;
    w->train_end = t_end;
    if (w->first + w->count == w->cap) {
        forget_old(w);
        if (w->count == w->cap) {
            size_t cap = w->cap ? w->cap * 2 : 4096;
            step_done *grown = realloc(w->steps, cap * sizeof *grown);
            if (!grown) return -1;
            w->steps = grown;
            w->cap = cap;
        }
    }
    w->steps[w->first + w->count++] = (step_done){t_end, (float)ms};
    return 0;
}

int step_windows_command(step_windows *w, const char *line) {
    double t0, t1;
    char tail;
    if (strncmp(line, "stop", 4) == 0 && (line[4] == 0 || line[4] == '\r' || line[4] == ' ')) {
        w->stopped = 1;
        return 1;
    }
    if (sscanf(line, "trace %lf %lf %c", &t0, &t1, &tail) == 2) {
        if (!(t1 > t0) || w->traced) return -1;
        w->trace = (step_window_span){t0, t1, 0};
        w->traced = 1;
        return 2;
    }
    if (sscanf(line, "window %lf %lf %c", &t0, &t1, &tail) != 2 || !(t1 > t0) || w->window_count == STEP_WINDOW_MAX)
        return -1;
    w->windows[w->window_count++] = (step_window_span){t0, t1, 0};
    return 0;
}

/* Window `index`'s event; its steps' times, in completion order, in *ordered (malloc'd; NULL when
 * out of memory, and then the event has no quantiles). */
static cJSON *window_event(const step_windows *w, int index, float **ordered, size_t *count) {
    const step_window_span *s = &w->windows[index];
    size_t n = 0;
    float *in_order = malloc((w->count ? w->count : 1) * sizeof *in_order);
    float *ms = malloc((w->count ? w->count : 1) * sizeof *ms);
    if (!in_order || !ms) {
        free(in_order);
        free(ms);
        in_order = ms = NULL;
    }
    for (size_t i = 0; ms && i < w->count; i++) {
        const step_done *d = &w->steps[w->first + i];
        if (d->t_end >= s->t0 && d->t_end <= s->t1) {
            in_order[n] = ms[n] = d->ms;
            n++;
        }
    }
    if (ms) spread_sort_floats(ms, n);
    double samples = (double)n * w->batch;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "window");
    cJSON_AddNumberToObject(e, "window", index);
    cJSON_AddNumberToObject(e, "t0", s->t0);
    cJSON_AddNumberToObject(e, "t1", s->t1);
    cJSON_AddNumberToObject(e, "steps", (double)n);
    cJSON_AddNumberToObject(e, "samples", samples);
    cJSON_AddNumberToObject(e, "samples_per_s", samples / (s->t1 - s->t0));
    const struct { const char *key; size_t num, den; } q[] = {
        {"step_ms_median", 1, 2}, {"step_ms_p10", 1, 10}, {"step_ms_p90", 9, 10}, {"step_ms_p99", 99, 100}};
    for (size_t k = 0; k < sizeof q / sizeof q[0]; k++) {
        if (n && ms) cJSON_AddNumberToObject(e, q[k].key, ms[n * q[k].num / q[k].den]);
        else cJSON_AddNullToObject(e, q[k].key);
    }
    cJSON_AddNumberToObject(e, "step_ms_count", (double)n);
    if (isnan(w->train_start)) cJSON_AddNullToObject(e, "train_start"), cJSON_AddNullToObject(e, "train_end");
    else cJSON_AddNumberToObject(e, "train_start", w->train_start), cJSON_AddNumberToObject(e, "train_end", w->train_end);
    free(ms);
    *ordered = in_order;
    *count = in_order ? n : 0;
    return e;
}

cJSON *step_windows_next_event(step_windows *w, int final) {
    if (!w->report) {
        for (int k = 0; k < w->window_count && !w->report; k++) {
            step_window_span *s = &w->windows[k];
            if (s->reported || !(final || w->train_end > s->t1)) continue;
            s->reported = 1;
            w->report = window_event(w, k, &w->report_ms, &w->report_count);
            w->report_window = k;
            w->report_sent = 0;
        }
        if (!w->report) return NULL;
    }
    cJSON *e = step_times_event("window", w->report_window, w->report_ms, w->report_count, &w->report_sent);
    if (e) return e;
    e = w->report;
    w->report = NULL;
    free(w->report_ms);
    w->report_ms = NULL;
    return e;
}

cJSON *step_times_event(const char *key, int index, const float *ms, size_t count, size_t *first) {
    if (*first >= count) return NULL;
    size_t n = count - *first < STEP_EVENT_STEPS ? count - *first : STEP_EVENT_STEPS;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "event", "steps");
    cJSON_AddNumberToObject(e, key, index);
    cJSON_AddNumberToObject(e, "first", (double)*first);
    cJSON *list = cJSON_AddArrayToObject(e, "ms");
    /* to the microsecond: cJSON prints such a double in its shortest form ("12.345") */
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(list, cJSON_CreateNumber(round(ms[*first + i] * 1000.0) / 1000.0));
    *first += n;
    return e;
}
