/* lr_at (kernels/schedule.h) against the learning rates PyTorch's schedulers give, recomputed here
 * in double from PyTorch's own formulas:
 *   StepLR:            base * gamma^(step // step_size)
 *   cosine:            linear warm-up base * (step + 1) / warmup (llm.c / timm style), then
 *                      CosineAnnealingLR(T_max = total - warmup, eta_min = min_lr), checked in both
 *                      its closed form and the recursive form PyTorch's get_lr() steps through
 *   OneCycleLR:        anneal_strategy='cos', three_phase=False: phase ends at pct_start*total - 1
 *                      and total - 1, pct = (step - phase_start) / (phase_end - phase_start),
 *                      _annealing_cos(start, end, pct) = end + (start - end) / 2 * (cos(pi*pct) + 1)
 * lr_at works in float, so the tolerance is float rounding: relative to the value, plus a floor
 * relative to the peak where the cosine's 1 + cos(pi*f) cancels near the end of a schedule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "kernels/schedule.h"
#include "tests/support/testutil.h"

static const double PI = 3.14159265358979323846;

/* |got - want| <= 2e-5 |want| + 1e-7 * peak, with a message naming the step on failure. */
static void expect_lr(const char *what, long step, float got, double want, double peak) {
    double tol = 2e-5 * fabs(want) + 1e-7 * peak;
    if (!(fabs((double)got - want) <= tol)) {
        fprintf(stderr, "%s: step %ld: lr_at = %.9g, expected %.9g (|diff| %.3g > tol %.3g)\n", what,
                step, (double)got, want, fabs((double)got - want), tol);
        fail();
    }
}

static double annealing_cos(double start, double end, double pct) {
    return end + (start - end) / 2.0 * (cos(PI * pct) + 1.0);
}

/* torch.optim.lr_scheduler.OneCycleLR.get_lr for three_phase=False, at last_epoch = step. */
static double torch_one_cycle(double max_lr, long total, double pct_start, double div_factor,
                              double final_div_factor, long step) {
    double initial = max_lr / div_factor, min_lr = initial / final_div_factor;
    double ends[2] = {pct_start * (double)total - 1.0, (double)total - 1.0};
    double starts_lr[2] = {initial, max_lr}, ends_lr[2] = {max_lr, min_lr};
    double start_step = 0.0;
    for (int i = 0; i < 2; i++) {
        if ((double)step <= ends[i] || i == 1) {
            double pct = ((double)step - start_step) / (ends[i] - start_step);
            return annealing_cos(starts_lr[i], ends_lr[i], pct);
        }
        start_step = ends[i];
    }
    return NAN;
}

static void test_constant(void **state) {
    (void)state;
    lr_schedule s = {.kind = LR_CONSTANT, .base_lr = 0.1f};
    for (long step = 0; step < 1000; step += 37) expect_lr("constant", step, lr_at(&s, step), 0.1, 0.1);
}

