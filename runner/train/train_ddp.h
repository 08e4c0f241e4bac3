/* train --gpus N: data-parallel training, one process per GPU.
 *
 * Why processes rather than one thread per GPU: a rank is then exactly a plain `train` (same
 * code path, same CUDA graph, same events), one per device as NCCL and PyTorch's DDP expect; a
 * GPU's MPS daemon, MIG instance or CUDA_VISIBLE_DEVICES applies to its rank as to any job; and
 * a rank that crashes (a failed CUDA check exits the process) is seen by the launcher as an exit,
 * which it answers by stopping the other ranks, rather than taking a shared process down with
 * half its communicators in a collective.
 *
 * The launcher (this process, started with --gpus N) makes the NCCL id, starts N ranks (this
 * program again, argv only, with SUITE_DDP_RANK/WORLD/ID in the environment; rank r on device
 * r), releases them together behind the start barrier, and speaks the runner's protocol for the
 * whole job (the job's events from the ranks': runner/train/rank_events.h). Past the id, a rank is
 * train_ddp_rank (below), as is a rank that another launcher started (train --launcher:
 * runner/train/train_launched.h). Each rank reads the r-th local batch of every
 * global batch (global batch = N x --batch) and averages gradients over the ranks
 * (models/core/ddp.h). A rank that fails or dies makes the launcher stop the others (SIGTERM, then
 * SIGKILL) and report which rank and why; a rank whose launcher dies is killed by the kernel
 * (PR_SET_PDEATHSIG); a rank polls its communicator (ncclCommGetAsyncError) and aborts it on an
 * error, so no rank waits in a collective forever. A fault injected with --inject-fault hits the
 * last rank only: its peers must survive it. */
#ifndef SUITE_TRAIN_DDP_H
#define SUITE_TRAIN_DDP_H

#include "runner/train/train_events.h"
#include "runner/train/train_options.h"

/* The whole of `train --gpus N`: the launcher, or a rank when SUITE_DDP_RANK is set (a dry run
 * reports the footprint of one rank). Returns train's exit code. */
int train_ddp_main(train_options *o, const train_events *ev, int argc, char **argv);

/* A rank's whole job once it holds the job's id, however it was started (--gpus' launcher, or
 * another: train --launcher): rank `rank` of `world` joining by id (hex), on `device`. Every rank
 * gets rank 0's initial weights and buffers, the rank-th local batch of every global batch, and
 * checks at the end that the replicas are the same bytes; an injected fault (--inject-fault) hits
 * the last rank only. Its events go to ev. Returns train's exit code. */
int train_ddp_rank(train_options *o, const train_events *ev, int rank, int world, const char *id, int device);

#endif
