/* The sparse embedding update (declared in kernels/dlrm.h). The embedding gradient is never
 * materialised as a table: the batch's (row, bag) pairs, written by the forward lookup, are
 * sorted by row with CUB's stable radix sort, so every touched row's lookups form one run in
 * their original order. Two kernels then apply SGD without atomics:
 *   pieces: each chunk of DLRM_SPARSE_PIECE sorted positions is walked by one thread per 4
 *     floats of the row; it sums the bag gradients of each run piece inside the chunk and
 *     stores the sum at the piece's first position in `partials`;
 *   apply: the thread at a run's first position adds the pieces of its run (the one it starts,
 *     then one per chunk boundary the run crosses) and updates the row once.
 * A hot row looked up by every sample costs one pass over batch / 32 pieces, not batch serial
 * additions; sums are in a fixed order, so replays are bit-identical. Everything is sized by
 * the capacity, so the whole update is capturable in a CUDA graph (CUB's temporary storage is
 * allocated once, by the caller). */
#include <stdint.h>

#include <cub/device/device_radix_sort.cuh>

#include "kernels/dlrm.h"
#include "kernels/launch.h"
#include "kernels/check.h"

#define SPARSE_THREADS 256
#define SPARSE_MAX_BLOCKS 65535u

static unsigned sparse_blocks(size_t threads) {
    size_t blocks = (threads + SPARSE_THREADS - 1) / SPARSE_THREADS;
    return (unsigned)(blocks < 1 ? 1 : blocks > SPARSE_MAX_BLOCKS ? SPARSE_MAX_BLOCKS : blocks);
}

extern "C" int dlrm_row_bits(uint64_t total_rows) {
    int bits = 1;
    while (bits < 32 && ((uint64_t)1 << bits) <= total_rows) bits++;
    return bits;
}

extern "C" size_t dlrm_sort_scratch_bytes(int capacity, int row_bits) {
    size_t bytes = 0;
    CHECK_CUDA(cub::DeviceRadixSort::SortPairs(NULL, bytes, (const uint32_t *)NULL, (uint32_t *)NULL,
                                               (const uint32_t *)NULL, (uint32_t *)NULL, capacity, 0,
                                               row_bits));
    return bytes;
}

extern "C" size_t dlrm_sort_scratch_estimate(int capacity) {
    /* CUB keeps a second copy of keys and values plus per-pass histograms and tile states */
    return (size_t)capacity * 2 * 2 * sizeof(uint32_t) + ((size_t)1 << 20);
}

extern "C" void dlrm_sort_lookups(uint32_t *sorted_keys, uint32_t *sorted_vals, const uint32_t *keys,
                                  const uint32_t *vals, int capacity, int row_bits, void *scratch,
                                  size_t scratch_bytes, cudaStream_t stream) {
    const char *fn = "dlrm_sort_lookups";
    if (!sorted_keys || !sorted_vals || !keys || !vals || !scratch)
        kernel_bad_input(fn, "sorted_keys, sorted_vals, keys, vals and scratch must be device pointers (one is NULL)");
    if (capacity < 0 || row_bits < 1 || row_bits > 32)
        kernel_bad_input(fn, "capacity >= 0 and row_bits 1..32 expected (got %d, %d)", capacity, row_bits);
    if (capacity == 0) return;
    size_t bytes = scratch_bytes;
    CHECK_CUDA(cub::DeviceRadixSort::SortPairs(scratch, bytes, keys, sorted_keys, vals, sorted_vals,
                                               capacity, 0, row_bits, stream));
    CHECK_LAUNCH();
}

template <int VEC>
__device__ __forceinline__ void add_row(float acc[VEC], const float *p) {
    if constexpr (VEC == 4) {
        float4 q = *(const float4 *)p;
        acc[0] += q.x, acc[1] += q.y, acc[2] += q.z, acc[3] += q.w;
    } else {
        acc[0] += *p;
    }
}

template <int VEC>
__device__ __forceinline__ void put_row(float *p, const float acc[VEC]) {
    if constexpr (VEC == 4) *(float4 *)p = make_float4(acc[0], acc[1], acc[2], acc[3]);
    else *p = acc[0];
}

