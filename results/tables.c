/* The printed tables of a run and the comparison across runs (see results.h): one row per job,
 * one per mode (--mode all), one per layout (--mig-layouts). A sum of samples/s appears only
 * where every job is the same workload. */
#define _GNU_SOURCE
#include "results/results.h"

#include <math.h>
#include <string.h>

#include "results/repeats.h"
#include "base/spread.h"

void results_format_bytes(char *out, size_t size, double bytes) {
    if (isnan(bytes)) snprintf(out, size, "-");
    else if (bytes >= 1073741824.0) snprintf(out, size, "%.2f GiB", bytes / 1073741824.0);
    else snprintf(out, size, "%.0f MiB", bytes / 1048576.0);
}

static void format_number(char *out, size_t size, double v, const char *fmt) {
    if (isnan(v)) snprintf(out, size, "-");
    else snprintf(out, size, fmt, v);
}

static int any_interference(const run_summary *s) {
    for (int i = 0; i < s->job_count; i++)
        if (!isnan(s->metrics.jobs[i].interference)) return 1;
    return 0;
}

void results_print_table(FILE *out, const job_record *jobs, int count, const run_summary *s) {
    const run_metrics *m = &s->metrics;
    int iso = any_interference(s);
    fprintf(out, "\n%-4s %-24s %-16s %-11s %6s %6s %10s %12s %11s %7s %9s %10s%s  %s\n", "job", "label",
            "model", "data", "batch", "epoch", "seconds", "samples/s", "peak mem", "norm.", "slowdown",
            "J/sample", iso ? " interfer." : "", "status");
    for (int i = 0; i < count; i++) {
        const job_record *j = &jobs[i];
        char secs[32], rate[32], mem[32], norm[32], slow[32], eps[32], ir[32] = "";
        format_number(secs, sizeof secs, s->timed_s[i], "%.3f");
        format_number(rate, sizeof rate, s->window_length_s > 0 ? s->window_rate[i] : s->timed_rate[i],
                      results_overlap_flagged(s, i) ? "%.1f*" : "%.1f");
        results_format_bytes(mem, sizeof mem, s->peak_bytes[i]);
        format_number(norm, sizeof norm, m->jobs[i].normalized, "%.2f");
        format_number(slow, sizeof slow, s->slowdown[i], "%.2fx");
        format_number(eps, sizeof eps, m->jobs[i].energy_per_sample, "%.4f");
        if (iso) format_number(ir, sizeof ir, m->jobs[i].interference, "%.2f");
        fprintf(out, "%-4d %-24.24s %-16s %-11s %6d %6d %10s %12s %11s %7s %9s %10s%s%*s  %s%s%s\n", i,
                j->spec.label, j->spec.model, j->spec.data, j->spec.batch, s->timed_epoch[i], secs,
                rate, mem, norm, slow, eps, iso ? " " : "", iso ? 9 : 0, ir, results_status_name(j->status),
                j->reason[0] ? ": " : "", j->reason);
    }
    char span[32], agg[64] = "", stp[32], antt[32], fair[32], speed[32], energy[32], ratio[32];
    format_number(span, sizeof span, s->makespan_s, "%.3f s");
    if (s->same_workload && !isnan(s->aggregate_samples_per_s))
        snprintf(agg, sizeof agg, ", %.1f samples/s in total", s->aggregate_samples_per_s);
    format_number(stp, sizeof stp, m->stp, "%.2f");
    format_number(antt, sizeof antt, m->antt, "%.2f");
    format_number(fair, sizeof fair, m->fairness, "%.2f");
    if (s->windows_measured > 1) { /* the windows' spread: "median [min-max]" */
        spread_format(stp, sizeof stp, spread_of(s->window_stp, s->windows_measured), "%.2f");
        spread_format(antt, sizeof antt, spread_of(s->window_antt, s->windows_measured), "%.2f");
        spread_format(fair, sizeof fair, spread_of(s->window_fairness, s->windows_measured), "%.2f");
    }
    format_number(speed, sizeof speed, s->speedup, "%.2fx");
    format_number(energy, sizeof energy, s->energy_j, "%.1f J");
    format_number(ratio, sizeof ratio, s->energy_vs_serial, "%.2fx");
    fprintf(out, "%-4s %s: %d ok, %d failed, %d diverged (%s); makespan %s%s; STP %s, ANTT %s, "
            "fairness %s; speed-up vs serial %s, energy %s (%s of serial)\n",
            "all", s->mode, s->ok, s->failed, s->diverged, s->status, span, agg, stp, antt, fair, speed,
            energy, ratio);
    if (iso) {
        char lo[32], mean[32];
        format_number(lo, sizeof lo, m->interference_min, "%.2f");
        format_number(mean, sizeof mean, m->interference_mean, "%.2f");
        fprintf(out, "     interference ratio (samples/s beside the others / alone in the same partition): "
                "mean %s, lowest %s%s%s\n", mean, lo, s->partition_source[0] ? "; solo runs in " : "",
                s->partition_source);
    }
    if (s->window_length_s > 0) {
        int flagged = 0;
        for (int i = 0; i < count; i++) flagged |= results_overlap_flagged(s, i);
        fprintf(out, "     samples/s over %d common window(s) of %g s after every job's warm-up (\"epoch\": the last, "
                "cut at stop)%s\n", s->window_count, s->window_length_s,
                flagged ? "; * the other jobs trained through less than 95% of the window: not collocated" : "");
    }
    if (!s->same_workload)
        fprintf(out, "     (the jobs are different workloads: their samples/s are not summed)\n");
    fputc('\n', out);
}

