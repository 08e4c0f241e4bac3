/* MIG profile tables: the shipped ones (to plan for a GPU that is not present) and their
 * comparison with the GPU's own (read from NVML by the session, mig_instances.c).
 *
 * Sources for the shipped tables. Profiles, instance counts and fractions: NVIDIA's MIG User
 * Guide, "Supported MIG Profiles". Placements (memory-slice start and size, the geometry NVML's
 * nvmlDeviceGetGpuInstancePossiblePlacements_v2 returns; `nvidia-smi mig -lgipp` prints it), the
 * same on A100, H100 and H200 (7 compute slices, 8 memory slices):
 *   1g (ids 19, 20 +me) {0,1,2,3,4,5,6}:1   1g double memory (15) {0,2,4,6}:2
 *   2g (14) {0,2,4}:2   3g (9) {0,4}:4   4g (5) {0}:4   7g (0) {0}:8
 * and on A30 (4 compute, 4 memory slices): 1g (14, 21 +me) {0,1,2,3}:1, 2g (5, 6 +me) {0,2}:2,
 * 4g (0) {0}:4. Memory (MiB) and SM counts are what the driver reports (`nvidia-smi mig -lgip`,
 * NVML's profile info). H100 80GB HBM3 and H200 were read from NVML on driver 580.159.04 and
 * match these tables exactly (mig_compare_tables: no difference); A100-40GB (4.75/9.62/19.50/
 * 39.25 GiB), A100-80GB (9.50/19.50/39.25/78.50 GiB, the lowest of the driver versions seen) and
 * A30 (5.81/11.69/23.44 GiB) come from published -lgip transcripts. H100-80GB means the SXM5
 * part: H100 PCIe has 114 SMs and other per-profile counts.
 *
 * Compute-instance profiles (ci_sms, the last row of each table): NVIDIA's MIG User Guide,
 * "Supported MIG Profiles" and "Creating GPU Instances" (`nvidia-smi mig -lcip`): a GPU instance
 * of g compute slices offers compute instances of 1, 2, 3 and 4 slices below g (1c.7g.40gb ..
 * 4c.7g.40gb; A30: 1c and 2c), at most g / c of c slices, each with the SMs of the GPU-instance
 * profile of as many slices (A100: 14 per slice; H100, H200: 16, 32, 60, 64). NOT verified on
 * hardware: MIG mode is off on the cards this suite was measured on, and NVML lists compute-
 * instance profiles only inside an existing GPU instance. The session (mig_instances.c) asks
 * NVML for each compute-instance profile when it creates one, so a wrong row here fails there
 * with NVML's own answer rather than creating something else. */
#include "runner/suite/plan/mig_profiles.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Placement sets on the 8-memory-slice GPUs and on A30: count, {{start, size}, ...}. */
#define P8_1G 7, {{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}}
#define P8_1G_2MEM 4, {{0, 2}, {2, 2}, {4, 2}, {6, 2}}
#define P8_2G 3, {{0, 2}, {2, 2}, {4, 2}}
#define P8_3G 2, {{0, 4}, {4, 4}}
#define P8_4G 1, {{0, 4}}
#define P8_7G 1, {{0, 8}}
#define P4_1G 4, {{0, 1}, {1, 1}, {2, 1}, {3, 1}}
#define P4_2G 2, {{0, 2}, {2, 2}}
#define P4_4G 1, {{0, 4}}

/* Compute-instance SMs by compute slices (index 0 unused): see the sources above. */
#define CI_A100 {0, 14, 28, 42, 56, 0, 0, 0, 0}
#define CI_HOPPER {0, 16, 32, 60, 64, 0, 0, 0, 0}
#define CI_A30 {0, 14, 28, 0, 0, 0, 0, 0, 0}

/* Field order: name, id, compute slices, memory slices, SMs, MiB, max instances, plannable,
 * placements. */
