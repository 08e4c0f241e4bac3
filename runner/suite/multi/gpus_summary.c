/* The summary of a run over several GPUs (see gpus_summary.h). */
#include "runner/suite/multi/gpus_summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/metrics.h"
#include "results/results.h"

static double number_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *text_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* key: v, or null and "<key>_null_reason": why. */
static void put(cJSON *o, const char *key, double v, const char *why) {
    if (isfinite(v)) {
        cJSON_AddNumberToObject(o, key, v);
        return;
    }
    char reason[96];
    snprintf(reason, sizeof reason, "%s_null_reason", key);
    cJSON_AddNullToObject(o, key);
    cJSON_AddStringToObject(o, reason, why && *why ? why : "not measured");
}

static void workload_name(const job_spec *s, char *out, size_t size) {
    snprintf(out, size, "%s %s batch %d%s%s", s->model, s->data, s->batch, s->precision_given ? " " : "",
             s->precision_given ? precision_name(s->precision) : "");
}

/* Samples per workload of the jobs listed (samples[k]: job jobs[k]'s, NaN unknown); *total: their
 * sum when every job is one workload, else NaN (a sum of unlike samples means nothing). */
static cJSON *samples_by_workload(const mix *m, const int *jobs, const double *samples, int n, double *total,
                                  char *text, size_t text_size) {
    cJSON *list = cJSON_CreateArray();
    int done[MIX_MAX_JOBS] = {0}, groups = 0;
    size_t len = 0;
    text[0] = 0;
    for (int a = 0; a < n; a++) {
        if (done[a]) continue;
        double sum = 0;
        cJSON *members = cJSON_CreateArray();
        for (int b = a; b < n; b++) {
            job_spec pair[2] = {m->jobs[jobs[a]], m->jobs[jobs[b]]};
            if (done[b] || !metrics_same_workload(pair, 2)) continue;
            done[b] = 1;
            sum += samples[b];
            cJSON_AddItemToArray(members, cJSON_CreateNumber(jobs[b]));
        }
        char name[256];
        workload_name(&m->jobs[jobs[a]], name, sizeof name);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "workload", name);
        cJSON_AddItemToObject(o, "jobs", members);
        put(o, "samples", sum, "a job's samples are unknown");
        cJSON_AddItemToArray(list, o);
        if (len < text_size)
            len += (size_t)snprintf(text + len, text_size - len, "%s%s: %.0f", groups ? ", " : "", m->jobs[jobs[a]].model,
                                    sum);
        *total = groups++ ? NAN : sum;
    }
    if (!groups) *total = NAN;
    return list;
}

/* One card's summary.json and reference read into in (its jobs from offset on), with why a
 * normalized metric cannot be had; returns the card's first go (NaN unknown). */
typedef struct card_read {
    cJSON *run, *reference;
    char why[512];
    double first_go;
} card_read;

static void read_card(const gpus_card *c, const char *mode_dir, const char *no_reference,
                      card_read *r) {
    char path[PATH_MAX * 2];
    memset(r, 0, sizeof *r);
    r->first_go = NAN;
    if (c->run_folder[0]) {
        snprintf(path, sizeof path, "%s%s%s/summary.json", c->run_folder, mode_dir ? "/" : "", mode_dir ? mode_dir : "");
        r->run = results_read_json(path);
    }
    if (!r->run) {
        snprintf(r->why, sizeof r->why, "GPU %d's run wrote no summary.json", c->gpu);
        return;
    }
    if (c->reference[0]) {
        snprintf(path, sizeof path, "%s/summary.json", c->reference);
        r->reference = results_read_json(path);
        if (!r->reference) snprintf(r->why, sizeof r->why, "GPU %d's reference %s cannot be read", c->gpu, path);
    } else {
        snprintf(r->why, sizeof r->why, "%s", no_reference);
    }
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(r->run, "jobs");
    const cJSON *solo = cJSON_GetObjectItemCaseSensitive(r->reference, "jobs");
    for (int k = 0; k < c->job_count; k++) {
        double go = number_of(cJSON_GetArrayItem(jobs, k), "go_t");
        if (isfinite(go) && !(go >= r->first_go)) r->first_go = go;
        const cJSON *alone = cJSON_GetArrayItem(solo, k);
        if (r->reference && !r->why[0] && strcmp(text_of(alone, "job"), text_of(cJSON_GetArrayItem(jobs, k), "job")))
            snprintf(r->why, sizeof r->why, "GPU %d's reference %s ran other jobs (job %d there: %s)", c->gpu,
                     c->reference, k, alone ? text_of(alone, "job") : "none");
    }
}

/* Whether a run folder's summary is of the window measurement (results/metrics.h). */
static int window_measured(const cJSON *summary) { return !strcmp(text_of(summary, "measurement"), "window"); }

