/* Repeats of a run (see repeat.h). */
#include "runner/suite/multi/repeat.h"

#include <stdlib.h>
#include <string.h>

#include "results/repeats.h"
#include "runner/suite/run/run_json.h"

int suite_repeat_requested(const run_request *o) { return o->repeat > 1; }

void suite_repeat_order(const unsigned *flags, int count, int r, int *order) {
    int n = 0, rotated[SUITE_MODES_MAX], m = 0;
    for (int k = 0; k < count; k++) {
        if (flags[k] & MODE_SEQUENTIAL) order[n++] = k;
        else if (m < SUITE_MODES_MAX) rotated[m++] = k;
    }
    for (int k = 0; k < m; k++) order[n++] = rotated[(r + k) % m];
}

/* Repeat r's order of the run's modes (one mode: just it). */
static int order_of(const suite_ctx *c, int r, int *order) {
    unsigned flags[SUITE_MODES_MAX];
    for (int k = 0; k < c->mode_count; k++) flags[k] = c->modes[k].mode->flags;
    suite_repeat_order(flags, c->mode_count, r, order);
    return c->mode_count;
}

/* The repeats in the dry run's JSON. */
static void describe(const suite_ctx *c, cJSON *root) {
    cJSON *list = cJSON_AddArrayToObject(root, "repeats");
    for (int r = 0; r < c->o->repeat; r++) {
        int order[SUITE_MODES_MAX], n = order_of(c, r, order);
        char folder[32];
        snprintf(folder, sizeof folder, "repeat-%d", r + 1);
        cJSON *o = cJSON_CreateObject(), *modes = cJSON_AddArrayToObject(o, "modes");
        cJSON_AddNumberToObject(o, "repeat", r + 1);
        cJSON_AddStringToObject(o, "folder", folder);
        for (int k = 0; k < n; k++) cJSON_AddItemToArray(modes, cJSON_CreateString(c->modes[order[k]].mode->name));
        cJSON_AddItemToArray(list, o);
    }
}

/* The dry run's listing of the repeats (text or JSON); nothing to refuse. */
static int check(suite_ctx *c, FILE *out, cJSON *json) {
    const run_request *o = c->o;
    if (json) describe(c, json);
    if (!out) return -1;
    fprintf(out, "\nrepeats (--repeat %d), each a run folder of its own, then repeats.json and repeats.csv "
            "across them:\n", o->repeat);
    int sequential = 0;
    for (int k = 0; k < c->mode_count; k++) sequential += (c->modes[k].mode->flags & MODE_SEQUENTIAL) != 0;
    if (!o->mode)
        fprintf(out, "  (%sthe %smodes rotate: repeat r starts with the r-th, so that each runs first once when "
                "--repeat is at least their number)\n", sequential ? "serial first in each, its baseline; " : "",
                sequential ? "collocated " : "");
    for (int r = 0; r < o->repeat; r++) {
        int order[SUITE_MODES_MAX], n = order_of(c, r, order);
        fprintf(out, "  repeat-%d:", r + 1);
        for (int k = 0; k < n; k++) fprintf(out, "%s %s", k ? "," : "", c->modes[order[k]].mode->name);
        fprintf(out, "\n");
    }
    return -1;
}


/* One repeat into dir: the mode, or every mode in this repeat's order. Returns its exit status. */
static int run_one(suite_ctx *c, int r, const char *dir) {
    const run_request *o = c->o;
    if (!o->mode) {
        int order[SUITE_MODES_MAX];
        order_of(c, r, order);
        return suite_run_modes(c, dir, order);
    }
    run_summary s;
    suite_execute(c, o->mode, NULL, c->count, dir, c->baseline.known ? &c->baseline : NULL, &s);
    return suite_exit_for(&s, jobs_stop_signal() != 0);
}

/* The summary across the repeats that ran: printed, repeats.json and repeats.csv. */
static void summarize(const suite_ctx *c, char (*dirs)[PATH_MAX + 32], int ran) {
    const char *names[SUITE_MODES_MAX], *paths[REPEATS_MAX];
    char err[2048];
    for (int k = 0; k < c->mode_count; k++) names[k] = c->modes[k].mode->name;
    for (int r = 0; r < ran; r++) paths[r] = dirs[r];
    repeats *sum = calloc(1, sizeof *sum);
    if (!sum || repeats_collect(sum, paths, ran, names, c->mode_count, err, sizeof err) != 0 ||
        repeats_write(c->run_dir, sum, err, sizeof err) != 0)
        fprintf(stderr, "error: %s\n", sum ? err : "out of memory");
    else repeats_print(stdout, sum);
    if (sum) repeats_free(sum);
    free(sum);
}

static int run(suite_ctx *c) {
    const run_request *o = c->o;
    char (*dirs)[PATH_MAX + 32] = calloc((size_t)o->repeat, sizeof *dirs);
    char err[2048];
    if (!dirs) return EXIT_RUNTIME;
    int worst = EXIT_OK, ran = 0;
    for (int r = 0; r < o->repeat && !jobs_stop_signal(); r++) {
        snprintf(dirs[r], sizeof dirs[r], "%s/repeat-%d", c->run_dir, r + 1);
        if (results_make_dirs(dirs[r], err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            worst = EXIT_RUNTIME;
            break;
        }
        fprintf(stderr, "[repeat] %d of %d into %s\n", r + 1, o->repeat, dirs[r]);
        int e = run_one(c, r, dirs[r]);
        ran++;
        if (e != EXIT_OK && (worst == EXIT_OK || e > 128)) worst = e;
    }
    if (ran > 0) summarize(c, dirs, ran);
    int stopped = jobs_stop_signal() != 0;
    run_json_write(c, NULL, c->run_dir, o->mode ? o->mode->name : SUITE_ALL,
                   stopped ? "interrupted" : worst == EXIT_OK ? "complete" : "partial");
    free(dirs);
    return stopped ? 128 + jobs_stop_signal() : worst;
}

const suite_pass suite_repeat_pass = {.check = check, .run = run};
