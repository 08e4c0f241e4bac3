/* Green-context partition planning (see green_plan.h). Everything here is whole groups of the
 * device's split: a count that is not a multiple of the unit cannot be a partition at all. */
#include "runner/suite/plan/green_plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/list.h"
#include "base/number.h"
#include "runner/suite/plan/mig_profiles.h"

/* Comma-separated numbers, one per job or one for all, by the list and number rules of every
 * grammar (base/list.h, base/number.h); a percentage may end in '%'. */
static int parse_list(const char *option, const char *text, int count, double *out, number_kind kind, double lo,
                      double hi, int percent, char *err, size_t err_size) {
    list_entry e[GREEN_MAX_PARTITIONS];
    if (count > GREEN_MAX_PARTITIONS)
        return snprintf(err, err_size, "%s: %d jobs; at most %d partitions", option, count, GREEN_MAX_PARTITIONS), -1;
    if (list_per_job(option, text, ',', count, e, err, err_size) != 0) return -1;
    for (int i = 0; i < count; i++) {
        char name[256];
        size_t len = e[i].len - (percent && e[i].len > 1 && e[i].at[e[i].len - 1] == '%');
        list_entry_name(option, text, e[i].at == e[0].at && i ? 0 : i, name, sizeof name);
        if (number_parse(kind, lo, hi, name, e[i].at, len, NULL, &out[i], err, err_size) != 0) return -1;
    }
    return 0;
}

int green_parse_sms(const char *text, int count, int *sm, char *err, size_t err_size) {
    double v[GREEN_MAX_PARTITIONS];
    if (parse_list("--green-sm", text, count, v, NUMBER_WHOLE, 1, 100000, 0, err, err_size) != 0) return -1;
    for (int i = 0; i < count; i++) sm[i] = (int)v[i];
    return 0;
}

/* The shares of one GPU: at most 100% in all, known without the GPU. */
static int shares_fit(const double *share, int count, char *err, size_t err_size) {
    double sum = 0;
    for (int i = 0; i < count; i++) sum += share[i];
    if (sum <= 100.0 + 1e-9) return 0;
    snprintf(err, err_size, "--green-share: the shares add up to %g%%, more than 100%%", sum);
    return -1;
}

int green_parse_shares(const char *text, int count, double *share, char *err, size_t err_size) {
    if (parse_list("--green-share", text, count, share, NUMBER_REAL, 0.001, 100, 1, err, err_size) != 0) return -1;
    return shares_fit(share, count, err, err_size);
}

/* Largest remainder: each job at least one group, the rest in proportion to the weights. Jobs of
 * equal weight (identical jobs) get equal partitions: a leftover group goes to all of them or to
 * none, so some groups may stay unused rather than make one of them faster. */
static void apportion(const double *weight, int count, int groups, int *out) {
    double sum = 0, ideal[GREEN_MAX_PARTITIONS];
    for (int i = 0; i < count; i++) sum += weight[i];
    int given = 0;
    for (int i = 0; i < count; i++) {
        ideal[i] = weight[i] / sum * groups;
        out[i] = ideal[i] < 1 ? 1 : (int)floor(ideal[i]);
        given += out[i];
    }
    for (;;) { /* the furthest below its ideal whose equals all fit; none fits: done */
        int tried[GREEN_MAX_PARTITIONS] = {0}, given_now = 0;
        for (int round = 0; round < count && !given_now; round++) {
            int best = -1;
            for (int i = 0; i < count; i++)
                if (!tried[i] && (best < 0 || ideal[i] - out[i] > ideal[best] - out[best])) best = i;
            if (best < 0) break; /* every job tried */
            int ties = 0;
            for (int i = 0; i < count; i++) ties += weight[i] == weight[best];
            for (int i = 0; i < count; i++)
                if (weight[i] == weight[best]) tried[i] = 1;
            if (given + ties > groups) continue;
            for (int i = 0; i < count; i++)
                if (weight[i] == weight[best]) out[i]++, given++;
            given_now = 1;
        }
        if (!given_now) break;
    }
    while (given > groups) { /* the minimums overshot: take from the job furthest above its ideal */
        int best = -1;
        for (int i = 0; i < count; i++)
            if (out[i] > 1 && (best < 0 || out[i] - ideal[i] > out[best] - ideal[best])) best = i;
        out[best]--, given--;
    }
}

