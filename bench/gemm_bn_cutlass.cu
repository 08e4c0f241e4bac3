/* gemm_bn_cutlass: road 2 of issue 52 (lab/conv_bn_roads.md). ResNet-50's stride-1 1x1
 * convolutions (224x224, batch 256 by default) as GEMMs over NHWC, D[M = N*H*W, K_out] =
 * A[M, C] x W[K_out, C]^T, bf16 in, fp32 accumulate, bf16 out, each against the unfused path
 * (our BN apply where the convolution has a prologue, cuDNN's fastest convolution, our statistics
 * pass):
 *   hopper        CUTLASS's sm90 GEMM (TMA, warp-specialized cooperative, wgmma), plain
 *   hopper+stats  the same with an epilogue visitor tree that also sums each output column and its
 *                 squares (atomics into two float vectors): the next BN's statistics
 *   ampere        CUTLASS's sm80 GEMM (cp.async, mma.sync), plain, on this GPU
 *   ampere+bn     (conv3, the 1x1s with a prologue) CUTLASS's sm80 implicit-GEMM fprop with main-loop
 *                 fusion: the previous BN's scale, bias and ReLU applied to A in registers as it is
 *                 loaded. CUTLASS ships that transform for half only (fma.rn.f16x2.relu); the bf16
 *                 specialisation below is the same instruction in bf16x2.
 * Each output is checked against the reference (cuDNN's convolution of the applied input, double
 * statistics) before it is timed; a kernel that fails is reported and left out of the score.
 * Hopper's main loop feeds wgmma from shared memory and has no per-channel transform of A, so a
 * kernel with both fusions exists only on the sm80 path; its best case is bounded here by the
 * ampere+bn time plus what the statistics add to Hopper's GEMM. The score is the roads': per shape
 * the best saving, with the apply paid again in the backward (the wgrad tax) where a prologue is
 * fused, summed over the forward's 1x1s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cute/tensor.hpp>
#include <cutlass/cutlass.h>
#include <cutlass/version.h>
#include <cutlass/conv/conv2d_problem_size.h>
#include <cutlass/conv/kernel/default_conv2d_fprop_fusion.h>
#include <cutlass/conv/device/implicit_gemm_convolution_fusion.h>
#include <cutlass/conv/warp/scale_bias_relu_transform.h>
#include <cutlass/epilogue/collective/collective_builder.hpp>
#include <cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp>
#include <cutlass/epilogue/thread/linear_combination.h>
#include <cutlass/gemm/collective/collective_builder.hpp>
#include <cutlass/gemm/device/gemm.h>
#include <cutlass/gemm/device/gemm_universal_adapter.h>
#include <cutlass/gemm/kernel/gemm_universal.hpp>
#include <cutlass/util/packed_stride.hpp>

extern "C" {
#include "base/error.h"
#include "models/core/gpu_timer.h"
}
#include "bench/conv_bn/graph.h"
#include "bench/conv_bn/reference.h"
#include "bench/conv_bn/roles.h"
#include "kernels/check.h"
#include "kernels/kernels.h"

/* ---- CUTLASS's sm80 main-loop transform, in bf16 ---------------------------------------------- */
namespace cutlass {
namespace conv {
namespace warp {
/* As the half version: each pair of activations becomes relu(scale * a + bias) with one packed
 * fma, except the iterator's out-of-bounds marker, which becomes zero. */
template <int N1, bool R1, int N2, bool R2>
struct FpropScaleBiasReluTransform<Array<bfloat16_t, N1, R1>, Array<bfloat16_t, N2, R2>> {
    using FragmentActivations = Array<bfloat16_t, N1, R1>;
    using FragmentScaleBias = Array<bfloat16_t, N2, R2>;
    static int const NumActivations = N1;
    static int const MmaElements = 2, MmaScaleBiasPair = 2, MmaCols = 2;
    using MmaOperand = Array<bfloat16_t, MmaElements>;
    using ScaleBiasOperand = Array<bfloat16_t, MmaElements * MmaScaleBiasPair>;

