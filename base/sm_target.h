/* The SM count a job's libraries are told to plan for (issue 50). On real MIG the device reports
 * only its instance's SMs, so cuBLASLt and cuDNN size their kernels for it. A job in a green
 * context or an MPS share runs on part of a device that reports all its SMs; told the part
 * (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, cublasSetSmCountTarget, cuDNN's
 * CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET and CUDNN_ATTR_ENGINE_SM_COUNT_TARGET), their heuristics
 * choose grids whose waves fill it. The rule is here, host only, so the job (models/core/context.c)
 * and run_suite's dry run decide it the same way.
 *
 * An MPS client's share. CUDA_MPS_ACTIVE_THREAD_PERCENTAGE p limits a client to a share of the
 * device's SMs; the driver rounds a context's SM limit up to the next amount the hardware
 * provisions (cuCtxCreate's execution affinity says so), and SMs come in pairs (one TPC) on
 * Volta and later. The rule: ceil(p * SMs / 100), rounded up to an even count, at most the
 * device's. The job itself asks the driver what its context got (cuCtxGetExecAffinity) and tells
 * that; the rule is the dry run's prediction, and the setup event carries both, so a run on a GPU
 * shows any difference (bench/device_run.sh's stage sm-target). The modes that set p:
 * mps (--mps-sm, as given) and mig-emulate (its instance's SM fraction in whole percent, rounded
 * to nearest: sm_target_percent_of). */
#ifndef SUITE_BASE_SM_TARGET_H
#define SUITE_BASE_SM_TARGET_H

/* Where the told count comes from; X(kind, name) in the order of their values. */
#define SM_TARGET_TABLE(X)                                                                          \
    X(SM_TARGET_WHOLE, "whole")  /* the whole device: nothing told (0) */                          \
    X(SM_TARGET_GREEN, "green")  /* a green context's partition */                                 \
    X(SM_TARGET_MPS, "mps")      /* an MPS client's active thread percentage */                    \
    X(SM_TARGET_OFF, "off")      /* a partition, but SUITE_SM_TARGET=0 keeps the libraries untold */

#define SM_TARGET_ENUM_(kind, name) kind,
typedef enum sm_target_from { SM_TARGET_TABLE(SM_TARGET_ENUM_) } sm_target_from;
#undef SM_TARGET_ENUM_

const char *sm_target_from_name(sm_target_from from);

/* The SMs an MPS client with active thread percentage `percent` (1..100) gets on a device of
 * `device_sms`, by the rule above; 0 for counts out of range. */
int sm_target_of_share(int device_sms, int percent);

/* A fraction of the device's SMs as an active thread percentage: whole percent, rounded to nearest,
 * 1..100 (mig-emulate's share of an instance). */
int sm_target_percent_of(double fraction);

/* CUDA_MPS_ACTIVE_THREAD_PERCENTAGE as a client reads it: a whole number 1..100 (MPS takes a
 * fraction too, floored here), else 0 (unset, empty, or not a percentage: no share). */
int sm_target_percent(const char *text);

/* What a job knows of where it runs. */
typedef struct sm_target_place {
    int telling;       /* SUITE_SM_TARGET: 1 tell the libraries, 0 not (the A/B) */
    int green_sms;     /* the green context's SMs; 0: none */
    int mps_client;    /* the process is an MPS client */
    int percent;       /* its CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (0: none) */
    int device_sms;    /* the device's SMs as it reports them */
    int context_sms;   /* the driver's count for the context (execution affinity); 0: unknown */
} sm_target_place;

/* The SMs to tell (0: none, the device's) and where they come from: a green context's own count;
 * else an MPS client with a share below 100%: the driver's count for its context, or the rule where
 * the driver cannot say; else nothing. With telling off, 0 and SM_TARGET_OFF where there was a
 * partition. */
int sm_target_decide(const sm_target_place *p, sm_target_from *from);

#endif
