/* sgd_update against torch.optim.SGD's update rule (dampening 0), computed in double on the host
 * over several steps: momentum with and without Nesterov, plain SGD without a buffer, weight decay
 * only on the first n_decay elements (n_decay and n not multiples of 4), the float4 path and the
 * scalar path for misaligned pointers, and a large flat buffer. adamw_update against
 * torch.optim.AdamW's rule in the same way. Both with bf16 training's copies of the first n_half
 * elements (n_half not a multiple of 4 either): the reference steps with the bfloat16-rounded
 * gradients, the float32 gradients there are NaN (reading them fails), and the bfloat16 weight
 * copy must hold, bit for bit, the host's rounding of the GPU's float32 weights and nothing past
 * n_half; each copy alone, both, and misaligned copies. lr_schedule_step against the
 * host's lr_at, directly and inside a replayed CUDA graph that also runs the update. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kernels/kernels.h"
#include "kernels/check.h"
#include "tests/support/testutil.h"

static float *host_alloc(size_t n) {
    float *h = malloc((n ? n : 1) * sizeof(float));
    assert_non_null(h);
    return h;
}

static void upload(float *device, const float *host, size_t n) {
    CHECK_CUDA(cudaMemcpy(device, host, n * sizeof(float), cudaMemcpyHostToDevice));
}

static float *dev_alloc(size_t n) {
    float *d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&d, (n + 4) * sizeof(float)));
    return d;
}

/* bf16 training's copies of the first n_half elements, as a case passes them. */
#define HALF_GUARD 4 /* poisoned elements past n_half in the weight copy: nothing may write them */
#define HALF_POISON 0xFFFFu /* a bfloat16 NaN, which no finite weight rounds to */
typedef struct half_case {
    size_t n_half;
    int grads, weights; /* which copies are passed (the other is NULL) */
    int shift;          /* elements the copies are moved by: 1 misaligns them (the scalar path) */
} half_case;
static const half_case NO_HALF = {0, 0, 0, 0};

typedef struct half_bufs {
    uint16_t *w, *g; /* device, NULL where the case passes none */
    uint16_t *bits;  /* host, n_half + HALF_GUARD */
} half_bufs;

static uint16_t *half_dev_alloc(const half_case *h) {
    uint16_t *d = NULL;
    size_t bytes = (h->n_half + HALF_GUARD + 4) * sizeof(uint16_t);
    CHECK_CUDA(cudaMalloc((void **)&d, bytes));
    CHECK_CUDA(cudaMemset(d, 0xFF, bytes)); /* gradients read past n_half are NaN */
    return d + h->shift;
}

static half_bufs half_alloc(const half_case *h) {
    half_bufs b = {h->weights ? half_dev_alloc(h) : NULL, h->grads ? half_dev_alloc(h) : NULL,
                   malloc((h->n_half + HALF_GUARD) * sizeof(uint16_t))};
    assert_non_null(b.bits);
    return b;
}

static void half_free(half_bufs *b, const half_case *h) {
    if (b->w) CHECK_CUDA(cudaFree(b->w - h->shift));
    if (b->g) CHECK_CUDA(cudaFree(b->g - h->shift));
    free(b->bits);
}

/* One step's gradients g: g_ref gets what the update must use (below n_half the bfloat16 rounding,
 * when the case passes bfloat16 gradients, which go up); the float32 buffer is NaN there, so an
 * update that reads it instead fails. The weight copy is poisoned before each update. */
static void upload_grads(float *g_d, float *g_ref, const float *g, size_t n, const half_case *h, half_bufs *b) {
    memcpy(g_ref, g, n * sizeof(float));
    upload(g_d, g, n);
    if (b->g) {
        for (size_t i = 0; i < h->n_half; i++) b->bits[i] = test_bf16_of(g[i]), g_ref[i] = test_float_of_bf16(b->bits[i]);
        CHECK_CUDA(cudaMemcpy(b->g, b->bits, h->n_half * sizeof(uint16_t), cudaMemcpyHostToDevice));
        test_poison(g_d, h->n_half);
    }
    if (b->w) CHECK_CUDA(cudaMemset(b->w, 0xFF, (h->n_half + HALF_GUARD) * sizeof(uint16_t)));
}

