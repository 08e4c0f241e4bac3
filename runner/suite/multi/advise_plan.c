/* The advisor's candidates, its probes and their cache (see advise_plan.h). */
#define _GNU_SOURCE
#include "runner/suite/multi/advise_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/sm_target.h"
#include "results/results.h"
#include "runner/suite/plan/mig_plan.h"

static advise_candidate *add(advise_candidate *out, int *n, int max, const char *mode, advise_kind kind) {
    if (*n >= max) return NULL;
    advise_candidate *c = &out[(*n)++];
    memset(c, 0, sizeof *c);
    snprintf(c->mode, sizeof c->mode, "%s", mode);
    snprintf(c->label, sizeof c->label, "%s", mode);
    c->kind = kind;
    return c;
}

/* A green split with these SMs per job (rounded down to the unit, at least one unit), unless the
 * green mode's plan refuses it on green's split (the driver's groups may hold fewer SMs than the
 * device has) or an earlier candidate has it. */
static void add_green(const mix *m, const int *sms, const green_gpu *green, advise_candidate *out, int *n, int max) {
    int want[ADVISE_MAX_JOBS];
    for (int i = 0; i < m->count; i++) want[i] = sms[i] < green->unit ? green->unit : sms[i] / green->unit * green->unit;
    green_plan plan;
    green_request req = {m->count, want, NULL, NULL};
    char err[512], value[96] = "";
    if (green_plan_make(&plan, green, &req, err, sizeof err) != 0) return;
    for (int i = 0, at = 0; i < m->count; i++)
        at += snprintf(value + at, sizeof value - (size_t)at, "%s%d", i ? "," : "", plan.sm[i]);
    for (int k = 0; k < *n; k++)
        if (!strcmp(out[k].mode, "green") && !strcmp(out[k].value, value)) return;
    advise_candidate *c = add(out, n, max, "green", ADVISE_PARTITION);
    if (!c) return;
    snprintf(c->option, sizeof c->option, "--green-sm");
    snprintf(c->value, sizeof c->value, "%s", value);
    snprintf(c->label, sizeof c->label, "green %s", value);
    for (int i = 0; i < m->count; i++) c->sms[i] = plan.sm[i];
}

int advise_candidates(const mix *m, int total_sms, const green_gpu *green, const mig_gpu *mig,
                      const double *footprints, advise_candidate *out, int max) {
    int n = 0, count = m->count;
    if (count > ADVISE_MAX_JOBS) return 0;
    if (green && (green->unit < 1 || green->groups < 1)) green = NULL; /* the split is unknown */
    add(out, &n, max, "naive", ADVISE_NAIVE);
    add(out, &n, max, "mps", ADVISE_SHARED);
    int equal[ADVISE_MAX_JOBS];
    if (count > 1) {
        int percent = 100 / count;
        advise_candidate *c = add(out, &n, max, "mps", ADVISE_PARTITION);
        if (c) {
            snprintf(c->option, sizeof c->option, "--mps-sm");
            snprintf(c->value, sizeof c->value, "%d", percent);
            snprintf(c->label, sizeof c->label, "mps %d%%", percent);
            for (int i = 0; i < count; i++) c->sms[i] = sm_target_of_share(total_sms, percent);
        }
    }
    add(out, &n, max, "streams", ADVISE_STREAMS);
    /* the green mode's own equal split: as many whole groups each as all of them get */
    for (int i = 0; green && i < count; i++) equal[i] = green->groups / count * green->unit;
    if (green && count > 1) add_green(m, equal, green, out, &n, max);
    if (!mig || count > MIG_MAX_INSTANCES) return n;
    mig_job jobs[MIG_MAX_INSTANCES];
    for (int i = 0; i < count; i++)
        jobs[i] = (mig_job){m->jobs[i].label,
                            footprints && isfinite(footprints[i]) ? (unsigned long long)footprints[i] : 0, 0};
    static mig_plan plan;
    char err[1024];
    if (mig_plan_objective(&plan, mig, jobs, count, NULL, MIG_OBJECTIVE_FILL, 0, 0, 0, err, sizeof err) != 0) return n;
    for (int k = 0; k < plan.choice.candidate_count; k++) {
        const mig_candidate *mc = &plan.choice.candidates[k];
        char layout[96];
        if (mig_candidate_text(mig, mc, count, layout, sizeof layout) < 0) continue;
        advise_candidate *c = add(out, &n, max, "mig-emulate", ADVISE_PARTITION);
        if (!c) break;
        snprintf(c->option, sizeof c->option, "--mig-layout");
        snprintf(c->value, sizeof c->value, "%s", layout);
        snprintf(c->label, sizeof c->label, "mig-emulate %s", layout);
        int sms[ADVISE_MAX_JOBS];
        for (int i = 0; i < count; i++) {
            const mig_profile *p = &mig->profiles[mc->profile[i]];
            c->sms[i] = sms[i] = mc->ci_slices[i] ? mig_ci_sms(mig, mc->profile[i], mc->ci_slices[i]) : p->sm_count;
            c->memory_bytes[i] = mc->ci_slices[i] ? 0 : (double)p->memory_mib * 1048576.0;
        }
        if (green) add_green(m, sms, green, out, &n, max);
    }
    return n;
}

