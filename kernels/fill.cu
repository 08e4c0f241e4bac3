/* Small element-wise helpers. */
#include "kernels/kernels.h"
#include "models/check.h"

__global__ void fill_float_kernel(float *x, float value, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] = value;
}

extern "C" void fill_float(float *x, float value, size_t n, cudaStream_t stream) {
    if (n == 0) return;
    size_t blocks = (n + 255) / 256;
    fill_float_kernel<<<(unsigned)(blocks < 4096 ? blocks : 4096), 256, 0, stream>>>(x, value, n);
    CHECK_LAUNCH();
}
