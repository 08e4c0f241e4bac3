/* NVML, loaded at run time. The suite's binaries must run where the NVIDIA driver (and so
 * libnvidia-ml.so.1) is absent, and no nvml.h is installed here, so this header declares the
 * few NVML types the runner uses with NVML's exact ABI (names, values and layouts as in NVIDIA's
 * nvml.h, API version 12/13), and a handle that holds one function pointer per NVML entry point.
 * nvml_open() dlopens the library (path: argument, else $SUITE_NVML_LIBRARY, else
 * "libnvidia-ml.so.1"), resolves the symbols and calls nvmlInit_v2; it returns NULL with the
 * reason when any of that fails. Functions an old driver lacks stay NULL; NVML_CALL then yields
 * NVML_ERROR_FUNCTION_NOT_FOUND instead of crashing. No globals: every caller owns its handle. */
#ifndef SUITE_NVML_H
#define SUITE_NVML_H

#include <stddef.h>

#ifdef NVML_API_VERSION
#error "runner/suite/gpu/nvml.h declares NVML itself; do not include NVIDIA's nvml.h in the same file"
#endif

/* ---- constants, enums and structs: exactly NVIDIA's ---------------------------------------- */

typedef enum nvmlReturn_enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
    NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;

#define NVML_DEVICE_NAME_BUFFER_SIZE 64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_BUFFER_SIZE 80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

