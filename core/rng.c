/* rng.c — xoshiro256** seeded by splitmix64. */
#include "sc_rng.h"

#include <math.h>

static uint64_t sc_splitmix64(uint64_t *x)
{
        uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

void sc_rng_seed(sc_rng_t *rng, uint64_t seed)
{
        for (int i = 0; i < 4; i++)
                rng->s[i] = sc_splitmix64(&seed);
}

void sc_rng_split(sc_rng_t *rng, sc_rng_t *child, uint64_t stream)
{
        uint64_t x = sc_rng_u64(rng) ^ (stream * 0xd1342543de82ef95ULL);
        for (int i = 0; i < 4; i++)
                child->s[i] = sc_splitmix64(&x);
}

static inline uint64_t sc_rotl(uint64_t x, int k)
{
        return (x << k) | (x >> (64 - k));
}

uint64_t sc_rng_u64(sc_rng_t *rng)
{
        uint64_t *s = rng->s;
        uint64_t result = sc_rotl(s[1] * 5, 7) * 9;
        uint64_t t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = sc_rotl(s[3], 45);
        return result;
}

uint32_t sc_rng_below(sc_rng_t *rng, uint32_t n)
{
        /* Lemire's multiply-shift with rejection. */
        uint64_t m = (uint64_t)(uint32_t)(sc_rng_u64(rng) >> 32) * n;
        uint32_t lo = (uint32_t)m;
        if (lo < n) {
                uint32_t t = (uint32_t)(-n) % n;
                while (lo < t) {
                        m = (uint64_t)(uint32_t)(sc_rng_u64(rng) >> 32) * n;
                        lo = (uint32_t)m;
                }
        }
        return (uint32_t)(m >> 32);
}

float sc_rng_uniform(sc_rng_t *rng)
{
        return (float)(sc_rng_u64(rng) >> 40) * (1.0f / 16777216.0f);
}

float sc_rng_normal(sc_rng_t *rng)
{
        double u1 = ((double)(sc_rng_u64(rng) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
        double u2 = (double)(sc_rng_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
        return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

void sc_rng_shuffle_u32(sc_rng_t *rng, uint32_t *v, uint32_t n)
{
        for (uint32_t i = n; i > 1; i--) {
                uint32_t j = sc_rng_below(rng, i);
                uint32_t t = v[i - 1];
                v[i - 1] = v[j];
                v[j] = t;
        }
}