int green_plan_make(green_plan *p, const green_gpu *gpu, const green_request *req, char *err, size_t err_size) {
    memset(p, 0, sizeof *p);
    p->gpu = *gpu;
    p->count = req->count;
    int n = req->count, unit = gpu->unit, groups[GREEN_MAX_PARTITIONS];
    if (unit < 1 || gpu->groups < 1) {
        snprintf(err, err_size, "the GPU's green-context split is unknown (%d groups of %d SMs)", gpu->groups, unit);
        return -1;
    }
    if (n < 1 || n > gpu->groups || n > GREEN_MAX_PARTITIONS) {
        snprintf(err, err_size, "%d jobs but the GPU's %d SMs make only %d partitions of %d SMs%s", n,
                 gpu->device_sms, gpu->groups < GREEN_MAX_PARTITIONS ? gpu->groups : GREEN_MAX_PARTITIONS, unit,
                 gpu->groups > GREEN_MAX_PARTITIONS ? " (the job host's limit)" : "");
        return -1;
    }
    double demand_sum = 0;
    int known = req->demand != NULL;
    for (int i = 0; i < n; i++) {
        known &= req->demand && req->demand[i] > 0;
        if (req->demand && req->demand[i] > 0) demand_sum += req->demand[i];
    }
    for (int i = 0; i < n; i++) p->demand_share[i] = known ? req->demand[i] / demand_sum : NAN;
    if (req->sm) {
        p->basis = "--green-sm";
        for (int i = 0; i < n; i++) {
            if (req->sm[i] < unit) {
                snprintf(err, err_size, "--green-sm: job %d's %d SMs are fewer than the minimum partition of %d SMs",
                         i, req->sm[i], unit);
                return -1;
            }
            groups[i] = (req->sm[i] + unit / 2) / unit;
        }
    } else if (req->share) {
        p->basis = "--green-share";
        if (shares_fit(req->share, n, err, err_size) != 0) return -1;
        for (int i = 0; i < n; i++) {
            groups[i] = (int)floor(req->share[i] / 100.0 * gpu->groups + 1e-9);
            if (groups[i] < 1) {
                snprintf(err, err_size, "--green-share: job %d's %g%% of %d SMs is fewer than the minimum partition "
                         "of %d SMs", i, req->share[i], gpu->groups * unit, unit);
                return -1;
            }
        }
    } else {
        double weight[GREEN_MAX_PARTITIONS];
        p->basis = known ? "compute demand" : "equal shares";
        for (int i = 0; i < n; i++) weight[i] = known ? req->demand[i] : 1.0;
        apportion(weight, n, gpu->groups, groups);
    }
    int total = 0;
    for (int i = 0; i < n; i++) total += groups[i];
    if (total > gpu->groups) {
        snprintf(err, err_size, "%s: the partitions take %d SMs (rounded to groups of %d) but the GPU's groups "
                 "hold %d of its %d SMs", p->basis, total * unit, unit, gpu->groups * unit, gpu->device_sms);
        return -1;
    }
    for (int i = 0; i < n; i++) p->sm[i] = groups[i] * unit;
    return 0;
}

void green_plan_print(const green_plan *p, const char *const *labels, FILE *out) {
    int used = 0;
    for (int i = 0; i < p->count; i++) used += p->sm[i];
    fprintf(out, "green partitions (%s; the GPU's %d SMs split into %d groups of %d SMs):\n", p->basis,
            p->gpu.device_sms, p->gpu.groups, p->gpu.unit);
    for (int i = 0; i < p->count; i++) {
        fprintf(out, "  job %d %-24.24s %4d SMs (%5.1f%% of the GPU)", i, labels ? labels[i] : "", p->sm[i],
                100.0 * p->sm[i] / p->gpu.device_sms);
        if (!isnan(p->demand_share[i])) fprintf(out, ", demand share %5.1f%%", 100.0 * p->demand_share[i]);
        fprintf(out, "\n");
    }
    fprintf(out, "  %d of %d SMs in partitions; %d unused\n", used, p->gpu.device_sms, p->gpu.device_sms - used);
}

void green_estimate_gpu(const mig_gpu *table, green_gpu *gpu) {
    int unit = table->name[0] == 'A' ? 4 : 8;
    *gpu = (green_gpu){table->total_sms, unit, table->total_sms / unit};
}

int green_parse_probe(const char *text, green_gpu *gpu, char *err, size_t err_size) {
    cJSON *root = cJSON_Parse(text);
    const cJSON *sms = cJSON_GetObjectItemCaseSensitive(root, "device_sms");
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(root, "unit");
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "groups");
    int ok = cJSON_IsNumber(sms) && cJSON_IsNumber(unit) && cJSON_IsNumber(groups) && unit->valueint > 0 &&
             groups->valueint > 0 && sms->valueint >= (long long)unit->valueint * groups->valueint;
    if (ok) *gpu = (green_gpu){sms->valueint, unit->valueint, groups->valueint};
    else snprintf(err, err_size, "job_host --probe: expected {\"device_sms\":N,\"unit\":N,\"groups\":N}, got: %.200s", text);
    cJSON_Delete(root);
    return ok ? 0 : -1;
}