/* Versioned structs carry sizeof | version << 24 in their first field. */
#define NVML_STRUCT_VERSION(data, ver) \
    (unsigned int)(sizeof(nvml##data##_v##ver##_t) | ((unsigned int)(ver) << 24U))

typedef struct nvmlUtilization_st {
    unsigned int gpu;     /* % of the sample period with a kernel running */
    unsigned int memory;  /* % of the sample period with device memory being read or written */
} nvmlUtilization_t;

typedef struct nvmlMemory_st {  /* v1: bytes */
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct nvmlProcessInfo_v2_st {  /* what nvmlDeviceGetComputeRunningProcesses_v3 fills */
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;         /* 0xFFFFFFFF without MIG */
    unsigned int computeInstanceId;
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

typedef struct nvmlDeviceAttributes_st {  /* nvmlDeviceGetAttributes_v2: MIG device handles */
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
    unsigned int gpuInstanceSliceCount;
    unsigned int computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

typedef enum nvmlPcieUtilCounter_enum {
    NVML_PCIE_UTIL_TX_BYTES = 0,  /* KB/s over the last 20 ms */
    NVML_PCIE_UTIL_RX_BYTES = 1,
    NVML_PCIE_UTIL_COUNT
} nvmlPcieUtilCounter_t;

typedef enum nvmlClockType_enum {
    NVML_CLOCK_GRAPHICS = 0,
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
    NVML_CLOCK_VIDEO = 3,
    NVML_CLOCK_COUNT
} nvmlClockType_t;

typedef enum nvmlTemperatureSensors_enum {
    NVML_TEMPERATURE_GPU = 0  /* the die; NVIDIA's enum has more sensors, not used here */
} nvmlTemperatureSensors_t;

/* ---- MIG ---------------------------------------------------------------------------------- */

#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE 0x1

/* Profile *indices* passed to nvmlDeviceGetGpuInstanceProfileInfo*; the info they return holds
 * the profile *id* (19, 14, 9, 5, 0, ... as nvidia-smi mig -lgip prints) that creation takes. */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7  /* +me: with media engines */
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9  /* one compute slice, two memory slices */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX 0x0A
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX 0x0B
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX 0x0C
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME 0x0D
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME 0x0E
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0x0F
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX 0x11
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x12

#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x9
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0

typedef struct nvmlGpuInstancePlacement_st {
    unsigned int start;  /* first occupied memory slice */
    unsigned int size;   /* memory slices occupied */
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;           /* compute slices ("3" in 3g.20gb) */
    unsigned int instanceCount;        /* most instances of this profile at once */
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;   /* MiB */
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceProfileInfo_v2_st {
    unsigned int version;              /* nvmlGpuInstanceProfileInfo_v2 */
    unsigned int id;
    unsigned int isP2pSupported;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];  /* "MIG 1g.5gb" */
} nvmlGpuInstanceProfileInfo_v2_t;
#define nvmlGpuInstanceProfileInfo_v2 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2)

typedef struct nvmlGpuInstanceProfileInfo_v3_st {
    unsigned int version;              /* nvmlGpuInstanceProfileInfo_v3 */
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int copyEngineCount;
    unsigned int decoderCount;
    unsigned int encoderCount;
    unsigned int jpegCount;
    unsigned int ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned int capabilities;
} nvmlGpuInstanceProfileInfo_v3_t;
#define nvmlGpuInstanceProfileInfo_v3 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 3)

typedef struct nvmlGpuInstanceInfo_st {
    nvmlDevice_t device;
    unsigned int id;
    unsigned int profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct nvmlComputeInstancePlacement_st {
    unsigned int start;  /* first compute slice within the GPU instance */
    unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
    unsigned int id;
    unsigned int sliceCount;
    unsigned int instanceCount;
    unsigned int multiprocessorCount;
    unsigned int sharedCopyEngineCount;
    unsigned int sharedDecoderCount;
    unsigned int sharedEncoderCount;
    unsigned int sharedJpegCount;
    unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct nvmlComputeInstanceInfo_st {
    nvmlDevice_t device;
    nvmlGpuInstance_t gpuInstance;
    unsigned int id;
    unsigned int profileId;
    nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

/* ---- GPM (Hopper and newer): SM activity, occupancy, DRAM bandwidth between two samples ---- */

typedef enum {
    NVML_GPM_METRIC_GRAPHICS_UTIL = 1,    /* % of time any context was active */
    NVML_GPM_METRIC_SM_UTIL = 2,          /* SM activity: % of SMs busy (DCGM's sm_active) */
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,     /* % of warps resident vs the theoretical maximum */
    NVML_GPM_METRIC_INTEGER_UTIL = 4,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
    NVML_GPM_METRIC_DFMA_TENSOR_UTIL = 6,
    NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
    NVML_GPM_METRIC_DMMA_TENSOR_UTIL = 8,
    NVML_GPM_METRIC_IMMA_TENSOR_UTIL = 9,
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10,    /* % of peak DRAM bandwidth */
    NVML_GPM_METRIC_FP64_UTIL = 11,
    NVML_GPM_METRIC_FP32_UTIL = 12,
    NVML_GPM_METRIC_FP16_UTIL = 13,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20, /* MiB/s */
    NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
} nvmlGpmMetricId_t;

/* The metrics array is the last member and NVML reads and writes only numMetrics entries, so an
 * array shorter than a newer header's (CUDA 13 declares 477) keeps the ABI; 98 is CUDA 12's. */
#define NVML_GPM_METRIC_MAX 98
#define NVML_GPM_METRICS_GET_VERSION 1
#define NVML_GPM_SUPPORT_VERSION 1

typedef struct {
    unsigned int metricId;   /* in: an nvmlGpmMetricId_t */
    nvmlReturn_t nvmlReturn; /* out: value is valid only when NVML_SUCCESS */
    double value;
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo;
} nvmlGpmMetric_t;

typedef struct {
    unsigned int version;    /* NVML_GPM_METRICS_GET_VERSION */
    unsigned int numMetrics;
    nvmlGpmSample_t sample1; /* two samples at least 100 ms apart */
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

typedef struct {
    unsigned int version;    /* NVML_GPM_SUPPORT_VERSION */
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;

/* ---- entry points ---------------------------------------------------------------------------
 * X(return type, NVML symbol, parameter list). Each becomes a function pointer type
 * <symbol>_fn and a member of struct nvml with the symbol's own name. The first five are
 * required (nvml_open fails without them); the others stay NULL where the driver lacks them. */
#define NVML_REQUIRED_FUNCTIONS(X)                                                                \
    X(nvmlReturn_t, nvmlInit_v2, (void))                                                          \
    X(nvmlReturn_t, nvmlShutdown, (void))                                                         \
    X(const char *, nvmlErrorString, (nvmlReturn_t result))                                       \
    X(nvmlReturn_t, nvmlDeviceGetCount_v2, (unsigned int *deviceCount))                           \
    X(nvmlReturn_t, nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device))

#define NVML_OPTIONAL_FUNCTIONS(X)                                                                \
    X(nvmlReturn_t, nvmlSystemGetDriverVersion, (char *version, unsigned int length))             \
    X(nvmlReturn_t, nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length))    \
    X(nvmlReturn_t, nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length))    \
    X(nvmlReturn_t, nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t *memory))         \
    X(nvmlReturn_t, nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t *u))   \
    X(nvmlReturn_t, nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int *milliwatts))     \
    X(nvmlReturn_t, nvmlDeviceGetTotalEnergyConsumption,                                          \
      (nvmlDevice_t device, unsigned long long *millijoules))                                     \
    X(nvmlReturn_t, nvmlDeviceGetPcieThroughput,                                                  \
      (nvmlDevice_t device, nvmlPcieUtilCounter_t counter, unsigned int *kb_per_s))               \
    X(nvmlReturn_t, nvmlDeviceGetClockInfo,                                                       \
      (nvmlDevice_t device, nvmlClockType_t type, unsigned int *mhz))                             \
    X(nvmlReturn_t, nvmlDeviceGetMaxClockInfo,                                                    \
      (nvmlDevice_t device, nvmlClockType_t type, unsigned int *mhz))                             \
    X(nvmlReturn_t, nvmlDeviceGetTemperature,                                                     \
      (nvmlDevice_t device, nvmlTemperatureSensors_t sensor, unsigned int *celsius))              \
    X(nvmlReturn_t, nvmlDeviceGetComputeRunningProcesses_v3,                                      \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos))                   \
    X(nvmlReturn_t, nvmlDeviceGetAttributes_v2,                                                   \
      (nvmlDevice_t device, nvmlDeviceAttributes_t *attributes))                                  \
    X(nvmlReturn_t, nvmlDeviceGetMigMode,                                                         \
      (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode))                \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstanceProfileInfo,                                          \
      (nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t *info))            \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstanceProfileInfoV,                                         \
      (nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info))         \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstancePossiblePlacements_v2,                                \
      (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,       \
       unsigned int *count))                                                                      \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstanceRemainingCapacity,                                    \
      (nvmlDevice_t device, unsigned int profileId, unsigned int *count))                         \
    X(nvmlReturn_t, nvmlDeviceCreateGpuInstance,                                                  \
      (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstance))              \
    X(nvmlReturn_t, nvmlDeviceCreateGpuInstanceWithPlacement,                                     \
      (nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,  \
       nvmlGpuInstance_t *gpuInstance))                                                           \
    X(nvmlReturn_t, nvmlGpuInstanceDestroy, (nvmlGpuInstance_t gpuInstance))                      \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstances,                                                    \
      (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstances,              \
       unsigned int *count))                                                                      \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstanceById,                                                 \
      (nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance))                     \
    X(nvmlReturn_t, nvmlGpuInstanceGetInfo,                                                       \
      (nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info))                               \
    X(nvmlReturn_t, nvmlGpuInstanceGetComputeInstanceProfileInfo,                                 \
      (nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,              \
       nvmlComputeInstanceProfileInfo_t *info))                                                   \
    X(nvmlReturn_t, nvmlGpuInstanceCreateComputeInstance,                                         \
      (nvmlGpuInstance_t gpuInstance, unsigned int profileId,                                     \
       nvmlComputeInstance_t *computeInstance))                                                   \
    X(nvmlReturn_t, nvmlGpuInstanceCreateComputeInstanceWithPlacement,                            \
      (nvmlGpuInstance_t gpuInstance, unsigned int profileId,                                     \
       const nvmlComputeInstancePlacement_t *placement, nvmlComputeInstance_t *computeInstance))  \
    X(nvmlReturn_t, nvmlComputeInstanceDestroy, (nvmlComputeInstance_t computeInstance))          \
    X(nvmlReturn_t, nvmlComputeInstanceGetInfo_v2,                                                \
      (nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info))                   \
    X(nvmlReturn_t, nvmlGpuInstanceGetComputeInstances,                                           \
      (nvmlGpuInstance_t gpuInstance, unsigned int profileId,                                     \
       nvmlComputeInstance_t *computeInstances, unsigned int *count))                             \
    X(nvmlReturn_t, nvmlGpuInstanceGetComputeInstanceById,                                        \
      (nvmlGpuInstance_t gpuInstance, unsigned int id, nvmlComputeInstance_t *computeInstance))   \
    X(nvmlReturn_t, nvmlDeviceIsMigDeviceHandle, (nvmlDevice_t device, unsigned int *isMig))      \
    X(nvmlReturn_t, nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int *id))          \
    X(nvmlReturn_t, nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int *id))      \
    X(nvmlReturn_t, nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int *count))   \
    X(nvmlReturn_t, nvmlDeviceGetMigDeviceHandleByIndex,                                          \
      (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice))                         \
    X(nvmlReturn_t, nvmlDeviceGetDeviceHandleFromMigDeviceHandle,                                 \
      (nvmlDevice_t migDevice, nvmlDevice_t *device))                                             \
    X(nvmlReturn_t, nvmlGpmQueryDeviceSupport, (nvmlDevice_t device, nvmlGpmSupport_t *support))  \
    X(nvmlReturn_t, nvmlGpmSampleAlloc, (nvmlGpmSample_t *sample))                                \
    X(nvmlReturn_t, nvmlGpmSampleFree, (nvmlGpmSample_t sample))                                  \
    X(nvmlReturn_t, nvmlGpmSampleGet, (nvmlDevice_t device, nvmlGpmSample_t sample))              \
    X(nvmlReturn_t, nvmlGpmMigSampleGet,                                                          \
      (nvmlDevice_t device, unsigned int gpuInstanceId, nvmlGpmSample_t sample))                  \
    X(nvmlReturn_t, nvmlGpmMetricsGet, (nvmlGpmMetricsGet_t * metricsGet))

