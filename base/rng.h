/* Deterministic host random numbers (splitmix64): initialisation, synthetic data, the loader's
 * orders, the crops and the tests draw from here, so a seed reproduces a run anywhere. */
#ifndef SUITE_BASE_RNG_H
#define SUITE_BASE_RNG_H

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

/* uniform in [0, 1) with 53 random bits */
static inline double rng_uniform_double(uint64_t *state) {
    return (rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
}

/* uniform in [0, range) without modulo bias (Lemire's multiply-and-reject) */
static inline uint64_t rng_below(uint64_t *state, uint64_t range) {
    __uint128_t product = (__uint128_t)rng_next(state) * range;
    uint64_t low = (uint64_t)product;
    if (low < range) {
        uint64_t threshold = -range % range;
        while (low < threshold) {
            product = (__uint128_t)rng_next(state) * range;
            low = (uint64_t)product;
        }
    }
    return (uint64_t)(product >> 64);
}

static inline float rng_normal(uint64_t *state) {
    double u1 = ((rng_next(state) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (rng_next(state) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

#endif
