/* Double-precision references of CaiT's layers, shared by the float32 and the bf16 GPU tests
 * (tests/models/gpu_cait.c, tests/models/gpu_bf16_cait.c). */
#ifndef SUITE_CAIT_REFERENCE_H
#define SUITE_CAIT_REFERENCE_H

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

/* Talking heads (kernels/transformer.h) in double: attn of each (b, i) from the logits; with da,
 * dlogits and the mixing parameters' gradients (added to). */
static inline void th_reference(int B, int H, int N, const float *logits, const float *wl, const float *bl,
                                const float *ww, const float *bw, const double *da, double *attn, double *dlogits,
                                double *dwl, double *dbl, double *dww, double *dbw) {
    double *z = calloc((size_t)H * N, sizeof(double)), *p = calloc((size_t)H * N, sizeof(double)), *dp = calloc((size_t)H * N, sizeof(double));
    size_t hs = (size_t)N * N;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < N; i++) {
            size_t base = ((size_t)b * H * N + i) * N;
            for (int o = 0; o < H; o++) {
                double m = -INFINITY, s = 0;
                for (int j = 0; j < N; j++) {
                    double v = bl[o];
                    for (int h = 0; h < H; h++) v += (double)wl[o * H + h] * logits[base + h * hs + j];
                    z[o * N + j] = v, m = fmax(m, v);
                }
                for (int j = 0; j < N; j++) s += exp(z[o * N + j] - m);
                for (int j = 0; j < N; j++) p[o * N + j] = exp(z[o * N + j] - m) / s;
            }
            for (int o = 0; o < H; o++)
                for (int j = 0; j < N; j++) {
                    double v = bw[o];
                    for (int h = 0; h < H; h++) v += (double)ww[o * H + h] * p[h * N + j];
                    attn[base + o * hs + j] = v;
                }
            if (!da) continue;
            for (int h = 0; h < H; h++) {
                double dot = 0;
                for (int j = 0; j < N; j++) {
                    double v = 0;
                    for (int o = 0; o < H; o++) v += (double)ww[o * H + h] * da[base + o * hs + j];
                    dp[h * N + j] = v, dot += v * p[h * N + j];
                }
                for (int j = 0; j < N; j++) dp[h * N + j] = p[h * N + j] * (dp[h * N + j] - dot); /* now dz */
            }
            for (int j = 0; j < N; j++)
                for (int o = 0; o < H; o++) {
                    dbw[o] += da[base + o * hs + j];
                    dbl[o] += dp[o * N + j];
                    double dl = 0;
                    for (int h = 0; h < H; h++) {
                        dww[o * H + h] += da[base + o * hs + j] * p[h * N + j];
                        dwl[o * H + h] += dp[o * N + j] * logits[base + h * hs + j];
                        dl += (double)wl[h * H + o] * dp[h * N + j];
                    }
                    dlogits[base + o * hs + j] = dl;
                }
        }
    free(z), free(p), free(dp);
}

#endif
