/* MIG planning (see mig_plan.h): the compact planner, the placement checker, layout strings and
 * the printed plan. Pure: no NVML. The planner is an exact search: at most 7 jobs, 8 memory slices
 * and 8 compute slices make (job, occupied slices, compute used) a state space of ~20k, so it is
 * memoised and always finds the best plan, or proves there is none. */
#define _GNU_SOURCE
#include "runner/suite/plan/mig_plan.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


int mig_fail(char *err, size_t size, const char *fmt, ...) {
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}


static double gib(unsigned long long bytes) { return (double)bytes / 1073741824.0; }

static int popcount(unsigned int mask) {
    int n = 0;
    for (; mask; mask &= mask - 1) n++;
    return n;
}

static int longest_free_run(unsigned int used, int slices) {
    int best = 0, run = 0;
    for (int i = 0; i < slices; i++) {
        run = used >> i & 1u ? 0 : run + 1;
        if (run > best) best = run;
    }
    return best;
}

unsigned long long mig_required_bytes(unsigned long long footprint_bytes) {
    if (footprint_bytes > (1ULL << 50)) return ~0ULL;  /* a petabyte: fits nothing */
    return footprint_bytes + footprint_bytes * MIG_HEADROOM_PERCENT / 100 + MIG_CONTEXT_RESERVE_BYTES;
}

/* Smaller = fewer memory slices, then fewer compute slices, then less memory. */
static int profile_smaller(const mig_profile *a, const mig_profile *b) {
    if (a->memory_slices != b->memory_slices) return a->memory_slices < b->memory_slices;
    if (a->compute_slices != b->compute_slices) return a->compute_slices < b->compute_slices;
    return a->memory_mib < b->memory_mib;
}

int mig_smallest_profile(const mig_gpu *gpu, unsigned long long footprint_bytes) {
    unsigned long long need = mig_required_bytes(footprint_bytes);
    int best = -1;
    for (int i = 0; i < gpu->profile_count; i++) {
        const mig_profile *p = &gpu->profiles[i];
        if (p->plannable && mig_profile_bytes(p) >= need && (best < 0 || profile_smaller(p, &gpu->profiles[best])))
            best = i;
    }
    return best;
}

/* ---- the planner ---------------------------------------------------------------------------- */

typedef struct memo_entry {
    signed char state;            /* 0 unknown, 1 solved */
    signed char cand, place;      /* the best first move from here, -1 if none */
    int cost, run;                /* cost of the rest (INT_MAX: infeasible), free run at the end */
} memo_entry;

typedef struct plan_search {
    const mig_gpu *gpu;
    int n;
    int cand_count[MIG_MAX_INSTANCES];
    int cand[MIG_MAX_INSTANCES][MIG_MAX_PROFILES];  /* profile indices, smallest first */
    memo_entry *memo;
} plan_search;

#define NO_PLAN 1000000
static size_t memo_index(int job, unsigned int used, int compute) {
    return ((size_t)job * (1u << MIG_MAX_SLICES) + used) * (MIG_MAX_SLICES + 1) + (size_t)compute;
}

/* Best placement of jobs job..n-1 given the used slices: lowest total candidate rank (so every
 * job keeps its smallest profile whenever that can be placed), then the longest free run. */
static memo_entry *solve(plan_search *s, int job, unsigned int used, int compute) {
    memo_entry *m = &s->memo[memo_index(job, used, compute)];
    if (m->state) return m;
    m->state = 1, m->cand = m->place = -1, m->cost = NO_PLAN, m->run = -1;
    if (job == s->n) {
        m->cost = 0, m->run = longest_free_run(used, s->gpu->memory_slices);
        return m;
    }
    for (int c = 0; c < s->cand_count[job]; c++) {
        const mig_profile *p = &s->gpu->profiles[s->cand[job][c]];
        if (compute + p->compute_slices > s->gpu->compute_slices) continue;
        for (int k = 0; k < p->placement_count; k++) {
            unsigned int mask = mig_slice_mask(p->placements[k]);
            if (used & mask) continue;
            memo_entry *rest = solve(s, job + 1, used | mask, compute + p->compute_slices);
            if (rest->cost >= NO_PLAN) continue;
            int cost = c + rest->cost;
            if (cost < m->cost || (cost == m->cost && rest->run > m->run))
                m->cost = cost, m->run = rest->run, m->cand = (signed char)c, m->place = (signed char)k;
        }
    }
    return m;
}

