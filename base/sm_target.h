/* The SM count a job's libraries are told to plan for (issue 50). On real MIG the device reports
 * only its instance's SMs, so cuBLASLt and cuDNN size their kernels for it. A job in a green
 * context or an MPS share runs on part of a device that reports all its SMs; told the part
 * (CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, cublasSetSmCountTarget, cuDNN's
 * CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET and CUDNN_ATTR_ENGINE_SM_COUNT_TARGET), their heuristics
 * choose grids whose waves fill it. The rule is here, host only, so the job (models/core/context.c)
 * and run_suite's dry run decide it the same way.
 *
 * An MPS client's share. CUDA_MPS_ACTIVE_THREAD_PERCENTAGE p limits a client to a share of the
 * device's SMs, and the device then reports that share as its own SM count to the client
 * (cudaDevAttrMultiProcessorCount, as the context's execution affinity): cuBLASLt and cuDNN, which
 * read the count, already plan for the share, as on real MIG. Nothing needs telling there; the
 * setup event says what the libraries see ("seen"). The share is whole TPCs (two SMs) rounded
 * down: floor(p * TPCs / 100) TPCs, at least one (12% of an H100's or H200's 66 TPCs: 7 TPCs, 14
 * SMs, as the driver gives it). The dry run predicts with that rule and the job reports the
 * driver's count, so a run shows any difference. The modes that set p: mps (--mps-sm, as given)
 * and mig-emulate (the least percent that holds its instance's SMs: sm_target_percent_for). Only a green context's partition is invisible to the libraries: that
 * count is told. */
#ifndef SUITE_BASE_SM_TARGET_H
#define SUITE_BASE_SM_TARGET_H

/* Where the told count comes from; X(kind, name) in the order of their values. */
#define SM_TARGET_TABLE(X)                                                                          \
    X(SM_TARGET_WHOLE, "whole")  /* the whole device: nothing told (0) */                          \
    X(SM_TARGET_GREEN, "green")  /* a green context's partition */                                 \
    X(SM_TARGET_MPS, "mps")      /* an MPS client's share the device does not report: told */      \
    X(SM_TARGET_SEEN, "seen")    /* an MPS client's share the device reports itself: nothing told */\
    X(SM_TARGET_OFF, "off")      /* a partition, but SUITE_SM_TARGET=0 keeps the libraries untold */

#define SM_TARGET_ENUM_(kind, name) kind,
typedef enum sm_target_from { SM_TARGET_TABLE(SM_TARGET_ENUM_) } sm_target_from;
#undef SM_TARGET_ENUM_

const char *sm_target_from_name(sm_target_from from);

/* The SMs an MPS client with active thread percentage `percent` (1..100) gets on a device of
 * `device_sms` (its whole count), by the rule above; 0 for counts out of range. */
int sm_target_of_share(int device_sms, int percent);

/* The active thread percentage that gives a client a fraction of a device of `device_sms`: the
 * least whole percent whose share by the rule above holds at least that many SMs (rounded to the
 * nearest SM), 1..100; mig-emulate's share of an instance, so that a 1g instance of 16 SMs of 132
 * gets 13% (16 SMs), not 12% (14). Without a count (device_sms < 2): the fraction rounded up. */
int sm_target_percent_for(int device_sms, double fraction);

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

/* The SMs to tell the libraries (0: none) and where that comes from: a green context's own count;
 * an MPS client with a share below 100% whose device reports the context's count: 0, SM_TARGET_SEEN
 * (the libraries read the share from the device); an MPS client whose device reports more: the
 * driver's count for its context. With telling off, what is seen stays seen, and a count that
 * would be told is 0, SM_TARGET_OFF. */
int sm_target_decide(const sm_target_place *p, sm_target_from *from);

#endif
