/* The numerics a job trains in, and their names: one table that every parser reads (train
 * --precision, run_suite --precision, the mix's precision= override, the benchmarks) and the
 * models build from. Host only, so the runner links it without CUDA.
 *
 * tf32 (the default, 0): float32 tensors, TF32 tensor-core convolutions and matmuls; fp32:
 * strict float32; bf16: mixed precision as torch.autocast(dtype=torch.bfloat16) does it:
 * bfloat16 activations and convolution/matmul inputs with float32 accumulation, float32 master
 * weights (a bfloat16 copy is made each forward), gradients reduced and applied in float32,
 * batch-norm statistics and the loss in float32, no loss scaling. */
#ifndef SUITE_PRECISION_H
#define SUITE_PRECISION_H

#include <stddef.h>

/* X(kind, name) for each precision, in the order of their values: the table the names, the
 * option parsers' choice lists (runner/cli.h) and the enum come from. */
#define PRECISION_TABLE(X) X(PRECISION_TF32, "tf32") X(PRECISION_FP32, "fp32") X(PRECISION_BF16, "bf16")

#define PRECISION_ENUM_(kind, name) kind,
typedef enum { PRECISION_TABLE(PRECISION_ENUM_) PRECISION_COUNT } precision_kind;
#undef PRECISION_ENUM_

/* "tf32", "fp32", "bf16"; "unknown" outside the table. */
const char *precision_name(precision_kind p);
/* 0 with *out set for a known name (exact spelling), -1 otherwise. */
int precision_parse(const char *name, precision_kind *out);
/* The precision named by the n characters at text, any case (the mix's overrides); -1 if none. */
int precision_find(const char *text, size_t n);

#endif
