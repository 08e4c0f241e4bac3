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
    row->energy = values_spread(cJSON_GetObjectItemCaseSensitive(metrics, "window_energy_per_sample_j"));
    int j = 0;
    for (const cJSON *job = list->child; job && j < ADVISE_MAX_JOBS; job = job->next, j++)
        row->progress[j] = values_spread(cJSON_GetObjectItemCaseSensitive(
                                             cJSON_GetObjectItemCaseSensitive(job, "metrics"), "normalized_throughput"))
                               .median;
    cJSON_Delete(root);
    row->energy_note[0] = 0;
    if (row->energy.n == 0) { /* why: the repeats' summary.json say it (the first suffices, they ran alike) */
        snprintf(path, sizeof path, "%s/repeat-1/summary.json", run_dir);
        cJSON *first = results_read_json(path);
        const cJSON *note = cJSON_GetObjectItemCaseSensitive(first, "window_energy_note");
        snprintf(row->energy_note, sizeof row->energy_note, "%s",
                 cJSON_IsString(note) ? note->valuestring : "the repeats' summary.json hold no window energy");
        cJSON_Delete(first);
    }
    row->measured = row->stp.n > 0;
    if (!row->measured) return snprintf(err, err_size, "%s: no repeat has an STP (no serial baseline?)", path), -1;
    return 0;
}

/* The objective's value, measured (the repeats' medians) and predicted: what the ranking compares,
 * higher better; and the measured spread it comes from. */
static double measured_of(const advise_check_row *r, advise_objective o) {
    return advise_objective_score(o, r->stp.median, r->antt.median, r->fairness.median, r->energy.median);
}

static double predicted_of(const advise_prediction *p, advise_objective o) {
    return advise_objective_score(o, p->stp, p->antt, p->fairness, p->energy_per_sample);
}