/* A job's rate in its run's measurement: over the common window, or its timed epoch. */
static double rate_of(const cJSON *summary, const cJSON *job) {
    return number_of(job, window_measured(summary) ? "window_samples_per_s" : "timed_samples_per_s");
}

/* Job k of card c into in->jobs[at]; turnaround from first_go. */
static void job_input(const card_read *r, int k, double first_go, metrics_job_input *in) {
    const cJSON *j = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r->run, "jobs"), k);
    in->rate = rate_of(r->run, j);
    in->samples = number_of(j, "samples");
    in->turnaround_s = number_of(j, "end_t") - first_go;
    if (r->reference && !r->why[0]) {
        const cJSON *alone = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r->reference, "jobs"), k);
        in->solo_rate = rate_of(r->reference, alone);
        in->alone_s = number_of(alone, "end_t") - number_of(alone, "go_t");
    }
}

/* Why the metrics of these inputs are null: the first job missing what they need. */
static void missing(const mix *m, const metrics_input *in, const int *jobs, const int *gpu_of, char *why, size_t size) {
    for (int i = 0; i < in->count; i++) {
        const metrics_job_input *j = &in->jobs[i];
        const char *what = !(j->rate > 0) ? "no measured rate" : !(j->solo_rate > 0) ? "no measured rate alone"
                           : !(j->alone_s > 0) ? "no go-to-end alone" : NULL;
        if (what) {
            snprintf(why, size, "job %d (%s) on GPU %d has %s", jobs[i], m->jobs[jobs[i]].label, gpu_of[i], what);
            return;
        }
    }
    snprintf(why, size, "not measured");
}

static void print_value(FILE *out, double v, const char *format) {
    if (isfinite(v)) fprintf(out, format, v);
    else fprintf(out, "%8s", "-");
}

static void print_row(FILE *out, const char *name, const char *status, double makespan, double energy, double stp,
                      double antt, const char *samples, const char *mix_text) {
    if (!out) return;
    fprintf(out, "%-5s %-9s ", name, status);
    print_value(out, makespan, "%8.2fs");
    fprintf(out, " ");
    print_value(out, energy, "%10.1f");
    fprintf(out, " ");
    print_value(out, stp, "%8.2f");
    fprintf(out, " ");
    print_value(out, antt, "%8.2f");
    fprintf(out, "  %-40s %s\n", samples, mix_text);
}

