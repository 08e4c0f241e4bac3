/* Repeats of a run summarised across them (see repeats.h). */
#define _GNU_SOURCE
#include "results/repeats.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "results/results.h"

static const repeats_metric RUN_METRICS[] = {
    {"stp", "STP", "%.3f", 0},
    {"antt", "ANTT", "%.3f", 1},
    {"fairness", "fairness", "%.3f", 0},
    {"speedup_vs_serial", "speed-up", "%.3f", 0},
    {"sm_active_pct", "SM activity %", "%.1f", 0},
    {"window_energy_per_sample_j", "J/sample", "%.4g", 1},
};
#define RUN_METRIC_COUNT (int)(sizeof RUN_METRICS / sizeof RUN_METRICS[0])
static const repeats_metric JOB_METRICS[] = {
    {"timed_samples_per_s", "samples/s", "%.0f", 0},
    {"slowdown", "slowdown", "%.3f", 1},
    {"normalized_throughput", "norm. throughput", "%.3f", 0},
};
#define JOB_METRIC_COUNT (int)(sizeof JOB_METRICS / sizeof JOB_METRICS[0])
#define SM_ACTIVITY_KEY "sm_active_pct"

const repeats_metric *repeats_run_metrics(int *count) {
    *count = RUN_METRIC_COUNT;
    return RUN_METRICS;
}

const repeats_metric *repeats_job_metrics(int *count) {
    *count = JOB_METRIC_COUNT;
    return JOB_METRICS;
}

const double *repeats_values(const repeats *r, int m, int metric, int job) {
    const repeats_mode *mode = &r->modes[m];
    if (job < 0) return mode->run + (size_t)metric * REPEATS_MAX;
    return mode->job + ((size_t)metric * MIX_MAX_JOBS + (size_t)job) * REPEATS_MAX;
}

spread repeats_spread(const repeats *r, int m, int metric, int job) {
    return spread_of(repeats_values(r, m, metric, job), r->count);
}

/* --- reading the repeats' folders ----------------------------------------------------------- */

static double number(const cJSON *o, const char *key) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

/* The whole GPU's mean SM activity (timeline.csv's sm_active_pct, rows of unit "gpuN") from the
 * first job's go to the last job's end; NaN where the GPU has no such sensor or no timeline. */
static double sm_activity(const char *dir, double from, double to) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/timeline.csv", dir);
    FILE *f = isnan(from) || isnan(to) ? NULL : fopen(path, "r");
    if (!f) return NAN;
    char *line = NULL;
    size_t cap = 0;
    int t_col = -1, unit_col = -1, sm_col = -1, rows = 0;
    double sum = 0;
    for (int first = 1; getline(&line, &cap, f) > 0; first = 0) {
        line[strcspn(line, "\r\n")] = 0;
        double t = NAN, v = NAN;
        int whole_gpu = 0, col = 0;
        for (char *cell = line, *next; cell; cell = next, col++) {
            next = strchr(cell, ',');
            if (next) *next++ = 0;
            if (first) {
                if (!strcmp(cell, "t")) t_col = col;
                if (!strcmp(cell, "unit")) unit_col = col;
                if (!strcmp(cell, SM_ACTIVITY_KEY)) sm_col = col;
            } else if (col == t_col) {
                t = *cell ? strtod(cell, NULL) : NAN;
            } else if (col == unit_col) {
                whole_gpu = !strncmp(cell, "gpu", 3) && !strchr(cell, '-');
            } else if (col == sm_col) {
                v = *cell ? strtod(cell, NULL) : NAN;
            }
        }
        if (whole_gpu && t >= from && t <= to && isfinite(v)) sum += v, rows++;
    }
    free(line);
    fclose(f);
    return rows ? sum / rows : NAN;
}

static int read_json_file(const char *dir, const char *name, cJSON **out) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *out = results_read_json(path);
    return *out ? 0 : -1;
}