/* The weight copy against the host's rounding of the GPU's float32 weights (got), bit for bit, and
 * the guard past n_half untouched. */
static void check_half_weights(const char *what, const float *got, const half_case *h, half_bufs *b, int step) {
    if (!b->w) return;
    CHECK_CUDA(cudaMemcpy(b->bits, b->w, (h->n_half + HALF_GUARD) * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < h->n_half + HALF_GUARD; i++) {
        uint16_t want = i < h->n_half ? test_bf16_of(got[i]) : HALF_POISON;
        if (b->bits[i] != want) {
            fprintf(stderr, "%s bfloat16 weight copy (n_half=%zu, after step %d): element %zu is 0x%04x, expected "
                    "0x%04x\n", what, h->n_half, step, i, b->bits[i], want);
            fail();
        }
    }
}

/* torch.optim.SGD.step for one element: d_p = grad (+ wd * p); buf = momentum * buf + d_p (the
 * first step's clone(d_p) is the same from a zero buffer); d_p = nesterov ? d_p + momentum * buf
 * : buf; p -= lr * d_p. With momentum 0 there is no buffer (sgd_update leaves it untouched). */
static void ref_sgd(double *p, double *buf, const float *grad, size_t n, size_t n_decay, double lr,
                    double momentum, double wd, int nesterov) {
    for (size_t i = 0; i < n; i++) {
        double d = grad[i] + (i < n_decay ? wd * p[i] : 0.0);
        if (momentum != 0.0) {
            buf[i] = momentum * buf[i] + d;
            d = nesterov ? d + momentum * buf[i] : buf[i];
        }
        p[i] -= lr * d;
    }
}

static void expect_err(const char *what, size_t n, int step, double err, double tol) {
    if (!(err < tol)) {
        fprintf(stderr, "%s (n=%zu, after step %d): relative error %.3g, expected < %.1g\n", what, n,
                step, err, tol);
        fail();
    }
}

/* The weights start in [-1, 1] and each step moves them by up to lr * 2: float rounding is relative
 * to that scale, so a weight that lands near 0 (one element of n = 1 did, at 2e-6 relative) is
 * measured against 1, not against itself. */
static double err_unit_scale(const float *got, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(got[i])) return INFINITY;
        double d = got[i] - ref[i];
        num += d * d;
        den += fmax(ref[i] * ref[i], 1.0);
    }
    return sqrt(num / den);
}

