/* A data-parallel job's events from its ranks' (see rank_events.h). */
#include "runner/train/rank_events.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner/train/step_window.h"

/* --- the job's events from the ranks' ---------------------------------------------------------- */

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void put_num(cJSON *o, const char *key, double v) {
    cJSON_DeleteItemFromObjectCaseSensitive(o, key);
    if (isnan(v)) cJSON_AddNullToObject(o, key);
    else cJSON_AddNumberToObject(o, key, v);
}

cJSON *rank_events_aggregate(const char *event, cJSON *const *per_rank, int ranks) {
    cJSON *out = cJSON_Duplicate(per_rank[0], 1);
    cJSON_AddNumberToObject(out, "gpus", ranks);
    if (!strcmp(event, "setup")) {
        double batch = num(per_rank[0], "batch");
        if (!isnan(batch)) put_num(out, "global_batch", batch * ranks);
        double biggest = 0;
        for (int r = 0; r < ranks; r++) biggest = fmax(biggest, num(per_rank[r], "footprint_bytes"));
        put_num(out, "footprint_bytes", biggest); /* on each GPU */
        cJSON *devices = cJSON_AddArrayToObject(out, "rank_devices");
        for (int r = 0; r < ranks; r++) {
            const cJSON *d = cJSON_GetObjectItemCaseSensitive(per_rank[r], "device");
            cJSON_AddItemToArray(devices, cJSON_CreateString(cJSON_IsString(d) ? d->valuestring : ""));
        }
        return out;
    }
    if (!strcmp(event, "window")) {
        /* the job trained over the window on every card: its samples are the ranks' together, its
         * steps as slow as the slowest rank's, and it trained while all of its ranks did */
        double samples = 0, rate = 0, start = -INFINITY, end = INFINITY;
        for (int r = 0; r < ranks; r++) {
            samples += num(per_rank[r], "samples"), rate += num(per_rank[r], "samples_per_s");
            start = fmax(start, num(per_rank[r], "train_start")), end = fmin(end, num(per_rank[r], "train_end"));
        }
        put_num(out, "samples", samples);
        put_num(out, "samples_per_s", rate);
        put_num(out, "train_start", isfinite(start) ? start : NAN);
        put_num(out, "train_end", isfinite(end) ? end : NAN);
        const char *slowest_step[] = {"step_ms_median", "step_ms_p10", "step_ms_p90", "step_ms_p99"};
        for (size_t k = 0; k < sizeof slowest_step / sizeof *slowest_step; k++) {
            double m = -INFINITY;
            for (int r = 0; r < ranks; r++) m = fmax(m, num(per_rank[r], slowest_step[k]));
            if (cJSON_GetObjectItemCaseSensitive(out, slowest_step[k])) put_num(out, slowest_step[k], isinf(m) ? NAN : m);
        }
        return out;
    }
    /* epoch: the ranks worked at once; the slowest sets the time */
    const char *summed[] = {"samples", "loader_wait_s", "bad_images", "host_decoded", "cpu_cores"};
    const char *slowest[] = {"seconds", "step_ms_median", "step_ms_p10", "step_ms_p90", "peak_bytes",
                             "device_used_bytes", "t_end"};
    const char *mean[] = {"loss", "train_accuracy", "accuracy", "test_loss"};
    for (size_t k = 0; k < sizeof summed / sizeof *summed; k++) {
        double s = 0;
        for (int r = 0; r < ranks; r++) s += num(per_rank[r], summed[k]);
        if (cJSON_GetObjectItemCaseSensitive(out, summed[k])) put_num(out, summed[k], s);
    }
    for (size_t k = 0; k < sizeof slowest / sizeof *slowest; k++) {
        double m = -INFINITY;
        for (int r = 0; r < ranks; r++) m = fmax(m, num(per_rank[r], slowest[k]));
        if (cJSON_GetObjectItemCaseSensitive(out, slowest[k])) put_num(out, slowest[k], isinf(m) ? NAN : m);
    }
    double first = INFINITY;
    for (int r = 0; r < ranks; r++) first = fmin(first, num(per_rank[r], "t_start"));
    if (cJSON_GetObjectItemCaseSensitive(out, "t_start")) put_num(out, "t_start", isinf(first) ? NAN : first);
    int diverged = 0;
    for (size_t k = 0; k < sizeof mean / sizeof *mean; k++) {
        if (!cJSON_GetObjectItemCaseSensitive(out, mean[k])) continue;
        double s = 0;
        for (int r = 0; r < ranks; r++) s += num(per_rank[r], mean[k]); /* equal local batches */
        if (!strcmp(mean[k], "loss")) diverged = !isfinite(s);
        put_num(out, mean[k], isfinite(s) ? s / ranks : NAN);
    }
    cJSON_DeleteItemFromObjectCaseSensitive(out, "diverged");
    cJSON_AddBoolToObject(out, "diverged", diverged);
    put_num(out, "samples_per_s", num(out, "samples") / num(out, "seconds"));
    return out;
}


