/* The advisor's model (see advise_model.h). */
#include "runner/suite/multi/advise_model.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADVISE_CONSTANT_INFO_(name, initial, lo, hi) {#name, offsetof(advise_constants, name), initial, lo, hi},
const advise_constant_info advise_constant_infos[ADVISE_CONSTANT_COUNT] = {ADVISE_CONSTANT_TABLE(ADVISE_CONSTANT_INFO_)};
#undef ADVISE_CONSTANT_INFO_

double *advise_constant_at(advise_constants *k, int i) {
    return (double *)((char *)k + advise_constant_infos[i].offset);
}

void advise_constants_default(advise_constants *c) {
    for (int i = 0; i < ADVISE_CONSTANT_COUNT; i++) *advise_constant_at(c, i) = advise_constant_infos[i].initial;
    snprintf(c->source, sizeof c->source, "defaults (fitted on nothing: run advise --fit on measured runs)");
}

#define ADVISE_OBJECTIVE_NAME_(kind, name) name,
static const char *const OBJECTIVE_NAMES[] = {ADVISE_OBJECTIVE_TABLE(ADVISE_OBJECTIVE_NAME_)};
#undef ADVISE_OBJECTIVE_NAME_

const char *advise_objective_name(advise_objective o) { return OBJECTIVE_NAMES[o]; }

double advise_objective_score(advise_objective o, double stp, double antt, double fairness, double energy) {
    switch (o) {
    case ADVISE_STP: return stp;
    case ADVISE_ANTT: return -antt;
    case ADVISE_FAIRNESS: return fairness;
    case ADVISE_ENERGY: return -energy;
    }
    return NAN;
}

advise_law advise_law_through(int s1, double r1, int s2, double r2) {
    if (!(s1 > 0 && s2 > 0 && s1 != s2 && r1 > 0 && r2 > 0)) return (advise_law){NAN, NAN};
    if (s1 > s2) { /* (s2, r2) the larger size: a clamped law passes through it */
        int s = s1;
        double r = r1;
        s1 = s2, r1 = r2, s2 = s, r2 = r;
    }
    double b = (1 / r1 - 1 / r2) / (1.0 / s1 - 1.0 / s2);
    double a = 1 / r2 - b / s2;
    if (b < 0) return (advise_law){1 / r2, 0};  /* faster on fewer SMs: its rate at the larger, whatever s */
    if (a < 0) return (advise_law){0, s2 / r2}; /* faster than its SMs: in proportion to s */
    return (advise_law){a, b};
}

double advise_law_rate(advise_law law, int sms) {
    double t = law.a + law.b / sms;
    return sms > 0 && t > 0 ? 1 / t : NAN;
}

int advise_rate_probed(const advise_probe *p, int sms) {
    for (int i = 0; i < p->points; i++)
        if (p->sms[i] == sms) return 1;
    return 0;
}

double advise_rate_at(const advise_probe *p, int sms) {
    /* the two points around sms: the largest below and the smallest above (the nearest pair outside) */
    int below = -1, above = -1;
    for (int i = 0; i < p->points; i++) {
        if (p->sms[i] == sms) return p->part_rate[i];
        if (p->sms[i] < sms && (below < 0 || p->sms[i] > p->sms[below])) below = i;
        if (p->sms[i] > sms && (above < 0 || p->sms[i] < p->sms[above])) above = i;
    }
    if (below < 0 && above < 0) return NAN;
    if (below < 0 || above < 0) { /* outside: the nearest point and its neighbour on the same side */
        int near = below < 0 ? above : below, next = -1;
        for (int i = 0; i < p->points; i++) {
            if (i == near || p->sms[i] == p->sms[near]) continue;
            int same_side = below < 0 ? p->sms[i] > p->sms[near] : p->sms[i] < p->sms[near];
            if (same_side && (next < 0 || abs(p->sms[i] - p->sms[near]) < abs(p->sms[next] - p->sms[near]))) next = i;
        }
        if (next < 0) /* one point: in proportion to s below it (a = 0), its rate above (b = 0) */
            return below < 0 ? p->part_rate[near] * sms / p->sms[near] : p->part_rate[near];
        below = near, above = next; /* advise_law_through orders them */
    }
    return advise_law_rate(advise_law_through(p->sms[below], p->part_rate[below], p->sms[above], p->part_rate[above]),
                           sms);
}

