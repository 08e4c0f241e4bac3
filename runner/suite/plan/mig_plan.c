/* MIG planning (see mig_plan.h): the compact planner, the placement checker, layout strings and
 * the printed plan. Pure: no NVML. The planner is an exact search: at most 7 jobs, 8 memory slices
 * and 8 compute slices make (job, occupied slices, compute used) a state space of ~20k, so it is
 * memoised and always finds the best plan, or proves there is none. */
#define _GNU_SOURCE
#include "runner/suite/plan/mig_plan.h"
#include "base/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>



static double gib(unsigned long long bytes) { return (double)bytes / 1073741824.0; }

static int popcount(unsigned int mask) {
    int n = 0;
    for (; mask; mask &= mask - 1) n++;
    return n;
}

int mig_longest_free_run(unsigned int used, int slices) {
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
        m->cost = 0, m->run = mig_longest_free_run(used, s->gpu->memory_slices);
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

/* A '+' starts a new entry unless what follows is a variant suffix ("1g.10gb+me", "+gfx"):
 * profile names begin with their compute slices, suffixes with a letter; inside a shared GPU
 * instance ("7g.40gb:3c+4c") a '+' before a compute instance ("4c") continues the entry. */
static int compute_instance_next(const char *p) {
    while (*p == ' ' || *p == '\t') p++;
    if (!(*p >= '0' && *p <= '9')) return 0;
    while (*p >= '0' && *p <= '9') p++;
    return *p == 'c' && (!p[1] || p[1] == '+' || p[1] == ',' || p[1] == ' ' || p[1] == '\t');
}

static int entry_separator(const char *p, int in_group) {
    return *p == ',' || (*p == '+' && (p[1] == ' ' || (p[1] >= '0' && p[1] <= '9')) &&
                         !(in_group && compute_instance_next(p + 1)));
}

static void profile_names(const mig_gpu *gpu, char *names, size_t size) {
    size_t used = 0;
    names[0] = '\0';
    for (int i = 0; i < gpu->profile_count && used < size; i++) {
        int n = snprintf(names + used, size - used, "%s%s (%.2f GiB)", i ? ", " : "",
                         gpu->profiles[i].name, gib(mig_profile_bytes(&gpu->profiles[i])));
        if (n > 0) used += (size_t)n;
    }
}

/* The compute instances a GPU instance of `profile` offers below its own size: "1c, 2c, 3c". */
static void compute_instance_names(const mig_gpu *gpu, int profile, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (int c = 1; c < gpu->profiles[profile].compute_slices && used < size; c++) {
        if (!mig_ci_sms(gpu, profile, c)) continue;
        int n = snprintf(out + used, size - used, "%s%dc", used ? ", " : "", c);
        if (n > 0) used += (size_t)n;
    }
    if (!out[0]) snprintf(out, size, "none known");
}

/* ":3c+4c" after a profile: the compute instances, each a job's slot. */
static int parse_compute_instances(const mig_gpu *gpu, const char *layout, const char *p, const char *end,
                                   int profile, int gpu_instance, mig_slot *slots, int *count,
                                   char *err, size_t err_size) {
    const mig_profile *gi = &gpu->profiles[profile];
    char offered[64];
    compute_instance_names(gpu, profile, offered, sizeof offered);
    int total = 0;
    for (int more = 1; more;) {  /* one compute instance after the ':' and after every '+' */
        while (p < end && (*p == ' ' || *p == '\t')) p++;
        char *after;
        long slices = strtol(p, &after, 10);
        while (after < end && (*after == ' ' || *after == '\t')) after++;
        int ok = after > p && after < end && *after == 'c' && slices >= 1;
        const char *next = ok ? after + 1 : p;
        while (next < end && (*next == ' ' || *next == '\t')) next++;
        ok = ok && (next == end || *next == '+');
        if (!ok || slices >= gi->compute_slices || !mig_ci_sms(gpu, profile, (int)slices))
            return error_set(err, err_size, "layout \"%s\": %s %s; expected PROFILE:Nc+Nc..., one compute "
                            "instance per job, each smaller than the GPU instance (%s offers %s, nvidia-smi's "
                            "Nc.%s; compute-instance profiles from NVIDIA's MIG User Guide)", layout, gi->name,
                            !ok ? "has a malformed compute-instance list" : "has no such compute instance",
                            gi->name, offered, gi->name);
        total += (int)slices;
        if (total > gi->compute_slices)  /* also keeps each size within g / c instances */
            return error_set(err, err_size, "layout \"%s\": the compute instances of %s take %d compute slices; "
                            "it has %d (expected slices that add up to at most %d)", layout, gi->name, total,
                            gi->compute_slices, gi->compute_slices);
        if (*count < MIG_MAX_INSTANCES) slots[*count] = (mig_slot){profile, (int)slices, gpu_instance};
        (*count)++;
        more = next < end;
        p = more ? next + 1 : end;
    }
    return 0;
}

int mig_parse_slots(const mig_gpu *gpu, const char *layout, int job_count, mig_slot *slots, char *err,
                    size_t err_size) {
    char names[1024];
    profile_names(gpu, names, sizeof names);
    int count = 0, gpu_instance = 0;
    for (const char *p = layout;; gpu_instance++) {
        while (*p == ' ' || *p == '\t') p++;
        const char *end = p, *colon = NULL;
        while (*end && !entry_separator(end, colon != NULL)) {
            if (*end == ':' && !colon) colon = end;
            end++;
        }
        const char *last = colon ? colon : end;
        while (last > p && (last[-1] == ' ' || last[-1] == '\t')) last--;
        char name[32];
        if (last == p || (size_t)(last - p) >= sizeof name)
            return error_set(err, err_size, "layout \"%s\": entry %d is %s; write profile names joined "
                        "by ',' or '+', e.g. 1g.10gb,2g.20gb, or a shared GPU instance's compute instances "
                        "as 7g.40gb:3c+4c; %s has %s", layout, count + 1,
                        last == p ? "empty" : "too long", gpu->name, names);
        memcpy(name, p, (size_t)(last - p));
        name[last - p] = '\0';
        int index = mig_find_profile(gpu, name);
        if (index < 0)
            return error_set(err, err_size, "layout \"%s\": %s has no profile \"%s\"; its profiles: %s",
                        layout, gpu->name, name, names);
        if (colon) {
            if (parse_compute_instances(gpu, layout, colon + 1, end, index, gpu_instance, slots, &count, err,
                                        err_size))
                return -1;
        } else {
            if (count < MIG_MAX_INSTANCES) slots[count] = (mig_slot){index, 0, gpu_instance};
            count++;
        }
        if (!*end) break;
        p = end + 1;
    }
    if (count != job_count)
        return error_set(err, err_size, "layout \"%s\" names %d instance(s) for %d job(s); give one "
                    "profile (or compute instance) per job, in the mix's order", layout, count, job_count);
    return 0;
}

int mig_parse_layout(const mig_gpu *gpu, const char *layout, int job_count, int *profiles,
                     char *err, size_t err_size) {
    mig_slot slots[MIG_MAX_INSTANCES];
    if (mig_parse_slots(gpu, layout, job_count, slots, err, err_size)) return -1;
    for (int j = 0; j < job_count; j++) profiles[j] = slots[j].profile;
    return 0;
}

int mig_plan_jobs(mig_plan *plan, const mig_gpu *gpu, const mig_job *jobs, int job_count,
                  const char *layout, unsigned int occupied, int compute_used, char *err,
                  size_t err_size) {
    memset(plan, 0, sizeof *plan);
    plan->gpu = *gpu, plan->occupied = occupied, plan->compute_used = compute_used;
    if (gpu->profile_count == 0)
        return error_set(err, err_size, "no MIG profile table for %s; plans can be made for %s", gpu->name,
                    mig_known_gpu_names());
    if (job_count <= 0) return error_set(err, err_size, "no jobs to place on %s", gpu->name);
    int free_compute = gpu->compute_slices - compute_used;
    int free_memory = gpu->memory_slices - popcount(occupied);
    if (job_count > free_compute || job_count > MIG_MAX_INSTANCES)
        return error_set(err, err_size, "%d jobs need a MIG instance each and every instance needs a "
                    "compute slice: %s has %d compute slices, %d of them free, so at most %d jobs",
                    job_count, gpu->name, gpu->compute_slices, free_compute, free_compute);

    /* The units placed: one GPU instance each; without a layout, one per job. */
    plan_search s = {.gpu = gpu, .n = job_count};
    mig_slot slots[MIG_MAX_INSTANCES];
    int use_layout = layout && *layout;
    if (use_layout && mig_parse_slots(gpu, layout, job_count, slots, err, err_size) != 0) return -1;
    if (use_layout) s.n = slots[job_count - 1].gpu_instance + 1;
    else for (int j = 0; j < job_count; j++) slots[j] = (mig_slot){-1, 0, j};
    int smallest_memory = 0, smallest_compute = 0;
    char choices[512] = "";
    size_t used = 0;
    for (int u = 0; u < s.n; u++) {
        int first = -1, sharing = 0;
        unsigned long long need = 0, footprints = 0;
        for (int j = 0; j < job_count; j++)
            if (slots[j].gpu_instance == u) {
                if (first < 0) first = j;
                sharing++;
                need += mig_required_bytes(jobs[j].footprint_bytes), footprints += jobs[j].footprint_bytes;
            }
        const char *label = jobs[first].label ? jobs[first].label : "";
        if (use_layout) {
            const mig_profile *p = &gpu->profiles[slots[first].profile];
            if (mig_profile_bytes(p) < need && slots[first].ci_slices)
                return error_set(err, err_size, "shared GPU instance %s (%.2f GiB) is too small for jobs %d..%d: "
                            "their footprints %.2f GiB need %.2f GiB together with each one's headroom (%d%% + "
                            "%llu MiB); its compute instances share its memory", p->name,
                            gib(mig_profile_bytes(p)), first, first + sharing - 1, gib(footprints), gib(need),
                            MIG_HEADROOM_PERCENT, MIG_CONTEXT_RESERVE_BYTES >> 20);
            if (mig_profile_bytes(p) < need)
                return error_set(err, err_size, "layout entry %d %s (%.2f GiB) is too small for job %d "
                            "\"%s\": footprint %.2f GiB needs %.2f GiB with headroom (%d%% + %llu MiB)",
                            first + 1, p->name, gib(mig_profile_bytes(p)), first, label,
                            gib(jobs[first].footprint_bytes), gib(need), MIG_HEADROOM_PERCENT,
                            MIG_CONTEXT_RESERVE_BYTES >> 20);
            s.cand[u][0] = slots[first].profile, s.cand_count[u] = 1;
        } else {
            for (int i = 0; i < gpu->profile_count; i++)  /* fitting profiles, smallest first */
                if (gpu->profiles[i].plannable && mig_profile_bytes(&gpu->profiles[i]) >= need) {
                    int k = s.cand_count[u]++;
                    while (k > 0 && profile_smaller(&gpu->profiles[i], &gpu->profiles[s.cand[u][k - 1]]))
                        s.cand[u][k] = s.cand[u][k - 1], k--;
                    s.cand[u][k] = i;
                }
            if (s.cand_count[u] == 0) {
                int largest = 0;
                for (int i = 1; i < gpu->profile_count; i++)
                    if (gpu->profiles[i].memory_mib > gpu->profiles[largest].memory_mib) largest = i;
                return error_set(err, err_size, "job %d \"%s\": footprint %.2f GiB needs %.2f GiB with "
                            "headroom (%d%% + %llu MiB); the largest profile on %s is %s with %.2f GiB",
                            first, label, gib(jobs[first].footprint_bytes), gib(need), MIG_HEADROOM_PERCENT,
                            MIG_CONTEXT_RESERVE_BYTES >> 20, gpu->name, gpu->profiles[largest].name,
                            gib(mig_profile_bytes(&gpu->profiles[largest])));
            }
        }
        const mig_profile *p0 = &gpu->profiles[s.cand[u][0]];
        smallest_memory += p0->memory_slices, smallest_compute += p0->compute_slices;
        int n = snprintf(choices + used, used < sizeof choices ? sizeof choices - used : 0,
                         "%sjob %d \"%s\"%s %s", u ? ", " : "", first, label, sharing > 1 ? " and the next" : "",
                         p0->name);
        if (n > 0) used += (size_t)n;
    }
    if (use_layout) {  /* +me profiles and the like: at most max_instances each */
        int per_profile[MIG_MAX_PROFILES] = {0};
        for (int u = 0; u < s.n; u++)
            if (++per_profile[s.cand[u][0]] > gpu->profiles[s.cand[u][0]].max_instances)
                return error_set(err, err_size, "layout \"%s\": %s allows at most %d instance(s) of %s",
                            layout, gpu->name, gpu->profiles[s.cand[u][0]].max_instances,
                            gpu->profiles[s.cand[u][0]].name);
    }

    s.memo = calloc((size_t)(MIG_MAX_INSTANCES + 1) << MIG_MAX_SLICES, (MIG_MAX_SLICES + 1) * sizeof *s.memo);
    if (!s.memo) return error_set(err, err_size, "out of host memory while planning MIG instances");
    memo_entry *best = solve(&s, 0, occupied, compute_used);
    if (best->cost >= NO_PLAN) {
        char rules[512] = "";
        size_t r = 0;
        for (int i = 0; i < gpu->profile_count; i++) {
            int wanted = 0;
            for (int u = 0; u < s.n; u++) wanted |= s.cand[u][0] == i;
            if (!wanted) continue;
            char starts[64];
            mig_placements_text(&gpu->profiles[i], starts, sizeof starts);
            int n = snprintf(rules + r, r < sizeof rules ? sizeof rules - r : 0, "%s%s at %s",
                             r ? ", " : "", gpu->profiles[i].name, starts);
            if (n > 0) r += (size_t)n;
        }
        free(s.memo);
        int adds_up = smallest_memory <= free_memory && smallest_compute <= free_compute;
        return error_set(err, err_size, "%s does not fit %s: %d GPU instance(s) need %d memory and %d compute "
                    "slices with their %s profiles (%s), and %d memory and %d compute slices are "
                    "free%s: %s. Allowed placements ({starts}:size): %s",
                    use_layout ? "the layout" : "the mix", gpu->name, s.n, smallest_memory,
                    smallest_compute, use_layout ? "layout's" : "smallest", choices, free_memory,
                    free_compute, occupied ? " (the rest is held by existing instances)" : "",
                    adds_up ? "the slices add up, but NVIDIA's placement rules allow no arrangement"
                            : "too few slices",
                    rules);
    }
    unsigned int taken = occupied;
    int compute = compute_used, profiles[MIG_MAX_INSTANCES];
    mig_placement placements[MIG_MAX_INSTANCES];
    for (int u = 0; u < s.n; u++) {
        memo_entry *m = &s.memo[memo_index(u, taken, compute)];
        const mig_profile *p = &gpu->profiles[s.cand[u][m->cand]];
        profiles[u] = s.cand[u][m->cand], placements[u] = p->placements[m->place];
        taken |= mig_slice_mask(placements[u]), compute += p->compute_slices;
    }
    free(s.memo);
    for (int j = 0; j < job_count; j++) {
        int u = slots[j].gpu_instance;
        const mig_profile *p = &gpu->profiles[profiles[u]];
        mig_planned *out = &plan->instances[plan->count++];
        out->job = j;
        snprintf(out->label, sizeof out->label, "%s", jobs[j].label ? jobs[j].label : "");
        out->profile = profiles[u];
        out->placement = placements[u];
        out->existing = -1;
        out->gpu_instance = u;
        out->shared = slots[j].ci_slices != 0;
        out->ci_slices = out->shared ? slots[j].ci_slices : p->compute_slices;
        out->footprint_bytes = jobs[j].footprint_bytes;
        out->required_bytes = mig_required_bytes(jobs[j].footprint_bytes);
        out->sm_count = mig_ci_sms(gpu, profiles[u], out->ci_slices);
        out->sm_fraction = gpu->total_sms > 0 ? (double)out->sm_count / gpu->total_sms : 0.0;
        out->memory_bytes = mig_profile_bytes(p);
    }
    return mig_check_placements(gpu, profiles, placements, s.n, occupied, compute_used, err, err_size);
}


int mig_plan_admin_command(const mig_plan *plan, unsigned int gpu_index, char *out, size_t size) {
    int order[MIG_MAX_INSTANCES], n = 0, shared = 0;
    for (int i = 0; i < plan->count; i++) {  /* largest first: nvidia-smi places in that order */
        const mig_planned *p = &plan->instances[i];
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= plan->instances[order[k]].gpu_instance == p->gpu_instance;
        if (p->existing >= 0 || seen) continue;
        shared |= p->shared;
        int k = n++;
        while (k > 0 && plan->gpu.profiles[plan->instances[order[k - 1]].profile].memory_slices <
                            plan->gpu.profiles[p->profile].memory_slices)
            order[k] = order[k - 1], k--;
        order[k] = i;
    }
    char ids[64] = "", cis[256] = "";
    size_t used = 0, ci_used = 0;
    for (int k = 0; k < n && used < sizeof ids; k++) {
        const mig_planned *p = &plan->instances[order[k]];
        int w = snprintf(ids + used, sizeof ids - used, "%s%u", k ? "," : "", plan->gpu.profiles[p->profile].id);
        if (w > 0) used += (size_t)w;
        if (!p->shared) continue;
        /* a shared GPU instance gets its compute instances by name, once its id is known */
        w = snprintf(cis + ci_used, ci_used < sizeof cis ? sizeof cis - ci_used : 0,
                     " && sudo nvidia-smi mig -i %u -gi <id of the %s> -cci ", gpu_index,
                     plan->gpu.profiles[p->profile].name);
        if (w > 0) ci_used += (size_t)w;
        for (int i = 0, first = 1; i < plan->count; i++) {
            const mig_planned *q = &plan->instances[i];
            if (q->gpu_instance != p->gpu_instance) continue;
            char name[48];
            mig_ci_name(&plan->gpu, q->profile, q->ci_slices, name, sizeof name);
            w = snprintf(cis + ci_used, ci_used < sizeof cis ? sizeof cis - ci_used : 0, "%s%s", first ? "" : ",", name);
            if (w > 0) ci_used += (size_t)w;
            first = 0;
        }
    }
    if (!shared) return snprintf(out, size, "nvidia-smi mig -i %u -cgi %s -C", gpu_index, ids);
    /* -C would give every GPU instance one compute instance spanning it: the shared ones get theirs by -cci */
    return snprintf(out, size, "nvidia-smi mig -i %u -cgi %s%s", gpu_index, ids, cis);
}

int mig_check_placements(const mig_gpu *gpu, const int *profiles, const mig_placement *placements,
                         int count, unsigned int occupied, int compute_used, char *err,
                         size_t err_size) {
    int owner[MIG_MAX_SLICES], per_profile[MIG_MAX_PROFILES] = {0}, compute = compute_used;
    for (int i = 0; i < MIG_MAX_SLICES; i++) owner[i] = occupied >> i & 1u ? -2 : -1;
    for (int i = 0; i < count; i++) {
        if (profiles[i] < 0 || profiles[i] >= gpu->profile_count)
            return error_set(err, err_size, "instance %d: no such profile on %s", i, gpu->name);
        const mig_profile *p = &gpu->profiles[profiles[i]];
        mig_placement pl = placements[i];
        int allowed = 0;
        for (int k = 0; k < p->placement_count; k++)
            allowed |= p->placements[k].start == pl.start && p->placements[k].size == pl.size;
        if (!allowed) {
            char starts[64];
            mig_placements_text(p, starts, sizeof starts);
            return error_set(err, err_size, "instance %d (%s) at memory slices %d..%d breaks NVIDIA's "
                        "placement rules for %s: %s may start only at %s", i, p->name, pl.start,
                        pl.start + pl.size - 1, gpu->name, p->name, starts);
        }
        for (int s = pl.start; s < pl.start + pl.size; s++) {
            if (owner[s] == -1) {
                owner[s] = i;
                continue;
            }
            if (owner[s] == -2)
                return error_set(err, err_size, "instance %d (%s) at memory slices %d..%d overlaps slice "
                            "%d, held by an instance that already exists", i, p->name, pl.start,
                            pl.start + pl.size - 1, s);
            return error_set(err, err_size, "instance %d (%s) at memory slices %d..%d overlaps instance "
                        "%d (%s) on slice %d", i, p->name, pl.start, pl.start + pl.size - 1,
                        owner[s], gpu->profiles[profiles[owner[s]]].name, s);
        }
        compute += p->compute_slices;
        if (compute > gpu->compute_slices)
            return error_set(err, err_size, "instances up to %d (%s) need %d compute slices; %s has %d",
                        i, p->name, compute, gpu->name, gpu->compute_slices);
        if (++per_profile[profiles[i]] > p->max_instances)
            return error_set(err, err_size, "%d instances of %s; %s allows %d", per_profile[profiles[i]],
                        p->name, gpu->name, p->max_instances);
    }
    return 0;
}

int mig_plan_layout_for(const mig_plan *plan, const int *jobs, int count, char *out, size_t size) {
    int used = 0, open_group = -1;  /* the shared GPU instance whose compute instances are being written */
    if (size) out[0] = '\0';
    for (int k = 0; k < count; k++)
        for (int i = 0; i < plan->count; i++) {
            const mig_planned *p = &plan->instances[i];
            if (p->job != (jobs ? jobs[k] : k)) continue;
            int n;
            if (p->shared && p->gpu_instance == open_group)
                n = snprintf(out + used, (size_t)used < size ? size - (size_t)used : 0, "+%dc", p->ci_slices);
            else if (p->shared)
                n = snprintf(out + used, (size_t)used < size ? size - (size_t)used : 0, "%s%s:%dc", k ? "," : "",
                             plan->gpu.profiles[p->profile].name, p->ci_slices);
            else
                n = snprintf(out + used, (size_t)used < size ? size - (size_t)used : 0, "%s%s", k ? "," : "",
                             plan->gpu.profiles[p->profile].name);
            open_group = p->shared ? p->gpu_instance : -1;
            if (n > 0) used += n;
        }
    return used;
}

int mig_plan_layout_text(const mig_plan *plan, char *out, size_t size) {
    return mig_plan_layout_for(plan, NULL, plan->count, out, size);
}

int mig_layout_of_some_gpu(const char *layout, int job_count, char *err, size_t err_size) {
    int profiles[MIG_MAX_INSTANCES], i = 0;
    char why[1024] = "";
    for (const mig_gpu *known; (known = mig_known_gpu_at(i)) != NULL; i++) {
        char mine[1024];
        if (mig_parse_layout(known, layout, job_count, profiles, mine, sizeof mine) == 0) return 0;
        if (!why[0]) snprintf(why, sizeof why, "%s: %s", known->name, mine);
    }
    snprintf(err, err_size, "--mig-layout %.200s: not a layout of any GPU this suite knows (%s)", layout, why);
    return -1;
}
