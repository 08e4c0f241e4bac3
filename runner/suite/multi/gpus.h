/* run_suite --gpus 0,1,2,3: a mix spread over several GPUs of this machine. The jobs are placed
 * before anything runs (placement.h: memory fits, compute balanced; a placement that does not
 * fit is refused, exit 2), then every GPU with jobs gets its own ordinary run_suite (this program
 * again, argv only: --gpu G --mix <its jobs>), all started at once. So each GPU runs under the
 * chosen mode by itself (its own MPS daemon, its own MIG instances, its own green partitions),
 * with its own start barrier and its own monitor, into <run>/gpu-<G>/<run-id>/. When all have
 * ended, <run>/placement.json holds the plan and <run>/summary.json each GPU's figures and the
 * whole run's (gpus_summary.h: STP and ANTT against each job alone on its card, from --baseline,
 * --mode all's serial part or serial itself, else null with the reason; samples per workload).
 * Every GPU's run gets NCCL_NVLS_ENABLE=0 (NVLink multicast off).
 * A data-parallel job (gpus=k in the mix) is placed on k GPUs and gets a run of its own, into
 * <run>/ddp-<job>/ (`train --gpus k` as its one job, CUDA_VISIBLE_DEVICES naming its cards in
 * order, unmonitored), under --ddp-under's mode (naive: outside MPS, the default; mps: a daemon of
 * its own over its cards; NCCL does not promise it, it worked on two H200s) or, in a serial run, alone before the cards' runs.
 * Beside the cards it shares ONE start barrier and, under the window measurement, ONE window with
 * them: every run is given a relay (SUITE_GO_RELAY; its lines are jobs.h's jobs_relay) and says
 * ready on it when its jobs are; when all have (or ended) this process says go to all at once.
 * Then each says warm when its jobs have warmed up; when all have (or ended) this process says
 * window-start T0 to all, and every run's windows start at that T0, so every job of every card is
 * measured over the same seconds. A stop closes the relays: each run goes on by itself. Such a mix
 * runs under naive, mps or serial (serial: no relay, each run measured alone). */
#ifndef SUITE_GPUS_H
#define SUITE_GPUS_H

/* 1 when argv holds --gpus (or --gpus=LIST). */
int gpus_requested(int argc, char *const argv[]);
/* The whole of run_suite --gpus; returns run_suite's exit status (the worst of the GPUs' runs;
 * 2 for bad input or a placement that does not fit). Its own options come from a runner/cli
 * table; every other one is passed on to each GPU's run_suite as written, and checked first by
 * the first GPU's run_suite with --dry-run, so one it would refuse is refused once, before the run
 * folder is made. */
int gpus_main(int argc, char *const argv[]);

#endif
