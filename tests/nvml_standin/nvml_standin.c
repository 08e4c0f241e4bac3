/* A stand-in libnvidia-ml for tests/runner/test_mig_flow.c: one MIG-capable GPU whose GPU and compute
 * instances live in this library's memory, so that the whole MIG flow (discover, plan, create,
 * assign UUIDs, destroy) runs on a machine without a GPU, through the same dlopen path as the
 * real library. It keeps NVIDIA's rules: profile ids and placements as `nvidia-smi mig -lgipp`
 * shows them (A100-SXM4-40GB, H100 80GB HBM3 and H200, written out here independently of the suite's
 * shipped tables so that comparing the two means something), overlapping or disallowed
 * placements refused, a GPU instance with compute instances cannot be destroyed. Compute instances
 * of a GPU instance: one spanning it, or several sharing it (1c..4c below its size, as NVIDIA's
 * MIG User Guide lists them, with their SMs), their slices adding up to at most its own.
 *
 * Configured from the environment at nvmlInit_v2 (when no other init is outstanding):
 *   SUITE_NVML_STANDIN_GPU       A100-40GB (default) | H100-80GB | H200-141GB
 *   SUITE_NVML_STANDIN_MIG       on (default) | off | pending | unsupported
 *   SUITE_NVML_STANDIN_FAIL      gpu-instance:N | compute-instance:N  (the Nth creation fails with
 *                                NVML_ERROR_INSUFFICIENT_RESOURCES) | permission (creation needs
 *                                root) | destroy-busy (compute instances cannot be destroyed)
 *   SUITE_NVML_STANDIN_EXISTING  instances made by "someone else" before the test, as
 *                                <profile id>@<start>[:busy|:noci], comma separated
 *   SUITE_NVML_STANDIN_SKEW      1: report 16 SMs for the 1-slice profile (a driver that disagrees)
 *   SUITE_NVML_STANDIN_GPUS      how many GPUs of that model (1 by default, at most 64), each with its
 *                                own full-length UUID; MIG instances live on the first
 *   SUITE_NVML_STANDIN_POWER_W   a constant power draw in watts (none by default: power and energy are
 *                                then not supported, as on a GPU without the sensor); the energy counter
 *                                is that power times the wall clock's seconds, so the energy between two
 *                                moments is exactly the power times the time between them
 * The test reads the state through the nvml_standin_* functions at the end of this file. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner/suite/gpu/nvml.h"

#define SLOTS 8
#define CARDS 64

typedef struct standin_profile {
    unsigned int index, id, compute_slices, memory_slices, max_instances, sms;
    unsigned long long memory_mib;
    const char *name;
    unsigned int starts[7], start_count;
} standin_profile;

static const standin_profile a100_40gb[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 1, 7, 14, 4864, "MIG 1g.5gb", {0, 1, 2, 3, 4, 5, 6}, 7},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 14, 4864, "MIG 1g.5gb+me", {0, 1, 2, 3, 4, 5, 6}, 7},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 14, 9856, "MIG 1g.10gb", {0, 2, 4, 6}, 4},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 2, 3, 28, 9856, "MIG 2g.10gb", {0, 2, 4}, 3},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 4, 2, 42, 19968, "MIG 3g.20gb", {0, 4}, 2},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 4, 1, 56, 19968, "MIG 4g.20gb", {0}, 1},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 8, 1, 98, 40192, "MIG 7g.40gb", {0}, 1},
};
static const standin_profile h100_80gb[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 1, 7, 16, 9984, "MIG 1g.10gb", {0, 1, 2, 3, 4, 5, 6}, 7},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 16, 9984, "MIG 1g.10gb+me", {0, 1, 2, 3, 4, 5, 6}, 7},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 26, 20096, "MIG 1g.20gb", {0, 2, 4, 6}, 4},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 2, 3, 32, 20096, "MIG 2g.20gb", {0, 2, 4}, 3},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 4, 2, 60, 40448, "MIG 3g.40gb", {0, 4}, 2},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 4, 1, 64, 40448, "MIG 4g.40gb", {0}, 1},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 8, 1, 132, 81152, "MIG 7g.80gb", {0}, 1},
};
static const standin_profile h200_141gb[] = {
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 1, 7, 16, 16384, "MIG 1g.18gb", {0, 1, 2, 3, 4, 5, 6}, 7},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 1, 16, 16384, "MIG 1g.18gb+me", {0, 1, 2, 3, 4, 5, 6}, 7},
    {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 2, 4, 26, 33280, "MIG 1g.35gb", {0, 2, 4, 6}, 4},
    {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 2, 3, 32, 33280, "MIG 2g.35gb", {0, 2, 4}, 3},
    {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 4, 2, 60, 71424, "MIG 3g.71gb", {0, 4}, 2},
    {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 4, 1, 64, 71424, "MIG 4g.71gb", {0}, 1},
    {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 8, 1, 132, 143360, "MIG 7g.141gb", {0}, 1},
};

struct nvmlComputeInstance_st {
    int live, busy;
    unsigned int id, slices;
    int gi_slot;
};
struct nvmlGpuInstance_st {
    int live, foreign, slot;
    unsigned int id, start;
    const standin_profile *profile;
    struct nvmlComputeInstance_st ci[SLOTS];
};
struct nvmlDevice_st {
    int mig;             /* 0: the GPU, 1: a MIG device (gi, ci) */
    int gi, ci;
};

