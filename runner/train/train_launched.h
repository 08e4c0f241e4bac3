/* train --launcher env|slurm: this process is one rank of a data-parallel job whose ranks another
 * program started (srun, torchrun, a script: one process per GPU), each with its rank in the
 * environment (runner/train/rank_env.h). Rank 0 makes NCCL's id and hands it to the others over TCP
 * (runner/train/rendezvous.h); past the id every rank is what a rank of `train --gpus N` is
 * (train_ddp_rank, runner/train/train_ddp.h): rank 0's initial weights, the rank-th local batch of
 * every global batch, the replica check at the end, the NCCL watchdog.
 *
 * What --gpus' launcher does for its ranks, rank 0 does here over the rendezvous' connections: the
 * other ranks send it their events (it speaks for the job: the job's setup, epoch and done events
 * and its human epoch lines, each rank's own as rank_<event>, as train --gpus N prints them, with
 * --json or without), it releases them all at once behind its start barrier, and a rank that fails
 * or dies ends the job: every rank exits non-zero within seconds, naming it. The ranks other than 0
 * stay quiet (their human lines are dropped) unless they fail: then stderr says why.
 *
 * The world size is the launcher's (WORLD_SIZE, SLURM_NTASKS): --gpus is refused with --launcher,
 * as are run_suite's --wait-go and --window-protocol. The rank's GPU is --device + its local rank
 * (LOCAL_RANK, SLURM_LOCALID), among the devices the process sees. NVLink multicast is off
 * (NCCL_NVLS_ENABLE=0), as for --gpus' ranks. A dry run is one rank's footprint, without the
 * environment. */
#ifndef SUITE_TRAIN_LAUNCHED_H
#define SUITE_TRAIN_LAUNCHED_H

#include "runner/train/train_events.h"
#include "runner/train/train_options.h"

/* The whole of `train --launcher ...` for this rank; ev is the process's own events (stdout).
 * Returns train's exit code. */
int train_launched_main(train_options *o, const train_events *ev);

#endif