/* Repeat k of mode m from the run folder dir (its summary.json). */
static void add_run(repeats_mode *mode, int k, const char *dir, const cJSON *summary) {
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(summary, "status");
    snprintf(mode->status[k], sizeof mode->status[k], "%s", cJSON_IsString(status) ? status->valuestring : "unknown");
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(summary, "jobs");
    double first_go = NAN, last_end = NAN;
    int j = 0;
    for (const cJSON *job = cJSON_IsArray(jobs) ? jobs->child : NULL; job && j < MIX_MAX_JOBS; job = job->next, j++) {
        const cJSON *label = cJSON_GetObjectItemCaseSensitive(job, "label");
        if (cJSON_IsString(label) && !mode->job_label[j][0])
            snprintf(mode->job_label[j], sizeof mode->job_label[j], "%s", label->valuestring);
        for (int m = 0; m < JOB_METRIC_COUNT; m++)
            mode->job[((size_t)m * MIX_MAX_JOBS + (size_t)j) * REPEATS_MAX + (size_t)k] = number(job, JOB_METRICS[m].key);
        double go = number(job, "go_t"), end = number(job, "end_t");
        if (isfinite(go) && !(go >= first_go)) first_go = go;
        if (isfinite(end) && !(end <= last_end)) last_end = end;
    }
    if (j > mode->job_count) mode->job_count = j;
    for (int m = 0; m < RUN_METRIC_COUNT; m++) {
        double v = number(summary, RUN_METRICS[m].key);
        if (isnan(v) && !strcmp(RUN_METRICS[m].key, SM_ACTIVITY_KEY)) v = sm_activity(dir, first_go, last_end);
        mode->run[(size_t)m * REPEATS_MAX + (size_t)k] = v;
    }
}

static int init_mode(repeats_mode *mode, const char *name) {
    snprintf(mode->name, sizeof mode->name, "%s", name);
    size_t run = (size_t)RUN_METRIC_COUNT * REPEATS_MAX, job = (size_t)JOB_METRIC_COUNT * MIX_MAX_JOBS * REPEATS_MAX;
    mode->run = malloc(run * sizeof *mode->run);
    mode->job = malloc(job * sizeof *mode->job);
    if (!mode->run || !mode->job) return -1;
    for (size_t i = 0; i < run; i++) mode->run[i] = NAN;
    for (size_t i = 0; i < job; i++) mode->job[i] = NAN;
    for (int k = 0; k < REPEATS_MAX; k++) snprintf(mode->status[k], sizeof mode->status[k], "missing");
    return 0;
}

int repeats_collect(repeats *r, const char *const *repeat_dirs, int count, const char *const *modes,
                    int mode_count, char *err, size_t err_size) {
    memset(r, 0, sizeof *r);
    if (count < 1 || count > REPEATS_MAX || mode_count < 1 || mode_count > REPEATS_MAX_MODES) {
        snprintf(err, err_size, "repeats: %d repeat(s) of %d mode(s); expected 1..%d of 1..%d", count, mode_count,
                 REPEATS_MAX, REPEATS_MAX_MODES);
        return -1;
    }
    r->count = count;
    for (int m = 0; m < mode_count; m++, r->mode_count++) {
        repeats_mode *mode = &r->modes[m];
        if (init_mode(mode, modes[m]) != 0) {
            r->mode_count++;
            repeats_free(r);
            snprintf(err, err_size, "repeats: out of memory");
            return -1;
        }
        for (int k = 0; k < count; k++) {
            char dir[PATH_MAX + 64];
            cJSON *summary = NULL;
            snprintf(dir, sizeof dir, "%s/%s", repeat_dirs[k], modes[m]);
            if (read_json_file(dir, "summary.json", &summary) != 0) { /* one mode's run folder */
                snprintf(dir, sizeof dir, "%s", repeat_dirs[k]);
                const cJSON *name = read_json_file(dir, "summary.json", &summary) == 0
                                        ? cJSON_GetObjectItemCaseSensitive(summary, "mode") : NULL;
                if (!cJSON_IsString(name) || strcmp(name->valuestring, modes[m]) != 0) {
                    cJSON_Delete(summary);
                    summary = NULL;
                }
            }
            if (summary) add_run(mode, k, dir, summary);
            cJSON_Delete(summary);
        }
    }
    return 0;
}

void repeats_free(repeats *r) {
    for (int m = 0; m < r->mode_count; m++) {
        free(r->modes[m].run);
        free(r->modes[m].job);
    }
    memset(r, 0, sizeof *r);
}

/* --- the ranking rule ----------------------------------------------------------------------- */

/* snprintf at the end of what out holds; *total counts as snprintf does (past size too). */
static void append(char *out, size_t size, int *total, const char *fmt, ...) {
    size_t used = (size_t)*total < size ? (size_t)*total : size;
    va_list ap;
    va_start(ap, fmt);
    *total += vsnprintf(out + used, size - used, fmt, ap);
    va_end(ap);
}