static struct {
    int init_count;
    const standin_profile *profiles;
    int profile_count, skew;
    const unsigned int *ci_sms;
    const char *name;
    unsigned long long memory_mib;
    int mig_supported;
    unsigned int mig_current, mig_pending;
    char fail_kind[32];
    int fail_at, gi_creations, ci_creations;
    int card_count;
    unsigned int power_mw;  /* 0: no power sensor */
    struct nvmlDevice_st cards[CARDS], mig_handles[SLOTS][SLOTS];
    struct nvmlGpuInstance_st gi[SLOTS];
} state;

#define NEED_INIT()                                                                               \
    do {                                                                                          \
        if (state.init_count == 0) return NVML_ERROR_UNINITIALIZED;                               \
    } while (0)
#define NEED_MIG()                                                                                \
    do {                                                                                          \
        NEED_INIT();                                                                              \
        if (!state.mig_supported || state.mig_current != NVML_DEVICE_MIG_ENABLE)                  \
            return NVML_ERROR_NOT_SUPPORTED;                                                      \
    } while (0)

static const standin_profile *profile_by_id(unsigned int id) {
    for (int i = 0; i < state.profile_count; i++)
        if (state.profiles[i].id == id) return &state.profiles[i];
    return NULL;
}

/* SMs of a compute instance of c slices inside a larger GPU instance (MIG User Guide); 0: none. */
static const unsigned int a100_ci_sms[9] = {0, 14, 28, 42, 56, 0, 0, 0, 0};
static const unsigned int h100_ci_sms[9] = {0, 16, 32, 60, 64, 0, 0, 0, 0};

static unsigned int ci_sms_of(const standin_profile *p, unsigned int slices) {
    if (slices == p->compute_slices) return state.skew && slices == 1 && p->memory_slices == 1 ? 16 : p->sms;
    return slices < p->compute_slices && slices < 9 ? state.ci_sms[slices] : 0;
}

static unsigned int sms_of(const standin_profile *p) {
    return state.skew && p->compute_slices == 1 && p->memory_slices == 1 ? 16 : p->sms;
}

static unsigned int used_slices(void) {
    unsigned int mask = 0;
    for (int i = 0; i < SLOTS; i++)
        if (state.gi[i].live) mask |= ((1u << state.gi[i].profile->memory_slices) - 1) << state.gi[i].start;
    return mask;
}

/* NVIDIA's rules: an allowed start, no overlap, compute slices and per-profile counts. */
static nvmlReturn_t place(const standin_profile *p, unsigned int start, int foreign, struct nvmlGpuInstance_st **out) {
    int allowed = 0, compute = 0, same = 0, slot = -1;
    for (unsigned int k = 0; k < p->start_count; k++) allowed |= p->starts[k] == start;
    if (!allowed) return NVML_ERROR_INVALID_ARGUMENT;
    if (used_slices() & (((1u << p->memory_slices) - 1) << start)) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    for (int i = 0; i < SLOTS; i++) {
        if (!state.gi[i].live) {
            if (slot < 0) slot = i;
            continue;
        }
        compute += (int)state.gi[i].profile->compute_slices;
        same += state.gi[i].profile == p;
    }
    if (slot < 0 || compute + (int)p->compute_slices > 7 || same >= (int)p->max_instances)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    unsigned int id = 1;  /* the lowest free id, so ids are reused as the driver does */
    for (int again = 1; again;) {
        again = 0;
        for (int i = 0; i < SLOTS; i++)
            if (state.gi[i].live && state.gi[i].id == id) id++, again = 1;
    }
    struct nvmlGpuInstance_st *gi = &state.gi[slot];
    memset(gi, 0, sizeof *gi);
    gi->live = 1, gi->foreign = foreign, gi->slot = slot, gi->id = id, gi->start = start, gi->profile = p;
    *out = gi;
    return NVML_SUCCESS;
}

