/* MIG profile tables, pure: what a GPU can be cut into (see mig_plan.h). Shipped for A100-40GB,
 * A100-80GB, H100-80GB, H200-141GB and A30-24GB, so that a plan can be made for a GPU that is not
 * present; the session (runner/suite/gpu/mig.h) reads the GPU's own table from NVML and compares
 * it with these. */
#ifndef SUITE_MIG_PROFILES_H
#define SUITE_MIG_PROFILES_H

#include <stddef.h>

#define MIG_MAX_PROFILES 24
#define MIG_MAX_PLACEMENTS 8
#define MIG_MAX_SLICES 8       /* memory slices of the largest MIG GPU (A30: 4) */
#define MIG_MAX_INSTANCES 8    /* GPU instances on one GPU: at most 7 today */
#define MIG_NAME_MAX 96        /* NVML's device name buffer */
#define MIG_MAX_LAYOUTS 256    /* distinct layouts of one job count: ~40 on the 8-slice GPUs */

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

static inline unsigned int mig_slice_mask(mig_placement p) { return ((1u << p.size) - 1u) << p.start; }

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
    char name[MIG_NAME_MAX];   /* "A100-40GB", or NVML's device name */
    int compute_slices, memory_slices;
    int total_sms;             /* SMs of the whole GPU without MIG: the base of sm_fraction */
    unsigned long long total_memory_mib;
    int profile_count;
    mig_profile profiles[MIG_MAX_PROFILES];
    /* Compute-instance profiles (mig_profiles.c): the SMs of a compute instance of c compute slices
     * inside a larger GPU instance, 0 where there is no such profile (and for every c when the
     * table is not known: then no GPU instance can be shared). A GPU instance of g slices holds at
     * most g / c compute instances of c slices. */
    int ci_sms[MIG_MAX_SLICES + 1];
} mig_gpu;

/* Shipped table by name (A100-40GB, A100-80GB, H100-80GB, H200-141GB, A30-24GB; case ignored),
 * NULL when unknown. */
const mig_gpu *mig_known_gpu(const char *name);
const char *mig_known_gpu_names(void);  /* "A100-40GB | A100-80GB | ..." for messages */
/* The shipped table for an NVML device name and memory size ("NVIDIA A100-SXM4-40GB"), or NULL
 * (also for variants with other SM counts, such as H100 PCIe). */
const mig_gpu *mig_known_gpu_for_device(const char *device_name, unsigned long long memory_mib);
/* Compares a shipped table with NVML's: profile names, slices, SM counts, instance counts and
 * placements must agree exactly, memory within 3% (drivers reserve slightly different amounts).
 * Writes one line per difference into report and returns how many there are. */
int mig_compare_tables(const mig_gpu *shipped, const mig_gpu *measured, char *report,
                       size_t size);
int mig_find_profile(const mig_gpu *gpu, const char *name);          /* index, or -1 */
/* SMs of a compute instance of `slices` compute slices in a GPU instance of `profile`: the
 * profile's own when it spans it, else the table's; 0 when the GPU has no such compute instance. */
int mig_ci_sms(const mig_gpu *gpu, int profile, int slices);
/* nvidia-smi's name of that compute-instance profile: "3c.7g.40gb", or the profile's own name
 * when it spans the GPU instance. */
void mig_ci_name(const mig_gpu *gpu, int profile, int slices, char *out, size_t size);
int mig_profile_by_id(const mig_gpu *gpu, unsigned int profile_id);  /* index, or -1 */
/* A profile's allowed placements as nvidia-smi mig -lgipp writes them: "{0,2,4}:2". */
void mig_placements_text(const mig_profile *p, char *out, size_t size);
unsigned long long mig_profile_bytes(const mig_profile *p);
/* The shipped tables one by one: i from 0; NULL past the last. */
const mig_gpu *mig_known_gpu_at(int i);

#endif
