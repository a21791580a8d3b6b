/* adsp_tuner.c — ADSP's online search of the commit rate DeltaC: each
 * candidate runs for one check period Gamma, the period's loss curve is fitted
 * with l(t) = 1/(a^2 t + b) + c0 and rewarded by 1 / predicted time to the
 * target loss; the rate grows while the reward improves, and the search
 * restarts when the loss rises by a set fraction between checks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sc_sync.h"

#define SC_LOSSFIT_GRID 64
#define SC_LOSSFIT_REFINE 80

/* Linear least squares of y = a2 t + b with y = 1/(l - c0); returns the
 * squared error of the fitted curve in loss space (INFINITY if unusable). */
static double sc_lossfit_at(const double *t, const double *l, size_t n, double c0,
                            sc_lossfit_t *fit)
{
        double st = 0, sy = 0, stt = 0, sty = 0, den, sse = 0;

        for (size_t k = 0; k < n; k++) {
                double y = 1.0 / (l[k] - c0);
                st += t[k];
                sy += y;
                stt += t[k] * t[k];
                sty += t[k] * y;
        }
        den = (double)n * stt - st * st;
        if (!(fabs(den) > 0))
                return INFINITY;
        fit->a2 = ((double)n * sty - st * sy) / den;
        fit->b = (sy - fit->a2 * st) / (double)n;
        fit->c0 = c0;
        for (size_t k = 0; k < n; k++) {
                double q = fit->a2 * t[k] + fit->b;
                if (!(q > 0))
                        return INFINITY;
                sse += (1.0 / q + c0 - l[k]) * (1.0 / q + c0 - l[k]);
        }
        fit->sse = sse;
        return isfinite(sse) ? sse : INFINITY;
}

sc_err_t sc_lossfit_fit(const double *t, const double *loss, size_t n, sc_lossfit_t *fit)
{
        double lmin = INFINITY, lmax = -INFINITY, lo, step, best = INFINITY, best_c0 = 0;
        double a, b;
        sc_lossfit_t tmp;

        if (n < 3)
                return SC_ERR_INVAL;
        for (size_t k = 0; k < n; k++) {
                if (!isfinite(t[k]) || !isfinite(loss[k]))
                        return SC_ERR_INVAL;
                lmin = loss[k] < lmin ? loss[k] : lmin;
                lmax = loss[k] > lmax ? loss[k] : lmax;
        }
        /* c0 lies below the smallest loss; losses are usually >= 0. */
        lo = lmin > 0 ? 0.0 : lmin - (lmax - lmin) - 1.0;
        step = (lmin - lo) / SC_LOSSFIT_GRID;
        if (!(step > 0))
                return SC_ERR_INVAL;
        for (int g = 0; g < SC_LOSSFIT_GRID; g++) {
                double c0 = lo + step * g, e = sc_lossfit_at(t, loss, n, c0, &tmp);
                if (e < best) {
                        best = e;
                        best_c0 = c0;
                }
        }
        if (!isfinite(best))
                return SC_ERR_INVAL;
        /* Golden-section refinement around the best grid point. */
        a = best_c0 - step > lo ? best_c0 - step : lo;
        b = best_c0 + step;
        if (b >= lmin)
                b = lmin - step * 1e-6;
        for (int it = 0; it < SC_LOSSFIT_REFINE; it++) {
                double m1 = b - (b - a) * 0.6180339887498949;
                double m2 = a + (b - a) * 0.6180339887498949;
                if (sc_lossfit_at(t, loss, n, m1, &tmp) <= sc_lossfit_at(t, loss, n, m2, &tmp))
                        b = m2;
                else
                        a = m1;
        }
        if (sc_lossfit_at(t, loss, n, 0.5 * (a + b), &tmp) < best) {
                best_c0 = 0.5 * (a + b);
        }
        sc_lossfit_at(t, loss, n, best_c0, fit);
        return SC_OK;
}

double sc_lossfit_eval(const sc_lossfit_t *fit, double t)
{
        return 1.0 / (fit->a2 * t + fit->b) + fit->c0;
}

double sc_lossfit_time_to(const sc_lossfit_t *fit, double target)
{
        if (!(target > fit->c0) || !(fit->a2 > 0))
                return INFINITY;
        return (1.0 / (target - fit->c0) - fit->b) / fit->a2;
}

/* ---- the tuner ---------------------------------------------------------- */

