/* test_drift.c — the Page-Hinkley detector with its defaults on simulated 0/1
 * prequential errors: no alarm on stationary streams or a learning model, a
 * rise of 0.3 detected within a bound, restart, bad input, forgetting and
 * min_samples; prints the measured false-alarm margin and delays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "sc_drift.h"
#include "sc_rng.h"

#define SEEDS 5
#define WARMUP 20000 /* stationary samples before a change */
/* Upper bound on the detection delay of a rise of 0.3 that the tests check.
 * Measured with the defaults (samples after the change, the alarming one
 * included), as test_rise_detected prints them for its 5 seeds: 0.1 -> 0.4
 * mean 154.8, worst 190; 0.2 -> 0.5 mean 130.8, worst 157. Over 5,000 seeds
 * (the same protocol): 0.1 -> 0.4 mean 149, 99th percentile 231, worst 292;
 * 0.2 -> 0.5 mean 148, 99th percentile 235, worst 302. */
#define MAX_DELAY 400

/* 1 with probability p (53-bit uniform). */
static double bernoulli(sc_rng_t *rng, double p)
{
        return (double)(sc_rng_u64(rng) >> 11) * 0x1p-53 < p ? 1.0 : 0.0;
}

static void test_defaults(void **state)
{
        (void)state;
        sc_drift_spec_t s;
        sc_drift_spec_defaults(&s);
        assert_true(s.delta == 0.1);
        assert_true(s.threshold == 30.0);
        assert_int_equal(s.min_samples, 30);
        assert_true(s.alpha == 1.0);
        /* the config table's default strings say the same */
        assert_true(strtod(SC_STR(SC_DRIFT_DEF_DELTA), NULL) == s.delta);
        assert_true(strtod(SC_STR(SC_DRIFT_DEF_THRESHOLD), NULL) == s.threshold);
        assert_true(strtod(SC_STR(SC_DRIFT_DEF_MIN_SAMPLES), NULL) == (double)s.min_samples);
        assert_true(strtod(SC_STR(SC_DRIFT_DEF_ALPHA), NULL) == s.alpha);
        sc_drift_t d;
        sc_drift_init(&d, NULL);
        assert_true(d.spec.delta == s.delta && d.spec.threshold == s.threshold);
        assert_int_equal(d.n, 0);
        assert_int_equal(d.events, 0);
        assert_int_equal(d.samples_total, 0);
        assert_true(sc_drift_statistic(&d) == 0.0);
        /* alpha outside (0, 1] is taken as 1 */
        s.alpha = 0.0;
        sc_drift_init(&d, &s);
        assert_true(d.spec.alpha == 1.0);
        s.alpha = NAN;
        sc_drift_init(&d, &s);
        assert_true(d.spec.alpha == 1.0);
        s.alpha = 1.5;
        sc_drift_init(&d, &s);
        assert_true(d.spec.alpha == 1.0);
}

/* (a) Stationary error rates, 1,000,000 samples each, 5 seeds: no alarm. The
 * largest statistic seen (printed: 14.79 with these seeds; 19.4 over 40
 * seeds) shows the margin left to the threshold, 30. */
static void test_stationary_no_alarm(void **state)
{
        (void)state;
        static const double ps[] = {0.05, 0.1, 0.2, 0.3, 0.5};
        double worst = 0;
        for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++) {
                for (uint64_t seed = 1; seed <= SEEDS; seed++) {
                        sc_rng_t rng;
                        sc_rng_seed(&rng, 1000 + 10 * seed + k);
                        sc_drift_t d;
                        sc_drift_init(&d, NULL);
                        for (int i = 0; i < 1000000; i++) {
                                assert_int_equal(sc_drift_add(&d, bernoulli(&rng, ps[k])), 0);
                                if (d.n >= d.spec.min_samples && sc_drift_statistic(&d) > worst)
                                        worst = sc_drift_statistic(&d);
                        }
                        assert_int_equal(d.events, 0);
                        assert_int_equal(d.samples_total, 1000000);
                }
        }
        print_message("drift: stationary, 2.5e7 samples: 0 alarms, largest statistic %.2f "
                      "(threshold 30)\n",
                      worst);
        assert_true(worst < 30.0);
}