    CUTLASS_DEVICE
    void transform(MmaOperand &activations, ScaleBiasOperand const &scale_bias) {
        uint32_t *a = reinterpret_cast<uint32_t *>(&activations);
        uint32_t const *sb = reinterpret_cast<uint32_t const *>(&scale_bias);
        asm volatile(
            "{\n\t"
            " .reg .pred %%p;\n\t"
            " .reg .b32 t1;\n\t"
            " setp.eq.u32 %%p, %2, %4;\n\t"
            " fma.rn.relu.bf16x2 t1, %1, %2, %3;\n"
            " selp.u32 %0, 0, t1, %%p;\n\t"
            "}\n"
            : "=r"(a[0])
            : "r"(sb[0]), "r"(a[0]), "r"(sb[1]), "n"(cutlass::arch::OOB_NAN_F16x2));
    }

    CUTLASS_DEVICE
    void operator()(FragmentActivations &activations, FragmentScaleBias const &scale_bias) {
        MmaOperand *pa = reinterpret_cast<MmaOperand *>(&activations);
        ScaleBiasOperand const *psb = reinterpret_cast<ScaleBiasOperand const *>(&scale_bias);
        CUTLASS_PRAGMA_UNROLL
        for (int i = 0; i < NumActivations / MmaElements; ++i) transform(pa[i], psb[(i / MmaScaleBiasPair) % MmaCols]);
    }
};
} // namespace warp
} // namespace conv
} // namespace cutlass

using namespace cute;
using Bf16 = cutlass::bfloat16_t;
static constexpr int kAlign = 8; /* 16 bytes of bf16 */
static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

/* ---- Hopper: the GEMM and its statistics epilogue --------------------------------------------- */
using HopperTile = Shape<_128, _128, _64>;
using HopperCluster = Shape<_2, _1, _1>; /* along M, which is always many tiles */

template <class T> struct take_first {
    CUTLASS_HOST_DEVICE T operator()(T const &a, T const &) const { return a; }
};
template <class T> struct squared {
    CUTLASS_HOST_DEVICE T operator()(T const &a) const { return cutlass::multiplies<T>{}(a, a); }
};

namespace fusion = cutlass::epilogue::fusion;
/* sum over the rows (M) of each column: one float a column, atomics across the CTAs */
using ColumnSum = fusion::Sm90RowReduction<cutlass::plus, cutlass::plus, cutlass::atomic_add, 0, HopperTile, float,
                                           float, kRound>;
using SumOfAcc = fusion::Sm90EVT<ColumnSum, fusion::Sm90AccFetch>;
using SumOfSquares =
    fusion::Sm90EVT<ColumnSum, fusion::Sm90EVT<fusion::Sm90Compute<squared, float, float, kRound>, fusion::Sm90AccFetch>>;
/* D = the accumulator (each reduction passes its input on), the two sums on the way */
using StatsEpilogue = fusion::Sm90EVT<fusion::Sm90Compute<take_first, Bf16, float, kRound>, SumOfAcc, SumOfSquares>;
using PlainEpilogue = fusion::LinearCombination<Bf16, float, void, float, kRound>;

