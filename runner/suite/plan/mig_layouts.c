/* MIG objectives and layouts (see mig_plan.h). Layouts are enumerated as multisets of profiles,
 * largest first, each checked by a small search over NVIDIA's placements; `fill` then tries
 * every distinct assignment of a layout's profiles to the jobs. On the 8-slice GPUs a job count
 * has at most a few dozen layouts and 7! assignments, so the search is exhaustive. */
#define _GNU_SOURCE
#include "runner/suite/plan/mig_plan.h"
#include "base/error.h"

#include <math.h>
#include <string.h>

static double gib(unsigned long long bytes) { return (double)bytes / 1073741824.0; }


static const char *objective_names[] = {"fill", "compact"};

const char *mig_objective_name(mig_objective objective) { return objective_names[objective]; }

int mig_objective_parse(const char *text, mig_objective *objective) {
    for (int i = 0; i < 2; i++)
        if (text && strcmp(text, objective_names[i]) == 0) {
            *objective = (mig_objective)i;
            return 0;
        }
    return -1;
}

/* ---- enumeration ---------------------------------------------------------------------------- */

static int profile_larger(const mig_profile *a, const mig_profile *b) {
    if (a->compute_slices != b->compute_slices) return a->compute_slices > b->compute_slices;
    if (a->memory_slices != b->memory_slices) return a->memory_slices > b->memory_slices;
    return a->memory_mib > b->memory_mib;
}

/* Can instances k.. of the layout be placed beside the used slices? */
static int placeable(const mig_gpu *gpu, const int *profiles, int k, int count, unsigned int used) {
    if (k == count) return 1;
    const mig_profile *p = &gpu->profiles[profiles[k]];
    for (int i = 0; i < p->placement_count; i++) {
        unsigned int mask = mig_slice_mask(p->placements[i]);
        if (!(used & mask) && placeable(gpu, profiles, k + 1, count, used | mask)) return 1;
    }
    return 0;
}

typedef struct enumeration {
    const mig_gpu *gpu;
    int order[MIG_MAX_PROFILES], order_count;  /* plannable profiles, largest first */
    int job_count, free_compute;
    unsigned int occupied;
    mig_layout *out;
    int max, found;
    int current[MIG_MAX_INSTANCES];
} enumeration;

static void enumerate(enumeration *e, int depth, int from, int compute) {
    if (depth == e->job_count) {
        if (!placeable(e->gpu, e->current, 0, depth, e->occupied)) return;
        if (e->found < e->max) {
            e->out[e->found].count = depth;
            memcpy(e->out[e->found].profiles, e->current, sizeof e->current);
        }
        e->found++;
        return;
    }
    for (int o = from; o < e->order_count; o++) {
        const mig_profile *p = &e->gpu->profiles[e->order[o]];
        if (compute + p->compute_slices > e->free_compute) continue;
        int same = 0;  /* copies of this profile already in the layout */
        for (int k = 0; k < depth; k++) same += e->current[k] == e->order[o];
        if (same + 1 > p->max_instances) continue;
        e->current[depth] = e->order[o];
        enumerate(e, depth + 1, o, compute + p->compute_slices);
    }
}

int mig_enumerate_layouts(const mig_gpu *gpu, int job_count, unsigned int occupied,
                          int compute_used, mig_layout *out, int max) {
    if (job_count <= 0 || job_count > MIG_MAX_INSTANCES) return 0;
    enumeration e = {.gpu = gpu, .job_count = job_count, .free_compute = gpu->compute_slices - compute_used,
                     .occupied = occupied, .out = out, .max = max};
    for (int i = 0; i < gpu->profile_count; i++) {
        if (!gpu->profiles[i].plannable) continue;
        int k = e.order_count++;
        while (k > 0 && profile_larger(&gpu->profiles[i], &gpu->profiles[e.order[k - 1]]))
            e.order[k] = e.order[k - 1], k--;
        e.order[k] = i;
    }
    enumerate(&e, 0, 0, 0);
    return e.found < max ? e.found : max;
}

int mig_layout_text(const mig_gpu *gpu, const mig_layout *layout, char *out, size_t size) {
    int used = 0;
    if (size) out[0] = '\0';
    for (int k = 0; k < layout->count; k++) {
        int n = snprintf(out + used, (size_t)used < size ? size - (size_t)used : 0, "%s%s", k ? "+" : "",
                         gpu->profiles[layout->profiles[k]].name);
        if (n > 0) used += n;
    }
    return used;
}