static struct nvmlComputeInstance_st *add_compute_instance(struct nvmlGpuInstance_st *gi, unsigned int slices) {
    unsigned int used = 0;
    for (int c = 0; c < SLOTS; c++) used += gi->ci[c].live ? gi->ci[c].slices : 0;
    if (used + slices > gi->profile->compute_slices) return NULL;
    for (unsigned int id = 0; id < SLOTS; id++) {
        int taken = 0;
        for (int c = 0; c < SLOTS; c++) taken |= gi->ci[c].live && gi->ci[c].id == id;
        if (taken) continue;
        for (int c = 0; c < SLOTS; c++)
            if (!gi->ci[c].live) {
                gi->ci[c] = (struct nvmlComputeInstance_st){1, 0, id, slices, gi->slot};
                return &gi->ci[c];
            }
    }
    return NULL;
}

static void configure(void) {
    memset(&state.gi, 0, sizeof state.gi);
    const char *gpu = getenv("SUITE_NVML_STANDIN_GPU"), *mig = getenv("SUITE_NVML_STANDIN_MIG");
    const char *fail = getenv("SUITE_NVML_STANDIN_FAIL"), *existing = getenv("SUITE_NVML_STANDIN_EXISTING");
    const char *skew = getenv("SUITE_NVML_STANDIN_SKEW"), *cards = getenv("SUITE_NVML_STANDIN_GPUS");
    state.card_count = cards ? atoi(cards) : 1;
    if (state.card_count < 1 || state.card_count > CARDS) state.card_count = 1;
    int h100 = gpu && strcmp(gpu, "H100-80GB") == 0, h200 = gpu && strcmp(gpu, "H200-141GB") == 0;
    state.profiles = h200 ? h200_141gb : h100 ? h100_80gb : a100_40gb;
    state.profile_count = 7;
    state.ci_sms = h100 || h200 ? h100_ci_sms : a100_ci_sms; /* Hopper's compute instances either way */
    state.name = h200 ? "NVIDIA H200" : h100 ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100-SXM4-40GB";
    state.memory_mib = h200 ? 143771 : h100 ? 81559 : 40960;
    state.skew = skew && strcmp(skew, "1") == 0;
    const char *power = getenv("SUITE_NVML_STANDIN_POWER_W");
    state.power_mw = power && atof(power) > 0 ? (unsigned int)(atof(power) * 1000 + 0.5) : 0;
    state.mig_supported = !(mig && strcmp(mig, "unsupported") == 0);
    state.mig_current = !mig || strcmp(mig, "on") == 0 ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE;
    state.mig_pending = mig && strcmp(mig, "pending") == 0 ? NVML_DEVICE_MIG_ENABLE : state.mig_current;
    state.fail_kind[0] = '\0', state.fail_at = 0, state.gi_creations = state.ci_creations = 0;
    if (fail) {
        const char *colon = strchr(fail, ':');
        size_t n = colon ? (size_t)(colon - fail) : strlen(fail);
        snprintf(state.fail_kind, sizeof state.fail_kind, "%.*s", (int)n, fail);
        state.fail_at = colon ? atoi(colon + 1) : 0;
    }
    for (const char *p = existing; p && *p;) {
        unsigned int id = 0, start = 0;
        int used = 0;
        if (sscanf(p, "%u@%u%n", &id, &start, &used) != 2) break;
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        struct nvmlGpuInstance_st *gi = NULL;
        const standin_profile *profile = profile_by_id(id);
        if (profile && place(profile, start, 1, &gi) == NVML_SUCCESS && !memmem(p, len, ":noci", 5)) {
            struct nvmlComputeInstance_st *ci = add_compute_instance(gi, profile->compute_slices);
            if (ci) ci->busy = memmem(p, len, ":busy", 5) != NULL;
        }
        p = end ? end + 1 : NULL;
    }
}