/* "1g.10gb, 2g.20gb" -> profile indices; one per job. */
/* A '+' starts a new entry unless what follows is a variant suffix ("1g.10gb+me", "+gfx"):
 * profile names begin with their compute slices, suffixes with a letter. */
static int entry_separator(const char *p) {
    return *p == ',' || (*p == '+' && (p[1] == ' ' || (p[1] >= '0' && p[1] <= '9')));
}

int mig_parse_layout(const mig_gpu *gpu, const char *layout, int job_count, int *profiles,
                     char *err, size_t err_size) {
    char names[1024] = "";
    size_t used = 0;
    for (int i = 0; i < gpu->profile_count && used < sizeof names; i++) {
        int n = snprintf(names + used, sizeof names - used, "%s%s (%.2f GiB)", i ? ", " : "",
                         gpu->profiles[i].name, gib(mig_profile_bytes(&gpu->profiles[i])));
        if (n > 0) used += (size_t)n;
    }
    int count = 0;
    for (const char *p = layout;;) {
        while (*p == ' ' || *p == '\t') p++;
        const char *end = p;
        while (*end && !entry_separator(end)) end++;
        const char *last = end;
        while (last > p && (last[-1] == ' ' || last[-1] == '\t')) last--;
        char name[32];
        if (last == p || (size_t)(last - p) >= sizeof name)
            return mig_fail(err, err_size, "layout \"%s\": entry %d is %s; write profile names joined "
                        "by ',' or '+', e.g. 1g.10gb,2g.20gb; %s has %s", layout, count + 1,
                        last == p ? "empty" : "too long", gpu->name, names);
        memcpy(name, p, (size_t)(last - p));
        name[last - p] = '\0';
        int index = mig_find_profile(gpu, name);
        if (index < 0)
            return mig_fail(err, err_size, "layout \"%s\": %s has no profile \"%s\"; its profiles: %s",
                        layout, gpu->name, name, names);
        if (count < MIG_MAX_INSTANCES) profiles[count] = index;
        count++;
        if (!*end) break;
        p = end + 1;
    }
    if (count != job_count)
        return mig_fail(err, err_size, "layout \"%s\" names %d instance(s) for %d job(s); give one "
                    "profile per job, in the mix's order", layout, count, job_count);
    return 0;
}