/* ---- fill's score --------------------------------------------------------------------------- */

/* Demands closer than this are not ordered: two different jobs of about the same demand may get
 * the profiles in either order. */
#define MIG_DEMAND_ORDER_RATIO 1.10

static int identical(const mig_job *a, const mig_job *b) {
    return a->footprint_bytes == b->footprint_bytes && a->demand == b->demand &&
           strcmp(a->label ? a->label : "", b->label ? b->label : "") == 0;
}

/* Each job's share of the compute the mix demands; equal shares when any demand is unknown.
 * Returns 1 when the demands are known and differ (so they order the jobs). */
static int demand_shares(const mig_job *jobs, int count, double *share) {
    double total = 0;
    int known = 1;
    for (int j = 0; j < count; j++) {
        known &= jobs[j].demand > 0 && isfinite(jobs[j].demand);
        total += jobs[j].demand;
    }
    int differ = 0;
    for (int j = 0; j < count; j++) {
        share[j] = known ? jobs[j].demand / total : 1.0 / count;
        differ |= fabs(share[j] - 1.0 / count) > 1e-12;
    }
    return differ;
}

/* What an assignment must respect, strictest first; fill relaxes them only when no layout can. */
enum { RULES_NONE, RULES_EQUAL, RULES_ORDER };

typedef struct assign_search {
    const mig_gpu *gpu;
    const mig_job *jobs;
    int count, rules;
    double target[MIG_MAX_INSTANCES];          /* SMs in proportion to demand */
    int left[MIG_MAX_PROFILES];                /* the layout's profiles not yet given out */
    int current[MIG_MAX_INSTANCES];
    int found;
    mig_candidate best;
} assign_search;

static int respects_rules(const assign_search *a, int job, int profile) {
    int sms = a->gpu->profiles[profile].sm_count;
    for (int k = 0; k < job; k++) {
        const mig_job *mine = &a->jobs[job], *other = &a->jobs[k];
        int theirs = a->gpu->profiles[a->current[k]].sm_count;
        if (a->rules >= RULES_EQUAL && identical(mine, other) && a->current[k] != profile) return 0;
        if (a->rules >= RULES_ORDER && mine->demand > 0 && other->demand > 0 &&
            ((mine->demand >= MIG_DEMAND_ORDER_RATIO * other->demand && sms <= theirs) ||
             (other->demand >= MIG_DEMAND_ORDER_RATIO * mine->demand && theirs <= sms)))
            return 0;
    }
    return 1;
}

static void assign(assign_search *a, int job) {
    if (job == a->count) {
        double met = 0;
        int sms = 0;
        for (int j = 0; j < a->count; j++) {
            int s = a->gpu->profiles[a->current[j]].sm_count;
            met += s < a->target[j] ? s : a->target[j];
            sms += s;
        }
        met /= a->gpu->total_sms > 0 ? a->gpu->total_sms : 1;
        if (!a->found || met > a->best.met + 1e-12) {
            a->found = 1;
            a->best.met = met, a->best.sms = sms;
            memcpy(a->best.profile, a->current, sizeof a->current);
        }
        return;
    }
    unsigned long long need = mig_required_bytes(a->jobs[job].footprint_bytes);
    for (int i = 0; i < a->gpu->profile_count; i++) {
        if (!a->left[i] || mig_profile_bytes(&a->gpu->profiles[i]) < need || !respects_rules(a, job, i)) continue;
        a->left[i]--, a->current[job] = i;
        assign(a, job + 1);
        a->left[i]++;
    }
}

static int best_assignment(const mig_gpu *gpu, const mig_job *jobs, int count, const mig_layout *layout,
                           int rules, mig_candidate *out) {
    if (layout->count != count || count > MIG_MAX_INSTANCES) return -1;
    assign_search a = {.gpu = gpu, .jobs = jobs, .count = count, .rules = rules};
    double share[MIG_MAX_INSTANCES];
    demand_shares(jobs, count, share);
    for (int j = 0; j < count; j++) a.target[j] = share[j] * gpu->total_sms;
    for (int k = 0; k < layout->count; k++) a.left[layout->profiles[k]]++;
    assign(&a, 0);
    if (a.found) *out = a.best;
    return a.found ? 0 : -1;
}

