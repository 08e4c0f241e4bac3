/* The run around the collocation modes (see suite.h, mode.h). One mode run = the mode's start,
 * every job's environment, the monitor, the jobs, then always the mode's stop and what was
 * measured written. Which mode runs is data: its flags and operations, never its name. */
#define _GNU_SOURCE
#include "runner/suite/run/suite.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/data_check.h"
#include "kernels/knobs.h"
#include "results/results.h"
#include "results/faults.h"
#include "results/kernel_attribution.h"
#include "runner/suite/run/kernel_runs.h"
#include "runner/suite/run/request_file.h"
#include "runner/suite/run/run_json.h"
#include "runner/suite/modes/isolation.h"
#include "runner/suite/gpu/mps.h"

/* --- one mode -------------------------------------------------------------------------------- */

static void on_phase(void *user, const job_record *job, const char *phase, double t) {
    (void)t;
    mode_run *r = user;
    if (r->mon_on)
        monitor_job_phase(&r->mon, job->index, job->proc->pid, phase,
                          job->epoch_count ? job->epochs[job->epoch_count - 1].epoch : 0);
}

static void start_monitor(mode_run *r) {
    const run_request *o = r->ctx->o;
    char *why = r->mon_why, path[PATH_MAX + 32];
    size_t why_size = sizeof r->mon_why;
    if (o->no_monitor) {
        snprintf(why, why_size, "--no-monitor: the GPU's energy was not read");
        return;
    }
    monitor_source src;
    int units = r->gpu_instance_count < MONITOR_MAX_UNITS - 1 ? r->gpu_instance_count : MONITOR_MAX_UNITS - 1;
    if (monitor_nvml_source(&src, o->gpu, r->gpu_instances, units, why, why_size) != 0) {
        fprintf(stderr, "warning: no GPU timeline: %s\n", why);
        return;
    }
    snprintf(path, sizeof path, "%s/timeline.csv", r->dir);
    if (monitor_start(&r->mon, &src, path, r->count, o->sample_ms, why, why_size) != 0)
        fprintf(stderr, "warning: no GPU timeline: %s\n", why);
    else r->mon_on = 1;
}

/* The GPU's energy over each common window (run_summary.h's window_energy_j): collocated, the window
 * every job shares; one after another, each job's own summed, a job measured once for several (7*S
 * alone) counted for each, as its samples are. Unknown: the note says why. */
static void measure_window_energy(mode_run *r) {
    run_summary *s = &r->summary;
    char *note = s->window_energy_note;
    size_t size = sizeof s->window_energy_note;
    note[0] = 0; /* what results_summarize's own compare said before the energy was known */
    if (s->window_length_s <= 0) return;
    if (!r->mon_on) {
        snprintf(note, size, "no GPU monitor: %s", r->mon_why[0] ? r->mon_why : "it did not start");
        return;
    }
    int counter = 0;
    for (int k = 0; k < r->mon.point_count && !counter; k++) counter = !isnan(r->mon.points[k].energy_j);
    if (!counter) {
        snprintf(note, size, "the GPU reports no energy counter through NVML (nvmlDeviceGetTotalEnergyConsumption)");
        return;
    }
    int one_window = !(r->mode->flags & MODE_SEQUENTIAL);
    for (int w = 0; w < s->window_count && w < JOB_MAX_WINDOWS; w++) {
        double total = 0, e;
        int taken = 0;
        for (int i = 0; i < r->count && !(one_window && taken); i++)
            for (int k = 0; k < r->jobs[i].window_count; k++) {
                const job_window *jw = &r->jobs[i].windows[k];
                if (jw->window != w) continue;
                total += monitor_energy_between(&r->mon, jw->t0, jw->t1, &e) == 0 ? e : NAN;
                taken++;
            }
        s->window_energy_j[w] = taken ? total : NAN;
        if (isnan(s->window_energy_j[w]) && !note[0])
            snprintf(note, size, "the monitor's energy samples do not cover window %d", w);
    }
}

static void measure_energy(mode_run *r) {
    run_summary *s = &r->summary;
    measure_window_energy(r);
    if (!r->mon_on) return;
    s->monitor_on = 1;
    monitor_cost(&r->mon, &s->monitor_ticks, &s->monitor_mean_ms, &s->monitor_busy_fraction);
    s->peak_gpu_memory = monitor_peak_memory(&r->mon, s->first_go, s->last_end);
    /* one after another: the sum over each job's own window; collocated: first go to last end */
    double total = NAN;
    int ok = r->mode->flags & MODE_SEQUENTIAL
                 ? monitor_energy_windows(&r->mon, s->go_t, s->end_t, s->job_count, &total)
                 : monitor_energy_between(&r->mon, s->first_go, s->last_end, &total);
    s->energy_j = ok == 0 && !isnan(s->first_go) ? total : NAN;
}

