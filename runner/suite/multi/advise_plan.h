/* The advisor's plan and its probe cache (run_suite advise).
 *
 * The candidates a mix has on a GPU: naive, mps without shares, mps with equal shares, streams,
 * mig-emulate under each layout the MIG planner keeps for the mix (fill's choice and its runner-ups,
 * where the GPU's MIG table is known), green under an equal split and under each of those layouts'
 * SM counts rounded to the green unit. The probes they need: each distinct job alone on the whole
 * GPU and on every partition size a candidate gives it.
 *
 * The cache (ADVISE_CACHE_FILE in the results folder, JSON): one entry per probe, keyed by
 *   <job's canonical spec>|<GPU name>|<suite revision>|<SMs: 0 the whole GPU>|<window s>/<warm-up steps>
 * A probe is measured again only when one of those changes: another GPU, another build of the suite,
 * another window. A file that is not the cache's JSON is refused (exit 2), never overwritten. */
#ifndef SUITE_ADVISE_PLAN_H
#define SUITE_ADVISE_PLAN_H

#include <stddef.h>

#include "runner/suite/multi/advise_model.h"
#include "runner/suite/plan/mig_profiles.h"
#include "runner/suite/plan/mix.h"

#define ADVISE_CACHE_FILE "advise-cache.json"
#define ADVISE_GREEN_UNIT 8          /* a green partition's SMs are multiples of this (Hopper's) */

/* The candidates of m on a GPU of total_sms SMs; mig: its MIG table, or NULL (no MIG layouts);
 * footprints: each job's bytes for the MIG planner (NULL: unknown). Returns how many. */
int advise_candidates(const mix *m, int total_sms, const mig_gpu *mig, const double *footprints,
                      advise_candidate *out, int max);

/* One probe: a distinct job alone, on the whole GPU (sms 0) or a share of sms SMs. */
typedef struct advise_probe_need {
    int job;                         /* the first job of the mix that is this job */
    int sms;                         /* 0: the whole GPU */
    int percent;                     /* the MPS share that gives it sms (sm_target_percent_for); 100 whole */
    char key[512];                   /* its cache key */
} advise_probe_need;

/* The probes the candidates need, distinct jobs by their canonical spec: whole-GPU ones first.
 * gpu_name, revision, window_s, warmup: the cache key's parts. Returns how many (at most max). */
int advise_probes_needed(const mix *m, const advise_candidate *cands, int count, int total_sms,
                         const char *gpu_name, const char *revision, double window_s, long warmup,
                         advise_probe_need *out, int max);

/* The cache: a JSON object of entries. Read: 0 (the file absent is an empty cache), or -1 with a
 * message naming the file and what was expected (the caller exits 2). */
typedef struct advise_cache advise_cache;
int advise_cache_open(advise_cache **out, const char *dir, char *err, size_t err_size);
void advise_cache_close(advise_cache *c);
/* An entry's measured values (rate, sm_active, dram_active, power_w, peak_bytes); 1 found, 0 not. */
int advise_cache_get(const advise_cache *c, const char *key, double values[5]);
void advise_cache_put(advise_cache *c, const char *key, const double values[5]);
/* Writes the cache back whole (atomically). 0, or -1 with a message. */
int advise_cache_save(const advise_cache *c, char *err, size_t err_size);

#endif
