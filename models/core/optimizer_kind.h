/* The optimizers a job can train with, by kind: named by host-only code (the model catalog's
 * defaults, option tables) that must not include the trainer and its CUDA headers. */
#ifndef SUITE_OPTIMIZER_KIND_H
#define SUITE_OPTIMIZER_KIND_H

typedef enum { OPTIMIZER_SGD, OPTIMIZER_ADAMW } optimizer_kind;

#endif