/* Feeds WARMUP samples at p0 (no alarm), then p1 until an alarm; returns the
 * samples after the change, the alarming one included. */
static uint64_t delay_of_rise(sc_drift_t *d, sc_rng_t *rng, double p0, double p1)
{
        for (int i = 0; i < WARMUP; i++)
                assert_int_equal(sc_drift_add(d, bernoulli(rng, p0)), 0);
        uint64_t k = 1;
        while (!sc_drift_add(d, bernoulli(rng, p1)) && k <= MAX_DELAY)
                k++;
        return k;
}

/* (b) A rise of the error rate by 0.3 is detected within MAX_DELAY samples. */
static void test_rise_detected(void **state)
{
        (void)state;
        static const double rises[][2] = {{0.1, 0.4}, {0.2, 0.5}};
        for (size_t r = 0; r < 2; r++) {
                uint64_t sum = 0, worst = 0;
                for (uint64_t seed = 1; seed <= SEEDS; seed++) {
                        sc_rng_t rng;
                        sc_rng_seed(&rng, 2000 + 10 * seed + r);
                        sc_drift_t d;
                        sc_drift_init(&d, NULL);
                        uint64_t k = delay_of_rise(&d, &rng, rises[r][0], rises[r][1]);
                        assert_true(k <= MAX_DELAY);
                        assert_int_equal(d.events, 1);
                        sum += k;
                        worst = k > worst ? k : worst;
                }
                print_message("drift: %.1f -> %.1f after %d samples: delay mean %.1f, worst %u "
                              "(bound %d)\n",
                              rises[r][0], rises[r][1], WARMUP, (double)sum / SEEDS,
                              (unsigned)worst, MAX_DELAY);
        }
}

/* (c) A learning model: the error falls linearly from 0.9 to 0.1 over
 * 50,000 samples, then stays at 0.1 for 200,000: no alarm (largest
 * statistic printed: 4.82 with these seeds, 7.1 over 1,000). */
static void test_learning_no_alarm(void **state)
{
        (void)state;
        double worst = 0;
        for (uint64_t seed = 1; seed <= SEEDS; seed++) {
                sc_rng_t rng;
                sc_rng_seed(&rng, 3000 + seed);
                sc_drift_t d;
                sc_drift_init(&d, NULL);
                for (int i = 0; i < 250000; i++) {
                        double p = i < 50000 ? 0.9 - 0.8 * (double)i / 50000.0 : 0.1;
                        assert_int_equal(sc_drift_add(&d, bernoulli(&rng, p)), 0);
                        if (d.n >= d.spec.min_samples && sc_drift_statistic(&d) > worst)
                                worst = sc_drift_statistic(&d);
                }
                assert_int_equal(d.events, 0);
        }
        print_message("drift: error 0.9 -> 0.1: 0 alarms, largest statistic %.2f\n", worst);
}

/* After an alarm the detector restarts at the new level and detects a
 * second rise. */
static void test_restart_second_rise(void **state)
{
        (void)state;
        sc_rng_t rng;
        sc_rng_seed(&rng, 4000);
        sc_drift_t d;
        sc_drift_init(&d, NULL);
        uint64_t k = delay_of_rise(&d, &rng, 0.1, 0.4);
        assert_true(k <= MAX_DELAY);
        assert_int_equal(d.events, 1);
        assert_int_equal(d.n, 0);
        assert_true(d.mean == 0.0 && d.cum == 0.0 && d.cum_min == 0.0);
        assert_true(sc_drift_statistic(&d) == 0.0);
        assert_int_equal(d.samples_total, WARMUP + k);
        /* the new level, 0.4, is stationary for the restarted detector */
        k = delay_of_rise(&d, &rng, 0.4, 0.7);
        assert_true(k <= MAX_DELAY);
        assert_int_equal(d.events, 2);

        /* sc_drift_restart forgets without counting an event */
        for (int i = 0; i < 100; i++)
                sc_drift_add(&d, 1.0);
        sc_drift_restart(&d);
        assert_int_equal(d.n, 0);
        assert_int_equal(d.events, 2);
        assert_true(sc_drift_statistic(&d) == 0.0);
}

