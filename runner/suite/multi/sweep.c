/* The MIG layout sweep (see sweep.h). Each layout is given to the mode as --mig-layout would
 * give it: the mode plans it again and runs as usual, so a layout of the sweep is run exactly
 * as the same layout given by hand. */
#define _GNU_SOURCE
#include "runner/suite/multi/sweep.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "runner/suite/run/run_json.h"
#include "runner/suite/plan/mig_plan.h"

typedef struct sweep_list {
    int count;
    char layout[MIG_MAX_LAYOUTS][160];  /* profiles in job order, ',' between */
    const char *names[MIG_MAX_LAYOUTS];
    int sms[MIG_MAX_LAYOUTS];
    char gpu[MIG_NAME_MAX];
    int unfit;                          /* "all": layouts no assignment holds the jobs' memory in */
    int shared;                         /* "all": of them, one GPU instance shared by every job */
} sweep_list;

static int partitioned_mig(const suite_mode *m) {
    return m && (m->flags & MODE_PARTITIONED) && (m->flags & (MODE_NEEDS_MIG | MODE_MIG_EMULATION));
}

static void add_layout(sweep_list *l, const mig_gpu *gpu, const mig_candidate *c, int count) {
    int sms = 0;
    mig_candidate_text(gpu, c, count, l->layout[l->count], sizeof l->layout[0]);
    for (int j = 0; j < count; j++)
        sms += mig_ci_sms(gpu, c->profile[j], c->ci_slices[j] ? c->ci_slices[j] : gpu->profiles[c->profile[j]].compute_slices);
    l->names[l->count] = l->layout[l->count];
    l->sms[l->count++] = sms;
}

/* The layouts to run: every distinct valid one ("all"; each given to the jobs as fill would
 * give it), or the list's, each checked as --mig-layout is. 0, or -1 with err. */
static int build_list(const suite_ctx *c, sweep_list *l, char *err, size_t err_size) {
    const char *text = mode_mig_options_of(c->o)->layouts;
    memset(l, 0, sizeof *l);
    mig_gpu *gpu = calloc(1, sizeof *gpu);
    mig_plan *plan = calloc(1, sizeof *plan);
    mig_layout *layouts = calloc(MIG_MAX_LAYOUTS, sizeof *layouts);
    mig_job jobs[MIX_MAX_JOBS];
    int rc = -1;
    if (!gpu || !plan || !layouts) {
        snprintf(err, err_size, "out of memory");
        goto done;
    }
    if (c->count > MIG_MAX_INSTANCES) {
        snprintf(err, err_size, "--mig-layouts: %d jobs; a MIG GPU holds at most %d instances", c->count,
                 MIG_MAX_INSTANCES);
        goto done;
    }
    mode_mig_jobs(c, NULL, c->count, jobs);
    if (mode_mig_table(c, gpu, err, err_size) != 0) goto done;
    snprintf(l->gpu, sizeof l->gpu, "%s", gpu->name);
    if (strcmp(text, "all") == 0) {
        int n = mig_enumerate_layouts(gpu, c->count, 0, 0, layouts, MIG_MAX_LAYOUTS);
        for (int i = 0; i < n; i++) {
            mig_candidate best;
            memset(&best, 0, sizeof best);
            if (mig_assign_layout(gpu, jobs, c->count, &layouts[i], &best) == 0) add_layout(l, gpu, &best, c->count);
            else l->unfit++;
        }
        /* shared GPU instances: asked for, or where no layout of separate ones holds the jobs */
        for (int i = 0; i < gpu->profile_count && (mode_mig_options_of(c->o)->share_memory || l->count == 0) &&
                        l->count < MIG_MAX_LAYOUTS; i++) {
            mig_candidate best;
            if (mig_assign_shared(gpu, jobs, c->count, i, &best) == 0) add_layout(l, gpu, &best, c->count), l->shared++;
        }
        if (l->count == 0) {
            snprintf(err, err_size, "--mig-layouts all: none of the %d layout(s) of %d instance(s) on %s holds "
                     "every job's memory", n, c->count, gpu->name);
            goto done;
        }
        rc = 0;
        goto done;
    }
    for (const char *p = text; *p && l->count < MIG_MAX_LAYOUTS;) {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char item[512], why[1024];
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
        if (mig_plan_jobs(plan, gpu, jobs, c->count, item, 0, 0, why, sizeof why) != 0) {
            snprintf(err, err_size, "--mig-layouts: layout %d \"%s\": %s", l->count + 1, item, why);
            goto done;
        }
        mig_candidate given = {0};
        for (int k = 0; k < plan->count; k++) {
            const mig_planned *pl = &plan->instances[k];
            given.profile[pl->job] = pl->profile, given.ci_slices[pl->job] = pl->shared ? pl->ci_slices : 0;
        }
        add_layout(l, gpu, &given, c->count);
        p = end ? end + 1 : p + len;
    }
    rc = 0;
done:
    free(gpu);
    free(plan);
    free(layouts);
    return rc;
}

int suite_sweep_requested(const run_request *o) { return mode_mig_options_of(o)->layouts != NULL; }