/* An earlier job of the same spec that ran to its end, or -1. */
static int same_job_measured(const job_record *jobs, int i) {
    for (int k = 0; k < i; k++)
        if (jobs[k].status == JOB_OK && !strcmp(jobs[k].canonical, jobs[i].canonical)) return k;
    return -1;
}

/* One `train` process per job: all at once behind the barrier, or one group per job. Alone, under
 * the window measurement, a job that repeats an earlier one's spec is that job's measurement (its
 * rate alone over a window of the same length: 7*S runs S once, not seven times); run to
 * completion, every job runs, since their sum is the serial makespan. */
static group_result run_processes(mode_run *r, job_record *jobs, int count, const jobs_settings *s) {
    if (!(r->mode->flags & MODE_SEQUENTIAL)) return jobs_run_group(jobs, count, s);
    group_result result = GROUP_COMPLETE;
    for (int i = 0; i < count; i++) {
        int same = r->ctx->o->window_s > 0 ? same_job_measured(jobs, i) : -1;
        if (same < 0) {
            if (jobs_run_group(&jobs[i], 1, s) == GROUP_STOPPED) result = GROUP_STOPPED;
            continue;
        }
        size_t from = offsetof(job_record, have_setup), to = offsetof(job_record, last_step);
        memcpy((char *)&jobs[i] + from, (const char *)&jobs[same] + from, to - from);
        jobs[i].status = jobs[same].status;
        snprintf(jobs[i].reason, sizeof jobs[i].reason, "measured once with job %d, the same job alone", same);
        fprintf(stderr, "[%s] job %d %s: the same job as job %d, alone: measured once\n", r->mode->name, i,
                jobs[i].spec.label, same);
    }
    return result;
}