static void check_sgd(size_t n, size_t n_decay, float momentum, float wd, int nesterov, int with_buf,
                      int shift, half_case h, uint64_t seed) {
    uint64_t rng = seed;
    float *p = host_alloc(n), *g = host_alloc(n), *g_ref = host_alloc(n), *got = host_alloc(n);
    half_bufs half = half_alloc(&h);
    double *p_ref = malloc(n * sizeof(double)), *buf_ref = calloc(n, sizeof(double));
    assert_non_null(p_ref);
    assert_non_null(buf_ref);
    test_fill_uniform(p, n, &rng, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) p_ref[i] = p[i];
    float *p_d = dev_alloc(n) + shift, *g_d = dev_alloc(n) + shift, *lr_d = dev_alloc(1);
    float *buf_d = with_buf ? dev_alloc(n) + shift : NULL;
    upload(p_d, p, n);
    if (buf_d) CHECK_CUDA(cudaMemset(buf_d, 0, n * sizeof(float))); /* the arena zeroes it */
    const float lrs[] = {0.1f, 0.05f, 0.2f, 0.01f};
    for (int step = 0; step < 4; step++) {
        test_fill_uniform(g, n, &rng, -1.0f, 1.0f);
        upload_grads(g_d, g_ref, g, n, &h, &half);
        upload(lr_d, &lrs[step], 1);
        sgd_update(p_d, buf_d, half.w, g_d, half.g, lr_d, n, n_decay, h.n_half, momentum, wd, nesterov, 0);
        ref_sgd(p_ref, buf_ref, g_ref, n, n_decay, lrs[step], momentum, wd, nesterov);
        test_to_host(got, p_d, n);
        expect_err("sgd params", n, step, err_unit_scale(got, p_ref, n), 1e-6);
        check_half_weights("sgd", got, &h, &half, step);
        if (buf_d) {
            test_to_host(got, buf_d, n);
            expect_err("sgd momentum buffer", n, step, err_unit_scale(got, buf_ref, n), 1e-6);
        }
    }
    CHECK_CUDA(cudaFree(p_d - shift));
    CHECK_CUDA(cudaFree(g_d - shift));
    CHECK_CUDA(cudaFree(lr_d));
    if (buf_d) CHECK_CUDA(cudaFree(buf_d - shift));
    half_free(&half, &h);
    free(p); free(g); free(g_ref); free(got); free(p_ref); free(buf_ref);
}

static void test_sgd(void **state) {
    (void)state;
    const size_t sizes[][2] = {{1, 1}, {3, 0}, {4, 4}, {5, 2}, {10, 7}, {1000, 333}, {1001, 1001},
                               {4099, 4000}, {(1u << 20) + 3, 700001}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        size_t n = sizes[s][0], n_decay = sizes[s][1];
        check_sgd(n, n_decay, 0.9f, 5e-4f, 0, 1, 0, NO_HALF, 100 + s);
        check_sgd(n, n_decay, 0.9f, 1e-4f, 1, 1, 0, NO_HALF, 200 + s);
        check_sgd(n, n_decay, 0.0f, 5e-4f, 0, 0, 0, NO_HALF, 300 + s);  /* plain SGD, no buffer */
        check_sgd(n, n_decay, 0.0f, 5e-4f, 1, 1, 0, NO_HALF, 400 + s);  /* momentum 0: buffer untouched */
        check_sgd(n, n_decay, 0.8f, 1e-3f, 1, 1, 1, NO_HALF, 500 + s);  /* misaligned: scalar path */
    }
}

/* {n, n_decay, n_half}: n_half cuts a float4 item (3, 7, 998, 4001, 700001), ends on one (4000), is
 * n itself (1, 1001) or 0 with both copies passed (nothing written). */
static const size_t HALF_SIZES[][3] = {{1, 1, 1}, {5, 2, 3}, {10, 7, 7}, {9, 9, 0}, {1000, 333, 998},
                                       {1001, 1001, 1001}, {4099, 4000, 4000}, {4099, 4000, 4001},
                                       {(1u << 20) + 3, 700001, 700001}};
#define HALF_SIZE_COUNT (sizeof HALF_SIZES / sizeof *HALF_SIZES)

/* The copies a fused case passes: both, each alone, both misaligned. */
static const half_case HALF_KINDS[] = {{0, 1, 1, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 1, 1, 1}};
#define HALF_KIND_COUNT (sizeof HALF_KINDS / sizeof *HALF_KINDS)

static void test_sgd_half(void **state) {
    (void)state;
    for (size_t s = 0; s < HALF_SIZE_COUNT; s++) {
        size_t n = HALF_SIZES[s][0], n_decay = HALF_SIZES[s][1];
        for (size_t k = 0; k < HALF_KIND_COUNT; k++) {
            half_case h = HALF_KINDS[k];
            h.n_half = HALF_SIZES[s][2];
            if (h.n_half == 0 && !(h.grads && h.weights)) continue; /* n_half > 0 needs a copy */
            uint64_t seed = 1000 + 10 * s + k;
            check_sgd(n, n_decay, 0.9f, 5e-4f, 1, 1, 0, h, seed);
            check_sgd(n, n_decay, 0.0f, 5e-4f, 0, 0, 0, h, seed + 100); /* plain SGD, no buffer */
            check_sgd(n, n_decay, 0.8f, 1e-3f, 0, 1, 1, h, seed + 200); /* misaligned floats: scalar path */
        }
    }
}

