/* MIG instance management through NVML (see mig.h): the GPU's own profile table, discovery of
 * existing instances, creation of planned ones and destruction of exactly what was created.
 * Planning itself is mig_plan.c's; this file only calls it. */
#define _GNU_SOURCE
#include "runner/suite/gpu/mig.h"
#include "base/error.h"

#include <stdlib.h>
#include <string.h>



/* "MIG 1g.5gb+me" -> "1g.5gb+me"; the variants with media engines or graphics are left to
 * layout strings: they cost the same slices and are limited to one instance. */
static void set_profile_name(mig_profile *p, const char *nvml_name) {
    if (strncmp(nvml_name, "MIG ", 4) == 0) nvml_name += 4;
    snprintf(p->name, sizeof p->name, "%.*s", (int)sizeof p->name - 1, nvml_name);
    size_t n = strlen(p->name);
    p->plannable = !strchr(p->name, '+') && !(n > 3 && strcmp(p->name + n - 3, "-me") == 0);
}

int mig_query_gpu(nvml *nv, nvmlDevice_t device, mig_gpu *out) {
    memset(out, 0, sizeof *out);
    for (unsigned int index = 0; index < NVML_GPU_INSTANCE_PROFILE_COUNT; index++) {
        if (out->profile_count == MIG_MAX_PROFILES) break;
        mig_profile *p = &out->profiles[out->profile_count];
        nvmlGpuInstanceProfileInfo_v2_t info = {.version = nvmlGpuInstanceProfileInfo_v2};
        nvmlReturn_t st;
        if (nv->nvmlDeviceGetGpuInstanceProfileInfoV) {
            st = nv->nvmlDeviceGetGpuInstanceProfileInfoV(device, index, &info);
        } else {
            /* Drivers before the versioned query: v1 has no name, so it is made up as
             * nvidia-smi shows it, from the slices and the memory rounded up to GB. */
            nvmlGpuInstanceProfileInfo_t v1;
            st = nv->nvmlDeviceGetGpuInstanceProfileInfo
                     ? nv->nvmlDeviceGetGpuInstanceProfileInfo(device, index, &v1)
                     : NVML_ERROR_FUNCTION_NOT_FOUND;
            if (st == NVML_SUCCESS) {
                info.id = v1.id, info.sliceCount = v1.sliceCount;
                info.instanceCount = v1.instanceCount, info.memorySizeMB = v1.memorySizeMB;
                info.multiprocessorCount = v1.multiprocessorCount;
                snprintf(info.name, sizeof info.name, "%ug.%llugb%s", v1.sliceCount,
                         (v1.memorySizeMB + 1023) / 1024,
                         index == NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 ? "+me" : "");
            }
        }
        /* Profiles this GPU lacks answer NOT_SUPPORTED (INVALID_ARGUMENT on older drivers for
         * indices they do not know); with MIG off some drivers answer NOT_SUPPORTED for all. */
        if (st == NVML_ERROR_NOT_SUPPORTED || st == NVML_ERROR_INVALID_ARGUMENT) continue;
        if (nvml_check(nv, st, NVML_SUCCESS, "nvmlDeviceGetGpuInstanceProfileInfoV(profile index)",
                       __FILE__, __LINE__) != NVML_SUCCESS)
            return -1;
        set_profile_name(p, info.name);
        p->id = info.id;
        p->compute_slices = (int)info.sliceCount;
        p->sm_count = (int)info.multiprocessorCount;
        p->memory_mib = info.memorySizeMB;
        p->max_instances = (int)info.instanceCount;

        nvmlGpuInstancePlacement_t placements[MIG_MAX_PLACEMENTS];
        unsigned int count = 0;
        if (NVML_CALL(nv, nvmlDeviceGetGpuInstancePossiblePlacements_v2, (device, p->id, NULL, &count)) !=
            NVML_SUCCESS)
            return -1;
        if (count > MIG_MAX_PLACEMENTS) count = MIG_MAX_PLACEMENTS;
        if (count &&
            NVML_CALL(nv, nvmlDeviceGetGpuInstancePossiblePlacements_v2, (device, p->id, placements, &count)) !=
                NVML_SUCCESS)
            return -1;
        if (count == 0) continue;  /* a profile nothing can be placed for is no use to a plan */
        p->placement_count = (int)count;
        for (unsigned int k = 0; k < count; k++) {
            p->placements[k] = (mig_placement){(int)placements[k].start, (int)placements[k].size};
            int end = p->placements[k].start + p->placements[k].size;
            if (end > out->memory_slices) out->memory_slices = end;
        }
        p->memory_slices = p->placements[0].size;
        if (p->compute_slices > out->compute_slices) out->compute_slices = p->compute_slices;
        /* The whole-GPU SM count is not queryable here; the largest profile stands in until the
         * caller sets it (mig_open takes it from the shipped table when the GPU is known). */
        if (p->sm_count > out->total_sms) out->total_sms = p->sm_count;
        if (p->memory_mib > out->total_memory_mib) out->total_memory_mib = p->memory_mib;
        out->profile_count++;
    }
    if (out->memory_slices > MIG_MAX_SLICES || out->compute_slices > MIG_MAX_SLICES) {
        snprintf(nv->last_error, sizeof nv->last_error,
                 "NVML reports %d memory and %d compute slices; this build plans for at most %d",
                 out->memory_slices, out->compute_slices, MIG_MAX_SLICES);
        return -1;
    }
    return out->profile_count;
}

