/* The window measurement's results (see window_results.h and metrics.h). */
#include "results/window_results.h"
#include "results/fields.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "base/spread.h"

static const job_window *window_of(const job_record *job, int w) {
    for (int k = 0; k < job->window_count; k++)
        if (job->windows[k].window == w) return &job->windows[k];
    return NULL;
}

/* When job j trained: its window events' interval, else its go to its end. 0 when it never did. */
static int training_interval(const job_record *j, double *start, double *end) {
    *start = NAN, *end = NAN;
    for (int k = 0; k < j->window_count; k++) {
        const job_window *w = &j->windows[k];
        if (!isnan(w->train_start) && (isnan(*start) || w->train_start < *start)) *start = w->train_start;
        if (!isnan(w->train_end) && (isnan(*end) || w->train_end > *end)) *end = w->train_end;
    }
    if (isnan(*start) || isnan(*end)) *start = j->t_go, *end = job_end_time(j);
    return !isnan(*start) && !isnan(*end) && *end > *start;
}

double results_window_overlap(const job_record *jobs, int count, int i, int w) {
    const job_window *mine = window_of(&jobs[i], w);
    if (!mine || !(mine->t1 > mine->t0)) return NAN;
    double from = mine->t0, to = mine->t1;
    for (int j = 0; j < count; j++) {
        double start, end;
        if (j == i) continue;
        if (!training_interval(&jobs[j], &start, &end)) return 0;
        if (start > from) from = start;
        if (end < to) to = end;
    }
    return to > from ? (to - from) / (mine->t1 - mine->t0) : 0;
}

int results_overlap_flagged(const run_summary *s, int i) {
    return s->window_length_s > 0 && !s->sequential && !(s->overlap[i] >= RESULTS_MIN_OVERLAP);
}

void results_window_summarize(const job_record *jobs, int count, run_summary *s) {
    for (int i = 0; i < count && i < MIX_MAX_JOBS; i++) {
        double rates[JOB_MAX_WINDOWS];
        s->overlap[i] = NAN;
        for (int w = 0; w < JOB_MAX_WINDOWS; w++) {
            const job_window *jw = w < s->window_count ? window_of(&jobs[i], w) : NULL;
            s->rate_in_window[i][w] = rates[w] = jw ? jw->samples_per_s : NAN;
            double o = jw ? results_window_overlap(jobs, count, i, w) : NAN;
            if (!isnan(o) && (isnan(s->overlap[i]) || o < s->overlap[i])) s->overlap[i] = o;
        }
        s->window_rate[i] = spread_of(rates, s->window_count).median;
        /* a failed job's windows are not compared (it did not train through them) */
        if (jobs[i].status != JOB_OK) s->window_rate[i] = NAN;
    }
    /* the samples trained in each window, all jobs' (a job without the window: unknown, since the GPU
     * spent energy on its steps all the same) */
    for (int w = 0; w < s->window_count && w < JOB_MAX_WINDOWS; w++) {
        double samples = 0;
        for (int i = 0; i < count && !isnan(samples); i++) {
            const job_window *jw = window_of(&jobs[i], w);
            samples = jw && jw->samples >= 0 ? samples + jw->samples : NAN;
        }
        s->window_samples[w] = count > 0 ? samples : NAN;
    }
}

/* Energy per sample over the windows (run_summary.h): the windows' energy and samples summed, or
 * the note saying which is missing where the caller left none. */
static void window_energy_compare(run_summary *s) {
    double energy = 0, samples = 0;
    int missing_energy = -1, missing_samples = -1;
    for (int w = 0; w < s->windows_measured; w++) {
        if (isnan(s->window_energy_j[w]) && missing_energy < 0) missing_energy = w;
        if (isnan(s->window_samples[w]) && missing_samples < 0) missing_samples = w;
        energy += s->window_energy_j[w];
        samples += s->window_samples[w];
    }
    s->window_energy_total_j = s->windows_measured ? energy : NAN;
    s->window_samples_total = s->windows_measured ? samples : NAN;
    s->window_energy_per_sample_j = energy >= 0 && samples > 0 ? energy / samples : NAN;
    char *note = s->window_energy_note;
    size_t size = sizeof s->window_energy_note;
    if (!isnan(s->window_energy_per_sample_j)) note[0] = 0;
    if (!isnan(s->window_energy_per_sample_j) || note[0]) return; /* known, or the caller said why not */
    if (!s->windows_measured) snprintf(note, size, "no common window was measured");
    else if (missing_samples >= 0)
        snprintf(note, size, "a job reported no samples for window %d (it failed or stopped before it ended)",
                 missing_samples);
    else if (missing_energy >= 0) snprintf(note, size, "the GPU's energy over window %d is unknown", missing_energy);
    else snprintf(note, size, "no step completed inside the windows");
}

void results_window_compare(run_summary *s, const metrics_input *median_in) {
    s->windows_measured = s->window_count < JOB_MAX_WINDOWS ? s->window_count : JOB_MAX_WINDOWS;
    for (int w = 0; w < s->windows_measured; w++) {
        metrics_input in = *median_in;
        for (int i = 0; i < s->job_count; i++)
            in.jobs[i].rate = isnan(s->window_rate[i]) ? NAN : s->rate_in_window[i][w];
        run_metrics m;
        metrics_compute(&in, &m);
        s->window_stp[w] = m.stp, s->window_antt[w] = m.antt, s->window_fairness[w] = m.fairness;
    }
    s->metrics.stp = spread_of(s->window_stp, s->windows_measured).median;
    s->metrics.antt = spread_of(s->window_antt, s->windows_measured).median;
    s->metrics.fairness = spread_of(s->window_fairness, s->windows_measured).median;
    window_energy_compare(s);
}