int mig_assign_layout(const mig_gpu *gpu, const mig_job *jobs, int job_count,
                      const mig_layout *layout, mig_candidate *out) {
    return best_assignment(gpu, jobs, job_count, layout, RULES_NONE, out);
}

static int memory_slices_of(const mig_gpu *gpu, const mig_candidate *c, int count) {
    int n = 0;
    for (int j = 0; j < count; j++) n += gpu->profiles[c->profile[j]].memory_slices;
    return n;
}

/* Better: more of the demand met; then more SMs at work; then fewer memory slices. */
static int candidate_better(const mig_gpu *gpu, const mig_candidate *a, const mig_candidate *b, int count) {
    if (fabs(a->met - b->met) > 1e-9) return a->met > b->met;
    if (a->sms != b->sms) return a->sms > b->sms;
    return memory_slices_of(gpu, a, count) < memory_slices_of(gpu, b, count);
}

static void keep_candidate(const mig_gpu *gpu, mig_choice *c, const mig_candidate *cand, int count) {
    int n = c->candidate_count, k = n < 1 + MIG_RUNNER_UPS ? n : MIG_RUNNER_UPS;
    if (n == 1 + MIG_RUNNER_UPS && !candidate_better(gpu, cand, &c->candidates[k], count)) return;
    while (k > 0 && candidate_better(gpu, cand, &c->candidates[k - 1], count)) c->candidates[k] = c->candidates[k - 1], k--;
    c->candidates[k] = *cand;
    if (n < 1 + MIG_RUNNER_UPS) c->candidate_count++;
}

int mig_candidate_text(const mig_gpu *gpu, const mig_candidate *c, int count, char *out, size_t size) {
    int used = 0;
    if (size) out[0] = '\0';
    for (int j = 0; j < count; j++) {
        int n = c->ci_slices[j] && j
                    ? snprintf(out + used, (size_t)used < size ? size - (size_t)used : 0, "+%dc", c->ci_slices[j])
                : c->ci_slices[j]
                    ? snprintf(out + used, (size_t)used < size ? size - (size_t)used : 0, "%s:%dc",
                               gpu->profiles[c->profile[j]].name, c->ci_slices[j])
                    : snprintf(out + used, (size_t)used < size ? size - (size_t)used : 0, "%s%s", j ? "," : "",
                               gpu->profiles[c->profile[j]].name);
        if (n > 0) used += n;
    }
    return used;
}

/* ---- one GPU instance shared by every job --------------------------------------------------- */

typedef struct share_search {
    const mig_gpu *gpu;
    const mig_job *jobs;
    int count, profile, rules;
    double target[MIG_MAX_INSTANCES];
    int slices[MIG_MAX_INSTANCES];
    int found;
    mig_candidate best;
} share_search;

static int share_respects_rules(const share_search *a, int job, int sms) {
    for (int k = 0; k < job; k++) {
        const mig_job *mine = &a->jobs[job], *other = &a->jobs[k];
        int theirs = mig_ci_sms(a->gpu, a->profile, a->slices[k]);
        if (a->rules >= RULES_EQUAL && identical(mine, other) && theirs != sms) return 0;
        if (a->rules >= RULES_ORDER && mine->demand > 0 && other->demand > 0 &&
            ((mine->demand >= MIG_DEMAND_ORDER_RATIO * other->demand && sms <= theirs) ||
             (other->demand >= MIG_DEMAND_ORDER_RATIO * mine->demand && theirs <= sms)))
            return 0;
    }
    return 1;
}

/* Every split of the GPU instance's compute slices into one compute instance per job. */
static void share(share_search *a, int job, int slices_left) {
    if (job == a->count) {
        double met = 0;
        int sms = 0;
        for (int j = 0; j < a->count; j++) {
            int s = mig_ci_sms(a->gpu, a->profile, a->slices[j]);
            met += s < a->target[j] ? s : a->target[j];
            sms += s;
        }
        met /= a->gpu->total_sms > 0 ? a->gpu->total_sms : 1;
        if (!a->found || met > a->best.met + 1e-12 || (fabs(met - a->best.met) <= 1e-12 && sms > a->best.sms)) {
            a->found = 1;
            a->best.met = met, a->best.sms = sms;
            for (int j = 0; j < a->count; j++) a->best.profile[j] = a->profile, a->best.ci_slices[j] = a->slices[j];
        }
        return;
    }
    for (int c = 1; c <= slices_left - (a->count - job - 1); c++) {
        int sms = mig_ci_sms(a->gpu, a->profile, c);
        if (c >= a->gpu->profiles[a->profile].compute_slices || !sms || !share_respects_rules(a, job, sms)) continue;
        a->slices[job] = c;
        share(a, job + 1, slices_left - c);
    }
}