static const mig_gpu known_gpus[] = {
    {"A100-40GB", 7, 8, 108, 40960, 7,
     {{"1g.5gb", 19, 1, 1, 14, 4864, 7, 1, P8_1G},
      {"1g.5gb+me", 20, 1, 1, 14, 4864, 1, 0, P8_1G},
      {"1g.10gb", 15, 1, 2, 14, 9856, 4, 1, P8_1G_2MEM},
      {"2g.10gb", 14, 2, 2, 28, 9856, 3, 1, P8_2G},
      {"3g.20gb", 9, 3, 4, 42, 19968, 2, 1, P8_3G},
      {"4g.20gb", 5, 4, 4, 56, 19968, 1, 1, P8_4G},
      {"7g.40gb", 0, 7, 8, 98, 40192, 1, 1, P8_7G}},
     CI_A100},
    {"A100-80GB", 7, 8, 108, 81920, 7,
     {{"1g.10gb", 19, 1, 1, 14, 9728, 7, 1, P8_1G},
      {"1g.10gb+me", 20, 1, 1, 14, 9728, 1, 0, P8_1G},
      {"1g.20gb", 15, 1, 2, 14, 19968, 4, 1, P8_1G_2MEM},
      {"2g.20gb", 14, 2, 2, 28, 19968, 3, 1, P8_2G},
      {"3g.40gb", 9, 3, 4, 42, 40192, 2, 1, P8_3G},
      {"4g.40gb", 5, 4, 4, 56, 40192, 1, 1, P8_4G},
      {"7g.80gb", 0, 7, 8, 98, 80384, 1, 1, P8_7G}},
     CI_A100},
    {"H100-80GB", 7, 8, 132, 81920, 7,
     {{"1g.10gb", 19, 1, 1, 16, 9984, 7, 1, P8_1G},
      {"1g.10gb+me", 20, 1, 1, 16, 9984, 1, 0, P8_1G},
      {"1g.20gb", 15, 1, 2, 26, 20096, 4, 1, P8_1G_2MEM},
      {"2g.20gb", 14, 2, 2, 32, 20096, 3, 1, P8_2G},
      {"3g.40gb", 9, 3, 4, 60, 40448, 2, 1, P8_3G},
      {"4g.40gb", 5, 4, 4, 64, 40448, 1, 1, P8_4G},
      {"7g.80gb", 0, 7, 8, 132, 81152, 1, 1, P8_7G}},
     CI_HOPPER},
    {"H200-141GB", 7, 8, 132, 143771, 7,
     {{"1g.18gb", 19, 1, 1, 16, 16384, 7, 1, P8_1G},
      {"1g.18gb+me", 20, 1, 1, 16, 16384, 1, 0, P8_1G},
      {"1g.35gb", 15, 1, 2, 26, 33280, 4, 1, P8_1G_2MEM},
      {"2g.35gb", 14, 2, 2, 32, 33280, 3, 1, P8_2G},
      {"3g.71gb", 9, 3, 4, 60, 71424, 2, 1, P8_3G},
      {"4g.71gb", 5, 4, 4, 64, 71424, 1, 1, P8_4G},
      {"7g.141gb", 0, 7, 8, 132, 143360, 1, 1, P8_7G}},
     CI_HOPPER},
    {"A30-24GB", 4, 4, 56, 24576, 5,
     {{"1g.6gb", 14, 1, 1, 14, 5952, 4, 1, P4_1G},
      {"1g.6gb+me", 21, 1, 1, 14, 5952, 1, 0, P4_1G},
      {"2g.12gb", 5, 2, 2, 28, 11968, 2, 1, P4_2G},
      {"2g.12gb+me", 6, 2, 2, 28, 11968, 1, 0, P4_2G},
      {"4g.24gb", 0, 4, 4, 56, 24000, 1, 1, P4_4G}},
     CI_A30},
};
#define KNOWN_COUNT ((int)(sizeof known_gpus / sizeof known_gpus[0]))

const mig_gpu *mig_known_gpu(const char *name) {
    for (int i = 0; name && i < KNOWN_COUNT; i++)
        if (strcasecmp(name, known_gpus[i].name) == 0) return &known_gpus[i];
    return NULL;
}

const mig_gpu *mig_known_gpu_at(int i) { return i >= 0 && i < KNOWN_COUNT ? &known_gpus[i] : NULL; }

const char *mig_known_gpu_names(void) {
    return "A100-40GB | A100-80GB | H100-80GB | H200-141GB | A30-24GB";
}

const mig_gpu *mig_known_gpu_for_device(const char *device_name, unsigned long long memory_mib) {
    if (!device_name) return NULL;
    if (strstr(device_name, "A100")) return mig_known_gpu(memory_mib > 61440 ? "A100-80GB" : "A100-40GB");
    if (strstr(device_name, "H100") && !strstr(device_name, "PCIe") && !strstr(device_name, "NVL") &&
        memory_mib > 70000 && memory_mib < 90000)
        return mig_known_gpu("H100-80GB");
    if (strstr(device_name, "H200") && memory_mib > 130000) return mig_known_gpu("H200-141GB");
    if (strstr(device_name, "A30")) return mig_known_gpu("A30-24GB");
    return NULL;
}

int mig_find_profile(const mig_gpu *gpu, const char *name) {
    if (!name) return -1;
    if (strncasecmp(name, "MIG ", 4) == 0) name += 4;
    for (int i = 0; i < gpu->profile_count; i++)
        if (strcasecmp(gpu->profiles[i].name, name) == 0) return i;
    return -1;
}

unsigned long long mig_profile_bytes(const mig_profile *p) { return p->memory_mib << 20; }

int mig_ci_sms(const mig_gpu *gpu, int profile, int slices) {
    if (profile < 0 || profile >= gpu->profile_count || slices < 1) return 0;
    const mig_profile *p = &gpu->profiles[profile];
    if (slices == p->compute_slices) return p->sm_count;
    return slices < p->compute_slices && slices <= MIG_MAX_SLICES ? gpu->ci_sms[slices] : 0;
}