double advise_power_at(const advise_probe *p, double samples_per_s) {
    /* the points with a power, by samples/s: lo and next the two lowest, below and above around x */
    int lo = -1, next = -1, below = -1, above = -1, top = -1;
    for (int i = 0; i < p->points; i++) {
        double r = p->part_rate[i];
        if (!isfinite(p->part_power[i]) || !(r > 0)) continue;
        if (lo < 0 || r < p->part_rate[lo]) next = lo, lo = i;
        else if (next < 0 || r < p->part_rate[next]) next = i;
        if (r <= samples_per_s && (below < 0 || r > p->part_rate[below])) below = i;
        if (r > samples_per_s && (above < 0 || r < p->part_rate[above])) above = i;
        if (top < 0 || r > p->part_rate[top]) top = i;
    }
    if (lo < 0) return NAN;
    if (next < 0 || p->part_rate[next] == p->part_rate[lo]) return p->part_power[lo];
    if (above < 0) return p->part_power[top];
    int a = below, b = above;
    if (below < 0) a = lo, b = next; /* below every point: the line through the two lowest */
    double slope = (p->part_power[b] - p->part_power[a]) / (p->part_rate[b] - p->part_rate[a]);
    return fmax(0, p->part_power[a] + slope * (samples_per_s - p->part_rate[a]));
}

static double known_or(double v, double otherwise) { return isfinite(v) ? v : otherwise; }

void advise_predict(const advise_mix *m, const advise_candidate *c, const advise_constants *k,
                    advise_objective objective, advise_prediction *out) {
    memset(out, 0, sizeof *out);
    out->c = c;
    int n = m->count;
    double activity = 0, dram_all = 0, alone[ADVISE_MAX_JOBS], alone_all = 0, power = 0, samples = 0, mem = 0;
    for (int i = 0; i < n; i++) {
        const advise_probe *p = m->probe[i];
        activity += known_or(p->sm_active, 1);
        dram_all += known_or(p->dram_active, 0);
        alone[i] = c->kind == ADVISE_PARTITION ? advise_rate_at(p, c->sms[i]) / p->rate : 1;
        alone_all += alone[i];
    }
    int fits = isfinite(m->memory_bytes) ? 1 : -1;
    for (int i = 0; i < n; i++) {
        const advise_probe *p = m->probe[i];
        double d = fmax(0.01, known_or(p->sm_active, 1)), q;
        switch (c->kind) {
        case ADVISE_NAIVE: q = (1 - k->switch_cost) / n; break;
        case ADVISE_SHARED:
        case ADVISE_STREAMS:
            q = 1 / (1 + k->packing * (activity - known_or(p->sm_active, 1)) / pow(d, k->victim)) /
                (1 + k->bandwidth * (dram_all - known_or(p->dram_active, 0)));
            if (c->kind == ADVISE_STREAMS) q *= 1 - k->streams_cost;
            break;
        default:
            q = alone[i] / (1 + k->corun * (alone_all - alone[i]));
            if (!strcmp(c->mode, "green")) q *= 1 - k->green_cost;
            out->law[i] = !advise_rate_probed(p, c->sms[i]);
            break;
        }
        out->progress[i] = n > 1 ? q : fmin(q, 1);
        samples += out->progress[i] * p->rate;
        power += advise_power_at(p, out->progress[i] * p->rate);
        if (!isfinite(p->peak_bytes)) fits = -1;
        else if (c->memory_bytes[i] > 0 && p->peak_bytes > c->memory_bytes[i]) fits = 0;
        mem += p->peak_bytes;
    }
    if (fits == 1 && mem > m->memory_bytes) fits = 0;
    double lo = INFINITY, hi = 0, inv = 0;
    for (int i = 0; i < n; i++) {
        out->stp += out->progress[i];
        inv += 1 / out->progress[i];
        lo = fmin(lo, out->progress[i]);
        hi = fmax(hi, out->progress[i]);
    }
    out->antt = inv / n;
    out->fairness = hi > 0 ? lo / hi : NAN;
    out->energy_per_sample = samples > 0 ? power / samples : NAN;
    out->fits = fits;
    out->score = advise_objective_score(objective, out->stp, out->antt, out->fairness, out->energy_per_sample);
}