static double mean_slowdown(const run_summary *s) {
    double sum = 0;
    int n = 0;
    for (int i = 0; i < s->job_count; i++)
        if (!isnan(s->slowdown[i])) sum += s->slowdown[i], n++;
    return n ? sum / n : NAN;
}

/* The columns of the comparison, in print, CSV and JSON; samples/s only for identical jobs. */
typedef struct comparison_column {
    const char *key, *title, *format;
    int width;
} comparison_column;

static const comparison_column comparison_columns[] = {
    {"makespan_s", "makespan s", "%.3f", 11},     {"stp", "STP", "%.2f", 6},
    {"antt", "ANTT", "%.2f", 6},                   {"fairness", "fairness", "%.2f", 9},
    {"speedup_vs_serial", "speed-up", "%.2fx", 9}, {"energy_j", "energy J", "%.1f", 11},
    {"energy_vs_serial", "energy/x", "%.2fx", 9},  {"mean_slowdown", "mean slowdown", "%.2fx", 14},
    {"interference_ratio_mean", "interference", "%.2f", 13},
    {"aggregate_samples_per_s", "samples/s", "%.1f", 12},
};
#define COMPARISON_COLUMNS ((int)(sizeof comparison_columns / sizeof comparison_columns[0]))

static void comparison_values(const run_summary *s, double *v) {
    const double values[COMPARISON_COLUMNS] = {
        s->makespan_s,       s->metrics.stp,    s->metrics.antt,  s->metrics.fairness,
        s->speedup,          s->energy_j,       s->energy_vs_serial, mean_slowdown(s),
        s->metrics.interference_mean, s->aggregate_samples_per_s};
    memcpy(v, values, sizeof values);
}

/* The last column (samples/s) only when every run's jobs are the same workload. */
static int comparison_column_count(const run_summary *runs, int count) {
    int same = count > 0;
    for (int r = 0; r < count; r++) same &= runs[r].same_workload;
    return same ? COMPARISON_COLUMNS : COMPARISON_COLUMNS - 1;
}

/* With --windows K (K > 1): the modes ranked by each run metric over their windows, by the one
 * ranking rule (results/repeats.h). Returns how many lines were filled (0: no run has windows). */
enum { WINDOW_RANKED = 3 };
static int window_rankings(const run_summary *runs, int count, char lines[WINDOW_RANKED][512],
                           const char *keys[WINDOW_RANKED]) {
    static const char *labels[WINDOW_RANKED] = {"STP", "ANTT", "fairness"};
    static const char *names_of[WINDOW_RANKED] = {"stp", "antt", "fairness"};
    int with_windows = 0;
    for (int r = 0; r < count; r++) with_windows |= runs[r].windows_measured > 1;
    if (!with_windows || count > REPEATS_MAX_MODES) return 0;
    const char *names[REPEATS_MAX_MODES];
    spread spreads[REPEATS_MAX_MODES];
    for (int m = 0; m < WINDOW_RANKED; m++) {
        for (int r = 0; r < count; r++) {
            const run_summary *s = &runs[r];
            const double *v = m == 0 ? s->window_stp : m == 1 ? s->window_antt : s->window_fairness;
            names[r] = s->mode;
            spreads[r] = spread_of(v, s->windows_measured);
        }
        repeats_rank_line(lines[m], sizeof lines[m], labels[m], names, spreads, count, m == 1);
        keys[m] = names_of[m];
    }
    return WINDOW_RANKED;
}

