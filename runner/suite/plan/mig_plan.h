/* MIG planning, pure (no NVML, no GPU): what a GPU can be cut into and how a mix is cut.
 *
 *  - profile tables (mig_profiles.h): shipped for A100-40GB, A100-80GB, H100-80GB, H200-141GB and
 *    A30-24GB, so that a plan can be made for a GPU that is not present; the session (mig.h)
 *    reads the GPU's own table from NVML and compares it with these.
 *  - the planner (mig_plan.c, over the tables): places one instance per job on the memory slices
 *    so that the instances obey NVIDIA's placement rules and do not overlap; the placement
 *    checker; layout strings.
 *  - objectives and layouts (mig_layouts.c, over the planner): every distinct valid layout of a
 *    GPU for a number of jobs, the printed plan and its choice, and the two ways of choosing
 *    profiles:
 *      fill     the whole GPU is shared out by compute demand (FLOPs per step x planned steps):
 *               every job's memory held, identical jobs on identical profiles, a job with 10%
 *               more demand than another on more SMs; among those layouts the one that meets
 *               the most demand (each job counts its SMs up to its demand share of all SMs),
 *               then the one with the most SMs at work. The comparison of modes needs this.
 *      compact  each job on the smallest profile that holds it, leaving the rest of the GPU
 *               to other tenants.
 * Layout strings name one profile per job, in the mix's order, joined by ',' or '+'
 * ("1g.10gb,3g.40gb" or "1g.10gb+3g.40gb"; "1g.10gb+me" stays one profile).
 *
 * Compute instances sharing one GPU instance ("MIG (shared)" in the study): an entry
 * PROFILE:Nc+Nc... is one GPU instance split into compute instances, one per job, taking the next
 * jobs in the mix's order ("7g.40gb:3c+4c": the first job on nvidia-smi's compute-instance
 * profile 3c.7g.40gb, the second on 4c.7g.40gb). Their compute is isolated; the GPU instance's
 * memory, its bandwidth and its L2 are shared, so the jobs' footprints together (each with its
 * headroom) must fit the GPU instance's memory. */
#ifndef SUITE_MIG_PLAN_H
#define SUITE_MIG_PLAN_H

#include <stddef.h>
#include <stdio.h>

#include "runner/suite/plan/mig_profiles.h"

/* ---- planner (mig_plan.c) ------------------------------------------------------------------- */

/* How the profiles were chosen (the functions are mig_layouts.c's, at the end of this header). */
typedef enum { MIG_OBJECTIVE_FILL, MIG_OBJECTIVE_COMPACT } mig_objective;
#define MIG_OBJECTIVE_NAMES "fill, compact"
const char *mig_objective_name(mig_objective objective);
int mig_objective_parse(const char *text, mig_objective *objective);  /* 0, or -1 when unknown */

/* A layout: a multiset of profiles (indices, largest first) that can be placed together. */
typedef struct mig_layout {
    int count;
    int profiles[MIG_MAX_INSTANCES];
} mig_layout;

/* One candidate of `fill`: a layout with its best assignment of profiles to jobs. */
typedef struct mig_candidate {
    int profile[MIG_MAX_INSTANCES];  /* per job, in job order */
    int ci_slices[MIG_MAX_INSTANCES];/* per job: 0 its own GPU instance; else its compute instance's
                                        slices in the one GPU instance all jobs share */
    double met;                      /* sum over jobs of min(SMs, demand share of all SMs), of all SMs */
    int sms;                         /* SMs the layout uses */
    int broken;                      /* rules it breaks: 0 none, 1 the demand order, 2 also
                                        identical jobs on identical profiles */
} mig_candidate;

