/* The advisor's check (see advise_check.h). */
#include "runner/suite/multi/advise_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "results/fields.h"
#include "results/results.h"

static spread values_spread(const cJSON *metric) {
    double v[64];
    int n = 0;
    for (const cJSON *e = cJSON_GetObjectItemCaseSensitive(metric, "values") ? cJSON_GetObjectItemCaseSensitive(metric, "values")->child : NULL;
         e && n < 64; e = e->next)
        v[n++] = cJSON_IsNumber(e) ? e->valuedouble : NAN;
    return spread_of(v, n);
}

int advise_check_read(const char *run_dir, int jobs, advise_check_row *row, char *err, size_t err_size) {
    char path[8300];
    snprintf(path, sizeof path, "%s/repeats.json", run_dir);
    cJSON *root = results_read_json(path);
    if (!root) return snprintf(err, err_size, "%s: cannot read it as JSON (the repeats did not finish)", path), -1;
    const cJSON *mode = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(root, "modes"), 0);
    const cJSON *metrics = cJSON_GetObjectItemCaseSensitive(mode, "metrics");
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(mode, "jobs");
    if (!metrics || cJSON_GetArraySize(list) != jobs) {
        cJSON_Delete(root);
        return snprintf(err, err_size, "%s: expected one mode's metrics and %d jobs", path, jobs), -1;
    }
    row->stp = values_spread(cJSON_GetObjectItemCaseSensitive(metrics, "stp"));
    row->antt = values_spread(cJSON_GetObjectItemCaseSensitive(metrics, "antt"));
    row->fairness = values_spread(cJSON_GetObjectItemCaseSensitive(metrics, "fairness"));
    int j = 0;
    for (const cJSON *job = list->child; job && j < ADVISE_MAX_JOBS; job = job->next, j++)
        row->progress[j] = values_spread(cJSON_GetObjectItemCaseSensitive(
                                             cJSON_GetObjectItemCaseSensitive(job, "metrics"), "normalized_throughput"))
                               .median;
    cJSON_Delete(root);
    row->measured = row->stp.n > 0;
    if (!row->measured) return snprintf(err, err_size, "%s: no repeat has an STP (no serial baseline?)", path), -1;
    return 0;
}

/* The objective's value: what the ranking compares, higher better. */
static double objective_of(advise_objective o, double stp, double antt, double fairness) {
    return advise_objective_score(o, stp, antt, fairness, NAN);
}

static double relative(double predicted, double measured) {
    return isfinite(predicted) && isfinite(measured) && measured != 0 ? (predicted - measured) / measured : NAN;
}

static double median_abs(double *v, int n) {
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) v[k++] = fabs(v[i]);
    return spread_of(v, k).median;
}

/* Average ranks (1 = smallest) of the finite values; NaN stays. */
static void ranks_of(const double *v, const int *use, int n, double *rank) {
    for (int i = 0; i < n; i++) {
        if (!use[i]) continue;
        int below = 0, equal = 0;
        for (int j = 0; j < n; j++) {
            if (!use[j]) continue;
            below += v[j] < v[i];
            equal += v[j] == v[i];
        }
        rank[i] = below + (equal + 1) / 2.0;
    }
}

double advise_spearman(const double *x, const double *y, int n) {
    int *use = calloc((size_t)(n > 0 ? n : 1), sizeof *use), m = 0;
    double *rx = calloc((size_t)(n > 0 ? n : 1), sizeof *rx), *ry = calloc((size_t)(n > 0 ? n : 1), sizeof *ry);
    for (int i = 0; i < n; i++) m += use[i] = isfinite(x[i]) && isfinite(y[i]);
    double r = NAN;
    if (m >= 2) {
        ranks_of(x, use, n, rx);
        ranks_of(y, use, n, ry);
        double mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
        for (int i = 0; i < n; i++)
            if (use[i]) mx += rx[i] / m, my += ry[i] / m;
        for (int i = 0; i < n; i++)
            if (use[i]) {
                sxy += (rx[i] - mx) * (ry[i] - my);
                sxx += (rx[i] - mx) * (rx[i] - mx);
                syy += (ry[i] - my) * (ry[i] - my);
            }
        /* Pearson's on the ranks: right with tied ranks too; no variance on a side says nothing */
        r = sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
    }
    free(use), free(rx), free(ry);
    return r;
}