static int better(const void *a, const void *b) {
    const advise_prediction *x = a, *y = b;
    int fx = x->fits != 0, fy = y->fits != 0;
    if (fx != fy) return fy - fx;
    int kx = isfinite(x->score), ky = isfinite(y->score);
    if (kx != ky) return ky - kx;
    if (kx && x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->c < y->c ? -1 : x->c > y->c; /* the candidates' order: stable */
}

int advise_rank(const advise_mix *m, const advise_candidate *cands, int n, const advise_constants *k,
                advise_objective objective, advise_prediction *out) {
    for (int i = 0; i < n; i++) advise_predict(m, &cands[i], k, objective, &out[i]);
    qsort(out, (size_t)n, sizeof *out, better);
    return n;
}

static const char *objective_words(advise_objective o) {
    switch (o) {
    case ADVISE_STP: return "STP";
    case ADVISE_ANTT: return "ANTT";
    case ADVISE_FAIRNESS: return "fairness";
    case ADVISE_ENERGY: return "energy per sample (J)";
    }
    return "";
}

static double shown_value(advise_objective o, const advise_prediction *p) {
    return o == ADVISE_ENERGY ? p->energy_per_sample : o == ADVISE_ANTT ? p->antt : o == ADVISE_FAIRNESS ? p->fairness
                                                                                                         : p->stp;
}

void advise_explain(const advise_mix *m, const advise_prediction *ranked, int n, advise_objective objective,
                    char *out, size_t size) {
    size_t at = 0;
#define SAY(...) (at += (size_t)snprintf(out + at, at < size ? size - at : 0, __VA_ARGS__))
    out[0] = 0;
    if (n <= 0) return;
    const advise_prediction *best = &ranked[0];
    SAY("%s: predicted %s %.3g", best->c->label, objective_words(objective), shown_value(objective, best));
    if (n > 1) SAY(" against %.3g under %s, the runner-up", shown_value(objective, &ranked[1]), ranked[1].c->label);
    SAY(". Alone, ");
    const advise_probe *seen[ADVISE_MAX_JOBS];
    int shown = 0;
    for (int i = 0; i < m->count; i++) {
        int again = 0;
        for (int j = 0; j < shown; j++) again |= seen[j] == m->probe[i];
        if (again) continue;
        seen[shown++] = m->probe[i];
        SAY("%s%s runs kernels %.0f%% of the time and keeps %.0f%% of the SMs busy", shown > 1 ? ", " : "",
            m->label[i], 100 * known_or(m->probe[i]->busy, 1), 100 * known_or(m->probe[i]->sm_active, 1));
        if (isfinite(m->probe[i]->dram_active)) SAY(" and %.0f%% of DRAM's bandwidth", 100 * m->probe[i]->dram_active);
    }
    double activity = 0;
    for (int i = 0; i < m->count; i++) activity += known_or(m->probe[i]->sm_active, 1);
    SAY(" (%.0f%% of the SMs together)", 100 * activity);
    if (best->c->kind == ADVISE_PARTITION) {
        SAY("; on its partition ");
        for (int i = 0; i < m->count; i++)
            SAY("%s%s on %d SMs keeps %.2f of its speed", i ? ", " : "", m->label[i], best->c->sms[i],
                best->progress[i]);
    } else {
        SAY("; each job is predicted at ");
        for (int i = 0; i < m->count; i++) SAY("%s%s %.2f", i ? ", " : "", m->label[i], best->progress[i]);
        SAY(" of its speed alone");
    }
    if (best->fits == 0) SAY("; no candidate fits in memory, this one neither");
    SAY(".");
#undef SAY
}

/* --- the fit -------------------------------------------------------------------------------- */

static double fit_error(const advise_measured *runs, int n, const advise_constants *k, int *count) {
    double sum = 0;
    *count = 0;
    for (int r = 0; r < n; r++) {
        advise_prediction p;
        advise_predict(&runs[r].mix, &runs[r].cand, k, ADVISE_STP, &p);
        for (int i = 0; i < runs[r].mix.count; i++) {
            double e = p.progress[i] / runs[r].progress[i] - 1;
            if (!isfinite(e)) continue;
            sum += e * e;
            (*count)++;
        }
    }
    return *count ? sqrt(sum / *count) : NAN;
}

int advise_fit(const advise_measured *runs, int n, advise_constants *k, double *rms_before, double *rms_after) {
    int count;
    *rms_before = fit_error(runs, n, k, &count);
    if (!count) return -1;
    /* coordinate descent: each constant over its range; the steps are halved only after a round in which
     * no constant moved, so that a ridge between two constants (packing against victim) is followed */
    double step[ADVISE_CONSTANT_COUNT];
    for (int f = 0; f < ADVISE_CONSTANT_COUNT; f++)
        step[f] = (advise_constant_infos[f].hi - advise_constant_infos[f].lo) / 20;
    double best = *rms_before;
    for (int round = 0; round < 4000 && step[0] > 1e-7; round++) {
        int any = 0;
        for (int f = 0; f < ADVISE_CONSTANT_COUNT; f++) {
            double *field = advise_constant_at(k, f);
            for (int dir = -1; dir <= 1; dir += 2) {
                double was = *field;
                *field = fmin(advise_constant_infos[f].hi, fmax(advise_constant_infos[f].lo, was + dir * step[f]));
                double e = fit_error(runs, n, k, &count);
                if (e < best - 1e-15) best = e, any = 1;
                else *field = was;
            }
        }
        if (!any)
            for (int f = 0; f < ADVISE_CONSTANT_COUNT; f++) step[f] /= 2;
    }
    *rms_after = best;
    return 0;
}
