/* Double-precision references of EfficientNetV2's own layers, shared by the float32 and the bf16
 * GPU tests (tests/models/gpu_efficientnet.c, tests/models/gpu_bf16_efficientnet.c). */
#ifndef SUITE_EFFICIENTNET_REFERENCE_H
#define SUITE_EFFICIENTNET_REFERENCE_H

#include <math.h>
#include <stddef.h>

static inline double sigmoid(double z) { return 1.0 / (1.0 + exp(-z)); }
static inline double silu(double z) { return z * sigmoid(z); }
static inline double silu_grad(double z) { double s = sigmoid(z); return s * (1.0 + z * (1.0 - s)); }

typedef struct dw_case { int n, h, w, c, stride; } dw_case;

/* The 3x3 depthwise convolution (padding 1) in double: y, dx and dw for dy, added to. */
static inline void dw_reference(const dw_case *k, const float *x, const float *w, const float *dy, double *y,
                                double *dx, double *dw) {
    int ho_n = (k->h - 1) / k->stride + 1, wo_n = (k->w - 1) / k->stride + 1, C = k->c;
    for (int n = 0; n < k->n; n++)
        for (int ho = 0; ho < ho_n; ho++)
            for (int wo = 0; wo < wo_n; wo++)
                for (int c = 0; c < C; c++) {
                    size_t o = (((size_t)n * ho_n + ho) * wo_n + wo) * C + c;
                    for (int r = 0; r < 3; r++)
                        for (int s = 0; s < 3; s++) {
                            int h = ho * k->stride - 1 + r, ww = wo * k->stride - 1 + s;
                            if (h < 0 || h >= k->h || ww < 0 || ww >= k->w) continue;
                            size_t xi = (((size_t)n * k->h + h) * k->w + ww) * C + c;
                            y[o] += (double)x[xi] * w[c * 9 + r * 3 + s];
                            dx[xi] += (double)dy[o] * w[c * 9 + r * 3 + s];
                            dw[c * 9 + r * 3 + s] += (double)dy[o] * x[xi];
                        }
                }
}

#endif
