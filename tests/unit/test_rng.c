/* test_rng.c — determinism and distribution sanity of the seeded generator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "sc_rng.h"

static void same_seed_same_stream(void **state)
{
        sc_rng_t a, b, c;
        sc_rng_seed(&a, 42);
        sc_rng_seed(&b, 42);
        sc_rng_seed(&c, 43);
        int differ = 0;
        for (int i = 0; i < 1000; i++) {
                uint64_t x = sc_rng_u64(&a);
                assert_int_equal(x, sc_rng_u64(&b));
                differ += x != sc_rng_u64(&c);
        }
        assert_true(differ > 990);
}

static void below_is_in_range_and_covers(void **state)
{
        sc_rng_t r;
        int hits[7] = {0};
        sc_rng_seed(&r, 1);
        for (int i = 0; i < 70000; i++) {
                uint32_t v = sc_rng_below(&r, 7);
                assert_true(v < 7);
                hits[v]++;
        }
        for (int i = 0; i < 7; i++)
                assert_true(hits[i] > 9000 && hits[i] < 11000);
}

static void uniform_and_normal_moments(void **state)
{
        sc_rng_t r;
        double su = 0, sn = 0, sn2 = 0;
        const int n = 200000;
        sc_rng_seed(&r, 7);
        for (int i = 0; i < n; i++) {
                float u = sc_rng_uniform(&r);
                assert_true(u >= 0.0f && u < 1.0f);
                su += u;
                float z = sc_rng_normal(&r);
                assert_false(isnan(z));
                sn += z;
                sn2 += (double)z * z;
        }
        assert_true(fabs(su / n - 0.5) < 0.01);
        assert_true(fabs(sn / n) < 0.01);
        assert_true(fabs(sn2 / n - 1.0) < 0.02);
}

static void shuffle_is_permutation(void **state)
{
        sc_rng_t r;
        uint32_t v[100];
        int seen[100] = {0}, moved = 0;
        sc_rng_seed(&r, 3);
        for (uint32_t i = 0; i < 100; i++)
                v[i] = i;
        sc_rng_shuffle_u32(&r, v, 100);
        for (uint32_t i = 0; i < 100; i++) {
                seen[v[i]]++;
                moved += v[i] != i;
        }
        for (int i = 0; i < 100; i++)
                assert_int_equal(seen[i], 1);
        assert_true(moved > 80);
}

static void split_streams_differ(void **state)
{
        sc_rng_t root, a, b;
        sc_rng_seed(&root, 9);
        sc_rng_split(&root, &a, 0);
        sc_rng_split(&root, &b, 1);
        assert_int_not_equal(sc_rng_u64(&a), sc_rng_u64(&b));
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(same_seed_same_stream),
            cmocka_unit_test(below_is_in_range_and_covers),
            cmocka_unit_test(uniform_and_normal_moments),
            cmocka_unit_test(shuffle_is_permutation),
            cmocka_unit_test(split_streams_differ),
        };
        return cmocka_run_group_tests_name("rng", tests, NULL, NULL);
}