/* ---- the NVML functions the suite resolves ------------------------------------------------ */

nvmlReturn_t nvmlInit_v2(void) {
    if (state.init_count++ == 0) configure();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
    NEED_INIT();
    state.init_count--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient Resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    NEED_INIT();
    *count = (unsigned int)state.card_count;
    return NVML_SUCCESS;
}

/* Which GPU device is (0..card_count-1), -1 when it is none of them (a MIG device, or garbage). */
static int card_of(nvmlDevice_t device) {
    for (int i = 0; i < state.card_count; i++)
        if (device == &state.cards[i]) return i;
    return -1;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    NEED_INIT();
    if (index >= (unsigned int)state.card_count || !device) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &state.cards[index];
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length) {
    NEED_INIT();
    if (card_of(device) < 0) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(name, length, "%s", state.name);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *current, unsigned int *pending) {
    NEED_INIT();
    if (!state.mig_supported) return NVML_ERROR_NOT_SUPPORTED;
    *current = state.mig_current, *pending = state.mig_pending;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int index,
                                                  nvmlGpuInstanceProfileInfo_v2_t *info) {
    NEED_MIG();  /* this driver, like some real ones, answers only with MIG mode on */
    if (info->version != nvmlGpuInstanceProfileInfo_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    for (int i = 0; i < state.profile_count; i++) {
        const standin_profile *p = &state.profiles[i];
        if (p->index != index) continue;
        unsigned int version = info->version;
        memset(info, 0, sizeof *info);
        info->version = version, info->id = p->id, info->sliceCount = p->compute_slices;
        info->instanceCount = p->max_instances, info->multiprocessorCount = sms_of(p);
        info->memorySizeMB = p->memory_mib;
        snprintf(info->name, sizeof info->name, "%s", p->name);
        return NVML_SUCCESS;
    }
    return NVML_ERROR_NOT_SUPPORTED;
}

nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int id,
                                                           nvmlGpuInstancePlacement_t *placements,
                                                           unsigned int *count) {
    NEED_INIT();  /* placements are answered regardless of MIG mode, as NVML documents */
    const standin_profile *p = profile_by_id(id);
    if (!p || !count) return NVML_ERROR_INVALID_ARGUMENT;
    if (placements && *count < p->start_count) return NVML_ERROR_INSUFFICIENT_SIZE;
    for (unsigned int k = 0; placements && k < p->start_count; k++)
        placements[k] = (nvmlGpuInstancePlacement_t){p->starts[k], p->memory_slices};
    *count = p->start_count;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *out,
                                       unsigned int *count) {
    NEED_MIG();
    unsigned int n = 0;
    for (int i = 0; i < SLOTS; i++) {
        if (!state.gi[i].live || state.gi[i].profile->id != id) continue;
        if (n == *count) return NVML_ERROR_INSUFFICIENT_SIZE;
        out[n++] = &state.gi[i];
    }
    *count = n;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *out) {
    NEED_MIG();
    for (int i = 0; i < SLOTS; i++)
        if (state.gi[i].live && state.gi[i].id == id) return *out = &state.gi[i], NVML_SUCCESS;
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gi, nvmlGpuInstanceInfo_t *info) {
    NEED_MIG();
    if (!gi || !gi->live) return NVML_ERROR_INVALID_ARGUMENT;
    *info = (nvmlGpuInstanceInfo_t){&state.cards[0], gi->id, gi->profile->id, {gi->start, gi->profile->memory_slices}};
    return NVML_SUCCESS;
}

static int injected(const char *kind, int *calls) {
    ++*calls;
    if (strcmp(state.fail_kind, "permission") == 0) return NVML_ERROR_NO_PERMISSION;
    if (strcmp(state.fail_kind, kind) == 0 && *calls == state.fail_at) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int id,
                                                      const nvmlGpuInstancePlacement_t *placement,
                                                      nvmlGpuInstance_t *out) {
    NEED_MIG();
    nvmlReturn_t st = (nvmlReturn_t)injected("gpu-instance", &state.gi_creations);
    if (st != NVML_SUCCESS) return st;
    const standin_profile *p = profile_by_id(id);
    if (!p || !placement || placement->size != p->memory_slices) return NVML_ERROR_INVALID_ARGUMENT;
    return place(p, placement->start, 0, out);
}

nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gi) {
    NEED_MIG();
    if (!gi || !gi->live) return NVML_ERROR_INVALID_ARGUMENT;
    for (int c = 0; c < SLOTS; c++)
        if (gi->ci[c].live) return NVML_ERROR_IN_USE;
    gi->live = 0;
    return NVML_SUCCESS;
}

static const unsigned int ci_slices_by_index[] = {1, 2, 3, 4, 7, 8, 6};

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gi, unsigned int index,
                                                          unsigned int engine,
                                                          nvmlComputeInstanceProfileInfo_t *info) {
    NEED_MIG();
    if (!gi || !gi->live || index > 6 || engine != NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int slices = ci_slices_by_index[index];
    if (!ci_sms_of(gi->profile, slices)) return NVML_ERROR_NOT_SUPPORTED;  /* e.g. 5c, 6c, or above the GI */
    memset(info, 0, sizeof *info);
    info->id = index, info->sliceCount = slices;  /* ids equal the indices, as on A100 and H100 */
    info->instanceCount = gi->profile->compute_slices / slices;
    info->multiprocessorCount = ci_sms_of(gi->profile, slices);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gi, unsigned int id,
                                                  nvmlComputeInstance_t *out) {
    NEED_MIG();
    nvmlReturn_t st = (nvmlReturn_t)injected("compute-instance", &state.ci_creations);
    if (st != NVML_SUCCESS) return st;
    if (!gi || !gi->live || id > 6) return NVML_ERROR_INVALID_ARGUMENT;
    if (!ci_sms_of(gi->profile, ci_slices_by_index[id])) return NVML_ERROR_NOT_SUPPORTED;
    struct nvmlComputeInstance_st *ci = add_compute_instance(gi, ci_slices_by_index[id]);
    if (!ci) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    *out = ci;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t ci, nvmlComputeInstanceInfo_t *info) {
    NEED_MIG();
    if (!ci || !ci->live) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned int profile = 0;  /* the compute instance profile id: its index, see above */
    while (profile < 6 && ci_slices_by_index[profile] != ci->slices) profile++;
    *info = (nvmlComputeInstanceInfo_t){&state.cards[0], &state.gi[ci->gi_slot], ci->id, profile, {0, ci->slices}};
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gi, unsigned int id, nvmlComputeInstance_t *out) {
    NEED_MIG();
    if (!gi || !gi->live) return NVML_ERROR_INVALID_ARGUMENT;
    for (int c = 0; c < SLOTS; c++)
        if (gi->ci[c].live && gi->ci[c].id == id) return *out = &gi->ci[c], NVML_SUCCESS;
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t ci) {
    NEED_MIG();
    if (!ci || !ci->live) return NVML_ERROR_INVALID_ARGUMENT;
    if (ci->busy || strcmp(state.fail_kind, "destroy-busy") == 0) return NVML_ERROR_IN_USE;
    ci->live = 0;
    return NVML_SUCCESS;
}

/* MIG devices, in slot order: index i is the i-th live (GPU instance, compute instance) pair. */
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int *count) {
    NEED_INIT();
    *count = 7;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t *out) {
    NEED_MIG();
    unsigned int n = 0;
    for (int g = 0; g < SLOTS; g++)
        for (int c = 0; state.gi[g].live && c < SLOTS; c++)
            if (state.gi[g].ci[c].live && n++ == index) {
                state.mig_handles[g][c] = (struct nvmlDevice_st){1, g, c};
                return *out = &state.mig_handles[g][c], NVML_SUCCESS;
            }
    return NVML_ERROR_NOT_FOUND;
}

