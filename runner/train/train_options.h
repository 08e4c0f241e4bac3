/* Command line of the `train` program, parsed and validated on the host before any GPU call, so
 * that bad input fails the same way on a machine without a GPU (exit code 2). */
#ifndef SUITE_TRAIN_OPTIONS_H
#define SUITE_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/schedule.h"
#include "models/core/optimizer_kind.h"
#include "base/decode.h"
#include "base/precision.h"
#include "runner/train/fault.h"
#include "runner/train/rank_env.h"

/* The GPU decoder's slots (--decode-slots; each holds a batch of pictures): one by default. Alone on
 * the GPU, decodes at once slow each other more than they overlap, since the JPEG engines' calls
 * serialise (lab/results/2026-11-26/decode_depth_h100.log). Jobs sharing a GPU under MPS gain a
 * little from more slots, at more memory and CPU a job (jpeg_mix_slots_h100_8193d8c.txt there).
 * The default stays what is fastest alone: a job is the same in every mode. The most a job may ask
 * for is the job spec's (JOB_DECODE_SLOTS_MAX, base/job_spec.h). */

typedef struct train_options {
    char model[32];
    char data[32];            /* synthetic, fashion-mnist, cifar10, imagenet64, imagenet, criteo-kaggle,
                                 criteo-terabyte */
    char data_root[1024];     /* empty: synthetic data shaped like `data` (fashion-mnist: installed copy) */
    int batch, epochs, image_size, classes;
    long steps_per_epoch;     /* 0: whole epochs */
    int64_t synthetic_count;  /* samples in a synthetic epoch */
    float lr, momentum, weight_decay, label_smoothing, warmup_pct, gamma, min_lr;
    int nesterov, decay_all, step_epochs;
    lr_kind schedule;
    optimizer_kind optimizer; /* default: the model's (models/catalog.c) */
    precision_kind precision; /* tf32 (default); fp32 also from --no-tf32 */
    int lr_set, weight_decay_set, schedule_set, warmup_set; /* given on the command line */
    int patch_size;           /* vision transformers: 0 = the model's default */
    float drop_path;          /* stochastic depth rate (0: off) */
    int64_t max_rows;         /* dlrm: rows per embedding table at most (hash modulo); 0: uncapped */
    long block_steps;         /* dlrm: steps per timed training block (1000) */
    long lr_warmup_steps, lr_decay_start, lr_decay_steps; /* dlrm: the reference's policy (0: none) */
    int momentum_set, optimizer_set;
    uint64_t seed;
    char save[1024], load[1024];
    char kernels[1024];       /* --kernels PREFIX: the traced window's files (runner/train/job_trace.h); "": none */
    int eval, json, dry_run, wait_go, use_graph, allow_tf32, device, workers;
    int window_protocol;      /* after warm-up, train until "stop" and report windows (step_window.h) */
    long warmup_steps;        /* window protocol: the warm-up epoch's steps (0: a whole epoch) */
    int gpus;                 /* --gpus N: data-parallel ranks (runner/train/train_ddp.c); 0: plain */
    rank_launcher launcher;   /* --launcher: one rank of ranks another program started (train_launched.h) */
    int ddp_rank, ddp_world;  /* in a rank (set by train_ddp_rank, not options); world 0: not a rank */
    char ddp_id[264];         /* the NCCL id, hex */
    int data_if_present;      /* with --data-root: synthetic data where the set's files are absent */
    int skip_bad;             /* undecodable images are skipped and counted instead of failing */
    decode_kind decode;       /* --decode: asked for (train_decode_plan says what holds) */
    int decode_slots;         /* --decode-slots: batches the GPU decoder decodes at once (see below) */
    int decode_slots_set;
    int workspace_mb;         /* --workspace-mb; workspace_limit in bytes */
    size_t workspace_limit;
    char inject_fault[48];    /* --inject-fault KIND@STEP as given; parsed into fault */
    train_fault fault;        /* FAULT_NONE unless asked (runner/train/fault.h) */
} train_options;

/* 0 on success; -1 with a message naming the option and what it expects (exit 2); 1 when --help
 * was asked (usage already printed to stdout). The options are one table in train_options.c. */
int train_options_parse(train_options *o, int argc, char **argv, char *err, size_t err_size);
const char *lr_kind_name(lr_kind kind);
/* Where this job's training images decode, before any GPU call, and why (the setup event says
 * both): DECODE_GPU where --decode is gpu, or auto with JPEG files to decode (jpeg_files: real
 * ImageNet folders are open) and nvJPEG built in (nvjpeg_built: SUITE_HAVE_NVJPEG); else
 * DECODE_CPU. The GPU may still refuse at start-up (auto then decodes on the CPU). */
decode_kind train_decode_plan(const train_options *o, int jpeg_files, int nvjpeg_built, char *why,
                              size_t why_size);
/* The files the options name, checked on the host before the GPU is touched, in the dry run too
 * (bad input, exit 2): a --data-root that cannot be used (data/data_check.h: missing, not a folder,
 * unreadable, a link loop or to nothing; --data-if-present covers only a set absent under a usable
 * one), the --load checkpoint's whole header against its size (a FIFO or a device
 * is refused without waiting on it), and that --save may be written where it points by the rule of
 * every output (base/output_path.h: a regular file or a new name in a folder it can write, never
 * the --load file nor inside --data-root), so trained weights are never lost to a bad path. 0, or
 * -1 naming the option. */
int train_options_check_files(const train_options *o, char *err, size_t err_size);

#endif
