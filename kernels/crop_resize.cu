/* One thread per output pixel (its three channels), blocks of a row band of one image: grid.y is
 * the image. The taps are those of data/image_transform.c's taps_make, computed in double as
 * there and normalised the same way, so the weights are the host's bit for bit; the sums run in
 * float in the host's order. A sample of 500x375 cut to 224 reads about 7x7 source pixels per
 * output pixel, all from L1/L2. */
#include "kernels/check.h"
#include "kernels/crop_resize.h"
#include "kernels/launch.h"

/* The filter of one output coordinate along one axis: the first source index, the count, and the
 * sum the weights are divided by (PIL's precompute_coeffs with the triangle filter). */
typedef struct axis_taps {
    int first, count;
    double center, filter_scale, sum;
} axis_taps;

__device__ static float tap_weight(const axis_taps *t, int k) {
    double x = fabs((t->first + k - t->center + 0.5) / t->filter_scale);
    return x < 1.0 ? (float)(1.0 - x) : 0.0f;
}

__device__ static axis_taps make_taps(int out_index, int offset, int scaled_size, int in_size) {
    axis_taps t;
    double scale = (double)in_size / scaled_size;
    t.filter_scale = scale > 1.0 ? scale : 1.0;
    double support = t.filter_scale;
    int per_output = (int)ceil(support) * 2 + 1;
    t.center = (offset + out_index + 0.5) * scale;
    int lo = (int)(t.center - support + 0.5), hi = (int)(t.center + support + 0.5);
    if (lo < 0) lo = 0;
    if (hi > in_size) hi = in_size;
    if (hi - lo > per_output) hi = lo + per_output;
    if (hi <= lo) {
        lo = (int)t.center < in_size ? (int)t.center : in_size - 1;
        hi = lo + 1;
    }
    t.first = lo;
    t.count = hi - lo;
    t.sum = 0.0;
    for (int k = 0; k < t.count; k++) t.sum += tap_weight(&t, k);
    if (t.sum <= 0.0) { /* as on the host: nearest neighbour rather than nothing */
        t.count = 1;
        t.sum = -1.0;
    }
    return t;
}

/* The normalised weight of tap k, as the host stores it (float of weight / sum). */
__device__ static float normalised(const axis_taps *t, int k) {
    return t->sum < 0.0 ? 1.0f : (float)(tap_weight(t, k) / t->sum);
}

__global__ void crop_resize_kernel(float *out, const crop_resize_source *sources, int size,
                                   float3 scale, float3 shift) {
    const crop_resize_source s = sources[blockIdx.y];
    int pixel = blockIdx.x * blockDim.x + threadIdx.x;
    if (!s.pixels || pixel >= size * size) return;
    int oy = pixel / size, column = pixel % size;
    int ox = s.flip ? size - 1 - column : column; /* the output column reads the mirrored one */
    axis_taps tx = make_taps(ox, s.offset_x, s.scaled_width, s.region_width);
    axis_taps ty = make_taps(oy, s.offset_y, s.scaled_height, s.region_height);
    float r = 0.0f, g = 0.0f, b = 0.0f;
    for (int j = 0; j < ty.count; j++) {
        const uint8_t *row = s.pixels + (size_t)(s.region_y + ty.first + j) * s.pitch +
                             (size_t)(s.region_x + tx.first) * 3;
        float rr = 0.0f, rg = 0.0f, rb = 0.0f;
        for (int i = 0; i < tx.count; i++) {
            float w = normalised(&tx, i);
            rr += w * row[3 * i + 0];
            rg += w * row[3 * i + 1];
            rb += w * row[3 * i + 2];
        }
        float w = normalised(&ty, j);
        r += w * rr;
        g += w * rg;
        b += w * rb;
    }
    float *o = out + ((size_t)blockIdx.y * size * size + pixel) * 3;
    o[0] = r * scale.x + shift.x;
    o[1] = g * scale.y + shift.y;
    o[2] = b * scale.z + shift.z;
}

extern "C" void crop_resize_normalize(float *out, const crop_resize_source *sources, int n, int size,
                                      const float mean[3], const float std[3], cudaStream_t stream) {
    if (n < 0 || n > 65535 || size <= 0 || size > 16384)
        kernel_bad_input("crop_resize_normalize", "n %d (0..65535), size %d (1..16384)", n, size);
    if (n == 0) return;
    /* value / 255 then normalised, as one multiply-add with the host's constants */
    float3 scale = make_float3(1.0f / (255.0f * std[0]), 1.0f / (255.0f * std[1]), 1.0f / (255.0f * std[2]));
    float3 shift = make_float3(-mean[0] / std[0], -mean[1] / std[1], -mean[2] / std[2]);
    dim3 grid((unsigned)((size * size + 255) / 256), (unsigned)n);
    crop_resize_kernel<<<grid, 256, 0, stream>>>(out, sources, size, scale, shift);
    CHECK_LAUNCH();
}