static struct nvmlComputeInstance_st *mig_of(nvmlDevice_t device) {
    if (!device || !device->mig || !state.gi[device->gi].live) return NULL;
    struct nvmlComputeInstance_st *ci = &state.gi[device->gi].ci[device->ci];
    return ci->live ? ci : NULL;
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int *id) {
    NEED_MIG();
    if (!mig_of(device)) return NVML_ERROR_NOT_SUPPORTED;
    *id = state.gi[device->gi].id;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int *id) {
    NEED_MIG();
    struct nvmlComputeInstance_st *ci = mig_of(device);
    if (!ci) return NVML_ERROR_NOT_SUPPORTED;
    *id = ci->id;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length) {
    NEED_INIT();
    int card = card_of(device);
    if (card >= 0) return snprintf(uuid, length, "GPU-5a1e0000-0000-4000-8000-%012x", card), NVML_SUCCESS;
    struct nvmlComputeInstance_st *ci = mig_of(device);
    if (!ci) return NVML_ERROR_INVALID_ARGUMENT;
    snprintf(uuid, length, "MIG-5a1e%04x-%04x-4000-8000-%012x", state.gi[device->gi].id, ci->id,
             state.gi[device->gi].start);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory) {
    NEED_INIT();
    unsigned long long mib = state.memory_mib;
    if (card_of(device) < 0) {
        if (!mig_of(device)) return NVML_ERROR_INVALID_ARGUMENT;
        mib = state.gi[device->gi].profile->memory_mib;
    }
    *memory = (nvmlMemory_t){mib << 20, mib << 20, 0};
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int *milliwatts) {
    NEED_INIT();
    if (card_of(device) < 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (!state.power_mw) return NVML_ERROR_NOT_SUPPORTED;
    *milliwatts = state.power_mw;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long *millijoules) {
    NEED_INIT();
    if (card_of(device) < 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (!state.power_mw) return NVML_ERROR_NOT_SUPPORTED;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    *millijoules = (unsigned long long)((double)state.power_mw * ((double)now.tv_sec + now.tv_nsec * 1e-9));
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t *attributes) {
    NEED_MIG();
    struct nvmlComputeInstance_st *ci = mig_of(device);
    if (!ci) return NVML_ERROR_NOT_SUPPORTED;  /* NVML answers this for MIG devices only */
    const standin_profile *p = state.gi[device->gi].profile;
    memset(attributes, 0, sizeof *attributes);
    attributes->multiprocessorCount = ci_sms_of(p, ci->slices);
    attributes->gpuInstanceSliceCount = p->compute_slices, attributes->computeInstanceSliceCount = ci->slices;
    attributes->memorySizeMB = p->memory_mib;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count, nvmlProcessInfo_t *infos) {
    NEED_INIT();
    struct nvmlComputeInstance_st *ci = mig_of(device);
    unsigned int running = ci && ci->busy ? 1 : 0;
    if (running > *count || (running && !infos)) return *count = running, NVML_ERROR_INSUFFICIENT_SIZE;
    if (running) infos[0] = (nvmlProcessInfo_t){4242, 1ULL << 30, state.gi[device->gi].id, ci->id};
    *count = running;
    return NVML_SUCCESS;
}

/* ---- for the test: what lives, and someone else's hands ----------------------------------- */

int nvml_standin_live_gpu_instances(int foreign) {
    int n = 0;
    for (int i = 0; i < SLOTS; i++) n += state.gi[i].live && state.gi[i].foreign == foreign;
    return n;
}

int nvml_standin_live_compute_instances(void) {
    int n = 0;
    for (int i = 0; i < SLOTS; i++)
        for (int c = 0; state.gi[i].live && c < SLOTS; c++) n += state.gi[i].ci[c].live;
    return n;
}

/* Changes the injected failure (same words as SUITE_NVML_STANDIN_FAIL; "" for none). */
void nvml_standin_fail(const char *kind) {
    snprintf(state.fail_kind, sizeof state.fail_kind, "%s", kind ? kind : "");
}

/* Another user destroys GPU instance `id` (with its compute instances) and creates a 1g instance
 * at `start`; the driver hands out the lowest free id, so the new one may reuse an old id. */
unsigned int nvml_standin_replace_instance(unsigned int id, unsigned int start) {
    for (int i = 0; i < SLOTS; i++)
        if (state.gi[i].live && state.gi[i].id == id) state.gi[i].live = 0;
    struct nvmlGpuInstance_st *gi = NULL;
    if (place(&state.profiles[0], start, 1, &gi) != NVML_SUCCESS) return 0;
    add_compute_instance(gi, 1);
    return gi->id;
}