struct sc_adsp_tuner_s {
        sc_adsp_tuner_spec_t spec;
        int searching;
        double c, best_c, best_reward, last_reward;
        double period_start, last_search;
        double prev_mean; /* mean loss of the previous period; < 0 = none */
        double *t, *loss; /* this period's observations */
        size_t n, cap;
};

sc_err_t sc_adsp_tuner_new(sc_adsp_tuner_t **tp, const sc_adsp_tuner_spec_t *spec, double now,
                           char *errstr, size_t errstr_size)
{
        sc_adsp_tuner_t *tu;

        *tp = NULL;
        if (!(spec->gamma > 0) || !(spec->c_init > 0) || !(spec->c_step > 0) ||
            spec->c_max < spec->c_init || spec->rise < 0)
                return sc_errf(SC_ERR_CONFIG, errstr, errstr_size,
                               "adsp tuner: need gamma > 0, 0 < c_init <= c_max, c_step > 0, "
                               "rise >= 0");
        if (!(tu = calloc(1, sizeof(*tu))))
                return sc_errf(SC_ERR_NOMEM, errstr, errstr_size, "adsp tuner: out of memory");
        tu->spec = *spec;
        tu->searching = 1;
        tu->c = spec->c_init;
        tu->best_c = spec->c_init;
        tu->best_reward = -1;
        tu->period_start = now;
        tu->last_search = now;
        tu->prev_mean = -1;
        *tp = tu;
        return SC_OK;
}

void sc_adsp_tuner_destroy(sc_adsp_tuner_t *tu)
{
        if (!tu)
                return;
        free(tu->t);
        free(tu->loss);
        free(tu);
}

void sc_adsp_tuner_observe(sc_adsp_tuner_t *tu, double t, double loss)
{
        if (!isfinite(t) || !isfinite(loss))
                return;
        if (tu->n == tu->cap) {
                size_t cap = tu->cap ? 2 * tu->cap : 64;
                double *a = realloc(tu->t, cap * sizeof(*a)), *b;
                if (!a)
                        return;
                tu->t = a;
                if (!(b = realloc(tu->loss, cap * sizeof(*b))))
                        return;
                tu->loss = b;
                tu->cap = cap;
        }
        tu->t[tu->n] = t;
        tu->loss[tu->n] = loss;
        tu->n++;
}

static void sc_adsp_tuner_restart(sc_adsp_tuner_t *tu, double now)
{
        tu->searching = 1;
        tu->c = tu->spec.c_init;
        tu->best_reward = -1;
        tu->last_search = now;
}

double sc_adsp_tuner_tick(sc_adsp_tuner_t *tu, double now)
{
        sc_lossfit_t fit;
        double reward = 0, mean = 0;

        if (now - tu->period_start < tu->spec.gamma)
                return tu->c;
        for (size_t k = 0; k < tu->n; k++)
                mean += tu->loss[k];
        mean = tu->n ? mean / (double)tu->n : -1;
        if (sc_lossfit_fit(tu->t, tu->loss, tu->n, &fit) == SC_OK) {
                double tt = sc_lossfit_time_to(&fit, tu->spec.target_loss);
                if (isfinite(tt))
                        reward = 1.0 / (tt > now ? tt - now : 1e-9);
        }
        tu->last_reward = reward;
        if (tu->searching) {
                if (reward > tu->best_reward) {
                        tu->best_reward = reward;
                        tu->best_c = tu->c;
                        if (tu->c + tu->spec.c_step <= tu->spec.c_max) {
                                tu->c += tu->spec.c_step;
                        } else {
                                tu->searching = 0;
                        }
                } else {
                        tu->searching = 0;
                        tu->c = tu->best_c;
                }
        } else if ((tu->prev_mean > 0 && mean >= 0 &&
                    mean >= tu->prev_mean * (1.0 + tu->spec.rise)) ||
                   (tu->spec.research_every > 0 &&
                    now - tu->last_search >= tu->spec.research_every)) {
                sc_adsp_tuner_restart(tu, now);
        }
        tu->prev_mean = mean;
        tu->n = 0;
        tu->period_start = now;
        return tu->c;
}

int sc_adsp_tuner_searching(const sc_adsp_tuner_t *tu)
{
        return tu->searching;
}

double sc_adsp_tuner_last_reward(const sc_adsp_tuner_t *tu)
{
        return tu->last_reward;
}
