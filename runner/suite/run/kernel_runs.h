/* run_suite --kernels after a mode's run: which traced files stand for each job shared and alone,
 * handed to the attribution (results/kernel_attribution.h), which writes kernels.csv and
 * interference.csv into the mode's folder. */
#ifndef SUITE_KERNEL_RUNS_H
#define SUITE_KERNEL_RUNS_H

#include "runner/suite/modes/mode_run.h"

/* Each job's traced file alone: its own in a sequential mode and in a partitioned mode's run of one
 * job (it ran alone: "self"); in a
 * partitioned mode its isolation run's, in its partition ("partition"); else the serial run's of
 * the same job, the serial part of --mode all ("serial") or --baseline's ("baseline"). Then the
 * attribution of the run's files. A run without --kernels, or whose jobs traced nothing, writes
 * nothing; what cannot be attributed is said on stderr and the run goes on. */
void suite_attribute_kernels(const mode_run *r, const serial_baseline *base);

#endif