static int check(suite_ctx *c, FILE *out, cJSON *json) {
    const run_request *o = c->o;
    const mode_mig_options *mig = mode_mig_options_of(o);
    if (!partitioned_mig(o->mode)) {
        fprintf(stderr, "error: --mig-layouts sweeps MIG layouts: give --mode mig-emulate, or --mode mig "
                "with --mig-create\n");
        return EXIT_USAGE;
    }
    if ((o->mode->flags & MODE_NEEDS_MIG) && !mig->create) { /* the dry run refuses what the run would */
        fprintf(stderr, "error: --mig-layouts with --mode mig creates each layout's instances: add "
                "--mig-create (as root), or sweep emulated layouts with --mode mig-emulate\n");
        return EXIT_USAGE;
    }
    sweep_list *l = calloc(1, sizeof *l);
    char err[2048];
    int status = -1;
    if (!l || build_list(c, l, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", l ? err : "out of memory");
        status = EXIT_USAGE;
    } else if (out) {
        fprintf(out, "\nlayout sweep (--mig-layouts %s): %d layout(s) of %d instance(s) on %s, each run "
                "(and each job alone in its partition) after one serial run:\n", mig->layouts, l->count,
                c->count, l->gpu);
        for (int k = 0; k < l->count; k++)
            fprintf(out, "  %3d  %-40s %4d SMs\n", k + 1, l->names[k], l->sms[k]);
        if (l->unfit)
            fprintf(out, "  (%d more layout(s) cannot hold every job's memory)\n", l->unfit);
        if (l->shared)
            fprintf(out, "  (%d of them: every job on a compute instance of one shared GPU instance)\n", l->shared);
    } else if (json) {
        cJSON *sweep = cJSON_AddObjectToObject(json, "layout_sweep");
        cJSON_AddStringToObject(sweep, "layouts_given", mig->layouts);
        cJSON_AddStringToObject(sweep, "gpu", l->gpu);
        cJSON *a = cJSON_AddArrayToObject(sweep, "layouts");
        for (int k = 0; k < l->count; k++) {
            cJSON *one = cJSON_CreateObject();
            cJSON_AddStringToObject(one, "layout", l->names[k]);
            cJSON_AddNumberToObject(one, "sm_count", l->sms[k]);
            cJSON_AddItemToArray(a, one);
        }
        cJSON_AddNumberToObject(sweep, "unfit", l->unfit);
        if (l->shared) cJSON_AddNumberToObject(sweep, "shared", l->shared);
    }
    free(l);
    return status;
}

static int exit_status(const run_summary *s) {
    if (jobs_stop_signal()) return 128 + jobs_stop_signal();
    if (!s->status || strcmp(s->status, "failed") == 0) return EXIT_RUNTIME;
    return strcmp(s->status, "complete") == 0 ? EXIT_OK : EXIT_PARTIAL;
}

static int run(suite_ctx *c) {
    const run_request *given = c->o;
    const suite_mode *mode = given->mode;
    sweep_list *l = calloc(1, sizeof *l);
    run_summary *runs = l ? calloc(MIG_MAX_LAYOUTS, sizeof *runs) : NULL;
    char err[2048], dir[PATH_MAX + 256];
    if (!runs || build_list(c, l, err, sizeof err) != 0) {
        fprintf(stderr, "error: %s\n", runs ? err : "out of memory");
        free(l), free(runs);
        return EXIT_USAGE;
    }
    int worst = EXIT_OK;
    serial_baseline base = c->baseline;
    if (!base.known) {  /* every layout is measured against the same jobs alone */
        const suite_mode *serial = suite_mode_with(MODE_SEQUENTIAL);
        run_summary alone;
        snprintf(dir, sizeof dir, "%s/serial", c->run_dir);
        if (results_make_dirs(dir, err, sizeof err) == 0 &&
            suite_execute(c, serial, NULL, c->count, dir, NULL, &alone) == 0)
            results_baseline_from(&alone, "serial part of this run", &base);
        else fprintf(stderr, "warning: no serial run: the layouts are compared without normalized metrics\n");
    }
    int n = 0;
    for (int k = 0; k < l->count && !jobs_stop_signal(); k++, n++) {
        run_request one;
        mode_mig_options mig;
        mode_mig_with_layout(given, l->layout[k], &one, &mig);
        c->o = &one;
        char name[160];
        job_safe_name(name, sizeof name, l->layout[k]);
        snprintf(dir, sizeof dir, "%s/layout-%02d-%s", c->run_dir, k + 1, name);
        fprintf(stderr, "[sweep] layout %d of %d: %s\n", k + 1, l->count, l->layout[k]);
        int planned = results_make_dirs(dir, err, sizeof err) == 0 &&
                      (!mode->plan || mode->plan(c, err, sizeof err) == 0);
        if (!planned) {
            fprintf(stderr, "[sweep] layout %s: %s\n", l->layout[k], err);
            memset(&runs[n], 0, sizeof runs[n]);
            snprintf(runs[n].mode, sizeof runs[n].mode, "%s", mode->name);
            runs[n].status = "failed";
        } else {
            suite_execute(c, mode, NULL, c->count, dir, base.known ? &base : NULL, &runs[n]);
        }
        c->o = given;
        int e = exit_status(&runs[n]);
        if (e != EXIT_OK && (worst == EXIT_OK || e > 128)) worst = e;
    }
    for (int k = 0; k < n; k++) results_compare(&runs[k], base.known ? &base : NULL);
    results_print_layouts(stdout, l->names, l->sms, runs, n);
    if (results_write_layouts(c->run_dir, l->names, l->sms, runs, n, err, sizeof err) != 0)
        fprintf(stderr, "error: %s\n", err);
    run_json_write(c, NULL, c->run_dir, "layouts", jobs_stop_signal() ? "interrupted"
                                                   : worst == EXIT_OK ? "complete" : "partial");
    free(l);
    free(runs);
    return worst;
}

const suite_pass suite_sweep_pass = {.check = check, .run = run};