template <int VEC>
__global__ void __launch_bounds__(SPARSE_THREADS)
sparse_pieces_kernel(float *partials, const uint32_t *keys, const uint32_t *vals, const float *dout,
                     int capacity, int dim) {
    const int comps = dim / VEC, chunks = (capacity + DLRM_SPARSE_PIECE - 1) / DLRM_SPARSE_PIECE;
    const size_t total = (size_t)chunks * comps, stride = (size_t)gridDim.x * blockDim.x;
    for (size_t id = blockIdx.x * (size_t)blockDim.x + threadIdx.x; id < total; id += stride) {
        const int c = (int)(id % comps), first = (int)(id / comps) * DLRM_SPARSE_PIECE;
        const int last = min(first + DLRM_SPARSE_PIECE, capacity);
        uint32_t run = keys[first];
        int start = first;
        float acc[VEC];
#pragma unroll
        for (int k = 0; k < VEC; k++) acc[k] = 0.0f;
        for (int i = first; i < last; i++) {
            uint32_t key = keys[i];
            if (key == DLRM_NO_ROW) break;
            if (key != run) {
                put_row<VEC>(partials + (size_t)start * dim + (size_t)c * VEC, acc);
#pragma unroll
                for (int k = 0; k < VEC; k++) acc[k] = 0.0f;
                run = key;
                start = i;
            }
            add_row<VEC>(acc, dout + (size_t)vals[i] * dim + (size_t)c * VEC);
        }
        if (run != DLRM_NO_ROW) put_row<VEC>(partials + (size_t)start * dim + (size_t)c * VEC, acc);
    }
}

template <int VEC>
__global__ void __launch_bounds__(SPARSE_THREADS)
sparse_apply_kernel(float *weights, const uint32_t *keys, const float *partials, const float *lr_ptr,
                    int capacity, int dim) {
    const int comps = dim / VEC;
    const size_t total = (size_t)capacity * comps, stride = (size_t)gridDim.x * blockDim.x;
    const float lr = *lr_ptr;
    for (size_t id = blockIdx.x * (size_t)blockDim.x + threadIdx.x; id < total; id += stride) {
        const int c = (int)(id % comps), i = (int)(id / comps);
        const uint32_t key = keys[i];
        if (key == DLRM_NO_ROW || (i > 0 && keys[i - 1] == key)) continue; /* not a run's start */
        float sum[VEC];
#pragma unroll
        for (int k = 0; k < VEC; k++) sum[k] = 0.0f;
        add_row<VEC>(sum, partials + (size_t)i * dim + (size_t)c * VEC);
        for (int q = (i / DLRM_SPARSE_PIECE + 1) * DLRM_SPARSE_PIECE; q < capacity && keys[q] == key;
             q += DLRM_SPARSE_PIECE)
            add_row<VEC>(sum, partials + (size_t)q * dim + (size_t)c * VEC);
        float *w = weights + (size_t)key * dim + (size_t)c * VEC;
        float row[VEC];
#pragma unroll
        for (int k = 0; k < VEC; k++) row[k] = 0.0f;
        add_row<VEC>(row, w);
#pragma unroll
        for (int k = 0; k < VEC; k++) row[k] = fmaf(-lr, sum[k], row[k]);
        put_row<VEC>(w, row);
    }
}

extern "C" void dlrm_sparse_sgd(float *weights, const uint32_t *sorted_keys, const uint32_t *sorted_vals,
                                const float *dout, const float *lr, int capacity, int dim, float *partials,
                                cudaStream_t stream) {
    const char *fn = "dlrm_sparse_sgd";
    if (!weights || !sorted_keys || !sorted_vals || !dout || !lr || !partials)
        kernel_bad_input(fn, "weights, sorted_keys, sorted_vals, dout, lr and partials must be device "
                         "pointers (one is NULL)");
    if (capacity < 0 || dim < 1) kernel_bad_input(fn, "capacity >= 0 and dim >= 1 expected (got %d, %d)", capacity, dim);
    if (capacity == 0) return;
    int vec = dim % 4 == 0 && kernel_aligned(weights, 16) && kernel_aligned(dout, 16) &&
                      kernel_aligned(partials, 16) ? 4 : 1;
    size_t chunks = ((size_t)capacity + DLRM_SPARSE_PIECE - 1) / DLRM_SPARSE_PIECE, comps = (size_t)dim / vec;
    if (vec == 4) {
        sparse_pieces_kernel<4><<<sparse_blocks(chunks * comps), SPARSE_THREADS, 0, stream>>>(
            partials, sorted_keys, sorted_vals, dout, capacity, dim);
        CHECK_LAUNCH();
        sparse_apply_kernel<4><<<sparse_blocks((size_t)capacity * comps), SPARSE_THREADS, 0, stream>>>(
            weights, sorted_keys, partials, lr, capacity, dim);
    } else {
        sparse_pieces_kernel<1><<<sparse_blocks(chunks * comps), SPARSE_THREADS, 0, stream>>>(
            partials, sorted_keys, sorted_vals, dout, capacity, dim);
        CHECK_LAUNCH();
        sparse_apply_kernel<1><<<sparse_blocks((size_t)capacity * comps), SPARSE_THREADS, 0, stream>>>(
            weights, sorted_keys, partials, lr, capacity, dim);
    }
    CHECK_LAUNCH();
}