static void test_step(void **state) {
    (void)state;
    const struct { float base, gamma; long step_size; } cases[] = {
        {0.1f, 0.1f, 30}, {0.4f, 0.5f, 7}, {1e-3f, 0.97f, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        lr_schedule s = {.kind = LR_STEP, .base_lr = cases[k].base, .gamma = cases[k].gamma,
                         .step_size = cases[k].step_size};
        for (long step = 0; step < 200; step++) {
            double want = (double)cases[k].base * pow((double)cases[k].gamma, (double)(step / cases[k].step_size));
            expect_lr("step", step, lr_at(&s, step), want, cases[k].base);
        }
    }
    /* StepLR(step_size=30, gamma=0.1) from 0.1: 0.1 until step 29, 0.01 from step 30. */
    lr_schedule s = {.kind = LR_STEP, .base_lr = 0.1f, .gamma = 0.1f, .step_size = 30};
    expect_lr("step", 29, lr_at(&s, 29), 0.1, 0.1);
    expect_lr("step", 30, lr_at(&s, 30), 0.01, 0.1);
    expect_lr("step", 60, lr_at(&s, 60), 0.001, 0.1);
}

static void test_cosine(void **state) {
    (void)state;
    const struct { float base, min_lr; long warmup, total; } cases[] = {
        {0.1f, 0.0f, 0, 100}, {0.8f, 1e-4f, 50, 1000}, {0.05f, 0.001f, 5, 37}, {0.2f, 0.0f, 1, 2}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        double base = cases[k].base, eta_min = cases[k].min_lr;
        long warmup = cases[k].warmup, total = cases[k].total, t_max = total - warmup;
        lr_schedule s = {.kind = LR_COSINE, .base_lr = cases[k].base, .min_lr = cases[k].min_lr,
                         .warmup_steps = warmup, .total_steps = total};
        double recursive = base; /* CosineAnnealingLR.get_lr's running value, from T_cur = 0 */
        for (long step = 0; step < total + 5; step++) {
            double want;
            if (step < warmup) {
                want = base * (double)(step + 1) / (double)warmup;
            } else {
                long t_cur = step - warmup;
                if (t_cur > t_max) t_cur = t_max; /* lr_at holds the floor after the end */
                want = eta_min + (base - eta_min) * (1.0 + cos(PI * (double)t_cur / (double)t_max)) / 2.0;
                if (step - warmup <= t_max) {
                    if (t_cur > 0) {
                        /* PyTorch: (1 + cos(pi t/T)) / (1 + cos(pi (t-1)/T)) * (lr - eta_min) + eta_min,
                         * or the special case when (t - 1 - T) % (2T) == 0. */
                        if ((t_cur - 1 - t_max) % (2 * t_max) == 0)
                            recursive += (base - eta_min) * (1.0 - cos(PI / (double)t_max)) / 2.0;
                        else
                            recursive = (1.0 + cos(PI * (double)t_cur / (double)t_max)) /
                                            (1.0 + cos(PI * (double)(t_cur - 1) / (double)t_max)) *
                                            (recursive - eta_min) + eta_min;
                    }
                    expect_le(fabs(recursive - want), 1e-9 * base);
                }
            }
            expect_lr("cosine", step, lr_at(&s, step), want, base);
        }
        expect_lr("cosine", warmup, lr_at(&s, warmup), base, base);
        expect_lr("cosine", total, lr_at(&s, total), eta_min, base);
    }
}

static void test_one_cycle(void **state) {
    (void)state;
    /* warmup_steps plays pct_start * total_steps. */
    const struct { float peak; long warmup, total; } cases[] = {
        {0.1f, 300, 1000}, {2.0f, 25, 100}, {0.4f, 3, 10}, {0.05f, 2, 3}, {1.0f, 1563, 15630}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        double peak = cases[k].peak;
        long warmup = cases[k].warmup, total = cases[k].total;
        double pct_start = (double)warmup / (double)total;
        lr_schedule s = {.kind = LR_ONE_CYCLE, .base_lr = cases[k].peak, .warmup_steps = warmup,
                         .total_steps = total, .div_factor = 25.0f, .final_div = 1e4f};
        for (long step = 0; step < total; step++) {
            double want = torch_one_cycle(peak, total, pct_start, 25.0, 1e4, step);
            expect_lr("one-cycle", step, lr_at(&s, step), want, peak);
        }
        expect_lr("one-cycle", 0, lr_at(&s, 0), peak / 25.0, peak);
        expect_lr("one-cycle", warmup - 1, lr_at(&s, warmup - 1), peak, peak);
        expect_lr("one-cycle", total - 1, lr_at(&s, total - 1), peak / 25.0 / 1e4, peak);
        /* Past the end (PyTorch raises there) lr_at holds the final rate. */
        expect_lr("one-cycle", total + 10, lr_at(&s, total + 10), peak / 25.0 / 1e4, peak);
    }
    /* A hand-computed point: OneCycleLR(max_lr=0.1, total_steps=1000, pct_start=0.3) at step 100:
     * pct = 100/299, lr = 0.1 + (0.004 - 0.1)/2 * (cos(pi*100/299) + 1). */
    lr_schedule s = {.kind = LR_ONE_CYCLE, .base_lr = 0.1f, .warmup_steps = 300, .total_steps = 1000,
                     .div_factor = 25.0f, .final_div = 1e4f};
    expect_lr("one-cycle", 100, lr_at(&s, 100), 0.1 + (0.004 - 0.1) / 2.0 * (cos(PI * 100.0 / 299.0) + 1.0), 0.1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_constant),
        cmocka_unit_test(test_step),
        cmocka_unit_test(test_cosine),
        cmocka_unit_test(test_one_cycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