int mig_plan_jobs(mig_plan *plan, const mig_gpu *gpu, const mig_job *jobs, int job_count,
                  const char *layout, unsigned int occupied, int compute_used, char *err,
                  size_t err_size) {
    memset(plan, 0, sizeof *plan);
    plan->gpu = *gpu, plan->occupied = occupied, plan->compute_used = compute_used;
    if (gpu->profile_count == 0)
        return mig_fail(err, err_size, "no MIG profile table for %s; plans can be made for %s", gpu->name,
                    mig_known_gpu_names());
    if (job_count <= 0) return mig_fail(err, err_size, "no jobs to place on %s", gpu->name);
    int free_compute = gpu->compute_slices - compute_used;
    int free_memory = gpu->memory_slices - popcount(occupied);
    if (job_count > free_compute || job_count > MIG_MAX_INSTANCES)
        return mig_fail(err, err_size, "%d jobs need a MIG instance each and every instance needs a "
                    "compute slice: %s has %d compute slices, %d of them free, so at most %d jobs",
                    job_count, gpu->name, gpu->compute_slices, free_compute, free_compute);

    plan_search s = {.gpu = gpu, .n = job_count};
    int layout_profiles[MIG_MAX_INSTANCES];
    int use_layout = layout && *layout;
    if (use_layout && mig_parse_layout(gpu, layout, job_count, layout_profiles, err, err_size) != 0)
        return -1;
    int smallest_memory = 0, smallest_compute = 0;
    char choices[512] = "";
    size_t used = 0;
    for (int j = 0; j < job_count; j++) {
        const char *label = jobs[j].label ? jobs[j].label : "";
        unsigned long long need = mig_required_bytes(jobs[j].footprint_bytes);
        if (use_layout) {
            const mig_profile *p = &gpu->profiles[layout_profiles[j]];
            if (mig_profile_bytes(p) < need)
                return mig_fail(err, err_size, "layout entry %d %s (%.2f GiB) is too small for job %d "
                            "\"%s\": footprint %.2f GiB needs %.2f GiB with headroom (%d%% + %llu MiB)",
                            j + 1, p->name, gib(mig_profile_bytes(p)), j, label,
                            gib(jobs[j].footprint_bytes), gib(need), MIG_HEADROOM_PERCENT,
                            MIG_CONTEXT_RESERVE_BYTES >> 20);
            s.cand[j][0] = layout_profiles[j], s.cand_count[j] = 1;
        } else {
            for (int i = 0; i < gpu->profile_count; i++)  /* fitting profiles, smallest first */
                if (gpu->profiles[i].plannable && mig_profile_bytes(&gpu->profiles[i]) >= need) {
                    int k = s.cand_count[j]++;
                    while (k > 0 && profile_smaller(&gpu->profiles[i], &gpu->profiles[s.cand[j][k - 1]]))
                        s.cand[j][k] = s.cand[j][k - 1], k--;
                    s.cand[j][k] = i;
                }
            if (s.cand_count[j] == 0) {
                int largest = 0;
                for (int i = 1; i < gpu->profile_count; i++)
                    if (gpu->profiles[i].memory_mib > gpu->profiles[largest].memory_mib) largest = i;
                return mig_fail(err, err_size, "job %d \"%s\": footprint %.2f GiB needs %.2f GiB with "
                            "headroom (%d%% + %llu MiB); the largest profile on %s is %s with %.2f GiB",
                            j, label, gib(jobs[j].footprint_bytes), gib(need), MIG_HEADROOM_PERCENT,
                            MIG_CONTEXT_RESERVE_BYTES >> 20, gpu->name, gpu->profiles[largest].name,
                            gib(mig_profile_bytes(&gpu->profiles[largest])));
            }
        }
        const mig_profile *first = &gpu->profiles[s.cand[j][0]];
        smallest_memory += first->memory_slices, smallest_compute += first->compute_slices;
        int n = snprintf(choices + used, used < sizeof choices ? sizeof choices - used : 0,
                         "%sjob %d \"%s\" %s", j ? ", " : "", j, label, first->name);
        if (n > 0) used += (size_t)n;
    }
    if (use_layout) {  /* +me profiles and the like: at most max_instances each */
        int per_profile[MIG_MAX_PROFILES] = {0};
        for (int j = 0; j < job_count; j++)
            if (++per_profile[layout_profiles[j]] > gpu->profiles[layout_profiles[j]].max_instances)
                return mig_fail(err, err_size, "layout \"%s\": %s allows at most %d instance(s) of %s",
                            layout, gpu->name, gpu->profiles[layout_profiles[j]].max_instances,
                            gpu->profiles[layout_profiles[j]].name);
    }

    s.memo = calloc((size_t)(MIG_MAX_INSTANCES + 1) << MIG_MAX_SLICES, (MIG_MAX_SLICES + 1) * sizeof *s.memo);
    if (!s.memo) return mig_fail(err, err_size, "out of host memory while planning MIG instances");
    memo_entry *best = solve(&s, 0, occupied, compute_used);
    if (best->cost >= NO_PLAN) {
        char rules[512] = "";
        size_t r = 0;
        for (int i = 0; i < gpu->profile_count; i++) {
            int wanted = 0;
            for (int j = 0; j < job_count; j++) wanted |= s.cand[j][0] == i;
            if (!wanted) continue;
            char starts[64];
            mig_placements_text(&gpu->profiles[i], starts, sizeof starts);
            int n = snprintf(rules + r, r < sizeof rules ? sizeof rules - r : 0, "%s%s at %s",
                             r ? ", " : "", gpu->profiles[i].name, starts);
            if (n > 0) r += (size_t)n;
        }
        free(s.memo);
        int adds_up = smallest_memory <= free_memory && smallest_compute <= free_compute;
        return mig_fail(err, err_size, "%s does not fit %s: %d job(s) need %d memory and %d compute "
                    "slices with their %s profiles (%s), and %d memory and %d compute slices are "
                    "free%s: %s. Allowed placements ({starts}:size): %s",
                    use_layout ? "the layout" : "the mix", gpu->name, job_count, smallest_memory,
                    smallest_compute, use_layout ? "layout's" : "smallest", choices, free_memory,
                    free_compute, occupied ? " (the rest is held by existing instances)" : "",
                    adds_up ? "the slices add up, but NVIDIA's placement rules allow no arrangement"
                            : "too few slices",
                    rules);
    }
    unsigned int taken = occupied;
    int compute = compute_used, profiles[MIG_MAX_INSTANCES];
    mig_placement placements[MIG_MAX_INSTANCES];
    for (int j = 0; j < job_count; j++) {
        memo_entry *m = &s.memo[memo_index(j, taken, compute)];
        const mig_profile *p = &gpu->profiles[s.cand[j][m->cand]];
        mig_planned *out = &plan->instances[plan->count++];
        out->job = j;
        snprintf(out->label, sizeof out->label, "%s", jobs[j].label ? jobs[j].label : "");
        out->profile = profiles[j] = s.cand[j][m->cand];
        out->placement = placements[j] = p->placements[m->place];
        out->existing = -1;
        out->footprint_bytes = jobs[j].footprint_bytes;
        out->required_bytes = mig_required_bytes(jobs[j].footprint_bytes);
        out->sm_count = p->sm_count;
        out->sm_fraction = gpu->total_sms > 0 ? (double)p->sm_count / gpu->total_sms : 0.0;
        out->memory_bytes = mig_profile_bytes(p);
        taken |= mig_slice_mask(out->placement), compute += p->compute_slices;
    }
    free(s.memo);
    return mig_check_placements(gpu, profiles, placements, job_count, occupied, compute_used, err,
                                err_size);
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
        fprintf(out, "  %-4d %-24.24s %6.2f GiB %6.2f GiB  %-11s %4d %5.1f%% %6.2f GiB  %-8s %s\n",
                p->job, p->label, gib(p->footprint_bytes), gib(p->required_bytes),
                p->profile >= 0 ? g->profiles[p->profile].name : "(unknown)", p->sm_count, 100.0 * p->sm_fraction,
                gib(p->memory_bytes), slices, p->existing >= 0 ? "existing" : "new");
        for (int s = p->placement.start; s < p->placement.start + p->placement.size && s < MIG_MAX_SLICES; s++)
            snprintf(owner[s], sizeof owner[s], "%d", p->job);
        used |= mig_slice_mask(p->placement);
    }
    fprintf(out, "  memory slice:");
    for (int s = 0; s < g->memory_slices; s++) fprintf(out, " %3d", s);
    fprintf(out, "\n  job:         ");
    for (int s = 0; s < g->memory_slices; s++) fprintf(out, " %3s", owner[s]);
    fprintf(out, "\n  ('#' held by instances outside this plan, '.' free; largest free run: %d slices)\n",
            longest_free_run(used, g->memory_slices));
}