static void environment(const mode_run *r, int k, job_env *env) {
    memset(env, 0, sizeof *env);
    job_env_set(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID"); /* indices mean what NVML means */
    /* the jobs running at once share the CPU cores: each one's loader sizes its threads by it */
    job_env_set(env, knob_name(KNOB_CONCURRENT_JOBS), "%d", r->mode->flags & MODE_SEQUENTIAL ? 1 : r->count);
    if (r->mode->job_env) r->mode->job_env(r, k, env);
}

static void failed_summary(const suite_mode *mode, const char *status, run_summary *s) {
    memset(s, 0, sizeof *s);
    snprintf(s->mode, sizeof s->mode, "%s", mode->name);
    s->status = status;
    s->makespan_s = s->aggregate_samples_per_s = s->speedup = NAN;
    s->energy_j = s->energy_vs_serial = NAN;
}

/* Summary, energy, comparison, jobs.csv, steps.csv, summary.json and the table of a mode that ran. */
static void write_results(mode_run *r, const serial_baseline *base) {
    const suite_ctx *c = r->ctx;
    int sequential = (r->mode->flags & MODE_SEQUENTIAL) != 0;
    char err[1024];
    r->summary.window_length_s = c->o->window_s;  /* the measurement (results_summarize keeps it) */
    r->summary.window_count = c->o->windows;
    results_summarize(r->jobs, r->count, r->mode->name, sequential, r->stopped, base, &r->summary);
    measure_energy(r);
    serial_baseline own;
    if (sequential) { /* alone by construction: its own baseline */
        results_baseline_from(&r->summary, "this run", &own);
        base = &own;
    }
    results_compare(&r->summary, base);
    /* each file on its own: one that cannot be written takes none of the others with it */
    if (results_write_jobs_csv(r->dir, r->jobs, r->count, &r->summary, err, sizeof err) != 0)
        fprintf(stderr, "error: %s\n", err);
    if (results_write_steps_csv(r->dir, r->jobs, r->count, &r->summary, err, sizeof err) != 0)
        fprintf(stderr, "error: %s\n", err);
    if (results_write_summary(r->dir, c->o->mix_text, r->jobs, r->count, &r->summary, base, err, sizeof err) != 0)
        fprintf(stderr, "error: %s\n", err);
    results_print_table(stdout, r->jobs, r->count, &r->summary);
    results_print_faults(stdout, r->jobs, r->count, r->mode->name);
    fflush(stdout);
}

/* Where one job's fault takes others down (MODE_FAULTS_SPREAD), their failures are its collateral,
 * with the mode's own evidence: never a mystery in the results. */
static void record_collateral(mode_run *r) {
    char evidence[768] = "";
    if (r->mode->fault_evidence) r->mode->fault_evidence(r, evidence, sizeof evidence);
    int n = jobs_classify_collateral(r->jobs, r->count, r->mode->name, (r->mode->flags & MODE_FAULTS_SPREAD) != 0,
                                     evidence);
    if (n > 0)
        fprintf(stderr, "[%s] %d job(s) failed as collateral of job %d%s%s\n", r->mode->name, n,
                results_first_failure(r->jobs, r->count), evidence[0] ? "; " : "", evidence);
}

int suite_execute(suite_ctx *c, const suite_mode *mode, const int *job_of, int count,
                  const char *dir, const serial_baseline *base, run_summary *summary) {
    const run_request *o = c->o;
    mode_run *r = calloc(1, sizeof *r);
    if (!r) {
        failed_summary(mode, "failed", summary);
        return -1;
    }
    r->ctx = c;
    r->mode = mode;
    r->state = suite_mode_state(c, mode);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    r->count = count;
    for (int k = 0; k < count; k++) r->job_of[k] = job_of ? job_of[k] : k;
    run_json_write(c, r, dir, mode->name, "running");
    fprintf(stderr, "[%s] %d job(s) of %s, results in %s\n", mode->name, r->count, o->mix_text, dir);
    /* run_suite --gpus: one start barrier and window over every card's run; taken (close-on-exec)
     * before the mode starts anything, so no daemon holds the relay's ends past this run */
    jobs_relay relay;
    char relay_error[512];
    int relayed = jobs_relay_from_env(&relay, relay_error, sizeof relay_error);
    if (relayed < 0) fprintf(stderr, "[%s] error: %s\n", mode->name, relay_error);
    const suite_planned *p = suite_mode_planned(c, mode);
    int rc = -1;
    if (p && p->skipped) { /* its plan found it cannot run here */
        snprintf(r->error, sizeof r->error, "%s", p->error);
    } else {
        rc = mode->start ? mode->start(r, r->error, sizeof r->error) : 0;
        r->started = 1;
    }
    r->jobs = calloc((size_t)r->count, sizeof *r->jobs);
    for (int k = 0; rc == 0 && r->jobs && k < r->count; k++) {
        int i = r->job_of[k];
        job_env env;
        environment(r, k, &env);
        rc = job_prepare(&r->jobs[k], k, &o->mix.jobs[i], o, &env, dir, r->error, sizeof r->error);
        r->jobs[k].footprint_bytes = c->fp[i].total;
    }
    if (!r->jobs) rc = -1;
    if (rc == 0) {
        start_monitor(r);
        jobs_settings s = {.ready_timeout_s = o->ready_timeout_s, .grace_s = o->grace_s, .tag = mode->name,
                           .observer = {r, on_phase}, .stall_timeout_s = o->stall_timeout_s,
                           .window_s = o->window_s, .windows = o->windows,
                           .trace_s = o->kernels ? o->kernels_window_s : 0};
        if (relayed > 0) s.relay = &relay;
        group_result result = mode->run_jobs ? mode->run_jobs(r, r->jobs, r->count, &s)
                                             : run_processes(r, r->jobs, r->count, &s);
        r->stopped = result == GROUP_STOPPED;
        monitor_stop(&r->mon);
    } else {
        fprintf(stderr, "[%s] error: %s\n", mode->name, r->error[0] ? r->error : "set-up failed");
    }
    if (r->started && mode->stop) mode->stop(r);
    if (rc == 0) record_collateral(r);
    if (rc == 0) suite_isolate(r);  /* partitioned modes: each job alone in its partition */
    if (rc == 0) write_results(r, base);
    if (rc == 0) suite_attribute_kernels(r, base);
    else failed_summary(mode, "failed", &r->summary);
    run_json_write(c, r, dir, mode->name, rc == 0 ? r->summary.status : "failed");
    *summary = r->summary;
    for (int k = 0; r->jobs && k < r->count; k++) job_release(&r->jobs[k]);
    free(r->jobs);
    monitor_free(&r->mon);
    free(r);
    return rc;
}

/* --- dry run --------------------------------------------------------------------------------- */

/* The SMs each job of each planned mode's libraries plan for (issue 50: mode.h's sm_target): a
 * green partition's, told them; an MPS share's, which the device reports to the client itself
 * (base/sm_target.h), told nothing and unchanged by SUITE_SM_TARGET. As JSON ("sm_target":
 * {"telling": bool, "<mode>": [count or null per job]}) or as lines. */
static int planned_sm_target(const suite_mode *m, const suite_ctx *c, int job, int telling, int *percent) {
    int sms = m->sm_target ? m->sm_target(c, job, percent) : 0;
    return telling || *percent ? sms : 0;
}

static void sm_targets_json(const suite_ctx *c, cJSON *root) {
    int telling = knob_flag(KNOB_SM_TARGET);
    cJSON *o = cJSON_AddObjectToObject(root, "sm_target");
    cJSON_AddBoolToObject(o, "telling", telling);
    for (int k = 0; k < c->mode_count; k++) {
        const suite_mode *m = c->modes[k].mode;
        cJSON *a = cJSON_AddArrayToObject(o, m->name);
        for (int i = 0; i < c->count; i++) {
            int percent = 0, sms = planned_sm_target(m, c, i, telling, &percent);
            cJSON_AddItemToArray(a, sms < 0 ? cJSON_CreateNull() : cJSON_CreateNumber(sms));
        }
    }
}

static void print_sm_targets(const suite_ctx *c) {
    int telling = knob_flag(KNOB_SM_TARGET);
    printf("SMs each job's cuBLASLt and cuDNN plan for (0: the whole device; a green partition's, which they are\n"
           "told %s; an MPS share's, which the device reports to the client itself):\n",
           telling ? "(not with SUITE_SM_TARGET=0)" : "only without SUITE_SM_TARGET=0 (here they plan for the whole device)");
    for (int k = 0; k < c->mode_count; k++) {
        const suite_mode *m = c->modes[k].mode;
        printf("  %s:", m->name);
        for (int i = 0; i < c->count; i++) {
            int percent = 0, sms = planned_sm_target(m, c, i, telling, &percent);
            if (sms < 0) printf("%s job %d: %d%% of the device's SMs (counted at start)", i ? "," : "", i, percent);
            else if (percent) printf("%s job %d: %d (%d%% share, seen)", i ? "," : "", i, sms, percent);
            else printf("%s job %d: %d", i ? "," : "", i, sms);
        }
        printf("\n");
    }
    printf("\n");
}

/* The dry run's listing; a pass's (pass: NULL for none) goes into it, its check's status in
 * *checked_pass (-1 to go on). */
static void print_dry_run(suite_ctx *c, const char *fit_error, const char *plan_error, const suite_pass *pass,
                          int *checked_pass) {
    const run_request *o = c->o;
    const monitor_gpu *g = &c->gpu;
    const char *mode = o->mode ? o->mode->name : SUITE_ALL;
    if (o->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "mode", mode);
        cJSON_AddStringToObject(root, "mix", o->mix_text);
        cJSON_AddNumberToObject(root, "epochs", o->epochs);
        cJSON_AddNumberToObject(root, "steps_per_epoch", (double)o->steps_per_epoch);
        if (o->window_s > 0) {
            cJSON *m = cJSON_AddObjectToObject(root, "measurement");
            cJSON_AddStringToObject(m, "name", "window");
            cJSON_AddNumberToObject(m, "window_s", o->window_s);
            cJSON_AddNumberToObject(m, "windows", o->windows);
        }
        cJSON_AddItemToObject(root, "gpu", run_json_gpu(g, o->gpu));
        cJSON_AddItemToObject(root, "jobs", run_json_jobs(c, NULL));
        cJSON_AddBoolToObject(root, "fits", fit_error == NULL);
        if (fit_error) cJSON_AddStringToObject(root, "fit_error", fit_error);
        for (int k = 0; k < c->mode_count; k++)
            if (c->modes[k].mode->describe) c->modes[k].mode->describe(c, stdout, root);
        if (plan_error) cJSON_AddStringToObject(root, "plan_error", plan_error);
        sm_targets_json(c, root);
        *checked_pass = pass ? pass->check(c, NULL, root) : -1;
        char *text = cJSON_Print(root);
        if (text) printf("%s\n", text);
        free(text);
        cJSON_Delete(root);
        return;
    }
    char mem[32], bytes[32];
    results_format_bytes(mem, sizeof mem, g->memory_bytes);
    char traced[160] = "";
    if (o->kernels)
        snprintf(traced, sizeof traced, ", then a traced window of %g s (--kernels: every kernel recorded, after the "
                 "measured ones)", o->kernels_window_s > 0 ? o->kernels_window_s : o->window_s);
    if (o->window_s > 0)
        printf("dry run: mode %s, mix %s, a warm-up of %ld steps (or the first epoch where shorter) then %d common "
               "window(s) of %g s (the window measurement)%s, %s\nGPU %d: %s%s%s, %s\n\n", mode, o->mix_text,
               o->warmup_steps, o->windows, o->window_s, traced,
               o->steps_per_epoch ? "fixed steps per epoch" : "whole epochs", o->gpu,
               g->nvml_ok ? g->name : "unknown: ", g->nvml_ok ? ", driver " : g->why, g->driver, mem);
    else
        printf("dry run: mode %s, mix %s, %d epoch(s) (the second is timed), %s\nGPU %d: %s%s%s, %s\n\n",
               mode, o->mix_text, o->epochs, o->steps_per_epoch ? "fixed steps per epoch" : "whole epochs",
               o->gpu, g->nvml_ok ? g->name : "unknown: ", g->nvml_ok ? ", driver " : g->why, g->driver, mem);
    printf("%-4s %-24s %-16s %-11s %6s %6s %12s %12s\n", "job", "label", "model", "data", "batch",
           "size", "params", "footprint");
    double total = 0;
    for (int i = 0; i < c->count; i++) {
        const job_spec *s = &o->mix.jobs[i];
        results_format_bytes(bytes, sizeof bytes, c->fp[i].total);
        total += c->fp[i].total;
        printf("%-4d %-24.24s %-16s %-11s %6d %6d %12.0f %12s\n", i, s->label, s->model, s->data,
               s->batch, s->image_size, c->fp[i].params, bytes);
    }
    results_format_bytes(bytes, sizeof bytes, total);
    printf("total footprint %s: %s\n\n", bytes, fit_error ? fit_error : isnan(g->memory_bytes) ? "GPU memory unknown, not checked" : "fits");
    printf("data (what each job trains on):\n");
    for (int i = 0; i < c->count; i++) {
        char what[1200];
        data_describe(o->mix.jobs[i].data, o->data_root, 1, what, sizeof what);
        printf("  job %d %s: %s\n", i, o->mix.jobs[i].label, what);
    }
    printf("\n");
    print_sm_targets(c);
    for (int k = 0; k < c->mode_count; k++) {
        const suite_planned *p = &c->modes[k];
        if (p->mode->describe) p->mode->describe(c, stdout, NULL);
        if (p->error[0]) printf("%s: %s\n", p->mode->name, p->error);
    }
    printf("\ncommands:\n");
    for (int i = 0; i < c->count; i++) {
        char **argv = suite_job_argv(c, i);
        printf("  job %d:", i);
        for (char **a = argv; a && *a; a++) printf(" %s", *a);
        printf("\n");
        job_free_strv(argv);
    }
    *checked_pass = pass ? pass->check(c, stdout, NULL) : -1;
}