/* ResNet-50 has 25.6M parameters: one update over a buffer of that size, float32 alone and with
 * both bfloat16 copies of its weights with decay (as bf16 training passes them). */
static void test_sgd_large(void **state) {
    (void)state;
    check_sgd(25557032, 25503912, 0.9f, 5e-5f, 1, 1, 0, NO_HALF, 600);
    check_sgd(25557032, 25503912, 0.9f, 5e-5f, 1, 1, 0, (half_case){25503912, 1, 1, 0}, 601);
}

/* torch.optim.AdamW.step (amsgrad off) for one element, in double. */
static void ref_adamw(double *p, double *m, double *v, const float *grad, size_t n, size_t n_decay,
                      double lr, long t, double b1, double b2, double eps, double wd) {
    double bias1 = 1.0 - pow(b1, (double)t), bias2 = 1.0 - pow(b2, (double)t);
    for (size_t i = 0; i < n; i++) {
        if (i < n_decay) p[i] *= 1.0 - lr * wd;
        m[i] = b1 * m[i] + (1.0 - b1) * grad[i];
        v[i] = b2 * v[i] + (1.0 - b2) * (double)grad[i] * grad[i];
        p[i] -= lr / bias1 * m[i] / (sqrt(v[i]) / sqrt(bias2) + eps);
    }
}

static void check_adamw(size_t n, size_t n_decay, int shift, half_case h, uint64_t seed) {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.05;
    uint64_t rng = seed;
    float *p = host_alloc(n), *g = host_alloc(n), *g_ref = host_alloc(n), *got = host_alloc(n);
    half_bufs half = half_alloc(&h);
    double *p_ref = malloc(n * sizeof(double)), *m_ref = calloc(n, sizeof(double));
    double *v_ref = calloc(n, sizeof(double));
    assert_true(p_ref && m_ref && v_ref);
    test_fill_uniform(p, n, &rng, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) p_ref[i] = p[i];
    float *p_d = dev_alloc(n) + shift, *g_d = dev_alloc(n) + shift, *lr_d = dev_alloc(1);
    float *m_d = dev_alloc(n) + shift, *v_d = dev_alloc(n) + shift;
    int64_t *step_d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&step_d, sizeof(int64_t)));
    upload(p_d, p, n);
    CHECK_CUDA(cudaMemset(m_d, 0, n * sizeof(float)));
    CHECK_CUDA(cudaMemset(v_d, 0, n * sizeof(float)));
    const float lrs[] = {1e-3f, 5e-4f, 2e-3f, 1e-4f, 1e-3f};
    for (int step = 0; step < 5; step++) {
        int64_t t = step + 1;
        /* the first step's gradients are large, later ones tiny: v's bias correction matters */
        test_fill_uniform(g, n, &rng, step ? -1e-3f : -1.0f, step ? 1e-3f : 1.0f);
        upload_grads(g_d, g_ref, g, n, &h, &half);
        upload(lr_d, &lrs[step], 1);
        CHECK_CUDA(cudaMemcpy(step_d, &t, sizeof t, cudaMemcpyHostToDevice));
        adamw_update(p_d, m_d, v_d, half.w, g_d, half.g, lr_d, step_d, n, n_decay, h.n_half, b1, b2, (float)eps,
                     (float)wd, 0);
        ref_adamw(p_ref, m_ref, v_ref, g_ref, n, n_decay, lrs[step], t, b1, b2, eps, wd);
        test_to_host(got, p_d, n);
        expect_err("adamw params", n, step, test_rel_err(got, p_ref, n), 1e-6);
        check_half_weights("adamw", got, &h, &half, step);
        test_to_host(got, m_d, n);
        expect_err("adamw first moment", n, step, test_rel_err(got, m_ref, n), 1e-5);
        test_to_host(got, v_d, n);
        expect_err("adamw second moment", n, step, test_rel_err(got, v_ref, n), 1e-5);
    }
    CHECK_CUDA(cudaFree(p_d - shift)); CHECK_CUDA(cudaFree(g_d - shift));
    CHECK_CUDA(cudaFree(m_d - shift)); CHECK_CUDA(cudaFree(v_d - shift));
    CHECK_CUDA(cudaFree(lr_d)); CHECK_CUDA(cudaFree(step_d));
    half_free(&half, &h);
    free(p); free(g); free(g_ref); free(got); free(p_ref); free(m_ref); free(v_ref);
}

