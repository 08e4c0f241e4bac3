/* Deterministic host random numbers (splitmix64): initialisation, synthetic data and tests draw
 * from here so a seed reproduces a run anywhere. */
#ifndef SUITE_RNG_H
#define SUITE_RNG_H

#include <math.h>
#include <stdint.h>

static inline uint64_t rng_next(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 24 random bits */
static inline float rng_uniform(uint64_t *state) {
    return (float)((rng_next(state) >> 40) * (1.0 / 16777216.0));
}

static inline float rng_normal(uint64_t *state) {
    double u1 = ((rng_next(state) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

#endif
