/* MIG planning, placement checking, and the NVML session that discovers, creates and destroys
 * instances (see mig.h). The planner is an exact search: at most 7 jobs, 8 memory slices and
 * 8 compute slices make (job, occupied slices, compute used) a state space of ~20k, so it is
 * memoised and always finds the best plan, or proves there is none. */
#define _GNU_SOURCE
#include "runner/suite/mig.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t size, const char *fmt, ...) {
    if (err && size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static double gib(unsigned long long bytes) { return (double)bytes / 1073741824.0; }
static unsigned long long profile_bytes(const mig_profile *p) { return p->memory_mib << 20; }
static unsigned int slice_mask(mig_placement p) { return ((1u << p.size) - 1u) << p.start; }

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
        if (p->plannable && profile_bytes(p) >= need && (best < 0 || profile_smaller(p, &gpu->profiles[best])))
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
            unsigned int mask = slice_mask(p->placements[k]);
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
static int parse_layout(const mig_gpu *gpu, const char *layout, int job_count, int *profiles,
                        char *err, size_t err_size) {
    char names[1024] = "";
    size_t used = 0;
    for (int i = 0; i < gpu->profile_count && used < sizeof names; i++) {
        int n = snprintf(names + used, sizeof names - used, "%s%s (%.2f GiB)", i ? ", " : "",
                         gpu->profiles[i].name, gib(profile_bytes(&gpu->profiles[i])));
        if (n > 0) used += (size_t)n;
    }
    int count = 0;
    for (const char *p = layout;;) {
        while (*p == ' ' || *p == '\t') p++;
        const char *end = p;
        while (*end && *end != ',') end++;
        const char *last = end;
        while (last > p && (last[-1] == ' ' || last[-1] == '\t')) last--;
        char name[32];
        if (last == p || (size_t)(last - p) >= sizeof name)
            return fail(err, err_size, "layout \"%s\": entry %d is %s; write profile names joined "
                        "by ',', e.g. 1g.10gb,2g.20gb; %s has %s", layout, count + 1,
                        last == p ? "empty" : "too long", gpu->name, names);
        memcpy(name, p, (size_t)(last - p));
        name[last - p] = '\0';
        int index = mig_find_profile(gpu, name);
        if (index < 0)
            return fail(err, err_size, "layout \"%s\": %s has no profile \"%s\"; its profiles: %s",
                        layout, gpu->name, name, names);
        if (count < MIX_MAX_JOBS) profiles[count] = index;
        count++;
        if (!*end) break;
        p = end + 1;
    }
    if (count != job_count)
        return fail(err, err_size, "layout \"%s\" names %d instance(s) for %d job(s); give one "
                    "profile per job, in the mix's order", layout, count, job_count);
    return 0;
}

int mig_plan_jobs(mig_plan *plan, const mig_gpu *gpu, const mig_job *jobs, int job_count,
                  const char *layout, unsigned int occupied, int compute_used, char *err,
                  size_t err_size) {
    memset(plan, 0, sizeof *plan);
    plan->gpu = *gpu, plan->occupied = occupied, plan->compute_used = compute_used;
    if (gpu->profile_count == 0)
        return fail(err, err_size, "no MIG profile table for %s; plans can be made for %s", gpu->name,
                    mig_known_gpu_names());
    if (job_count <= 0) return fail(err, err_size, "no jobs to place on %s", gpu->name);
    int free_compute = gpu->compute_slices - compute_used;
    int free_memory = gpu->memory_slices - popcount(occupied);
    if (job_count > free_compute || job_count > MIG_MAX_INSTANCES)
        return fail(err, err_size, "%d jobs need a MIG instance each and every instance needs a "
                    "compute slice: %s has %d compute slices, %d of them free, so at most %d jobs",
                    job_count, gpu->name, gpu->compute_slices, free_compute, free_compute);

    plan_search s = {.gpu = gpu, .n = job_count};
    int layout_profiles[MIX_MAX_JOBS];
    int use_layout = layout && *layout;
    if (use_layout && parse_layout(gpu, layout, job_count, layout_profiles, err, err_size) != 0)
        return -1;
    int smallest_memory = 0, smallest_compute = 0;
    char choices[512] = "";
    size_t used = 0;
    for (int j = 0; j < job_count; j++) {
        const char *label = jobs[j].label ? jobs[j].label : "";
        unsigned long long need = mig_required_bytes(jobs[j].footprint_bytes);
        if (use_layout) {
            const mig_profile *p = &gpu->profiles[layout_profiles[j]];
            if (profile_bytes(p) < need)
                return fail(err, err_size, "layout entry %d %s (%.2f GiB) is too small for job %d "
                            "\"%s\": footprint %.2f GiB needs %.2f GiB with headroom (%d%% + %llu MiB)",
                            j + 1, p->name, gib(profile_bytes(p)), j, label,
                            gib(jobs[j].footprint_bytes), gib(need), MIG_HEADROOM_PERCENT,
                            MIG_CONTEXT_RESERVE_BYTES >> 20);
            s.cand[j][0] = layout_profiles[j], s.cand_count[j] = 1;
        } else {
            for (int i = 0; i < gpu->profile_count; i++)  /* fitting profiles, smallest first */
                if (gpu->profiles[i].plannable && profile_bytes(&gpu->profiles[i]) >= need) {
                    int k = s.cand_count[j]++;
                    while (k > 0 && profile_smaller(&gpu->profiles[i], &gpu->profiles[s.cand[j][k - 1]]))
                        s.cand[j][k] = s.cand[j][k - 1], k--;
                    s.cand[j][k] = i;
                }
            if (s.cand_count[j] == 0) {
                int largest = 0;
                for (int i = 1; i < gpu->profile_count; i++)
                    if (gpu->profiles[i].memory_mib > gpu->profiles[largest].memory_mib) largest = i;
                return fail(err, err_size, "job %d \"%s\": footprint %.2f GiB needs %.2f GiB with "
                            "headroom (%d%% + %llu MiB); the largest profile on %s is %s with %.2f GiB",
                            j, label, gib(jobs[j].footprint_bytes), gib(need), MIG_HEADROOM_PERCENT,
                            MIG_CONTEXT_RESERVE_BYTES >> 20, gpu->name, gpu->profiles[largest].name,
                            gib(profile_bytes(&gpu->profiles[largest])));
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
                return fail(err, err_size, "layout \"%s\": %s allows at most %d instance(s) of %s",
                            layout, gpu->name, gpu->profiles[layout_profiles[j]].max_instances,
                            gpu->profiles[layout_profiles[j]].name);
    }

    s.memo = calloc((size_t)(MIG_MAX_INSTANCES + 1) << MIG_MAX_SLICES, (MIG_MAX_SLICES + 1) * sizeof *s.memo);
    if (!s.memo) return fail(err, err_size, "out of host memory while planning MIG instances");
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
        return fail(err, err_size, "%s does not fit %s: %d job(s) need %d memory and %d compute "
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
        out->memory_bytes = profile_bytes(p);
        taken |= slice_mask(out->placement), compute += p->compute_slices;
    }
    free(s.memo);
    return mig_check_placements(gpu, profiles, placements, job_count, occupied, compute_used, err,
                                err_size);
}

void mig_plan_print(const mig_plan *plan, FILE *out) {
    const mig_gpu *g = &plan->gpu;
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
        used |= slice_mask(p->placement);
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

/* ---- the session: NVML discovery, creation, destruction ------------------------------------- */

int mig_require_enabled(const mig_session *s, char *err, size_t err_size) {
    if (!s->mig_supported)
        return fail(err, err_size, "GPU %u (%s) does not support MIG; MIG needs an A100, A30, "
                    "H100, H200 or a newer data-centre GPU. Use --mode mps or naive on this GPU.",
                    s->gpu_index, s->device_name);
    if (s->mig_current != NVML_DEVICE_MIG_ENABLE)
        return fail(err, err_size, "MIG mode is off on GPU %u (%s)%s. MIG mode is the "
                    "administrator's setting and run_suite never changes it. To enable it, stop "
                    "every process on that GPU (nvidia-persistenced and DCGM clients included if "
                    "they hold it), then run: sudo nvidia-smi -i %u -mig 1 ; if the driver asks for "
                    "it, reset the GPU (sudo nvidia-smi -i %u -r) or reboot. Then run again.",
                    s->gpu_index, s->device_name,
                    s->mig_pending == NVML_DEVICE_MIG_ENABLE
                        ? " (enabling is pending: the GPU still needs a reset or a reboot)" : "",
                    s->gpu_index, s->gpu_index);
    return 0;
}

int mig_open(mig_session *s, nvml *nv, unsigned int gpu_index, char *err, size_t err_size) {
    memset(s, 0, sizeof *s);
    s->nv = nv, s->gpu_index = gpu_index;
    unsigned int count = 0;
    if (NVML_CALL(nv, nvmlDeviceGetCount_v2, (&count)) != NVML_SUCCESS)
        return fail(err, err_size, "cannot count GPUs: %s", nv->last_error);
    if (gpu_index >= count)
        return fail(err, err_size, "GPU %u does not exist: NVML sees %u GPU(s)", gpu_index, count);
    if (NVML_CALL(nv, nvmlDeviceGetHandleByIndex_v2, (gpu_index, &s->device)) != NVML_SUCCESS)
        return fail(err, err_size, "cannot open GPU %u: %s", gpu_index, nv->last_error);
    if (NVML_CALL(nv, nvmlDeviceGetName, (s->device, s->device_name, sizeof s->device_name)))
        snprintf(s->device_name, sizeof s->device_name, "GPU %u", gpu_index);
    nvmlMemory_t memory;
    if (NVML_CALL(nv, nvmlDeviceGetMemoryInfo, (s->device, &memory)) == NVML_SUCCESS)
        s->memory_mib = memory.total >> 20;
    nvmlReturn_t st = NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_SUPPORTED, nvmlDeviceGetMigMode,
                                       (s->device, &s->mig_current, &s->mig_pending));
    if (st != NVML_SUCCESS && st != NVML_ERROR_NOT_SUPPORTED)
        return fail(err, err_size, "cannot read the MIG mode of GPU %u: %s", gpu_index, nv->last_error);
    s->mig_supported = st == NVML_SUCCESS;

    const mig_gpu *known = mig_known_gpu_for_device(s->device_name, s->memory_mib);
    int profiles = s->mig_supported ? mig_query_gpu(nv, s->device, &s->gpu) : 0;
    if (profiles < 0)
        return fail(err, err_size, "cannot read the MIG profile table of GPU %u (%s): %s", gpu_index,
                    s->device_name, nv->last_error);
    if (profiles > 0) {  /* the GPU's own table rules; the shipped one is only checked against it */
        s->table_from_nvml = 1;
        snprintf(s->gpu.name, sizeof s->gpu.name, "%s", s->device_name);
        if (s->memory_mib) s->gpu.total_memory_mib = s->memory_mib;
        if (known) {
            s->gpu.total_sms = known->total_sms;
            s->table_differences = mig_compare_tables(known, &s->gpu, s->table_report,
                                                      sizeof s->table_report);
        }
    } else if (known) {
        s->gpu = *known;
    } else {
        snprintf(s->gpu.name, sizeof s->gpu.name, "%s", s->device_name);
    }
    if (s->mig_supported && s->mig_current == NVML_DEVICE_MIG_ENABLE) return mig_discover(s, err, err_size);
    return 0;
}

static int profile_by_id(const mig_gpu *gpu, unsigned int id) {
    for (int i = 0; i < gpu->profile_count; i++)
        if (gpu->profiles[i].id == id) return i;
    return -1;
}

int mig_discover(mig_session *s, char *err, size_t err_size) {
    nvml *nv = s->nv;
    s->device_count = 0, s->occupied = 0, s->compute_used = 0;
    /* Every GPU instance holds its slices, also one without compute instances (no MIG device). */
    for (int i = 0; i < s->gpu.profile_count; i++) {
        nvmlGpuInstance_t instances[MIG_MAX_INSTANCES];
        unsigned int count = MIG_MAX_INSTANCES;
        if (NVML_CALL(nv, nvmlDeviceGetGpuInstances, (s->device, s->gpu.profiles[i].id, instances, &count)))
            return fail(err, err_size, "cannot list the GPU instances of GPU %u: %s", s->gpu_index, nv->last_error);
        for (unsigned int k = 0; k < count && k < MIG_MAX_INSTANCES; k++) {
            nvmlGpuInstanceInfo_t info;
            if (NVML_CALL(nv, nvmlGpuInstanceGetInfo, (instances[k], &info)))
                return fail(err, err_size, "cannot read a GPU instance: %s", nv->last_error);
            s->occupied |= slice_mask((mig_placement){(int)info.placement.start, (int)info.placement.size});
            s->compute_used += s->gpu.profiles[i].compute_slices;
        }
    }
    unsigned int max = 0;
    if (NVML_CALL(nv, nvmlDeviceGetMaxMigDeviceCount, (s->device, &max)))
        return fail(err, err_size, "cannot count MIG devices: %s", nv->last_error);
    for (unsigned int i = 0; i < max && s->device_count < MIG_MAX_INSTANCES; i++) {
        nvmlDevice_t mig;
        nvmlReturn_t st = NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_FOUND, nvmlDeviceGetMigDeviceHandleByIndex,
                                           (s->device, i, &mig));
        if (st == NVML_ERROR_NOT_FOUND) continue;
        if (st) return fail(err, err_size, "cannot open MIG device %u: %s", i, nv->last_error);
        mig_device *d = &s->devices[s->device_count];
        memset(d, 0, sizeof *d);
        nvmlGpuInstance_t gi;
        nvmlGpuInstanceInfo_t info;
        nvmlMemory_t memory;
        if (NVML_CALL(nv, nvmlDeviceGetGpuInstanceId, (mig, &d->gpu_instance_id)) ||
            NVML_CALL(nv, nvmlDeviceGetComputeInstanceId, (mig, &d->compute_instance_id)) ||
            NVML_CALL(nv, nvmlDeviceGetUUID, (mig, d->uuid, sizeof d->uuid)) ||
            NVML_CALL(nv, nvmlDeviceGetMemoryInfo, (mig, &memory)) ||
            NVML_CALL(nv, nvmlDeviceGetGpuInstanceById, (s->device, d->gpu_instance_id, &gi)) ||
            NVML_CALL(nv, nvmlGpuInstanceGetInfo, (gi, &info)))
            return fail(err, err_size, "cannot read MIG device %u: %s", i, nv->last_error);
        d->profile_id = info.profileId;
        d->profile = profile_by_id(&s->gpu, info.profileId);
        d->placement = (mig_placement){(int)info.placement.start, (int)info.placement.size};
        d->memory_bytes = memory.total;
        d->sm_count = d->profile >= 0 ? s->gpu.profiles[d->profile].sm_count : 0;
        nvmlDeviceAttributes_t attributes;
        if (nv->nvmlDeviceGetAttributes_v2 &&
            NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_SUPPORTED, nvmlDeviceGetAttributes_v2, (mig, &attributes)) == NVML_SUCCESS)
            d->sm_count = (int)attributes.multiprocessorCount;  /* the compute instance's own */
        if (nv->nvmlDeviceGetComputeRunningProcesses_v3) {  /* with NULL: count only */
            unsigned int processes = 0;
            st = NVML_CALL_EXPECT(nv, NVML_ERROR_INSUFFICIENT_SIZE, nvmlDeviceGetComputeRunningProcesses_v3,
                                  (mig, &processes, NULL));
            d->busy = st == NVML_ERROR_INSUFFICIENT_SIZE || (st == NVML_SUCCESS && processes > 0);
        }
        for (int c = 0; c < s->created_count; c++)
            d->created |= s->created[c].compute_instance_live &&
                          s->created[c].gpu_instance_id == d->gpu_instance_id &&
                          s->created[c].compute_instance_id == d->compute_instance_id;
        s->device_count++;
    }
    return 0;
}

/* Destroys what entries from..created_count-1 hold, newest first. Before destroying, the GPU
 * instance found under a recorded id must still be ours (same profile and placement): ids are
 * reused, and an instance someone else made since must never be touched. */
static int destroy_created_from(mig_session *s, int from, char *err, size_t err_size) {
    nvml *nv = s->nv;
    int left = 0;
    char detail[512] = "";
    size_t used = 0;
    for (int i = s->created_count - 1; nv && i >= from; i--) {
        mig_created *c = &s->created[i];
        if (!c->gpu_instance_live && !c->compute_instance_live) continue;
        nvmlGpuInstance_t gi;
        nvmlGpuInstanceInfo_t info;
        nvmlReturn_t st = NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_FOUND, nvmlDeviceGetGpuInstanceById,
                                           (s->device, c->gpu_instance_id, &gi));
        if (st == NVML_SUCCESS) st = NVML_CALL(nv, nvmlGpuInstanceGetInfo, (gi, &info));
        if (st == NVML_ERROR_NOT_FOUND ||
            (st == NVML_SUCCESS && (info.profileId != c->profile_id || info.placement.start != (unsigned)c->start))) {
            c->gpu_instance_live = c->compute_instance_live = 0;  /* gone, or no longer ours */
            continue;
        }
        if (st == NVML_SUCCESS && c->compute_instance_live) {
            nvmlComputeInstance_t ci;
            st = NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_FOUND, nvmlGpuInstanceGetComputeInstanceById,
                                  (gi, c->compute_instance_id, &ci));
            if (st == NVML_SUCCESS) st = NVML_CALL(nv, nvmlComputeInstanceDestroy, (ci));
            if (st == NVML_SUCCESS || st == NVML_ERROR_NOT_FOUND) c->compute_instance_live = 0, st = NVML_SUCCESS;
        }
        if (st == NVML_SUCCESS && (st = NVML_CALL(nv, nvmlGpuInstanceDestroy, (gi))) == NVML_SUCCESS)
            c->gpu_instance_live = 0;
        if (st != NVML_SUCCESS) {
            left++;
            int n = snprintf(detail + used, used < sizeof detail ? sizeof detail - used : 0,
                             "%sGPU instance %u (%s)", used ? "; " : "", c->gpu_instance_id,
                             nv->last_error);
            if (n > 0) used += (size_t)n;
        }
    }
    if (left)
        return fail(err, err_size, "%d MIG instance(s) created by this run could not be destroyed: %s. "
                    "Stop the processes still on them and retry, or as administrator: "
                    "sudo nvidia-smi mig -i %u -dci -gi <id> && sudo nvidia-smi mig -i %u -dgi -gi <id>",
                    left, detail, s->gpu_index, s->gpu_index);
    return 0;
}