static void test_adamw(void **state) {
    (void)state;
    const size_t sizes[][2] = {{1, 1}, {3, 0}, {5, 2}, {10, 7}, {1001, 1001}, {4099, 4000},
                               {(1u << 20) + 3, 700001}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        check_adamw(sizes[s][0], sizes[s][1], 0, NO_HALF, 800 + s);
        check_adamw(sizes[s][0], sizes[s][1], 1, NO_HALF, 900 + s); /* misaligned: scalar path */
    }
}

static void test_adamw_half(void **state) {
    (void)state;
    for (size_t s = 0; s < HALF_SIZE_COUNT; s++)
        for (size_t k = 0; k < HALF_KIND_COUNT; k++) {
            half_case h = HALF_KINDS[k];
            h.n_half = HALF_SIZES[s][2];
            if (h.n_half == 0 && !(h.grads && h.weights)) continue; /* n_half > 0 needs a copy */
            check_adamw(HALF_SIZES[s][0], HALF_SIZES[s][1], 0, h, 2000 + 10 * s + k);
            check_adamw(HALF_SIZES[s][0], HALF_SIZES[s][1], 1, h, 2500 + 10 * s + k); /* misaligned floats */
        }
    check_adamw(25557032, 25503912, 0, (half_case){25503912, 1, 1, 0}, 2999); /* ResNet-50's size */
}

static void expect_lr(long step, float got, const lr_schedule *s) {
    float want = lr_at(s, step);
    /* The device evaluates lr_at with fast-math cosf/powf: agreement to float rounding. */
    if (!(fabsf(got - want) <= 1e-5f * fabsf(want) + 1e-6f * s->base_lr)) {
        fprintf(stderr, "lr_schedule_step: step %ld gave %.9g, lr_at says %.9g\n", step, got, want);
        fail();
    }
}

static void test_lr_schedule_step(void **state) {
    (void)state;
    lr_schedule schedules[] = {
        {.kind = LR_CONSTANT, .base_lr = 0.1f},
        {.kind = LR_STEP, .base_lr = 0.4f, .step_size = 5, .gamma = 0.5f},
        {.kind = LR_COSINE, .base_lr = 0.8f, .total_steps = 40, .warmup_steps = 6, .min_lr = 1e-3f},
        {.kind = LR_ONE_CYCLE, .base_lr = 0.2f, .total_steps = 50, .warmup_steps = 15,
         .div_factor = 25.0f, .final_div = 1e4f},
    };
    float *lr_d = dev_alloc(1);
    int64_t *step_d = NULL;
    CHECK_CUDA(cudaMalloc((void **)&step_d, sizeof(int64_t)));
    for (size_t k = 0; k < sizeof schedules / sizeof *schedules; k++) {
        int64_t start = k == 3 ? 7 : 0; /* resuming mid-run starts from a saved step */
        CHECK_CUDA(cudaMemcpy(step_d, &start, sizeof start, cudaMemcpyHostToDevice));
        for (long step = start; step < 60; step++) {
            test_poison(lr_d, 1);
            lr_schedule_step(lr_d, step_d, schedules[k], 0);
            float lr;
            int64_t next;
            test_to_host(&lr, lr_d, 1);
            CHECK_CUDA(cudaMemcpy(&next, step_d, sizeof next, cudaMemcpyDeviceToHost));
            expect_lr(step, lr, &schedules[k]);
            expect_eq(next, step + 1);
        }
    }
    CHECK_CUDA(cudaFree(lr_d));
    CHECK_CUDA(cudaFree(step_d));
}