/* ---- the session: NVML discovery, creation, destruction ------------------------------------- */

int mig_require_enabled(const mig_session *s, char *err, size_t err_size) {
    if (!s->mig_supported)
        return error_set(err, err_size, "GPU %u (%s) does not support MIG; MIG needs an A100, A30, "
                    "H100, H200 or a newer data-centre GPU. Use --mode mps or naive on this GPU.",
                    s->gpu_index, s->device_name);
    if (s->mig_current != NVML_DEVICE_MIG_ENABLE)
        return error_set(err, err_size, "MIG mode is off on GPU %u (%s)%s. MIG mode is the "
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
        return error_set(err, err_size, "cannot count GPUs: %s", nv->last_error);
    if (gpu_index >= count)
        return error_set(err, err_size, "GPU %u does not exist: NVML sees %u GPU(s)", gpu_index, count);
    if (NVML_CALL(nv, nvmlDeviceGetHandleByIndex_v2, (gpu_index, &s->device)) != NVML_SUCCESS)
        return error_set(err, err_size, "cannot open GPU %u: %s", gpu_index, nv->last_error);
    if (NVML_CALL(nv, nvmlDeviceGetName, (s->device, s->device_name, sizeof s->device_name)))
        snprintf(s->device_name, sizeof s->device_name, "GPU %u", gpu_index);
    nvmlMemory_t memory;
    if (NVML_CALL(nv, nvmlDeviceGetMemoryInfo, (s->device, &memory)) == NVML_SUCCESS)
        s->memory_mib = memory.total >> 20;
    nvmlReturn_t st = NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_SUPPORTED, nvmlDeviceGetMigMode,
                                       (s->device, &s->mig_current, &s->mig_pending));
    if (st != NVML_SUCCESS && st != NVML_ERROR_NOT_SUPPORTED)
        return error_set(err, err_size, "cannot read the MIG mode of GPU %u: %s", gpu_index, nv->last_error);
    s->mig_supported = st == NVML_SUCCESS;

    const mig_gpu *known = mig_known_gpu_for_device(s->device_name, s->memory_mib);
    int profiles = s->mig_supported ? mig_query_gpu(nv, s->device, &s->gpu) : 0;
    if (profiles < 0)
        return error_set(err, err_size, "cannot read the MIG profile table of GPU %u (%s): %s", gpu_index,
                    s->device_name, nv->last_error);
    if (profiles > 0) {  /* the GPU's own table rules; the shipped one is only checked against it */
        s->table_from_nvml = 1;
        snprintf(s->gpu.name, sizeof s->gpu.name, "%s", s->device_name);
        if (s->memory_mib) s->gpu.total_memory_mib = s->memory_mib;
        if (known) {
            s->gpu.total_sms = known->total_sms;
            /* NVML lists compute-instance profiles only inside a GPU instance: the shipped ones plan */
            memcpy(s->gpu.ci_sms, known->ci_sms, sizeof s->gpu.ci_sms);
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

int mig_discover(mig_session *s, char *err, size_t err_size) {
    nvml *nv = s->nv;
    s->device_count = 0, s->occupied = 0, s->compute_used = 0;
    /* Every GPU instance holds its slices, also one without compute instances (no MIG device). */
    for (int i = 0; i < s->gpu.profile_count; i++) {
        nvmlGpuInstance_t instances[MIG_MAX_INSTANCES];
        unsigned int count = MIG_MAX_INSTANCES;
        if (NVML_CALL(nv, nvmlDeviceGetGpuInstances, (s->device, s->gpu.profiles[i].id, instances, &count)))
            return error_set(err, err_size, "cannot list the GPU instances of GPU %u: %s", s->gpu_index, nv->last_error);
        for (unsigned int k = 0; k < count && k < MIG_MAX_INSTANCES; k++) {
            nvmlGpuInstanceInfo_t info;
            if (NVML_CALL(nv, nvmlGpuInstanceGetInfo, (instances[k], &info)))
                return error_set(err, err_size, "cannot read a GPU instance: %s", nv->last_error);
            s->occupied |= mig_slice_mask((mig_placement){(int)info.placement.start, (int)info.placement.size});
            s->compute_used += s->gpu.profiles[i].compute_slices;
        }
    }
    unsigned int max = 0;
    if (NVML_CALL(nv, nvmlDeviceGetMaxMigDeviceCount, (s->device, &max)))
        return error_set(err, err_size, "cannot count MIG devices: %s", nv->last_error);
    for (unsigned int i = 0; i < max && s->device_count < MIG_MAX_INSTANCES; i++) {
        nvmlDevice_t mig;
        nvmlReturn_t st = NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_FOUND, nvmlDeviceGetMigDeviceHandleByIndex,
                                           (s->device, i, &mig));
        if (st == NVML_ERROR_NOT_FOUND) continue;
        if (st) return error_set(err, err_size, "cannot open MIG device %u: %s", i, nv->last_error);
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
            return error_set(err, err_size, "cannot read MIG device %u: %s", i, nv->last_error);
        d->profile_id = info.profileId;
        d->profile = mig_profile_by_id(&s->gpu, info.profileId);
        d->placement = (mig_placement){(int)info.placement.start, (int)info.placement.size};
        d->memory_bytes = memory.total;
        d->sm_count = d->profile >= 0 ? s->gpu.profiles[d->profile].sm_count : 0;
        nvmlDeviceAttributes_t attributes;
        if (nv->nvmlDeviceGetAttributes_v2 &&
            NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_SUPPORTED, nvmlDeviceGetAttributes_v2, (mig, &attributes)) == NVML_SUCCESS)
            d->sm_count = (int)attributes.multiprocessorCount,  /* the compute instance's own */
            d->ci_slices = (int)attributes.computeInstanceSliceCount;
        if (nv->nvmlDeviceGetComputeRunningProcesses_v3) {  /* with NULL: count only */
            unsigned int processes = 0;
            st = NVML_CALL_EXPECT(nv, NVML_ERROR_INSUFFICIENT_SIZE, nvmlDeviceGetComputeRunningProcesses_v3,
                                  (mig, &processes, NULL));
            d->busy = st == NVML_ERROR_INSUFFICIENT_SIZE || (st == NVML_SUCCESS && processes > 0);
        }
        for (int c = 0; c < s->created_count; c++)
            for (int k = 0; k < s->created[c].ci_count; k++)
                d->created |= s->created[c].compute_instance_live[k] &&
                              s->created[c].gpu_instance_id == d->gpu_instance_id &&
                              s->created[c].compute_instance_ids[k] == d->compute_instance_id;
        s->device_count++;
    }
    return 0;
}

static int created_live(const mig_created *c) {
    int live = c->gpu_instance_live;
    for (int k = 0; k < c->ci_count; k++) live |= c->compute_instance_live[k];
    return live;
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
        if (!created_live(c)) continue;
        nvmlGpuInstance_t gi;
        nvmlGpuInstanceInfo_t info;
        nvmlReturn_t st = NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_FOUND, nvmlDeviceGetGpuInstanceById,
                                           (s->device, c->gpu_instance_id, &gi));
        if (st == NVML_SUCCESS) st = NVML_CALL(nv, nvmlGpuInstanceGetInfo, (gi, &info));
        if (st == NVML_ERROR_NOT_FOUND ||
            (st == NVML_SUCCESS && (info.profileId != c->profile_id || info.placement.start != (unsigned)c->start))) {
            c->gpu_instance_live = 0;  /* gone, or no longer ours */
            for (int k = 0; k < c->ci_count; k++) c->compute_instance_live[k] = 0;
            continue;
        }
        /* a GPU instance goes only once every compute instance in it is gone, newest first */
        for (int k = c->ci_count - 1; st == NVML_SUCCESS && k >= 0; k--) {
            if (!c->compute_instance_live[k]) continue;
            nvmlComputeInstance_t ci;
            st = NVML_CALL_EXPECT(nv, NVML_ERROR_NOT_FOUND, nvmlGpuInstanceGetComputeInstanceById,
                                  (gi, c->compute_instance_ids[k], &ci));
            if (st == NVML_SUCCESS) st = NVML_CALL(nv, nvmlComputeInstanceDestroy, (ci));
            if (st == NVML_SUCCESS || st == NVML_ERROR_NOT_FOUND) c->compute_instance_live[k] = 0, st = NVML_SUCCESS;
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
        return error_set(err, err_size, "%d MIG instance(s) created by this run could not be destroyed: %s. "
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

/* One GPU instance at the planned placement and its compute instances (one spanning it, or one
 * per job of a shared one: ci_slices each), each recorded the moment it exists so that a later
 * failure can undo it. The failing NVML status, if any. */
static nvmlReturn_t create_instance(mig_session *s, const mig_planned *planned, const int *ci_slices, int ci_count) {
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
    for (int k = 0; k < ci_count; k++) {
        nvmlComputeInstanceProfileInfo_t ci_profile;
        nvmlComputeInstance_t ci;
        nvmlComputeInstanceInfo_t ci_info;
        int ci_index = compute_profile_index(ci_slices[k]);
        if (ci_index < 0) {
            snprintf(nv->last_error, sizeof nv->last_error, "no compute instance profile of %d compute slices",
                     ci_slices[k]);
            return NVML_ERROR_NOT_SUPPORTED;
        }
        /* NVML's own profile (id, slices) for this GPU instance: a wrong shipped table fails here */
        if ((st = NVML_CALL(nv, nvmlGpuInstanceGetComputeInstanceProfileInfo,
                            (gi, (unsigned)ci_index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &ci_profile))) ||
            (st = NVML_CALL(nv, nvmlGpuInstanceCreateComputeInstance, (gi, ci_profile.id, &ci))))
            return st;
        if ((st = NVML_CALL(nv, nvmlComputeInstanceGetInfo_v2, (ci, &ci_info)))) {
            NVML_CALL(nv, nvmlComputeInstanceDestroy, (ci));
            return st;
        }
        c->compute_instance_ids[c->ci_count] = ci_info.id, c->compute_instance_live[c->ci_count++] = 1;
    }
    return NVML_SUCCESS;
}

int mig_assign(mig_session *s, const mig_job *jobs, int job_count, const char *layout, int create,
               char *err, size_t err_size) {
    s->job_count = 0;
    if (mig_require_enabled(s, err, err_size)) return -1;
    if (s->gpu.profile_count == 0)
        return error_set(err, err_size, "no MIG profile table for %s: NVML gave none and the suite ships "
                    "tables for %s only", s->device_name, mig_known_gpu_names());
    if (job_count <= 0 || job_count > s->gpu.compute_slices)
        return error_set(err, err_size, "%d jobs need a MIG instance each; %s holds at most %d", job_count,
                    s->gpu.name, s->gpu.compute_slices);
    if (mig_discover(s, err, err_size)) return -1;
    int live = 0;  /* forget records of instances already destroyed */
    for (int c = 0; c < s->created_count; c++)
        if (created_live(&s->created[c])) s->created[live++] = s->created[c];
    s->created_count = live;
    mig_slot slots[MIX_MAX_JOBS];
    int use_layout = layout && *layout;
    if (use_layout && mig_parse_slots(&s->gpu, layout, job_count, slots, err, err_size)) return -1;

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
        if (use_layout && slots[j].ci_slices) continue;  /* a shared GPU instance is made whole */
        for (int d = 0; d < s->device_count; d++) {
            const mig_device *dev = &s->devices[d];
            int fits = use_layout ? dev->profile == slots[j].profile
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
        if (use_layout) {  /* a shared GPU instance's jobs are all here, one after another */
            int more = rest_count > 1 && slots[j].ci_slices && slots[rest_job[rest_count - 2]].ci_slices &&
                       slots[rest_job[rest_count - 2]].gpu_instance == slots[j].gpu_instance;
            int n = more ? snprintf(rest_layout + used, used < sizeof rest_layout ? sizeof rest_layout - used : 0,
                                    "+%dc", slots[j].ci_slices)
                         : snprintf(rest_layout + used, used < sizeof rest_layout ? sizeof rest_layout - used : 0,
                                    "%s%s", used ? "," : "", s->gpu.profiles[slots[j].profile].name);
            if (n > 0) used += (size_t)n;
            if (!more && slots[j].ci_slices && (n = snprintf(rest_layout + used, used < sizeof rest_layout
                                                                 ? sizeof rest_layout - used : 0, ":%dc",
                                                             slots[j].ci_slices)) > 0)
                used += (size_t)n;
        }
    }
    mig_plan new_plan = {0};
    if (rest_count) {
        char why[1024];
        if (mig_plan_jobs(&new_plan, &s->gpu, rest, rest_count, use_layout ? rest_layout : NULL, s->occupied,
                          s->compute_used, why, sizeof why))
            return error_set(err, err_size, "%d of %d jobs found no idle MIG instance that holds them (%d "
                        "exist, %d busy), and new ones cannot be placed: %s", rest_count, job_count,
                        s->device_count, busy, why);
        for (int k = 0; k < new_plan.count; k++) new_plan.instances[k].job = rest_job[new_plan.instances[k].job];
        if (!create) {
            char *text = NULL, command[160];
            size_t text_size = 0;
            FILE *f = open_memstream(&text, &text_size);
            if (f) mig_plan_print(&new_plan, f), fclose(f);
            mig_plan_admin_command(&new_plan, s->gpu_index, command, sizeof command);
            error_set(err, err_size, "%d of %d jobs have no idle MIG instance that holds them. This plan "
                 "would create them:\n%sEnable MIG creation in run_suite (needs root), or have an "
                 "administrator run: sudo %s", rest_count, job_count, text ? text : "", command);
            free(text);
            return -1;
        }
        /* one GPU instance at a time, with its compute instances (one per job of a shared one) */
        int first_created = s->created_count, created_of[MIG_MAX_INSTANCES], ci_of[MIG_MAX_INSTANCES];
        int instances = 0;
        for (int k = 0; k < new_plan.count; k++) instances = new_plan.instances[k].gpu_instance + 1 > instances
                                                                 ? new_plan.instances[k].gpu_instance + 1 : instances;
        for (int u = 0; u < instances; u++) {
            int slices[MIG_MAX_INSTANCES], count = 0, first = -1;
            for (int k = 0; k < new_plan.count; k++)
                if (new_plan.instances[k].gpu_instance == u) {
                    if (first < 0) first = k;
                    created_of[k] = s->created_count, ci_of[k] = count;
                    slices[count++] = new_plan.instances[k].ci_slices;
                }
            if (first < 0) continue;
            if (s->created_count == MIG_MAX_INSTANCES)  /* created earlier and never destroyed */
                return error_set(err, err_size, "this session already holds %d instances; destroy them first",
                            s->created_count);
            nvmlReturn_t st = create_instance(s, &new_plan.instances[first], slices, count);
            if (st == NVML_SUCCESS) continue;
            const mig_planned *p = &new_plan.instances[first];
            char cause[sizeof s->nv->last_error], undo[512] = "";
            snprintf(cause, sizeof cause, "%s", s->nv->last_error);
            int undone = destroy_created_from(s, first_created, undo, sizeof undo) == 0;
            return error_set(err, err_size, "creating MIG instance %d of %d (%s at memory slices %d..%d for job "
                        "%d \"%s\"%s) failed: %s%s; %s", u + 1, instances, s->gpu.profiles[p->profile].name,
                        p->placement.start, p->placement.start + p->placement.size - 1, p->job,
                        p->label, count > 1 ? " and the jobs sharing it, on compute instances of their own" : "",
                        cause,
                        st == NVML_ERROR_NO_PERMISSION
                            ? " (creating MIG instances needs root, or the nvidia-caps MIG config capability)" : "",
                        undone ? "everything created before it was destroyed" : undo);
        }
        int missing = mig_discover(s, err, err_size) ? -1 : 0;
        for (int k = 0; !missing && k < new_plan.count; k++) {
            const mig_created *c = &s->created[created_of[k]];
            for (int d = 0; d < s->device_count; d++)
                if (s->devices[d].gpu_instance_id == c->gpu_instance_id &&
                    s->devices[d].compute_instance_id == c->compute_instance_ids[ci_of[k]])
                    s->job_device[new_plan.instances[k].job] = d;
            if (s->job_device[new_plan.instances[k].job] < 0) {
                missing = 1;
                error_set(err, err_size, "created GPU instance %u, but NVML shows no MIG device for it",
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
        p->gpu_instance = (int)d->gpu_instance_id;
        p->ci_slices = d->ci_slices ? d->ci_slices : d->profile >= 0 ? s->gpu.profiles[d->profile].compute_slices : 0;
        for (int k = 0; k < job_count; k++)  /* another job's compute instance in the same GPU instance */
            p->shared |= k != j && s->devices[s->job_device[k]].gpu_instance_id == d->gpu_instance_id;
        p->footprint_bytes = jobs[j].footprint_bytes, p->required_bytes = mig_required_bytes(jobs[j].footprint_bytes);
        p->sm_count = d->sm_count, p->memory_bytes = d->memory_bytes;
        p->sm_fraction = s->gpu.total_sms > 0 ? (double)d->sm_count / s->gpu.total_sms : 0.0;
        ours |= mig_slice_mask(d->placement);
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