cJSON *gpus_summary_mode(const mix *m, const gpus_card *cards, int count, const char *mode_dir, int sequential,
                         const char *no_reference, FILE *out) {
    cJSON *root = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(root, "gpus");
    card_read *reads = calloc((size_t)(count > 0 ? count : 1), sizeof *reads);
    if (!reads) { /* every card's figures or none: never a part of them */
        cJSON_AddStringToObject(root, "error", "out of memory reading the cards' summaries");
        return root;
    }
    int n = count;
    double first_go = NAN;
    for (int g = 0; g < n; g++) {
        read_card(&cards[g], mode_dir, no_reference, &reads[g]);
        if (isfinite(reads[g].first_go) && !(reads[g].first_go >= first_go)) first_go = reads[g].first_go;
    }
    if (out)
        fprintf(out, "\n%-5s %-9s %9s %10s %8s %8s  %-40s %s\n", "GPU", "status", "makespan", "energy J", "STP",
                "ANTT", "samples per workload", "mix");
    static metrics_input all;
    metrics_input_init(&all);
    all.sequential = sequential;
    for (int g = 0; g < n && !all.window; g++) /* every run has the same measurement; one that ran says which */
        all.window = window_measured(reads[g].run);
    int all_jobs[MIX_MAX_JOBS], all_gpu[MIX_MAX_JOBS], complete = 1, stp_cards_known = 1;
    double all_samples[MIX_MAX_JOBS], makespan = NAN, energy = 0, stp_cards = 0;
    char energy_why[256] = "", stp_why[512] = "", antt_why[512] = "";
    for (int g = 0; g < n; g++) {
        const gpus_card *c = &cards[g];
        card_read *r = &reads[g];
        const char *state = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(r->run, "status"))
                                ? text_of(r->run, "status") : c->exit_status == 0 ? "complete" : "failed";
        static metrics_input in;
        metrics_input_init(&in);
        in.sequential = sequential;
        in.window = window_measured(r->run);
        in.count = c->job_count;
        int gpu_of[MIX_MAX_JOBS];
        double samples[MIX_MAX_JOBS];
        for (int k = 0; k < c->job_count && r->run; k++) {
            job_input(r, k, r->first_go, &in.jobs[k]);
            if (all.count < MIX_MAX_JOBS) {
                job_input(r, k, first_go, &all.jobs[all.count]);
                all_jobs[all.count] = c->jobs[k], all_gpu[all.count] = c->gpu;
                all_samples[all.count++] = in.jobs[k].samples;
            }
            gpu_of[k] = c->gpu, samples[k] = in.jobs[k].samples;
        }
        for (int k = r->run ? c->job_count : 0; k < c->job_count; k++) samples[k] = NAN;
        run_metrics rm;
        metrics_compute(&in, &rm);
        char why[512];
        if (r->why[0]) snprintf(why, sizeof why, "%s", r->why);
        else missing(m, &in, c->jobs, gpu_of, why, sizeof why);
        double mk = number_of(r->run, "makespan_s"), e = number_of(r->run, "energy_j"), total;
        char text[512];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "gpu", c->gpu);
        if (c->ddp) cJSON_AddNumberToObject(o, "data_parallel_job", c->jobs[0]);
        cJSON_AddStringToObject(o, "mix", c->mix);
        cJSON_AddStringToObject(o, "run_folder", c->run_folder);
        if (c->reference[0]) cJSON_AddStringToObject(o, "reference", c->reference);
        else cJSON_AddNullToObject(o, "reference");
        cJSON_AddStringToObject(o, "status", state);
        cJSON_AddNumberToObject(o, "exit_status", c->exit_status);
        put(o, "makespan_s", mk, "no summary.json");
        put(o, "energy_j", e, c->ddp ? "a data-parallel job's energy is its cards' runs'"
                              : r->run ? "no energy counter (NVML)" : "no summary.json");
        put(o, "stp", rm.stp, why);
        put(o, "antt", rm.antt, why);
        cJSON_AddItemToObject(o, "samples_by_workload",
                              samples_by_workload(m, c->jobs, samples, c->job_count, &total, text, sizeof text));
        put(o, "total_samples", total, "its jobs are unlike workloads: see samples_by_workload");
        cJSON_AddItemToArray(list, o);
        char name[16];
        if (c->ddp) snprintf(name, sizeof name, "ddp%d", c->jobs[0]);
        else snprintf(name, sizeof name, "%d", c->gpu);
        print_row(out, name, state, mk, e, rm.stp, rm.antt, text, c->mix);
        complete &= strcmp(state, "complete") == 0;
        if (isfinite(mk) && !(mk <= makespan)) makespan = mk;
        if (!isfinite(e) && !energy_why[0] && !c->ddp)
            snprintf(energy_why, sizeof energy_why, "GPU %d's energy is unknown", c->gpu);
        if (!c->ddp) energy += e;
        if (isfinite(rm.stp)) stp_cards += rm.stp;
        else if (stp_cards_known) stp_cards_known = 0, snprintf(stp_why, sizeof stp_why, "%s", why);
        if (!isfinite(rm.antt) && !antt_why[0]) snprintf(antt_why, sizeof antt_why, "%s", why);
    }
    run_metrics whole;
    metrics_compute(&all, &whole);
    /* a sequential mode progresses one job at a time on each card: the cards' 1s add up */
    double stp = sequential ? (stp_cards_known ? stp_cards : NAN) : stp_cards_known ? whole.stp : NAN;
    if (!stp_why[0] && !isfinite(stp)) missing(m, &all, all_jobs, all_gpu, stp_why, sizeof stp_why);
    if (!antt_why[0] && !isfinite(whole.antt)) missing(m, &all, all_jobs, all_gpu, antt_why, sizeof antt_why);
    double total;
    char text[512];
    cJSON *t = cJSON_AddObjectToObject(root, "total");
    cJSON_AddStringToObject(t, "status", complete ? "complete" : "partial");
    put(t, "makespan_s", makespan, "no GPU's run wrote a summary");
    put(t, "energy_j", energy_why[0] ? NAN : energy, energy_why);
    put(t, "stp", stp, stp_why);
    put(t, "antt", whole.antt, antt_why);
    cJSON_AddItemToObject(t, "samples_by_workload",
                          samples_by_workload(m, all_jobs, all_samples, all.count, &total, text, sizeof text));
    put(t, "total_samples", total, "the jobs are unlike workloads: see samples_by_workload");
    cJSON_AddStringToObject(root, "definitions",
                            "each job against itself alone on the same card (the reference); STP: sum of normalized "
                            "throughputs (sequential: 1 per card); ANTT: mean turnaround / alone, from the card's "
                            "first go (total: the run's first go); makespan: the longest GPU's; energy: summed; "
                            "samples: summed per workload only");
    print_row(out, "all", complete ? "complete" : "partial", makespan, energy_why[0] ? NAN : energy, stp,
              whole.antt, text, "");
    if (out && !isfinite(stp)) fprintf(out, "STP -: %s\n", stp_why);
    if (out && !isfinite(whole.antt) && strcmp(stp_why, antt_why)) fprintf(out, "ANTT -: %s\n", antt_why);
    for (int g = 0; g < n; g++) cJSON_Delete(reads[g].run), cJSON_Delete(reads[g].reference);
    free(reads);
    return root;
}