void advise_check_compare(advise_check_row *rows, int n, int jobs, advise_objective objective,
                          advise_check_summary *out) {
    memset(out, 0, sizeof *out);
    out->best = -1;
    out->spearman = out->regret = out->median_abs_stp_error = out->median_abs_antt_error = NAN;
    out->median_abs_progress_error = NAN;
    double *pred = calloc((size_t)n + 1, sizeof *pred), *meas = calloc((size_t)n + 1, sizeof *meas);
    double *stp = calloc((size_t)n + 1, sizeof *stp), *antt = calloc((size_t)n + 1, sizeof *antt);
    double *prog = calloc((size_t)n * ADVISE_MAX_JOBS + 1, sizeof *prog);
    int np = 0;
    for (int i = 0; i < n; i++) {
        advise_check_row *r = &rows[i];
        const advise_prediction *p = r->pred;
        r->stp_error = r->antt_error = r->fairness_error = r->measured_score = NAN;
        for (int j = 0; j < jobs; j++) r->progress_error[j] = NAN;
        pred[i] = meas[i] = stp[i] = antt[i] = NAN;
        if (!r->measured) continue;
        out->measured++;
        for (int j = 0; j < jobs; j++) prog[np++] = r->progress_error[j] = relative(p->progress[j], r->progress[j]);
        stp[i] = r->stp_error = relative(p->stp, r->stp.median);
        antt[i] = r->antt_error = relative(p->antt, r->antt.median);
        r->fairness_error = relative(p->fairness, r->fairness.median);
        r->measured_score = objective_of(objective, r->stp.median, r->antt.median, r->fairness.median);
        pred[i] = objective_of(objective, p->stp, p->antt, p->fairness);
        meas[i] = r->measured_score;
        if (isfinite(meas[i]) && (out->best < 0 || meas[i] > rows[out->best].measured_score)) out->best = i;
    }
    out->spearman = advise_spearman(pred, meas, n);
    out->median_abs_stp_error = median_abs(stp, n);
    out->median_abs_antt_error = median_abs(antt, n);
    out->median_abs_progress_error = median_abs(prog, np);
    out->recommended_measured = n > 0 && rows[0].measured && isfinite(rows[0].measured_score);
    if (out->recommended_measured && out->best >= 0) {
        double best = rows[out->best].measured_score, rec = rows[0].measured_score;
        out->regret = best != 0 ? (best - rec) / fabs(best) : NAN;
        const spread *b = objective == ADVISE_ANTT ? &rows[out->best].antt
                          : objective == ADVISE_FAIRNESS ? &rows[out->best].fairness : &rows[out->best].stp;
        const spread *a = objective == ADVISE_ANTT ? &rows[0].antt
                          : objective == ADVISE_FAIRNESS ? &rows[0].fairness : &rows[0].stp;
        out->tie = out->best == 0 || spread_rank(*a, *b) == 0;
    }
    free(pred), free(meas), free(stp), free(antt), free(prog);
}

static void spread_text(char *out, size_t size, spread s) { spread_format(out, size, s, "%.3f"); }

static void error_text(char *out, size_t size, double e) {
    if (isfinite(e)) snprintf(out, size, "%+.1f%%", 100 * e);
    else snprintf(out, size, "-");
}

void advise_check_print(FILE *out, const advise_check_row *rows, int n, int jobs, const char *const *labels,
                        const advise_check_summary *s, advise_objective objective) {
    fprintf(out, "\ncheck: predicted against measured (%d repeats each, the measured median [min-max])\n",
            ADVISE_CHECK_REPEATS);
    fprintf(out, "%-36s %7s %-22s %7s %7s %-22s %7s  progress predicted/measured (error)\n", "mode", "STP", "measured",
            "error", "ANTT", "measured", "error");
    for (int i = 0; i < n; i++) {
        const advise_check_row *r = &rows[i];
        char ms[64], ma[64], es[16], ea[16];
        if (!r->measured) {
            fprintf(out, "%-36s %7.3f %-22s\n", r->pred->c->label, r->pred->stp, "not measured");
            continue;
        }
        spread_text(ms, sizeof ms, r->stp), spread_text(ma, sizeof ma, r->antt);
        error_text(es, sizeof es, r->stp_error), error_text(ea, sizeof ea, r->antt_error);
        fprintf(out, "%-36s %7.3f %-22s %7s %7.3f %-22s %7s ", r->pred->c->label, r->pred->stp, ms, es, r->pred->antt,
                ma, ea);
        for (int j = 0; j < jobs; j++) {
            char e[16];
            error_text(e, sizeof e, r->progress_error[j]);
            fprintf(out, " %s %.2f/%.2f (%s)", labels[j], r->pred->progress[j], r->progress[j], e);
        }
        fputc('\n', out);
    }
    fprintf(out, "median |error|: STP %.1f%%, ANTT %.1f%%, a job's progress %.1f%%; Spearman on %s: %.2f (%d modes)\n",
            100 * s->median_abs_stp_error, 100 * s->median_abs_antt_error, 100 * s->median_abs_progress_error,
            advise_objective_name(objective), s->spearman, s->measured);
    if (s->recommended_measured && s->best >= 0)
        fprintf(out, "regret: %s measured %.1f%% behind %s, the best measured%s\n", rows[0].pred->c->label,
                100 * s->regret, rows[s->best].pred->c->label,
                s->best == 0 ? " (it is the best)" : s->tie ? ": a tie, inside the repeats' spread" : "");
    else fprintf(out, "regret: unknown (the recommendation was not measured)\n");
}