#define MIG_RUNNER_UPS 3
typedef struct mig_choice {
    mig_objective objective;
    int layouts;               /* distinct layouts that place this many instances */
    int too_small;             /* ... of which no assignment holds every job's memory */
    int unequal;               /* ... of which holding memory needs identical jobs apart */
    int out_of_order;          /* ... of which holding memory needs a job with more demand on fewer SMs */
    int relaxed;               /* 0: every rule kept; 1: demand order relaxed; 2: also identical jobs */
    int candidate_count;       /* chosen + runner-ups kept (at most 1 + MIG_RUNNER_UPS) */
    mig_candidate candidates[1 + MIG_RUNNER_UPS];  /* best first */
    double share[MIG_MAX_INSTANCES];  /* each job's demand share, 0..1 */
    int demands_differ;        /* known and not all equal */
    int shared;                /* the jobs share one GPU instance: 0 no; MIG_SHARED_NEEDED: no layout
                                  of separate instances holds them; MIG_SHARED_ASKED: --mig-share-memory */
    int shared_profiles;       /* GPU instance profiles whose memory holds every job's together */
    int made;                  /* 1 when mig_plan_objective made the plan this belongs to */
} mig_choice;
enum { MIG_SHARED_NEEDED = 1, MIG_SHARED_ASKED = 2 };

typedef struct mig_job {
    const char *label;         /* the mix's label, for messages and the printed plan */
    unsigned long long footprint_bytes;
    double demand;             /* compute demand (FLOPs per step x planned steps); <= 0: unknown,
                                  and then every job counts the same for `fill` */
} mig_job;

typedef struct mig_planned {
    int job;                   /* index into the jobs given to the planner */
    char label[64];
    int profile;               /* index into the plan's gpu.profiles */
    mig_placement placement;
    int existing;              /* session: index of a reused MIG device; -1: to be created */
    int ci_slices;             /* compute slices of its compute instance (the profile's: it spans it) */
    int shared;                /* its GPU instance's memory is shared with other jobs' compute instances */
    int gpu_instance;          /* which of the plan's GPU instances (jobs sharing one have the same) */
    unsigned long long footprint_bytes, required_bytes;
    /* what --mig-emulate reproduces without MIG: */
    int sm_count;              /* its compute instance's */
    double sm_fraction;        /* sm_count / gpu.total_sms */
    unsigned long long memory_bytes;  /* its GPU instance's (shared: held by all its jobs together) */
} mig_planned;

typedef struct mig_plan {
    mig_gpu gpu;
    unsigned int occupied;     /* memory slices held by instances outside the plan (bit i) */
    int compute_used;          /* compute slices held by them */
    int count;
    mig_planned instances[MIG_MAX_INSTANCES];
    mig_choice choice;         /* how mig_plan_objective chose the profiles (made 0 otherwise) */
} mig_plan;

unsigned long long mig_required_bytes(unsigned long long footprint_bytes);
/* The most adjacent memory slices free in `used` (bit i: slice i held) of `slices`. */
int mig_longest_free_run(unsigned int used, int slices);
/* Smallest plannable profile whose memory holds the footprint with headroom; -1 if none. */
int mig_smallest_profile(const mig_gpu *gpu, unsigned long long footprint_bytes);
/* The placement checker: every placement is one NVIDIA allows for its profile, none overlaps
 * another or the occupied slices, compute slices and per-profile instance counts stay within
 * the GPU's. 0, or -1 with the first violation in err. */
int mig_check_placements(const mig_gpu *gpu, const int *profiles, const mig_placement *placements,
                         int count, unsigned int occupied, int compute_used, char *err,
                         size_t err_size);
/* One job's place in a layout string. */
typedef struct mig_slot {
    int profile;               /* its GPU instance's profile */
    int ci_slices;             /* 0: its own GPU instance; else its compute instance's slices in a shared one */
    int gpu_instance;          /* the layout's GPU instance it is in (entry order) */
} mig_slot;
/* A layout string -> one slot per job (slots holds MIG_MAX_INSTANCES). 0, or -1 naming the bad
 * entry and what was expected, or the count when it is not job_count. */
int mig_parse_slots(const mig_gpu *gpu, const char *layout, int job_count, mig_slot *slots, char *err,
                    size_t err_size);
/* The same, profile indices only (profiles holds MIG_MAX_INSTANCES), one per job. */
int mig_parse_layout(const mig_gpu *gpu, const char *layout, int job_count, int *profiles,
                     char *err, size_t err_size);