static const spread *spread_on(const advise_check_row *r, advise_objective o) {
    switch (o) {
    case ADVISE_ANTT: return &r->antt;
    case ADVISE_FAIRNESS: return &r->fairness;
    case ADVISE_ENERGY: return &r->energy;
    case ADVISE_STP: break;
    }
    return &r->stp;
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

/* On objective o over rows[0..n) with row rec the recommendation: the Spearman of predicted against
 * measured, the best measured row (-1 none), the regret (NaN: the recommendation or the best not
 * measured) and whether it is a tie inside the repeats' spread. */
static void rank_on(const advise_check_row *rows, int n, advise_objective o, int rec, double *spearman, int *best,
                    double *regret, int *tie) {
    double *pred = calloc((size_t)n + 1, sizeof *pred), *meas = calloc((size_t)n + 1, sizeof *meas);
    *best = -1, *regret = NAN, *tie = 0;
    for (int i = 0; i < n; i++) {
        pred[i] = meas[i] = NAN;
        if (!rows[i].measured) continue;
        pred[i] = predicted_of(rows[i].pred, o);
        meas[i] = measured_of(&rows[i], o);
        if (isfinite(meas[i]) && (*best < 0 || meas[i] > meas[*best])) *best = i;
    }
    *spearman = advise_spearman(pred, meas, n);
    if (rec >= 0 && *best >= 0 && isfinite(meas[rec])) {
        double b = meas[*best], r = meas[rec];
        *regret = b != 0 ? (b - r) / fabs(b) : NAN;
        *tie = *best == rec || spread_rank(*spread_on(&rows[rec], o), *spread_on(&rows[*best], o)) == 0;
    }
    free(pred), free(meas);
}

void advise_check_compare(advise_check_row *rows, int n, int jobs, advise_objective objective,
                          advise_check_summary *out) {
    memset(out, 0, sizeof *out);
    out->median_abs_progress_error = out->median_abs_energy_error = NAN;
    double *stp = calloc((size_t)n + 1, sizeof *stp), *antt = calloc((size_t)n + 1, sizeof *antt);
    double *energy = calloc((size_t)n + 1, sizeof *energy);
    double *prog = calloc((size_t)n * ADVISE_MAX_JOBS + 1, sizeof *prog);
    int np = 0;
    out->energy_recommended = -1;
    for (int i = 0; i < n; i++) {
        advise_check_row *r = &rows[i];
        const advise_prediction *p = r->pred;
        r->stp_error = r->antt_error = r->fairness_error = r->energy_error = r->measured_score = NAN;
        for (int j = 0; j < jobs; j++) r->progress_error[j] = NAN;
        stp[i] = antt[i] = energy[i] = NAN;
        /* the energy objective's choice among the rows: predicted lowest, measured or not */
        double e = predicted_of(p, ADVISE_ENERGY);
        if (isfinite(e) && (out->energy_recommended < 0 || e > predicted_of(rows[out->energy_recommended].pred,
                                                                            ADVISE_ENERGY)))
            out->energy_recommended = i;
        if (!r->measured) continue;
        out->measured++;
        for (int j = 0; j < jobs; j++) prog[np++] = r->progress_error[j] = relative(p->progress[j], r->progress[j]);
        stp[i] = r->stp_error = relative(p->stp, r->stp.median);
        antt[i] = r->antt_error = relative(p->antt, r->antt.median);
        r->fairness_error = relative(p->fairness, r->fairness.median);
        energy[i] = r->energy_error = relative(p->energy_per_sample, r->energy.median);
        r->measured_score = measured_of(r, objective);
    }
    rank_on(rows, n, objective, n > 0 ? 0 : -1, &out->spearman, &out->best, &out->regret, &out->tie);
    rank_on(rows, n, ADVISE_ENERGY, out->energy_recommended, &out->energy_spearman, &out->energy_best,
            &out->energy_regret, &out->energy_tie);
    out->median_abs_stp_error = median_abs(stp, n);
    out->median_abs_antt_error = median_abs(antt, n);
    out->median_abs_energy_error = median_abs(energy, n);
    out->median_abs_progress_error = median_abs(prog, np);
    out->recommended_measured = n > 0 && rows[0].measured && isfinite(rows[0].measured_score);
    free(stp), free(antt), free(energy), free(prog);
}

static void spread_text(char *out, size_t size, spread s) { spread_format(out, size, s, "%.3f"); }

static void error_text(char *out, size_t size, double e) {
    if (isfinite(e)) snprintf(out, size, "%+.1f%%", 100 * e);
    else snprintf(out, size, "-");
}

/* Energy per sample predicted against measured, and the energy objective's Spearman and regret. */
static void print_energy(FILE *out, const advise_check_row *rows, int n, const advise_check_summary *s) {
    fprintf(out, "energy per trained sample (J): predicted / measured over the window, median [min-max] (error)\n");
    for (int i = 0; i < n; i++) {
        const advise_check_row *r = &rows[i];
        char pe[32] = "-", me[64], ee[16];
        if (isfinite(r->pred->energy_per_sample)) snprintf(pe, sizeof pe, "%.4g", r->pred->energy_per_sample);
        if (!r->measured) snprintf(me, sizeof me, "not measured");
        else if (r->energy.n == 0) snprintf(me, sizeof me, "-");
        else spread_format(me, sizeof me, r->energy, "%.4g");
        error_text(ee, sizeof ee, r->energy_error);
        fprintf(out, "%-36s %10s / %-26s %7s%s%s\n", r->pred->c->label, pe, me, ee, r->energy_note[0] ? "  " : "",
                r->energy_note);
    }
    fprintf(out, "energy: median |error| %.1f%%; Spearman on energy: %.2f; ", 100 * s->median_abs_energy_error,
            s->energy_spearman);
    if (s->energy_recommended >= 0 && s->energy_best >= 0 && isfinite(s->energy_regret))
        fprintf(out, "regret: %s (predicted lowest) measured %.1f%% above %s, the lowest measured%s\n",
                rows[s->energy_recommended].pred->c->label, 100 * s->energy_regret, rows[s->energy_best].pred->c->label,
                s->energy_best == s->energy_recommended ? " (it is the lowest)"
                : s->energy_tie ? ": a tie, inside the repeats' spread" : "");
    else fprintf(out, "regret: unknown (%s)\n", s->energy_recommended < 0 ? "no candidate has a predicted energy "
                 "(its probes measured no power)" : "the choice or every candidate lacks a measured energy");
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
    print_energy(out, rows, n, s);
}

static cJSON *spread_item(spread s) { return spread_json(s); }

/* A CSV cell of a value: six significant digits (energy per sample is small), empty where unknown. */
static void csv_value(FILE *f, double v) {
    if (isfinite(v)) fprintf(f, "%.6g", v);
}

int advise_check_write(const char *dir, const advise_check_row *rows, int n, int jobs, const char *const *labels,
                       const advise_check_summary *s, advise_objective objective, const char *probes, char *err,
                       size_t err_size) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "objective", advise_objective_name(objective));
    cJSON_AddStringToObject(root, "probes", probes);
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
        results_json_number(o, "predicted_energy_per_sample_j", r->pred->energy_per_sample);
        cJSON_AddItemToObject(o, "stp", spread_item(r->stp));
        cJSON_AddItemToObject(o, "antt", spread_item(r->antt));
        cJSON_AddItemToObject(o, "fairness", spread_item(r->fairness));
        cJSON_AddItemToObject(o, "energy_per_sample_j", spread_item(r->energy));
        if (r->energy_note[0]) cJSON_AddStringToObject(o, "energy_note", r->energy_note);
        results_json_number(o, "stp_error", r->stp_error);
        results_json_number(o, "antt_error", r->antt_error);
        results_json_number(o, "fairness_error", r->fairness_error);
        results_json_number(o, "energy_error", r->energy_error);
        results_json_number(o, "measured_objective", r->measured_score);
        cJSON *law = NULL;
        for (int j = 0; j < jobs; j++) {
            if (!r->pred->law[j]) continue;
            if (!law) law = cJSON_AddArrayToObject(o, "read_off_law");
            cJSON *jo = cJSON_CreateObject();
            cJSON_AddStringToObject(jo, "job", labels[j]);
            cJSON_AddNumberToObject(jo, "sms", r->pred->c->sms[j]);
            cJSON_AddItemToArray(law, jo);
        }
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
        const char *names[] = {"stp", "antt", "energy_per_sample_j"};
        const double pv[] = {r->pred->stp, r->pred->antt, r->pred->energy_per_sample},
                     mv[] = {r->stp.median, r->antt.median, r->energy.median},
                     ev[] = {r->stp_error, r->antt_error, r->energy_error};
        for (int k = 0; k < 3; k++) {
            fprintf(csv, "%d,", i + 1);
            results_csv_field(csv, r->pred->c->label);
            fprintf(csv, ",%s,,%s,", r->pred->c->mode, names[k]);
            csv_value(csv, pv[k]), fputc(',', csv), csv_value(csv, mv[k]), fputc(',', csv), csv_value(csv, ev[k]);
            fputc('\n', csv);
        }
        for (int j = 0; j < jobs; j++) {
            fprintf(csv, "%d,", i + 1);
            results_csv_field(csv, r->pred->c->label);
            fprintf(csv, ",%s,%d,", r->pred->c->mode, j);
            results_csv_field(csv, labels[j]);
            fputc(',', csv), csv_value(csv, r->pred->progress[j]), fputc(',', csv), csv_value(csv, r->progress[j]);
            fputc(',', csv), csv_value(csv, r->progress_error[j]), fputc('\n', csv);
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
    results_json_number(sum, "median_abs_energy_error", s->median_abs_energy_error);
    cJSON *en = cJSON_AddObjectToObject(sum, "energy");
    const char *choice = s->energy_recommended >= 0 ? rows[s->energy_recommended].pred->c->label : NULL;
    const char *lowest = s->energy_best >= 0 ? rows[s->energy_best].pred->c->label : NULL;
    if (choice) cJSON_AddStringToObject(en, "recommended", choice);
    else cJSON_AddNullToObject(en, "recommended");
    if (lowest) cJSON_AddStringToObject(en, "best_measured", lowest);
    else cJSON_AddNullToObject(en, "best_measured");
    results_json_number(en, "spearman", s->energy_spearman);
    results_json_number(en, "regret", s->energy_regret);
    cJSON_AddBoolToObject(en, "tie", s->energy_tie);
    int rc = 0;
    if (!csv) rc = -1, snprintf(err, err_size, "%s: cannot write it", path);
    else if (fclose(csv) != 0) rc = -1, snprintf(err, err_size, "%s: cannot write it", path);
    if (results_write_json(dir, "check.json", root, err, err_size) != 0) rc = -1;
    cJSON_Delete(root);
    return rc;
}
