/* MIG instances for run_suite --mode mig: every job runs alone on its own MIG device
 * (CUDA_VISIBLE_DEVICES=MIG-<uuid>), so jobs share nothing but PCIe and power - or, in a shared
 * GPU instance (layout "7g.40gb:3c+4c"), each job on a compute instance of its own, so that
 * compute is isolated and the GPU instance's memory and its bandwidth are shared.
 *
 * This is the NVML side (mig_instances.c); what a GPU can be cut into and how a mix is cut is
 * pure and lives in mig_plan.h, which this header includes. The session (mig_open ..
 * mig_destroy_created) reads the GPU's own profile table, discovers existing instances, reuses
 * idle ones that fit, creates the rest when asked (MIG mode on, root), hands each job its MIG
 * UUID, and destroys exactly what it created - also after a partial failure. MIG mode is never
 * changed here: with it off, the error names the administrator's command. */
#ifndef SUITE_MIG_H
#define SUITE_MIG_H

#include <stdio.h>

#include "runner/suite/plan/mig_plan.h"
#include "runner/suite/plan/mix.h"
#include "runner/suite/gpu/nvml.h"

/* The GPU's own table from NVML. Returns the number of profiles (0 when NVML gives none, as with
 * MIG mode off on drivers that only answer with it on), -1 on an NVML failure (reported). */
int mig_query_gpu(nvml *nv, nvmlDevice_t device, mig_gpu *out);

/* ---- session: discovery, creation, destruction (needs NVML) --------------------------------- */

typedef struct mig_device {    /* one MIG device: a GPU instance and a compute instance in it */
    unsigned int gpu_instance_id, compute_instance_id;
    unsigned int profile_id;
    int profile;               /* index into the session's gpu.profiles, -1 if not in it */
    mig_placement placement;
    unsigned long long memory_bytes;
    int sm_count;
    int ci_slices;             /* its compute instance's compute slices (0: not reported) */
    int busy;                  /* processes were running on it when discovered */
    int created;               /* made by this session */
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];  /* "MIG-..." for CUDA_VISIBLE_DEVICES */
} mig_device;

typedef struct mig_created {   /* ids, not handles: re-looked up at destruction */
    unsigned int gpu_instance_id;
    unsigned int profile_id;   /* with start: proves that the id still names our instance */
    int start;
    int gpu_instance_live;
    int ci_count;              /* compute instances made in it: one spanning it, or a shared one's */
    unsigned int compute_instance_ids[MIG_MAX_INSTANCES];
    int compute_instance_live[MIG_MAX_INSTANCES];
} mig_created;

typedef struct mig_session {
    nvml *nv;                  /* not owned */
    unsigned int gpu_index;
    nvmlDevice_t device;
    char device_name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned long long memory_mib;
    int mig_supported;
    unsigned int mig_current, mig_pending;  /* NVML_DEVICE_MIG_ENABLE / _DISABLE */
    mig_gpu gpu;               /* NVML's table, else the shipped one for this device */
    int table_from_nvml;
    int table_differences;     /* mig_compare_tables against the shipped table, when both exist */
    char table_report[1024];
    unsigned int occupied;     /* memory slices of all GPU instances found */
    int compute_used;
    int device_count;
    mig_device devices[MIG_MAX_INSTANCES];
    int created_count;
    mig_created created[MIG_MAX_INSTANCES];
    mig_plan plan;             /* one entry per job after mig_assign */
    int job_count;
    int job_device[MIX_MAX_JOBS];  /* index into devices */
} mig_session;

/* Opens GPU gpu_index: name, MIG mode, profile table, existing instances. Fails only when the
 * GPU cannot be reached; MIG being off or unsupported is recorded for mig_require_enabled. */
int mig_open(mig_session *s, nvml *nv, unsigned int gpu_index, char *err, size_t err_size);
/* 0 when MIG mode is on; else -1 with the administrator's command (never run here). */
int mig_require_enabled(const mig_session *s, char *err, size_t err_size);
/* Re-reads the GPU's instances and MIG devices (mig_open does it once). */
int mig_discover(mig_session *s, char *err, size_t err_size);
/* Gives every job a MIG device: idle existing devices that fit first, then (create != 0) new
 * instances planned in the free slices. A layout's shared GPU instance (PROFILE:Nc+Nc) is always
 * created by the run, its compute instances in it, one per job. Without create, missing instances are an error that
 * shows the plan and how to create it. On failure everything created by this call is destroyed. */
int mig_assign(mig_session *s, const mig_job *jobs, int job_count, const char *layout, int create,
               char *err, size_t err_size);
const mig_device *mig_job_device(const mig_session *s, int job);
const char *mig_job_uuid(const mig_session *s, int job);
/* Destroys every compute and GPU instance this session created and nothing else. Idempotent and
 * safe after a partial creation or on a session that created nothing; call it from cleanup paths
 * before nvml_close (not from inside a signal handler: NVML is not async-signal-safe; let the
 * handler set a flag). 0 when all are gone, else -1 with the instances left (e.g. a process
 * still runs on one) - calling again retries them. */
int mig_destroy_created(mig_session *s, char *err, size_t err_size);

#endif