static cJSON *spread_item(spread s) { return spread_json(s); }

int advise_check_write(const char *dir, const advise_check_row *rows, int n, int jobs, const char *const *labels,
                       const advise_check_summary *s, advise_objective objective, char *err, size_t err_size) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "objective", advise_objective_name(objective));
    cJSON_AddNumberToObject(root, "repeats", ADVISE_CHECK_REPEATS);
    cJSON *list = cJSON_AddArrayToObject(root, "modes");
    char path[8300];
    snprintf(path, sizeof path, "%s/check.csv", dir);
    FILE *csv = fopen(path, "w");
    if (csv) fprintf(csv, "rank,label,mode,job,label_job,predicted,measured,error\n");
    for (int i = 0; i < n; i++) {
        const advise_check_row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "rank", i + 1);
        cJSON_AddStringToObject(o, "label", r->pred->c->label);
        cJSON_AddStringToObject(o, "mode", r->pred->c->mode);
        cJSON_AddBoolToObject(o, "measured", r->measured);
        results_json_number(o, "predicted_stp", r->pred->stp);
        results_json_number(o, "predicted_antt", r->pred->antt);
        results_json_number(o, "predicted_fairness", r->pred->fairness);
        cJSON_AddItemToObject(o, "stp", spread_item(r->stp));
        cJSON_AddItemToObject(o, "antt", spread_item(r->antt));
        cJSON_AddItemToObject(o, "fairness", spread_item(r->fairness));
        results_json_number(o, "stp_error", r->stp_error);
        results_json_number(o, "antt_error", r->antt_error);
        results_json_number(o, "fairness_error", r->fairness_error);
        results_json_number(o, "measured_objective", r->measured_score);
        cJSON *js = cJSON_AddArrayToObject(o, "jobs");
        for (int j = 0; j < jobs; j++) {
            cJSON *jo = cJSON_CreateObject();
            cJSON_AddStringToObject(jo, "label", labels[j]);
            results_json_number(jo, "predicted", r->pred->progress[j]);
            results_json_number(jo, "measured", r->progress[j]);
            results_json_number(jo, "error", r->progress_error[j]);
            cJSON_AddItemToArray(js, jo);
        }
        cJSON_AddItemToArray(list, o);
        if (!csv) continue;
        const char *names[] = {"stp", "antt"};
        const double pv[] = {r->pred->stp, r->pred->antt}, mv[] = {r->stp.median, r->antt.median},
                     ev[] = {r->stp_error, r->antt_error};
        for (int k = 0; k < 2; k++) {
            fprintf(csv, "%d,", i + 1);
            results_csv_field(csv, r->pred->c->label);
            fprintf(csv, ",%s,,%s,%.6g,%.6g,%.6g\n", r->pred->c->mode, names[k], pv[k], mv[k], ev[k]);
        }
        for (int j = 0; j < jobs; j++) {
            fprintf(csv, "%d,", i + 1);
            results_csv_field(csv, r->pred->c->label);
            fprintf(csv, ",%s,%d,", r->pred->c->mode, j);
            results_csv_field(csv, labels[j]);
            fprintf(csv, ",%.6g,%.6g,%.6g\n", r->pred->progress[j], r->progress[j], r->progress_error[j]);
        }
    }
    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    cJSON_AddNumberToObject(sum, "measured", s->measured);
    results_json_number(sum, "spearman", s->spearman);
    cJSON_AddStringToObject(sum, "recommended", n > 0 ? rows[0].pred->c->label : "");
    if (s->best >= 0) cJSON_AddStringToObject(sum, "best_measured", rows[s->best].pred->c->label);
    else cJSON_AddNullToObject(sum, "best_measured");
    results_json_number(sum, "regret", s->regret);
    cJSON_AddBoolToObject(sum, "tie", s->tie);
    results_json_number(sum, "median_abs_stp_error", s->median_abs_stp_error);
    results_json_number(sum, "median_abs_antt_error", s->median_abs_antt_error);
    results_json_number(sum, "median_abs_progress_error", s->median_abs_progress_error);
    int rc = 0;
    if (!csv) rc = -1, snprintf(err, err_size, "%s: cannot write it", path);
    else if (fclose(csv) != 0) rc = -1, snprintf(err, err_size, "%s: cannot write it", path);
    if (results_write_json(dir, "check.json", root, err, err_size) != 0) rc = -1;
    cJSON_Delete(root);
    return rc;
}