struct rank_events {
    const train_events *job;
    int n, epochs;
    rank_events_hooks hooks;
    cJSON **setup;          /* [n] */
    cJSON **epoch;          /* [(epochs + 1) * n] */
    cJSON **window;         /* [STEP_WINDOW_MAX * n] */
    unsigned char *done;    /* [n] */
    int setups, readies;
};

rank_events *rank_events_open(const train_events *job, int ranks, int epochs, const rank_events_hooks *hooks) {
    rank_events *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->job = job, a->n = ranks, a->epochs = epochs;
    if (hooks) a->hooks = *hooks;
    a->setup = calloc((size_t)ranks, sizeof *a->setup);
    a->epoch = calloc((size_t)(epochs + 1) * (size_t)ranks, sizeof *a->epoch);
    a->window = calloc((size_t)STEP_WINDOW_MAX * (size_t)ranks, sizeof *a->window);
    a->done = calloc((size_t)ranks, 1);
    if (!a->setup || !a->epoch || !a->window || !a->done) {
        rank_events_close(a);
        return NULL;
    }
    return a;
}

void rank_events_close(rank_events *a) {
    if (!a) return;
    for (int i = 0; a->epoch && i < (a->epochs + 1) * a->n; i++) cJSON_Delete(a->epoch[i]);
    for (int i = 0; a->window && i < STEP_WINDOW_MAX * a->n; i++) cJSON_Delete(a->window[i]);
    for (int r = 0; a->setup && r < a->n; r++) cJSON_Delete(a->setup[r]);
    free(a->setup), free(a->epoch), free(a->window), free(a->done), free(a);
}

int rank_events_done(const rank_events *a, int rank) { return a->done[rank]; }

static void human_epoch(const rank_events *a, const cJSON *e) {
    fprintf(a->job->human, "epoch %d (%d GPUs): %.0f samples in %.2f s, %.0f samples/s, loss %.4f\n",
            (int)num(e, "epoch"), a->n, num(e, "samples"), num(e, "seconds"), num(e, "samples_per_s"), num(e, "loss"));
    fflush(a->job->human);
}

/* Keeps rank r's event of slot k in table[k * n + r]; the job's, when every rank's is there. */
static cJSON *keep(rank_events *a, cJSON **table, int k, int r, cJSON **e, const char *name) {
    if (table[k * a->n + r]) return NULL;
    table[k * a->n + r] = *e, *e = NULL;
    for (int q = 0; q < a->n; q++)
        if (!table[k * a->n + q]) return NULL;
    return rank_events_aggregate(name, &table[k * a->n], a->n);
}

void rank_events_line(rank_events *a, int r, const char *line) {
    cJSON *e = cJSON_Parse(line);
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(e, "event");
    if (!cJSON_IsString(kind)) {
        fprintf(a->job->human, "rank %d: %s\n", r, line); /* not an event: a human line */
        cJSON_Delete(e);
        return;
    }
    const char *name = kind->valuestring;
    cJSON *copy = cJSON_Duplicate(e, 1);
    char renamed[64];
    snprintf(renamed, sizeof renamed, "rank_%s", name);
    cJSON_ReplaceItemInObjectCaseSensitive(copy, "event", cJSON_CreateString(renamed));
    cJSON_AddNumberToObject(copy, "rank", r);
    train_emit(a->job, copy);
    if (!strcmp(name, "setup")) {
        if (!a->setup[r]) {
            a->setup[r] = e, e = NULL;
            if (++a->setups == a->n) train_emit(a->job, rank_events_aggregate("setup", a->setup, a->n));
        }
    } else if (!strcmp(name, "ready")) {
        if (++a->readies == a->n && a->hooks.all_ready) a->hooks.all_ready(a->hooks.user);
    } else if (!strcmp(name, "epoch")) {
        int k = (int)num(e, "epoch");
        cJSON *job = k >= 1 && k <= a->epochs ? keep(a, a->epoch, k, r, &e, "epoch") : NULL;
        if (job) {
            human_epoch(a, job);
            train_emit(a->job, job);
        }
    } else if (!strcmp(name, "steps") && r == 0) {
        /* the ranks step together: rank 0's step times are the job's */
        train_emit(a->job, e), e = NULL;
    } else if (!strcmp(name, "window")) {
        int k = (int)num(e, "window");
        cJSON *job = k >= 0 && k < STEP_WINDOW_MAX ? keep(a, a->window, k, r, &e, "window") : NULL;
        if (job) train_emit(a->job, job);
    } else if (!strcmp(name, "done")) {
        a->done[r] = 1;
    } else if (!strcmp(name, "error") && a->hooks.failed) {
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
        double code = num(e, "exit_code");
        a->hooks.failed(a->hooks.user, r, code == 2 ? 2 : 1, cJSON_IsString(m) ? m->valuestring : "error");
    }
    cJSON_Delete(e);
}