#define NVML_DECLARE_FN_TYPE(ret, name, params) typedef ret(*name##_fn) params;
NVML_REQUIRED_FUNCTIONS(NVML_DECLARE_FN_TYPE)
NVML_OPTIONAL_FUNCTIONS(NVML_DECLARE_FN_TYPE)
#undef NVML_DECLARE_FN_TYPE

#define NVML_DECLARE_MEMBER(ret, name, params) name##_fn name;
typedef struct nvml {
    void *library;             /* dlopen handle */
    char path[256];            /* what was loaded */
    int quiet;                 /* 1: failures go to last_error only, not to stderr */
    char last_error[512];      /* the latest failure NVML_CALL reported */
    NVML_REQUIRED_FUNCTIONS(NVML_DECLARE_MEMBER)
    NVML_OPTIONAL_FUNCTIONS(NVML_DECLARE_MEMBER)
} nvml;
#undef NVML_DECLARE_MEMBER

#define NVML_DEFAULT_LIBRARY "libnvidia-ml.so.1"

/* Loads and initialises NVML. path NULL: $SUITE_NVML_LIBRARY, else libnvidia-ml.so.1.
 * NULL (and the reason in why) when the library is absent, lacks a required symbol or
 * nvmlInit_v2 fails (e.g. no driver loaded). */
