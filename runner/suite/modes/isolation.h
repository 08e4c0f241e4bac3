/* The isolation pass of the partitioned modes (MODE_PARTITIONED: mig, mig-emulate, ...). After
 * the jobs ran side by side, each job runs again alone in a partition of its own size: the same
 * mode, the same partition, the same settings, the other jobs absent. Its samples/s there is the
 * reference of its interference ratio (colocated / alone in the partition, results/metrics.h):
 * ~1.00 where partitions isolate (real MIG), below where they leak (memory bandwidth and L2
 * under an MPS-only emulation). */
#ifndef SUITE_ISOLATION_H
#define SUITE_ISOLATION_H

#include "runner/suite/modes/mode_run.h"

/* Runs the pass for r (a partitioned mode's run of more than one job, after its stop) into
 * <r->dir>/alone-in-partition/, and records each job's solo rate in r->summary.partition_rate
 * (NaN for jobs that failed side by side or alone). Does nothing for other modes, single jobs,
 * or after a stop signal. The mode's state is restored afterwards, so its report describes the
 * colocated run. */
void suite_isolate(mode_run *r);

#endif