int mig_destroy_created(mig_session *s, char *err, size_t err_size) {
    return destroy_created_from(s, 0, err, err_size);
}

static int compute_profile_index(int compute_slices) {
    static const int index[9] = {-1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE,
                                 NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, -1,
                                 NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE,
                                 NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE};
    return compute_slices >= 1 && compute_slices <= 8 ? index[compute_slices] : -1;
}

/* One GPU instance at the planned placement and one compute instance spanning it, each recorded
 * the moment it exists so that a later failure can undo it. The failing NVML status, if any. */
static nvmlReturn_t create_instance(mig_session *s, const mig_planned *planned) {
    nvml *nv = s->nv;
    const mig_profile *p = &s->gpu.profiles[planned->profile];
    nvmlGpuInstancePlacement_t where = {(unsigned)planned->placement.start, (unsigned)planned->placement.size};
    nvmlGpuInstance_t gi;
    nvmlGpuInstanceInfo_t info;
    nvmlReturn_t st;
    if ((st = NVML_CALL(nv, nvmlDeviceCreateGpuInstanceWithPlacement, (s->device, p->id, &where, &gi)))) return st;
    if ((st = NVML_CALL(nv, nvmlGpuInstanceGetInfo, (gi, &info)))) {
        NVML_CALL(nv, nvmlGpuInstanceDestroy, (gi));  /* no id to record: undo by handle now */
        return st;
    }
    mig_created *c = &s->created[s->created_count++];
    *c = (mig_created){.gpu_instance_id = info.id, .gpu_instance_live = 1, .profile_id = p->id,
                       .start = planned->placement.start};
    nvmlComputeInstanceProfileInfo_t ci_profile;
    nvmlComputeInstance_t ci;
    nvmlComputeInstanceInfo_t ci_info;
    int ci_index = compute_profile_index(p->compute_slices);
    if (ci_index < 0) {
        snprintf(nv->last_error, sizeof nv->last_error, "no compute instance profile spans %d compute slices",
                 p->compute_slices);
        return NVML_ERROR_NOT_SUPPORTED;
    }
    if ((st = NVML_CALL(nv, nvmlGpuInstanceGetComputeInstanceProfileInfo,
                        (gi, (unsigned)ci_index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci_profile))) ||
        (st = NVML_CALL(nv, nvmlGpuInstanceCreateComputeInstance, (gi, ci_profile.id, &ci))))
        return st;
    if ((st = NVML_CALL(nv, nvmlComputeInstanceGetInfo_v2, (ci, &ci_info)))) {
        NVML_CALL(nv, nvmlComputeInstanceDestroy, (ci));
        return st;
    }
    c->compute_instance_id = ci_info.id, c->compute_instance_live = 1;
    return NVML_SUCCESS;
}