template <class Fusion> struct HopperGemm {
    using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, HopperTile, HopperCluster,
        cutlass::epilogue::collective::EpilogueTileAuto, float, float, void, cutlass::layout::RowMajor, kAlign, Bf16,
        cutlass::layout::RowMajor, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative, Fusion>::CollectiveOp;
    using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
        cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Bf16, cutlass::layout::RowMajor, kAlign, Bf16,
        cutlass::layout::ColumnMajor, kAlign, float, HopperTile, HopperCluster,
        cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
        cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
    using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue>;
    using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

/* ---- Ampere: the plain GEMM and the fprop with main-loop fusion ------------------------------ */
using AmpereBlock = cutlass::gemm::GemmShape<128, 128, 32>;
using AmpereWarp = cutlass::gemm::GemmShape<64, 64, 32>;
using AmpereMma = cutlass::gemm::GemmShape<16, 8, 16>;
using AmpereOutput = cutlass::epilogue::thread::LinearCombination<Bf16, kAlign, float, float>;
using AmpereGemm = cutlass::gemm::device::Gemm<Bf16, cutlass::layout::RowMajor, Bf16, cutlass::layout::ColumnMajor, Bf16,
                                               cutlass::layout::RowMajor, float, cutlass::arch::OpClassTensorOp,
                                               cutlass::arch::Sm80, AmpereBlock, AmpereWarp, AmpereMma, AmpereOutput,
                                               cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, 4>;
using AmpereFusionKernel = typename cutlass::conv::kernel::DefaultConv2dFpropFusion<
    Bf16, cutlass::layout::TensorNHWC, Bf16, cutlass::layout::TensorNHWC, Bf16, cutlass::layout::RowMajor, Bf16,
    cutlass::layout::TensorNHWC, float, cutlass::arch::OpClassTensorOp, cutlass::arch::Sm80, AmpereBlock, AmpereWarp,
    AmpereMma, AmpereOutput, cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<>, 4,
    cutlass::arch::OpMultiplyAdd, cutlass::conv::IteratorAlgorithm::kOptimized>::Kernel;
using AmpereFusion = cutlass::conv::device::ImplicitGemmConvolutionFusion<AmpereFusionKernel>;

#define CHECK_CUTLASS(call)                                                                              \
    do {                                                                                                 \
        cutlass::Status status_ = (call);                                                                \
        if (status_ != cutlass::Status::kSuccess)                                                        \
            suite_check_fail("CUTLASS", #call, __FILE__, __LINE__, (long)status_,                        \
                             cutlassGetStatusString(status_));                                           \
    } while (0)

/* ---- one shape ------------------------------------------------------------------------------- */

typedef struct buffers {
    void *a, *applied, *w, *d, *d_ref, *scale_t, *bias_t, *bn_out, *bn_scratch, *workspace, *cutlass_ws;
    float *scale, *bias, *zeros, *unit_var, *sum, *sqsum, *bn_mean, *bn_invstd;
    double *ref_sum, *ref_sumsq;
    size_t workspace_bytes, cutlass_ws_bytes;
} buffers;

typedef struct shape_case {
    int m, n, k; /* rows, output channels, input channels */
    int batch, h, w;
    cudaStream_t stream;
    buffers *b;
} shape_case;

static const double OUTPUT_TOLERANCE = 1.0 / 64, STAT_TOLERANCE = 1e-2; /* lab/conv_bn_roads.md */

/* Output against the reference, and (with sums) each channel's mean and variance: 1 if it passes. */
static int check(const shape_case *c, const double *mean, const double *var, int with_stats, double *worst) {
    double diff, largest;
    ref_max_diff(&diff, &largest, c->b->d, c->b->d_ref, (size_t)c->m * c->n, REF_BF16, c->stream);
    *worst = largest > 0 ? diff / largest : diff;
    int ok = *worst <= OUTPUT_TOLERANCE;
    if (!with_stats) return ok;
    float *sum = (float *)malloc((size_t)c->n * sizeof(float)), *sq = (float *)malloc((size_t)c->n * sizeof(float));
    if (!sum || !sq) exit(1);
    CHECK_CUDA(cudaMemcpy(sum, c->b->sum, (size_t)c->n * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(sq, c->b->sqsum, (size_t)c->n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int j = 0; j < c->n; j++) {
        double m = sum[j] / (double)c->m, v = sq[j] / (double)c->m - m * m, sd = sqrt(var[j]);
        double e = fmax(fabs(m - mean[j]) / (sd > 0 ? sd : 1), fabs(v - var[j]) / (var[j] > 0 ? var[j] : 1));
        if (!(e <= STAT_TOLERANCE)) ok = 0;
    }
    free(sum), free(sq);
    return ok;
}

template <class Gemm> struct hopper_run {
    Gemm gemm;
    const shape_case *c;
    int stats;
};

template <class Gemm> static void run_hopper(void *arg) {
    hopper_run<Gemm> *r = (hopper_run<Gemm> *)arg;
    if (r->stats) {
        CHECK_CUDA(cudaMemsetAsync(r->c->b->sum, 0, (size_t)r->c->n * sizeof(float), r->c->stream));
        CHECK_CUDA(cudaMemsetAsync(r->c->b->sqsum, 0, (size_t)r->c->n * sizeof(float), r->c->stream));
    }
    CHECK_CUTLASS(r->gemm.run(r->c->stream));
}

/* Hopper's GEMM on input `a` (the applied input: its prologue is our apply pass), timed. */
template <class Fusion>
static float time_hopper(const shape_case *c, const void *a, int stats, int runs, const double *mean,
                         const double *var, double *worst, int *ok) {
    using Gemm = typename HopperGemm<Fusion>::Gemm;
    using Kernel = typename Gemm::GemmKernel;
    typename Kernel::StrideA sa = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, make_shape(c->m, c->k, 1));
    typename Kernel::StrideB sb = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, make_shape(c->n, c->k, 1));
    typename Kernel::StrideC sc = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, make_shape(c->m, c->n, 1));
    typename Kernel::StrideD sd = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, make_shape(c->m, c->n, 1));
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                  {c->m, c->n, c->k, 1},
                                  {(const Bf16 *)a, sa, (const Bf16 *)c->b->w, sb},
                                  {{}, nullptr, sc, (Bf16 *)c->b->d, sd}};
    if constexpr (std::is_same_v<Fusion, StatsEpilogue>) {
        args.epilogue.thread = {{{}, {c->b->sum, 0.0f, {}}}, {{{}, {}}, {c->b->sqsum, 0.0f, {}}}, {}};
    } else {
        args.epilogue.thread.alpha = 1.0f;
        args.epilogue.thread.beta = 0.0f;
    }
    hopper_run<Gemm> r;
    r.c = c, r.stats = stats;
    if (r.gemm.can_implement(args) != cutlass::Status::kSuccess) return *ok = 0, -1.0f;
    size_t ws = Gemm::get_workspace_size(args);
    if (ws > c->b->cutlass_ws_bytes) return *ok = 0, -1.0f;
    CHECK_CUTLASS(r.gemm.initialize(args, c->b->cutlass_ws, c->stream));
    run_hopper<Gemm>(&r);
    CHECK_CUDA(cudaStreamSynchronize(c->stream));
    *ok = check(c, mean, var, stats, worst);
    return gpu_timer_median_ms(c->stream, run_hopper<Gemm>, &r, runs);
}