int repeats_rank_line(char *out, size_t size, const char *label, const char *const *names, const spread *spreads,
                      int count, int lower_is_better) {
    int *order = count > 0 ? malloc((size_t)count * sizeof *order) : NULL, n = 0;
    for (int i = 0; order && i < count; i++) {
        if (spreads[i].n == 0) continue;
        int at = n++;
        /* insertion: stable, so equal medians keep the order given */
        for (; at > 0; at--) {
            double prev = spreads[order[at - 1]].median, mine = spreads[i].median;
            if (lower_is_better ? !(mine < prev) : !(mine > prev)) break;
            order[at] = order[at - 1];
        }
        order[at] = i;
    }
    int total = snprintf(out, size, "%s:", label);
    if (n == 0) append(out, size, &total, " -");
    for (int k = 0; k < n; k++) {
        const char *sign = k ? spread_rank_sign(spread_rank(spreads[order[k - 1]], spreads[order[k]])) : NULL;
        if (sign) append(out, size, &total, " %s", sign);
        append(out, size, &total, " %s", names[order[k]]);
    }
    free(order);
    return total;
}

/* The ranking line of run metric `metric` across r's modes. */
static void rank_metric(const repeats *r, int metric, char *out, size_t size) {
    const char *names[REPEATS_MAX_MODES];
    spread spreads[REPEATS_MAX_MODES];
    for (int m = 0; m < r->mode_count; m++) {
        names[m] = r->modes[m].name;
        spreads[m] = repeats_spread(r, m, metric, -1);
    }
    repeats_rank_line(out, size, RUN_METRICS[metric].label, names, spreads, r->mode_count,
                      RUN_METRICS[metric].lower_is_better);
}

/* Modes with values of this run metric. */
static int ranked_modes(const repeats *r, int metric) {
    int n = 0;
    for (int m = 0; m < r->mode_count; m++) n += repeats_spread(r, m, metric, -1).n > 0;
    return n;
}

/* --- output ---------------------------------------------------------------------------------- */

static cJSON *metric_json(const double *values, int count) {
    cJSON *o = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(o, "values");
    for (int k = 0; k < count; k++) {
        if (isfinite(values[k])) cJSON_AddItemToArray(list, cJSON_CreateNumber(values[k]));
        else cJSON_AddItemToArray(list, cJSON_CreateNull());
    }
    cJSON_AddItemToObject(o, "spread", spread_json(spread_of(values, count)));
    return o;
}

cJSON *repeats_json(const repeats *r) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "repeats", r->count);
    cJSON *modes = cJSON_AddArrayToObject(root, "modes");
    for (int m = 0; m < r->mode_count; m++) {
        const repeats_mode *mode = &r->modes[m];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "mode", mode->name);
        cJSON *status = cJSON_AddArrayToObject(o, "status");
        for (int k = 0; k < r->count; k++) cJSON_AddItemToArray(status, cJSON_CreateString(mode->status[k]));
        cJSON *metrics = cJSON_AddObjectToObject(o, "metrics");
        for (int i = 0; i < RUN_METRIC_COUNT; i++)
            cJSON_AddItemToObject(metrics, RUN_METRICS[i].key, metric_json(repeats_values(r, m, i, -1), r->count));
        cJSON *jobs = cJSON_AddArrayToObject(o, "jobs");
        for (int j = 0; j < mode->job_count; j++) {
            cJSON *job = cJSON_CreateObject();
            cJSON_AddNumberToObject(job, "index", j);
            cJSON_AddStringToObject(job, "label", mode->job_label[j]);
            cJSON *jm = cJSON_AddObjectToObject(job, "metrics");
            for (int i = 0; i < JOB_METRIC_COUNT; i++)
                cJSON_AddItemToObject(jm, JOB_METRICS[i].key, metric_json(repeats_values(r, m, i, j), r->count));
            cJSON_AddItemToArray(jobs, job);
        }
        cJSON_AddItemToArray(modes, o);
    }
    cJSON *rankings = cJSON_AddObjectToObject(root, "rankings");
    for (int i = 0; i < RUN_METRIC_COUNT; i++) {
        char line[1024];
        rank_metric(r, i, line, sizeof line);
        cJSON_AddStringToObject(rankings, RUN_METRICS[i].key, line);
    }
    return root;
}

