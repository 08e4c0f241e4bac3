/* ReLU as PyTorch computes it: a NaN stays NaN. fmaxf(x, 0) would return 0 for a NaN and so hide
 * a diverged run (a poisoned stem weight gave finite logits after the first block). */
#ifndef SUITE_RELU_CUH
#define SUITE_RELU_CUH

__device__ __forceinline__ float relu_keep_nan(float x) { return x < 0.0f ? 0.0f : x; }

#endif