int mig_plan_admin_command(const mig_plan *plan, unsigned int gpu_index, char *out, size_t size) {
    int order[MIG_MAX_INSTANCES], n = 0;
    for (int i = 0; i < plan->count; i++) {  /* largest first: nvidia-smi places in that order */
        if (plan->instances[i].existing >= 0) continue;
        int k = n++;
        while (k > 0 && plan->gpu.profiles[plan->instances[order[k - 1]].profile].memory_slices <
                            plan->gpu.profiles[plan->instances[i].profile].memory_slices)
            order[k] = order[k - 1], k--;
        order[k] = i;
    }
    char ids[64] = "";
    size_t used = 0;
    for (int k = 0; k < n && used < sizeof ids; k++) {
        int w = snprintf(ids + used, sizeof ids - used, "%s%u", k ? "," : "",
                         plan->gpu.profiles[plan->instances[order[k]].profile].id);
        if (w > 0) used += (size_t)w;
    }
    return snprintf(out, size, "nvidia-smi mig -i %u -cgi %s -C", gpu_index, ids);
}

int mig_check_placements(const mig_gpu *gpu, const int *profiles, const mig_placement *placements,
                         int count, unsigned int occupied, int compute_used, char *err,
                         size_t err_size) {
    int owner[MIG_MAX_SLICES], per_profile[MIG_MAX_PROFILES] = {0}, compute = compute_used;
    for (int i = 0; i < MIG_MAX_SLICES; i++) owner[i] = occupied >> i & 1u ? -2 : -1;
    for (int i = 0; i < count; i++) {
        if (profiles[i] < 0 || profiles[i] >= gpu->profile_count)
            return mig_fail(err, err_size, "instance %d: no such profile on %s", i, gpu->name);
        const mig_profile *p = &gpu->profiles[profiles[i]];
        mig_placement pl = placements[i];
        int allowed = 0;
        for (int k = 0; k < p->placement_count; k++)
            allowed |= p->placements[k].start == pl.start && p->placements[k].size == pl.size;
        if (!allowed) {
            char starts[64];
            mig_placements_text(p, starts, sizeof starts);
            return mig_fail(err, err_size, "instance %d (%s) at memory slices %d..%d breaks NVIDIA's "
                        "placement rules for %s: %s may start only at %s", i, p->name, pl.start,
                        pl.start + pl.size - 1, gpu->name, p->name, starts);
        }
        for (int s = pl.start; s < pl.start + pl.size; s++) {
            if (owner[s] == -1) {
                owner[s] = i;
                continue;
            }
            if (owner[s] == -2)
                return mig_fail(err, err_size, "instance %d (%s) at memory slices %d..%d overlaps slice "
                            "%d, held by an instance that already exists", i, p->name, pl.start,
                            pl.start + pl.size - 1, s);
            return mig_fail(err, err_size, "instance %d (%s) at memory slices %d..%d overlaps instance "
                        "%d (%s) on slice %d", i, p->name, pl.start, pl.start + pl.size - 1,
                        owner[s], gpu->profiles[profiles[owner[s]]].name, s);
        }
        compute += p->compute_slices;
        if (compute > gpu->compute_slices)
            return mig_fail(err, err_size, "instances up to %d (%s) need %d compute slices; %s has %d",
                        i, p->name, compute, gpu->name, gpu->compute_slices);
        if (++per_profile[profiles[i]] > p->max_instances)
            return mig_fail(err, err_size, "%d instances of %s; %s allows %d", per_profile[profiles[i]],
                        p->name, gpu->name, p->max_instances);
    }
    return 0;
}

int mig_plan_layout_for(const mig_plan *plan, const int *jobs, int count, char *out, size_t size) {
    int used = 0;
    if (size) out[0] = '\0';
    for (int k = 0; k < count; k++)
        for (int i = 0; i < plan->count; i++) {
            if (plan->instances[i].job != (jobs ? jobs[k] : k)) continue;
            int n = snprintf(out + used, (size_t)used < size ? size - (size_t)used : 0, "%s%s", k ? "," : "",
                             plan->gpu.profiles[plan->instances[i].profile].name);
            if (n > 0) used += n;
        }
    return used;
}

int mig_plan_layout_text(const mig_plan *plan, char *out, size_t size) {
    return mig_plan_layout_for(plan, NULL, plan->count, out, size);
}