static int shared_assignment(const mig_gpu *gpu, const mig_job *jobs, int count, int profile, int rules,
                             mig_candidate *out) {
    const mig_profile *p = &gpu->profiles[profile];
    unsigned long long need = 0;
    for (int j = 0; j < count; j++) need += mig_required_bytes(jobs[j].footprint_bytes);
    if (count < 2 || count > MIG_MAX_INSTANCES || !p->plannable || count > p->compute_slices ||
        mig_profile_bytes(p) < need)
        return -1;
    share_search a = {.gpu = gpu, .jobs = jobs, .count = count, .profile = profile, .rules = rules};
    double share_of[MIG_MAX_INSTANCES];
    demand_shares(jobs, count, share_of);
    for (int j = 0; j < count; j++) a.target[j] = share_of[j] * gpu->total_sms;
    share(&a, 0, p->compute_slices);
    if (a.found) *out = a.best, out->broken = RULES_ORDER - rules;
    return a.found ? 0 : -1;
}

int mig_assign_shared(const mig_gpu *gpu, const mig_job *jobs, int job_count, int profile, mig_candidate *out) {
    return shared_assignment(gpu, jobs, job_count, profile, RULES_NONE, out);
}

/* Every job on a compute instance of one GPU instance: each profile that holds their memory
 * together and can be placed, split as fill splits the GPU. */
static int plan_shared(mig_plan *plan, const mig_gpu *gpu, const mig_job *jobs, int count, unsigned int occupied,
                       int compute_used, mig_choice *choice, char *err, size_t err_size) {
    mig_choice kept[RULES_ORDER + 1];
    memset(kept, 0, sizeof kept);
    choice->layouts = choice->too_small = choice->unequal = choice->out_of_order = 0;
    for (int i = 0; i < gpu->profile_count; i++) {
        mig_layout one = {1, {i}};
        if (!gpu->profiles[i].plannable || !placeable(gpu, one.profiles, 0, 1, occupied) ||
            compute_used + gpu->profiles[i].compute_slices > gpu->compute_slices)
            continue;
        choice->layouts++;
        mig_candidate c;
        int rules = RULES_ORDER;
        while (rules >= RULES_NONE && shared_assignment(gpu, jobs, count, i, rules, &c) != 0) rules--;
        if (rules >= RULES_NONE) keep_candidate(gpu, &kept[rules], &c, count);
        choice->out_of_order += rules == RULES_EQUAL;
        choice->unequal += rules == RULES_NONE;
        choice->too_small += rules < RULES_NONE;
    }
    choice->shared_profiles = choice->layouts - choice->too_small;
    choice->candidate_count = 0;
    for (int rules = RULES_ORDER; rules >= RULES_NONE; rules--)
        for (int k = 0; k < kept[rules].candidate_count && choice->candidate_count < 1 + MIG_RUNNER_UPS; k++) {
            if (choice->candidate_count == 0) choice->relaxed = RULES_ORDER - rules;
            choice->candidates[choice->candidate_count++] = kept[rules].candidates[k];
        }
    if (choice->candidate_count == 0) return -1;
    char layout[512];
    mig_candidate_text(gpu, &choice->candidates[0], count, layout, sizeof layout);
    return mig_plan_jobs(plan, gpu, jobs, count, layout, occupied, compute_used, err, err_size);
}

