/* run_suite --gpus 0,1,2,3: a mix spread over several GPUs of this machine. The jobs are placed
 * before anything runs (placement.h: memory fits, compute balanced; a placement that does not
 * fit is refused, exit 2), then every GPU with jobs gets its own ordinary run_suite (this program
 * again, handed the whole request with its part changed: its jobs, its GPU, its folder, its
 * reference; gpus_run_request), all started at once. So each GPU runs under the
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

#include "runner/suite/multi/gpus_summary.h"
#include "runner/suite/run/run_args.h"

/* The program form (run_args.h): every run_suite option and --ddp-under; it returns run_suite's exit
 * status (the worst of the GPUs' runs; 2 for bad input or a placement that does not fit). Each
 * GPU's run_suite is handed its request in its folder (request.json), and the first one's is checked
 * first, here and with --dry-run by that run_suite, so what it would refuse is refused once, before
 * the run folder is made. */
extern const run_form gpus_form;

/* The hop to one run over the cards (card c: a card's jobs, or a data-parallel job's run): the whole
 * run's request with its part changed: its jobs (and their mix, c->mix), its GPU, its reference
 * (c->reference, or none), its folder (dir), mode for a pass of --mode all (NULL: the whole run's;
 * then no --skip), unmonitored for a data-parallel job's run (its cards' runs sample them), one GPU,
 * dry_run as given. out owns a copy of the modes' options (run_request_free). 0, or -1 when out of
 * memory. */
int gpus_run_request(const run_request *whole, const gpus_card *c, const char *mode, const char *dir, int dry_run,
                     run_request *out);

#endif
