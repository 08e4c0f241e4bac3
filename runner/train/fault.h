/* Injected faults, the GPU side: train_fault_at does the fault a job was asked for (--inject-fault
 * KIND@STEP) at its step. The kinds, train_fault and the KIND@STEP grammar are the base layer's
 * (base/fault_spec.h), host-only, since run_suite's mix grammar reads them too. */
#ifndef SUITE_TRAIN_FAULT_H
#define SUITE_TRAIN_FAULT_H

#include "base/fault_spec.h"

/* Called after each training step with the step just taken; at the fault's step it announces a
 * "fault" event ({"event":"fault","kind":..,"step":..}) and a stderr line, then does the fault: every kind but nan ends the process here; nan returns and lets the
 * training loop find the NaN loss as it would find a real one. params: the model's parameter
 * table (device data). The types are declared, not included: this header stays host-only. */
struct CUstream_st;
struct train_events;
struct param_table;
void train_fault_at(const train_fault *f, long step, const struct train_events *ev,
                    struct CUstream_st *stream, const struct param_table *params);

#endif