static int plan_fill(mig_plan *plan, const mig_gpu *gpu, const mig_job *jobs, int count,
                     unsigned int occupied, int compute_used, mig_choice *choice, char *err, size_t err_size) {
    mig_layout layouts[MIG_MAX_LAYOUTS];
    int n = mig_enumerate_layouts(gpu, count, occupied, compute_used, layouts, MIG_MAX_LAYOUTS);
    mig_choice kept[RULES_ORDER + 1];  /* by the strictest rules each layout keeps */
    memset(kept, 0, sizeof kept);
    choice->layouts = n;
    for (int i = 0; i < n; i++) {
        mig_candidate c;
        int rules = RULES_ORDER;
        while (rules >= RULES_NONE && best_assignment(gpu, jobs, count, &layouts[i], rules, &c) != 0) rules--;
        c.broken = RULES_ORDER - rules;
        if (rules >= RULES_NONE) keep_candidate(gpu, &kept[rules], &c, count);
        choice->out_of_order += rules == RULES_EQUAL;
        choice->unequal += rules == RULES_NONE;
        choice->too_small += rules < RULES_NONE;
    }
    /* The best layout that keeps the most rules; the runner-ups after it, then (to show why they
     * lost) the best of those that break a rule. */
    for (int rules = RULES_ORDER; rules >= RULES_NONE; rules--)
        for (int k = 0; k < kept[rules].candidate_count && choice->candidate_count < 1 + MIG_RUNNER_UPS; k++) {
            if (choice->candidate_count == 0) choice->relaxed = RULES_ORDER - rules;
            choice->candidates[choice->candidate_count++] = kept[rules].candidates[k];
        }
    if (choice->candidate_count == 0)  /* nothing fits: the compact planner says why in numbers */
        return mig_plan_jobs(plan, gpu, jobs, count, NULL, occupied, compute_used, err, err_size) == 0
                   ? error_set(err, err_size, "no layout of %d instances on %s holds every job", count, gpu->name)
                   : -1;
    char layout[512];
    mig_candidate_text(gpu, &choice->candidates[0], count, layout, sizeof layout);
    return mig_plan_jobs(plan, gpu, jobs, count, layout, occupied, compute_used, err, err_size);
}

int mig_plan_objective(mig_plan *plan, const mig_gpu *gpu, const mig_job *jobs, int job_count,
                       const char *layout, mig_objective objective, int share_memory,
                       unsigned int occupied, int compute_used, char *err, size_t err_size) {
    mig_choice choice;
    memset(&choice, 0, sizeof choice);
    choice.objective = objective, choice.made = 1;
    if (job_count > 0 && job_count <= MIG_MAX_INSTANCES)
        choice.demands_differ = demand_shares(jobs, job_count, choice.share);
    int given = (layout && *layout) || job_count <= 0 || job_count > MIG_MAX_INSTANCES || gpu->profile_count == 0;
    int rc = -1;
    if (!given && share_memory) {
        choice.shared = MIG_SHARED_ASKED;
        if (plan_shared(plan, gpu, jobs, job_count, occupied, compute_used, &choice, err, err_size) == 0) {
            plan->choice = choice;
            return 0;
        }
        if (choice.candidate_count == 0)
            error_set(err, err_size, "--mig-share-memory: no GPU instance of %s holds the %d jobs' memory together "
                     "(each with its headroom) and a compute instance for each (compute-instance profiles: %s)",
                     gpu->name, job_count, job_count < 2 ? "two jobs at least" : "NVIDIA's MIG User Guide");
        plan->choice = choice;
        return -1;
    }
    rc = given || objective == MIG_OBJECTIVE_COMPACT
             ? mig_plan_jobs(plan, gpu, jobs, job_count, layout, occupied, compute_used, err, err_size)
             : plan_fill(plan, gpu, jobs, job_count, occupied, compute_used, &choice, err, err_size);
    if (rc != 0 && !given && job_count >= 2) {
        /* No layout of separate instances holds every job: one GPU instance's memory may, shared
         * by a compute instance per job (the study's "MIG (shared)"). Its error stays the one shown
         * when that fails too. */
        mig_choice shared = choice;
        shared.shared = MIG_SHARED_NEEDED;
        char why[1024];
        if (plan_shared(plan, gpu, jobs, job_count, occupied, compute_used, &shared, why, sizeof why) == 0) {
            plan->choice = shared;
            if (err && err_size) err[0] = '\0';  /* separate instances' failure is no longer the answer */
            return 0;
        }
    }
    plan->choice = choice;  /* after the planner, which starts from an empty plan */
    return rc;
}

/* ---- the dry run's account ------------------------------------------------------------------ */