nvml *nvml_open(const char *path, char *why, size_t why_size);
/* nvmlShutdown and dlclose; NULL is fine. */
void nvml_close(nvml *nv);

/* The CHECK of this library: it never exits (callers must clean up MIG instances after a
 * failure), it reports "NVML error <code> (<nvmlErrorString>) in <call> at <file>:<line>" into
 * nv->last_error (and stderr unless nv->quiet) and hands the status back. `expected` is a status
 * the caller handles itself (e.g. NVML_ERROR_NOT_FOUND while probing) and is not reported. */
nvmlReturn_t nvml_check(nvml *nv, nvmlReturn_t status, nvmlReturn_t expected, const char *call,
                        const char *file, int line);
/* nvmlErrorString, or a fixed text when the library is not loaded. */
const char *nvml_error_string(const nvml *nv, nvmlReturn_t status);

/* NVML_CALL(nv, nvmlDeviceGetCount_v2, (&count)): calls through the handle, yields
 * NVML_ERROR_FUNCTION_NOT_FOUND when this driver lacks the function, reports any failure. */
#define NVML_CALL(nv, fn, args) NVML_CALL_EXPECT(nv, NVML_SUCCESS, fn, args)
#define NVML_CALL_EXPECT(nv, expected, fn, args)                                                 \
    nvml_check((nv), (nv)->fn ? (nv)->fn args : NVML_ERROR_FUNCTION_NOT_FOUND, (expected),      \
               #fn #args, __FILE__, __LINE__)

#endif
