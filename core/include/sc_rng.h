/* sc_rng.h — a small seeded random generator (xoshiro256**) passed explicitly
 * to everything random, so identical seeds give identical runs. */
#ifndef SC_RNG_H
#define SC_RNG_H

#include <stdint.h>

typedef struct sc_rng {
        uint64_t s[4];
} sc_rng_t;

/* Seeds rng from one 64-bit value (splitmix64 expansion). */
void sc_rng_seed(sc_rng_t *rng, uint64_t seed);
/* Derives an independent stream: seeds child from rng's next outputs and
 * stream (e.g. a worker id). rng advances. */
void sc_rng_split(sc_rng_t *rng, sc_rng_t *child, uint64_t stream);
uint64_t sc_rng_u64(sc_rng_t *rng);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint32_t sc_rng_below(sc_rng_t *rng, uint32_t n);
/* Uniform float in [0, 1). */
float sc_rng_uniform(sc_rng_t *rng);
/* Standard normal (Box–Muller, one value per call). */
float sc_rng_normal(sc_rng_t *rng);
/* Fisher–Yates shuffle of n uint32 indices. */
void sc_rng_shuffle_u32(sc_rng_t *rng, uint32_t *v, uint32_t n);

#endif