static void why_not(const mig_gpu *gpu, const mig_candidate *best, const mig_candidate *c, int count,
                    char *out, size_t size) {
    if (c->broken > best->broken)
        snprintf(out, size, c->broken == 2 ? "identical jobs would run on different profiles"
                                           : "a job with more demand would get no more SMs than one with less");
    else if (fabs(c->met - best->met) > 1e-9)
        snprintf(out, size, "meets less of the demand (%.1f%% < %.1f%%)", 100.0 * c->met, 100.0 * best->met);
    else if (c->sms != best->sms)
        snprintf(out, size, "as much demand met, fewer SMs at work (%d < %d)", c->sms, best->sms);
    else
        snprintf(out, size, "same SMs, more memory slices (%d > %d)", memory_slices_of(gpu, c, count),
                 memory_slices_of(gpu, best, count));
}

void mig_choice_print(const mig_plan *plan, FILE *out) {
    const mig_choice *choice = &plan->choice;
    const mig_gpu *gpu = &plan->gpu;
    int job_count = plan->count;
    if (!choice->made) return;
    if ((choice->objective == MIG_OBJECTIVE_COMPACT && !choice->shared) || choice->layouts == 0) {
        fprintf(out, "MIG objective %s: %s\n", mig_objective_name(choice->objective),
                choice->objective == MIG_OBJECTIVE_COMPACT
                    ? "each job on the smallest profile that holds it (the rest is left to other tenants)"
                    : "the layout given");
        return;
    }
    if (choice->shared)
        fprintf(out, "MIG shared GPU instance (%s): the jobs share one GPU instance's memory, each on a compute "
                "instance of its own (compute isolated; memory, its bandwidth and L2 shared), split as fill "
                "splits the GPU\n", choice->shared == MIG_SHARED_ASKED
                    ? "--mig-share-memory asks for it"
                    : "no layout of separate GPU instances holds every job's memory, one GPU instance's holds them together");
    fprintf(out, "MIG objective %s: the GPU's %d SMs shared by compute demand (FLOPs per step x "
            "planned steps)%s\n  demand shares:", choice->shared ? "fill" : mig_objective_name(choice->objective),
            gpu->total_sms, choice->demands_differ ? "" : "; demands equal or unknown: equal shares");
    for (int i = 0; i < job_count; i++) {
        const mig_planned *p = &plan->instances[i];
        fprintf(out, "%s job %d %s %.1f%%", i ? "," : "", p->job, p->label, 100.0 * choice->share[p->job]);
    }
    fprintf(out, "\n  rules: every job's memory held; identical jobs on identical profiles; a job with "
            "%.0f%% more demand than another gets more SMs\n", 100.0 * (MIG_DEMAND_ORDER_RATIO - 1));
    if (choice->shared)
        fprintf(out, "  %d GPU instance profile(s) can be placed on %s: %d cannot hold every job's memory together "
                "(each with its headroom), %d only with identical jobs apart, %d only against the demand order\n"
                "  compute-instance profiles (1c..4c of a larger GPU instance) from NVIDIA's MIG User Guide, not "
                "verified on hardware\n", choice->layouts, gpu->name, choice->too_small, choice->unequal,
                choice->out_of_order);
    else
        fprintf(out, "  %d distinct layout(s) of %d instance(s) fit %s: %d cannot hold every job's memory, "
                "%d only with identical jobs apart, %d only against the demand order\n", choice->layouts,
                job_count, gpu->name, choice->too_small, choice->unequal, choice->out_of_order);
    if (choice->relaxed)
        fprintf(out, "  no layout keeps every rule: %s\n", choice->relaxed == 1 ? "the demand order is relaxed"
                                                                                : "identical jobs may differ");
    fprintf(out, "  %-9s %-40s %5s %7s %7s  %s\n", "", "profiles (job order)", "SMs", "of GPU", "met", "why");
    for (int i = 0; i < choice->candidate_count; i++) {
        const mig_candidate *c = &choice->candidates[i];
        char text[256], why[160] = "meets the most demand, then uses the most SMs";
        mig_candidate_text(gpu, c, job_count, text, sizeof text);
        if (i) why_not(gpu, &choice->candidates[0], c, job_count, why, sizeof why);
        fprintf(out, "  %-9s %-40s %5d %6.1f%% %6.1f%%  %s\n", i ? "runner-up" : "chosen", text, c->sms,
                gpu->total_sms ? 100.0 * c->sms / gpu->total_sms : 0.0, 100.0 * c->met, why);
    }
    fprintf(out, "  (met: the sum over jobs of min(the job's SMs, its demand share of all SMs), of all SMs)\n");
}

