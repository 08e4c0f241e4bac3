/* A mix is the set of training jobs that one run_suite invocation puts on the GPU together,
 * written like the study's mixes: "S+M+M", "7*S", "resnet50:imagenet64@128", with optional
 * per-job overrides in brackets: "M[epochs=3,steps=100]". Parsing is host-only and checks
 * everything before any GPU or daemon is touched.
 *
 * Grammar (names are matched without regard to case and stored in the canonical spelling):
 *   mix      := part ( '+' part )*
 *   part     := [ count '*' ] job [ '[' override ( ',' override )* ']' ]
 *   count    := 1..64                  the whole mix holds at most MIX_MAX_JOBS (64) jobs
 *   job      := preset | model ':' data '@' batch [ '/' size ]
 *   preset   := S | M | L | XL         the study's workloads, see mix_presets()
 *   model    := resnet26 | resnet50 | resnet152 | efficientnetv2_s | cait_xxs24 | dlrm
 *   data     := cifar10 (32 px, 10 classes) | imagenet64 (64, 1000) | imagenet (224, 1000)
 *             | fashion-mnist (32, 10) | synthetic (32, 10)
 *             | criteo-kaggle | criteo-terabyte   (dlrm only, and only dlrm)
 *   batch    := 1..65536
 *   size     := image size override, 16..1024 and a multiple of 8 (of 16 for cait_xxs24, whose
 *               patches are 16 px); not for criteo. Whether a data set can be read at that
 *               size is decided by its reader in train.
 *   override := epochs=1..100000 | steps=1..1000000000 (steps per epoch)
 *             | classes=2..100000 (synthetic only: the other data sets fix their classes)
 *             | rows=1..2147483647 (dlrm only: each embedding table capped at that many rows)
 *             | precision=tf32|fp32|bf16 (the job's numerics, train --precision)
 *             | fault=KIND@STEP  (a fault injected at that training step, base/fault_spec.h:
 *               oom, illegal-address, nan, exit, hang, sigkill; e.g. S[fault=illegal-address@50])
 * Whitespace (spaces, tabs) may stand at either end, around '+' and '*', and inside brackets
 * around ',' and '='; it may not split a job ("resnet50 :imagenet64@128" is an error), a name
 * or a number. Examples: "S+M+M", "7*S", " 2 * S + M ", "M[epochs=3, steps=100]",
 * "resnet26:cifar10@64[steps=20]", "resnet50:imagenet64@128/96",
 * "resnet50:synthetic@64[classes=100]".
 * criteo jobs (XL) have image_size 0 and classes 0 (one click logit, not a class count). */
#ifndef SUITE_MIX_H
#define SUITE_MIX_H

#include <stddef.h>

#include "base/job_spec.h"

typedef struct mix {
    int count;
    job_spec jobs[MIX_MAX_JOBS];
} mix;

typedef struct mix_preset {
    const char *name;    /* S, M, L, XL */
    const char *model, *data;
    int image_size, classes, batch;
    long long max_rows;
    const char *description;
} mix_preset;

/* 0 on success; -1 with a message naming the offending part and listing what is valid
 * (m is then left with count 0). */
int mix_parse(mix *m, const char *text, char *err, size_t err_size);
const mix_preset *mix_presets(int *count);
/* The job in explicit form, "model:data@batch/size[epochs=..,steps=..,classes=..]", giving only
 * what differs from the data set's defaults; mix_parse reads it back to the same job_spec
 * (label aside). Returns what snprintf returns. */
int mix_job_format(const job_spec *job, char *out, size_t size);

#endif