typedef struct ampere_run {
    AmpereGemm gemm;
    AmpereFusion fusion;
    int fused;
    cudaStream_t stream;
} ampere_run;

static void run_ampere(void *arg) {
    ampere_run *r = (ampere_run *)arg;
    if (r->fused) CHECK_CUTLASS(r->fusion.run(r->stream));
    else CHECK_CUTLASS(r->gemm.run(r->stream));
}

/* The sm80 GEMM on the applied input (fused = 0), or the fprop with the prologue on the raw input. */
static float time_ampere(const shape_case *c, int fused, int runs, double *worst, int *ok) {
    static ampere_run r; /* the operators are large */
    r.fused = fused, r.stream = c->stream;
    buffers *b = c->b;
    if (fused) {
        cutlass::conv::Conv2dProblemSize problem({c->batch, c->h, c->w, c->k}, {c->n, 1, 1, c->k}, {0, 0, 0, 0},
                                                 {1, 1}, {1, 1}, {c->batch, c->h, c->w, c->n},
                                                 cutlass::conv::Mode::kCrossCorrelation, 1);
        using NHWC = cutlass::layout::TensorNHWC;
        AmpereFusion::Arguments args{
            problem,
            cutlass::TensorRef<Bf16, NHWC>((Bf16 *)b->a, NHWC::packed({c->batch, c->h, c->w, c->k})),
            cutlass::TensorRef<Bf16, NHWC>((Bf16 *)b->w, NHWC::packed({c->n, 1, 1, c->k})),
            cutlass::TensorRef<Bf16, cutlass::layout::RowMajor>((Bf16 *)b->scale_t, cutlass::layout::RowMajor(c->k)),
            cutlass::TensorRef<Bf16, cutlass::layout::RowMajor>((Bf16 *)b->bias_t, cutlass::layout::RowMajor(c->k)),
            cutlass::TensorRef<Bf16, NHWC>((Bf16 *)b->d, NHWC::packed({c->batch, c->h, c->w, c->n})),
            cutlass::TensorRef<Bf16, NHWC>((Bf16 *)b->d, NHWC::packed({c->batch, c->h, c->w, c->n})),
            {1.0f, 0.0f}};
        if (r.fusion.can_implement(args) != cutlass::Status::kSuccess ||
            AmpereFusion::get_workspace_size(args) > b->cutlass_ws_bytes)
            return *ok = 0, -1.0f;
        CHECK_CUTLASS(r.fusion.initialize(args, b->cutlass_ws, c->stream));
    } else {
        AmpereGemm::Arguments args({c->m, c->n, c->k}, {(const Bf16 *)b->applied, c->k}, {(const Bf16 *)b->w, c->k},
                                   {(Bf16 *)b->d, c->n}, {(Bf16 *)b->d, c->n}, {1.0f, 0.0f});
        if (r.gemm.can_implement(args) != cutlass::Status::kSuccess) return *ok = 0, -1.0f;
        CHECK_CUTLASS(r.gemm.initialize(args, b->cutlass_ws, c->stream));
    }
    run_ampere(&r);
    CHECK_CUDA(cudaStreamSynchronize(c->stream));
    *ok = check(c, NULL, NULL, 0, worst);
    return gpu_timer_median_ms(c->stream, run_ampere, &r, runs);
}