/* NaN and infinities are ignored: nothing changes. */
static void test_non_finite_ignored(void **state)
{
        (void)state;
        sc_drift_t d;
        sc_drift_init(&d, NULL);
        for (int i = 0; i < 50; i++)
                sc_drift_add(&d, (double)(i % 3 == 0));
        sc_drift_t before = d;
        assert_int_equal(sc_drift_add(&d, NAN), 0);
        assert_int_equal(sc_drift_add(&d, INFINITY), 0);
        assert_int_equal(sc_drift_add(&d, -INFINITY), 0);
        assert_int_equal(d.n, before.n);
        assert_int_equal(d.samples_total, before.samples_total);
        assert_true(d.mean == before.mean && d.cum == before.cum && d.cum_min == before.cum_min);
        /* a stream of non-finite values never alarms */
        for (int i = 0; i < 10000; i++)
                assert_int_equal(sc_drift_add(&d, INFINITY), 0);
        assert_int_equal(d.events, 0);
        assert_int_equal(sc_drift_add(&d, 0.0), 0);
        assert_int_equal(d.n, before.n + 1);
}

/* alpha < 1 forgets: the cumulative sum settles at -delta / (1 - alpha)
 * instead of falling without bound, and a rise J lifts it by at most
 * ~J / (1 - alpha), so evidence older than ~1 / (1 - alpha) samples fades. */
static void test_alpha_forgets(void **state)
{
        (void)state;
        sc_drift_spec_t s;
        sc_drift_spec_defaults(&s);
        sc_drift_t keep, fade;
        sc_drift_init(&keep, &s);
        s.alpha = 0.9;
        sc_drift_init(&fade, &s);
        /* x = 0.5 throughout: x - mean = 0 exactly, so cum_n = alpha cum_{n-1} - delta */
        for (int i = 0; i < 1000; i++) {
                sc_drift_add(&keep, 0.5);
                sc_drift_add(&fade, 0.5);
        }
        assert_true(fabs(keep.cum - (-0.1 * 1000)) < 1e-9);
        assert_true(fabs(fade.cum - (-0.1 / (1 - 0.9))) < 1e-9);
        /* a sustained deterministic rise of 0.3: alarms without forgetting,
         * stays below J / (1 - alpha) = 3 with it */
        int keep_alarm = 0;
        double fade_max = 0;
        for (int i = 0; i < 5000; i++) {
                keep_alarm |= sc_drift_add(&keep, 0.8);
                assert_int_equal(sc_drift_add(&fade, 0.8), 0);
                if (sc_drift_statistic(&fade) > fade_max)
                        fade_max = sc_drift_statistic(&fade);
        }
        assert_true(keep_alarm);
        assert_true(fade_max > 1.0 && fade_max <= 3.0);
        assert_int_equal(fade.events, 0);
}

/* min_samples holds an alarm off until that many samples since the restart. */
static void test_min_samples(void **state)
{
        (void)state;
        sc_drift_spec_t s = {.delta = 0.0, .threshold = 2.0, .min_samples = 1000, .alpha = 1.0};
        sc_drift_t held, free_;
        sc_drift_init(&held, &s);
        s.min_samples = 0;
        sc_drift_init(&free_, &s);
        /* 10 right, then wrong: cum grows like 10 ln((10 + k) / 10) */
        uint64_t free_at = 0;
        for (uint64_t i = 1; i <= 1000; i++) {
                double x = i <= 10 ? 0.0 : 1.0;
                int a = sc_drift_add(&held, x);
                assert_int_equal(a, i == 1000);
                if (sc_drift_add(&free_, x) && !free_at)
                        free_at = i;
        }
        assert_true(free_at > 10 && free_at < 30);
        assert_int_equal(held.events, 1);
        assert_int_equal(held.n, 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_defaults),
            cmocka_unit_test(test_stationary_no_alarm),
            cmocka_unit_test(test_rise_detected),
            cmocka_unit_test(test_learning_no_alarm),
            cmocka_unit_test(test_restart_second_rise),
            cmocka_unit_test(test_non_finite_ignored),
            cmocka_unit_test(test_alpha_forgets),
            cmocka_unit_test(test_min_samples),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