void results_print_comparison(FILE *out, const run_summary *runs, int count) {
    int columns = comparison_column_count(runs, count);
    fprintf(out, "\n%-12s %-12s", "mode", "status");
    for (int k = 0; k < columns; k++) fprintf(out, " %*s", comparison_columns[k].width, comparison_columns[k].title);
    fputc('\n', out);
    for (int r = 0; r < count; r++) {
        double v[COMPARISON_COLUMNS];
        comparison_values(&runs[r], v);
        fprintf(out, "%-12s %-12s", runs[r].mode, runs[r].status);
        for (int k = 0; k < columns; k++) {
            char cell[32];
            format_number(cell, sizeof cell, v[k], comparison_columns[k].format);
            fprintf(out, " %*s", comparison_columns[k].width, cell);
        }
        fputc('\n', out);
    }
    if (columns < COMPARISON_COLUMNS)
        fprintf(out, "(different workloads: no summed samples/s; STP and ANTT compare the modes)\n");
    char lines[WINDOW_RANKED][512];
    const char *keys[WINDOW_RANKED];
    int ranked = window_rankings(runs, count, lines, keys);
    if (ranked) fprintf(out, "\nranking over the windows (\">\" only where their ranges do not overlap, else \"~\"):\n");
    for (int m = 0; m < ranked; m++) fprintf(out, "  %s\n", lines[m]);
    fputc('\n', out);
}

int results_write_comparison(const char *dir, const run_summary *runs, int count, char *err,
                             size_t err_size) {
    results_text t;
    FILE *f = results_text_open(&t);
    if (!f) {
        snprintf(err, err_size, "out of memory writing comparison.csv");
        return -1;
    }
    int columns = comparison_column_count(runs, count);
    cJSON *root = cJSON_CreateArray();
    fprintf(f, "mode,status,jobs_ok");
    for (int k = 0; k < columns; k++) fprintf(f, ",%s", comparison_columns[k].key);
    fputc('\n', f);
    for (int r = 0; r < count; r++) {
        const run_summary *s = &runs[r];
        double v[COMPARISON_COLUMNS];
        comparison_values(s, v);
        fprintf(f, "%s,%s,%d", s->mode, s->status, s->ok);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "mode", s->mode);
        cJSON_AddStringToObject(o, "status", s->status);
        cJSON_AddNumberToObject(o, "jobs_ok", s->ok);
        for (int k = 0; k < columns; k++) {
            fputc(',', f);
            results_csv_number(f, v[k], 6);
            results_json_number(o, comparison_columns[k].key, v[k]);
        }
        fputc('\n', f);
        cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
        for (int i = 0; i < s->job_count; i++) {
            cJSON *j = cJSON_CreateObject();
            results_json_number(j, "normalized_throughput", s->metrics.jobs[i].normalized);
            results_json_number(j, "slowdown", s->slowdown[i]);
            results_json_number(j, "energy_per_sample_j", s->metrics.jobs[i].energy_per_sample);
            results_json_number(j, "interference_ratio", s->metrics.jobs[i].interference);
            cJSON_AddItemToArray(jobs, j);
        }
        cJSON_AddItemToArray(root, o);
    }
    int rc = results_text_commit(&t, dir, "comparison.csv", err, err_size);
    if (rc == 0) rc = results_write_json(dir, "comparison.json", root, err, err_size);
    cJSON_Delete(root);
    char lines[WINDOW_RANKED][512];
    const char *keys[WINDOW_RANKED];
    int ranked = window_rankings(runs, count, lines, keys);
    if (rc == 0 && ranked) {
        cJSON *rankings = cJSON_CreateObject();
        cJSON_AddStringToObject(rankings, "over", "windows");
        for (int m = 0; m < ranked; m++) cJSON_AddStringToObject(rankings, keys[m], lines[m]);
        rc = results_write_json(dir, "rankings.json", rankings, err, err_size);
        cJSON_Delete(rankings);
    }
    return rc;
}

/* --- the layout sweep ------------------------------------------------------------------------ */

static void job_ratios(const run_summary *s, int interference, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < s->job_count && used < size; i++) {
        double v = interference ? s->metrics.jobs[i].interference : s->metrics.jobs[i].normalized;
        int n = isnan(v) ? snprintf(out + used, size - used, "%s-", i ? " " : "")
                         : snprintf(out + used, size - used, "%s%.2f", i ? " " : "", v);
        if (n > 0) used += (size_t)n;
    }
}