static int job_index(const mix *m, int upto, int i) {
    char a[ADVISE_JOB_TEXT], b[ADVISE_JOB_TEXT];
    mix_job_format(&m->jobs[i], a, sizeof a);
    for (int j = 0; j < upto; j++) {
        mix_job_format(&m->jobs[j], b, sizeof b);
        if (!strcmp(a, b)) return j;
    }
    return i;
}

static int add_need(advise_probe_need *out, int n, int max, const mix *m, int job, int sms, int total_sms,
                    const char *gpu, const char *rev, double window_s, long warmup) {
    for (int k = 0; k < n; k++)
        if (out[k].job == job && out[k].sms == sms) return n;
    if (n >= max) return n;
    advise_probe_need *p = &out[n];
    char spec[ADVISE_JOB_TEXT];
    mix_job_format(&m->jobs[job], spec, sizeof spec);
    p->job = job;
    p->sms = sms;
    p->percent = sms ? sm_target_percent_for(total_sms, (double)sms / total_sms) : 100;
    snprintf(p->key, sizeof p->key, "%s|%s|%s|%d|%g/%ld", spec, gpu, rev, sms, window_s, warmup);
    return n + 1;
}

#define ADVISE_PROBES_NAME_(kind, name) name,
static const char *const PROBES_NAMES[] = {ADVISE_PROBES_TABLE(ADVISE_PROBES_NAME_)};
#undef ADVISE_PROBES_NAME_

const char *advise_probes_name(advise_probes setting) { return PROBES_NAMES[setting]; }

int advise_sizes_of(const mix *m, const advise_candidate *cands, int count, int total_sms, int job, int *out,
                    int max) {
    int n = 0;
    for (int c = 0; c < count; c++) {
        if (cands[c].kind != ADVISE_PARTITION) continue;
        for (int i = 0; i < m->count; i++) {
            int sms = cands[c].sms[i], seen = 0;
            if (job_index(m, i, i) != job || sms <= 0 || sms >= total_sms) continue;
            for (int k = 0; k < n; k++) seen |= out[k] == sms;
            if (!seen && n < max) out[n++] = sms;
        }
    }
    return n;
}

int advise_probes_needed(const mix *m, const advise_candidate *cands, int count, int total_sms,
                         advise_probes setting, const char *gpu_name, const char *revision, double window_s,
                         long warmup, advise_probe_need *out, int max) {
    int n = 0;
    for (int i = 0; i < m->count; i++)
        n = add_need(out, n, max, m, job_index(m, i, i), 0, total_sms, gpu_name, revision, window_s, warmup);
    if (setting == ADVISE_PROBES_TWO) {
        for (int i = 0; i < m->count; i++) {
            int sizes[ADVISE_MAX_POINTS], least = 0;
            if (job_index(m, i, i) != i) continue;
            int k = advise_sizes_of(m, cands, count, total_sms, i, sizes, ADVISE_MAX_POINTS);
            for (int j = 0; j < k; j++)
                if (!least || sizes[j] < least) least = sizes[j];
            if (least) n = add_need(out, n, max, m, i, least, total_sms, gpu_name, revision, window_s, warmup);
        }
        return n;
    }
    for (int c = 0; c < count; c++) {
        if (cands[c].kind != ADVISE_PARTITION) continue;
        for (int i = 0; i < m->count; i++) {
            int job = job_index(m, i, i), points = 0;
            for (int k = 0; k < n; k++) points += out[k].job == job && out[k].sms > 0;
            int sms = cands[c].sms[i];
            if (sms <= 0 || sms >= total_sms) continue;
            if (points < ADVISE_MAX_POINTS - 1) /* the whole GPU is a point too */
                n = add_need(out, n, max, m, job, sms, total_sms, gpu_name, revision, window_s, warmup);
        }
    }
    return n;
}

/* --- the cache ------------------------------------------------------------------------------ */

struct advise_cache {
    char dir[4096];
    cJSON *root;
};

static const char *const FIELDS[ADVISE_PROBE_VALUES] = {"samples_per_s", "sm_active", "dram_active", "power_w",
                                                        "peak_bytes", "busy"};

/* The cache file's JSON into *root: 0 (the file absent: an empty cache), or -1 with a message naming
 * the file and what was expected. */