/* The training step's tail as the trainer captures it: schedule, then update, replayed. */
static void test_graph_replay(void **state) {
    (void)state;
    const size_t n = 100003, n_decay = 90001;
    const float momentum = 0.9f, wd = 5e-4f;
    lr_schedule schedule = {.kind = LR_ONE_CYCLE, .base_lr = 0.5f, .total_steps = 10,
                            .warmup_steps = 3, .div_factor = 25.0f, .final_div = 1e4f};
    uint64_t rng = 700;
    float *p = host_alloc(n), *g = host_alloc(n), *got = host_alloc(n);
    double *p_ref = malloc(n * sizeof(double)), *buf_ref = calloc(n, sizeof(double));
    test_fill_uniform(p, n, &rng, -1.0f, 1.0f);
    for (size_t i = 0; i < n; i++) p_ref[i] = p[i];
    float *p_d = dev_alloc(n), *g_d = dev_alloc(n), *buf_d = dev_alloc(n), *lr_d = dev_alloc(1);
    int64_t *step_d = NULL, zero = 0;
    CHECK_CUDA(cudaMalloc((void **)&step_d, sizeof(int64_t)));
    CHECK_CUDA(cudaMemcpy(step_d, &zero, sizeof zero, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemset(buf_d, 0, n * sizeof(float)));
    upload(p_d, p, n);

    cudaStream_t stream;
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    lr_schedule_step(lr_d, step_d, schedule, stream);
    sgd_update(p_d, buf_d, NULL, g_d, NULL, lr_d, n, n_decay, 0, momentum, wd, 1, stream);
    CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
    CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int step = 0; step < 5; step++) {
        test_fill_uniform(g, n, &rng, -1.0f, 1.0f);
        upload(g_d, g, n);
        CHECK_CUDA(cudaDeviceSynchronize()); /* the upload's DMA is done before the replay */
        CHECK_CUDA(cudaGraphLaunch(exec, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        float lr;
        test_to_host(&lr, lr_d, 1);
        expect_lr(step, lr, &schedule);
        ref_sgd(p_ref, buf_ref, g, n, n_decay, lr, momentum, wd, 1);
        test_to_host(got, p_d, n);
        expect_err("sgd params in a graph", n, step, test_rel_err(got, p_ref, n), 1e-6);
    }
    CHECK_CUDA(cudaGraphExecDestroy(exec));
    CHECK_CUDA(cudaGraphDestroy(graph));
    CHECK_CUDA(cudaStreamDestroy(stream));
    CHECK_CUDA(cudaFree(p_d)); CHECK_CUDA(cudaFree(g_d)); CHECK_CUDA(cudaFree(buf_d));
    CHECK_CUDA(cudaFree(lr_d)); CHECK_CUDA(cudaFree(step_d));
    free(p); free(g); free(got); free(p_ref); free(buf_ref);
}

int main(void) {
    test_require_gpu();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd),
        cmocka_unit_test(test_sgd_half),
        cmocka_unit_test(test_sgd_large),
        cmocka_unit_test(test_adamw),
        cmocka_unit_test(test_adamw_half),
        cmocka_unit_test(test_lr_schedule_step),
        cmocka_unit_test(test_graph_replay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