/* Without the GPU's own table: 0 when the layout parses for at least one known GPU (its profile
 * names, one per job), else -1 with why it fails (on the first known GPU). */
int mig_layout_of_some_gpu(const char *layout, int job_count, char *err, size_t err_size);
/* The compact planner. layout NULL or "": each job's smallest profile; else one profile name
 * per job (or a shared GPU instance's compute instances, PROFILE:Nc+Nc). occupied / compute_used: slices already taken (0 on an empty GPU). Placement keeps
 * the largest contiguous free space. 0, or -1 with the numbers in err. */
int mig_plan_jobs(mig_plan *plan, const mig_gpu *gpu, const mig_job *jobs, int job_count,
                  const char *layout, unsigned int occupied, int compute_used, char *err,
                  size_t err_size);
/* The plan's profiles in job order as a layout string ("1g.10gb,2g.20gb,2g.20gb"). */
int mig_plan_layout_text(const mig_plan *plan, char *out, size_t size);
/* The same for some of its jobs (jobs: their indices; NULL: 0..count-1), in that order. */
int mig_plan_layout_for(const mig_plan *plan, const int *jobs, int count, char *out, size_t size);
/* "nvidia-smi mig -i <gpu> -cgi <ids> -C" for the instances still to create (then "-cci" for the
 * compute instances of a shared one); what snprintf returns. */
int mig_plan_admin_command(const mig_plan *plan, unsigned int gpu_index, char *out, size_t size);

/* ---- objectives and layouts (mig_layouts.c) ------------------------------------------------- */

/* Every distinct layout of job_count plannable profiles that NVIDIA's rules can place in the
 * free slices, largest profiles first, at most max. Returns how many (0: none). */
int mig_enumerate_layouts(const mig_gpu *gpu, int job_count, unsigned int occupied,
                          int compute_used, mig_layout *out, int max);
/* "3g.40gb+2g.20gb+2g.20gb" */
int mig_layout_text(const mig_gpu *gpu, const mig_layout *layout, char *out, size_t size);

/* Best assignment of a given layout's profiles to the jobs (fill's score with every job's memory
 * held, nothing else required). 0, or -1 when no assignment holds every job's memory. */
int mig_assign_layout(const mig_gpu *gpu, const mig_job *jobs, int job_count,
                      const mig_layout *layout, mig_candidate *out);
/* Plans with an objective. A layout string overrides the objective (as mig_plan_jobs).
 * plan->choice records, for `fill`, the chosen layout and the runner-ups. The jobs share one GPU
 * instance, each on a compute instance of its own, when share_memory asks for it
 * (--mig-share-memory) or when no layout of separate instances holds every job's memory; the
 * shared instance and its split are chosen by fill's score (demand met, then SMs at work).
 * 0, or -1 with err. */
int mig_plan_objective(mig_plan *plan, const mig_gpu *gpu, const mig_job *jobs, int job_count,
                       const char *layout, mig_objective objective, int share_memory,
                       unsigned int occupied, int compute_used, char *err, size_t err_size);
/* The best split of one GPU instance of `profile` among all the jobs (fill's score); 0, or -1 when
 * its memory cannot hold them together or its compute instances cannot be shared out. */
int mig_assign_shared(const mig_gpu *gpu, const mig_job *jobs, int job_count, int profile,
                      mig_candidate *out);
/* A candidate as a layout string in job order ("3g.20gb,3g.20gb" or "7g.40gb:3c+4c"). */
int mig_candidate_text(const mig_gpu *gpu, const mig_candidate *c, int count, char *out, size_t size);
/* The plan as a table with placements and a slice map, after its choice (mig_choice_print). */
void mig_plan_print(const mig_plan *plan, FILE *out);
/* The choice as the dry run shows it (mig_plan_print starts with it): objective, demand shares,
 * the chosen layout, the runner-ups and why each lost. Nothing when plan->choice.made is 0. */
void mig_choice_print(const mig_plan *plan, FILE *out);

#endif