static double median_field(const job_record *job, const run_summary *s, size_t offset) {
    double v[JOB_MAX_WINDOWS];
    int n = 0;
    for (int w = 0; w < s->window_count && w < JOB_MAX_WINDOWS; w++) {
        const job_window *jw = window_of(job, w);
        if (jw) v[n++] = *(const double *)((const char *)jw + offset);
    }
    return spread_of(v, n).median;
}

static const struct { const char *key; size_t offset; int decimals; } WINDOW_FIELDS[] = {
    {"window_steps", offsetof(job_window, steps), 0},
    {"window_step_ms_median", offsetof(job_window, step_ms_median), 3},
    {"window_step_ms_p10", offsetof(job_window, step_ms_p10), 3},
    {"window_step_ms_p90", offsetof(job_window, step_ms_p90), 3},
    {"window_step_ms_p99", offsetof(job_window, step_ms_p99), 3},
};
#define WINDOW_FIELD_COUNT (sizeof WINDOW_FIELDS / sizeof WINDOW_FIELDS[0])

void results_window_csv_header(FILE *f) {
    fprintf(f, ",window_samples_per_s,window_overlap,overlap_flag,windows");
    for (size_t k = 0; k < WINDOW_FIELD_COUNT; k++) fprintf(f, ",%s", WINDOW_FIELDS[k].key);
}

void results_window_csv_row(FILE *f, const job_record *job, const run_summary *s, int i) {
    fputc(',', f);
    results_csv_number(f, s->window_rate[i], 3);
    fputc(',', f);
    results_csv_number(f, s->overlap[i], 4);
    fprintf(f, ",%d,%d", results_overlap_flagged(s, i), job->window_count);
    for (size_t k = 0; k < WINDOW_FIELD_COUNT; k++) {
        fputc(',', f);
        results_csv_number(f, median_field(job, s, WINDOW_FIELDS[k].offset), WINDOW_FIELDS[k].decimals);
    }
}

void results_window_json_run(cJSON *root, const run_summary *s) {
    cJSON_AddNumberToObject(root, "window_length_s", s->window_length_s);
    cJSON_AddNumberToObject(root, "windows", s->window_count);
    cJSON_AddNumberToObject(root, "min_overlap", RESULTS_MIN_OVERLAP);
    cJSON_AddItemToObject(root, "stp_spread", spread_json(spread_of(s->window_stp, s->windows_measured)));
    cJSON_AddItemToObject(root, "antt_spread", spread_json(spread_of(s->window_antt, s->windows_measured)));
    cJSON_AddItemToObject(root, "fairness_spread", spread_json(spread_of(s->window_fairness, s->windows_measured)));
    results_json_number(root, "window_energy_j", s->window_energy_total_j);
    results_json_number(root, "window_samples", s->window_samples_total);
    results_json_number(root, "window_energy_per_sample_j", s->window_energy_per_sample_j);
    if (s->window_energy_note[0]) cJSON_AddStringToObject(root, "window_energy_note", s->window_energy_note);
    cJSON *list = cJSON_AddArrayToObject(root, "window_metrics");
    for (int w = 0; w < s->windows_measured; w++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "window", w);
        results_json_number(o, "stp", s->window_stp[w]);
        results_json_number(o, "antt", s->window_antt[w]);
        results_json_number(o, "fairness", s->window_fairness[w]);
        results_json_number(o, "energy_j", s->window_energy_j[w]);
        results_json_number(o, "samples", s->window_samples[w]);
        cJSON_AddItemToArray(list, o);
    }
}

void results_window_json_job(cJSON *o, const job_record *jobs, const run_summary *s, int i) {
    const job_record *job = &jobs[i];
    results_json_number(o, "window_samples_per_s", s->window_rate[i]);
    cJSON_AddItemToObject(o, "window_samples_per_s_spread", spread_json(spread_of(s->rate_in_window[i], s->window_count)));
    results_json_number(o, "window_overlap", s->overlap[i]);
    cJSON_AddBoolToObject(o, "overlap_flag", results_overlap_flagged(s, i));
    cJSON *list = cJSON_AddArrayToObject(o, "windows");
    for (int k = 0; k < job->window_count; k++) {
        const job_window *w = &job->windows[k];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "window", w->window);
        const struct { const char *key; double v; } f[] = {
            {"t0", w->t0}, {"t1", w->t1}, {"steps", w->steps}, {"samples", w->samples},
            {"samples_per_s", w->samples_per_s}, {"step_ms_median", w->step_ms_median},
            {"step_ms_p10", w->step_ms_p10}, {"step_ms_p90", w->step_ms_p90}, {"step_ms_p99", w->step_ms_p99},
            {"step_ms_count", w->step_ms_count}, {"train_start", w->train_start}, {"train_end", w->train_end},
            {"overlap", results_window_overlap(jobs, s->job_count, i, w->window)}};
        for (size_t n = 0; n < sizeof f / sizeof f[0]; n++) results_json_number(e, f[n].key, f[n].v);
        cJSON_AddItemToArray(list, e);
    }
}
