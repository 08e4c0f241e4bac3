/* The recommender's training job (train --model dlrm): click-log rows instead of images, binary
 * cross-entropy, sparse embedding updates, ROC AUC, and timing by blocks of steps as well as by
 * epoch, since one Criteo Terabyte epoch is billions of rows. It speaks the same event protocol as
 * the image models (train_events.h). */
#ifndef SUITE_TRAIN_DLRM_H
#define SUITE_TRAIN_DLRM_H

#include "runner/train/train_events.h"
#include "runner/train/train_options.h"

/* The whole job after option parsing, at its place on the GPU: returns the exit code (0 done,
 * 1 runtime error, 2 bad input). */
int train_dlrm(const train_options *o, const train_events *ev, const context_place *place);

#endif