static void csv_row(FILE *f, const char *mode, int job, const char *label, const char *key, const double *values,
                    int count) {
    results_csv_field(f, mode);
    if (job >= 0) fprintf(f, ",%d,", job);
    else fprintf(f, ",,");
    results_csv_field(f, label);
    fprintf(f, ",%s", key);
    for (int k = 0; k < count; k++) fputc(',', f), results_csv_number(f, values[k], 6);
    spread s = spread_of(values, count);
    fputc(',', f), results_csv_number(f, s.median, 6);
    fputc(',', f), results_csv_number(f, s.min, 6);
    fputc(',', f), results_csv_number(f, s.max, 6);
    fprintf(f, ",%d\n", s.n);
}

int repeats_write(const char *dir, const repeats *r, char *err, size_t err_size) {
    cJSON *json = repeats_json(r);
    int rc = results_write_json(dir, "repeats.json", json, err, err_size);
    cJSON_Delete(json);
    if (rc != 0) return rc;
    results_text t;
    FILE *f = results_text_open(&t);
    if (!f) {
        snprintf(err, err_size, "out of memory writing repeats.csv");
        return -1;
    }
    fprintf(f, "mode,job,label,metric");
    for (int k = 1; k <= r->count; k++) fprintf(f, ",repeat_%d", k);
    fprintf(f, ",median,min,max,n\n");
    for (int m = 0; m < r->mode_count; m++) {
        const repeats_mode *mode = &r->modes[m];
        for (int i = 0; i < RUN_METRIC_COUNT; i++)
            csv_row(f, mode->name, -1, "", RUN_METRICS[i].key, repeats_values(r, m, i, -1), r->count);
        for (int j = 0; j < mode->job_count; j++)
            for (int i = 0; i < JOB_METRIC_COUNT; i++)
                csv_row(f, mode->name, j, mode->job_label[j], JOB_METRICS[i].key, repeats_values(r, m, i, j), r->count);
    }
    return results_text_commit(&t, dir, "repeats.csv", err, err_size);
}

#define CELL_WIDTH 21

/* A table cell: padded to CELL_WIDTH but the row's last, which ends the line. */
static void cell_out(FILE *out, const char *text, int last) {
    if (last) fprintf(out, " %s\n", text);
    else fprintf(out, " %-*s", CELL_WIDTH, text);
}

void repeats_print(FILE *out, const repeats *r) {
    char cell[96];
    fprintf(out, "\nacross %d repeat(s), median [min-max]:\n%-12s %-9s", r->count, "mode", "complete");
    for (int i = 0; i < RUN_METRIC_COUNT; i++) cell_out(out, RUN_METRICS[i].label, i == RUN_METRIC_COUNT - 1);
    for (int m = 0; m < r->mode_count; m++) {
        const repeats_mode *mode = &r->modes[m];
        int complete = 0;
        for (int k = 0; k < r->count; k++) complete += !strcmp(mode->status[k], "complete");
        snprintf(cell, sizeof cell, "%d/%d", complete, r->count);
        fprintf(out, "%-12s %-9s", mode->name, cell);
        for (int i = 0; i < RUN_METRIC_COUNT; i++) {
            spread_format(cell, sizeof cell, repeats_spread(r, m, i, -1), RUN_METRICS[i].format);
            cell_out(out, cell, i == RUN_METRIC_COUNT - 1);
        }
    }
    fprintf(out, "\n%-12s %-4s %-12s", "mode", "job", "label");
    for (int i = 0; i < JOB_METRIC_COUNT; i++) cell_out(out, JOB_METRICS[i].label, i == JOB_METRIC_COUNT - 1);
    for (int m = 0; m < r->mode_count; m++)
        for (int j = 0; j < r->modes[m].job_count; j++) {
            fprintf(out, "%-12s %-4d %-12.12s", r->modes[m].name, j, r->modes[m].job_label[j]);
            for (int i = 0; i < JOB_METRIC_COUNT; i++) {
                spread_format(cell, sizeof cell, repeats_spread(r, m, i, j), JOB_METRICS[i].format);
                cell_out(out, cell, i == JOB_METRIC_COUNT - 1);
            }
        }
    int header = 0;
    for (int i = 0; i < RUN_METRIC_COUNT; i++) {
        if (ranked_modes(r, i) < 2) continue;
        char line[1024];
        rank_metric(r, i, line, sizeof line);
        if (!header++) fprintf(out, "\nranking (\">\" only where the repeats' ranges do not overlap, else \"~\"):\n");
        fprintf(out, "  %s\n", line);
    }
    fflush(out);
}
