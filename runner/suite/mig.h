/* MIG for run_suite --mode mig: every job runs alone on its own MIG device
 * (CUDA_VISIBLE_DEVICES=MIG-<uuid>), so jobs share nothing but PCIe and power.
 *
 * Three layers, each usable alone:
 *  - profile tables (mig_profiles.c): what a GPU can be cut into. The GPU's own table comes from
 *    NVML; tables shipped for A100-40GB, A100-80GB, H100-80GB, H200-141GB and A30-24GB let a plan
 *    be made for a GPU that is not present, and are checked against NVML's where it is.
 *  - the planner (mig_plan_jobs): gives each job the smallest profile whose memory holds its
 *    footprint plus headroom, then places the instances on the memory slices so that they obey
 *    NVIDIA's placement rules, do not overlap, and leave the largest contiguous free space.
 *    A layout string ("1g.10gb,2g.20gb,4g.40gb", one profile per job in mix order) replaces the
 *    profile choice; placement is still searched and checked.
 *  - the session (mig_open .. mig_destroy_created): discovers existing instances through NVML,
 *    reuses idle ones that fit, creates the rest when asked (MIG mode on, root), hands each job
 *    its MIG UUID, and destroys exactly what it created - also after a partial failure.
 * MIG mode is never changed here: with it off, the error names the administrator's command. */
#ifndef SUITE_MIG_H
#define SUITE_MIG_H

#include <stdio.h>

#include "runner/suite/mix.h"
#include "runner/suite/nvml.h"

#define MIG_MAX_PROFILES 24
#define MIG_MAX_PLACEMENTS 8
#define MIG_MAX_SLICES 8       /* memory slices of the largest MIG GPU (A30: 4) */
#define MIG_MAX_INSTANCES 8    /* GPU instances on one GPU: at most 7 today */

/* Headroom. A job's footprint (from `train --dry-run --json`: the arena's parameters, gradients,
 * optimizer state and activations) leaves out the CUDA context, the cuDNN/cuBLAS handles and
 * their workspaces and the allocator's slack, and inside a MIG instance nothing can be borrowed
 * from a neighbour. A profile holds a job when
 *   profile memory >= footprint + footprint * MIG_HEADROOM_PERCENT / 100 + MIG_CONTEXT_RESERVE. */
#define MIG_HEADROOM_PERCENT 10
#define MIG_CONTEXT_RESERVE_BYTES (768ULL << 20)

typedef struct mig_placement {
    int start, size;           /* memory slices, as NVML's nvmlGpuInstancePlacement_t */
} mig_placement;

typedef struct mig_profile {
    char name[32];             /* "1g.5gb", "1g.5gb+me" */
    unsigned int id;           /* NVML GPU instance profile id (nvidia-smi mig -lgip "ID") */
    int compute_slices;        /* the "1" of 1g.5gb */
    int memory_slices;         /* placement size */
    int sm_count;
    unsigned long long memory_mib;
    int max_instances;
    int plannable;             /* 0 for +me/-me/+gfx variants: chosen only by a layout string */
    int placement_count;
    mig_placement placements[MIG_MAX_PLACEMENTS];  /* allowed (start, size), NVIDIA's rules */
} mig_profile;

typedef struct mig_gpu {
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];  /* "A100-40GB", or NVML's device name */
    int compute_slices, memory_slices;
    int total_sms;             /* SMs of the whole GPU without MIG: the base of sm_fraction */
    unsigned long long total_memory_mib;
    int profile_count;
    mig_profile profiles[MIG_MAX_PROFILES];
} mig_gpu;

/* ---- profile tables (mig_profiles.c) -------------------------------------------------------- */

/* Shipped table by name (A100-40GB, A100-80GB, H100-80GB, H200-141GB, A30-24GB; case ignored),
 * NULL when unknown. */
const mig_gpu *mig_known_gpu(const char *name);
const char *mig_known_gpu_names(void);  /* "A100-40GB | A100-80GB | ..." for messages */
/* The shipped table for an NVML device name and memory size ("NVIDIA A100-SXM4-40GB"), or NULL
 * (also for variants with other SM counts, such as H100 PCIe). */
