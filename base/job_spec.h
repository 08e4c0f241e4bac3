/* What a job is asked to do: the spec a mix's term becomes (runner/suite/plan/mix.h), which the
 * runner turns into `train`'s command line and the results name the job by. Every program shares
 * it: the runner that plans and starts the job, the results that record it. */
#ifndef SUITE_BASE_JOB_SPEC_H
#define SUITE_BASE_JOB_SPEC_H

#include <stddef.h>

#include "base/decode.h"
#include "base/fault_spec.h"
#include "base/precision.h"

/* The most GPU decoder slots a job may ask for (train --decode-slots, the mix's decode_slots=). */
#define JOB_DECODE_SLOTS_MAX 8

/* The most jobs one run holds (a mix, runner/suite/plan/mix.h, is parsed up to this bound). */
#define MIX_MAX_JOBS 64

typedef struct job_spec {
    char label[64];      /* as written in the mix, e.g. "S" or "resnet50:imagenet64@128" */
    char model[32];      /* resnet26, resnet50, resnet152, efficientnetv2_s, cait_xxs24, dlrm */
    char data[32];       /* cifar10, imagenet64, imagenet, criteo-kaggle, criteo-terabyte,
                            fashion-mnist, synthetic */
    int image_size;      /* input height = width (0 for criteo) */
    int classes;
    int batch;
    int epochs;          /* 0: the run's default */
    long steps_per_epoch;/* 0: the run's default (a whole epoch unless --quick/--steps-per-epoch) */
    long long max_rows;  /* dlrm: rows per embedding table at most (0: uncapped) */
    train_fault fault;   /* injected fault (kind FAULT_NONE: none) */
    int gpus;            /* data-parallel over this many GPUs (train --gpus); 0: one */
    precision_kind precision; /* train --precision, where precision_given */
    int precision_given; /* 0: train's default (tf32) */
    decode_kind decode;  /* imagenet: where its JPEGs decode (train --decode), where decode_given */
    int decode_given;    /* 0: train's default (auto) */
    int decode_slots;    /* imagenet: the GPU decoder's batches at once (train --decode-slots); 0: train's */
} job_spec;

/* label -> characters safe in a file name ([A-Za-z0-9+._-], others '_'): job and run folder
 * names. */
void job_safe_name(char *out, size_t size, const char *text);

/* 1 when the job may decode its JPEGs on the GPU (ImageNet's files, --decode auto or gpu): the one
 * kind of job that asks for more hardware work queues than CUDA's default (its decode streams beside
 * the step's), which an MPS client must keep to a share of the server's. */
int job_spec_may_decode_on_gpu(const job_spec *spec);

#endif