typedef struct bn_run {
    const buffers *b;
    const void *x;
    int rows, C, train;
    cudaStream_t stream;
} bn_run;

/* Our passes as the probe times them (bench/conv_bn_probe.c): apply, or statistics then apply. */
static void run_bn(void *arg) {
    const bn_run *r = (const bn_run *)arg;
    const buffers *b = r->b;
    if (r->train)
        bn_act_forward_train(b->bn_out, NULL, b->bn_mean, b->bn_invstd, NULL, NULL, r->x, NULL, b->scale, b->bias,
                             r->rows, r->C, 1e-5f, 0.1f, ACT_RELU, ELEM_BF16, b->bn_scratch, r->stream);
    else
        bn_act_forward_infer(b->bn_out, r->x, NULL, b->scale, b->bias, b->zeros, b->unit_var,
                             r->rows, r->C, 1e-5f, ACT_RELU, ELEM_BF16, r->stream);
}

static float time_bn(const buffers *b, const void *x, int rows, int C, int train, int runs, cudaStream_t stream) {
    bn_run r = {b, x, rows, C, train, stream};
    run_bn(&r);
    return gpu_timer_median_ms(stream, run_bn, &r, runs);
}

static void *device_alloc(size_t bytes) {
    void *p = NULL;
    CHECK_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
    CHECK_CUDA(cudaMemset(p, 0, bytes ? bytes : 1));
    return p;
}