void results_print_layouts(FILE *out, const char *const *layouts, const int *sms, const run_summary *runs,
                           int count) {
    fprintf(out, "\n%-34s %5s %-10s %6s %6s %9s %9s %13s  %-22s %s\n", "layout (job order)", "SMs", "status",
            "STP", "ANTT", "fairness", "speed-up", "interference", "per job: normalized", "interference");
    for (int r = 0; r < count; r++) {
        const run_summary *s = &runs[r];
        char stp[32], antt[32], fair[32], speed[32], ir[32], np[256], irs[256];
        format_number(stp, sizeof stp, s->metrics.stp, "%.2f");
        format_number(antt, sizeof antt, s->metrics.antt, "%.2f");
        format_number(fair, sizeof fair, s->metrics.fairness, "%.2f");
        format_number(speed, sizeof speed, s->speedup, "%.2fx");
        format_number(ir, sizeof ir, s->metrics.interference_mean, "%.2f");
        job_ratios(s, 0, np, sizeof np);
        job_ratios(s, 1, irs, sizeof irs);
        fprintf(out, "%-34s %5d %-10s %6s %6s %9s %9s %13s  %-22s %s\n", layouts[r], sms[r],
                s->status ? s->status : "-", stp, antt, fair, speed, ir, np, irs);
    }
    fprintf(out, "(interference: samples/s beside the other jobs / alone in the same partition; 1.00 = isolated)\n\n");
}

int results_write_layouts(const char *dir, const char *const *layouts, const int *sms,
                          const run_summary *runs, int count, char *err, size_t err_size) {
    results_text t;
    FILE *f = results_text_open(&t);
    if (!f) {
        snprintf(err, err_size, "out of memory writing layouts.csv");
        return -1;
    }
    int jobs = 0;
    for (int r = 0; r < count; r++)
        if (runs[r].job_count > jobs) jobs = runs[r].job_count;
    fprintf(f, "layout,sms,status,stp,antt,fairness,speedup_vs_serial,energy_vs_serial,"
               "interference_ratio_mean,interference_ratio_min");
    for (int i = 0; i < jobs; i++) fprintf(f, ",job%d_normalized_throughput,job%d_interference_ratio", i, i);
    fputc('\n', f);
    cJSON *root = cJSON_CreateArray();
    for (int r = 0; r < count; r++) {
        const run_summary *s = &runs[r];
        const run_metrics *m = &s->metrics;
        results_csv_field(f, layouts[r]);
        fprintf(f, ",%d,%s", sms[r], s->status ? s->status : "");
        const double v[] = {m->stp, m->antt, m->fairness, s->speedup, s->energy_vs_serial,
                            m->interference_mean, m->interference_min};
        const char *keys[] = {"stp", "antt", "fairness", "speedup_vs_serial", "energy_vs_serial",
                              "interference_ratio_mean", "interference_ratio_min"};
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "layout", layouts[r]);
        cJSON_AddNumberToObject(o, "sms", sms[r]);
        cJSON_AddStringToObject(o, "status", s->status ? s->status : "");
        for (int k = 0; k < 7; k++) {
            fputc(',', f);
            results_csv_number(f, v[k], 4);
            results_json_number(o, keys[k], v[k]);
        }
        cJSON *list = cJSON_AddArrayToObject(o, "jobs");
        for (int i = 0; i < jobs; i++) {
            double np = i < s->job_count ? m->jobs[i].normalized : NAN;
            double ir = i < s->job_count ? m->jobs[i].interference : NAN;
            fputc(',', f);
            results_csv_number(f, np, 4);
            fputc(',', f);
            results_csv_number(f, ir, 4);
            cJSON *j = cJSON_CreateObject();
            results_json_number(j, "normalized_throughput", np);
            results_json_number(j, "interference_ratio", ir);
            results_json_number(j, "solo_in_partition_samples_per_s", i < s->job_count ? s->partition_rate[i] : NAN);
            cJSON_AddItemToArray(list, j);
        }
        fputc('\n', f);
        cJSON_AddItemToArray(root, o);
    }
    int rc = results_text_commit(&t, dir, "layouts.csv", err, err_size);
    if (rc == 0) rc = results_write_json(dir, "layouts.json", root, err, err_size);
    cJSON_Delete(root);
    return rc;
}