int mig_assign(mig_session *s, const mig_job *jobs, int job_count, const char *layout, int create,
               char *err, size_t err_size) {
    s->job_count = 0;
    if (mig_require_enabled(s, err, err_size)) return -1;
    if (s->gpu.profile_count == 0)
        return fail(err, err_size, "no MIG profile table for %s: NVML gave none and the suite ships "
                    "tables for %s only", s->device_name, mig_known_gpu_names());
    if (job_count <= 0 || job_count > s->gpu.compute_slices)
        return fail(err, err_size, "%d jobs need a MIG instance each; %s holds at most %d", job_count,
                    s->gpu.name, s->gpu.compute_slices);
    if (mig_discover(s, err, err_size)) return -1;
    int live = 0;  /* forget records of instances already destroyed */
    for (int c = 0; c < s->created_count; c++)
        if (s->created[c].gpu_instance_live || s->created[c].compute_instance_live) s->created[live++] = s->created[c];
    s->created_count = live;
    int layout_profiles[MIX_MAX_JOBS], use_layout = layout && *layout;
    if (use_layout && parse_layout(&s->gpu, layout, job_count, layout_profiles, err, err_size)) return -1;

    /* Idle existing devices first: the largest job first, each taking the smallest device that
     * holds it (with a layout: the same profile). The devices a job fits are nested by size, so
     * this order matches the most jobs possible. */
    int order[MIX_MAX_JOBS], taken[MIG_MAX_INSTANCES] = {0};
    for (int j = 0; j < job_count; j++) {
        int k = j;
        while (k > 0 && jobs[order[k - 1]].footprint_bytes < jobs[j].footprint_bytes) order[k] = order[k - 1], k--;
        order[k] = j;
        s->job_device[j] = -1;
    }
    for (int o = 0; o < job_count; o++) {
        int j = order[o], best = -1;
        for (int d = 0; d < s->device_count; d++) {
            const mig_device *dev = &s->devices[d];
            int fits = use_layout ? dev->profile == layout_profiles[j]
                                  : dev->memory_bytes >= mig_required_bytes(jobs[j].footprint_bytes);
            if (!taken[d] && !dev->busy && fits && (best < 0 || dev->memory_bytes < s->devices[best].memory_bytes))
                best = d;
        }
        if (best >= 0) taken[best] = 1, s->job_device[j] = best;
    }

    /* The rest is planned in the slices no instance holds. */
    mig_job rest[MIG_MAX_INSTANCES];
    int rest_job[MIG_MAX_INSTANCES], rest_count = 0, busy = 0;
    char rest_layout[512] = "";
    size_t used = 0;
    for (int d = 0; d < s->device_count; d++) busy += s->devices[d].busy;
    for (int j = 0; j < job_count; j++) {
        if (s->job_device[j] >= 0) continue;
        rest_job[rest_count] = j;
        rest[rest_count++] = jobs[j];
        if (use_layout) {
            int n = snprintf(rest_layout + used, used < sizeof rest_layout ? sizeof rest_layout - used : 0,
                             "%s%s", used ? "," : "", s->gpu.profiles[layout_profiles[j]].name);
            if (n > 0) used += (size_t)n;
        }
    }
    mig_plan new_plan = {0};
    if (rest_count) {
        char why[1024];
        if (mig_plan_jobs(&new_plan, &s->gpu, rest, rest_count, use_layout ? rest_layout : NULL, s->occupied,
                          s->compute_used, why, sizeof why))
            return fail(err, err_size, "%d of %d jobs found no idle MIG instance that holds them (%d "
                        "exist, %d busy), and new ones cannot be placed: %s", rest_count, job_count,
                        s->device_count, busy, why);
        for (int k = 0; k < new_plan.count; k++) new_plan.instances[k].job = rest_job[new_plan.instances[k].job];
        if (!create) {
            char *text = NULL, command[160];
            size_t text_size = 0;
            FILE *f = open_memstream(&text, &text_size);
            if (f) mig_plan_print(&new_plan, f), fclose(f);
            mig_plan_admin_command(&new_plan, s->gpu_index, command, sizeof command);
            fail(err, err_size, "%d of %d jobs have no idle MIG instance that holds them. This plan "
                 "would create them:\n%sEnable MIG creation in run_suite (needs root), or have an "
                 "administrator run: sudo %s", rest_count, job_count, text ? text : "", command);
            free(text);
            return -1;
        }
        int first_created = s->created_count;
        for (int k = 0; k < new_plan.count; k++) {
            if (s->created_count == MIG_MAX_INSTANCES)  /* created earlier and never destroyed */
                return fail(err, err_size, "this session already holds %d instances; destroy them first",
                            s->created_count);
            nvmlReturn_t st = create_instance(s, &new_plan.instances[k]);
            if (st == NVML_SUCCESS) continue;
            const mig_planned *p = &new_plan.instances[k];
            char cause[sizeof s->nv->last_error], undo[512] = "";
            snprintf(cause, sizeof cause, "%s", s->nv->last_error);
            int undone = destroy_created_from(s, first_created, undo, sizeof undo) == 0;
            return fail(err, err_size, "creating MIG instance %d of %d (%s at memory slices %d..%d for job "
                        "%d \"%s\") failed: %s%s; %s", k + 1, new_plan.count, s->gpu.profiles[p->profile].name,
                        p->placement.start, p->placement.start + p->placement.size - 1, p->job,
                        p->label, cause,
                        st == NVML_ERROR_NO_PERMISSION
                            ? " (creating MIG instances needs root, or the nvidia-caps MIG config capability)" : "",
                        undone ? "everything created before it was destroyed" : undo);
        }
        int missing = mig_discover(s, err, err_size) ? -1 : 0;
        for (int k = 0; !missing && k < new_plan.count; k++) {
            const mig_created *c = &s->created[first_created + k];
            for (int d = 0; d < s->device_count; d++)
                if (s->devices[d].gpu_instance_id == c->gpu_instance_id &&
                    s->devices[d].compute_instance_id == c->compute_instance_id)
                    s->job_device[new_plan.instances[k].job] = d;
            if (s->job_device[new_plan.instances[k].job] < 0) {
                missing = 1;
                fail(err, err_size, "created GPU instance %u, but NVML shows no MIG device for it",
                     c->gpu_instance_id);
            }
        }
        if (missing) {  /* keep the promise: a failed call leaves nothing of its own behind */
            destroy_created_from(s, first_created, NULL, 0);
            return -1;
        }
    }

    /* One plan entry per job, for printing and for --mig-emulate. */
    memset(&s->plan, 0, sizeof s->plan);
    s->plan.gpu = s->gpu, s->plan.count = job_count;
    unsigned int ours = 0;
    for (int j = 0; j < job_count; j++) {
        const mig_device *d = &s->devices[s->job_device[j]];
        mig_planned *p = &s->plan.instances[j];
        p->job = j;
        snprintf(p->label, sizeof p->label, "%s", jobs[j].label ? jobs[j].label : "");
        p->profile = d->profile, p->placement = d->placement, p->existing = d->created ? -1 : s->job_device[j];
        p->footprint_bytes = jobs[j].footprint_bytes, p->required_bytes = mig_required_bytes(jobs[j].footprint_bytes);
        p->sm_count = d->sm_count, p->memory_bytes = d->memory_bytes;
        p->sm_fraction = s->gpu.total_sms > 0 ? (double)d->sm_count / s->gpu.total_sms : 0.0;
        ours |= slice_mask(d->placement);
    }
    s->plan.occupied = s->occupied & ~ours;
    s->job_count = job_count;
    return 0;
}

const mig_device *mig_job_device(const mig_session *s, int job) {
    if (job < 0 || job >= s->job_count || s->job_device[job] < 0) return NULL;
    return &s->devices[s->job_device[job]];
}

const char *mig_job_uuid(const mig_session *s, int job) {
    const mig_device *d = mig_job_device(s, job);
    return d ? d->uuid : NULL;
}