/* --- the run --------------------------------------------------------------------------------- */

int suite_exit_for(const run_summary *s, int stopped) {
    if (stopped) return 128 + (jobs_stop_signal() ? jobs_stop_signal() : SIGTERM);
    if (strcmp(s->status, "failed") == 0) return EXIT_RUNTIME;
    return strcmp(s->status, "complete") == 0 ? EXIT_OK : EXIT_PARTIAL;
}

/* Whether --skip names the mode (a comma-separated list of checked names). */
static int skipped(const run_request *o, const suite_mode *m) {
    size_t n = strlen(m->name);
    for (const char *p = o->skip_modes; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
        if (!strncmp(p, m->name, n) && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

/* The modes this run executes: --mode's, or every MODE_IN_ALL row of the table but those --skip
 * names (as the table or as the mode that runs in its place: runs_as, e.g. mig-emulate for mig
 * under --mig-emulate). */
static int select_modes(suite_ctx *c) {
    const run_request *o = c->o;
    int table_count;
    const suite_mode *const *table = suite_modes(&table_count);
    for (int t = 0; t < (o->mode ? 1 : table_count) && c->mode_count < SUITE_MODES_MAX; t++) {
        const suite_mode *m = o->mode ? o->mode : table[t];
        if (!o->mode && !(m->flags & MODE_IN_ALL)) continue;
        m = suite_mode_resolve(m, o);
        if (!o->mode && (skipped(o, table[t]) || skipped(o, m))) continue;
        suite_planned *p = &c->modes[c->mode_count++];
        p->mode = m;
        p->state = calloc(1, m->state_size ? m->state_size : 1);
        if (!p->state) return -1;
    }
    return 0;
}

static void free_modes(suite_ctx *c) {
    for (int k = 0; k < c->mode_count; k++) free(c->modes[k].state);
}

static int footprints(suite_ctx *c) {
    const run_request *o = c->o;
    char err[2048];
    for (int i = 0; i < c->count; i++) {
        char mine[256], other[256];
        mix_job_format(&o->mix.jobs[i], mine, sizeof mine);
        for (int k = 0; k < i && c->fp[i].total <= 0; k++) /* "7*S": ask train once */
            if (mix_job_format(&o->mix.jobs[k], other, sizeof other) >= 0 && !strcmp(mine, other)) c->fp[i] = c->fp[k];
        if (c->fp[i].total <= 0 &&
            job_query_footprint(o, &o->mix.jobs[i], &c->fp[i], err, sizeof err) != 0) {
            fprintf(stderr, "error: job %d (%s): %s\n", i, o->mix.jobs[i].label, err);
            return -1;
        }
    }
    return 0;
}

/* Each mode's plan. A failed plan stops the run (exit status returned), except for --mode all's
 * MODE_WHERE_POSSIBLE modes (skipped) and in a dry run, which shows every plan first and then
 * exits as the run would have for an impossible one (*dry_status; -1 none). -1 to go on. */
static int plan_modes(suite_ctx *c, const char **plan_error, int *dry_status) {
    *dry_status = -1;
    for (int k = 0; k < c->mode_count; k++) {
        suite_planned *p = &c->modes[k];
        int rc = p->mode->plan ? p->mode->plan(c, p->error, sizeof p->error) : 0;
        if (rc == 0) continue;
        if (!*plan_error) *plan_error = p->error;
        if (!c->o->mode && (p->mode->flags & MODE_WHERE_POSSIBLE)) {
            p->skipped = 1;
            continue;
        }
        if (c->o->dry_run) { /* a plan that cannot be made is bad input; one that needs the GPU is shown */
            if (rc == EXIT_USAGE) *dry_status = EXIT_USAGE;
            continue;
        }
        fprintf(stderr, "error: %s\n", p->error);
        return rc == EXIT_USAGE ? EXIT_USAGE : EXIT_RUNTIME;
    }
    return -1;
}

/* Every mode's fit; the first refusal in fit (*refused: one --force does not lift, SUITE_FIT_REFUSED).
 * Returns how many modes checked memory. */
static int fit_modes(const suite_ctx *c, char *fit, size_t fit_size, int *fits, int *refused) {
    int checked = 0;
    char err[2048];
    *fits = 1, *refused = 0;
    for (int k = 0; k < c->mode_count; k++) {
        const suite_planned *p = &c->modes[k];
        if (p->skipped) continue;
        int rc = p->mode->fit ? p->mode->fit(c, err, sizeof err) : suite_fit(c, p->mode->flags, NULL, err, sizeof err);
        checked += rc != SUITE_FIT_OWN;
        if (rc == SUITE_FIT_REFUSED && !*refused) snprintf(fit, fit_size, "%s", err), *refused = 1, *fits = 0;
        if (rc < 0 && *fits) snprintf(fit, fit_size, "%s", err);
        if (rc < 0) *fits = 0;
    }
    return checked;
}

/* The run's cards against what NVML counts, before anything runs (the dry run too): an index NVML
 * says does not exist is bad input, and so is a data-parallel job wider than the run's cards (the
 * --gpu card, or SUITE_JOB_DEVICES' under run_suite --gpus). Where NVML cannot tell it says what is
 * not checked; on a login node (suite_node_checks_later) run_suite --slurm says it. -1 to go on, else
 * the exit status. */
static int check_devices(const suite_ctx *c) {
    const run_request *o = c->o;
    const char *devices = knob_text(KNOB_JOB_DEVICES);
    int cards = 1, widest = 1, wide = -1;
    for (const char *p = devices; p && *p; p++) cards += *p == ',';
    for (int i = 0; i < o->mix.count; i++)
        if (o->mix.jobs[i].gpus > widest) widest = o->mix.jobs[i].gpus, wide = i;
    if (suite_node_checks_later()) return -1; /* the compute node's, said by run_suite --slurm */
    char why[512];
    int exist = monitor_gpus_exist(&o->gpu, 1, why, sizeof why);
    if (exist > 0) {
        if (o->gpu > 0 || widest > 1)
            fprintf(stderr, "warning: not checked: that GPU %d exists%s (%s)\n", o->gpu,
                    widest > 1 ? " and that the run's cards hold the data-parallel job's ranks" : "", why);
        return -1;
    }
    if (exist < 0) {
        fprintf(stderr, "error: --gpu %d: %s\n", o->gpu, why);
        return EXIT_USAGE;
    }
    if (widest > cards) {
        fprintf(stderr, "error: job %d (%s) trains on %d GPUs (gpus=%d), but this run has %d card(s) (--gpu %d); "
                "run_suite --gpus LIST runs a mix over several\n", wide, o->mix.jobs[wide].label, widest, widest, cards,
                o->gpu);
        return EXIT_USAGE;
    }
    return -1;
}

static int load_baseline(suite_ctx *c) {
    const run_request *o = c->o;
    char err[2048];
    job_record *probe = calloc((size_t)c->count, sizeof *probe);
    for (int i = 0; probe && i < c->count; i++) {
        probe[i].spec = o->mix.jobs[i];
        mix_job_format(&probe[i].spec, probe[i].canonical, sizeof probe[i].canonical);
        probe[i].epochs_planned = run_request_job_epochs(o, &o->mix.jobs[i]);
        probe[i].steps_per_epoch = run_request_job_steps(o, &o->mix.jobs[i]);
    }
    int rc = probe ? results_load_baseline(o->baseline_dir, suite_mode_with(MODE_SEQUENTIAL)->name, probe, c->count, &c->baseline, err, sizeof err) : -1;
    free(probe);
    if (rc != 0) fprintf(stderr, "error: %s\n", probe ? err : "out of memory");
    return rc;
}

/* Every data set of the mix, once, before anything runs (data/data_check.h): a set that is present
 * but malformed is bad input here, not synthetic data in the job (--data-if-present means absent
 * only). Without --data-root only fashion-mnist reads files (its installed copy), which must be there,
 * and a job that asks for decode=gpu has nothing to decode. */
static int check_inputs(const run_request *o) {
    const char *root = o->data_root ? o->data_root : "";
    char err[2048];
    for (int i = 0; i < o->mix.count; i++) {
        const char *data = o->mix.jobs[i].data;
        if (o->mix.jobs[i].decode_given && o->mix.jobs[i].decode == DECODE_GPU && !*root) {
            fprintf(stderr, "error: job %d (%s): decode=gpu decodes ImageNet's JPEG files: give --data-root DIR "
                    "(the folder holding train/ and val/)\n", i, o->mix.jobs[i].label);
            return -1;
        }
        /* a root given must be usable for every job: never a reason for synthetic data */
        if (data_root_check(data, root, err, sizeof err) != 0) {
            fprintf(stderr, "error: job %d (%s): %s\n", i, o->mix.jobs[i].label, err);
            return -1;
        }
        int seen = 0;
        for (int k = 0; k < i && !seen; k++) seen = !strcmp(o->mix.jobs[k].data, data);
        if (seen || (!*root && strcmp(data, "fashion-mnist") != 0)) continue;
        data_check_status st = data_check(data, root, err, sizeof err);
        if (st == DATA_CHECK_MALFORMED || (st == DATA_CHECK_ABSENT && !*root)) {
            fprintf(stderr, "error: job %d (%s): %s\n", i, o->mix.jobs[i].label, err);
            return -1;
        }
    }
    return 0;
}

/* Footprints, GPU, each mode's plan, fit check, the pass's check, baseline: everything decided
 * before anything runs. Returns -1 to go on, else the exit status. */
static int prepare(suite_ctx *c, const suite_pass *pass) {
    const run_request *o = c->o;
    if (select_modes(c) != 0) return EXIT_RUNTIME;
    if (c->mode_count == 0) {
        fprintf(stderr, "error: --skip %s leaves no mode of --mode all to run\n", o->skip_modes);
        return EXIT_USAGE;
    }
    if (check_inputs(o) != 0 || footprints(c) != 0) return EXIT_USAGE;
    monitor_probe_gpu(o->gpu, &c->gpu);
    if (suite_node_checks_later() && c->gpu.memory_source && !strcmp(c->gpu.memory_source, "NVML")) {
        /* a login node's own GPU is not the compute node's: the fit is the node's to check */
        c->gpu.memory_bytes = NAN, c->gpu.memory_source = NULL;
        snprintf(c->gpu.why, sizeof c->gpu.why, "left to the compute node");
    }
    const char *devices = knob_text(KNOB_JOB_DEVICES); /* run_suite --gpus: a data-parallel job's cards */
    if (devices && *devices) {
        if (strlen(devices) >= sizeof c->gpu.visible) {
            fprintf(stderr, "error: %s: a device list of %zu characters; at most %zu fit\n", knob_name(KNOB_JOB_DEVICES),
                    strlen(devices), sizeof c->gpu.visible - 1);
            return EXIT_USAGE;
        }
        snprintf(c->gpu.visible, sizeof c->gpu.visible, "%s", devices);
    }
    int status = check_devices(c);
    if (status >= 0) return status;
    const char *plan_error = NULL;
    int dry_status;
    status = plan_modes(c, &plan_error, &dry_status);
    if (status >= 0) return status;
    char fit[2048];
    int fits, refused, checked = fit_modes(c, fit, sizeof fit, &fits, &refused);
    /* From here the dry run refuses what the run refuses, in the same order and words (exit 2): the
       plans, the pass's check, the fit, the baseline; it only lists the run first. */
    int checked_pass = -1;
    if (o->dry_run) {
        print_dry_run(c, fits ? NULL : fit, plan_error, pass, &checked_pass);
        if (dry_status >= 0) {
            if (!o->json) fprintf(stderr, "error: %s\n", plan_error);
            return dry_status;
        }
    } else if (pass) {
        checked_pass = pass->check(c, NULL, NULL);
    }
    if (checked_pass > 0 || (checked_pass == 0 && !o->dry_run)) return checked_pass;
    if (!fits && (refused || !o->force)) {
        if (!o->json || !o->dry_run)
            fprintf(stderr, "error: refused: %s\n%s", fit, refused ? "" : "(--force runs it anyway)\n");
        return EXIT_USAGE;
    }
    if (!fits) fprintf(stderr, "warning: %s; %s anyway (--force)\n", fit, o->dry_run ? "the run would go on" : "running");
    if (isnan(c->gpu.memory_bytes) && checked && !o->dry_run)
        fprintf(stderr, "warning: GPU memory unknown (%s): the footprint check is skipped\n", c->gpu.why);
    if (o->baseline_dir && load_baseline(c) != 0) return EXIT_USAGE;
    if (o->dry_run) return checked_pass >= 0 ? checked_pass : EXIT_OK;
    return -1;
}

int suite_run_modes(suite_ctx *c, const char *run_dir, const int *order) {
    run_summary runs[SUITE_MODES_MAX];
    memset(runs, 0, sizeof runs);
    int n = 0, stopped = 0, worst = EXIT_OK;
    serial_baseline serial = c->baseline;
    char err[1024], mode_dirs[SUITE_MODES_MAX][PATH_MAX + 32];
    for (int k = 0; k < c->mode_count && !stopped; k++) {
        const suite_mode *m = c->modes[order ? order[k] : k].mode;
        char dir[PATH_MAX + 32];
        snprintf(dir, sizeof dir, "%s/%s", run_dir, m->name);
        if (results_make_dirs(dir, err, sizeof err) != 0) {
            fprintf(stderr, "error: %s\n", err);
            worst = EXIT_RUNTIME;
            break;
        }
        int rc = suite_execute(c, m, NULL, c->count, dir, serial.known ? &serial : NULL, &runs[n]);
        stopped = jobs_stop_signal() != 0;
        if (rc != 0 && (m->flags & MODE_WHERE_POSSIBLE) && !stopped) {
            runs[n].status = "skipped"; /* "where possible": the other modes stand */
            fprintf(stderr, "[%s] skipped; the comparison has the other modes\n", m->name);
        } else {
            int e = suite_exit_for(&runs[n], stopped);
            if (e != EXIT_OK && (worst == EXIT_OK || e > 128)) worst = e;
        }
        if ((m->flags & MODE_SEQUENTIAL) && rc == 0) {
            results_baseline_from(&runs[n], "serial part of this run", &serial);
            snprintf(serial.dir, sizeof serial.dir, "%s", dir); /* its traced files, for --kernels */
        }
        snprintf(mode_dirs[n], sizeof mode_dirs[n], "%s", dir);
        n++;
    }
    const char *dirs[SUITE_MODES_MAX] = {0};
    for (int k = 0; k < n; k++) dirs[k] = mode_dirs[k];
    if (c->o->kernels && kattr_join(run_dir, dirs, n, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    for (int k = 0; k < n; k++) results_compare(&runs[k], serial.known ? &serial : NULL);
    results_print_comparison(stdout, runs, n);
    if (results_write_comparison(run_dir, runs, n, err, sizeof err) != 0) fprintf(stderr, "error: %s\n", err);
    run_json_write(c, NULL, run_dir, SUITE_ALL, stopped ? "interrupted" : worst == EXIT_OK ? "complete" : "partial");
    return worst;
}

/* A read-only folder or a full disk is found by a write before any job starts, not by the results
 * writer after the run. */
static int check_writable(const char *dir, char *err, size_t err_size) {
    static const char block[1 << 16];
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.write-check", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int ok = fd >= 0;
    for (int i = 0; ok && i < 16; i++) ok = write(fd, block, sizeof block) == (ssize_t)sizeof block; /* 1 MiB */
    ok = ok && fsync(fd) == 0;
    int e = errno;
    if (fd >= 0) close(fd);
    unlink(path);
    if (ok) return 0;
    rmdir(dir); /* still empty: nothing of this run to keep */
    snprintf(err, err_size, "the results folder %s cannot be written: %s", dir, strerror(e ? e : ENOSPC));
    return -1;
}

void suite_keep_choices_in(const char *dir) {
    if (knob_text(KNOB_CONV_CHOICES)) return;
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/conv-choices.tsv", dir);
    setenv(knob_name(KNOB_CONV_CHOICES), path, 1);
}

int suite_run(const run_request *o, const suite_pass *pass) {
    suite_ctx *c = calloc(1, sizeof *c);
    if (!c) return EXIT_RUNTIME;
    c->o = o;
    c->count = o->mix.count;
    c->execute = suite_execute;
    run_json_time(c->started, sizeof c->started);
    jobs_install_stop_signals();
    char err[2048];
    int status = prepare(c, pass);
    if (status < 0 && jobs_stop_signal()) status = 128 + jobs_stop_signal(); /* nothing ran yet */
    if (status < 0) mps_stop_stale(stderr); /* a daemon of an earlier run_suite killed with SIGKILL */
    if (status < 0 && (results_make_run_dir(o->results_dir, o->mode ? o->mode->name : SUITE_ALL, o->mix_text,
                                            c->run_dir, sizeof c->run_dir, c->run_id, sizeof c->run_id,
                                            err, sizeof err) != 0 ||
                       check_writable(c->run_dir, err, sizeof err) != 0)) {
        fprintf(stderr, "error: %s\n", err);
        status = EXIT_USAGE; /* the user's folder to fix, found before any job ran */
    }
    if (status < 0 && request_file_write(o, c->run_dir, err, sizeof err) != 0) /* what this run was asked */
        fprintf(stderr, "error: %s\n", err);
    if (status < 0) suite_keep_choices_in(c->run_dir);
    if (status < 0 && pass) {
        status = pass->run(c);
    } else if (status < 0 && !o->mode) {
        status = suite_run_modes(c, c->run_dir, NULL);
    } else if (status < 0) {
        run_summary s;
        suite_execute(c, o->mode, NULL, c->count, c->run_dir, c->baseline.known ? &c->baseline : NULL, &s);
        status = suite_exit_for(&s, jobs_stop_signal() != 0);
    }
    free_modes(c);
    free(c);
    return status;
}