static int cache_read(const char *path, cJSON **root, char *err, size_t err_size) {
    *root = NULL;
    FILE *f = fopen(path, "r");
    if (!f && errno != ENOENT) return snprintf(err, err_size, "the probe cache %s: %s", path, strerror(errno)), -1;
    if (!f) {
        *root = cJSON_CreateObject();
        cJSON_AddNumberToObject(*root, "version", 1);
        cJSON_AddObjectToObject(*root, "probes");
        return 0;
    }
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    char buf[65536];
    for (size_t got; (got = fread(buf, 1, sizeof buf, f)) > 0;) fwrite(buf, 1, got, mem);
    fclose(f);
    fclose(mem);
    *root = cJSON_Parse(text);
    free(text);
    const cJSON *version = cJSON_GetObjectItemCaseSensitive(*root, "version");
    const cJSON *probes = cJSON_GetObjectItemCaseSensitive(*root, "probes");
    const char *bad = !*root ? "not JSON" : !cJSON_IsNumber(version) || version->valueint != 1 ? "no \"version\": 1"
                      : !cJSON_IsObject(probes) ? "no \"probes\" object" : NULL;
    for (const cJSON *e = probes && !bad ? probes->child : NULL; e && !bad; e = e->next) {
        const cJSON *rate = cJSON_GetObjectItemCaseSensitive(e, FIELDS[0]);
        if (!cJSON_IsObject(e) || !cJSON_IsNumber(rate) || !(rate->valuedouble > 0))
            bad = "an entry without a positive \"samples_per_s\"";
    }
    if (bad) {
        snprintf(err, err_size, "the probe cache %s: %s (expected the advisor's cache; move it away to start a new one)",
                 path, bad);
        cJSON_Delete(*root);
        *root = NULL;
        return -1;
    }
    return 0;
}

int advise_cache_open(advise_cache **out, const char *dir, char *err, size_t err_size) {
    *out = NULL;
    advise_cache *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, err_size, "out of memory");
        return -1;
    }
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, ADVISE_CACHE_FILE);
    if (cache_read(path, &c->root, err, err_size) != 0) {
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void advise_cache_close(advise_cache *c) {
    if (!c) return;
    cJSON_Delete(c->root);
    free(c);
}

int advise_cache_get(const advise_cache *c, const char *key, double values[ADVISE_PROBE_VALUES]) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c->root, "probes"), key);
    if (!e) return 0;
    for (int k = 0; k < ADVISE_PROBE_VALUES; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, FIELDS[k]);
        values[k] = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    }
    return 1;
}

void advise_cache_put(advise_cache *c, const char *key, const double values[ADVISE_PROBE_VALUES]) {
    cJSON *probes = cJSON_GetObjectItemCaseSensitive(c->root, "probes");
    cJSON_DeleteItemFromObjectCaseSensitive(probes, key);
    cJSON *e = cJSON_AddObjectToObject(probes, key);
    for (int k = 0; k < ADVISE_PROBE_VALUES; k++) {
        if (isfinite(values[k])) cJSON_AddNumberToObject(e, FIELDS[k], values[k]);
        else cJSON_AddNullToObject(e, FIELDS[k]);
    }
}

/* Several advisors may share a results folder (tools/advise_check.sh runs one a GPU): each writes
 * back the file as it is now, under a lock, with its own entries added, so that none loses
 * another's probes; what the others added is then this one's too. */
int advise_cache_save(advise_cache *c, char *err, size_t err_size) {
    if (results_make_dirs(c->dir, err, err_size) != 0) return -1;
    char path[4200], lock_path[4200];
    snprintf(path, sizeof path, "%s/%s", c->dir, ADVISE_CACHE_FILE);
    snprintf(lock_path, sizeof lock_path, "%s.lock", path);
    int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
        snprintf(err, err_size, "the probe cache's lock %s: %s", lock_path, strerror(errno));
        if (lock >= 0) close(lock);
        return -1;
    }
    cJSON *disk;
    int rc = cache_read(path, &disk, err, err_size);
    if (rc == 0) {
        cJSON *probes = cJSON_GetObjectItemCaseSensitive(disk, "probes");
        for (const cJSON *e = cJSON_GetObjectItemCaseSensitive(c->root, "probes")->child; e; e = e->next) {
            cJSON_DeleteItemFromObjectCaseSensitive(probes, e->string);
            cJSON_AddItemToObject(probes, e->string, cJSON_Duplicate(e, 1));
        }
        rc = results_write_json(c->dir, ADVISE_CACHE_FILE, disk, err, err_size);
        cJSON_Delete(c->root);
        c->root = disk;
    }
    close(lock); /* releases the lock */
    return rc;
}