const mig_gpu *mig_known_gpu_for_device(const char *device_name, unsigned long long memory_mib);
/* The GPU's own table from NVML. Returns the number of profiles (0 when NVML gives none, as with
 * MIG mode off on drivers that only answer with it on), -1 on an NVML failure (reported). */
int mig_query_gpu(nvml *nv, nvmlDevice_t device, mig_gpu *out);
/* Compares a shipped table with NVML's: profile names, slices, SM counts, instance counts and
 * placements must agree exactly, memory within 3% (drivers reserve slightly different amounts).
 * Writes one line per difference into report and returns how many there are. */
int mig_compare_tables(const mig_gpu *shipped, const mig_gpu *measured, char *report,
                       size_t size);
int mig_find_profile(const mig_gpu *gpu, const char *name);  /* index, or -1 */
/* A profile's allowed placements as nvidia-smi mig -lgipp writes them: "{0,2,4}:2". */
void mig_placements_text(const mig_profile *p, char *out, size_t size);

/* ---- planner -------------------------------------------------------------------------------- */

typedef struct mig_job {
    const char *label;         /* the mix's label, for messages and the printed plan */
    unsigned long long footprint_bytes;
} mig_job;

typedef struct mig_planned {
    int job;                   /* index into the jobs given to the planner */
    char label[64];
    int profile;               /* index into the plan's gpu.profiles */
    mig_placement placement;
    int existing;              /* session: index of a reused MIG device; -1: to be created */
    unsigned long long footprint_bytes, required_bytes;
    /* what --mig-emulate reproduces without MIG: */
    int sm_count;
    double sm_fraction;        /* sm_count / gpu.total_sms */
    unsigned long long memory_bytes;
} mig_planned;

typedef struct mig_plan {
    mig_gpu gpu;
    unsigned int occupied;     /* memory slices held by instances outside the plan (bit i) */
    int compute_used;          /* compute slices held by them */
    int count;
    mig_planned instances[MIG_MAX_INSTANCES];
} mig_plan;

unsigned long long mig_required_bytes(unsigned long long footprint_bytes);
/* Smallest plannable profile whose memory holds the footprint with headroom; -1 if none. */
int mig_smallest_profile(const mig_gpu *gpu, unsigned long long footprint_bytes);
/* The placement checker: every placement is one NVIDIA allows for its profile, none overlaps
 * another or the occupied slices, compute slices and per-profile instance counts stay within
 * the GPU's. 0, or -1 with the first violation in err. */
int mig_check_placements(const mig_gpu *gpu, const int *profiles, const mig_placement *placements,
                         int count, unsigned int occupied, int compute_used, char *err,
                         size_t err_size);
/* The planner. layout NULL or "": automatic profiles; else one profile name per job. occupied /
 * compute_used: slices already taken (0 on an empty GPU). 0, or -1 with the numbers in err. */
int mig_plan_jobs(mig_plan *plan, const mig_gpu *gpu, const mig_job *jobs, int job_count,
                  const char *layout, unsigned int occupied, int compute_used, char *err,
                  size_t err_size);
/* The plan as a table with placements and a slice map. */
void mig_plan_print(const mig_plan *plan, FILE *out);
/* "nvidia-smi mig -i <gpu> -cgi <ids> -C" for the instances still to create; what snprintf returns. */
int mig_plan_admin_command(const mig_plan *plan, unsigned int gpu_index, char *out, size_t size);

/* ---- session: discovery, creation, destruction (needs NVML) --------------------------------- */

typedef struct mig_device {    /* one MIG device: a GPU instance and a compute instance in it */
    unsigned int gpu_instance_id, compute_instance_id;
    unsigned int profile_id;
    int profile;               /* index into the session's gpu.profiles, -1 if not in it */
    mig_placement placement;
    unsigned long long memory_bytes;
    int sm_count;
    int busy;                  /* processes were running on it when discovered */
    int created;               /* made by this session */
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];  /* "MIG-..." for CUDA_VISIBLE_DEVICES */
} mig_device;

typedef struct mig_created {   /* ids, not handles: re-looked up at destruction */
    unsigned int gpu_instance_id, compute_instance_id;
    unsigned int profile_id;   /* with start: proves that the id still names our instance */
    int start;
    int gpu_instance_live, compute_instance_live;
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
 * instances planned in the free slices. Without create, missing instances are an error that
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
