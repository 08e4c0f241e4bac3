/* Learning-rate schedules, one formula shared by the host (reporting, tests) and the device (the
 * captured training step reads its learning rate from a kernel, so graph replays need no host
 * update). Steps count optimizer updates from 0; past total_steps every schedule holds its final rate. */
#ifndef SUITE_SCHEDULE_H
#define SUITE_SCHEDULE_H

#include <math.h>

#ifdef __CUDACC__
#define SUITE_HD __host__ __device__
#else
#define SUITE_HD
#endif

typedef enum { LR_CONSTANT, LR_STEP, LR_COSINE, LR_ONE_CYCLE } lr_kind;

typedef struct lr_schedule {
    lr_kind kind;
    float base_lr;        /* constant/step/cosine: starting lr; one-cycle: peak lr */
    long total_steps;     /* cosine and one-cycle: length of the whole run */
    long warmup_steps;    /* cosine: linear warm-up from 0; one-cycle: steps rising to the peak */
    long step_size;       /* step: decay every step_size steps */
    float gamma;          /* step: decay factor */
    float min_lr;         /* cosine: floor */
    float div_factor;     /* one-cycle: initial lr = peak / div_factor (PyTorch: 25) */
    float final_div;      /* one-cycle: final lr = initial / final_div (PyTorch: 1e4) */
} lr_schedule;

static inline SUITE_HD float lr_cos_anneal(float start, float end, float fraction) {
    return end + (start - end) * 0.5f * (1.0f + cosf(3.14159265358979f * fraction));
}

/* PyTorch semantics: StepLR, CosineAnnealingLR (after a linear warm-up), OneCycleLR with cosine
 * annealing in both phases (its step i uses pct = i / (phase_end)). */
static inline SUITE_HD float lr_at(const lr_schedule *s, long step) {
    switch (s->kind) {
    case LR_STEP: { /* past the planned run (train --window-protocol trains on): its last value, as
                       cosine and one-cycle hold their final rate */
        if (s->total_steps > 0 && step >= s->total_steps) step = s->total_steps - 1;
        long k = s->step_size > 0 ? step / s->step_size : 0;
        return s->base_lr * powf(s->gamma, (float)k);
    }
    case LR_COSINE: {
        if (step < s->warmup_steps) return s->base_lr * (float)(step + 1) / (float)s->warmup_steps;
        long span = s->total_steps - s->warmup_steps;
        float f = span > 0 ? (float)(step - s->warmup_steps) / (float)span : 1.0f;
        return lr_cos_anneal(s->base_lr, s->min_lr, f > 1.0f ? 1.0f : f);
    }
    case LR_ONE_CYCLE: {
        float initial = s->base_lr / s->div_factor, final = initial / s->final_div;
        float up_end = (float)s->warmup_steps - 1.0f, down_end = (float)s->total_steps - 1.0f;
        if ((float)step <= up_end && up_end > 0)
            return lr_cos_anneal(initial, s->base_lr, (float)step / up_end);
        float span = down_end - up_end, f = span > 0 ? ((float)step - up_end) / span : 1.0f;
        return lr_cos_anneal(s->base_lr, final, f > 1.0f ? 1.0f : f);
    }
    default:
        return s->base_lr;
    }
}

#endif