int main(int argc, char **argv) {
    int batch = 256, image = 224, runs = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--image-size") && i + 1 < argc) image = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: gemm_bn_cutlass [--batch N (1..1024)] [--image-size PX (32..512)] [--runs N (1..64)]\n"
                            "gemm_bn_cutlass: '%s' is not one of these\n", argv[i]);
            return 2;
        }
    }
    if (batch < 1 || batch > 1024 || image < 32 || image > 512 || runs < 1 || runs > 64) {
        fprintf(stderr, "gemm_bn_cutlass: --batch must be 1..1024, --image-size 32..512, --runs 1..64 (got %d, %d, %d)\n",
                batch, image, runs);
        return 2;
    }
    char err[256];
    conv_entry e[CONV_ENTRIES_MAX];
    int n = conv_entries(e, batch, image, 0, err, sizeof err);
    if (n < 0) return fprintf(stderr, "gemm_bn_cutlass: %s\n", err), 2;
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return fprintf(stderr, "gemm_bn_cutlass: no CUDA device\n"), 1;
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cudnnHandle_t cudnn;
    CHECK_CUDNN(cudnnCreate(&cudnn));

    size_t act = 0, filt = 0, chan = 0;
    for (int i = 0; i < n; i++) {
        const conv_shape *s = &e[i].shape;
        size_t in = (size_t)s->batch * s->h_in * s->w_in * s->in_c, out = (size_t)s->batch * s->h_out * s->w_out * s->out_c;
        act = std::max(act, std::max(in, out));
        filt = std::max(filt, (size_t)s->out_c * s->in_c);
        chan = std::max(chan, (size_t)std::max(s->in_c, s->out_c));
    }
    buffers b = {};
    b.a = device_alloc(act * 2), b.applied = device_alloc(act * 2), b.d = device_alloc(act * 2);
    b.d_ref = device_alloc(act * 2), b.bn_out = device_alloc(act * 2), b.w = device_alloc(filt * 2);
    b.scale_t = device_alloc(chan * 2), b.bias_t = device_alloc(chan * 2);
    float **floats[] = {&b.scale, &b.bias, &b.zeros, &b.unit_var, &b.sum, &b.sqsum, &b.bn_mean, &b.bn_invstd};
    for (float **f : floats) *f = (float *)device_alloc(chan * sizeof(float));
    b.ref_sum = (double *)device_alloc(chan * sizeof(double)), b.ref_sumsq = (double *)device_alloc(chan * sizeof(double));
    b.bn_scratch = device_alloc(bn_scratch_bytes(1, (int)chan));
    b.workspace_bytes = (size_t)512 << 20, b.workspace = device_alloc(b.workspace_bytes);
    b.cutlass_ws_bytes = (size_t)64 << 20, b.cutlass_ws = device_alloc(b.cutlass_ws_bytes);

    printf("cuDNN %zu, CUTLASS %d.%d.%d; ResNet-50 %dx%d batch %d, stride-1 1x1 convolutions in bf16; medians of %d "
           "runs, ms\n", cudnnGetVersion(), CUTLASS_MAJOR, CUTLASS_MINOR, CUTLASS_PATCH, image, image, batch, runs);
    printf("%-4s %-16s %3s %7s %7s %7s | %7s %8s %7s %8s | %8s %8s  %s\n", "role", "shape", "n", "apply", "cudnn",
           "stats", "hopper", "h+stats", "ampere", "a+bn", "bound", "saving", "checks (worst output error)");
    double total_saving = 0, total_untaxed = 0, total_unfused = 0;
    for (int i = 0; i < n; i++) {
        const conv_shape *s = &e[i].shape;
        if (s->kernel != 1 || s->stride != 1) continue; /* strided downsamples are not plain GEMMs */
        shape_case c = {s->batch * s->h_in * s->w_in, s->out_c, s->in_c, s->batch, s->h_in, s->w_in, stream, &b};
        int prologue = conv_role_has_prologue(e[i].role);
        uint64_t seed = 0x0c07a55u + 16u * (unsigned)i;
        float bound_w = sqrtf(3.0f / (float)c.k);
        ref_fill_uniform(b.a, (size_t)c.m * c.k, -1.0f, 1.0f, seed, REF_BF16, stream);
        ref_fill_uniform(b.w, (size_t)c.n * c.k, -bound_w, bound_w, seed + 1, REF_BF16, stream);
        ref_fill_uniform(b.scale, (size_t)c.k, 0.5f, 1.5f, seed + 2, REF_F32, stream);
        ref_fill_uniform(b.bias, (size_t)c.k, -0.5f, 0.5f, seed + 3, REF_F32, stream);
        ref_round_floats(b.scale, (size_t)c.k, REF_BF16, stream);
        ref_round_floats(b.bias, (size_t)c.k, REF_BF16, stream);
        ref_from_floats(b.scale_t, b.scale, (size_t)c.k, REF_BF16, stream);
        ref_from_floats(b.bias_t, b.bias, (size_t)c.k, REF_BF16, stream);
        ref_fill_uniform(b.unit_var, chan, 1.0f - 1e-5f, 1.0f - 1e-5f, 0, REF_F32, stream);
        if (prologue) ref_apply_relu(b.applied, b.a, b.scale, b.bias, (size_t)c.m, c.k, REF_BF16, stream);
        else CHECK_CUDA(cudaMemcpyAsync(b.applied, b.a, (size_t)c.m * c.k * 2, cudaMemcpyDeviceToDevice, stream));

        /* the reference and the unfused path: cuDNN's convolution of the applied input */
        conv_shape bs = *s;
        bs.data_type = CUDNN_DATA_BFLOAT16;
        cb_buffers cb = {};
        cb.x = b.applied, cb.w = b.w, cb.y = b.d_ref, cb.workspace = b.workspace, cb.workspace_limit = b.workspace_bytes;
        cb_spec spec = {CB_CONV, bs, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT};
        cb_result conv;
        cb_search(&conv, &spec, cudnn, stream, &cb, NULL, NULL, runs, 0);
        if (conv.ms < 0.0f) {
            char text[400];
            cb_describe(&conv, text, sizeof text);
            printf("%-4s %dx%d: cuDNN has no convolution: %s\n", conv_role_name(e[i].role), c.k, c.n, text);
            cb_result_free(&conv);
            continue;
        }
        float cudnn_ms = conv.ms;
        cb_execute(&conv, &spec, cudnn, &cb);
        cb_result_free(&conv);
        ref_channel_sums(b.ref_sum, b.ref_sumsq, b.d_ref, (size_t)c.m, c.n, REF_BF16, stream);
        double *mean = (double *)malloc((size_t)c.n * sizeof(double)), *var = (double *)malloc((size_t)c.n * sizeof(double));
        if (!mean || !var) exit(1);
        CHECK_CUDA(cudaMemcpy(mean, b.ref_sum, (size_t)c.n * sizeof(double), cudaMemcpyDeviceToHost));
        CHECK_CUDA(cudaMemcpy(var, b.ref_sumsq, (size_t)c.n * sizeof(double), cudaMemcpyDeviceToHost));
        for (int j = 0; j < c.n; j++) mean[j] /= c.m, var[j] = var[j] / c.m - mean[j] * mean[j];
        /* apply on the input, statistics (forward_train less forward_infer) on the output */
        float apply = prologue ? time_bn(&b, b.a, c.m, c.k, 0, runs, stream) : 0.0f;
        float stats = std::max(0.0f, time_bn(&b, b.d_ref, c.m, c.n, 1, runs, stream) -
                                         time_bn(&b, b.d_ref, c.m, c.n, 0, runs, stream));

        double worst[4] = {0, 0, 0, 0};
        int ok[4] = {0, 0, 0, 0};
        float hopper = time_hopper<PlainEpilogue>(&c, b.applied, 0, runs, mean, var, &worst[0], &ok[0]);
        float hopper_stats = time_hopper<StatsEpilogue>(&c, b.applied, 1, runs, mean, var, &worst[1], &ok[1]);
        float ampere = time_ampere(&c, 0, runs, &worst[2], &ok[2]);
        float ampere_bn = prologue ? time_ampere(&c, 1, runs, &worst[3], &ok[3]) : -1.0f;
        free(mean), free(var);

        /* the roads' score (lab/conv_bn_roads.md, road 2): each combination whose kernels passed,
         * a fused prologue paying the apply again in the backward (the wgrad tax) */
        float unfused = apply + cudnn_ms + stats, best = 0.0f, best_untaxed = 0.0f, bound = -1.0f;
        const char *from = "none";
        struct { const char *name; int valid; float fused, tax; } options[4] = {
            {"hopper", ok[0], apply + hopper + stats, 0.0f},
            {"h+stats", ok[1], apply + hopper_stats, 0.0f},
            {"a+bn", prologue && ok[3], ampere_bn + stats, apply},
            {"bound", prologue && ok[0] && ok[1] && ok[3], ampere_bn + hopper_stats - hopper, apply}};
        if (options[3].valid) bound = options[3].fused;
        for (const auto &o : options) {
            if (!o.valid) continue;
            if (unfused - o.fused - o.tax > best) best = unfused - o.fused - o.tax, from = o.name;
            best_untaxed = std::max(best_untaxed, unfused - o.fused);
        }
        total_saving += e[i].count * (double)best;
        total_untaxed += e[i].count * (double)best_untaxed;
        total_unfused += e[i].count * (double)unfused;
        char shape[32], checks[160];
        snprintf(shape, sizeof shape, "%d>%d @%d", c.k, c.n, c.h);
        snprintf(checks, sizeof checks, "hopper %s %.1e, h+stats %s %.1e, ampere %s %.1e%s", ok[0] ? "ok" : "FAIL",
                 worst[0], ok[1] ? "ok" : "FAIL", worst[1], ok[2] ? "ok" : "FAIL", worst[2],
                 prologue ? (ok[3] ? ", a+bn ok" : ", a+bn FAIL") : "");
        if (prologue) snprintf(checks + strlen(checks), sizeof checks - strlen(checks), " %.1e", worst[3]);
        printf("%-4s %-16s %3d %7.3f %7.3f %7.3f | %7.3f %8.3f %7.3f %8.3f | %8.3f %8.3f  %s (best: %s)\n",
               conv_role_name(e[i].role), shape, e[i].count, apply, cudnn_ms, stats, hopper, hopper_stats, ampere,
               ampere_bn, bound, best, checks, from);
    }
    const double needed = 1.4;
    printf("\nstride-1 1x1 convolutions of one forward: unfused %.3f ms; best fused saving %.3f ms with the wgrad tax "
           "(%.3f ms if the backward took the prologue for free); road 2's rule asks %.1f ms: %s\n",
           total_unfused, total_saving, total_untaxed, needed, total_saving >= needed ? "go on" : "stop");
    CHECK_CUDNN(cudnnDestroy(cudnn));
    void *all[] = {b.a, b.applied, b.w, b.d, b.d_ref, b.scale_t, b.bias_t, b.bn_out, b.bn_scratch, b.workspace,
                   b.cutlass_ws, b.scale, b.bias, b.zeros, b.unit_var, b.sum, b.sqsum, b.bn_mean, b.bn_invstd,
                   b.ref_sum, b.ref_sumsq};
    for (void *p : all) CHECK_CUDA(cudaFree(p));
    CHECK_CUDA(cudaStreamDestroy(stream));
    return 0;
}
