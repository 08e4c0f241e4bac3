/* The advisor's plan and its probe cache (run_suite advise).
 *
 * The candidates a mix has on a GPU: naive, mps without shares, mps with equal shares, streams,
 * mig-emulate under each layout the MIG planner keeps for the mix (fill's choice and its runner-ups,
 * where the GPU's MIG table is known), green under an equal split and under each of those layouts'
 * SM counts rounded to the green unit. The probes they need (--probes): each distinct job alone on
 * the whole GPU and on the smallest partition size any candidate gives it (two; none when no
 * candidate partitions it), the sizes between read off the law (advise_model.h); or on every
 * partition size a candidate gives it (all), as a check of the law. Two probes a job keep a new
 * mix's probing inside a fifth of --mode all's time on it (issue 51's target), which probing every
 * size (a dozen runs, each a process start, a warm-up and a window) does not.
 *
 * The cache (ADVISE_CACHE_FILE in the results folder, JSON): one entry per probe, keyed by
 *   <job's canonical spec>|<GPU name>|<suite revision>|<SMs: 0 the whole GPU>|<window s>/<warm-up steps>
 * A probe is measured again only when one of those changes: another GPU, another build of the suite,
 * another window. A file that is not the cache's JSON is refused (exit 2), never overwritten.
 * Advisors may share one folder at once: each save merges into the file under a lock. */
#ifndef SUITE_ADVISE_PLAN_H
#define SUITE_ADVISE_PLAN_H

#include <stddef.h>

#include "runner/suite/multi/advise_model.h"
#include "runner/suite/plan/green_plan.h"
#include "runner/suite/plan/mig_profiles.h"
#include "runner/suite/plan/mix.h"

#define ADVISE_CACHE_FILE "advise-cache.json"

/* The candidates of m on a GPU of total_sms SMs; green: its green-context split as the green mode
 * plans with it (green_plan.h), or NULL (no green split); mig: its MIG table, or NULL (no MIG
 * layouts); footprints: each job's bytes for the MIG planner (NULL: unknown). A green split is
 * proposed only where the green mode accepts it on that split. Returns how many. */
int advise_candidates(const mix *m, int total_sms, const green_gpu *green, const mig_gpu *mig,
                      const double *footprints, advise_candidate *out, int max);

/* Which partition sizes are probed (advise --probes); X(kind, name). */
#define ADVISE_PROBES_TABLE(X) X(ADVISE_PROBES_TWO, "two") X(ADVISE_PROBES_ALL, "all")
#define ADVISE_PROBES_ENUM_(kind, name) kind,
typedef enum { ADVISE_PROBES_TABLE(ADVISE_PROBES_ENUM_) } advise_probes;
#undef ADVISE_PROBES_ENUM_
const char *advise_probes_name(advise_probes setting);

/* The partition sizes the candidates give job (the first index of a distinct job; the mix's jobs
 * that are it count too), each once, in the candidates' order, the whole GPU's not among them.
 * Returns how many (at most max). */
int advise_sizes_of(const mix *m, const advise_candidate *cands, int count, int total_sms, int job, int *out,
                    int max);

/* One probe: a distinct job alone, on the whole GPU (sms 0) or a share of sms SMs. */
typedef struct advise_probe_need {
    int job;                         /* the first job of the mix that is this job */
    int sms;                         /* 0: the whole GPU */
    int percent;                     /* the MPS share that gives it sms (sm_target_percent_for); 100 whole */
    char key[512];                   /* its cache key */
} advise_probe_need;

/* The probes the candidates need under setting, distinct jobs by their canonical spec: whole-GPU
 * ones first. gpu_name, revision, window_s, warmup: the cache key's parts (the setting is not one: a
 * size measured once serves either). Returns how many (at most max). */
int advise_probes_needed(const mix *m, const advise_candidate *cands, int count, int total_sms,
                         advise_probes setting, const char *gpu_name, const char *revision, double window_s,
                         long warmup, advise_probe_need *out, int max);

/* The cache: a JSON object of entries. Read: 0 (the file absent is an empty cache), or -1 with a
 * message naming the file and what was expected (the caller exits 2). */
typedef struct advise_cache advise_cache;
int advise_cache_open(advise_cache **out, const char *dir, char *err, size_t err_size);
void advise_cache_close(advise_cache *c);
/* An entry's measured values (rate, sm_active, dram_active, power_w, peak_bytes, busy; a value an
 * older entry lacks is NaN, unknown); 1 found, 0 not. */
#define ADVISE_PROBE_VALUES 6
int advise_cache_get(const advise_cache *c, const char *key, double values[ADVISE_PROBE_VALUES]);
void advise_cache_put(advise_cache *c, const char *key, const double values[ADVISE_PROBE_VALUES]);
/* Writes the cache back (atomically): the file as it is now with this cache's entries added, under a
 * lock, so that advisors sharing a results folder keep each other's probes. 0, or -1 with a message. */
int advise_cache_save(advise_cache *c, char *err, size_t err_size);

#endif