void mig_ci_name(const mig_gpu *gpu, int profile, int slices, char *out, size_t size) {
    const mig_profile *p = &gpu->profiles[profile];
    if (slices == p->compute_slices) snprintf(out, size, "%s", p->name);
    else snprintf(out, size, "%dc.%s", slices, p->name);
}

void mig_placements_text(const mig_profile *p, char *out, size_t size) {
    size_t used = 0;
    for (int i = 0; i < p->placement_count && used < size; i++) {
        int n = snprintf(out + used, size - used, "%s%d", i ? "," : "{", p->placements[i].start);
        if (n > 0) used += (size_t)n;
    }
    if (used < size) snprintf(out + used, size - used, "}:%d", p->memory_slices);
}

/* ---- comparison ----------------------------------------------------------------------------- */

typedef struct report_buf {
    char *p;
    size_t size, used;
    int count;
} report_buf;

__attribute__((format(printf, 2, 3))) static void note(report_buf *r, const char *fmt, ...) {
    r->count++;
    if (!r->p || r->used + 1 >= r->size) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->p + r->used, r->size - r->used, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    r->used += (size_t)n < r->size - r->used ? (size_t)n : r->size - r->used - 1;
    if (r->used + 1 < r->size) r->p[r->used++] = '\n', r->p[r->used] = '\0';
}

int mig_profile_by_id(const mig_gpu *gpu, unsigned int profile_id) {
    for (int i = 0; i < gpu->profile_count; i++)
        if (gpu->profiles[i].id == profile_id) return i;
    return -1;
}

static int same_placements(const mig_profile *a, const mig_profile *b) {
    if (a->placement_count != b->placement_count) return 0;
    for (int i = 0; i < a->placement_count; i++) {
        int found = 0;
        for (int k = 0; k < b->placement_count; k++)
            found |= a->placements[i].start == b->placements[k].start &&
                     a->placements[i].size == b->placements[k].size;
        if (!found) return 0;
    }
    return 1;
}

int mig_compare_tables(const mig_gpu *shipped, const mig_gpu *measured, char *report,
                       size_t size) {
    report_buf r = {report, size, 0, 0};
    if (report && size) report[0] = '\0';
    if (shipped->compute_slices != measured->compute_slices ||
        shipped->memory_slices != measured->memory_slices)
        note(&r, "%s: shipped %d compute / %d memory slices, NVML %d / %d", shipped->name,
             shipped->compute_slices, shipped->memory_slices, measured->compute_slices,
             measured->memory_slices);
    for (int i = 0; i < shipped->profile_count; i++) {
        const mig_profile *s = &shipped->profiles[i];
        int found = mig_profile_by_id(measured, s->id);
        if (found < 0) {
            note(&r, "%s: profile %s (id %u) is not in NVML's table", shipped->name, s->name, s->id);
            continue;
        }
        const mig_profile *m = &measured->profiles[found];
        if (strcmp(s->name, m->name) != 0)
            note(&r, "%s: profile id %u is %s in the shipped table, %s in NVML's", shipped->name,
                 s->id, s->name, m->name);
        if (s->compute_slices != m->compute_slices || s->memory_slices != m->memory_slices)
            note(&r, "%s: %s slices: shipped %d compute / %d memory, NVML %d / %d", shipped->name,
                 s->name, s->compute_slices, s->memory_slices, m->compute_slices, m->memory_slices);
        if (s->sm_count != m->sm_count)
            note(&r, "%s: %s SM count: shipped %d, NVML %d", shipped->name, s->name, s->sm_count,
                 m->sm_count);
        if (s->max_instances != m->max_instances)
            note(&r, "%s: %s instances: shipped %d, NVML %d", shipped->name, s->name,
                 s->max_instances, m->max_instances);
        if (fabs((double)s->memory_mib - (double)m->memory_mib) > 0.03 * (double)m->memory_mib)
            note(&r, "%s: %s memory: shipped %llu MiB, NVML %llu MiB (more than 3%% apart)",
                 shipped->name, s->name, s->memory_mib, m->memory_mib);
        if (!same_placements(s, m)) {
            char a[64], b[64];
            mig_placements_text(s, a, sizeof a);
            mig_placements_text(m, b, sizeof b);
            note(&r, "%s: %s placements: shipped %s, NVML %s", shipped->name, s->name, a, b);
        }
    }
    for (int i = 0; i < measured->profile_count; i++)
        if (mig_profile_by_id(shipped, measured->profiles[i].id) < 0)
            note(&r, "%s: NVML has profile %s (id %u) that the shipped table lacks", shipped->name,
                 measured->profiles[i].name, measured->profiles[i].id);
    return r.count;
}