void mig_plan_print(const mig_plan *plan, FILE *out) {
    const mig_gpu *g = &plan->gpu;
    mig_choice_print(plan, out);
    fprintf(out, "MIG plan for %s: %d compute slices, %d memory slices, %d SMs\n", g->name,
            g->compute_slices, g->memory_slices, g->total_sms);
    fprintf(out, "  a job fits a profile when its memory >= footprint + %d%% + %llu MiB\n",
            MIG_HEADROOM_PERCENT, MIG_CONTEXT_RESERVE_BYTES >> 20);
    fprintf(out, "  %-4s %-24s %10s %10s  %-11s %4s %6s %10s  %-8s %s\n", "job", "label",
            "footprint", "needs", "profile", "SMs", "of GPU", "memory", "slices", "instance");
    char owner[MIG_MAX_SLICES][4];
    for (int s = 0; s < MIG_MAX_SLICES; s++) snprintf(owner[s], sizeof owner[s], "%s", plan->occupied >> s & 1u ? "#" : ".");
    unsigned int used = plan->occupied;
    for (int i = 0; i < plan->count; i++) {
        const mig_planned *p = &plan->instances[i];
        char slices[16];
        snprintf(slices, sizeof slices, p->placement.size > 1 ? "%d..%d" : "%d", p->placement.start,
                 p->placement.start + p->placement.size - 1);
        char profile[48];
        if (p->profile >= 0) mig_ci_name(g, p->profile, p->ci_slices ? p->ci_slices : g->profiles[p->profile].compute_slices,
                                         profile, sizeof profile);
        else snprintf(profile, sizeof profile, "(unknown)");
        fprintf(out, "  %-4d %-24.24s %6.2f GiB %6.2f GiB  %-11s %4d %5.1f%% %6.2f GiB  %-8s %s%s\n",
                p->job, p->label, gib(p->footprint_bytes), gib(p->required_bytes), profile, p->sm_count,
                100.0 * p->sm_fraction, gib(p->memory_bytes), slices, p->existing >= 0 ? "existing" : "new",
                p->shared ? ", shared" : "");
        for (int s = p->placement.start; s < p->placement.start + p->placement.size && s < MIG_MAX_SLICES; s++)
            if (!p->shared || owner[s][0] == '.') snprintf(owner[s], sizeof owner[s], "%d", p->job);
        used |= mig_slice_mask(p->placement);
    }
    for (int i = 0; i < plan->count; i++) {  /* each shared GPU instance once, at its first job */
        const mig_planned *p = &plan->instances[i];
        int first = 1;
        for (int k = 0; k < i; k++) first &= !(plan->instances[k].shared && plan->instances[k].gpu_instance == p->gpu_instance);
        if (!p->shared || !first) continue;
        unsigned long long need = 0;
        fprintf(out, "  shared GPU instance %s (memory slices %d..%d):", g->profiles[p->profile].name,
                p->placement.start, p->placement.start + p->placement.size - 1);
        for (int k = i; k < plan->count; k++) {
            const mig_planned *q = &plan->instances[k];
            if (!q->shared || q->gpu_instance != p->gpu_instance) continue;
            fprintf(out, "%s job %d on %dc (%d SMs)", k > i ? "," : "", q->job, q->ci_slices, q->sm_count);
            need += q->required_bytes;
        }
        fprintf(out, "; compute isolated, memory and its bandwidth shared: %.2f GiB needed together of %.2f GiB\n",
                gib(need), gib(p->memory_bytes));
    }
    fprintf(out, "  memory slice:");
    for (int s = 0; s < g->memory_slices; s++) fprintf(out, " %3d", s);
    fprintf(out, "\n  job:         ");
    for (int s = 0; s < g->memory_slices; s++) fprintf(out, " %3s", owner[s]);
    fprintf(out, "\n  ('#' held by instances outside this plan, '.' free; largest free run: %d slices)\n",
            mig_longest_free_run(used, g->memory_slices));
}
