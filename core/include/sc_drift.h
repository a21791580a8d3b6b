/* sc_drift.h — Page-Hinkley concept-drift detector for a rise of the mean of a
 * stream, fed the prequential 0/1 error of a classifier. Sans-I/O. */
#ifndef SC_DRIFT_H
#define SC_DRIFT_H

#include <stddef.h>
#include <stdint.h>

#include "sc_err.h"

/* Page-Hinkley test for an increase of the mean (Page 1954, Hinkley 1971;
 * the River/MOA form). For the n-th observation x since the last (re)start,
 * with mean_n the running mean of x over those n observations:
 *
 *     cum     = alpha * cum + (x - mean_n - delta)     (cum = 0 at restart)
 *     cum_min = min(cum_min, cum)                      (cum_min = 0 at restart)
 *     alarm  <=> n >= min_samples  and  cum - cum_min > threshold
 *
 * Defaults, for a 0/1 error (sc_drift_spec_defaults): delta 0.1, threshold
 * 30, min_samples 30, alpha 1. Why, for an error rate p (step variance
 * sigma^2 = p(1-p) <= 0.25): while p is stationary, cum - cum_min is a
 * random walk with drift -delta reflected at 0, and it exceeds lambda with
 * a probability per sample ~ exp(-theta lambda), theta ~ 2 delta / sigma^2
 * (exactly: the root of E[exp(theta (x - p - delta))] = 1; with delta 0.1,
 * theta = 0.82 at p = 0.5, 0.87 at 0.3, 1.04 at 0.2, 1.5 at 0.1, least 0.81
 * at p = 0.43). After a rise of the mean by J it drifts up by J - delta,
 * so the delay is ~ lambda / (J - delta). With lambda = L / theta the delay
 * ~ L sigma^2 / (2 delta (J - delta)) is least at delta = J / 2 = 0.15 for
 * the rise of 0.3 we size for, but the minimum is flat: at the same
 * false-alarm rate (theta lambda = 25) delta 0.15 / lambda 20.4 detects
 * 0.1 -> 0.4 after mean 134, worst 332 samples (5,000 seeds), delta 0.1 /
 * lambda 31 after 154, worst 295, and delta 0.1 still detects a rise of 0.2
 * (0.1 -> 0.3: mean 297, worst 698 at lambda 30) where delta 0.15 takes
 * mean 391, worst 1,966. Hence delta 0.1; rises below 0.1 are tolerated.
 * threshold 30: theta lambda >= 24 for every p, ~ 3e-11 alarms per
 * stationary sample at worst (one per ~ 3e10 samples). The largest
 * statistic seen on 2e8 stationary samples (p in {0.05, 0.1, 0.2, 0.3,
 * 0.5}, 4e7 each) is 19.4, in line with ln(4e7) / theta = 21; a threshold
 * of ~ 20 would pass the tests' 2.5e7 samples with no margin.
 *
 * Measured with the defaults: no alarm on 2.5e7 stationary samples (p in
 * {0.05, 0.1, 0.2, 0.3, 0.5}, 1e6 each, 5 seeds; largest statistic 14.8,
 * 19.4 over 40 seeds). After 20,000 stationary samples a rise 0.1 -> 0.4
 * is detected after mean 149, 99th percentile 231, worst 292 samples, and
 * 0.2 -> 0.5 after 148 / 235 / 302 (5,000 seeds each). An error falling
 * from 0.9 to 0.1 over 50,000 samples, then 0.1 for 200,000, raises no
 * alarm (1,000 seeds; largest statistic 7.1). tests/unit/test_drift.c
 * checks these on 5 seeds and prints its figures.
 *
 * alpha < 1 makes cum settle at -delta / (1 - alpha) and caps what a rise
 * J adds to the statistic at ~ J / (1 - alpha): only rises with J >
 * (1 - alpha) threshold are ever detected.
 *
 * A falling error (a model that learns) stays below its running mean, so
 * it drives cum down. */

typedef struct sc_drift_spec {
        double delta;     /* tolerated rise of the mean before it counts (magnitude allowance) */
        double threshold; /* lambda: alarm when the cumulative statistic exceeds it */
        uint64_t min_samples; /* no alarm before this many samples since the last (re)start */
        double alpha;         /* forgetting factor of the cumulative sum, (0, 1]; 1 = none */
} sc_drift_spec_t;

/* The defaults above (the config table gives them as text with SC_STR:
 * drift.delta, drift.threshold, drift.min_samples, drift.alpha). */
#define SC_DRIFT_DEF_DELTA 0.1
#define SC_DRIFT_DEF_THRESHOLD 30
#define SC_DRIFT_DEF_MIN_SAMPLES 30
#define SC_DRIFT_DEF_ALPHA 1

/* Fills s with the defaults above. */
void sc_drift_spec_defaults(sc_drift_spec_t *s);

typedef struct sc_drift {
        sc_drift_spec_t spec;
        uint64_t n;             /* observations since the last (re)start */
        double mean;            /* their running mean */
        double cum;             /* the cumulative sum */
        double cum_min;         /* its minimum since the last (re)start (0 at restart) */
        uint64_t events;        /* alarms since init */
        uint64_t samples_total; /* finite observations since init */
} sc_drift_t;

/* Starts a detector with a copy of spec (NULL: the defaults). An alpha that
 * is not in (0, 1] (or NaN) is taken as 1. */
void sc_drift_init(sc_drift_t *d, const sc_drift_spec_t *spec);
/* Adds one observation (the prequential error of one sample: 1 wrong, 0
 * right). Returns 1 when a rise of the mean is detected (events++; the
 * detector then restarts: n, mean, cum and cum_min reset), else 0.
 * Non-finite x is ignored (returns 0). */
int sc_drift_add(sc_drift_t *d, double x);
/* The current test statistic cum - cum_min (for a gauge); >= 0. */
double sc_drift_statistic(const sc_drift_t *d);
/* Restarts without counting an event (n, mean, cum, cum_min reset). */
void sc_drift_restart(sc_drift_t *d);

#endif
